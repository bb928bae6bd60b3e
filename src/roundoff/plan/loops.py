"""Inductor's loop ranges: the loop nest a kernel runs over a value's dims, from the strides it indexes.

Numeric meaning: Inductor's C++ backend computes a stored pointwise value inside a reduction's own
loop nest, and the reduction then reads it as computed (fp32 for a 16-bit value, unrounded), only
when the two loops have the same ranges; otherwise the value is computed in a loop nest of its own
and the reduction loads it from memory, rounded to its storage format (`roundoff.plan.fusion`).

Inductor simplifies a loop over a shape (``_simplify_loops``, torch 2.9-2.13): dims of size 1 are
dropped, and two adjacent dims merge into one when every index the kernel loads or stores walks
them as one (the outer dim's stride is the inner dim's stride times its size). A reduction merges
its kept dims and its reduced dims apart. So an ``exp`` of a contiguous fp16 matrix runs one flat
loop and the row sums load it rounded, while ``exp(x - c)`` with ``c`` a column (stride 0 along the
rows' elements) keeps the row loop and its row sums read the ``exp`` unrounded (measured, CPU,
torch 2.13: ``tests/plan/test_plan_inductor_oracle.py``). `layout` and `reduced_dims` read the sizes,
strides and reduced dims this needs from a traced node.

Inductor also unrolls a reduction of fewer than `UNROLL_BELOW` elements into a pointwise loop
(``Reduction.create``, torch 2.9-2.13): the terms are added in order, in fp32 for 16-bit operands, and the
sum is inlined into its readers like any pointwise value, unrounded (`unrolled_reduction`).
"""

from __future__ import annotations

import itertools
from collections.abc import Container, Iterable, Sequence

import torch
import torch.fx

from roundoff.plan.fusion_nodes import FusionNode, Kind, inlined, view_bases

#: an index's strides over a loop's dims (0 along a dim it is broadcast over)
Strides = tuple[int, ...]

