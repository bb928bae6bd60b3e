"""Findings ranked by cause: which nodes of a checked run `check` names first (`rank_culprits`).

Causes first, on the path to a failing output: nodes whose own value turns NaN/inf where fp64 is
finite (after the producer of a zero they divide by), then nodes whose own error is beyond
`EXCESS_LIMIT` times their format's rounding, largest first, each after the node that created the
error it amplifies (see `rank_culprits`).
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch

from roundoff.analyze.result import NodeReport, OutputVerdict
from roundoff.analyze.verdict import EXCESS_LIMIT, OVERFLOW_HAZARDS, Verdict, unit_roundoff
from roundoff.capture.program import NODE_ID, Program, value_inputs
from roundoff.ops.classes import OpClass
from roundoff.ops.classify import classify


def upstream(node: torch.fx.Node) -> set[torch.fx.Node]:
    """Every node `node` is computed from (not itself)."""
    seen: set[torch.fx.Node] = set()
    todo = value_inputs(node)
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(value_inputs(n))
    return seen


def path_cause(node: torch.fx.Node, by_id: dict[str, NodeReport]) -> NodeReport | None:
    """The node `node` is computed from whose own error is largest, when beyond `EXCESS_LIMIT`: the cause
    of a NaN/inf `node` makes from finite but inaccurate inputs (E[x^2] - E[x]^2 before a sqrt)."""
    ups = [by_id[i] for n in upstream(node) if (i := n.meta.get(NODE_ID, "")) in by_id]
    worst = max(ups, key=lambda r: r.own_excess, default=None)
    return worst if worst is not None and worst.own_excess > EXCESS_LIMIT else None


def reported_operands(node: torch.fx.Node, by_id: dict[str, NodeReport]) -> list[NodeReport]:
    """`node`'s operands that have a report, looking through unreported ones (views, non-float nodes)."""
    out, todo, seen = [], list(node.all_input_nodes), set()
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        r = by_id.get(n.meta.get(NODE_ID, ""))
        if r is not None:
            out.append(r)
        else:
            todo.extend(n.all_input_nodes)
    return out


def error_source(program: Program, r: NodeReport, by_id: dict[str, NodeReport]) -> NodeReport | None:
    """Where the error `r` inherits was created, when `r`'s total error is mostly inherited: its normwise
    relative error more than `EXCESS_LIMIT` times its own (local) one, and its own below the error of the
    operand it reads (`r` amplifies a received error, as a `cos` of a bf16-rounded position does; a
    cancellation's own error is already larger than its operands'). From `r`'s operand carrying the
    largest error, up through each operand that already carries at least half of the current node's
    error; the node where that stops created it, even when correctly rounded (its format, not its
    arithmetic, is the defect). None when `r` makes its error itself, or no operand carries any."""
    own = r.local if r.local is not None else r.vs_oracle
    total = r.vs_oracle.norm_rel
    if not math.isfinite(total) or total <= EXCESS_LIMIT * own.norm_rel:
        return None
    node = program.node(r.node_id)
    ups = [u for u in reported_operands(node, by_id) if math.isfinite(u.vs_oracle.norm_rel)]
    cur = max(ups, key=lambda u: u.vs_oracle.norm_rel, default=None)
    if cur is None or own.norm_rel >= cur.vs_oracle.norm_rel:
        return None  # `r` itself is less accurate than what it reads (a cancellation): it is the cause
    return _created(program, cur, by_id)


def _created(program: Program, cur: NodeReport, by_id: dict[str, NodeReport]) -> NodeReport | None:
    """Where the error `cur` carries was created: up from `cur`, while its error is beyond twice its
    storage format's rounding, through the operand that carries the most of at least half of it
    (normwise relative); the node where that stops. A node about correctly rounded in its format holds
    its own rounding, whatever its operands carry (an fp16 `sigmoid` near 1 reads a bf16 operand off by
    2e-3 and is off by 1e-4, its own rounding: the operand's error barely reaches it)."""
    while cur.vs_oracle.norm_rel > 0:
        if cur.vs_oracle.excess is not None and cur.vs_oracle.excess <= 2:
            return cur
        ups = [u for u in reported_operands(program.node(cur.node_id), by_id)
               if math.isfinite(u.vs_oracle.norm_rel) and u.vs_oracle.norm_rel >= cur.vs_oracle.norm_rel / 2]
        if not ups:
            return cur
        cur = max(ups, key=lambda u: u.vs_oracle.norm_rel)
    return None


