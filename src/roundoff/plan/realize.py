"""Which fusible values Inductor stores ("realizes"): what its readers in other kernels read rounded.

Numeric meaning: a value Inductor realizes is written to memory in its storage dtype, rounded (RNE);
one it does not is computed again (inlined, unrounded) in every kernel that reads it. Inductor decides
while it lowers the graph, node by node (torch 2.9-2.13, ``GraphLowering.run_node``):

* graph outputs, values an extern kernel reads, values scattered into a view (`WRITTEN_INTO_VIEWS`), and
  the values a training step's forward saves for its backward;
* a reused value (more than one user, or read broadcast) that loads more than `REALIZE_READS` values
  (``should_realize_on_reuse``), or on the C++ backend calls one of `HEAVY_OPS` and reads memory;
* any value that loads more than `REALIZE_ACC_READS` values (``has_exceeded_max_reads``);
* a reused value whose computation, its unstored ancestors inlined, has more than `REALIZE_OPS` ops
  (``has_large_inner_fn``);
* on the C++ backend, every operand of a ``cat``: Inductor lowers a CPU ``cat`` as a ``ConcatKernel``, each
  operand computed into its slice of the result by its own kernel (a loop of its count), stored, and the
  readers load the slices (measured, torch 2.13: a hand-written RWKV's ``torch.stack`` of its per-step
  outputs, each computed with the step's fp16 ``exp`` unrounded, finite where the plan had them inlined
  into the stack's reader, reading the stored ``exp``, inf: trial 71).

A training step's backward is compiled apart: forward values it computes again are realized there by
the same rules, seeing only its own users (`stored_by_backward`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Container, Sequence

from roundoff.plan.fusion_nodes import FusionNode, Kind, inlined

#: data movement Inductor lowers as a copy into a view of a fresh buffer (a mutation: the buffer is realized),
#: so its result is stored, rounded, before any reader sees it; its source is computed in that copy's kernel
#: (trial 60: a contrastive loss's backward ``diagonal_scatter`` of ``-g / (N * pos)``, stored in fp16 before
#: an add that cancels it, 24x the error the plan predicted with it fused); select_scatter and slice_scatter
#: are lowered pointwise (measured, torch 2.13: ``tests/plan/test_plan_inductor_oracle.py``)
WRITTEN_INTO_VIEWS = frozenset({"diagonal_scatter", "as_strided_scatter"})

#: Inductor's C++ "heavy ops" (``should_realize_on_reuse``): a reused value computing one is stored
HEAVY_OPS = frozenset({"exp", "log", "log10", "log1p", "log2", "sigmoid", "tanh"})
#: Inductor's ``config.realize_reads_threshold``: a reused value loading more values than this is stored
REALIZE_READS = 4
#: Inductor's ``realize_acc_reads_threshold`` (Triton) and ``realize_cpu_acc_reads_threshold`` (C++): a
#: value loading more than this is stored, used once or not (by the C++ backend flag: True for C++)
REALIZE_ACC_READS = {False: 8, True: 12}
#: Inductor's ``realize_opcount_threshold`` default (Triton: 30) and ``realize_cpu_opcount_threshold`` (C++: 50,
#: torch 2.13; measured: a reused chain of 2k + 3 ops is stored from k = 24 on, not at k = 23)
REALIZE_OPS = {False: 30, True: 50}


#: data movement Inductor lowers as a view of its operand's data (a ``BaseView``), not a kernel of its own
VIEWS = frozenset({"view", "reshape", "_unsafe_view", "permute", "transpose", "t", "expand", "unsqueeze", "squeeze",
                   "slice", "select", "alias", "as_strided", "diagonal", "narrow", "view_as", "expand_as"})

Pinned = tuple[frozenset[str], frozenset[str]]  # (stored, stored by the backward) of the user's graph


def stored_values(
    nodes: Sequence[FusionNode], users: dict[str, list[FusionNode]], heavy_reuse: bool = False,
    pinned: Pinned | None = None,
) -> tuple[set[str], set[str], set[str]]:
    """(stored ids, alias ids, forward values the backward stores) in one topological pass; `heavy_reuse`:
    the C++ realize-on-reuse rule, which the backward's nodes apply seeing those forward values stored
    (a product reading a backward-stored ``exp`` calls no ``exp`` of its own). `pinned`: the values the
    rules that count users and loads stored in the graph before `roundoff.plan.remat` split copies off
    it: Inductor decides on the user's graph, whose users the copies divide (trial 62: a recurrence's
    state, stored or not by turns as its copies took its users, never settled). The forward's nodes are
    decided first, then the backward's: a backward node the capture placed among the forward's (a GroupNorm's
    statistics cast for its backward) must not have the backward's copies decided before the forward's later
    values are (trial 77: a bmm after it, not yet stored, made the backward count six loads in its softmax
    scores, store them and read them rounded in the tie mask, where Inductor recomputes them in fp32)."""
    by_id = {n.id: n for n in nodes}
    stored: set[str] = set()
    alias: set[str] = set()
    by_backward: set[str] | None = None
    backward_memory: Container[str] = stored
    for n in _forward_first(nodes, by_id):
        if n.backward and by_backward is None:  # the forward's values are all decided: the backward's copies
            recomputed = stored - in_backward_memory(nodes, stored)
            backward_memory = _Without(stored, recomputed)
            by_backward = stored_by_backward(nodes, users, backward_memory, heavy_reuse) if pinned is None else set(
                pinned[1])
        if n.kind in (Kind.INPUT, Kind.REDUCTION, Kind.EXTERN):
            stored.add(n.id)
        elif n.kind is Kind.ITEM:
            if all(p in stored for p in n.inputs):
                stored.add(n.id)
                if all(by_id[p].kind is Kind.INPUT or p in alias for p in n.inputs):
                    alias.add(n.id)
        else:
            us = users[n.id]
            same_pass = [u for u in us if u.backward == n.backward]  # the users compiled with it
            seen = _Either(backward_memory, by_backward) if n.backward and by_backward else backward_memory if (
                n.backward) else stored
            realized = n.is_output or n.saved or not us or any(u.kind is Kind.EXTERN for u in us) or (
                n.op in WRITTEN_INTO_VIEWS) or (n.id in pinned[0] if pinned is not None else (
                    heavy_reuse and n.kind is Kind.FUSIBLE and (len(same_pass) > 1 or _read_broadcast(n, same_pass, users))
                    and _calls_heavy(n, by_id, seen)) or _realized_on_loads(
                    n, len(same_pass) > 1 or _read_broadcast(n, same_pass, users), by_id, seen, heavy_reuse))
            if heavy_reuse and n.op == "cat" and n.kind is Kind.VIEW:  # C++: a ConcatKernel, an alias of
                for p in n.inputs:  # its operands, each stored into its slice by the kernel computing it
                    if p not in stored and (chain := _viewed(by_id[p], by_id)):
                        stored.update(chain)
                        alias.update(chain[1:])
                    elif by_id[p].kind is not Kind.INPUT:
                        stored.add(p)
            if n.kind is Kind.VIEW and n.inputs and all(p in stored for p in n.inputs):
                stored.add(n.id)
                alias.add(n.id)
            elif realized and (chain := _viewed(n, by_id)):
                stored.update(chain)
                alias.update(chain[1:])
            elif realized:
                stored.add(n.id)
    return stored, alias, by_backward or set()


def _forward_first(nodes: Sequence[FusionNode], by_id: dict[str, FusionNode]) -> Sequence[FusionNode]:
    """`nodes` with the forward's before the backward's, each in graph order, where no forward node reads a
    backward one (else `nodes` as they are: still a topological order)."""
    backward = {n.id for n in nodes if n.backward}
    if not backward or any(p in backward for n in nodes if not n.backward for p in n.inputs):
        return nodes
    return [n for n in nodes if not n.backward] + [n for n in nodes if n.backward]


def _viewed(n: FusionNode, by_id: dict[str, FusionNode]) -> list[str]:
    """[the value `n` views, then the views from it to `n`] where `n` is one of Inductor's views (`VIEWS`) of
    a computed value through views alone, in the same pass; else empty. Storing such a view stores what it
    views: Inductor's ``ExternKernel.realize_input`` (an extern kernel's operand, a graph output) and
    ``realize_hint`` (a reused value one of whose users is a ``mm``) realize a view's data, and the view reads
    that buffer. Every other reader of the value loads it too, rounded (measured, H100, torch 2.11: a Llama's
    residual gradient, viewed for the weight gradient's ``mm``, loaded by the next RMSNorm backward's kernel,
    bench/results/gpu-session30/; and on CPU, `tests/plan/test_plan_inductor_oracle.py`)."""
    chain = [n.id]
    while by_id[chain[-1]].kind is Kind.VIEW:
        view = by_id[chain[-1]]
        if view.op not in VIEWS or len(view.inputs) != 1:
            return []
        chain.append(view.inputs[0])
    base = by_id[chain[-1]]
    if base.kind is not Kind.FUSIBLE or base.backward != n.backward:
        return []
    return chain[::-1]


def _read_broadcast(n: FusionNode, readers: Sequence[FusionNode], users: dict[str, list[FusionNode]]) -> bool:
    """Whether one of `readers` of `n`, through same-sized views, computes more elements than `n` has: a
    broadcast, which Inductor lowers as an ``expand`` that marks `n` reused by that factor (``expand``'s
    lowering calls ``mark_reuse``, torch 2.9-2.13: fp16 ``exp(g) * exp(-g).T`` stores both exps)."""
    if not n.numel:
        return False
    todo, seen = list(readers), set()
    while todo:
        u = todo.pop()
        if u.id in seen or u.backward != n.backward:
            continue
        seen.add(u.id)
        if u.kind in (Kind.FUSIBLE, Kind.VIEW) and u.numel > n.numel:
            return True
        if u.kind is Kind.VIEW and u.numel == n.numel:
            todo.extend(users[u.id])
    return False


def _calls_heavy(n: FusionNode, by_id: dict[str, FusionNode], stored: Container[str]) -> bool:
    """Whether `n`'s computation, with its unstored ancestors inlined, calls one of `HEAVY_OPS` and reads
    memory: one that reads none (an ``exp`` of an ``arange``: index arithmetic only) is computed again in
    each kernel, never stored (measured, torch 2.13: realized on reuse, then inlined into its readers)."""
    inner = inlined(n, by_id, stored)
    return (n.op in HEAVY_OPS or any(by_id[p].op in HEAVY_OPS for p in inner)) and any(
        p in stored and _in_memory(by_id[p]) for m in (n.id, *inner) for p in by_id[m].inputs)


def _loads(n: FusionNode, by_id: dict[str, FusionNode], stored: Container[str]) -> int:
    """How many values `n`'s computation, its unstored fusible ancestors inlined, loads from memory
    (Inductor's ``num_reads``: distinct loads): one per stored value and index, an index being the chain
    of views it is read through (two chunks of one computed value read its operands at two offsets); an
    unrolled reduction's (`FusionNode.terms`) operands once per term where they vary along its reduced
    dims; an embedding two (its indices and its table)."""
    keys: set[tuple[str, tuple[str, ...], int]] = set()
    todo: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [(n.id, (), ())]
    visited: set[tuple[str, tuple[str, ...], tuple[str, ...]]] = set()
    while todo:
        state = todo.pop()
        if state in visited:
            continue
        visited.add(state)
        mid, views, reductions = state
        m = by_id[mid]
        if m.terms:
            reductions = (*reductions, mid)
        if m.kind is Kind.VIEW and mid != n.id:
            views = (*views, mid)
        for p in m.inputs:
            q = by_id[p]
            if p in stored:
                if _in_memory(q):
                    terms = 1
                    for r in reductions:
                        red = by_id[r]
                        if _varies(q, by_id[red.inputs[0]] if red.inputs else None, red.reduced):
                            terms *= red.terms
                    keys.update((p, views, i) for i in range(terms * (2 if q.op == "embedding" else 1)))
            else:
                todo.append((p, views, reductions))
    return len(keys)


def _realized_on_loads(n: FusionNode, reused: bool, by_id: dict[str, FusionNode], stored: Container[str],
                       cpp: bool) -> bool:
    """Inductor's size rules for a pointwise value, after it is lowered (torch 2.9-2.13): reused (more than
    one user, or read broadcast), it is stored when it loads more than `REALIZE_READS` values
    (``should_realize_on_reuse``) or computes more than `REALIZE_OPS` ops (``has_large_inner_fn``); used once
    too, when it loads more than `REALIZE_ACC_READS` (12 on the C++ backend, 8 on Triton:
    ``has_exceeded_max_reads``). Measured, CPU, torch 2.13: an unrolled sum of four terms loads four values
    and is computed again by each reader; of ``a + b``, eight, and it is stored; the backward's softmax
    ``amax`` of four ``bmm / y`` terms is stored, rounded, and its ``eq`` with the unrounded quotients finds
    no maximum (NaN gradients); ``v = v * 1.01 + 0.5`` 24 times, read by a sum and by ``v * sum``, is stored
    (51 ops), 23 times not (49). On the H100 (torch 2.11) a Llama's residual gradient was stored and loaded
    where its load count alone kept it inlined (bench/results/gpu-session29/run4)."""
    if n.kind is not Kind.FUSIBLE:
        return False
    loads = _loads(n, by_id, stored)
    return (reused and (loads > REALIZE_READS or _ops(n, by_id, stored, loads) > REALIZE_OPS[cpp])) or (
        loads > REALIZE_ACC_READS[cpp])


def _ops(n: FusionNode, by_id: dict[str, FusionNode], stored: Container[str], loads: int) -> int:
    """How many ops Inductor's inner function of `n` has, its unstored ancestors inlined (``inner_fn_opcount``,
    common subexpressions counted once): one per computing node (a view computes none), one per load, one
    per distinct Python-number constant."""
    inner = [by_id[i] for i in inlined(n, by_id, stored)]
    computing = [m for m in (n, *inner) if m.kind is not Kind.VIEW]
    return len(computing) + loads + len({c for m in computing for c in m.scalars})


def _varies(value: FusionNode, operand: FusionNode | None, reduced: tuple[int, ...] | None) -> bool:
    """Whether `value`, read broadcast to `operand`'s shape, has more than one element along `reduced`
    (True where a shape is unknown or does not broadcast)."""
    if operand is None or operand.shape is None or value.shape is None or reduced is None:
        return True
    lead = len(operand.shape) - len(value.shape)
    if lead < 0:
        return True
    return any(d - lead >= 0 and value.shape[d - lead] != 1 for d in reduced)


def _in_memory(n: FusionNode) -> bool:
    """Whether a stored value is read from memory: not a constant its readers compute from indices
    (``arange``, ``full``: an input-kind node of no operands that is no graph input or attribute)."""
    return n.kind is not Kind.INPUT or bool(n.inputs) or n.op in ("placeholder", "get_attr")


def in_backward_memory(nodes: Sequence[FusionNode], stored: set[str]) -> set[str]:
    """The stored values a training step's backward finds in memory: its own, and the forward's that are
    saved for it, inputs, outputs, reductions and extern results. A pointwise value the forward stores but
    does not save is computed again by the backward from what is saved (torch.compile's partitioner
    recomputes it there), inlined into its readers or stored by the backward's own rules
    (`stored_by_backward`) (measured, torch 2.13: an fp16 entropy's ``p = exp(x - max) / sum``, stored in
    fp16 by the forward, 0 where it underflows, is computed again in fp32 in the backward's kernel, where
    ``(g * p) / p`` is finite; read from the forward's buffer it was ``0 / 0``, NaN in every gradient
    element: trial 68)."""
    return {n.id for n in nodes if n.id in stored and (n.backward or n.saved or n.is_output or n.kind is not Kind.FUSIBLE)}


class _Without:
    """Membership in one set but not another, without building the difference."""

    __slots__ = ("a", "b")

    def __init__(self, a: Container[str], b: Container[str]) -> None:
        self.a, self.b = a, b

    def __contains__(self, x: object) -> bool:
        return x in self.a and x not in self.b


class _Either:
    """Membership in either of two sets, without building their union (a check per node of the graph)."""

    __slots__ = ("a", "b")

    def __init__(self, a: Container[str], b: Container[str]) -> None:
        self.a, self.b = a, b

    def __contains__(self, x: object) -> bool:
        return x in self.a or x in self.b


def stored_by_backward(nodes: Sequence[FusionNode], users: dict[str, list[FusionNode]],
                        stored: Container[str], heavy_reuse: bool) -> set[str]:
    """Forward values the backward stores under Inductor's realize-on-reuse rule. torch.compile's
    partitioner saves some forward values for the backward and has the backward compute the others
    again from them; in the backward's own graph such a copy is one value with all its backward-side
    users (backward nodes, and forward nodes computed again there), so with more than one, calling a
    `HEAVY_OPS` op (the C++ backend, `heavy_reuse`) or loading many values (`_realized_on_loads`), the
    backward stores it and its backward readers read it rounded, while the forward keeps it in its
    kernel (measured, torch 2.13: an fp16 ``exp(a_i - a_j)`` masked below the diagonal is inf above it
    in the backward's buffer, 0 * inf NaN in the gradients)."""
    by_id = {n.id: n for n in nodes}
    again: set[str] = set()  # forward nodes the backward computes again
    for n in reversed(nodes):
        if n.backward or n.kind not in (Kind.FUSIBLE, Kind.VIEW) or n.saved or n.is_output:
            continue
        if any(u.backward or u.id in again for u in users[n.id]):
            again.add(n.id)
    chosen: set[str] = set()  # in graph order: a value reading one already stored calls no heavy op of its own
    for n in nodes:
        i = n.id
        if i not in again or i in stored or n.kind is not Kind.FUSIBLE:
            continue
        reused = (sum(u.backward or u.id in again for u in users[i]) > 1
                  or _read_broadcast(dataclasses.replace(n, backward=True), [u for u in users[i] if u.backward], users))
        if ((reused and heavy_reuse and _calls_heavy(n, by_id, _Either(stored, chosen)))
                or _realized_on_loads(n, reused, by_id, _Either(stored, chosen), heavy_reuse)):
            chosen.add(i)
    return chosen
