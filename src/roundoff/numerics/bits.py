"""Bit-pattern equality of two tensors: the comparison behind every "bit-identical" figure.

Contract: two elements are the same when their bit patterns are equal, viewed as the signed
integer of the dtype's width (int8/int16/int32/int64), so ``-0.0`` and ``+0.0`` differ, and any
NaN equals any NaN whatever its sign or payload (payloads are not modelled: backends quiet and
propagate NaNs differently). ``a == b`` is not this comparison: it calls ``-0.0 == +0.0`` equal
and every NaN unequal. Integer and bool tensors compare by value (their bit patterns). Both tensors
must have one dtype and one shape (and one device); a mismatch is an error, never a silent
"differs".
"""

from __future__ import annotations

import torch

from roundoff.numerics.chunks import slices

__all__ = ["bits_differ", "same_bits", "same_bits_mask"]

_INT_OF_SIZE = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _check(a: torch.Tensor, b: torch.Tensor) -> None:
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a tensor, got {type(t).__name__}")
    if a.dtype != b.dtype or a.shape != b.shape:
        raise ValueError(
            f"bit comparison needs one dtype and shape: {a.dtype}{tuple(a.shape)} vs "
            f"{b.dtype}{tuple(b.shape)}; cast or reshape one side first"
        )
    if a.device != b.device:
        raise ValueError(f"bit comparison needs one device: {a.device} vs {b.device}; move one side")


def _as_ints(t: torch.Tensor) -> torch.Tensor:
    if t.dtype == torch.bool:
        return t
    if t.is_complex():
        t = torch.view_as_real(t)
    return t.contiguous().view(_INT_OF_SIZE[t.element_size()])


def same_bits_mask(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Bool tensor of a's shape: True where the elements have one bit pattern or both are NaN."""
    _check(a, b)
    same = _as_ints(a) == _as_ints(b)
    if a.is_complex():
        nan = torch.view_as_real(a).isnan() & torch.view_as_real(b).isnan()
        return (same | nan).all(-1)
    if a.is_floating_point():
        wide = (lambda t: t.float()) if a.element_size() == 1 else (lambda t: t)  # fp8: no isnan
        same |= wide(a).isnan() & wide(b).isnan()
    return same


def bits_differ(a: torch.Tensor, b: torch.Tensor) -> int:
    """How many elements of `a` and `b` differ in their bit patterns (NaN vs NaN: same); host tensors a
    slice at a time (`chunks.slices`: a slice's masks, not the tensors')."""
    _check(a, b)
    return sum(int((~same_bits_mask(x, y)).sum()) for x, y in slices(a, b))


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether every element has one bit pattern in `a` and `b` (NaN vs NaN: same)."""
    return bits_differ(a, b) == 0
