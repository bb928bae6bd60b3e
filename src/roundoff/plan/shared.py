"""Two policies planned over one graph, so that one `Lockstep` pass can run both.

`plan` may rewrite the program it is given (a policy's decompositions, CSE, per-kernel copies), so
``plan(plan(p, A).program, B)`` can live on another graph than ``plan(p, A)``: other nodes, or the
same ids on other node objects. `plan_pair` iterates to a graph both policies leave as it is (compared
node by node: id, kind, target and operand ids) and returns both plans rebound to that one program.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch.fx

from roundoff.capture.program import Program, node_id
from roundoff.plan.model import Plan
from roundoff.plan.planner import plan
from roundoff.policy.model import Policy
from roundoff.policy.registry import get_policy

_MAX_ROUNDS = 4  # each round re-plans both; a decomposition set is applied at most once per side


def _signature(program: Program) -> tuple[Any, ...]:
    """The graph as (id, op, target, operand ids) per node: equal signatures run identically."""

    def arg(a: Any) -> Any:
        return ("node", node_id(a)) if isinstance(a, torch.fx.Node) else repr(a)

    return tuple(
        (node_id(n), n.op, str(n.target), tuple(arg(a) for a in n.args),
         tuple((k, arg(v)) for k, v in n.kwargs.items()))
        for n in program.graph.nodes
    )


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
    settle). Node ids are the stable ids of `roundoff.capture`. Raises RuntimeError if no common graph
    is reached (an internal error).
    """
    a, b = _resolve(policy_a), _resolve(policy_b)
    current, applied = program, set[str]()
    for _ in range(_MAX_ROUNDS):
        plan_a = planner(current, _without(a, applied))
        applied |= set(a.decompositions)
        plan_b = planner(plan_a.program, _without(b, applied))
        applied |= set(b.decompositions)
        if plan_b.program is plan_a.program or _signature(plan_b.program) == _signature(plan_a.program):
            return (dataclasses.replace(plan_a, policy=a),
                    dataclasses.replace(plan_b, program=plan_a.program, policy=b))
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
