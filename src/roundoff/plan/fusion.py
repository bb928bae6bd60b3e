"""The fusion model: which nodes a backend computes together in one kernel, and which values it stores.

Numeric meaning (the only reason roundoff models fusion): a value that crosses a kernel boundary is
written to memory in its storage dtype, i.e. rounded (RNE) to it; a value consumed inside the kernel
that computed it is read as computed (fp32 for bf16/fp16/fp8 storage under opmath).

``FusionModel.NONE`` (eager): every op is its own kernel; every value is stored.

``FusionModel.POINTWISE`` (Inductor, and the fusing XLA/nvFuser policies), following what Inductor
does (the FMA issue, docs/architecture.md "Sources": "rematerialize most of the pointwise ops"):

* Kinds of node. *Fusible*: pointwise arithmetic/transcendental, comparison/select, casts, data
  movement/views. *Reduction*. *Extern*: matmul, convolution, attention, normalization kernels
  (when not decomposed), random, other and unmodeled ops: single kernels whose operands are read
  from memory and whose outputs are stored.
* A reduction Inductor unrolls into a pointwise loop (fewer than 8 terms,
  `roundoff.plan.loops.unrolled_terms`) is fusible; with more than one user it is stored when its
  terms load more than 4 values (`roundoff.plan.realize`).
* Stored values: graph inputs; reduction and extern results (a reduction ENDS its kernel: its
  consumers read its stored, rounded result); fusible nodes Inductor realizes (`roundoff.plan.realize`:
  graph outputs, values with no users, feeding an extern op or scattered into a view, reused ones
  that load more than 4 values, any that load more than 12 on C++ or 8 on Triton); a pure
  data-movement node whose operands are all stored is an alias of stored memory (no kernel:
  Inductor's ReinterpretView).
* Kernels: every reduction, extern and realized fusible node roots one kernel, which also computes
  (inlines) every unstored fusible ancestor reachable without crossing a stored value. An unstored
  node inlined into several kernels is recomputed in each (rematerialized), so no consumer ever
  reads it rounded.
* Pointwise kernels that share computation or read each other's stored roots merge into one
  kernel (Inductor's vertical/horizontal fusion) unless that would make a cycle through another
  kernel, or their roots differ in element count (a value of a reduction's shape read by a
  full-width kernel is loaded from memory: another loop nest, or another kernel). Inside a merged kernel a stored root is read as computed (Inductor's store cache).

``FusionModel.POINTWISE_CPP`` (Inductor's C++ backend) adds the CPU branch of Inductor's
realize-on-reuse heuristic (``StorageBox.should_realize_on_reuse``, torch 2.9-2.13): a fusible node
with more than one user, or read by a broadcast (``expand``'s lowering marks it reused by the
broadcast factor), whose computation, its unstored fusible ancestors inlined, calls one of
`HEAVY_OPS` and reads memory (an ``exp`` of an ``arange`` is recomputed in each reader) is stored
("realized"). Its consumers in other kernels read it rounded: a C++ kernel
that also holds them loads it from memory in a later loop nest (measured, torch 2.13: fp16
``e = x.exp(); e / e.sum(-1, keepdim=True)`` stores ``e`` in fp16, so ``inf / inf`` is NaN where
eager's fp16 ``exp`` overflows). Values computed in fp32 (an upcast softmax) are stored in fp32:
no rounding. A reduction whose loop ranges are those of a stored pointwise value it reads computes that
value in its own loop nest and reads it unrounded (`roundoff.plan.loops`: a broadcast operand keeps the
value's loop 2-D, as the row sums' is; a flat loop is a loop nest of its own, loaded rounded). A pointwise
kernel goes into one group of reductions' loop at most; the other reductions load its values, rounded.

``FusionModel.POINTWISE_TRITON`` (Inductor's Triton backend) adds Triton's reduction kernels
(`roundoff.plan.triton_kernels`): a reduction kernel also computes the pointwise kernels that make its
operand or read its result, and the reductions of its shape, and reads their values and they its result
unrounded.

In a training step compiled in two (forward and backward), the backward finds in memory only what the
forward saves for it (`roundoff.plan.realize.in_backward_memory`): a pointwise value the forward stores but
does not save is computed again in the backward's kernels, where its readers read it as computed, or
stored by the backward's own rules. A forward node a backward kernel computes again reads there what that
kernel reads (`roundoff.plan.remat`).

Where the real scheduler's heuristics can choose otherwise (realizing a multi-use pointwise node;
a persistent reduction fused with its pointwise epilogue), `Fusion.notes` says so.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

from roundoff.plan.fusion_nodes import COPY_MARK, FusionNode, Kind, inlined, users_of
from roundoff.plan.loops import reduction_loop_reads
from roundoff.plan.model import FusionGroup
from roundoff.plan.realize import (
    HEAVY_OPS,
    REALIZE_READS,
    WRITTEN_INTO_VIEWS,
    Pinned,
    in_backward_memory,
    stored_values,
)
from roundoff.plan.triton_kernels import fuse_reduction_kernels
from roundoff.policy.model import FusionModel

__all__ = ["Fusion", "FusionNode", "Kind", "fuse", "inlined"]

@dataclass(frozen=True)
class Fusion:
    """Result of the fusion model for one graph."""

    groups: tuple[FusionGroup, ...]
    #: node id -> the kernel that first computes it (None: inputs, constants, aliases)
    home: dict[str, int | None]
    #: kernel id -> the nodes computed in it (rematerialized ones included)
    members: dict[int, frozenset[str]]
    stored: frozenset[str]  # values written to memory (read rounded by other kernels)
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: forward values the backward computes again and stores (`roundoff.plan.realize.stored_by_backward`): read rounded there
    stored_backward: frozenset[str] = frozenset()
    backward: frozenset[str] = frozenset()  # the backward's own nodes
    #: (backward reader, `stored_backward` value) pairs read from memory: the reader is computed (inlined)
    #: in some kernel other than the one that makes and stores the value (`_backward_loads`)
    backward_loads: frozenset[tuple[str, str]] = frozenset()
    #: (kernel, `stored_backward` value) pairs where the kernel loads the value from memory (`_backward_loads`)
    backward_loaded: frozenset[tuple[int, str]] = frozenset()

    def reads_rounded(self, consumer: str, producer: str) -> bool:
        """Whether `consumer` reads `producer` from memory (i.e. rounded to its storage dtype); a value the
        backward stores (`stored_backward`): see `backward_loads`."""
        if producer in self.stored_backward and consumer in self.backward:
            return (consumer, producer) in self.backward_loads
        if producer not in self.stored:
            return False
        group = self.home.get(consumer)
        return group is None or producer not in self.members[group]


def fuse(nodes: Sequence[FusionNode], model: FusionModel, pinned: Pinned | None = None) -> Fusion:
    """Group `nodes` (in topological order) into kernels under `model` (see the module docstring).
    `pinned`: ``(fusion.stored, fusion.stored_backward)`` of the graph `nodes` were split from
    (`roundoff.plan.realize.stored_values`)."""
    if model is FusionModel.NONE:
        return _fuse_none(nodes)
    if model in (FusionModel.POINTWISE, FusionModel.POINTWISE_CPP, FusionModel.POINTWISE_TRITON):
        return _fuse_pointwise(nodes, heavy_reuse=model is FusionModel.POINTWISE_CPP, pinned=pinned,
                               triton=model is FusionModel.POINTWISE_TRITON)
    raise ValueError(
        f"unknown fusion model {model!r}; known: {', '.join(m.value for m in FusionModel)}"
    )


def _fuse_none(nodes: Sequence[FusionNode]) -> Fusion:
    groups: list[FusionGroup] = []
    home: dict[str, int | None] = {}
    for n in nodes:
        if n.kind is Kind.INPUT:
            home[n.id] = None
            continue
        gid = len(groups)
        groups.append(FusionGroup(gid, "single", (n.id,)))
        home[n.id] = gid
    members = {g.id: frozenset(g.node_ids) for g in groups}
    return Fusion(tuple(groups), home, members, frozenset(n.id for n in nodes))


class _Reach:
    """Ancestor and descendant bitmasks, to reject a merge that would make a cycle through another kernel."""

    def __init__(self, nodes: Sequence[FusionNode]) -> None:
        self.index = {n.id: i for i, n in enumerate(nodes)}
        self.anc: list[int] = []
        for n in nodes:
            mask = 0
            for p in n.inputs:
                i = self.index[p]
                mask |= self.anc[i] | (1 << i)
            self.anc.append(mask)
        self.desc = [0] * len(nodes)
        for j in range(len(nodes) - 1, -1, -1):  # (graph order: every user of j is after it, done already)
            for p in nodes[j].inputs:
                self.desc[self.index[p]] |= self.desc[j] | (1 << j)

    def masks(self, ids: set[str] | frozenset[str]) -> tuple[int, int, int]:
        """(members, their ancestors, their descendants) of `ids`, as bitmasks: a union's are the ORs."""
        u = anc = desc = 0
        for name in ids:
            i = self.index[name]
            u |= 1 << i
            anc |= self.anc[i]
            desc |= self.desc[i]
        return u, anc, desc


