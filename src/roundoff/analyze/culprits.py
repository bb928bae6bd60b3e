"""Findings ranked by cause: which nodes of a checked run `check` names first (`rank_culprits`).

Causes first, on the path to a failing output: nodes whose own value turns NaN/inf where fp64 is
finite (after the producer of a zero they divide by), then nodes whose own error is beyond
`EXCESS_LIMIT` times their format's rounding, largest first (see `rank_culprits`).
"""

from __future__ import annotations

from dataclasses import replace

import torch

from roundoff.analyze.explain import path_cause
from roundoff.analyze.result import NodeReport, OutputVerdict
from roundoff.analyze.verdict import EXCESS_LIMIT, OVERFLOW_HAZARDS, Verdict
from roundoff.capture.program import NODE_ID, Program

def overflowing(reports: tuple[NodeReport, ...], hazards: tuple) -> set[str]:
    """Nodes that overflow their format where fp64 is finite: inf there, or an overflow hazard."""
    over = {h.node_id for h in hazards if h.kind in OVERFLOW_HAZARDS}
    return over | {r.node_id for r in reports if r.vs_oracle.inf > r.vs_oracle.ref_inf}


def ancestors(program: Program, node_ids: set[str]) -> set[str]:
    """Ids of the nodes named and of every node they are computed from."""
    todo = [n for n in program.graph.nodes if n.meta.get(NODE_ID) in node_ids]
    seen: set[torch.fx.Node] = set()
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(n.all_input_nodes)
    return {n.meta.get(NODE_ID, n.name) for n in seen}


def zeros_diverge(reports: tuple[NodeReport, ...], zero_operands: dict[str, list[str]]) -> tuple[NodeReport, ...]:
    """Reports with verdict DIVERGES for every node whose value is 0 where fp64 is not and a later
    node makes NaN/inf from it (an epsilon rounded away, an underflow): normwise figures hide a few
    such elements, the NaN/inf they cause does not (see `roundoff.analyze.verdict`)."""
    zeros = {z for zs in zero_operands.values() for z in zs}
    return tuple(
        replace(r, verdict=Verdict.DIVERGES) if r.node_id in zeros and r.verdict is Verdict.OK else r for r in reports
    )


def _decided_by(program: Program, nid: str, reported: dict[str, NodeReport]) -> str:
    """`nid` when it has a report (a float value), else the node that decides its value: up through
    non-float nodes (a count of a mask) to the first whose float operands all have reports (the
    comparison that made the mask)."""
    node = program.node(nid)
    while node.meta.get(NODE_ID) not in reported:
        ups = [p for p in node.all_input_nodes if p.op != "placeholder" and p.meta.get(NODE_ID) not in reported]
        if not ups:
            break
        node = ups[0]
    return node.meta.get(NODE_ID, nid)


#: Comparisons and selections: a non-float node that decides a value (`_decided_by`) is one of these.
_DECIDERS = {
    torch.ops.aten.eq, torch.ops.aten.ne, torch.ops.aten.lt, torch.ops.aten.le, torch.ops.aten.gt,
    torch.ops.aten.ge, torch.ops.aten.where, torch.ops.aten.argmax, torch.ops.aten.argmin,
    torch.ops.aten.max, torch.ops.aten.min, torch.ops.aten.sort, torch.ops.aten.topk,
}


def rank_culprits(
    reports: tuple[NodeReport, ...], program: Program, outputs: tuple[OutputVerdict, ...], vs_oracle: bool,
    zero_operands: dict[str, list[str]], overflow: set[str] = frozenset(), nan_origin: str | None = None,
    limit: int = 5,
) -> tuple[str, ...]:
    """Findings ranked by cause, only nodes on the path to a failing output when one fails:

    1. nodes whose own (local) value is NaN/inf where fp64 is finite, upstream first; a node that
       makes them by dividing by (or taking the log of) an operand that is 0 where fp64 is not comes
       after that operand's producer (an epsilon rounded away, an underflow: the producer is the cause);
       a node that makes them from finite inputs is preceded by the node on its path whose own error
       is largest beyond `EXCESS_LIMIT` (`path_cause`: E[x^2] - E[x]^2 before a sqrt);
    2. nodes whose own error is beyond `EXCESS_LIMIT` times their format's rounding, largest first.

    Against a reference, only nodes whose verdict is not ok (a node that agrees with the reference
    cannot cause a difference from it)."""
    failing = {o.node_id for o in outputs if not o.passes}
    path = ancestors(program, failing) if failing else None
    by_id = {r.node_id: r for r in reports}

    def eligible(r: NodeReport) -> bool:
        return (path is None or r.node_id in path) and (vs_oracle or r.verdict is not Verdict.OK)

    def makes_nonfinite(r: NodeReport) -> bool:
        return (r.local if r.local is not None else r.vs_oracle).new_nonfinite > 0

    def is_cause(z: str, r: NodeReport) -> bool:
        """A zero operand's producer is a cause of `r`'s NaN/inf unless an operand of `r` overflows (then
        inf / inf is the cause, not the zero); a non-float decider only when it is a comparison or
        selection `r` is computed from."""
        if any(p.meta.get(NODE_ID) in overflow for p in program.node(r.node_id).all_input_nodes):
            return False
        if z in by_id:
            return True
        n = program.node(z)
        return getattr(n.target, "overloadpacket", None) in _DECIDERS and z in ancestors(program, {r.node_id})

    first: list[str] = []
    for r in reports:  # graph order
        zeros = [_decided_by(program, z, by_id) for z in zero_operands.get(r.node_id, [])] if eligible(r) else []
        zeros = [z for z in zeros if is_cause(z, r)]
        first += [z for z in zeros if z not in first]
        if eligible(r) and makes_nonfinite(r) and r.node_id not in first:
            first.append(r.node_id)
    origin = by_id.get(nan_origin or "")
    explained = any(is_cause(z, origin) for z in zero_operands.get(origin.node_id, [])) if origin else True
    if vs_oracle and not explained and not makes_nonfinite(origin):  # NaN/inf from finite, inaccurate inputs
        cause = path_cause(program.node(origin.node_id), by_id)
        if cause is not None and eligible(cause) and cause.node_id not in first:
            first.insert(0, cause.node_id)
    rest = [r for r in reports if eligible(r) and r.node_id not in first and r.own_excess > EXCESS_LIMIT]
    rest.sort(key=lambda r: r.own_excess, reverse=True)
    return tuple(first + [r.node_id for r in rest])[:limit]
