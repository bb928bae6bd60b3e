"""Split rematerialized nodes whose value differs between the kernels that recompute them.

The value model gives every node one value. A pointwise node inlined into several kernels has one
value only if every kernel computes it from the same reads. It does not when one of its inputs is a
stored value that some of those kernels compute themselves (read unrounded: the store cache of a
fused kernel) while others load it from memory (rounded). Real Inductor then really computes two
different values (measured: ``tests/plan/test_plan_inductor_oracle.py``). This module rewrites the
graph so each such kernel gets its own copy of the node, with id ``"<id>@k<kernel>"`` (a copy's copy, made
by a later round of splitting, is named after the node too, ``n7@k4``, where that id is free); the copy
computes the same op on that kernel's reads, so the one-value-per-node model holds again.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import torch
import torch.fx

from roundoff.capture.program import NODE_ID, Program, node_id
from roundoff.plan.fusion import Fusion, FusionNode
from roundoff.plan.fusion_nodes import COPY_MARK


def differing_copies(nodes: Sequence[FusionNode], fusion: Fusion) -> dict[int, list[str]]:
    """Per kernel, the recomputed nodes (home elsewhere) whose value there differs from their home's."""
    by_id = {n.id: n for n in nodes}
    out: dict[int, list[str]] = {}

    backward_kernels = {g.id for g in fusion.groups if fusion.members[g.id] & fusion.backward}

    def loads(kernel: int, m: str, p: str) -> bool:  # whether `kernel`'s copy of `m` reads `p` from memory
        if p in fusion.stored_backward and not by_id[m].backward and kernel in backward_kernels:
            return (kernel, p) in fusion.backward_loaded  # a forward node the backward computes again
        return p in fusion.stored and p not in fusion.members[kernel]

    for g in fusion.groups:
        differ: list[str] = []
        computed = _computed(g.node_ids, g.id, by_id, fusion)
        for m in g.node_ids:  # graph order, so upstream copies are decided first
            home = fusion.home[m]
            if home == g.id or home is None or m not in computed:
                continue
            for p in by_id[m].inputs:
                if p in differ or loads(g.id, m, p) != loads(home, m, p):
                    differ.append(m)
                    break
        if differ:
            out[g.id] = differ
    return out


def _computed(ids: Sequence[str], kernel: int, by_id: dict[str, FusionNode], fusion: Fusion) -> set[str]:
    """The members of `kernel` (`ids`, in graph order) it computes: not a value the backward stores that
    this kernel loads (`Fusion.backward_loaded`), nor a node that only such a value reads."""
    members = set(ids)
    readers: dict[str, set[str]] = {}
    for m in ids:
        for p in by_id[m].inputs:
            readers.setdefault(p, set()).add(m)
    out: set[str] = set()
    for m in reversed(ids):
        if (kernel, m) in fusion.backward_loaded:
            continue
        inside = readers.get(m, set()) & members
        if not inside or m in fusion.stored or inside & out:
            out.add(m)
    return out


def split(
    program: Program, fusion: Fusion, copies: dict[int, list[str]]
) -> tuple[Program, dict[str, str]]:
    """A new program where kernel `k`'s copies of `copies[k]` are separate nodes read by that kernel."""
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    clone: dict[int, dict[torch.fx.Node, torch.fx.Node]] = {k: {} for k in copies}
    wanted = {(k, m) for k, ms in copies.items() for m in ms}
    made: dict[str, str] = {}
    taken = {node_id(n) for n in program.graph.nodes if n.op != "output"}
    for n in program.graph.nodes:
        if n.op == "output":
            env[n] = graph.node_copy(n, lambda a: env[a])
            continue
        nid = node_id(n)
        home = fusion.home.get(nid)
        table = clone.get(home, {}) if home is not None else {}
        env[n] = graph.node_copy(n, lambda a, t=table: t.get(a, env[a]))
        for k in copies:
            if (k, nid) in wanted:
                c = graph.node_copy(n, lambda a, t=clone[k]: t.get(a, env[a]))
                c.meta = dict(n.meta)
                c.meta[NODE_ID] = _copy_id(nid, k, taken)
                clone[k][n] = c
                made[c.meta[NODE_ID]] = nid
    gm = torch.fx.GraphModule(program.graph_module, graph)
    return program.rewritten(gm), made


def _copy_id(nid: str, kernel: int, taken: set[str]) -> str:
    """A new id for kernel `kernel`'s copy of node `nid`, added to `taken`: ``<node>@k<kernel>`` after the
    captured (or decomposed) node, not after a copy (trial 64: ``n130@k37@k28@k37@k30``), else nested."""
    base = nid.split(COPY_MARK)[0]
    candidates = itertools.chain((f"{base}{COPY_MARK}k{kernel}", f"{nid}{COPY_MARK}k{kernel}"),
                                 (f"{base}{COPY_MARK}k{kernel}.{i}" for i in itertools.count(2)))  # (another round's)
    candidate = next(c for c in candidates if c not in taken)
    taken.add(candidate)
    return candidate
