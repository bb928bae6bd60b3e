"""Inductor's lowerings of 16-bit means and variances, written as decompositions.

Inductor does not decompose ``mean``, ``var`` and ``var_mean``: it lowers them
(``torch/_inductor/lowering.py``: ``mean``, ``var_mean_helper_``), and for a bf16/fp16 input the
lowering computes in fp32 and rounds only the result, with a pointwise ``to_dtype`` after the
reduction: ``mean(x) = to_dtype(sum(x.float()) / n, x.dtype)``, ``var_mean(x) = to_dtype(var_mean(
x.float()))``. The reduction's kernel stores the fp32 sum; the division and the rounding are
pointwise, so they fuse into the consuming kernels, which (inside a kernel Inductor computes
16-bit values in fp32) read the mean unrounded. Measured on CPU (torch 2.13): the naive variance
``mean(x*x) - mean(x)**2`` in bf16 compiles to one kernel holding both sums as ``float*`` buffers
and the difference in fp32, where a plan that rounds each mean to bf16 predicts NaN from ``rsqrt``.

These decompositions give the plan that structure (an fp32 reduction, then a cast that a fusing
policy drops inside a kernel and rounds where the value is stored). Other dtypes are left whole
(NotImplemented: the tracer keeps the op).

In a training step torch.compile's partitioner saves such a mean for the backward; Inductor stores
it rounded and the forward's full-width kernels read the stored value (measured, CPU, torch 2.13: a
bf16 LayerNorm of values near 64 is 10% off compiled for training, 0.2% under ``no_grad``), while
its consumers of the mean's own shape, in the kernel that computes it, read it unrounded (a naive
variance is not negative there). The plan models both: in a training graph a saved value of a
reduction's shape is stored (`roundoff.plan.planner`), and kernels of different shapes do not
merge (`roundoff.plan.fusion`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

_aten = torch.ops.aten
_SIXTEEN_BIT = (torch.float16, torch.bfloat16)


def _reduced_count(x: torch.Tensor, dim: Sequence[int] | int | None) -> int:
    """How many elements each result of a reduction over `dim` sums (all of them for None or [])."""
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return x.numel()
    dims = [dim] if isinstance(dim, int) else list(dim)
    return math.prod(x.shape[d % max(x.dim(), 1)] if x.dim() else 1 for d in dims)


def _mean(x: torch.Tensor, dim: Sequence[int] | None = None, keepdim: bool = False, *,
          dtype: torch.dtype | None = None) -> Any:
    """``aten.mean`` as Inductor lowers it: fp32 sum, fp32 division by the count, cast to the 16-bit dtype."""
    out_dtype = dtype if dtype is not None else x.dtype
    if out_dtype not in _SIXTEEN_BIT:
        return NotImplemented
    wide = x.to(torch.float32)
    total = _aten.sum.dim_IntList(wide, list(dim) if dim else [], keepdim)
    return (total / _reduced_count(x, dim)).to(out_dtype)


def _mean_all(x: torch.Tensor, *, dtype: torch.dtype | None = None) -> Any:
    return _mean(x, None, False, dtype=dtype)


def _var_mean(x: torch.Tensor, dim: Sequence[int] | None = None, *, correction: float | None = None,
              keepdim: bool = False) -> Any:
    """``aten.var_mean`` as Inductor lowers a 16-bit one: computed from fp32 values, both results cast."""
    if x.dtype not in _SIXTEEN_BIT:
        return NotImplemented
    var, mean = _aten.var_mean.correction(x.to(torch.float32), dim, correction=correction, keepdim=keepdim)
    return var.to(x.dtype), mean.to(x.dtype)


def _var(x: torch.Tensor, dim: Sequence[int] | None = None, *, correction: float | None = None,
         keepdim: bool = False) -> Any:
    """``aten.var`` as Inductor lowers a 16-bit one: computed from fp32 values, the result cast."""
    if x.dtype not in _SIXTEEN_BIT:
        return NotImplemented
    return _aten.var.correction(x.to(torch.float32), dim, correction=correction, keepdim=keepdim).to(x.dtype)


REDUCTION_LOWERINGS: Mapping[Any, Callable[..., Any]] = {
    _aten.mean.dim: _mean,
    _aten.mean.default: _mean_all,
    _aten.var_mean.correction: _var_mean,
    _aten.var.correction: _var,
}
"""Inductor's 16-bit mean/var lowerings as a decomposition table (see the module docstring)."""