def convex_masks(u: int, anc: int, desc: int) -> bool:
    """No path leaves the set with these `_Reach.masks` and comes back: no outside node both after and before
    it (walking every outside ancestor instead took most of the 10+ minutes of planning trial 89's unrolled GRU)."""
    return not (anc & desc & ~u)


def _fuse_pointwise(nodes: Sequence[FusionNode], heavy_reuse: bool = False, pinned: Pinned | None = None,
                    triton: bool = False) -> Fusion:
    by_id = {n.id: n for n in nodes}
    users = users_of(nodes)
    stored, alias, by_backward = stored_values(nodes, users, heavy_reuse, pinned)
    in_backward = in_backward_memory(nodes, stored)
    kernels: list[tuple[str, str, set[str]]] = []  # (kind, root, members)
    for n in nodes:
        if n.kind is Kind.INPUT or n.id in alias or n.id not in stored:
            continue
        if n.kind is Kind.ITEM:
            owner = next((k for k in kernels if n.inputs and n.inputs[0] in k[2]), None)
            if owner is not None:
                owner[2].add(n.id)
                continue
        kind = {Kind.REDUCTION: "reduction", Kind.EXTERN: "extern"}.get(n.kind, "pointwise")
        if n.op in WRITTEN_INTO_VIEWS:  # a mutation's kernel: its readers load the buffer, none fuses with it
            kind = "extern"
        kernels.append((kind, n.id, {n.id} | inlined(n, by_id, in_backward if n.backward else stored)))
    reach = _Reach(nodes)
    kernels, merge_notes = _merge_pointwise(kernels, by_id, reach, nodes, cat_slices=heavy_reuse)
    if triton:
        kernels, triton_notes = fuse_reduction_kernels(kernels, by_id, stored,
                                                       lambda n: _loop_numel(n, by_id, cat_slices=False))
        merge_notes.extend(triton_notes)
    in_loop = reduction_loop_reads(kernels, by_id, stored) if heavy_reuse else {}
    for kind, root, members in kernels:
        if root in in_loop:
            members |= in_loop[root]
            merge_notes.append(
                f"the reduction {root} computes {', '.join(sorted(in_loop[root] & stored))} in its own loop and reads "
                "it unrounded: Inductor's C++ backend fuses a stored pointwise value whose loop ranges are the "
                "reduction's (a broadcast or transposed operand keeps its loop from flattening) into that loop; "
                "other kernels read it rounded")
    if by_backward:
        order = {n.id: i for i, n in enumerate(nodes)}
        merge_notes.append(
            "computed again by the backward and stored there (more than one use in the backward, calling "
            f"{'/'.join(sorted(HEAVY_OPS))} on CPU or loading more than {REALIZE_READS} values: Inductor's "
            "realize-on-reuse rule): "
            f"{', '.join(sorted(by_backward, key=order.__getitem__))}; backward kernels other than the one making them "
            "read them rounded, the forward does not")
    fusion = _assemble(nodes, kernels, stored, users, merge_notes, in_loop)
    backward = frozenset(n.id for n in nodes if n.backward)
    loads, loaded = _backward_loads(fusion, by_backward, nodes)
    return dataclasses.replace(fusion, stored_backward=frozenset(by_backward), backward=backward,
                               backward_loads=loads, backward_loaded=loaded)


