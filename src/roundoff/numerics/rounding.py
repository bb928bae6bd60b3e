"""Exact rounding of fp32/fp64 tensors to any `Format`, returned in the source dtype (fake quantization).

Contract of `round_to(x, fmt, mode)`:
- `x` is an fp32 or fp64 tensor (CPU or CUDA); the result has x's dtype, shape and device, and every
  element is exactly representable in `fmt`.
- Finite values are rounded once, from their exact value, with `mode`. Subnormals of `fmt` are produced
  (gradual underflow, no flush to zero); subnormal inputs are honoured (no DAZ).
- Overflow (rounded magnitude beyond max finite, or an inf input): for the nearest modes the format's
  `Overflow` (inf / ±max finite / NaN); for TOWARD_ZERO and TO_ODD a finite input gives ±max finite
  (IEEE directed rounding); an inf input gives inf where the format has one, else what its `Overflow` says.
- NaN stays NaN (canonical quiet NaN, payload not kept). -0.0 stays -0.0, except in ``fnuz`` formats,
  which have no -0.0: any result of magnitude zero is +0.0 (as torch's casts do).
- fp64 sources: the default is the correctly rounded result. torch's own fp64 -> bf16/fp16/fp8 casts
  (CPU, torch 2.13) go through fp32 first, i.e. round twice; ``torch_compatible=True`` reproduces that
  (round to fp32 with RNE, then to `fmt`). fp64 -> fp32 is a single rounding either way.
- tf32 (no torch dtype): the default mode is the format's own conversion, round to nearest with ties
  away from zero, which is what CUDA's ``__float_to_tf32`` / PTX ``cvt.rna.tf32.f32`` and CUTLASS's
  default ``round_half_ulp_truncate`` do. Tensor cores fed raw fp32 read only the top 10 mantissa bits
  (truncation, PyTorch's numerical-accuracy notes); pass ``mode=RoundingMode.TOWARD_ZERO`` for that.

Implementation: integer arithmetic on the tensor's int32/int64 view (torch ops only, so CUDA works),
see `_round_magnitude` for the bit trick; values in the target's subnormal range take an exact float path
(scale by a power of two into integers, round, scale back).
"""

from __future__ import annotations

import enum
import struct

import torch

from roundoff.numerics.formats import Encoding, Format, Overflow, get_format

__all__ = ["RoundingMode", "round_to"]


class RoundingMode(enum.Enum):
    """How a value between two neighbours of the target format is resolved."""

    NEAREST_EVEN = "nearest_even"  #: IEEE default; torch's casts
    NEAREST_AWAY = "nearest_away"  #: ties away from zero (tf32 cvt.rna)
    TOWARD_ZERO = "toward_zero"  #: truncation
    TO_ODD = "to_odd"  #: truncate, then set the last kept bit if anything nonzero was dropped


_NEAREST = (RoundingMode.NEAREST_EVEN, RoundingMode.NEAREST_AWAY)


class _Source:
    """Bit-layout constants of an fp32 or fp64 source tensor."""

    def __init__(self, dtype: torch.dtype) -> None:
        self.dtype = dtype
        self.frac = 23 if dtype == torch.float32 else 52
        self.width = 32 if dtype == torch.float32 else 64
        self.int_dtype = torch.int32 if dtype == torch.float32 else torch.int64
        self.exp_bits = self.width - 1 - self.frac
        self.bias = 2 ** (self.exp_bits - 1) - 1
        self.abs_mask = (1 << (self.width - 1)) - 1
        self.sign = -(1 << (self.width - 1))  # the sign bit as a signed integer
        self.inf = ((1 << self.exp_bits) - 1) << self.frac
        self.nan = self.inf | (1 << (self.frac - 1))

    def bits_of(self, value: float) -> int:
        """Bit pattern of a (non-negative) Python float in this source format."""
        if self.width == 32:
            return struct.unpack("<i", struct.pack("<f", value))[0]
        return struct.unpack("<q", struct.pack("<d", value))[0]


_SOURCES = {torch.float32: _Source(torch.float32), torch.float64: _Source(torch.float64)}


