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

from collections.abc import Sequence

import torch
import torch.fx

from roundoff.capture.program import NODE_ID, Program, node_id
from roundoff.plan.fusion import Fusion, FusionNode


def differing_copies(nodes: Sequence[FusionNode], fusion: Fusion) -> dict[int, list[str]]:
    """Per kernel, the recomputed nodes (home elsewhere) whose value there differs from their home's."""
    by_id = {n.id: n for n in nodes}
    out: dict[int, list[str]] = {}
    for g in fusion.groups:
        members = fusion.members[g.id]
        differ: list[str] = []
        for m in g.node_ids:  # graph order, so upstream copies are decided first
            home = fusion.home[m]
            if home == g.id or home is None:
                continue
            theirs = fusion.members[home]
            for p in by_id[m].inputs:
                if p in differ or (p in fusion.stored and (p in members) != (p in theirs)):
                    differ.append(m)
                    break
        if differ:
            out[g.id] = differ
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
    for candidate in (f"{nid.split('@')[0]}@k{kernel}", f"{nid}@k{kernel}"):
        if candidate not in taken:
            taken.add(candidate)
            return candidate
    raise ValueError(f"node {nid!r} has a copy for kernel {kernel} already")
