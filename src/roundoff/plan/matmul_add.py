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
    pattern tried first). A pair of transposes that undo each other between the matmul and the add
    (`unpermuted`) is no obstacle."""
    folds = {}
    for n in nodes:
        if n.op != "call_function" or n.target is not _aten.add.Tensor or n.kwargs or len(n.args) != 2:
            continue
        mm = next((unpermuted(n.args[i]) for i in (1, 0) if _folds(unpermuted(n.args[i]), n.args[1 - i])), None)
        if mm is not None:
            folds[n] = mm
    return folds


_PERMUTES = (_aten.t.default, _aten.permute.default)


def unpermuted(x: object) -> object:
    """`x` without a pair of permutes (``t``, ``permute``) that undo each other, each with no other use: Inductor's
    early joint-graph pattern ``pointless_permute_pair`` (torch 2.9-2.13) removes them before its ``addmm`` pattern
    looks for the matmul (trial 74: a hand-written GRU's weight gradients summed over time steps,
    ``add(t(t(mm)), t(t(mm)))``, each an addmm in the compiled backward); else `x`."""
    if not (isinstance(x, torch.fx.Node) and x.target in _PERMUTES and len(x.users) == 1):
        return x
    inner = x.args[0]
    if not (isinstance(inner, torch.fx.Node) and inner.target in _PERMUTES and len(inner.users) == 1):
        return x
    val = inner.args[0].meta.get("val") if isinstance(inner.args[0], torch.fx.Node) else None
    if not isinstance(val, torch.Tensor):
        return x
    first, second = (_perm(p, val.dim()) for p in (inner, x))
    return inner.args[0] if first is not None and second is not None and [first[i] for i in second] == list(
        range(val.dim())) else x


def _perm(node: torch.fx.Node, rank: int) -> list[int] | None:
    """The dims `node` (a `_PERMUTES` op on a tensor of `rank` dims) permutes, or None."""
    if node.target is _aten.t.default:
        return [1, 0] if rank == 2 else list(range(rank))
    dims = node.args[1] if len(node.args) > 1 else None
    return [d % rank for d in dims] if isinstance(dims, (list, tuple)) and len(dims) == rank else None


def _folds(mm: object, x: object) -> bool:
    if not isinstance(mm, torch.fx.Node) or mm.target is not _aten.mm.default or len(mm.users) != 1:
        return False
    xv = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
    a, b = (m.meta.get("val") if isinstance(m, torch.fx.Node) else None for m in mm.args[:2])
    if not all(isinstance(t, torch.Tensor) for t in (xv, a, b)):
        return False
    return xv.dtype == a.dtype == b.dtype and is_expandable_to(xv.shape, (a.shape[0], b.shape[1]))