def _check_input(x: object, fmt: Format) -> _Source:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"round_to expects a torch.Tensor, got {type(x).__name__}; wrap it: torch.tensor(...)")
    if x.dtype not in _SOURCES:
        raise TypeError(
            f"round_to accepts fp32 or fp64 tensors, got dtype {x.dtype}; "
            "cast floating inputs with x.float() first (integer, bool and complex tensors are not rounded)"
        )
    src = _SOURCES[x.dtype]
    if fmt.mantissa_bits > src.frac or fmt.exponent_bits > src.exp_bits:
        raise ValueError(
            f"cannot round a {x.dtype} tensor to {fmt.name}: the source is narrower than the target; "
            f"use an fp64 tensor (x.double()) for {fmt.name}"
        )
    return src


def _round_magnitude(a: torch.Tensor, shift: int, mode: RoundingMode) -> torch.Tensor:
    """Round the integer bit patterns `a` to a multiple of ``2**shift`` (dropping `shift` low bits).

    Why this rounds the *value*: within one binade a float's bit pattern is an integer that grows
    linearly with the value, and a carry out of the mantissa increments the exponent field, which is
    exactly the next binade's first value (and carries out of the top binade land on inf's pattern).
    So, with ``h = 2**(shift-1)`` and ``low = a mod 2**shift``:
    - nearest, ties to even: add ``h - 1 + lsb`` where lsb is the last kept bit, then clear the low bits.
      ``low > h`` carries in any case, ``low < h`` never does, and ``low == h`` carries exactly when
      ``lsb == 1`` -- an odd kept part rounds up to even.
    - nearest, ties away: add ``h`` then clear.   - toward zero: clear.
    - to odd: clear, then set the last kept bit when ``low != 0``.
    Works on signed patterns too (two's complement addition only touches the sign bit on NaN inputs).
    """
    keep = ~((1 << shift) - 1)
    if mode is RoundingMode.NEAREST_EVEN:
        r = torch.bitwise_and(torch.bitwise_right_shift(a, shift), 1)
        r += a
        r += (1 << (shift - 1)) - 1
        return r.bitwise_and_(keep)
    if mode is RoundingMode.NEAREST_AWAY:
        return torch.bitwise_and(a + (1 << (shift - 1)), keep)
    if mode is RoundingMode.TOWARD_ZERO:
        return torch.bitwise_and(a, keep)
    inexact = torch.bitwise_and(a, (1 << shift) - 1) != 0
    return torch.bitwise_and(a, keep).bitwise_or_(inexact.to(a.dtype).bitwise_left_shift_(shift))


def _round_subnormal(mag: torch.Tensor, fmt: Format, mode: RoundingMode) -> torch.Tensor:
    """Round magnitudes below fmt's min normal to multiples of its min subnormal, in float arithmetic.

    ``mag * 2**(M - emin)`` is exact (scaling by a power of two, result < 2**M), so rounding it to an
    integer with `mode` and scaling back is the exact rounding in the target's subnormal range.
    """
    scale = fmt.mantissa_bits - fmt.min_exponent
    t = mag * 2.0**scale
    if mode is RoundingMode.NEAREST_EVEN:
        q = torch.round(t)
    elif mode is RoundingMode.NEAREST_AWAY:
        q = torch.floor(t + 0.5)  # exact: t < 2**M and M < source precision
    else:
        q = torch.trunc(t)
        if mode is RoundingMode.TO_ODD:
            q = q + ((q != t) & (torch.remainder(q, 2) == 0)).to(q.dtype)
    return q * 2.0 ** (-scale)


def _same_range(x: torch.Tensor, src: _Source, fmt: Format, mode: RoundingMode) -> torch.Tensor:
    """Targets with the source's exponent range (fp32 -> bf16/tf32): only the bit trick and NaN."""
    i = x.view(src.int_dtype)
    r = _round_magnitude(i, src.frac - fmt.mantissa_bits, mode)
    return torch.where(torch.isnan(x), x, r.view(src.dtype))


