"""Checking mode: on sampled calls, run the reference beside the compiled program.

Reference (chosen, not configurable): the user's callable run eagerly on the same inputs, plus an
fp64 run (floating-point arguments, and a module's floating-point parameters and buffers, upcast
exactly to fp64; tensors captured by closure stay as they are; see ``reference.Fp64Reference`` for
how it is kept cheap: a cached fp64 shadow module refreshed in place, optionally compiled). The
verdict per floating-point output is the analysis layer's, PyTorch's own accuracy rule
``same(eager, compiled, fp64_ref)``: RMSE of the compiled output against fp64 within a multiplier
of eager's RMSE (NaN/inf must match eager's). The fp64 run is made only when an output is not
allclose to eager (``same``'s own first test) or is NaN/inf in both, so a bit-faithful policy's
samples of a finite program cost one eager call. An output NaN/inf in both where the fp64 run is
finite passes (the compiler agrees with eager) and is reported once per output with a
`RoundoffOverflowWarning`: the program leaves its format's range, whoever runs it. Between samples a call costs one counter increment and a modulo (and, while an asynchronous
sample is pending, one CUDA event query). `Checker.sample_seconds` records the host wall time of
each sampled call's checking work: for a synchronous check that includes waiting for all GPU work
queued before it; for an asynchronous one, only the time to queue it."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.utils._pytree as pytree

from roundoff.analyze.verdict import MAX_SCALE_EXPONENT
from roundoff.compiler.errors import (
    RoundoffCheckingWarning,
    RoundoffDivergenceError,
    RoundoffDivergenceWarning,
    RoundoffOverflowWarning,
    warn_at_caller,
)
from roundoff.compiler.reference import Fp64Reference, read_modules, run_fp64
from roundoff.numerics import same_bits

__all__ = ["CHECK_MODES", "Checker", "OutputCheck", "compare_outputs", "run_fp64"]

CHECK_MODES = (None, "warn", "raise")


@dataclass(frozen=True, repr=False)
class OutputCheck:
    """One output of one sampled call: PyTorch's verdict and the metrics behind it.

    RMSEs are against the fp64 run (None: not computed, the output was allclose to eager, so the
    fp64 run was skipped; trial 80: a NaN in a passing record read as a failure); `mismatch_fraction` counts elements whose bits differ from eager
    (NaN == NaN); `nonfinite` is (compiled, eager) counts of NaN/inf elements; `overflow` counts
    the elements NaN/inf in both where the fp64 run is finite (0 when it was not run).
    """

    name: str
    passed: bool
    rmse_compiled: float | None
    rmse_eager: float | None
    mismatch_fraction: float
    max_abs_diff: float
    nonfinite: tuple[int, int]
    overflow: int = 0

    def __repr__(self) -> str:  # (the fields' own names read as contradictions: max_abs_diff=0.0 beside an inf,
        # trial 91; the figures with what they cover, trials 89 and 91)
        return f"OutputCheck({'passed' if self.passed else 'FAILED'}: {self.describe()})"

    def describe(self) -> str:
        rmse = ("rmse vs fp64 not computed (allclose to eager: no fp64 run)" if self.rmse_compiled is None or self.rmse_eager is None
                else f"rmse vs fp64 compiled={self.rmse_compiled:.3g} eager={self.rmse_eager:.3g}")
        return (
            f"{self.name}: {rmse}, "
            f"{self.mismatch_fraction:.1%} elements differ from eager (max |diff| {self.max_abs_diff:.3g} where both are "
            "finite), "
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


#: Per output, the figures read back from the device in one transfer (see `_figures`).
_CLOSE, _MISMATCH, _MAX_ABS, _NONFINITE_C, _NONFINITE_E = range(5)


def _figures(c: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """fp64 vector on the outputs' device, computed without host synchronisation:
    [allclose(e, c, 1e-4, 1e-4, equal_nan) as 0/1 (0 when the shapes differ), fraction of elements
    whose bits differ (NaN == NaN), max finite |c - e| (0.0 if none), non-finite counts of c, e].
    The allclose is taken at eager's scale where its values are all below 1 (both scaled by the power
    of two that brings eager's largest into [1, 2), as `same_rule` takes it at fp64's; trial 64: a
    1e-5-scale output 96% off passed every sample)."""
    if not c.numel() or c.shape != e.shape:
        zero = torch.zeros((), dtype=torch.float64, device=c.device)
        close = zero + float(c.shape == e.shape)
        n_c = (~torch.isfinite(c)).sum().double()
        n_e = (~torch.isfinite(e)).sum().double().to(c.device)
        return torch.stack([close, zero, zero, n_c, n_e])
    diff = (c.double() - e.double()).abs()
    differs = (c != e) & ~(c.isnan() & e.isnan())
    largest = torch.where(torch.isfinite(e), e.abs(), 0).amax().double()
    small = (largest > 0) & (largest < 1)
    scale = torch.exp2(torch.clamp(-torch.floor(torch.log2(torch.where(small, largest, 1.0))), max=MAX_SCALE_EXPONENT))
    close = torch.where(small, torch.isclose(e.double() * scale, c.double() * scale, rtol=1e-4, atol=1e-4,
                                             equal_nan=True).all(),
                        torch.isclose(e, c, rtol=1e-4, atol=1e-4, equal_nan=True).all())
    return torch.stack(
        [
            close.double(),
            differs.double().mean(),
            torch.where(torch.isfinite(diff), diff, 0.0).max(),
            (~torch.isfinite(c)).sum().double(),
            (~torch.isfinite(e)).sum().double(),
        ]
    )


def _put_back(buffers: list[torch.Tensor], values: list[torch.Tensor]) -> None:
    """Each buffer's value put back where its bits changed. A copy into an unchanged buffer would still
    advance its version counter, and a compiled training step that saved the buffer for its backward
    then refuses to run it (trial 71: a rotary ``inv_freq``, "modified by an inplace operation")."""
    with torch.no_grad():
        for b, v in zip(buffers, values):
            if not same_bits(b, v):
                b.copy_(v)


def _float_pairs(compiled: Any, eager: Any) -> list[tuple[str, torch.Tensor, torch.Tensor, int]]:
    """(name, compiled leaf, eager leaf, leaf index) for every floating-point tensor leaf."""
    leaves_c, _ = pytree.tree_flatten(compiled)
    leaves_e, _ = pytree.tree_flatten(eager)
    return [
        (f"output[{i}]" if len(leaves_c) > 1 else "output", c.detach(), e.detach(), i)
        for i, (c, e) in enumerate(zip(leaves_c, leaves_e))
        if isinstance(c, torch.Tensor) and c.is_floating_point()
    ]


def _output_check(
    name: str, c: torch.Tensor, e: torch.Tensor, figures: list[float], ref64: torch.Tensor | None
) -> OutputCheck:
    """The verdict from `figures` (see `_figures`) and, for an output not allclose to eager, the
    fp64 run's leaf `ref64` (required then)."""
    close = bool(figures[_CLOSE])
    if not close and ref64 is None:
        raise RuntimeError(f"internal: {name} is not allclose to eager and has no fp64 reference")
    overflow = 0
    if ref64 is not None and _needs_fp64(figures) and ref64.shape == c.shape:
        overflow = int((~c.isfinite() & ~e.isfinite() & ref64.to(c.device).isfinite()).sum())
    return OutputCheck(
        name=name,
        passed=close or _same(e, c, ref64),
        rmse_compiled=None if close else _rmse(c, ref64),
        rmse_eager=None if close else _rmse(e, ref64),
        mismatch_fraction=figures[_MISMATCH],
        max_abs_diff=figures[_MAX_ABS],
        nonfinite=(int(figures[_NONFINITE_C]), int(figures[_NONFINITE_E])),
        overflow=overflow,
    )


