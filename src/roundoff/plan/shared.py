"""Two policies planned over one graph, so that one `Lockstep` pass can run both.

`plan` may rewrite the program it is given (a policy's decompositions, CSE, per-kernel copies), so
``plan(plan(p, A).program, B)`` can live on another graph than ``plan(p, A)``: other nodes, or the
same ids on other node objects. `plan_pair` iterates to a graph both policies leave as it is (compared
node by node: id, kind, target and operand ids, without the per-kernel copies `roundoff.plan.remat`
adds) and returns both plans rebound to that one program. Where one policy recomputes a node in a kernel
as a copy of its own, the other policy's plan is lifted onto the graph holding that copy: the copy is
decided as its original and its readers read it as they read the original, so both compute what they
compute alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch.fx

from roundoff.capture.program import Program, node_id
from roundoff.plan.model import Plan
from roundoff.plan.planner import plan
from roundoff.policy.errors import PolicyError
from roundoff.policy.model import Policy
from roundoff.policy.registry import get_policy

_MAX_ROUNDS = 4  # each round re-plans both; a decomposition set is applied at most once per side


def _signature(program: Program) -> tuple[Any, ...]:
    """The graph as (id, op, target, operand ids) per node: equal signatures run identically."""

    def arg(a: Any) -> Any:
        return repr(torch.fx.node.map_arg(a, lambda n: f"<node {node_id(n)}>"))

    return tuple(
        (node_id(n), n.op, str(n.target), tuple(arg(a) for a in n.args),
         tuple((k, arg(v)) for k, v in n.kwargs.items()))
        for n in program.graph.nodes
    )


class IncomparablePolicies(PolicyError):
    """Two policies that cannot be compared node for node on a program (each recomputes nodes as
    per-kernel copies of its own): a choice the user makes, not a fault (the CLI's exit 2)."""


def plan_pair(
    program: Program,
    policy_a: Policy | str,
    policy_b: Policy | str,
    planner: Callable[[Program, Policy | str], Plan] = plan,
) -> tuple[Plan, Plan]:
    """``(plan_a, plan_b)`` of `program` under both policies, sharing one ``program`` object.

    The graph is the one both policies' rewrites reach (e.g. eager against inductor-gpu: the graph
    with Inductor's decompositions, which the eager policy leaves as it is); a decomposition set is
    applied once (a table applied again may rewrite its own output, e.g. CUDA attention, and never
    settle). Node ids are the stable ids of `roundoff.capture`. Raises `IncomparablePolicies` where both
    policies recompute nodes as per-kernel copies of their own, RuntimeError if no common graph is
    reached (an internal error).
    """
    a, b = _resolve(policy_a), _resolve(policy_b)
    current, applied = program, set[str]()
    for _ in range(_MAX_ROUNDS):
        plan_a = planner(current, _without(a, applied))
        applied |= set(a.decompositions)
        base = _without_copies(plan_a)
        plan_b = planner(base, _without(b, applied))
        applied |= set(b.decompositions)
        if plan_b.program is plan_a.program or _signature(plan_b.program) == _signature(plan_a.program):
            return (dataclasses.replace(plan_a, policy=a),
                    dataclasses.replace(plan_b, program=plan_a.program, policy=b))
        if plan_b.program is base or _signature(_without_copies(plan_b)) == _signature(base):
            if plan_a.copies and plan_b.copies:
                raise IncomparablePolicies(
                    f"roundoff: {a.name!r} and {b.name!r} each recompute nodes of {program.name!r} as per-kernel "
                    "copies of their own, which one shared graph cannot hold; compare each of them against "
                    "'eager' or the fp64 oracle instead")
            if plan_b.copies:
                return dataclasses.replace(_lifted(plan_a, plan_b), policy=a), dataclasses.replace(plan_b, policy=b)
            return (dataclasses.replace(plan_a, policy=a),
                    dataclasses.replace(_lifted(plan_b, plan_a), policy=b))
        current = plan_b.program
    raise RuntimeError(
        f"roundoff: policies {a.name!r} and {b.name!r} rewrite program {program.name!r} to different "
        f"graphs after {_MAX_ROUNDS} rounds (internal error)"
    )


def _resolve(policy: Policy | str) -> Policy:
    return policy if isinstance(policy, Policy) else get_policy(policy)  # (a wrong type: get_policy's TypeError)


def _without(policy: Policy, applied: set[str]) -> Policy:
    """`policy` minus the decomposition sets the graph already went through."""
    keep = tuple(d for d in policy.decompositions if d not in applied)
    return policy if keep == tuple(policy.decompositions) else dataclasses.replace(policy, decompositions=keep)


def _without_copies(p: Plan) -> Program:
    """`p`'s program with its per-kernel copies (`Plan.copies`) read as their originals and left out."""
    if not p.copies:
        return p.program
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    by_id = {node_id(n): n for n in p.program.graph.nodes if n.op != "output"}
    for n in p.program.graph.nodes:
        if n.op != "output" and node_id(n) in p.copies:
            env[n] = env[by_id[p.copies[node_id(n)]]]
        else:
            env[n] = graph.node_copy(n, lambda x: env[x])
    return p.program.rewritten(torch.fx.GraphModule(p.program.graph_module, graph))


def _lifted(p: Plan, onto: Plan) -> Plan:
    """`p` (planned on `onto`'s graph without its copies) on `onto`'s program: a copy decided as its
    original, and every node's reads renamed to the copies it reads there."""
    if not onto.copies:
        return dataclasses.replace(p, program=onto.program)
    mine = {node_id(n): n for n in p.program.graph.nodes if n.op != "output"}
    decisions = {}
    for n in onto.program.graph.nodes:
        if n.op == "output":
            continue
        nid = node_id(n)
        original = onto.copies.get(nid, nid)
        rename = {node_id(x): node_id(y) for x, y in zip(mine[original].all_input_nodes, n.all_input_nodes)}
        d = p.decisions[original]
        site = d.fma and dataclasses.replace(d.fma, node_id=nid, mul_id=rename.get(d.fma.mul_id, d.fma.mul_id),
                                             alternatives=tuple(rename.get(m, m) for m in d.fma.alternatives))
        decisions[nid] = dataclasses.replace(d, node_id=nid, fma=site, gemm=d.gemm and rename.get(d.gemm, d.gemm),
                                             rounded_inputs=frozenset(rename.get(i, i) for i in d.rounded_inputs))
    extra: dict[str, list[str]] = {}
    for c, original in onto.copies.items():
        extra.setdefault(original, []).append(c)
    groups = tuple(dataclasses.replace(g, node_ids=tuple(x for i in g.node_ids for x in (i, *extra.get(i, ()))))
                   for g in p.groups)
    return dataclasses.replace(p, program=onto.program, decisions=decisions, groups=groups, copies=dict(onto.copies),
                               fma_sites=tuple(d.fma for d in decisions.values() if d.fma is not None))
