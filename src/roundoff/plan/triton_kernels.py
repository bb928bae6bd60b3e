"""Inductor's Triton reduction kernels: the pointwise kernels and reductions fused with a reduction.

Numeric meaning: inside one kernel a value is read as computed (fp32 for a 16-bit value, unrounded:
Inductor's store cache hands a load of a buffer the kernel has stored, or a reduction result it has
stored, the value it stored from), so every value a reduction kernel fuses is read unrounded there and
rounded only by the readers in other kernels (`roundoff.plan.fusion`).

Triton's scheduler (``SIMDScheduling.can_fuse``, torch 2.11-2.13) gives a reduction kernel two counts, n
(its result's elements) and r (the elements reduced into each), and fuses into it:

* a pointwise kernel of n*r elements that computes a value the reduction reads (a prologue): stored for
  another reader (a matmul, the graph's output) and computed again in the reduction's kernel, flat loop,
  transposed or broadcast operand alike (C++ needs matching loop ranges: `roundoff.plan.loops`);
* a pointwise kernel of n*r elements that reads its result (a full-size epilogue: softmax's
  ``exp(x - max)``), or of n elements (an epilogue of the reduced shape: ``x.sum(-1) * 3``);
* another reduction of the same n and r that reads its result or a value it reads (a variance's sum of
  squares after its mean; a ``sum`` and an ``amax`` of one operand).

A reduction of few results over many terms is split into two kernels (`split`): the first computes its
prologues, the second its epilogues of the reduced shape; a full-size epilogue is a kernel of its own.

A fusion follows a read the scheduler can fuse (``Scheduler.can_fuse_vertical``): the reader loads the
value at the index it was stored at, element for element, or through a reshaping view of it; a value
read through a slice also keeps the two apart (both reads load it, rounded). Kernels of a training
step's forward and backward are not fused together. Measured, H200, torch 2.11 (`bench/gpu/`): 24 of
the 25 patterns of ``bench/reduction_loop_reads.py`` read the stored fp16 value unrounded, all but the
slice.
"""

from __future__ import annotations

from collections.abc import Callable, Container

from roundoff.plan.fusion_nodes import FusionNode, Kind, view_bases

Kernel = tuple[str, str, set[str]]  # (kind, root id, members)

#: data movement that keeps every element at its flat index (a read through it is a read at the index stored)
RESHAPES = frozenset({"view", "reshape", "_unsafe_view", "unsqueeze", "squeeze", "flatten", "alias", "clone"})


def fuse_reduction_kernels(
    kernels: list[Kernel], by_id: dict[str, FusionNode], stored: Container[str],
    loop_numel: Callable[[FusionNode], int],
) -> tuple[list[Kernel], list[str]]:
    """`kernels` (pointwise ones already merged) with Triton's reduction fusions applied, reductions in graph
    order, until none applies; none where one kernel reads the other's values through a third (a cycle). A
    reshaping view of stored memory read through a fusion is computed in the kernel too (a load of the
    value it views, from the store cache). Also a note per fusion. `loop_numel`: a pointwise kernel
    root's loop element count."""
    kernels = [(kind, root, set(members)) for kind, root, members in kernels]
    notes: list[str] = []
    loads = [_loads(members, by_id) for _, _, members in kernels]
    maker: dict[str, int] = {}  # stored value -> the kernel computing it
    loaders: dict[str, set[int]] = {}  # value -> the kernels loading it
    for k, (_, _, members) in enumerate(kernels):
        maker.update((m, k) for m in members if m in stored)
        for p in loads[k]:
            loaders.setdefault(p, set()).add(k)
    after = [{maker[p] for p in loads[k] if p in maker} - {k} for k in range(len(kernels))]  # kernel -> those it reads
    for in_order in (True, False):  # fusions whose reads match the stored index first, as the scheduler scores
        # them: with `in_order`, a prologue only where the reduction reads it in the order it was stored
        changed = True
        while changed:
            changed = False
            for i, (kind, root, members) in enumerate(kernels):
                counts = _counts(by_id[root], by_id) if kind == "reduction" and members else None
                tried: set[int] = set()
                while counts is not None:
                    near = {maker[p] for p in loads[i] if p in maker}
                    near.update(k for v in members | loads[i] for k in loaders.get(v, ()))
                    near -= tried | {i}
                    j = next((j for j in sorted(near) if kernels[j][2]), None)
                    if j is None:
                        break
                    tried.add(j)
                    other_kind, other_root, theirs = kernels[j]
                    views = _fusible(kind, root, members, other_kind, other_root, theirs, counts, by_id, stored, loop_numel)
                    if in_order and views is not None and other_kind == "pointwise" and not _in_order(by_id[root], by_id):
                        continue  # a prologue read across its stored order: fused after every fusion that matches
                    if views is None or _through_another(i, j, after) or _through_another(j, i, after):
                        continue
                    _merge(i, j, views, kernels, loads, maker, loaders, after, stored)
                    notes.append(f"the reduction {root} computes {other_root}'s kernel ({other_kind}) in its own: "
                                 "Inductor's Triton scheduler fuses the two, and inside the kernel each reads the "
                                 "other's values unrounded")
                    changed = True
                    tried.clear()
    order = {i: k for k, i in enumerate(by_id)}
    out = [k for k in kernels if k[2]]
    out.sort(key=lambda k: max(order[m] for m in k[2]))
    return out, notes


