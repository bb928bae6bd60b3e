"""Selections that choose other indices than fp64: a discrete decision a rounding can flip.

`topk`, `sort`, `max`/`min` over a dim, `argmax`/`argmin` and max pooling pick indices from float scores; where the
policy rounds those scores (a bf16 router's logits), near-ties can fall the other way than in fp64,
and what is computed from the other choice may differ from fp64 by more than rounding. Whether it does
is measured, not assumed (`flip_matters`): fp64 is run again with the policy's choice
(`roundoff.analyze.replay`), and the flip matters where that moves an output beyond the limit. A softmax's max is one that does not: the choice
only shifts values the softmax is invariant to (trial 45).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.fx

from roundoff.analyze.replay import moves_outputs
from roundoff.capture.program import NODE_ID, Program

_aten = torch.ops.aten

#: Ops that choose indices from float operands.
#: Max pooling with its indices, by the count of spatial dims its indices are flat over.
_POOLS = {_aten.max_pool2d_with_indices.default: 2, _aten.max_pool3d_with_indices.default: 3}
#: Equality tests of float values: their bool result is the choice (a tie mask ``x == x.amax()``), which
#: flips wherever a rounding separates values fp64 holds equal (or joins values it holds apart). Ordered
#: comparisons (``x > t``, a ReLU's mask in its backward) are left out: their flips follow the operand's
#: error at the threshold, and the node that makes that error is the finding.
COMPARISONS = frozenset(getattr(getattr(_aten, op), overload) for op in ("eq", "ne") for overload in ("Tensor", "Scalar"))
SELECTIONS = frozenset({
    _aten.topk.default, _aten.sort.default, _aten.sort.stable, _aten.max.dim, _aten.min.dim,
    _aten.argmax.default, _aten.argmin.default, *_POOLS, *COMPARISONS,
})


#: Inductor's decomposition of max pooling (torch 2.9-2.13): its second result is each window's offset of its
#: maximum, not a flat index (a prims op, registered once Inductor is imported: named by its string).
_OFFSET_POOL = "prims._low_memory_max_pool_with_offsets.default"


def _offset_pool(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and str(node.target) == _OFFSET_POOL


def _offsets_to_indices(node: torch.fx.Node, offsets: torch.Tensor, spatial: Sequence[int]) -> torch.Tensor:
    """The flat indices over the input's spatial dims that an offset max pool's window offsets stand for."""
    kernel, stride, padding, dilation = (list(a) for a in node.args[1:5])
    return torch.ops.prims._low_memory_max_pool_offsets_to_indices(
        offsets, kernel, list(spatial), stride or kernel, padding, dilation)


def is_selection(node: torch.fx.Node) -> bool:
    """Whether `node` chooses from float values: a `SELECTIONS` op or Inductor's offset max pool (trial 68:
    its flips under inductor-cpu were not named where eager's were); a comparison only where an operand
    is a float tensor (``topi == e`` of a router's integer choices flips only where topk did)."""
    if _offset_pool(node):
        return True
    if node.op != "call_function" or node.target not in SELECTIONS:
        return False
    return node.target not in COMPARISONS or any(
        isinstance(v := a.meta.get("val"), torch.Tensor) and v.is_floating_point() for a in node.all_input_nodes)


def _indices(value: Any) -> torch.Tensor | None:
    """The indices a selection chose: its last result ((values, indices) or argmax's indices); None where
    its values are not float (a sort of integers: no rounding can flip it, only how ties are broken)."""
    if isinstance(value, (tuple, list)):
        if not (value and isinstance(value[0], torch.Tensor) and value[0].is_floating_point()):
            return None
        value = value[-1]
    return value if isinstance(value, torch.Tensor) and not value.is_floating_point() else None


def differing_indices(policy_value: Any, oracle_value: Any) -> tuple[int, int] | None:
    """(indices the policy's selection chose differently from fp64's, indices in all) of one selection's
    results, or None where they all agree (or are not comparable)."""
    count = differing_count(policy_value, oracle_value)
    if count is None:
        return None
    differing = int(count[0])
    return (differing, count[1]) if differing else None


def differing_count(policy_value: Any, oracle_value: Any) -> tuple[torch.Tensor, int] | None:
    """`differing_indices` not read: (a device count of the indices chosen differently, indices in all),
    or None where they are not comparable."""
    mine, exact = _indices(policy_value), _indices(oracle_value)
    if mine is None or exact is None or mine.shape != exact.shape or not mine.numel():
        return None
    return (mine != exact).sum(), mine.numel()


def _dim(node: torch.fx.Node) -> int:
    """The dim a selection chooses along (its default where the call leaves it out)."""
    default = -1 if node.target in (_aten.topk.default, _aten.sort.default, _aten.sort.stable) else 0
    if node.target is _aten.topk.default:
        return node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", default)
    if node.target is _aten.sort.stable:
        return node.kwargs.get("dim", default) if node.kwargs.get("dim") is not None else default
    return node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", default)


def _chosen(node: torch.fx.Node, scores: torch.Tensor, exact: Any, indices: torch.Tensor) -> Any:
    """fp64's value of selection `node` with `indices` chosen: the values taken from fp64's `scores` at
    those indices (as the selection would return them), in `exact`'s structure."""
    if not isinstance(exact, (tuple, list)):
        return indices.to(exact.device)
    idx = indices.to(scores.device)
    offsets = _offset_pool(node)
    if offsets or node.target in _POOLS:  # a pooling window's index is flat over the input's spatial dims
        k = len(node.args[1]) if offsets else _POOLS[node.target]
        flat = _offsets_to_indices(node, idx, scores.shape[-k:]) if offsets else idx
        values = scores.flatten(-k).gather(-1, flat.flatten(-k)).reshape(idx.shape)
        return type(exact)(values if isinstance(t, torch.Tensor) and t.is_floating_point() else idx for t in exact)
    dim = _dim(node) % max(scores.dim(), 1)
    kept = idx.dim() == scores.dim()
    values = scores.gather(dim, idx if kept else idx.unsqueeze(dim))
    values = values if kept else values.squeeze(dim)
    return type(exact)(values if isinstance(t, torch.Tensor) and t.is_floating_point() else idx for t in exact)


def flip_matters(program: Program, inputs: Sequence[Any], node_id: str, chosen: Any,
                 exact_outputs: Sequence[Any] | None = None) -> tuple[bool, tuple]:
    """Whether selection `node_id` choosing as the policy did (`chosen`: the policy's value of it, whose
    indices are taken) moves an output of fp64's run beyond the limit (`replay.moves_outputs`); with
    fp64's outputs, for the next call."""
    indices = _indices(chosen)
    if indices is None:
        return True, tuple(exact_outputs or ())
    target = next(n for n in program.graph.nodes if n.meta.get(NODE_ID, n.name) == node_id)
    return moves_outputs(program, inputs, node_id,
                         lambda value, read: _chosen(target, read(target.args[0]), value, indices), exact_outputs)
