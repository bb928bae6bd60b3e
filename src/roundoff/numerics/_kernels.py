"""Branch-free rounding kernels on a float tensor's integer view (torch ops only: CPU and CUDA).

Every select is arithmetic, not `torch.where`: for integers in range, ``(c - t) >> (w-1)`` is -1
where ``t > c`` and 0 elsewhere (arithmetic shift of the sign), and ``r + ((v - r) & mask)`` is v where
mask is -1 and r where it is 0 (exact under two's complement wrap-around). Comparison and `where`
kernels produce bool tensors and run several times slower than these integer ops on CPU.
"""

from __future__ import annotations

import enum
import struct

import torch

from roundoff.numerics.formats import Format, Overflow


class RoundingMode(enum.Enum):
    """How a value between two neighbours of the target format is resolved."""

    NEAREST_EVEN = "nearest_even"  #: IEEE default; torch's casts
    NEAREST_AWAY = "nearest_away"  #: ties away from zero (tf32 cvt.rna)
    TOWARD_ZERO = "toward_zero"  #: truncation
    TO_ODD = "to_odd"  #: truncate, then set the last kept bit if anything nonzero was dropped


NEAREST = (RoundingMode.NEAREST_EVEN, RoundingMode.NEAREST_AWAY)


class Source:
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
        self.top = self.width - 1  # shift that smears the sign bit over the word

    def bits_of(self, value: float) -> int:
        """Bit pattern of a non-negative Python float in this source format."""
        if self.width == 32:
            return struct.unpack("<i", struct.pack("<f", value))[0]
        return struct.unpack("<q", struct.pack("<d", value))[0]


SOURCES = {torch.float32: Source(torch.float32), torch.float64: Source(torch.float64)}


def _select(r: torch.Tensor, value: torch.Tensor | int, mask: torch.Tensor) -> torch.Tensor:
    """In place: r becomes `value` where mask == -1, stays where mask == 0."""
    return r.add_(torch.bitwise_and(value - r, mask))


def round_magnitude(a: torch.Tensor, shift: int, mode: RoundingMode, top: int) -> torch.Tensor:
    """Round the integer bit patterns `a` to a multiple of ``2**shift`` (dropping `shift` low bits).

    Why this rounds the *value*: within one binade a float's bit pattern is an integer that grows
    linearly with the value, and a carry out of the mantissa increments the exponent field, which is
    exactly the next binade's first value (a carry out of the top binade lands on inf's pattern).
    With ``h = 2**(shift-1)`` and ``low = a mod 2**shift``:
    - nearest, ties to even: add ``h - 1 + lsb`` (lsb: the last kept bit), then clear the low bits.
      ``low > h`` carries in any case, ``low < h`` never does, and ``low == h`` carries exactly when
      ``lsb == 1``: an odd kept part rounds up to even, an even one stays.
    - nearest, ties away: add ``h``, clear.  - toward zero: clear.
    - to odd: clear, then set the last kept bit when ``low != 0`` (``-low >> top`` is -1 iff low > 0).
    Signed patterns work too: two's complement addition reaches the sign bit only from NaN inputs.
    """
    keep = ~((1 << shift) - 1)
    if mode is RoundingMode.NEAREST_EVEN:
        r = torch.bitwise_right_shift(a, shift).bitwise_and_(1)
        r += a
        r += (1 << (shift - 1)) - 1
        return r.bitwise_and_(keep)
    if mode is RoundingMode.NEAREST_AWAY:
        return torch.add(a, 1 << (shift - 1)).bitwise_and_(keep)
    if mode is RoundingMode.TOWARD_ZERO:
        return torch.bitwise_and(a, keep)
    low = torch.bitwise_and(a, (1 << shift) - 1)
    inexact = torch.neg(low).bitwise_right_shift_(top).bitwise_and_(1 << shift)
    return torch.bitwise_and(a, keep).bitwise_or_(inexact)


def round_subnormal(mag: torch.Tensor, fmt: Format, mode: RoundingMode) -> torch.Tensor:
    """Round magnitudes below fmt's min normal to multiples of its min subnormal, in float arithmetic.

    ``mag * 2**(M - emin)`` is exact (a power-of-two scaling with a result below 2**M), so rounding it
    to an integer with `mode` and scaling back is the exact rounding in the target's subnormal range.
    """
    scale = fmt.mantissa_bits - fmt.min_exponent
    t = mag * 2.0**scale
    if mode is RoundingMode.NEAREST_EVEN:
        q = torch.round(t)  # half to even
    elif mode is RoundingMode.NEAREST_AWAY:
        q = torch.floor(t + 0.5)  # exact: t < 2**M and M < source precision
    else:
        q = torch.trunc(t)
        if mode is RoundingMode.TO_ODD:  # +1 where inexact and even
            q = q + ((q != t) & (torch.remainder(q, 2) == 0)).to(q.dtype)
    return q.mul_(2.0 ** (-scale))