def _loads(members: set[str], by_id: dict[str, FusionNode]) -> set[str]:
    """What a kernel's members read from outside it, views of stored memory followed to what they view."""
    out: set[str] = set()
    for m in members:
        for p in by_id[m].inputs:
            if p not in members:
                out.add(p)
                out.update(view_bases(by_id[p], by_id))
    return out


def _merge(i: int, j: int, views: set[str], kernels: list[Kernel], loads: list[set[str]], maker: dict[str, int],
           loaders: dict[str, set[int]], after: list[set[int]], stored: Container[str]) -> None:
    """Kernel `j` (and the `views` its fusion reads through) into kernel `i`, the indexes kept up to date."""
    members = kernels[i][2]
    members |= kernels[j][2] | views
    kernels[j][2].clear()
    for v in members:
        if v in stored:
            maker[v] = i
    for p in loads[j]:
        loaders[p].discard(j)
    union = (loads[i] | loads[j]) - members
    for p in loads[i] - union:
        loaders[p].discard(i)
    for p in union:
        loaders.setdefault(p, set()).add(i)
    loads[i], loads[j] = union, set()
    after[i] = {maker[p] for p in union if p in maker} - {i}
    after[j] = set()
    for k, reads in enumerate(after):
        if j in reads:
            reads.discard(j)
            if k != i:
                reads.add(i)


def _through_another(i: int, j: int, after: list[set[int]]) -> bool:
    """Whether kernel `i` reads kernel `j`'s values through a third kernel: fusing the two makes a cycle."""
    todo = [k for k in after[i] if k != j]
    seen = set(todo)
    while todo:
        k = todo.pop()
        if j in after[k]:
            return True
        for q in after[k] - seen:
            seen.add(q)
            todo.append(q)
    return False


#: an H100's or H200's streaming multiprocessors (``DeviceProperties.multi_processor_count``): Inductor splits a
#: reduction of few results into two kernels to fill them (`split`)
SMS = 132
#: ``reduction_split_factor``'s inner reductions of at most this many terms are not split (compute capability 9)
INNER_NO_SPLIT = 8192