def _normal(a: torch.Tensor, src: _Source, fmt: Format, mode: RoundingMode) -> torch.Tensor:
    """Magnitude bits `a` rounded as if the target's normal range went down forever; overflow, NaN."""
    r = _round_magnitude(a, src.frac - fmt.mantissa_bits, mode)
    max_bits = src.bits_of(fmt.max_finite)
    if mode in _NEAREST:
        over = {Overflow.INF: src.inf, Overflow.SATURATE: max_bits, Overflow.NAN: src.nan}[fmt.overflow]
    else:
        over = max_bits
    # NaN inputs may have wrapped below zero in the rounding add: decide them on `a`, not `r`.
    r = torch.where(r > max_bits, over, r).masked_fill_(a > src.inf, src.nan)
    if mode not in _NEAREST:
        inf_to = src.inf if fmt.has_inf else (max_bits if fmt.overflow is Overflow.SATURATE else src.nan)
        r.masked_fill_(a == src.inf, inf_to)
    return r


def _general(x: torch.Tensor, src: _Source, fmt: Format, mode: RoundingMode) -> torch.Tensor:
    """Any target: the normal-range bit trick and/or the subnormal-range float path, then the sign."""
    i = x.view(src.int_dtype)
    a = torch.bitwise_and(i, src.abs_mask)
    has_sub = fmt.min_exponent > 1 - src.bias  # target has subnormals where the source is normal
    min_normal = src.bits_of(fmt.min_normal)
    if has_sub and not x.is_cuda:  # CPU: skip a path no element of this chunk needs (no device sync)
        lo, hi = (int(v) for v in torch.aminmax(a))
        need_normal, need_sub = hi >= min_normal, lo < min_normal
    else:
        need_normal, need_sub = True, has_sub
    r = _normal(a, src, fmt, mode) if need_normal else None
    if need_sub:
        sub = _round_subnormal(a.view(src.dtype), fmt, mode).view(src.int_dtype)
        r = sub if r is None else torch.where(a < min_normal, sub, r)
    assert r is not None
    sign = torch.bitwise_and(i, src.sign)
    if not fmt.has_negative_zero:  # fnuz: a zero result is +0.0; NaN is the canonical pattern
        sign.masked_fill_((r == 0) | (r == src.nan), 0)
    return r.bitwise_or_(sign).view(src.dtype)


#: CPU tensors are rounded in chunks of this many elements, so temporaries stay in cache and are reused.
_CHUNK = 1 << 16


def _apply(x: torch.Tensor, src: _Source, fmt: Format, mode: RoundingMode) -> torch.Tensor:
    kernel = _same_range if fmt.exponent_bits == src.exp_bits and fmt.encoding is Encoding.IEEE else _general
    if x.is_cuda or x.numel() <= _CHUNK:
        return kernel(x, src, fmt, mode)
    flat = x.reshape(-1)
    out = torch.empty_like(flat)
    for start in range(0, flat.numel(), _CHUNK):
        out[start : start + _CHUNK] = kernel(flat[start : start + _CHUNK], src, fmt, mode)
    return out.view(x.shape)


def round_to(
    x: torch.Tensor,
    fmt: Format | str | torch.dtype,
    mode: RoundingMode | None = None,
    *,
    torch_compatible: bool = False,
) -> torch.Tensor:
    """Round every element of fp32/fp64 `x` to `fmt` with `mode`; result in x's dtype (see module doc).

    `mode` defaults to the format's own conversion: NEAREST_EVEN, except tf32 (NEAREST_AWAY).
    `torch_compatible` (fp64 sources only) rounds through fp32 first, as torch's fp64 casts do.
    Raises TypeError for non-tensors and non fp32/fp64 dtypes, ValueError when x's format is narrower
    than `fmt` or the format name is unknown.
    """
    f = get_format(fmt)
    src = _check_input(x, f)
    mode = RoundingMode(f.rounding) if mode is None else RoundingMode(mode)
    if f.mantissa_bits == src.frac or x.numel() == 0:
        return x  # already representable: returned as is, not copied
    if torch_compatible and src.dtype == torch.float64 and f.mantissa_bits < 23:
        x32 = _apply(x.contiguous(), src, get_format("fp32"), RoundingMode.NEAREST_EVEN).to(torch.float32)
        return round_to(x32, f, mode).to(torch.float64)
    return _apply(x.contiguous(), src, f, mode)
