"""Which forward values a compiled training step saves for its backward, as the fusion model sees them.

roundoff plans a training step as one graph (forward and backward), where torch.compile partitions
it and compiles two programs: the forward stores each value its backward reads, rounded to its
storage format, and the backward reads the stored value, while the forward's kernel that computes
it hands it on unrounded. Which values are saved is asked of torch.compile's own partitioner
(`roundoff.plan.partitioner`); each is stored in the plan (a kernel boundary), so a backward kernel
reads it rounded (a bf16 block output near 64 that the loss's backward reads as ``out - 64``:
trial 40, measured 45x fp64's rounding, predicted 7x before) and a forward kernel fused with it
does not. A 16-bit mean saved at a reduction's shape is the common case (``sum`` in fp32, then a
division and a cast: `roundoff.capture.reduction_lowerings`): the forward's full-width kernels read
the stored mean while the kernel that computes it reads it unrounded (measured, CPU, torch 2.13: a
bf16 ``mean(x*x) - mean(x)**2`` before an ``rsqrt``). Where the partitioner cannot be asked, the
local rule approximates it by those values of a reduction's shape only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch.fx

from roundoff.capture.program import Program, base_id, node_id
from roundoff.plan.fusion_nodes import FusionNode, Kind


def numel(node: torch.fx.Node) -> int:
    """The node's element count from its traced value; 0 where unknown (multi-output, symbolic)."""
    val = node.meta.get("val")
    try:
        return int(val.numel()) if isinstance(val, torch.Tensor) else 0
    except (TypeError, RuntimeError):  # a symbolic size
        return 0


def saved_values_stored(program: Program, nodes: Sequence[FusionNode],
                             partitioned: Mapping[str, str | None] | None = None) -> set[str]:
    """The ids of the fusible forward nodes of a training `program` that its compiled forward saves. With
    `partitioned`, the captured nodes torch.compile's partitioner saves
    (`roundoff.plan.partitioner.saved_values`), each at the node that holds its value in the rewritten
    program, or an intermediate of its decomposition at the node of that id and op; without, an approximation of it at a reduction's shape (computed, through fusible nodes
    only, from a reduction of their own element count): those read by the backward or on the way
    (through fusible nodes) to a value it reads, which the partitioner then recomputes from them (a
    LayerNorm's ``x - mean``)."""
    if not program.backward:
        return set()
    by_id = {n.id: n for n in nodes}
    if partitioned is not None:
        holder = {base_id(n.id): n.id for n in nodes}  # the last node made from each captured node
        return {n.id for n in nodes if n.kind is Kind.FUSIBLE and (
            (base_id(n.id) in partitioned and partitioned[base_id(n.id)] is None and holder[base_id(n.id)] == n.id)
            or (partitioned.get(n.id) is not None and partitioned[n.id] == str(program.node(n.id).target)))}
    forward = forward_ids(program)
    todo = [p for n in nodes if n.id not in forward for p in n.inputs if p in forward]
    saved: set[str] = set()
    seen: set[str] = set()
    while todo:
        n = by_id[todo.pop()]
        if n.id in seen:
            continue
        seen.add(n.id)
        if n.kind is Kind.FUSIBLE and _of_reduction_shape(n, by_id):
            saved.add(n.id)  # the partitioner keeps this small value, not what it is computed from
        elif n.kind in (Kind.FUSIBLE, Kind.VIEW):
            todo.extend(p for p in n.inputs if p in forward)
    return saved


def forward_ids(program: Program) -> set[str]:
    """The ids of the nodes the forward outputs are computed from (themselves included)."""
    todo = [a for a in program.output_args()[: program.num_forward_outputs] if isinstance(a, torch.fx.Node)]
    seen: set[str] = set()
    while todo:
        n = todo.pop()
        if (nid := node_id(n)) not in seen:
            seen.add(nid)
            todo.extend(n.all_input_nodes)
    return seen


def _of_reduction_shape(node: FusionNode, by_id: dict[str, FusionNode]) -> bool:
    """Whether a reduction (or an item of one) of `node`'s element count feeds it through fusible nodes."""
    todo, seen = list(node.inputs), set()
    while todo:
        p = by_id[todo.pop()]
        if p.id in seen:
            continue
        seen.add(p.id)
        reduced = p.kind is Kind.REDUCTION or (
            p.kind is Kind.ITEM and any(by_id[q].kind is Kind.REDUCTION for q in p.inputs))
        if reduced and p.numel and p.numel == node.numel:
            return True
        if p.kind in (Kind.FUSIBLE, Kind.VIEW):
            todo.extend(p.inputs)
    return False