def split(reduction: FusionNode, by_id: dict[str, FusionNode]) -> bool:
    """Whether Inductor computes `reduction` in two kernels (``Reduction.num_splits``, torch 2.11-2.13, on
    an H100/H200): partial reductions of the operand, then a reduction of the partials. It does when the
    result has fewer than ``SMS * 64`` elements and each sums more than 32, and: over contiguous (inner)
    dims, fewer than ``2 * SMS`` results of more than `INNER_NO_SPLIT` terms each; over strided (outer)
    dims, more partials than one (``outer_reduction_splits``). A split reduction's first kernel still
    computes its operand's pointwise kernels, its second those of the result's shape; a pointwise kernel of
    the operand's shape that reads the result is a kernel of its own, which loads it (measured, H100, torch
    2.11: fp16 ``x - x.sum(-1, keepdim=True)`` over 16384 columns, ``bench/results/gpu-session28/``)."""
    counts = _counts(reduction, by_id)
    if counts is None:
        return False
    n, r = counts[0], counts[1] // counts[0]
    if r <= 32 or n >= SMS * 64:
        return False
    if _inner(reduction, by_id):
        return n < 2 * SMS and r > INNER_NO_SPLIT
    threads = SMS * 2048
    if r * n < 32 * threads:
        size = 32
    elif r * n < 512 * threads:
        blocks = -(-(threads // 256) // -(-n // 128))
        size = max(-(-r // (4 * blocks)), 32)
    else:
        size = 512
    return -(-r // (4 * size)) > 1


def _inner(reduction: FusionNode, by_id: dict[str, FusionNode]) -> bool:
    """Whether a reduction runs over its operand's contiguous elements (a reduced dim of stride 1)."""
    operand = by_id[reduction.inputs[0]]
    if reduction.reduced is None or operand.shape is None or operand.strides is None:
        return True
    return any(operand.strides[d] == 1 and operand.shape[d] > 1 for d in reduction.reduced if d < len(operand.shape))


def _in_order(reduction: FusionNode, by_id: dict[str, FusionNode]) -> bool:
    """Whether a reduction reads its operand in the order it is stored: a row-major operand reduced over its
    last dims, so the kernel's index (result element, then term) is the flat index. Inductor's scheduler scores
    a fusion by the bytes whose reads match the index they were written at (``score_fusion_memory``): a
    pointwise kernel two reductions read is fused into the one that reads it in order, and the other loads
    it, rounded (measured, H100, torch 2.11: ``v.sum(0)`` and ``v.sum(1)`` of a stored bf16 ``v``,
    ``bench/results/gpu-session30/``). True where the layout is unknown."""
    operand = by_id[reduction.inputs[0]] if reduction.inputs else None
    if operand is None or reduction.reduced is None or operand.shape is None or operand.strides is None:
        return True
    dims = [d for d, size in enumerate(operand.shape) if size > 1]
    reduced = [d for d in dims if d in reduction.reduced or d - len(operand.shape) in reduction.reduced]
    if dims[len(dims) - len(reduced):] != reduced:
        return False
    expected = 1
    for d in reversed(dims):
        if operand.strides[d] != expected:
            return False
        expected *= operand.shape[d]
    return True


def _counts(reduction: FusionNode, by_id: dict[str, FusionNode]) -> tuple[int, int] | None:
    """(n, n*r) of a reduction: its result's element count and its operand's; None where unknown."""
    operand = by_id[reduction.inputs[0]] if reduction.inputs else None
    if operand is None or not reduction.numel or not operand.numel or operand.numel % reduction.numel:
        return None
    return reduction.numel, operand.numel


def _fusible(kind: str, root: str, members: set[str], other_kind: str, other_root: str, theirs: set[str],
             counts: tuple[int, int], by_id: dict[str, FusionNode], stored: Container[str],
             loop_numel: Callable[[FusionNode], int]) -> set[str] | None:
    """The views of stored memory the fused kernel computes, where Triton fuses the kernel `theirs` (rooted
    at `other_root`) with the reduction kernel `members` (rooted at `root`, of `counts`); None where not."""
    if by_id[other_root].backward != by_id[root].backward or other_kind == "extern":
        return None
    two_kernels = split(by_id[root], by_id)
    if other_kind == "reduction" and (two_kernels or split(by_id[other_root], by_id)):
        return None  # a split reduction's kernels hold none of another reduction's reads of its result
    if other_kind == "reduction":
        if _counts(by_id[other_root], by_id) != counts:
            return None
        views = _reads(theirs, members, by_id, stored) or _reads(members, theirs, by_id, stored)
        return views if views is not None or _shared_reads(members, theirs, by_id, stored) else None
    numel = loop_numel(by_id[other_root])
    if numel == counts[1] and (views := _reads(members, theirs, by_id, stored, element_wise=True)) is not None:
        return views  # a prologue
    if numel == counts[1] and two_kernels:
        return None  # the result's readers of the operand's shape: a kernel after both
    return _reads(theirs, members, by_id, stored) if numel in counts else None  # an epilogue


def _reads(readers: set[str], makers: set[str], by_id: dict[str, FusionNode], stored: Container[str],
           element_wise: bool = False) -> set[str] | None:
    """None where no node of `readers` reads a stored value computed in `makers`, else the views of stored
    memory it reads them through (empty: read directly). With `element_wise`, None too where one is read
    through a view that moves elements (a slice, a transpose): the scheduler cannot fuse that read."""
    found, views = False, set[str]()
    for m in readers:
        for p in by_id[m].inputs:
            if p in readers:
                continue
            if p in makers and p in stored:
                found = True
                continue
            chain = [p, *view_bases(by_id[p], by_id)] if by_id[p].kind is Kind.VIEW else []
            if any(v in makers and v in stored for v in chain):
                if element_wise and any(by_id[v].op not in RESHAPES for v in chain if by_id[v].kind is Kind.VIEW):
                    return None
                found = True
                views.update(v for v in chain if by_id[v].kind is Kind.VIEW and v not in makers)
    return views if found else None


def _shared_reads(a: set[str], b: set[str], by_id: dict[str, FusionNode], stored: Container[str]) -> bool:
    """Whether the two kernels load a stored value in common (horizontal fusion saves that load)."""
    def loads(ids: set[str]) -> set[str]:
        return {p for m in ids for p in by_id[m].inputs if p not in ids and p in stored}
    return bool(loads(a) & loads(b))
