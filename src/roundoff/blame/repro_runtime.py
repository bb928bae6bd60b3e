"""Verdict helpers of a generated repro script: plain PyTorch, no roundoff import (copied into repro.py).

The numerics a repro runs are not here: they are the lowered plans (``roundoff.lower``) and roundoff's
own ``round_to`` / ``fma``, whose source the script embeds (``roundoff.lower.code.primitives_source``).
This module only judges the outputs: PyTorch's accuracy rule against an fp64 run, and a summary.
"""

from __future__ import annotations

import math
from typing import Any

import torch


def _is_ft(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.is_floating_point()


def _quiet(*args: Any, **kwargs: Any) -> None:
    return None


def _rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.sqrt(torch.mean((a.double() - b.double()) ** 2)))


def _order_one(fp64: torch.Tensor, reference: torch.Tensor) -> float:
    """roundoff's ``analyze.verdict.order_one_scale`` (this runtime imports no roundoff): the power of two
    that brings an output whose values are all below 1, and which `reference` resolves, to order 1,
    where ``allclose``'s `tol` is meant to apply."""
    if reference.shape != fp64.shape or not fp64.numel():
        return 1.0
    finite = fp64.isfinite() & reference.isfinite()
    largest = float(torch.where(finite, fp64.abs(), 0).max())
    if largest == 0.0 or largest >= 1.0:
        return 1.0
    exact = fp64[finite].double()
    if not float((reference[finite].double() - exact).norm()) < 0.5 * float(exact.norm()):
        return 1.0
    return math.ldexp(1.0, min(1 - math.frexp(largest)[1], 64))


def within(base: torch.Tensor, res: torch.Tensor, fp64: torch.Tensor, tol: float, ratio: Any) -> bool:
    """One output: PyTorch's `same` rule with its allclose at the output's scale (`_order_one`), or with
    `ratio` a stricter RMSE bound (see `verdict`)."""
    from torch._dynamo.utils import same

    if ratio is None:
        if (scale := _order_one(fp64, base)) == 1.0:
            return bool(same(base, res, fp64, tol=tol, log_error=_quiet))
        multiplier = 3.0 if res.dtype in (torch.float16, torch.bfloat16) else 2.0  # (its RMSE rule as it is)
        return bool(same(base * scale, res * scale, fp64 * scale, tol=tol, log_error=_quiet)) or (
            _rmse(res, fp64) <= multiplier * _rmse(base, fp64) + tol / 10.0)
    if bool((torch.isnan(res) & ~torch.isnan(base)).any()):
        return False
    return _rmse(res, fp64) <= ratio * _rmse(base, fp64) + tol / 10.0


_INTS = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def by_rule(rule: str, base: torch.Tensor, res: torch.Tensor, fp64: torch.Tensor) -> bool:
    """One output by check's ``allclose`` or ``bitwise`` rule (roundoff's ``analyze.verdict.judge``; this
    runtime imports no roundoff): NaN/inf in `res` where `fp64` is finite fails; else, over the elements
    where fp64 is finite, ``torch.allclose`` with ``torch.testing.assert_close``'s default tolerances for
    `res`'s dtype (fp8 compared as bf16, which holds it exactly), or every element's bits equal to
    `base`'s in `res`'s dtype (every element; NaN against NaN passes, -0.0 against 0.0 fails)."""
    base = base.to(res.dtype)
    finite = fp64.isfinite()
    wide = res.to(torch.bfloat16) if res.element_size() == 1 else res
    if bool((~wide.isfinite() & finite).any()):
        return False
    if rule == "bitwise":
        ints = _INTS[res.element_size()]
        return bool(((res.view(ints) == base.view(ints)) | (res.isnan() & base.isnan())).all())
    from torch.testing._comparison import default_tolerances

    rtol, atol = default_tolerances(res.dtype)
    other = base.to(wide.dtype)
    return bool(torch.allclose(wide[finite], other[finite], rtol=rtol, atol=atol, equal_nan=True))


def verdict(ref: list[Any], res: list[Any], fp64: list[Any], reference: str, tol: float,
            ratio: Any = None) -> bool:
    """PyTorch's accuracy rule (`torch._dynamo.utils.same`, RMSE against fp64) on every float output.

    Against "eager" the reference is the eager run; against "oracle" it is the fp64 run rounded to
    the output's dtype (the best the output format can hold). With `ratio` (a user tolerance, as
    Polygraphy takes one) an output passes when it has no NaN the reference lacks and
    ``rmse(res, fp64) <= ratio * rmse(reference, fp64) + tol/10`` (same's own form, own multiplier).
    """
    ok = True
    for r, x, f in zip(ref, res, fp64):
        if not _is_ft(x):
            continue
        base = f.to(x.dtype) if reference == "oracle" else r.to(x.dtype)  # (as check compares them)
        ok = ok and within(base, x, f, tol, ratio)
    return ok


def describe(res: list[Any], fp64: list[Any], names: Any = None, shown: int = 6, first: Any = ()) -> str:
    """Per float output (by its name in the program, else ``out<i>``): max |error| against fp64 over
    finite entries, that error relative to fp64's largest finite magnitude, and non-finite counts;
    beyond `shown` outputs (a training step's gradients), those named in `first` (the failing ones),
    then the most NaN/inf fp64 does not have, then the largest relative error, and how many more."""
    parts = []
    for i, (x, f) in enumerate(zip(res, fp64)):
        name = names[i] if names is not None and i < len(names) else f"out{i}"
        if not _is_ft(x):
            continue
        e = (x.double() - f).abs()
        finite = torch.isfinite(e)
        worst = float(e[finite].max()) if bool(finite.any()) else float("nan")
        nan, inf, ref_nan = int(torch.isnan(x).sum()), int(torch.isinf(x).sum()), int(torch.isnan(f).sum())
        scale = float(f[torch.isfinite(f)].abs().max()) if bool(torch.isfinite(f).any()) else 0.0
        rel = worst / scale if scale else worst
        key = (name not in first, -(nan + inf - ref_nan - int(torch.isinf(f).sum())), -rel if not math.isnan(rel) else -math.inf)
        held = int(finite.sum())  # (an error over part of the entries says so: 0 beside NaN misleads)
        over = "" if held == e.numel() else f" over its {held} finite entries"
        error = (f"max|err|{over}={worst:.3g} ({rel:.3g}x fp64's largest |value|)" if held  # (trial 99: "2.41e+13 of its largest")
                 else "no entry finite on both sides")  # (trial 57: "over its 0 finite entries=nan")
        text = f"{name}: {error} nan={nan} inf={inf} (fp64 ref nan={ref_nan})"
        parts.append((key, text))
    if len(parts) <= shown:
        return "; ".join(text for _, text in parts)
    ranked = sorted(parts, key=lambda p: p[0])
    return (f"{len(parts)} outputs, {shown} of them (failing first, then by NaN/inf and relative error): "
            + "; ".join(text for _, text in ranked[:shown]) + f" (and {len(parts) - shown} more)")