def _needs_fp64(row: list[float]) -> bool:
    """The fp64 run is needed for an output not allclose to eager, or NaN/inf in both (module doc)."""
    return not row[_CLOSE] or bool(row[_NONFINITE_C] and row[_NONFINITE_E])


def _all_figures(pairs: list[tuple[str, torch.Tensor, torch.Tensor, int]]) -> torch.Tensor:
    """`_figures` of every pair, one row each, on the first output's device (0 x 5 if none)."""
    if not pairs:
        return torch.zeros((0, 5), dtype=torch.float64)
    device = pairs[0][1].device
    return torch.stack([_figures(c, e).to(device) for _, c, e, _ in pairs])


def compare_outputs(
    compiled: Any, eager: Any, fp64: Any | Callable[[], Any]
) -> tuple[OutputCheck, ...]:
    """Verdict and metrics for every floating-point tensor leaf of the outputs (pytree order).

    `fp64` may be a zero-argument callable: it is then run only if some output is not allclose to
    eager (tol 1e-4, NaN == NaN, at eager's scale: `_figures`), ``same``'s own first test as `same_rule`
    takes it (at fp64's scale, which eager's stands for); the
    RMSE fields of outputs decided by that test are NaN (not computed). It is also run where an output
    is NaN/inf in both, to count the elements fp64 has finite (`OutputCheck.overflow`)."""
    pairs = _float_pairs(compiled, eager)
    figures = _all_figures(pairs).tolist()
    ref64: list[Any] | None = None
    if any(_needs_fp64(row) for row in figures):
        ref64 = pytree.tree_flatten(fp64() if callable(fp64) else fp64)[0]
    return tuple(
        _output_check(name, c, e, row, None if ref64 is None else ref64[i].detach())
        for (name, c, e, i), row in zip(pairs, figures)
    )


