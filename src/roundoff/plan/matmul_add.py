"""The adds a backend computes inside the GEMM that makes their operand (``MatmulAdd.ADDMM``).

Inductor's post-grad pattern ``addmm`` (``torch/_inductor/fx_passes/post_grad.py``, torch 2.9-2.13)
rewrites ``add(mm(a, b), x)`` as ``addmm(x, a, b)``: one GEMM whose fp32 accumulator takes ``x``, rounded
once. The planner then runs such an add as that GEMM (an extern kernel, its result stored); the matmul's
own value is still computed and compared, though no real kernel stores it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import torch
import torch.fx
from torch._prims_common import is_expandable_to

from roundoff.capture.program import node_id
from roundoff.policy.model import MatmulAdd, Policy

_aten = torch.ops.aten


def gemm_adds(nodes: Iterable[torch.fx.Node], policy: Policy, saved: Collection[str] = ()) -> dict[str, str]:
    """{add id: mm id} for every add `policy` computes in its matmul's GEMM (`foldable_adds`) under
    ``MatmulAdd.ADDMM``. `saved`: the ids of the forward values a training step saves for its backward. A
    saved matmul has another use in the compiled forward graph (its output), so no add folds it (measured: a
    residual MLP's training step, whose partitioner saves ``mm`` and has the backward add it to ``x`` again)."""
    if policy.matmul_add is not MatmulAdd.ADDMM:
        return {}
    return {node_id(add): node_id(mm) for add, mm in foldable_adds(nodes).items() if node_id(mm) not in saved}


def foldable_adds(nodes: Iterable[torch.fx.Node]) -> dict[torch.fx.Node, torch.fx.Node]:
    """{add: mm} for every ``aten.add.Tensor`` without ``alpha`` of an ``aten.mm`` that has no other use and
    of a tensor ``x`` of the matmul operands' dtype that broadcasts to the product's shape (the pattern's
    ``is_valid_addmm_fusion``). Where both operands qualify, the second is the GEMM's (``add(x, mm)`` is the
    pattern tried first)."""
    folds = {}
    for n in nodes:
        if n.op != "call_function" or n.target is not _aten.add.Tensor or n.kwargs or len(n.args) != 2:
            continue
        mm = next((n.args[i] for i in (1, 0) if _folds(n.args[i], n.args[1 - i])), None)
        if mm is not None:
            folds[n] = mm
    return folds


def _folds(mm: object, x: object) -> bool:
    if not isinstance(mm, torch.fx.Node) or mm.target is not _aten.mm.default or len(mm.users) != 1:
        return False
    xv = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
    a, b = (m.meta.get("val") if isinstance(m, torch.fx.Node) else None for m in mm.args[:2])
    if not all(isinstance(t, torch.Tensor) for t in (xv, a, b)):
        return False
    return xv.dtype == a.dtype == b.dtype and is_expandable_to(xv.shape, (a.shape[0], b.shape[1]))
