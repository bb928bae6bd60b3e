"""Checking mode: on sampled calls, run the reference beside the compiled program.

Reference (chosen, not configurable): the user's callable run eagerly on the same inputs, plus an
fp64 run (floating-point arguments, and a module's floating-point parameters and buffers, upcast
exactly to fp64; tensors captured by closure stay as they are; see ``reference.Fp64Reference`` for
how it is kept cheap: a cached fp64 shadow module refreshed in place, optionally compiled). The verdict per floating-point
output is the analysis layer's, PyTorch's own accuracy rule ``same(eager, compiled, fp64_ref)``:
RMSE of the compiled output against fp64 within a multiplier of eager's RMSE (NaN/inf must match
eager's). The fp64 run is made only when an output is not allclose to eager (``same``'s own first
test), so a bit-faithful policy's samples cost one eager call. Between samples a call costs one
counter increment and a modulo. `Checker.sample_seconds` records the host wall time of each
sampled check; its ``.item()`` calls synchronise, so on a GPU it includes waiting for all work
queued before it (steps the host ran ahead), and is not the sample's own cost.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.utils._pytree as pytree

from roundoff.compiler.errors import RoundoffDivergenceError, RoundoffDivergenceWarning
from roundoff.compiler.reference import Fp64Reference, run_fp64

__all__ = ["CHECK_MODES", "Checker", "OutputCheck", "compare_outputs", "run_fp64"]

CHECK_MODES = (None, "warn", "raise")


@dataclass(frozen=True)
class OutputCheck:
    """One output of one sampled call: PyTorch's verdict and the metrics behind it.

    RMSEs are against the fp64 run (NaN: not computed, the output was allclose to eager, so the
    fp64 run was skipped); `mismatch_fraction` counts elements whose bits differ from eager
    (NaN == NaN); `nonfinite` is (compiled, eager) counts of NaN/inf elements.
    """

    name: str
    passed: bool
    rmse_compiled: float
    rmse_eager: float
    mismatch_fraction: float
    max_abs_diff: float
    nonfinite: tuple[int, int]

    def describe(self) -> str:
        return (
            f"{self.name}: rmse vs fp64 compiled={self.rmse_compiled:.3g} eager={self.rmse_eager:.3g}, "
            f"{self.mismatch_fraction:.1%} elements differ from eager (max |diff| {self.max_abs_diff:.3g}), "
            f"non-finite compiled={self.nonfinite[0]} eager={self.nonfinite[1]}"
        )


def _rmse(x: torch.Tensor, ref64: torch.Tensor) -> float:
    d = x.double() - ref64.double()
    return math.sqrt(torch.mean(d * d).item()) if d.numel() else 0.0


def _same(ref: torch.Tensor, res: torch.Tensor, ref64: torch.Tensor) -> bool:
    """The analysis layer's verdict (``roundoff.analyze.same_rule``: PyTorch's ``same`` with an fp64
    reference, default tol 1e-4); elements NaN in both eager and compiled count as agreeing."""
    from roundoff.analyze import same_rule

    both_nan = ref.isnan() & res.isnan()
    if both_nan.any():
        ref, res, ref64 = (t.masked_fill(both_nan, 0) for t in (ref, res, ref64))
    return same_rule(ref, res, ref64, tol=1e-4)


def _plain_metrics(c: torch.Tensor, e: torch.Tensor) -> list[float]:
    """[fraction of elements whose bits differ (NaN == NaN), max finite |c - e| (0.0 if none),
    non-finite counts of c and e], read back in one host sync."""
    if not c.numel():
        return [0.0, 0.0, 0.0, 0.0]
    diff = (c.double() - e.double()).abs()
    differs = (c != e) & ~(c.isnan() & e.isnan())
    return torch.stack(
        [
            differs.double().mean(),
            torch.where(torch.isfinite(diff), diff, 0.0).max(),
            (~torch.isfinite(c)).sum().double(),
            (~torch.isfinite(e)).sum().double(),
        ]
    ).tolist()


def compare_outputs(
    compiled: Any, eager: Any, fp64: Any | Callable[[], Any]
) -> tuple[OutputCheck, ...]:
    """Verdict and metrics for every floating-point tensor leaf of the outputs (pytree order).

    `fp64` may be a zero-argument callable: it is then run only if some output is not allclose to
    eager (tol 1e-4, NaN == NaN), which is ``same``'s own first test, so the verdict is unchanged; the
    RMSE fields of outputs decided by that test are NaN (not computed)."""
    leaves_c, _ = pytree.tree_flatten(compiled)
    leaves_e, _ = pytree.tree_flatten(eager)
    lazy: list[Any] = []

    def ref64(i: int) -> torch.Tensor:
        if not lazy:
            lazy.append(pytree.tree_flatten(fp64() if callable(fp64) else fp64)[0])
        return lazy[0][i].detach()

    checks = []
    for i, (c, e) in enumerate(zip(leaves_c, leaves_e)):
        if not (isinstance(c, torch.Tensor) and c.is_floating_point()):
            continue
        c, e = c.detach(), e.detach()
        close = c.shape == e.shape and bool(
            torch.allclose(e, c, atol=1e-4, rtol=1e-4, equal_nan=True)
        )
        mismatch, max_abs, nonfinite_c, nonfinite_e = _plain_metrics(c, e)
        checks.append(
            OutputCheck(
                name=f"output[{i}]" if len(leaves_c) > 1 else "output",
                passed=close or _same(e, c, ref64(i)),
                rmse_compiled=math.nan if close else _rmse(c, ref64(i)),
                rmse_eager=math.nan if close else _rmse(e, ref64(i)),
                mismatch_fraction=mismatch,
                max_abs_diff=max_abs,
                nonfinite=(int(nonfinite_c), int(nonfinite_e)),
            )
        )
    return tuple(checks)


class Checker:
    """Wraps a compiled callable; every `sample_every`-th call (the first included) is checked."""

    def __init__(
        self,
        original: Callable,
        compiled: Callable,
        mode: str | None,
        sample_every: int,
        reference: Fp64Reference | None = None,
    ) -> None:
        if mode not in CHECK_MODES:
            raise ValueError(f"check={mode!r} is not accepted; use None, 'warn' or 'raise'")
        if not isinstance(sample_every, int) or sample_every < 1:
            raise ValueError(
                f"sample_every={sample_every!r} must be a positive int (1 checks every call)"
            )
        self.original, self.compiled, self.mode, self.sample_every = (
            original,
            compiled,
            mode,
            sample_every,
        )
        self.reference = (
            reference if reference is not None else Fp64Reference(original, cache=False)
        )
        self.calls = 0
        self.sample_seconds: list[float] = []
        self.history: list[tuple[int, tuple[OutputCheck, ...]]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        out = self.compiled(*args, **kwargs)
        if self.mode is not None and (self.calls - 1) % self.sample_every == 0:
            self._check(out, args, kwargs)
        return out

    def _check(self, out: Any, args: tuple, kwargs: dict) -> None:
        t0 = time.perf_counter()
        with torch.no_grad():
            eager = self.original(*args, **kwargs)
            checks = compare_outputs(out, eager, lambda: self.reference(args, kwargs))
        self.sample_seconds.append(time.perf_counter() - t0)
        self.history.append((self.calls, checks))
        failed = [c for c in checks if not c.passed]
        if not failed:
            return
        message = (
            f"roundoff.compile: call {self.calls} diverges from eager under torch._dynamo.utils.same "
            f"(fp64 reference): " + "; ".join(c.describe() for c in failed)
        )
        if self.mode == "raise":
            raise RoundoffDivergenceError(message, tuple(checks))
        warnings.warn(RoundoffDivergenceWarning(message), stacklevel=3)
