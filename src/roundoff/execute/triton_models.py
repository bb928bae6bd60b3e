"""CPU models of what Inductor's Triton code computes for ops that are not one IEEE operation.

Inductor (torch 2.11-2.13) writes ``tl.sigmoid(x)`` for fp32 ``sigmoid``. Triton defines it in
``triton/language/standard.py`` as ``1 / (1 + math.exp(-x))``, and on NVIDIA GPUs its frontend and
backend lower each piece so (all in fp32, round to nearest even):

- ``-x`` is ``0.0 - x`` (``semantic.minus``; see ``roundoff.policy.Negation``);
- ``math.exp(t)`` for fp32 is ``ex2.approx.f32(fl(t * 1.4426950408889634))`` (``ExpOpConversionApprox``
  in ``ElementwiseOpToLLVM.cpp``: the product rounded to fp32 with the constant rounded to fp32,
  then PTX ``ex2.approx`` without flush to zero), not libdevice's ``__nv_expf``;
- ``1 / d`` is PTX ``div.full.f32`` (see ``roundoff.policy.Division``).

Contract of the model: the fp32 steps above are computed as written, and the two hardware
approximations (``ex2.approx.f32`` = MUFU.EX2, ``div.full.f32`` = MUFU.RCP then a multiply) are
replaced by their correctly rounded values (``2**p`` in fp64 rounded once to fp32; IEEE ``1 / d``).
So the model reproduces the error that the fp32 rounding of ``t * log2(e)`` adds (up to
``|t| * log2(e) * 2**-24`` relative before the exponential, i.e. several ulps for ``|t| > 4``),
which torch's correctly rounded-ish ``expf`` does not have, and differs from the GPU only where
MUFU's own approximation error changes the fp32 result. Subnormals are kept (no FTZ), overflow
gives inf, NaN stays NaN. Inputs that are not fp32 are computed by torch (Triton would call
libdevice's fp64 functions: not modelled).

``libdevice.*`` calls (``exp``, ``tanh``, ``erf``, ``rsqrt``, ... in torch 2.11+ Inductor) are
NVIDIA's closed implementations built on the same MUFU units; they are not modelled here.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

__all__ = ["LOG2E_F32", "TRITON_MODELS", "tl_exp", "tl_sigmoid"]

#: Triton's ``f32_val(1.4426950408889634)``: log2(e) rounded to fp32.
LOG2E_F32 = float(torch.tensor(1.4426950408889634, dtype=torch.float32))


def tl_exp(t: torch.Tensor) -> torch.Tensor:
    """Model of Triton's fp32 ``math.exp(t)``: ``2**fl32(t * LOG2E_F32)``, the power correctly rounded."""
    if t.dtype != torch.float32:
        return torch.exp(t)
    p = t * LOG2E_F32  # the fp32 product, one rounding (LOG2E_F32 is an fp32 value)
    return torch.exp2(p.to(torch.float64)).to(torch.float32)


def tl_sigmoid(x: torch.Tensor) -> torch.Tensor:
    """Model of Triton's fp32 ``tl.sigmoid(x) = 1 / (1 + exp(0.0 - x))`` (see the module docstring)."""
    if x.dtype != torch.float32:
        return torch.sigmoid(x)
    e = tl_exp(torch.zeros_like(x) - x)
    return torch.reciprocal(1.0 + e)


#: aten overload -> model of Inductor's Triton code for it.
TRITON_MODELS: dict[object, Callable[..., torch.Tensor]] = {
    torch.ops.aten.sigmoid.default: tl_sigmoid,
}