def _source(program: Program, r: NodeReport, by_id: dict[str, NodeReport]) -> NodeReport | None:
    """The node whose rounding `r` amplifies: the producer of a 16-bit operand whose storage rounding
    alone makes `r`'s own error (`NodeReport.amplifies_read`), else `error_source`."""
    if r.amplifies_read is not None and r.amplifies_read in by_id:
        return _created(program, by_id[r.amplifies_read], by_id) or by_id[r.amplifies_read]
    return error_source(program, r, by_id)


def amplifier(culprits: tuple[str, ...], program: Program, by_id: dict[str, NodeReport], source: str) -> NodeReport | None:
    """The culprit ranked after `source` whose error `source` created (`_source`), if any."""
    for nid in culprits:
        r = by_id.get(nid)
        if r is not None and nid != source and (s := _source(program, r, by_id)) is not None and s.node_id == source:
            return r
    return None


def overflowing(reports: tuple[NodeReport, ...], hazards: tuple) -> set[str]:
    """Nodes that overflow their format where fp64 is finite: inf there, or an overflow hazard."""
    over = {h.node_id for h in hazards if h.kind in OVERFLOW_HAZARDS}
    return over | {r.node_id for r in reports if r.vs_oracle.inf > r.vs_oracle.ref_inf}


def ancestors(program: Program, node_ids: set[str]) -> set[str]:
    """Ids of the nodes named and of every node whose values they are computed from (`value_inputs`)."""
    todo = [n for n in program.graph.nodes if n.meta.get(NODE_ID) in node_ids]
    seen: set[torch.fx.Node] = set()
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(value_inputs(n))
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
    limit: int = 5, flipped: frozenset[str] = frozenset(),
) -> tuple[str, ...]:
    """Findings ranked by cause, only nodes on the path to a failing output when one fails:

    1. nodes whose own (local) value is NaN/inf where fp64 is finite, upstream first; a node that
       makes them by dividing by (or taking the log of) an operand that is 0 where fp64 is not comes
       after that operand's producer (an epsilon rounded away, an underflow: the producer is the cause);
       a node that makes them from finite inputs is preceded by the node on its path whose own error
       is largest beyond `EXCESS_LIMIT` (`path_cause`: E[x^2] - E[x]^2 before a sqrt);
    2. nodes whose own error is beyond `EXCESS_LIMIT` times their format's rounding, largest first;
       one whose error is mostly inherited is preceded by the node that created it (`error_source`:
       a correctly rounded bf16 cast of positions whose error a `cos` amplifies).

    A node after a selection that chose other indices than fp64 (`flipped`) is not named as amplifying
    an error: it computes from another choice, which the selection's own sentence says.
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
    if origin is not None and origin.overflow and eligible(origin) and origin.node_id not in first:
        first.insert(0, origin.node_id)  # an overflow that begins the NaN/inf: before any rounding (trial 64)
    explained = any(is_cause(z, origin) for z in zero_operands.get(origin.node_id, [])) if origin else True
    # NaN/inf from finite, inaccurate inputs; not an overflow fp64 makes too (trial 70: a naive fp16 cross-entropy's
    # sum of exps, beyond fp16's range in fp64, was ranked after a cancellation upstream that does not cause it)
    if vs_oracle and not explained and not makes_nonfinite(origin) and not origin.overflow:
        cause = path_cause(program.node(origin.node_id), by_id)
        if cause is not None and eligible(cause) and cause.node_id not in first:
            first.insert(0, cause.node_id)
    rest = [r for r in reports if eligible(r) and r.node_id not in first and r.own_excess > EXCESS_LIMIT]
    rest.sort(key=lambda r: r.own_excess, reverse=True)
    ranked = list(first)
    amplifiers = [*rest, *(_first_amplifiers(reports, program, outputs, ranked + [r.node_id for r in rest], by_id, flipped)
                           if vs_oracle else [])]
    for r in amplifiers:  # an error a node inherits and amplifies is named at its source first
        source = _source(program, r, by_id) if vs_oracle else None
        if source is not None and eligible(source) and source.node_id not in ranked:
            ranked.append(source.node_id)
        if r.node_id not in ranked:
            ranked.append(r.node_id)
    return tuple(ranked)[:limit]


_POINTWISE = (OpClass.POINTWISE_ARITHMETIC.value, OpClass.POINTWISE_TRANSCENDENTAL.value)


def amplifies(program: Program, r: NodeReport, by_id: dict[str, NodeReport]) -> bool:
    """Whether `r` amplifies an error it reads beyond its format: its total error more than
    `EXCESS_LIMIT` times its working format's rounding (`NodeReport.total_excess`, a sum's or
    matmul's terms floor included) and more than `EXCESS_LIMIT` times the largest normwise relative
    error among the values it reads (a ``sin`` of a phase rounded to bf16; every node correct in its
    format, the output wrong), unless what it amplifies is fp32's own rounding (`amplifies_fp32_rounding`).
    Pointwise ops only: a reduction's, matmul's or normalisation's result
    that cancels (a LayerNorm's mean of centred values, a structurally zero gradient) is judged against
    its terms' rounding instead. Not a node's own defect: `error_source` names where the error began."""
    return _amplified(program, r, by_id) is False


def amplifies_fp32_rounding(program: Program, r: NodeReport, by_id: dict[str, NodeReport]) -> bool:
    """Whether `r` amplifies as `amplifies` describes, but computes in fp32 or wider and reads values
    within the limit of fp32's own rounding: the formula's conditioning, which no format short of fp64
    improves, as a node's own error is held to what its format could do; not flagged (trial 80: an fp32
    UNet's ``cos`` of timesteps up to 1000 times frequencies, the phase rounded to fp32, took its
    gradients 78x fp32's rounding, and check said "diverges")."""
    return _amplified(program, r, by_id) is True


def _amplified(program: Program, r: NodeReport, by_id: dict[str, NodeReport]) -> bool | None:
    """None where `r` amplifies nothing beyond its format; else whether what it amplifies is fp32's own
    rounding (True) or more (False)."""
    if r.op_class not in _POINTWISE or not r.total_excess > EXCESS_LIMIT:
        return None
    operands = reported_operands(program.node(r.node_id), by_id)
    if any(u.vs_oracle.nonfinite > u.vs_oracle.ref_nan + u.vs_oracle.ref_inf or u.overflow for u in operands):
        return None  # it reads NaN/inf fp64 does not have (figures over the finite elements only), or a
        # value stored as its format's overflow (a wide-kept fp16 row sum, inf where stored): the NaN/inf
        # rules judge that (an overflowing exp in 1/(1 + exp(-x)))
    reads = [u.vs_oracle.norm_rel for u in operands]
    if not reads or not r.vs_oracle.norm_rel > EXCESS_LIMIT * max(reads):
        return None
    wide = getattr(torch, r.working_dtype or r.dtype, torch.float32) in (torch.float32, torch.float64)
    return wide and max(reads) <= EXCESS_LIMIT * unit_roundoff(torch.float32)


def _first_amplifiers(reports: tuple[NodeReport, ...], program: Program, outputs: tuple[OutputVerdict, ...],
                      named: list[str], by_id: dict[str, NodeReport],
                      flipped: frozenset[str] = frozenset()) -> list[NodeReport]:
    """For each failing output none of whose ancestors is `named` (no node makes its error itself), the
    first node on its path (graph order) that `amplifies` an error beyond its format, not counting
    those after a `flipped` selection."""
    out: list[NodeReport] = []
    failing = [o for o in outputs if not o.passes]
    amps = [r for r in reports if amplifies(program, r, by_id)
            and not (flipped and flipped & ancestors(program, {r.node_id}))
            ] if failing else []  # graph order, once
    for o in failing:
        path = ancestors(program, {o.node_id})
        if path & set(named) or any(r.node_id in path for r in out):
            continue
        first = next((r for r in amps if r.node_id in path), None)
        if first is not None:
            out.append(first)
    return out


def value_maker(program: Program, node_id: str) -> torch.fx.Node | None:
    """The node that made the value node `node_id` only casts or views (through casts and views: a user's
    ``x.float()`` of a stored bf16 sum), or None where `node_id` computes (or is not in `program`)."""
    try:
        node = start = program.node(node_id)
    except KeyError:
        return None
    while (node.op == "call_function" and node.args and isinstance(node.args[0], torch.fx.Node)
           and classify(node.target).op_class in (OpClass.CAST, OpClass.DATA_MOVEMENT)):
        node = node.args[0]
    return None if node is start else node