def _backward_loads(fusion: Fusion, by_backward: set[str],
                    nodes: Sequence[FusionNode]) -> tuple[frozenset[tuple[str, str]], frozenset[tuple[int, str]]]:
    """(backward reader, value) pairs for the values the backward stores where the reader reads it from
    memory, and the (kernel, value) pairs where the kernel loads it. The value is made and stored by the kernel computing it whose first backward node comes
    first in graph order; there its readers read it as computed (the store cache), unless that kernel
    loops over more elements than the value has (it is made in a loop of its own there and loaded), and
    in every other kernel from memory. A reader inlined into both (one value in the emulation) is taken
    as loading it: the rounded value is the one that can turn inf (measured, torch 2.13: trial 53's
    ``exp`` made in one reduction's loop, loaded by the other's where ``0 * inf`` is NaN; a softplus's
    ``log`` made in the backward's pointwise loop and loaded by a parameter gradient's reduction;
    gpt-oss's MoE ``sigmoid`` made in a loop of its 8192 elements and loaded by the 16384-element loop
    writing the interleaved gate/up gradient)."""
    order = {n.id: i for i, n in enumerate(nodes) if n.backward}
    by_id = {n.id: n for n in nodes}
    # a kernel's copy of a forward node (`roundoff.plan.remat`) stands where the forward node does: not
    # where the backward's own order starts
    own = {i: k for i, k in order.items() if (base := i.split(COPY_MARK)[0]) == i or by_id[base].backward}
    home: dict[str, tuple[int, int]] = {}
    for g in fusion.groups:
        members = fusion.members[g.id]
        first = min((own[m] for m in members if m in own), default=None)
        for v in by_backward & members if first is not None else ():
            if v not in home or first < home[v][0]:
                home[v] = (first, g.id)

    def own_loop(g: FusionGroup, v: str) -> bool:  # a pointwise kernel looping over more elements loads it
        return g.kind != "pointwise" or by_id[g.node_ids[-1]].numel in (0, by_id[v].numel)

    loaded = frozenset((g.id, v) for g in fusion.groups for v in by_backward & fusion.members[g.id]
                       if v in home and any(m in order for m in fusion.members[g.id])
                       and (g.id != home[v][1] or not own_loop(g, v)))
    return frozenset(
        (m, v) for g, v in loaded for m in fusion.members[g] if m in order and v in by_id[m].inputs
    ), loaded


