"""Ordinals and ULP distance: the integer numbering of a format's values and distances counted in it.

Contract: ULPs are counted in a format `fmt` (default: the actual tensor's dtype format) after both
tensors are rounded to it (`round_to` with the format's own conversion: nearest-even, ties away for
tf32), so a correctly rounded result is 0 ulps from an exact (e.g. fp64) reference. The distance is
the difference of *ordinals*: the monotone integer numbering of the format's values (...,
-min_subnormal -> -1, ±0.0 -> 0, min_subnormal -> 1, ...), so crossing zero or a binade counts every
representable value once and -0.0 == 0.0. Bits of error: ``log2(1 + ulps)``.
"""

from __future__ import annotations

import math

import torch

from roundoff.numerics.formats import Format, format_of_dtype, get_format
from roundoff.numerics.rounding import round_to

__all__ = ["bits_of_error", "ordinal", "ulp_distance"]

_INT_OF_WIDTH = {8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}


def ordinal(x: torch.Tensor, fmt: Format | str | torch.dtype | None = None) -> torch.Tensor:
    """int64 ordinal of each value of `x` in `fmt` (values must be representable there; NaN: undefined).

    The ordinal is the sign-magnitude bit pattern turned two's complement, so it is monotone in the
    value and ±0.0 both map to 0.
    """
    f = format_of_dtype(x.dtype) if fmt is None else get_format(fmt)
    if f.torch_dtype is not None:
        bits = x.to(f.torch_dtype).view(_INT_OF_WIDTH[f.bits]).to(torch.int64)
        width = f.bits
    else:  # tf32: the top 19 bits of its fp32 container
        bits = torch.bitwise_right_shift(x.to(torch.float32).view(torch.int32), 32 - f.bits).to(torch.int64)
        width = f.bits
    mag = torch.bitwise_and(bits, (1 << (width - 1)) - 1)
    return torch.where(bits < 0, -mag, mag)


def _check_pair(actual: torch.Tensor, reference: torch.Tensor) -> None:
    for name, t in (("actual", actual), ("reference", reference)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            what = t.dtype if isinstance(t, torch.Tensor) else type(t).__name__
            raise TypeError(f"{name} must be a floating-point tensor, got {what}")
    if actual.shape != reference.shape:
        raise ValueError(
            f"actual and reference shapes differ: {tuple(actual.shape)} vs {tuple(reference.shape)}; "
            "compare tensors of one shape (broadcast them yourself if that is meant)"
        )


def _in_format(t: torch.Tensor, f: Format) -> torch.Tensor:
    """`t` as exact fp64 values rounded to `f` (nearest even)."""
    t64 = t.to(torch.float64)
    return t64 if f.name == "fp64" else round_to(t64, f)


def _rounded(t: torch.Tensor, f: Format) -> torch.Tensor:
    """`t` rounded to `f` (RNE) in t's own dtype when fp32/fp64 (same values as `_in_format`), else in fp32."""
    if t.dtype not in (torch.float32, torch.float64):
        t = t.to(torch.float32)  # bf16/fp16/fp8 values are exact in fp32
    if f.bits >= 32 and t.dtype == torch.float32 and f.name != "fp32":
        t = t.to(torch.float64)  # wider-than-fp32 formats: round_to refuses to widen
    return round_to(t, f)


_TORCH_RNE = (torch.bfloat16, torch.float16)  # torch's fp32 -> these casts are RNE (subnormals, overflow to inf)


def _fast_ordinal(t: torch.Tensor, f: Format) -> torch.Tensor:
    """`ordinal(round_to(t, f), f)` for finite `t`; int32 for formats of <= 16 bits, else int64.

    fp32 values go to bf16/fp16 by torch's own cast, which rounds to nearest even like `round_to`
    (fp64 values do not: torch casts them through fp32, a double rounding, so they take `round_to`).
    """
    if not (t.dtype == torch.float32 and f.torch_dtype in _TORCH_RNE) and t.dtype != f.torch_dtype:
        t = _rounded(t, f)
    if f.torch_dtype is None or f.bits > 32:
        return ordinal(t, f)
    bits = (t if t.dtype == f.torch_dtype else t.to(f.torch_dtype)).view(_INT_OF_WIDTH[f.bits])
    bits = bits.to(torch.int32) if f.bits < 32 else bits
    sign = torch.bitwise_right_shift(bits, 31)  # 0 or -1
    mask = (1 << (f.bits - 1)) - 1
    mag = bits.bitwise_and_(mask) if f.bits < 32 else torch.bitwise_and(bits, mask)  # (< 32: `bits` is a copy)
    ords = mag.bitwise_xor_(sign).sub_(sign)  # -mag where the sign bit is set (no overflow: |mag| < 2**31)
    return ords if f.bits <= 16 else ords.to(torch.int64)  # 32-bit ordinals differ by up to 2**32


def ulp_distance(
    actual: torch.Tensor, reference: torch.Tensor, fmt: Format | str | torch.dtype | None = None
) -> torch.Tensor:
    """|ordinal(actual) - ordinal(reference)| in `fmt` after rounding both to it (int64).

    Elements where either side is NaN give -1 (0 when both are NaN); infinities count by ordinal in
    formats that have inf (inf is one past max finite).
    """
    _check_pair(actual, reference)
    f = format_of_dtype(actual.dtype) if fmt is None else get_format(fmt)
    a, r = _in_format(actual, f), _in_format(reference, f)
    na, nr = torch.isnan(a), torch.isnan(r)
    d = (ordinal(a.nan_to_num(0.0), f) - ordinal(r.nan_to_num(0.0), f)).abs()
    return d.masked_fill_(na | nr, -1).masked_fill_(na & nr, 0)


def bits_of_error(ulps: torch.Tensor | float) -> torch.Tensor | float:
    """log2(1 + ulps): 0 for exact, 1 for one ulp, ~k for 2**k ulps (Herbie's measure)."""
    if isinstance(ulps, torch.Tensor):
        return torch.log2(1 + ulps.to(torch.float64))
    return math.log2(1 + ulps)
