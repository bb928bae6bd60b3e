"""`check`: emulate a policy, the fp64 oracle and a reference in one streaming pass, and diagnose.

Numeric contract: the policy run and the reference run are emulated by `roundoff.execute` (bit-exact
to the backends on pointwise graphs; reductions and matmuls use torch's fp32 kernels, so there
the figures bound the difference against fp64 rather than reproduce a backend's summation order).
The oracle holds every value in fp64. Output verdicts are ``torch._dynamo.utils.same(ref, res,
fp64_ref=oracle, tol=tol)``; against the oracle, `ref` is the oracle rounded (RNE) to the output's
dtype, i.e. the best any run in that dtype could return.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import torch

from roundoff.analyze.explain import explain
from roundoff.analyze.hazards import lint
from roundoff.analyze.metrics import measure
from roundoff.analyze.observe import NodeObserver, rmse, same_rule
from roundoff.analyze.result import CheckResult, NodeReport, OutputVerdict
from roundoff.capture.program import NODE_ID, Program
from roundoff.execute.formats import is_float
from roundoff.execute.interpreter import Lockstep
from roundoff.execute.node_numerics import OracleNumerics, round_value
from roundoff.execute.run import complete_inputs, plan_numerics
from roundoff.ops.classes import OpClass
from roundoff.plan.model import Plan
from roundoff.plan.shared import plan_pair
from roundoff.policy.model import Policy

ORACLE_NAMES = ("oracle", "fp64")


_PLANS: weakref.WeakKeyDictionary[torch.fx.GraphModule, dict[Policy, Plan]] = weakref.WeakKeyDictionary()


def _plan(program: Program, policy: Policy | str) -> Plan:
    """`roundoff.plan.plan(program, policy)`, cached per (program, resolved policy).

    A plan is a pure function of the two (it re-traces the program to decompose it, the costliest
    step of a small check), so a second check of the same program and policy reuses it.
    """
    from roundoff.plan import plan
    from roundoff.policy.registry import get_policy

    resolved = get_policy(policy) if isinstance(policy, str) else policy
    try:
        hash(resolved)
    except TypeError:
        return plan(program, resolved)
    cache = _PLANS.setdefault(program.graph_module, {})
    if resolved not in cache:
        cache[resolved] = plan(program, resolved)
    return cache[resolved]


def _program(target: Program | Callable[..., Any], inputs: Sequence[Any], backward: bool) -> Program:
    if isinstance(target, Program):
        return target
    if not callable(target):
        raise TypeError(
            f"check() takes a roundoff Program, a function or an nn.Module; got {type(target).__name__}"
        )
    from roundoff.capture import capture

    return capture(target, *inputs, backward=backward)


def check(
    target: Program | Callable[..., Any],
    inputs: Sequence[torch.Tensor],
    policy: Policy | str,
    against: Policy | str = "eager",
    stream: bool = True,
    *,
    backward: bool = False,
    tol: float = 1e-4,
    transcendentals: str = "eager",
    local: bool = True,
    recompute: bool = True,
) -> CheckResult:
    """Diagnose `target` on `inputs` under `policy` against `against` (a policy, ``"eager"`` or ``"oracle"``).

    `stream=True` frees every value once its last user has run and holds a value the policy and the
    reference agree on bit for bit once; with `recompute` it also drops long-lived values (forward
    activations the backward reads) and recomputes them when read (`roundoff.execute.recompute`): the
    same figures, with about one segment of activations per side alive, for a few percent more time.
    ``stream=False`` keeps every value.
    `transcendentals="inductor"` evaluates exp/log/tanh/... with Inductor's
    own fp32 kernels in both emulated runs, so remaining differences are the precision policy's.
    `local=False` skips the local-error recomputation (about a third of the work).
    """
    program = _program(target, inputs, backward)
    inputs = complete_inputs(program, inputs)
    vs_oracle = isinstance(against, str) and against in ORACLE_NAMES
    against_name = "oracle" if vs_oracle else (against if isinstance(against, str) else against.name)
    if vs_oracle:
        plan_a = _plan(program, policy)
        sides = [plan_numerics(plan_a, transcendentals), OracleNumerics()]
    else:  # both on one graph: the reference's decompositions/CSE may rewrite the policy's graph
        plan_a, plan_b = plan_pair(program, policy, against, _plan)
        sides = [plan_numerics(plan_a, transcendentals), OracleNumerics(), plan_numerics(plan_b, transcendentals)]
    observer = NodeObserver(sides[0], has_reference=not vs_oracle, tol=tol, local=local)
    ls = Lockstep(plan_a.program, sides, on_node=observer, keep=not stream,
                  recompute=range(len(sides)) if recompute else ())
    with torch.no_grad():
        outs = ls.run_inputs(inputs)
    outputs = _output_verdicts(plan_a.program, outs, tol)
    hazards = lint(plan_a, observer.ranges)
    reports = tuple(observer.reports)
    first = next((r.node_id for r in reports if r.verdict != "ok"), None)
    culprits = _culprits(reports)
    result = CheckResult(
        program=program.name, policy=plan_a.policy.name, against=against_name, nodes=reports,
        outputs=outputs, first_divergent=first, nan_origin=observer.nan_origin, culprits=culprits,
        hazards=hazards, explanations=(), unmodeled=tuple(plan_a.unmodeled),
        notes=tuple(plan_a.notes) + _inexact_note(plan_a),
    )
    return replace(result, explanations=explain(result, plan_a, observer.zero_operands))


_INEXACT = (OpClass.REDUCTION, OpClass.MATMUL, OpClass.CONVOLUTION, OpClass.ATTENTION, OpClass.NORMALIZATION)


def _inexact_note(plan: Plan) -> tuple[str, ...]:
    """Say where the emulation cannot be bit-exact to the backend (summation order)."""
    n = sum(1 for d in plan.decisions.values() if d.op_class in _INEXACT)
    if not n:
        return ()
    note = (
        f"{n} reduction/matmul-like node(s) are emulated with torch's own kernels in the modelled accumulate "
        "dtype, rounded once: not bit-exact to the backend (summation order differs); their error is "
        "bounded against the fp64 oracle instead."
    )
    return (note,)


def _culprits(reports: tuple[NodeReport, ...], limit: int = 5) -> tuple[str, ...]:
    """Nodes whose own (local) error is worst, where the run diverges or goes non-finite."""
    bad = [r for r in reports if r.local is not None and (r.verdict != "ok" or r.local.nonfinite)]
    bad.sort(key=lambda r: (r.local.nonfinite > 0, r.local.max_bits, r.local.mean_bits), reverse=True)
    return tuple(r.node_id for r in bad[:limit] if r.local.max_bits > 0 or r.local.nonfinite)


def _output_verdicts(program: Program, outs: tuple, tol: float) -> tuple[OutputVerdict, ...]:
    res_all, oracle_all = outs[0], outs[1]
    ref_all = outs[2] if len(outs) > 2 else None
    out_node = next(n for n in program.graph.nodes if n.op == "output")
    args = out_node.args[0] if isinstance(out_node.args[0], (tuple, list)) else (out_node.args[0],)
    res_all = res_all if isinstance(res_all, (tuple, list)) else (res_all,)
    oracle_all = oracle_all if isinstance(oracle_all, (tuple, list)) else (oracle_all,)
    verdicts = []
    for i, (res, oracle) in enumerate(zip(res_all, oracle_all)):
        if not is_float(res):
            continue
        name = program.output_names[i] if i < len(program.output_names) else f"output{i}"
        ref = ref_all[i] if ref_all is not None else round_value(oracle, res.dtype).to(res.dtype)
        node = args[i]
        nid = node.meta.get(NODE_ID, str(node)) if isinstance(node, torch.fx.Node) else str(i)
        verdicts.append(
            OutputVerdict(
                name=name, node_id=nid, passes=same_rule(ref, res, oracle, tol),
                rmse_result=rmse(res, oracle), rmse_reference=rmse(ref, oracle),
                vs_oracle=measure(res, oracle, res.dtype),
                vs_reference=None if ref_all is None else measure(res, ref.to(torch.float64), res.dtype),
            )
        )
    if not verdicts:
        raise ValueError(
            f"program {program.name!r} has no floating-point outputs: nothing to check; "
            "return the float tensors whose accuracy you care about"
        )
    return tuple(verdicts)