def _loop_numel(n: FusionNode, by_id: dict[str, FusionNode], cat_slices: bool) -> int:
    """The element count of the loop a kernel rooted at `n` runs. Inductor's C++ backend lowers ``cat``
    as a ConcatKernel: each operand is computed into its slice of the output, a loop of the operand's
    count (measured, torch 2.13: ``cat([cos(a), sin(a)])`` after a realized ``a`` is one kernel), also
    under a view of it (``stack``: a ``cat`` of its operands, viewed to the stacked shape)."""
    while n.kind is Kind.VIEW and len(n.inputs) == 1 and by_id[n.inputs[0]].numel == n.numel:
        n = by_id[n.inputs[0]]
    counts = {by_id[p].numel for p in n.inputs} if cat_slices and n.op == "cat" and n.inputs else set()
    return counts.pop() if len(counts) == 1 and 0 not in counts else n.numel


class _Holders:
    """Which merged pointwise kernel holds each node: the kernels made holding it, followed through merges."""

    def __init__(self) -> None:
        self.made: dict[str, list[int]] = {}
        self.into: dict[int, int] = {}  # a kernel merged away -> the kernel that took it

    def add(self, kernel: int, members: set[str]) -> None:
        for m in members:
            self.made.setdefault(m, []).append(kernel)

    def moved(self, kernel: int, into: int) -> None:
        self.into[kernel] = into

    def alive(self, kernel: int) -> int:
        last = kernel
        while last in self.into:
            last = self.into[last]
        while kernel != last:  # (path compression)
            self.into[kernel], kernel = last, self.into[kernel]
        return last

    def holding(self, names: set[str]) -> set[int]:
        out: set[int] = set()
        for name in names:
            made = self.made.get(name)
            if made:
                now = {self.alive(k) for k in made}
                if len(now) < len(made):  # (kept short: a node inlined into every step of a loop's chain)
                    self.made[name] = list(now)
                out |= now
        return out


def _merge_pointwise(
    kernels: list[tuple[str, str, set[str]]],
    by_id: dict[str, FusionNode],
    reach: _Reach,
    nodes: Sequence[FusionNode],
    cat_slices: bool = False,
) -> tuple[list[tuple[str, str, set[str]]], list[str]]:
    """Greedy pairwise merge of related pointwise kernels, in graph order, keeping the kernel DAG acyclic
    (`cat_slices`: a ``cat`` root loops over its operands' count, `_loop_numel`).

    Each new pointwise kernel is offered, in the order the kernels were made, every earlier kernel holding
    a node it touches (its members and what they read, grown as it merges); it takes one of the same loop
    count whose union with it stays convex. Only those holders are visited, from an index of which kernels
    hold each node: walking every earlier kernel per kernel made an unrolled BiGRU's plan (thousands of
    kernels, re-planned per split round) take over ten minutes (trial 89)."""
    merged: dict[int, tuple[str, str, set[str]]] = {}  # by sequence number, which is the walk's order
    masks: dict[int, tuple[int, int, int]] = {}  # `_Reach.masks` of each pointwise kernel in `merged`
    holders = _Holders()
    numel: dict[str, int] = {}  # `_loop_numel` by kernel root

    def loop_numel(root: str) -> int:
        if root not in numel:
            numel[root] = _loop_numel(by_id[root], by_id, cat_slices)
        return numel[root]

    for seq, (kind, root, members) in enumerate(kernels):
        if kind != "pointwise":
            merged[seq] = (kind, root, members)
            continue
        current, cur_masks, mine = set(members), reach.masks(members), loop_numel(root)
        touched = current.union(*(by_id[m].inputs for m in current))
        waiting = sorted(k for k in holders.holding(touched) if k in merged)  # a heap of kernels to offer
        offered = set(waiting)
        while waiting:
            at = heapq.heappop(waiting)
            _, other_root, theirs = merged[at]
            if loop_numel(other_root) not in (0, mine):
                continue
            both = tuple(a | b for a, b in zip(cur_masks, masks[at], strict=True))
            if convex_masks(*both):
                current, cur_masks = current | theirs, both
                del merged[at], masks[at]
                holders.moved(at, seq)
                new = theirs.union(*(by_id[m].inputs for m in theirs)) - touched
                touched |= new
                for k in holders.holding(new) - offered:  # (one before `at` was passed over: not offered)
                    if k in merged and k > at:
                        offered.add(k)
                        heapq.heappush(waiting, k)
        merged[seq], masks[seq] = (kind, root, current), cur_masks
        holders.add(seq, members)
    order = {n.id: i for i, n in enumerate(nodes)}
    return sorted(merged.values(), key=lambda k: max(order[m] for m in k[2])), []