#: What `Checker._eager` returns where the function, run again eagerly, raised.
_FAILED = object()


class _ReferenceFailed(Exception):
    """The fp64 reference run raised (its exception is the ``__cause__``)."""


def _guarded(run: Callable[[], Any]) -> Callable[[], Any]:
    """`run`, with any exception it raises wrapped in `_ReferenceFailed`."""

    def call() -> Any:
        try:
            return run()
        except Exception as exc:
            raise _ReferenceFailed() from exc

    return call


class _Done:
    """Stands in for a CUDA event where the work runs synchronously (CPU): always complete."""

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None


@dataclass
class _Pending:
    """A sampled call whose verdict is still being computed on the checking stream.

    Stage 1: the figures (`host` is their pinned host copy, valid once `ready` completes). Stage 2,
    only when some output is not allclose to eager: the fp64 run (`ref64`, valid once `ready`
    completes again). Everything it reads is held here until the verdict, so no memory it uses is
    reused before the checking stream is done with it.
    """

    call: int
    pairs: list[tuple[str, torch.Tensor, torch.Tensor, int]]
    run_fp64: Callable[[], Any]
    host: torch.Tensor
    ready: Any
    ref64: list[Any] | None = None


class Checker:
    """Wraps a compiled callable; every `sample_every`-th call (the first included) is checked.

    Synchronous checking (the default on CPU, and for ``mode="raise"``) decides a sampled call's
    verdict before returning from it. Asynchronous checking (`asynchronous=None`: the default for
    ``mode="warn"`` when the outputs are on a GPU) never synchronises the host with the GPU: on
    the sampled call it queues, on the caller's stream, the eager run and a snapshot of what the
    fp64 run reads (arguments and parameters, so later in-place updates do not reach it), then
    computes the comparison on a separate stream; the fp64 run is launched there only if some
    output is not allclose to eager. The verdict (history entry, warning or error naming the
    sampled call) is delivered by the first later call that finds that work complete, or by
    `flush()`. One sample is outstanding at a time: a sample due while one is pending first waits
    for it. The verdict rule is the same either way.
    """

    def __init__(
        self,
        original: Callable,
        compiled: Callable,
        mode: str | None,
        sample_every: int,
        reference: Fp64Reference | None = None,
        asynchronous: bool | None = None,
    ) -> None:
        if mode not in CHECK_MODES:
            raise ValueError(f"check={mode!r} is not accepted; use None, 'warn' or 'raise'")
        if not isinstance(sample_every, int) or isinstance(sample_every, bool) or sample_every < 1:
            raise ValueError(
                f"sample_every={sample_every!r} must be a positive int (1 checks every call)"
            )
        if asynchronous not in (None, True, False):
            raise ValueError(
                f"check_async={asynchronous!r} is not accepted; use None (asynchronous for "
                f"check='warn' on a GPU), True or False"
            )
        self.original, self.compiled, self.mode, self.sample_every = (
            original,
            compiled,
            mode,
            sample_every,
        )
        self.asynchronous = asynchronous
        self.reference = (
            reference if reference is not None else Fp64Reference(original, cache=False)
        )
        self.calls = 0
        self.sample_seconds: list[float] = []
        self.history: list[tuple[int, tuple[OutputCheck, ...]]] = []
        self._pending: _Pending | None = None
        self._stream: Any = None
        self._overflow_reported: set[str] = set()
        self._reference_failed = False
        self._eager_failed = False
        self._gradients_said = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self._pending is not None:
            self._advance(block=False)
        if self.mode is None:
            return self.compiled(*args, **kwargs)
        if (self.calls - 1) % self.sample_every:
            out = self.compiled(*args, **kwargs)
            self._say_gradients_unchecked(out)
            return out
        # a sampled call: eager and fp64 run on copies of what the compiled step read, and the modules'
        # buffers it updates are put back before each run and left as the compiled step left them (trial 64:
        # an EMA buffer updated twice, an input mutated in place twice, per sampled call)
        inputs = pytree.tree_map(lambda t: t.detach().clone() if isinstance(t, torch.Tensor) else t, (args, kwargs))
        buffers = [b for m in ([self.original] if isinstance(self.original, torch.nn.Module)
                               else read_modules(self.original)) for b in m.buffers()]
        with torch.no_grad():
            before = [b.detach().clone() for b in buffers]
        out = self.compiled(*args, **kwargs)
        self._say_gradients_unchecked(out)
        with torch.no_grad():
            after = [b.detach().clone() for b in buffers]

        def reset() -> None:
            _put_back(buffers, before)

        try:
            if self._is_async(out):
                self.flush()
                self._start(out, *inputs, reset)
            else:
                self._check(out, *inputs, reset)
        finally:
            _put_back(buffers, after)
        return out

    def flush(self) -> None:
        """Wait for the pending sample, if any, and deliver its verdict."""
        while self._pending is not None:
            self._advance(block=True)

    def _is_async(self, out: Any) -> bool:
        if self.asynchronous is not None:
            return self.asynchronous
        leaves = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
        return self.mode == "warn" and any(t.device.type == "cuda" for t in leaves)

    def _check(self, out: Any, args: tuple, kwargs: dict, reset: Callable[[], None]) -> None:
        t0 = time.perf_counter()
        with torch.no_grad():
            reset()
            if (eager := self._eager(args, kwargs)) is _FAILED:
                return

            def fp64() -> Any:
                reset()
                return self.reference(args, kwargs)

            try:
                checks = compare_outputs(out, eager, _guarded(fp64))
            except _ReferenceFailed as failure:
                self._unchecked(self.calls, failure)
                return
        self.sample_seconds.append(time.perf_counter() - t0)
        self._deliver(self.calls, checks)

    def _say_gradients_unchecked(self, out: Any) -> None:
        """Once, where a call returns a tensor that requires grad: the sampled check judges that output, never
        the gradients a later ``.backward()`` makes (trial 70: a training step with NaN gradients passed,
        silently; the README said so, the run did not)."""
        if self._gradients_said or not any(
                isinstance(t, torch.Tensor) and t.requires_grad for t in pytree.tree_leaves(out)):
            return
        self._gradients_said = True
        warn_at_caller(RoundoffCheckingWarning(
            "roundoff.compile: checking judges the outputs each sampled call returns, not the gradients a later "
            ".backward() computes from them: check a training step's gradients with `roundoff check --backward` "
            "or roundoff.testing.assert_numerics(..., backward=True). Said once."))

    def _eager(self, args: tuple, kwargs: dict) -> Any:
        """The function run again eagerly (under no_grad, on copies of the call's inputs), or `_FAILED` where
        that raises: warned once, the call returned unchecked, never raised (trial 111: a training step that
        calls .backward() and steps its optimizer raised "element 0 of tensors does not require grad" from
        the check, after the compiled step had run)."""
        try:
            return self.original(*args, **kwargs)
        except Exception as e:  # (the user's code: whatever it raises, the call is not checked)
            if not self._eager_failed:
                self._eager_failed = True
                warn_at_caller(RoundoffCheckingWarning(
                    f"roundoff.compile: call {self.calls} is not checked: running the function again eagerly for "
                    f"the comparison failed ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}). "
                    "Checking runs the function a second time, eagerly under torch.no_grad, on copies of its "
                    "inputs: a step that calls .backward() or an optimizer cannot be run so (nor should it: it "
                    "would update the parameters twice). Compile and check the function that computes the loss, "
                    "and call backward and the optimizer outside it; check the gradients with `roundoff check "
                    "--backward`. Reported once; later sampled calls that fail so are not checked either."))
            return _FAILED

    def _unchecked(self, call: int, failure: _ReferenceFailed) -> None:
        """A sampled call whose fp64 reference failed: warned once, returned unchecked, never raised (trial
        63: then a closure over a raw fp16 tensor; now code that reads a format's own bits)."""
        if self._reference_failed:
            return
        self._reference_failed = True
        cause = failure.__cause__
        warn_at_caller(RoundoffCheckingWarning(
            f"roundoff.compile: call {call} is not checked: its fp64 reference failed ({type(cause).__name__}: "
            f"{str(cause).splitlines()[0] if str(cause) else ''}). The reference runs the function in fp64 (every "
            "floating-point tensor it reads as an fp64 copy); code that depends on a 16-bit format itself (its bits: "
            "`x.view(torch.int16)`) cannot run so: check it with `roundoff check` or assert_numerics instead, which "
            "run it as captured. Reported once; later sampled calls that fail so are not checked either."))

    def _side(self, device: torch.device) -> Any:
        """(stream context, event factory) of the checking stream for `device`."""
        if device.type != "cuda":
            return contextlib.nullcontext(), _Done
        if self._stream is None:
            self._stream = torch.cuda.Stream(device=device)
        return torch.cuda.stream(self._stream), torch.cuda.Event

    def _start(self, out: Any, args: tuple, kwargs: dict, reset: Callable[[], None]) -> None:
        """Queue a sample's work (see the class docstring); `sample_seconds` gets the host time."""
        t0 = time.perf_counter()
        with torch.no_grad():
            reset()
            if (eager := self._eager(args, kwargs)) is _FAILED:
                return
            reset()
            run_fp64 = self.reference.snapshot(args, kwargs)
        pairs = _float_pairs(out, eager)
        device = pairs[0][1].device if pairs else torch.device("cpu")
        stream, event = self._side(device)
        if device.type == "cuda":
            self._stream.wait_stream(torch.cuda.current_stream(device))
        with stream, torch.no_grad():
            figures = _all_figures(pairs)
            host = torch.empty(figures.shape, dtype=figures.dtype, pin_memory=device.type == "cuda")
            host.copy_(figures, non_blocking=True)
            ready = event()
            if device.type == "cuda":
                ready.record()
        self._pending = _Pending(self.calls, pairs, run_fp64, host, ready)
        self.sample_seconds.append(time.perf_counter() - t0)

    def _advance(self, block: bool) -> None:
        """Move the pending sample on as far as its completed work allows (waiting if `block`)."""
        p = self._pending
        assert p is not None
        device = p.pairs[0][1].device if p.pairs else torch.device("cpu")
        stream, event = self._side(device)
        while True:
            if not p.ready.query():
                if not block:
                    return
                p.ready.synchronize()
            figures = p.host.tolist()
            if p.ref64 is not None or not any(_needs_fp64(row) for row in figures):
                break
            with stream:  # stage 2: the fp64 run
                try:
                    p.ref64 = pytree.tree_flatten(_guarded(p.run_fp64)())[0]
                except _ReferenceFailed as failure:
                    self._pending = None
                    self._unchecked(p.call, failure)
                    return
                p.ready = event()
                if device.type == "cuda":
                    p.ready.record()
        with stream, torch.no_grad():  # host syncs here wait for the checking stream only
            checks = tuple(
                _output_check(name, c, e, row, None if p.ref64 is None else p.ref64[i].detach())
                for (name, c, e, i), row in zip(p.pairs, figures)
            )
        self._pending = None
        self._deliver(p.call, checks)

    def _deliver(self, call: int, checks: tuple[OutputCheck, ...]) -> None:
        self.history.append((call, checks))
        overflowing = [c for c in checks if c.passed and c.overflow and c.name not in self._overflow_reported]
        if overflowing:
            self._overflow_reported.update(c.name for c in overflowing)
            warn_at_caller(RoundoffOverflowWarning(
                f"roundoff.compile: call {call}: " + "; ".join(
                    f"{c.name} has {c.overflow} NaN/inf element(s) in eager and compiled alike where the fp64 run is "
                    "finite" for c in overflowing)
                + ": the program leaves its format's range whoever runs it (an overflow, or an underflow a later op "
                "turns into NaN/inf, as in 0 * log(0); not a compiler difference; reported once per output). "
                "`roundoff check SCRIPT:FUNCTION --against oracle` names the node where it begins."))
        failed = [c for c in checks if not c.passed]
        if not failed:
            return
        message = (
            f"roundoff.compile: call {call} diverges from eager under torch._dynamo.utils.same "
            f"(fp64 reference): " + "; ".join(c.describe() for c in failed)
        )
        if self.mode == "raise":
            raise RoundoffDivergenceError(message, tuple(checks))
        warn_at_caller(RoundoffDivergenceWarning(message))