#: Inductor's ``config.unroll_reductions_threshold``: a reduction of fewer elements is a pointwise loop
UNROLL_BELOW = 8
#: the reductions ``Reduction.create`` lowers (``mean`` as a sum); Welford's (var, std) are never unrolled
UNROLLED_OPS = frozenset({"sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "any", "all"})


def broadcast_strides(shape: Sequence[int], strides: Sequence[int], loop: Sequence[int]) -> Strides | None:
    """The strides over `loop`'s dims of a value of `shape` and `strides` read broadcast to `loop`
    (dims aligned from the right, as PyTorch broadcasts); None when it does not broadcast to it."""
    if len(shape) > len(loop) or len(strides) != len(shape):
        return None
    lead = len(loop) - len(shape)
    out = [0] * lead
    for size, stride, want in zip(shape, strides, loop[lead:]):
        if size == want:
            out.append(stride if size != 1 else 0)
        elif size == 1:
            out.append(0)
        else:
            return None
    return tuple(out)


def merged_boundaries(loop: Sequence[int], dims: Sequence[int], indices: Sequence[Strides]) -> tuple[bool, ...]:
    """For each pair of adjacent dims of `dims` (a subset of `loop`'s, in order; size-1 dims left out),
    whether Inductor merges them into one loop: every index walks them as one."""
    kept = [d for d in dims if loop[d] != 1]
    return tuple(
        all(s[outer] == s[inner] * loop[inner] for s in indices)
        for outer, inner in itertools.pairwise(kept)
    )


def same_loop_nest(
    loop: Sequence[int],
    reduced: Sequence[int],
    pointwise_indices: Sequence[Strides],
    reduction_indices: Sequence[Strides],
) -> bool:
    """Whether a pointwise kernel over `loop` (indexing memory by `pointwise_indices`, its store's
    included) runs the same simplified loop ranges as a reduction over `reduced` dims of `loop`
    (indexing by `reduction_indices`): the reduced dims trail the kept ones, and the pointwise loop
    merges exactly the dims the reduction's kept and reduced ranges merge, and not across them."""
    reduced = sorted(set(reduced))
    kept = [d for d in range(len(loop)) if d not in reduced]
    if reduced != list(range(len(kept), len(loop))) or all(loop[d] == 1 for d in reduced):
        return False
    pointwise = merged_boundaries(loop, range(len(loop)), pointwise_indices)
    reduction = merged_boundaries(loop, kept, reduction_indices)
    if any(loop[d] != 1 for d in kept):
        reduction += (False,)  # the kept ranges and the reduced ones are two loops
    return pointwise == reduction + merged_boundaries(loop, reduced, reduction_indices)


def layout(node: torch.fx.Node) -> dict[str, tuple[int, ...] | None]:
    """The fusion model's `shape` and `strides` of `node`, from its traced value; None where symbolic or
    unknown."""
    val = node.meta.get("val")
    try:
        shape = tuple(int(d) for d in val.shape) if isinstance(val, torch.Tensor) else None
        strides = tuple(int(d) for d in val.stride()) if shape is not None and val.layout is torch.strided else None
    except (TypeError, RuntimeError):  # symbolic sizes
        shape = strides = None
    return {"shape": shape, "strides": strides}


def reduced_dims(node: torch.fx.Node) -> tuple[int, ...] | None:
    """The dims of its first operand that a reduction with a ``dim`` argument (or none: all of them)
    reduces, normalized and sorted; None where unknown."""
    schema = getattr(node.target, "_schema", None)
    operand = node.args[0] if node.args else None
    val = operand.meta.get("val") if isinstance(operand, torch.fx.Node) else None
    if schema is None or not isinstance(val, torch.Tensor) or not schema.returns:
        return None
    names = [a.name for a in schema.arguments]
    rank = val.dim()
    if "dim" not in names:
        dims: object = None
    else:
        i = names.index("dim")
        dims = node.args[i] if len(node.args) > i else node.kwargs.get("dim", schema.arguments[i].default_value)
    if dims is None or dims == []:
        return tuple(range(rank))
    dims = [dims] if isinstance(dims, int) else dims
    if not isinstance(dims, (list, tuple)) or not all(isinstance(d, int) and -max(rank, 1) <= d < max(rank, 1) for d in dims):
        return None
    return tuple(sorted({d % max(rank, 1) for d in dims}))


def unrolled_terms(node: torch.fx.Node, op: str, cpp: bool) -> int:
    """How many terms Inductor adds in a pointwise loop for reduction `node` (base op name `op`); 0 where it
    runs a reduction kernel. It unrolls a reduction of one element, or of fewer than `UNROLL_BELOW` into a
    result of more than one element (the C++ backend, `cpp`) or of any size (Triton). The sum is then
    computed where it is read, in fp32, and reaches its readers unrounded (measured, CPU, torch 2.13: an
    fp16 ``x.sum(-1) * 3`` of four terms is compiled as fp32 sums rounded once, of eight as sums stored in
    fp16: ``tests/plan/test_plan_inductor_oracle.py``)."""
    dims = reduced_dims(node)
    operand = node.args[0] if node.args else None
    val = operand.meta.get("val") if isinstance(operand, torch.fx.Node) else None
    out = node.meta.get("val")
    if op not in UNROLLED_OPS or dims is None or not isinstance(val, torch.Tensor) or not isinstance(out, torch.Tensor):
        return 0
    try:
        terms = 1
        for d in dims:
            terms *= int(val.shape[d]) if val.dim() else 1
        results = int(out.numel())
    except (TypeError, RuntimeError):  # symbolic sizes
        return 0
    return terms if terms == 1 or (0 < terms < UNROLL_BELOW and (results != 1 or not cpp)) else 0


def reduction_loop_reads(
    kernels: list[tuple[str, str, set[str]]], by_id: dict[str, FusionNode], stored: Container[str]
) -> dict[str, frozenset[str]]:
    """Per reduction root, the stored pointwise values (with the unstored nodes computing them) that
    Inductor's C++ backend computes in the reduction's own loop nest, so that the reduction reads them
    as computed: each is read element for element (at its own shape, not through a view) by the
    reduction or the operands inlined into it, and runs the same loop ranges (`same_loop_nest`).
    Measured, torch 2.13: a Performer's fp16 ``exp(x @ W - |x|^2 / 2)``, stored for a matmul, read
    unrounded by the row sums of ``mv``; a flat ``exp(x)`` read rounded by the same sums."""
    claims: dict[str, dict[str, set[str]]] = {}  # reduction root -> stored value -> the nodes computing it
    reads: dict[str, tuple[tuple[int, ...], tuple[int, ...], set[str]]] = {}  # root -> (loop, reduced, stored reads)
    # a value a stored view reads is in memory in Inductor (the view aliases its buffer), though the plan
    # recomputes it where it is read directly: a load of the value's kernel, not computed in it (Electra's
    # LayerNorm output, viewed for the next matmul and added to its result, keeps the add's loop flat)
    in_memory = set(stored) | {p for n in by_id.values() if n.kind is Kind.VIEW and n.id in stored
                               for p in n.inputs if by_id[p].kind is Kind.FUSIBLE}
    for kind, root, members in kernels:
        r = by_id[root]
        loop = by_id[r.inputs[0]].shape if kind == "reduction" and r.reduced is not None and r.inputs else None
        reduction_indices = _indices(members, members, by_id, loop) if loop else None
        if reduction_indices is None:
            continue
        readers: dict[str, list[FusionNode]] = {}
        viewed: set[str] = set()  # values also read through a view: at another index, so never fused
        for m in members:
            for p in by_id[m].inputs:
                if p not in members and p in stored:
                    readers.setdefault(p, []).append(by_id[m])
                    viewed |= view_bases(by_id[p], by_id)
        reads[root] = (loop, tuple(r.reduced or ()), set(readers))
        for p, reading in readers.items():
            value = by_id[p]
            if (value.kind is not Kind.FUSIBLE or value.backward != r.backward or value.shape != loop or p in viewed
                    or value.strides is None or any(m is not r and m.shape != loop for m in reading)):
                continue
            computed = {p} | inlined(value, by_id, in_memory)
            indices = _indices(computed, computed, by_id, loop)
            if indices is not None and same_loop_nest(loop, r.reduced or (), [value.strides, *indices],
                                                      reduction_indices):
                claims.setdefault(root, {})[p] = computed
    _one_loop_nest_each(claims, reads, kernels, by_id)
    return {root: frozenset().union(*values.values()) for root, values in claims.items() if values}


def _one_loop_nest_each(claims: dict[str, dict[str, set[str]]],
                        reads: dict[str, tuple[tuple[int, ...], tuple[int, ...], set[str]]],
                        kernels: list[tuple[str, str, set[str]]], by_id: dict[str, FusionNode]) -> None:
    """Drop from `claims` what Inductor cannot fuse: a pointwise kernel is one scheduler node, computed in
    one loop nest, and once fused with a reduction's loop it holds a reduction, which no fusion takes as a
    producer (``CppScheduling.can_fuse_vertical``, torch 2.9-2.13). So the stored values of one pointwise
    kernel are computed in the loop of at most one group of reductions (reductions over the same loop ranges
    sharing a read, neither computed from the other: fused side by side); every other reduction loads them,
    rounded (an entropy's ``sum(p * log p)`` after the softmax's ``sum(exp)``: trial 67). The group kept shares
    the most bytes with the kernel, then comes first in graph order. Measured, CPU, torch 2.13: a recurrent
    linear attention's normalizer, stored every fourth step, is computed with the row sums of steps 4-7 and
    loaded in fp16, overflowed, by those of steps 12-15 (trial 62; trial 64's batched one, where the group
    nearest the kernel's middle, steps 8-11, was the plan's choice before and 143 elements differed)."""
    if sum(bool(c) for c in claims.values()) < 2:  # one claimant at most: nothing to choose between
        return
    parent = {root: root for root in reads}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    pos = {i: k for k, i in enumerate(by_id)}
    by_value: dict[tuple[tuple[int, ...], tuple[int, ...], str], str] = {}
    for root, (loop, reduced, values) in reads.items():
        for v in values:
            first = by_value.setdefault((loop, reduced, v), root)
            if first != root and not _reaches(first, root, by_id, pos):  # one reading the other's result is a
                parent[find(root)] = find(first)  # kernel after it, not beside it (trial 67: an entropy's sum)
    in_claims = set().union(*(c.keys() for c in claims.values()))
    for kind, _, members in kernels:
        values = members & in_claims if kind == "pointwise" else set()
        groups: dict[str, set[str]] = {}
        for root, claimed in claims.items():
            if values & claimed.keys():
                groups.setdefault(find(root), set()).add(root)
        if len(groups) < 2:
            continue
        kept = max(groups.values(), key=lambda roots, values=values: (
            sum(by_id[v].numel for v in set().union(*(values & claims[r].keys() for r in roots))),  # bytes shared
            -min(pos[r] for r in roots)))  # first in graph order
        for roots in groups.values():
            if roots is not kept:
                for r in roots:
                    for v in values:
                        claims[r].pop(v, None)


def _reaches(source: str, target: str, by_id: dict[str, FusionNode], pos: dict[str, int]) -> bool:
    """Whether `target` is computed from `source` (graph order is topological: nodes before `source` are
    not searched)."""
    low, stack, seen = pos[source], [target], {target}
    while stack:
        for p in by_id[stack.pop()].inputs:
            if p == source:
                return True
            if p not in seen and pos[p] > low:
                seen.add(p)
                stack.append(p)
    return False


def _indices(ids: Iterable[str], inside: Container[str], by_id: dict[str, FusionNode],
             loop: tuple[int, ...]) -> list[Strides] | None:
    """The strides over `loop` of every value the nodes `ids` read from outside `inside`, each read
    broadcast to `loop`; None where a node re-indexes (a view of a computed value) or a shape is unknown."""
    out: list[Strides] = []
    for i in ids:
        n = by_id[i]
        if n.kind is Kind.VIEW or (n.kind is not Kind.REDUCTION and (
                n.shape is None or broadcast_strides(n.shape, (0,) * len(n.shape), loop) is None)):
            return None
        for p in n.inputs:
            if p in inside:
                continue
            u = by_id[p]
            index = broadcast_strides(u.shape, u.strides, loop) if u.shape is not None and u.strides is not None else None
            if index is None:
                return None
            out.append(index)
    return out