def _assemble(
    nodes: Sequence[FusionNode],
    kernels: list[tuple[str, str, set[str]]],
    stored: set[str],
    users: dict[str, list[FusionNode]],
    notes: list[str],
    in_loop: dict[str, frozenset[str]] | None = None,
) -> Fusion:
    """`in_loop`: per reduction root, the values it computes in its own loop beside their home kernel
    (`roundoff.plan.loops.reduction_loop_reads`): no rematerialization to note, and no epilogue of that reduction."""
    order = {n.id: i for i, n in enumerate(nodes)}
    groups = tuple(
        FusionGroup(gid, kind, tuple(sorted(members, key=order.__getitem__)))
        for gid, (kind, _, members) in enumerate(kernels)
    )
    borrowed = {gid: (in_loop or {}).get(root, frozenset()) for gid, (_, root, _) in enumerate(kernels)}
    home: dict[str, int | None] = {n.id: None for n in nodes}
    where: dict[str, list[int]] = {}
    for g in groups:
        for m in g.node_ids:
            if m in borrowed[g.id]:
                continue
            where.setdefault(m, []).append(g.id)
            if home[m] is None:
                home[m] = g.id
    remat = [f"{m} (kernels {', '.join(map(str, gs))})" for m, gs in where.items() if len(gs) > 1]
    if remat:
        notes.append(
            "rematerialized pointwise nodes, recomputed unrounded in every consuming kernel: "
            + "; ".join(remat)
            + ". Inductor's realize heuristics (multi-use nodes, read counts) may store one instead; "
            "its consumers in other kernels would then read it rounded"
        )
    notes.extend(_mixed_reads(nodes, groups, where, stored))
    for g in groups:
        if g.kind != "reduction":
            continue
        epilogue = sorted(
            {
                u.id
                for m in g.node_ids
                if m in stored and m not in borrowed[g.id]
                for u in users[m]
                if u.kind in (Kind.FUSIBLE, Kind.VIEW) and u.id not in g.node_ids
            },
            key=order.__getitem__,
        )
        if epilogue:
            notes.append(
                f"kernel {g.id} (reduction) ends at its stored result; a persistent reduction may fuse "
                f"its pointwise epilogue ({', '.join(epilogue)}) into the same kernel, which would then "
                "read the reduction unrounded"
            )
    members = {g.id: frozenset(g.node_ids) for g in groups}
    return Fusion(groups, home, members, frozenset(stored), tuple(notes))


def _mixed_reads(
    nodes: Sequence[FusionNode],
    groups: tuple[FusionGroup, ...],
    where: dict[str, list[int]],
    stored: set[str],
) -> list[str]:
    """Notes for a recomputed node that reads a stored value computed in some of its kernels only:
    the real kernels then see two different values; the plan keeps the first kernel's read."""
    members = {g.id: set(g.node_ids) for g in groups}
    out: list[str] = []
    for n in nodes:
        gs = where.get(n.id, [])
        if len(gs) < 2:
            continue
        for p in dict.fromkeys(n.inputs):
            inside = [p in members[g] for g in gs]
            if p in stored and any(inside) and not all(inside):
                out.append(
                    f"{n.id} reads {p} unrounded in kernels "
                    f"{', '.join(str(g) for g, i in zip(gs, inside) if i)} but rounded from memory in "
                    f"{', '.join(str(g) for g, i in zip(gs, inside) if not i)}; the plan uses kernel {gs[0]}'s read"
                )
    return out
