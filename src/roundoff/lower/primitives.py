"""The two primitives of a lowered plan as torch.library custom ops: ``roundoff::round_to``, ``roundoff::fma``.

- ``torch.ops.roundoff.round_to(x, fmt)``: `x` (fp32 or fp64) rounded to the format named `fmt` with
  the format's own rounding (RNE, tf32 ties away), result in x's dtype: exactly
  ``roundoff.numerics.round_to(x, fmt)`` (see its contract: subnormals kept, overflow as the
  format's conversion does it, -0.0 kept except in fnuz formats, NaN stays NaN).
- ``torch.ops.roundoff.fma(a, b, c)``: fp32 ``a*b + c`` computed exactly and rounded once (RNE),
  broadcast: exactly ``roundoff.numerics.fma``.

Both are opaque to torch.compile: Inductor calls them as extern kernels and cannot fold, contract
or reassociate what they compute. Their fake (meta) kernels give the result's shape and dtype only.
`EXPANSIONS` writes them out instead as the same numerics code in fusable aten ops (`round_bits`:
integer operations on the bit pattern; `fma_fp64`: the fp64 round-to-odd steps), for compiling.
"""

from __future__ import annotations

import torch

from roundoff.numerics import fma as _fma
from roundoff.numerics import get_format
from roundoff.numerics import round_to as _round_to
from roundoff.numerics._kernels import SOURCES, RoundingMode, kernel
from roundoff.numerics.fma import _fma64 as fma64

__all__ = ["DIRECT", "EXPANSIONS", "fma_fp64", "fma_op", "round_bits", "round_op"]


@torch.library.custom_op("roundoff::round_to", mutates_args=())
def round_op(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """`x` rounded to format `fmt` (``roundoff.numerics.round_to``), a new tensor in x's dtype."""
    return _like(x, _round_to(x, fmt))


def _like(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """`y` (x's values, any layout) as a new tensor laid out as `x` is, as the ``x.to(bf16)`` cast it
    stands for lays out its result: a lowered graph's later views are recorded for that layout."""
    if y is not x and y.stride() == x.stride():
        return y
    return torch.empty_like(x).copy_(y)  # empty_like keeps a dense layout's strides


@round_op.register_fake
def _round_fake(x: torch.Tensor, fmt: str) -> torch.Tensor:
    get_format(fmt)  # an unknown name fails at trace time, not inside a compiled kernel
    return torch.empty_like(x)


@torch.library.custom_op("roundoff::fma", mutates_args=())
def fma_op(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Correctly rounded fp32 ``a*b + c`` (``roundoff.numerics.fma``), broadcast, contiguous."""
    return _fma(a, b, c).contiguous()


@fma_op.register_fake
def _fma_fake(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    shape = torch.broadcast_shapes(a.shape, b.shape, c.shape)
    return a.new_empty(shape, dtype=torch.float32)


def round_bits(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """`round_op` written out as integer operations on x's bit pattern (numerics' branch-free kernel,
    the one ``round_to`` runs compiled): the same bits, and a form Inductor fuses but cannot change
    (integer arithmetic is exact; no float operation is left to fold or reassociate)."""
    f = get_format(fmt)
    y = kernel(x.contiguous(), SOURCES[x.dtype], f, RoundingMode(f.rounding), branchless=True)
    return y if y.stride() == x.stride() else torch.empty_like(x).copy_(y)


def fma_fp64(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """`fma_op` written out as numerics' fp64 round-to-odd construction (no chunking): the same bits.
    Its fp64 product is exact, so even an FMA contraction by a compiler leaves every step unchanged."""
    a, b, c = torch.broadcast_tensors(a, b, c)
    return fma64(a.to(torch.float64), b.to(torch.float64), c.to(torch.float64)).contiguous()


#: For ``make_fx(..., decomposition_table=EXPANSIONS)``: the primitives as fusable aten ops.
EXPANSIONS = {torch.ops.roundoff.round_to.default: round_bits, torch.ops.roundoff.fma.default: fma_fp64}


def _round_direct(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """`round_op`'s kernel as a plain function (no dispatcher)."""
    return _like(x, _round_to(x, fmt))


def _fma_direct(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """`fma_op`'s kernel as a plain function (no dispatcher)."""
    return _fma(a, b, c).contiguous()


#: The primitives' kernels as plain functions, for running a lowered graph without the dispatcher.
DIRECT = {torch.ops.roundoff.round_to.default: _round_direct, torch.ops.roundoff.fma.default: _fma_direct}
