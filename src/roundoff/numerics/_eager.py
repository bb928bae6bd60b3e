"""Cheaper eager kernels for the common round-to-nearest-even conversions (few in-place passes).

Both write into a caller-given `out` (x's dtype) and use one scratch tensor of the same size; every
step is an in-place torch op, so a chunk of a few hundred thousand elements stays in cache. They are
used only where they are exact; everything else goes through `_kernels.kernel`.

`bf16_nearest_even` (fp32 -> bf16, RNE): on the int32 view,
``r = (i + 0x7FFF + ((i >> 16) & 1)) & 0xFFFF0000`` is `round_magnitude`'s carry trick with the sign
bit riding along (a carry never reaches it from a finite input: the largest finite magnitude rounds up
to inf's pattern at most). Only NaN inputs could go wrong (a carry into the all-ones exponent field
gives inf, -0.0 or +0.0 patterns), so NaNs are first replaced by the canonical quiet NaN 0x7FC00000
(`nan_to_num` with nan=NaN; infs kept): its low 16 bits are zero, so it rounds to itself.

`magic_nearest_even` (fp32/fp64 -> formats with their own narrower exponent range: fp16, fp8_e5m2,
fp8_e4m3fn when it saturates), in float arithmetic on ``m = |x|``:
- clamp m at the largest magnitude that still rounds correctly below: ``2**(emax+1)`` for IEEE targets
  (every value at or beyond it rounds to inf; max finite has an all-ones mantissa, so RNE of anything
  in ``[max, 2**(emax+1))`` gives max or ``2**(emax+1)``), max finite for saturating targets. clamp
  keeps NaN.
- ``c = 2**(max(e, emin) + s)`` with e = m's binary exponent, emin the target's minimum normal exponent
  and ``s = p_src - 1 - M`` (source fraction bits minus target mantissa bits), built on the int view:
  keep m's exponent field, raise it to emin's field (this also covers zero and source subnormals), add
  s to it. Then ``(m + c) - c`` is m rounded to a multiple of ``2**(max(e, emin) - M)`` -- the
  target's ulp at m, subnormal range included -- with ties to even, exactly: ``m < 2**(e+1)`` keeps
  ``m + c`` inside c's binade, whose ulp is ``2**(max(e, emin) - M)``, the source's addition is
  correctly rounded (RNE; the tie parity is the parity of the target's last kept bit), and the
  subtraction of c is exact (the result is a multiple of that ulp below ``2**(e+1)``).
  NaN: c is garbage, ``m + c`` is NaN anyway. Magnitudes never reach c's exponent limit (the clamp).
- IEEE targets: a rounded magnitude of ``2**(emax+1)`` must become inf. Multiplying by
  ``K = 2**(emax_src - emax)`` maps max finite to at most the source's max finite and
  ``2**(emax+1)`` to ``2**(emax_src+1)``, which overflows to inf; multiplying by 1/K undoes it exactly
  for every finite value (power-of-two scaling, no underflow: the smallest nonzero is the target's min
  subnormal, far above the source's).
- the sign comes back with copysign (-0.0 stays -0.0; NaN stays NaN).
Needs IEEE arithmetic without flush-to-zero (torch's default on CPU and CUDA).
"""

from __future__ import annotations

import torch

from roundoff.numerics._kernels import RoundingMode, Source
from roundoff.numerics.formats import Encoding, Format, Overflow


def bf16_applies(src: Source, fmt: Format, mode: RoundingMode) -> bool:
    return (
        src.width == 32
        and fmt.exponent_bits == 8
        and fmt.mantissa_bits == 7
        and fmt.encoding is Encoding.IEEE
        and mode is RoundingMode.NEAREST_EVEN
    )


def magic_applies(src: Source, fmt: Format, mode: RoundingMode) -> bool:
    ieee_inf = fmt.encoding is Encoding.IEEE and fmt.overflow is Overflow.INF
    saturating_fn = fmt.encoding is Encoding.FN and fmt.overflow is Overflow.SATURATE
    return (
        mode is RoundingMode.NEAREST_EVEN
        and (ieee_inf or saturating_fn)
        and fmt.exponent_bits < src.exp_bits
        and fmt.mantissa_bits < src.frac
    )


def bf16_nearest_even(x: torch.Tensor, out: torch.Tensor, scratch: torch.Tensor) -> None:
    """fp32 -> bf16 RNE into `out`; `scratch` is an int32 tensor of x's size (see module doc)."""
    inf = float("inf")
    torch.nan_to_num(x, nan=float("nan"), posinf=inf, neginf=-inf, out=scratch.view(torch.float32))
    r = out.view(torch.int32)
    torch.bitwise_right_shift(scratch, 16, out=r)
    r.bitwise_and_(1).add_(scratch).add_(0x7FFF).bitwise_and_(-0x10000)


def magic_nearest_even(
    x: torch.Tensor, src: Source, fmt: Format, out: torch.Tensor, scratch: torch.Tensor
) -> None:
    """fp32/fp64 -> fp16, fp8_e5m2 or saturating fp8_e4m3fn with RNE into `out` (see module doc)."""
    emax = fmt.max_exponent
    emin = fmt.min_exponent
    shift = src.frac - fmt.mantissa_bits
    ieee = fmt.overflow is Overflow.INF
    m = torch.abs(x, out=out)
    m.clamp_(max=2.0 ** (emax + 1) if ieee else fmt.max_finite)
    c = scratch
    torch.bitwise_and(m.view(src.int_dtype), src.inf, out=c)
    # max: keeps NaN's garbage exponent field from carrying into the sign bit (no integer overflow).
    c.clamp_(min=(emin + src.bias) << src.frac, max=src.inf - (shift << src.frac)).add_(
        shift << src.frac
    )
    cf = c.view(src.dtype)
    m.add_(cf).sub_(cf)
    if ieee:
        k = 2.0 ** (src.bias - emax)
        m.mul_(k).mul_(1.0 / k)
    torch.copysign(m, x, out=out)
