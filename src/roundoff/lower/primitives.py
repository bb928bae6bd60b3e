"""The two primitives of a lowered plan as torch.library custom ops: ``roundoff::round_to``, ``roundoff::fma``.

- ``torch.ops.roundoff.round_to(x, fmt)``: `x` (fp32 or fp64) rounded to the format named `fmt` with
  the format's own rounding (RNE, tf32 ties away), result in x's dtype: exactly
  ``roundoff.numerics.round_to(x, fmt)`` (see its contract: subnormals kept, overflow as the
  format's conversion does it, -0.0 kept except in fnuz formats, NaN stays NaN).
- ``torch.ops.roundoff.fma(a, b, c)``: fp32 ``a*b + c`` computed exactly and rounded once (RNE),
  broadcast: exactly ``roundoff.numerics.fma``.

Both are opaque to torch.compile: Inductor calls them as extern kernels and cannot fold, contract
or reassociate what they compute. Their fake (meta) kernels give the result's shape and dtype only.
"""

from __future__ import annotations

import torch

from roundoff.numerics import fma as _fma
from roundoff.numerics import get_format
from roundoff.numerics import round_to as _round_to

__all__ = ["fma_op", "round_op"]


@torch.library.custom_op("roundoff::round_to", mutates_args=())
def round_op(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """`x` rounded to format `fmt` (``roundoff.numerics.round_to``), a new tensor in x's dtype."""
    y = _round_to(x, fmt)
    return y.clone() if y is x else y  # a custom op may not return its input


@round_op.register_fake
def _round_fake(x: torch.Tensor, fmt: str) -> torch.Tensor:
    get_format(fmt)  # an unknown name fails at trace time, not inside a compiled kernel
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.custom_op("roundoff::fma", mutates_args=())
def fma_op(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Correctly rounded fp32 ``a*b + c`` (``roundoff.numerics.fma``), broadcast."""
    return _fma(a, b, c)


@fma_op.register_fake
def _fma_fake(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    shape = torch.broadcast_shapes(a.shape, b.shape, c.shape)
    return a.new_empty(shape, dtype=torch.float32)