def same_range(x: torch.Tensor, src: Source, fmt: Format, mode: RoundingMode, out: torch.Tensor) -> None:
    """Targets with the source's exponent range and IEEE encoding (fp32 -> bf16/tf32)."""
    i = x.view(src.int_dtype)
    r = round_magnitude(i, src.frac - fmt.mantissa_bits, mode, src.top)
    a = torch.bitwise_and(i, src.abs_mask)
    nan = torch.rsub(a, src.inf).bitwise_right_shift_(src.top)  # -1 where a > inf
    torch.add(r, torch.bitwise_and(src.nan - r, nan), out=out.view(src.int_dtype))


def normal_range(a: torch.Tensor, src: Source, fmt: Format, mode: RoundingMode) -> torch.Tensor:
    """Magnitude bits `a` rounded as if the target's normal range went on downwards; overflow, NaN."""
    r = round_magnitude(a, src.frac - fmt.mantissa_bits, mode, src.top)
    max_bits = src.bits_of(fmt.max_finite)
    if mode in NEAREST:
        over = {Overflow.INF: src.inf, Overflow.SATURATE: max_bits, Overflow.NAN: src.nan}[fmt.overflow]
    else:
        over = max_bits
    _select(r, over, torch.rsub(r, max_bits).bitwise_right_shift_(src.top))
    if mode not in NEAREST:  # an inf input is not an overflow of a finite value
        inf_to = src.inf if fmt.has_inf else (max_bits if fmt.overflow is Overflow.SATURATE else src.nan)
        is_inf = torch.bitwise_xor(a, src.inf).sub_(1).bitwise_right_shift_(src.top)
        _select(r, inf_to, is_inf)
    # NaN inputs may have wrapped in the rounding add: decided on `a`, last.
    return _select(r, src.nan, torch.rsub(a, src.inf).bitwise_right_shift_(src.top))


def general(
    x: torch.Tensor, src: Source, fmt: Format, mode: RoundingMode, branchless: bool, out: torch.Tensor
) -> None:
    """Any target: the normal-range bit trick and/or the subnormal-range float path, then the sign.

    Unless `branchless`, a CPU chunk whose magnitudes all lie on one side of fmt's min normal skips
    the other path (one aminmax; no device sync on CUDA, and no data-dependent branch when compiled).
    """
    i = x.view(src.int_dtype)
    a = torch.bitwise_and(i, src.abs_mask)
    has_sub = fmt.min_exponent > 1 - src.bias  # fmt has subnormals where the source is still normal
    min_normal = src.bits_of(fmt.min_normal)
    need_normal, need_sub = True, has_sub
    if has_sub and not branchless and not x.is_cuda:
        lo, hi = (int(v) for v in torch.aminmax(a))
        need_normal, need_sub = hi >= min_normal, lo < min_normal
    r = normal_range(a, src, fmt, mode) if need_normal else None
    if need_sub:
        sub = round_subnormal(a.view(src.dtype), fmt, mode).view(src.int_dtype)
        r = sub if r is None else _select(r, sub, torch.sub(a, min_normal).bitwise_right_shift_(src.top))
    assert r is not None
    sign = torch.bitwise_and(i, src.sign)
    if not fmt.has_negative_zero:  # fnuz: a zero result is +0.0 (-r >> top is 0 iff r == 0)
        sign.bitwise_and_(torch.neg(r).bitwise_right_shift_(src.top))
    torch.bitwise_or(r, sign, out=out.view(src.int_dtype))


def kernel(
    x: torch.Tensor, src: Source, fmt: Format, mode: RoundingMode, branchless: bool = False,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Round contiguous `x` to fmt with mode into `out` (a new tensor if None), in x's dtype."""
    out = torch.empty_like(x) if out is None else out
    if fmt.exponent_bits == src.exp_bits and fmt.has_inf and fmt.has_negative_zero:
        same_range(x, src, fmt, mode, out)
    else:
        general(x, src, fmt, mode, branchless, out)
    return out
