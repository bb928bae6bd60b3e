"""`check`: emulate a policy, the fp64 oracle and a reference in one streaming pass, and diagnose.

Numeric contract: the policy run and the reference run are emulated by `roundoff.execute` (bit-exact
to the backends on pointwise graphs; reductions and matmuls use torch's fp32 kernels, so there
the figures bound the difference against fp64 rather than reproduce a backend's summation order).
The oracle holds every value in fp64. Output verdicts are ``torch._dynamo.utils.same(ref, res,
fp64_ref=oracle, tol=tol)`` (or the chosen `Rule`); against the oracle, `ref` is the oracle rounded
(RNE) to the output's dtype, i.e. the best any run in that dtype could return. What every verdict
means is defined once, in `roundoff.analyze.verdict`.
"""

from __future__ import annotations

import difflib
import math
import re
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import torch

from roundoff.analyze.captured_outputs import CapturedOutputJudge, NeedsValues
from roundoff.analyze.culprits import (
    amplifies,
    ancestors,
    overflowing,
    rank_culprits,
    zeros_diverge,
)
from roundoff.analyze.decisions import pinned_outputs
from roundoff.analyze.deferred import observe_deferred
from roundoff.analyze.explain import explain
from roundoff.analyze.hazards import ACCUMULATION_HAZARDS, lint
from roundoff.analyze.observe import NodeObserver
from roundoff.analyze.oracle_notes import dtype_branch_notes
from roundoff.analyze.output_floor import OutputFloors
from roundoff.analyze.output_verdicts import (
    OutputJudge,
    output_figures,
    output_verdicts,
    path_flagged,
    scope_notes,
    slack_notes,
)
from roundoff.analyze.replay import as_held, moves_outputs
from roundoff.analyze.result import CheckResult, NodeReport, OutputVerdict
from roundoff.analyze.run_notes import with_cpu_attention, with_dynamo_fallbacks, with_real_eager
from roundoff.analyze.screen import screen
from roundoff.analyze.selections import flip_matters
from roundoff.analyze.verdict import (
    EXCESS_LIMIT,
    Rule,
    Verdict,
    path_dtypes,
)
from roundoff.capture.program import NODE_ID, Program, value_inputs
from roundoff.execute.interpreter import Lockstep, chained, is_random
from roundoff.execute.narrow_oracle import NarrowHeldOracle
from roundoff.execute.node_numerics import OracleNumerics, PlanNumerics
from roundoff.execute.run import complete_inputs, plan_numerics
from roundoff.numerics import get_format
from roundoff.numerics.metrics import read_together
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
    return _cached(_PLANS, program, resolved, lambda: plan(program, resolved))


def _cached(cache: weakref.WeakKeyDictionary, program: Program, key: Any, make: Callable[[], Any]) -> Any:
    """``make()``, kept in `cache` per (program, `key`); made anew where `key` cannot be hashed (a policy
    holding a list)."""
    try:
        hash(key)
    except TypeError:
        return make()
    entries = cache.setdefault(program.graph_module, {})
    if key not in entries:
        entries[key] = make()
    return entries[key]


_PAIRS: weakref.WeakKeyDictionary[torch.fx.GraphModule, dict[tuple[Policy, Policy], tuple[Plan, Plan]]] = (
    weakref.WeakKeyDictionary())


def _plans(program: Program, policy: Policy | str, against: Policy | str) -> tuple[Plan, Plan]:
    """`plan_pair(program, policy, against)`, cached per (program, both resolved policies), as `_plan`
    caches one plan: the pair's graph without per-kernel copies and the plan lifted onto it are made
    anew by each call (0.2 s a check of the corpus Llama, twice the screen's runs), and a later check
    finds the same decisions objects, so every schedule cached per plan is found again too."""
    from roundoff.policy.registry import get_policy

    a, b = (get_policy(p) if isinstance(p, str) else p for p in (policy, against))
    return _cached(_PAIRS, program, (a, b), lambda: plan_pair(program, a, b, _plan))


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
    rule: Rule | str = Rule.SAME,
    nodes: str = "screen",
    every: int = 16,
    screen_with: str = "auto",
    nodes_with: str = "auto",
    by_values: bool = False,
    on_phase: Callable[[str], None] | None = None,
) -> CheckResult:
    """Diagnose `target` on `inputs` under `policy` against `against` (a policy, ``"eager"``, or the
    fp64 oracle: ``"oracle"`` or ``"fp64"``, one meaning).

    Verdicts (nodes and outputs) are defined in `roundoff.analyze.verdict`; `rule` (``"same"``,
    ``"allclose"``, ``"bitwise"``) is how a value is compared with the reference's.

    `stream=True` frees every value once its last user has run and holds a value the policy and the
    reference agree on bit for bit once; with `recompute` it also drops long-lived values (forward
    activations the backward reads) and recomputes them when read (`roundoff.execute.recompute`): the
    same figures, with about one segment of activations per side alive, for a few percent more time.
    ``stream=False`` keeps every value.
    `transcendentals="inductor"` evaluates exp/log/tanh/... with Inductor's
    own fp32 kernels in both emulated runs, so remaining differences are the precision policy's.
    `local=False` skips the local-error recomputation (about a third of the work).

    `nodes="screen"` (default) first runs the three sides comparing only the outputs and, every
    `every` float nodes, whether a run turned NaN/inf where fp64 is finite (`roundoff.analyze.screen`;
    `screen_with`: ``"interpreter"``, ``"lowered"`` (the runs lowered once into one graph, cached per
    program), ``"compiled"`` (that graph compiled: see `roundoff.lower.compiled` for what differs),
    ``"graphed"`` (the interpreter's run replayed as a CUDA graph: its values, without its Python) or
    ``"auto"``: graphed on CUDA, else the interpreter). When every output passes and no checkpoint turned non-finite, that is the result:
    no node examined (``mode="screen"``, `CheckResult.checkpoints`). Otherwise, and with
    ``nodes="all"``, every node is examined in the streaming pass: the same figures, verdicts, first
    divergence and NaN origin as ever (``mode="every-node"``). Against the oracle, the screen judges
    outputs by their values (`verdict.oracle_output_passes`, as `blame` does), so a node that diverges
    without taking an output beyond the limit is found with ``nodes="all"`` only.

    `nodes_with`: how ``nodes="all"`` examines them: ``"interpreter"`` (each node's figures read as
    the run reaches it), ``"deferred"`` (every figure computed during the run and read once, the
    decisions taken after: `roundoff.analyze.deferred`), ``"graphed"`` (deferred, the run replayed
    as a CUDA graph) or ``"auto"``: graphed on CUDA, else the interpreter. Deferred and graphed give
    the interpreter's result; where a decision needs a node's values (a NaN/inf, a node beyond the
    limit, ...) or the graph cannot be captured, the check runs with the interpreter instead (a note
    says why). Against the oracle under the ``same`` rule, and after a screen that failed (a failing
    run takes the decisions that need values), the interpreter examines them.

    `by_values=True` (against the oracle under ``same`` only): every output is judged by its values
    (`verdict.oracle_output_passes`, the screen's and blame's rule), also with every node examined,
    where by default an output over the limit passes unless a node on its path is flagged (each op's
    rounding within the limit, their sum beyond it: the formula's conditioning, not a defect of the
    policy). For a test that must hold every output to 16x its format's rounding whatever the cause.

    `on_phase(what)`: called as the check screens, and about once a second as the interpreter examines
    every node, with how many it has evaluated (a progress line; trial 105: minutes of "under eager").
    """
    phase = on_phase or (lambda what: None)
    if nodes not in ("screen", "all"):
        raise ValueError(f"nodes={nodes!r}: choose 'screen' (outputs and checkpoints first) or 'all' (every node)")
    if nodes_with not in NODES_WITH:
        raise ValueError(f"nodes_with={nodes_with!r}: choose one of {', '.join(NODES_WITH)}")
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 < tol < math.inf:
        raise ValueError(f"tol={tol!r}: a positive number (`same`'s and `allclose`'s tolerance, default 1e-4)")
    from roundoff.policy.errors import PolicyError
    from roundoff.policy.registry import get_policy

    if not isinstance(policy, Policy):  # a bad policy or reference fails here, not deep inside (trial 57)
        get_policy(policy)
    if not isinstance(against, Policy) and against not in ORACLE_NAMES:
        try:
            get_policy(against)
        except PolicyError as exc:  # (trial 58: the reference's choices were not named)
            meant = difflib.get_close_matches(str(against), [*ORACLE_NAMES, "eager"], n=1)  # (trial 106: 'oracel')
            hint = f"did you mean {meant[0]!r}? " if meant else ""
            raise PolicyError(f"against={against!r}: {hint}'oracle' (fp64), or a policy: {exc}") from None
    rule = Rule.parse(rule)
    if by_values and (rule is not Rule.SAME or not (isinstance(against, str) and against in ORACLE_NAMES)):
        raise ValueError(
            f"by_values=True judges outputs against the fp64 oracle by their values: it needs against='oracle' "
            f"and rule='same' (got against={against if isinstance(against, str) else against.name!r}, "
            f"rule={rule.value!r}); against a reference, or under allclose/bitwise, every output is judged by its "
            "values already")
    inputs = (inputs,) if isinstance(inputs, torch.Tensor) else inputs  # one tensor: one input, not its rows
    program = _program(target, inputs, backward)
    inputs = complete_inputs(program, inputs)
    vs_oracle = isinstance(against, str) and against in ORACLE_NAMES
    against_name = "oracle" if vs_oracle else (against if isinstance(against, str) else against.name)
    if vs_oracle:
        plan_a, plan_b = _plan(program, policy), None
        sides = [plan_numerics(plan_a, transcendentals), OracleNumerics()]
    else:  # both on one graph: the reference's decompositions/CSE may rewrite the policy's graph
        plan_a, plan_b = _plans(program, policy, against)
        sides = [
            plan_numerics(plan_a, transcendentals),
            OracleNumerics(),
            plan_numerics(plan_b, transcendentals),
        ]
    key = (plan_a.policy, against_name if vs_oracle else plan_b.policy, transcendentals, str(tol), rule)
    if nodes == "screen":
        phase("screening (the runs compared at the outputs)")
        screened = _screen(program, plan_a, sides, inputs, key, tol, rule, vs_oracle, every, screen_with, recompute)
        if isinstance(screened, CheckResult):
            screened = replace(screened, outputs_by_values=by_values)  # (the screen judges outputs by their values)
            return with_real_eager(with_cpu_attention(with_dynamo_fallbacks(screened, program, plan_a), plan_a),
                                   program, inputs, plan_b)
    why_all = (screened,) if nodes == "screen" else ()
    floors = OutputFloors(plan_a.program, path_dtypes(plan_a.program.graph)) if vs_oracle and rule is Rule.SAME else None

    def make_observer(cls: type[NodeObserver]) -> NodeObserver:
        return cls(sides[0], has_reference=not vs_oracle, tol=tol, local=local, rule=rule, floors=floors)

    judge = None
    phase("examining every node")
    found = _deferred(plan_a, sides, inputs, make_observer, recompute, key, rule, tol, vs_oracle, nodes_with) if (
        not why_all and floors is None and stream) else None
    examined_with, output_figures, fell_back, settled = "interpreter", None, (), None
    if isinstance(found, str):  # tried and fell back: say why (the interpreter's result, slower)
        fell_back, found = (found,), None
    if found is not None:
        observer, outs, output_figures, settled, examined_with = found
    else:
        observer = make_observer(NodeObserver)
        judge = OutputJudge(plan_a.program, rule, tol, has_reference=not vs_oracle, floors=floors) if stream else None
        counted = _node_count(phase, plan_a.program) if on_phase is not None else None
        ls = Lockstep(plan_a.program, sides, on_node=chained(observer, judge, counted), keep=not stream,
                      recompute=range(len(sides)) if recompute else ())
        with torch.inference_mode():  # no autograd bookkeeping per op: ~15% of a small model's per-node check on CPU
            outs = ls.run_inputs(inputs)
    reports = zeros_diverge(tuple(observer.reports), observer.zero_operands)
    failing_nodes = shown_nodes = None
    hazards = lint(plan_a, observer.ranges)
    if vs_oracle:  # nodes that diverge; nodes not finite, amplifying or accumulating an error (judged where they show)
        by_id = {r.node_id: r for r in reports}
        failing_nodes = {r.node_id for r in reports if r.verdict is Verdict.DIVERGES}
        shown_nodes = {r.node_id for r in reports
                       if r.verdict is Verdict.NONFINITE or amplifies(plan_a.program, r, by_id)}
        shown_nodes |= {h.node_id for h in hazards if h.kind in ACCUMULATION_HAZARDS}
    flips = _consequential(plan_a.program, inputs, observer)
    if shown_nodes is not None:  # a choice that matters flags what follows it (trial 47: max pooling)
        shown_nodes |= set(flips)
    outputs = output_verdicts(plan_a.program, outs, tol, rule, failing_nodes, by_values, shown_nodes=shown_nodes,
                              floors=floors.floors if floors is not None else None,
                              settled=judge.settled if judge is not None else settled, figures=output_figures)
    if not vs_oracle:  # failing only through decisions near a tie: judged with fp64's (`analyze.decisions`)
        outputs = _judged_past_near_ties(plan_a, plan_b, transcendentals, inputs, observer, outputs, tol, rule)
    noise = {n.meta.get(NODE_ID) for n in observer.zeroish}  # fp64's noise: no values to lose to the range
    outputs = tuple(replace(o, below_range=0, noise_only=True) if o.node_id in noise else o for o in outputs)
    # a rounding that alone takes an output passed for want of a flagged node beyond the limit: a finding
    unflagged = {o.node_id for o in outputs if not o.passes
                 and not path_flagged(plan_a.program, o.node_id, failing_nodes, shown_nodes)} if by_values else set()
    roundings = _roundings_that_move(plan_a, inputs, reports, outputs, unflagged) if floors is not None else []
    first = next((r.node_id for r in reports if r.verdict is not Verdict.OK), None)
    ranked = rank_culprits(
        reports, plan_a.program, outputs, vs_oracle, observer.zero_operands, overflowing(reports, hazards),
        observer.nan_origin, flipped=frozenset(flips), limit=len(reports),
    )
    if vs_oracle and not all(o.passes for o in outputs) and not any(o.nonfinite for o in outputs):
        ranked = _harmless_range_losses_last(plan_a.program, inputs, ranked, {r.node_id: r for r in reports})
    # a rounding that moves outputs which pass comes first, unless an output fails: its causes lead (trial 72:
    # such a rounding listed above the fp16 overflow that made the loss inf)
    others = tuple(n for n in ranked if n not in roundings)
    ranked = ((*others, *roundings) if any(not o.passes for o in outputs) else (*roundings, *others))[:CULPRITS_SHOWN]
    if why_all and floors is not None and all(o.passes for o in outputs) and "by its values" in why_all[0]:
        # (what the screen's reference leaves out is then said by why it passes: the note fits a terminal's 3 lines)
        why_all = (why_all[0].replace(_SCREENS_REFERENCE, "").replace(
            "so every node was examined.", "so every node was examined: " + _why_it_passes(
                [o for o in outputs if f"`{o.name}`" in why_all[0]])),)
    result = CheckResult(
        program=program.name, policy=plan_a.policy.name, against=against_name, nodes=reports,
        outputs=outputs, first_divergent=first, nan_origin=observer.nan_origin, culprits=ranked,
        hazards=hazards, explanations=(), unmodeled=tuple(plan_a.unmodeled),
        notes=tuple(t for n in plan_a.notes if (t := _for_policy(n, plan_a.policy))) + _inexact_note(plan_a) + why_all
        + fell_back + (dtype_branch_notes(program) if vs_oracle else ()) + _empty_outputs_note(outputs)
        + slack_notes(outputs, rule, tol, vs_oracle)
        + scope_notes(program),
        selection_flips=tuple((nid, n, of) for nid, (n, of) in flips.items()), rounding_causes=tuple(roundings),
        examined_with=examined_with, outputs_by_values=by_values,
        near_tie_decisions=tuple(observer.decisions[nid] for nid in dict.fromkeys(
            nid for o in outputs for nid in o.near_ties)),
    )
    result = replace(result, explanations=explain(result, plan_a, observer.zero_operands))
    if unflagged and not roundings:  # failing by its values alone: say that no one op is to blame
        said = (_unflagged_sentence([o for o in outputs if o.node_id in unflagged]),)
        result = replace(result, explanations=said + result.explanations if not ranked else result.explanations + said)
    return with_real_eager(with_cpu_attention(with_dynamo_fallbacks(result, program, plan_a), plan_a), program,
                           inputs, plan_b)


#: At most how often `check`'s `on_phase` hears how many nodes the interpreter has evaluated (seconds).
PHASE_EVERY_S = 1.0


def _node_count(phase: Callable[[str], None], program: Program) -> Callable[..., None]:
    """An `on_node` observer calling `phase` with the nodes evaluated so far, at most every `PHASE_EVERY_S`."""
    total = sum(1 for n in program.graph.nodes if n.op == "call_function")
    seen: set[torch.fx.Node] = set()
    last = [time.monotonic()]

    def on_node(node: torch.fx.Node, vals: tuple, ls: Lockstep) -> None:
        if node.op == "call_function":
            seen.add(node)  # (once: a recomputed node is not counted again)
        if time.monotonic() - last[0] >= PHASE_EVERY_S:
            last[0] = time.monotonic()
            phase(f"examining every node ({len(seen)} of {total} evaluated)")

    return on_node


#: How `check(..., nodes="all")` examines every node (its `nodes_with`).
NODES_WITH = ("auto", "interpreter", "deferred", "graphed")


def _deferred(
    plan_a: Plan, sides: list, inputs: tuple, make_observer: Callable, recompute: bool, key: tuple, rule: Rule,
    tol: float, vs_oracle: bool, how: str,
) -> tuple[NodeObserver, tuple, Any, dict | None, str] | str | None:
    """`analyze.deferred.observe_deferred` where `how` asks for it: (observer, outputs, the outputs'
    figures, the outputs settled as made, how); None where the interpreter is to check as asked; where
    deferred figures were asked for and the figures do not suffice or the graph cannot be captured, a
    note saying so. Graphed, the outputs are judged in the captured run and released
    (`CapturedOutputJudge`): the graph's pool does not keep them."""
    if how == "auto":
        how = "graphed" if _on_cuda(inputs) else "interpreter"
    if how == "interpreter":
        return None
    if how == "graphed" and not _on_cuda(inputs):
        return "every node was examined with the interpreter: a CUDA graph (nodes_with='graphed') needs CUDA inputs."
    try:
        judge = CapturedOutputJudge(plan_a.program, rule, tol, has_reference=not vs_oracle) if how == "graphed" else None
        return (*observe_deferred(plan_a.program, sides, inputs, make_observer, recompute, how == "graphed", key,
                                  outputs=lambda outs: output_figures(plan_a.program, outs, rule), judge=judge), how)
    except NeedsValues as e:
        return f"every node was examined with the interpreter: {how} figures were tried, but at {e}."


#: How many causes a result names (`rank_culprits`' order)
CULPRITS_SHOWN = 5


def _harmless_range_losses_last(program: Program, inputs: tuple, ranked: tuple[str, ...],
                                by_id: dict[str, NodeReport]) -> tuple[str, ...]:
    """`ranked` with the causes flagged only because their format cannot hold their values (an underflow
    to subnormals or 0: their own error within the limit over that format's rounding) moved last where
    that loss moves no output: fp64 run again with their values as the format holds them
    (`replay.moves_outputs`). Trial 45: attention-score gradients flushing to 0 in fp16 named first, while
    a matmul amplifying its operands' rounding made the failing gradients. One fp64 run per such cause,
    among the first `MAX_REPLAYS` causes. Only where no output is NaN/inf: the replay runs fp64 after
    the node, where a later 16-bit op may be what turns its loss into inf (1 / a variance flushed to 0)."""
    harmless, exact = [], None
    for nid in ranked[:MAX_REPLAYS]:
        r = by_id.get(nid)
        own = (r.local or r.vs_oracle) if r is not None else None
        if own is None or r.verdict is Verdict.NONFINITE or (own.excess or 0.0) > EXCESS_LIMIT:
            continue
        fmt = get_format(getattr(torch, r.dtype))
        matters, exact = moves_outputs(program, inputs, nid, as_held(fmt), exact)
        if not matters:
            harmless.append(nid)
    return tuple([n for n in ranked if n not in harmless] + harmless)


#: The most flipped selections (or causes below their range) whose effect is measured, one fp64 run each
MAX_REPLAYS = 8
#: How much more error than the 16-bit value it reads a node must have for that value to be replayed
_AMPLIFIED = 2.0
#: values upstream of an amplified read also replayed, along its worst 16-bit operands (`_roundings_that_move`)
_UPSTREAM = 3
#: how many values kept unrounded in a row a read goes through to the 16-bit values they are computed from
_KEPT_DEPTH = 8


def _roundings_that_move(plan: Plan, inputs: tuple, reports: Sequence[NodeReport],
                         outputs: Sequence[OutputVerdict], failed_by_values: set[str]) -> list[str]:
    """The ids of the 16-bit values whose rounding alone, fp64 run again with that
    value as its format holds it (`replay.as_held`), moves an output beyond the limit, where an output
    over the limit by value passes for want of a flagged node on its path: each node amplifies the error
    it reads less than 16x, but together they do (trial 48: a GroupNorm's fp16 mean of values near 6,
    made 50x fp16's rounding in the gradients through a 9x `x - mean` and the backward). Named first as a
    finding (the verdict stays: on 10 of the corpus's 57 bf16 models such a rounding in eager moves a
    gradient, which flagging would fail eager itself for). Candidates: the 16-bit operand each node on
    such an output's path reads with the largest error, where that node's error is over `_AMPLIFIED`
    times it, and up to `_UPSTREAM` values it is computed from (along the operands of largest error, each
    scored half the one below), most amplified first; one fp64 run each, at most `MAX_REPLAYS`.
    `failed_by_values`: ids of outputs that fail by their values with no flagged node on their path
    (``by_values=True``): their causes are sought as those of passing ones. A value the plan keeps unrounded
    for a reader (``round_result=False``, not among the reader's `rounded_inputs`) is read through: the 16-bit
    values it is computed from are what the reader reads (trial 107: a fix's kept `sub` was named as rounded to
    bf16, to be kept in fp32, where the bf16 `q` it is computed from was what the `exp` after it amplified)."""
    program, decisions = plan.program, plan.decisions
    over = [o for o in outputs if (o.passes or o.node_id in failed_by_values) and not o.nonfinite and o.rmse_reference
            and o.rmse_result > EXCESS_LIMIT * o.rmse_reference]
    if not over:
        return []
    path = ancestors(program, {o.node_id for o in over})
    by_id = {r.node_id: r for r in reports}
    scored: dict[str, float] = {}

    def reads_16_bit(reader: str, seen: set[str], depth: int = 0) -> list[NodeReport]:
        """The 16-bit values `reader` reads, through the values the plan keeps unrounded for it (and the views
        of them, which have no report of their own)."""
        found = []
        for p in value_inputs(program.node(reader)):
            if (pid := p.meta.get(NODE_ID)) in seen:
                continue
            seen.add(pid)
            u, d, r = by_id.get(pid), decisions.get(pid), decisions.get(reader)
            if u is not None and u.dtype not in ("float16", "bfloat16"):
                continue
            if u is not None and (d is None or d.rounds_result or (r is not None and pid in r.rounded_inputs)):
                found.append(u)
            elif depth < _KEPT_DEPTH and p.op == "call_function":
                found.extend(reads_16_bit(pid, seen, depth + 1))
        return found

    def worst_read(r: NodeReport) -> NodeReport | None:
        read = [u for u in reads_16_bit(r.node_id, set()) if u.vs_oracle.norm_rel > 0]
        return max(read, key=lambda u: u.vs_oracle.norm_rel) if read else None

    for r in reports:
        if r.node_id not in path:
            continue
        if (src := worst_read(r)) is not None and (amp := r.vs_oracle.norm_rel / src.vs_oracle.norm_rel) > _AMPLIFIED:
            scored[src.node_id] = max(scored.get(src.node_id, 0.0), amp)
            # what it is computed from, by its worst 16-bit operand: a value it holds the absolute error of (trial
            # 67: `s - max(s)` near 0 reads fp16 scores near 680, whose rounding is what the exp amplifies)
            for depth in range(1, _UPSTREAM + 1):
                if (src := worst_read(src)) is None:
                    break
                scored[src.node_id] = max(scored.get(src.node_id, 0.0), amp / 2 ** depth)
    found, exact = [], None
    for nid in sorted(scored, key=scored.get, reverse=True)[:MAX_REPLAYS]:
        fmt = get_format(getattr(torch, by_id[nid].dtype))
        matters, exact = moves_outputs(program, inputs, nid, as_held(fmt), exact)
        if matters:
            found.append(nid)
    return found


def _consequential(program: Program, inputs: tuple, observer: NodeObserver) -> dict[str, tuple[int, int]]:
    """The selections that chose other indices than fp64 (`observer.flips`) whose choice matters: fp64
    run again with the policy's choice moves an output beyond the limit (`selections.flip_matters`;
    past `MAX_REPLAYS` flips, the rest are kept unmeasured)."""
    kept, exact = {}, None
    for i, (nid, flip) in enumerate(observer.flips.items()):
        if i >= MAX_REPLAYS:
            kept[nid] = flip
            continue
        matters, exact = flip_matters(program, inputs, nid, observer.flip_values[nid], exact)
        if matters:
            kept[nid] = flip
    return kept


def _judged_past_near_ties(plan_a: Plan, plan_b: Plan, transcendentals: Any, inputs: tuple, observer: NodeObserver,
                           outputs: tuple[OutputVerdict, ...], tol: float, rule: Rule) -> tuple[OutputVerdict, ...]:
    """`outputs` with each failing output (finite) that a comparison decided otherwise than fp64 near a tie
    reaches (`observer.decisions`) judged again from a run of both emulated sides with fp64's decisions
    there (`decisions.pinned_outputs`): where it passes so, it passes, its figures those of the run as it
    went, `near_ties` naming the comparisons and `rmse_pinned` its error with fp64's decisions (trial 79)."""
    program = plan_a.program
    failing = [o for o in outputs if not o.passes and not o.nonfinite and not o.reference_nonfinite]
    if not failing or not observer.decisions or any(is_random(n) for n in program.graph.nodes):
        return outputs
    reach = {o.node_id: set(observer.decisions) & ancestors(program, {o.node_id}) for o in failing}
    if not any(reach.values()):
        return outputs
    sides = [plan_numerics(plan_a, transcendentals), OracleNumerics(), plan_numerics(plan_b, transcendentals)]
    pinned = output_verdicts(program, pinned_outputs(program, sides, inputs, set().union(*reach.values()), oracle=1),
                             tol, rule, None)
    again = {o.node_id: o for o in pinned}
    return tuple(
        replace(o, passes=True, near_ties=tuple(sorted(reach[o.node_id])), rmse_pinned=p.rmse_result,
                rmse_reference_pinned=p.rmse_reference)
        if o in failing and reach[o.node_id] and (p := again.get(o.node_id)) is not None and p.passes else o
        for o in outputs)


def _unflagged_sentence(outputs: Sequence[OutputVerdict]) -> str:
    """Why `outputs`, failing by their values (``by_values=True``) with no flagged node on their path, fail."""
    names = ", ".join(f"`{o.name}`" for o in outputs[:3]) + (f" and {len(outputs) - 3} more" if len(outputs) > 3 else "")
    dtypes = " / ".join(dict.fromkeys(o.judged_dtype or o.dtype for o in outputs))
    return (f"no node on the path of {names} is flagged: each op's rounding is within the limit, and together they "
            f"take the output beyond {EXCESS_LIMIT:g}x its reference (how the computation is conditioned in {dtypes}, "
            "not one op's defect); --by-values (by_values=True) fails it, where check by default passes it. Compute "
            "it in a wider format, or in fewer rounded steps.")


#: what the screen holds an output to by its values, beside the outputs table's reference (trial 98)
_SCREENS_REFERENCE = (" (the screen's reference: the outputs table adds each output's operand floor, and may count "
                      "fewer)")


def _why_it_passes(outputs: Sequence[OutputVerdict]) -> str:
    """Why outputs the screen sent to every node pass there: within the limit once their operand floor
    is counted (which the screen does not compute), or no flagged node on their path."""
    if outputs and all(o.rmse_result <= EXCESS_LIMIT * o.rmse_reference for o in outputs):
        return (f"it passes, within {EXCESS_LIMIT:g}x its reference once the error its last op takes from its "
                "operands' rounding is counted, which the screen leaves out.")  # (the verdict
    # first: a terminal shortens a long note, and trial 84 read the cut one as contradicting its table)
    # (trial 60: "ill-conditioned, not computed wrongly" was said where eager computes it 70x closer)
    return ("no node on its path is flagged, so it passes: no one op's rounding under this policy is over the limit, "
            "though together they are; another policy may compute it closer: compare with --against eager, or "
            "blame --by-values.")


def _on_cuda(inputs: Sequence[Any]) -> bool:
    return any(isinstance(x, torch.Tensor) and x.device.type == "cuda" for x in inputs)


def _screen(
    program: Program, plan_a: Plan, sides: list, inputs: tuple, key: tuple, tol: float, rule: Rule,
    vs_oracle: bool, every: int, how: str, recompute: bool,
) -> CheckResult | str:
    """The screen's `CheckResult` when every output passes and no checkpoint turned non-finite, else
    why not (a note for the every-node result that follows). See `check`'s ``nodes``."""
    try:
        hash(key)
    except TypeError:
        how = "interpreter"  # a policy that cannot key the graph cache
    if how == "auto":
        how = "graphed" if _on_cuda(inputs) else "interpreter"
    # interpreted, the oracle holds parameters and their views as stored (`NarrowHeldOracle`: the same
    # figures; no fp64 copy of a weight held from the forward to the backward)
    interpreted = [NarrowHeldOracle() if type(sd) is OracleNumerics else sd for sd in sides]
    run_sides = interpreted if how == "interpreter" else sides
    if how == "compiled":  # traced with eager's kernels; compiled, every transcendental is Inductor's anyway
        run_sides = [plan_numerics(sd.plan) if isinstance(sd, PlanNumerics) else sd for sd in sides]
    fallback: tuple[str, ...] = ()
    judge = OutputJudge(plan_a.program, rule, tol, has_reference=not vs_oracle)  # (the interpreter's run only)
    # graphed: outputs judged in the captured run too, so its pool does not keep them
    captured = CapturedOutputJudge(plan_a.program, rule, tol, has_reference=not vs_oracle) if how == "graphed" else None
    try:
        s = screen(plan_a, run_sides, inputs, every=every, how=how, key=key, recompute=recompute, on_output=judge,
                   captured_judge=captured)
    except Exception as e:  # lowering or compiling failed (an op make_fx or Inductor cannot take)
        if how == "interpreter":
            raise
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        fallback = (f"the {how} screen failed ({type(e).__name__}: {first}); screened with the interpreter.",)
        judge = OutputJudge(plan_a.program, rule, tol, has_reference=not vs_oracle)
        s = screen(plan_a, interpreted, inputs, every=every, recompute=recompute, on_output=judge)
    settled = judge.settled
    if s.judged is not None:
        owner, tensors = s.judged
        try:
            settled = owner.settle(read_together(tensors))
        except NeedsValues as e:  # judged interpreted instead (the graph kept no values to read)
            fallback += (f"screened with the interpreter: the graphed screen judged outputs by their figures, but at {e}.",)
            judge = OutputJudge(plan_a.program, rule, tol, has_reference=not vs_oracle)
            s = screen(plan_a, interpreted, inputs, every=every, recompute=recompute, on_output=judge)
            settled = judge.settled
    oracle_values = vs_oracle and rule is Rule.SAME
    # against the oracle, by the outputs' values: one that fails sends every node to be examined. Judged
    # before the probes are read: on CUDA the outputs' figures are launched while the runs still execute
    outputs = output_verdicts(plan_a.program, s.outputs, tol, rule, None, by_values=oracle_values, settled=settled)
    figures = s.read()
    if bad := [nid for (nid, _side), n in s.nonfinite_counts(figures).items() if n]:
        return f"screened ({s.how}): checkpoint {bad[0]} turned NaN/inf where fp64 is finite, so every node was examined."
    if failing := [o.name for o in outputs if not o.passes]:
        how = ("is beyond the limit by its values against fp64 correctly rounded to its format" + _SCREENS_REFERENCE
               if oracle_values else f"fails the {rule.value} rule")  # (trial 98: "57 more" above "51 outputs")
        return (f"screened ({s.how}): output `{failing[0]}`{f' (and {len(failing) - 1} more)' if len(failing) > 1 else ''} "
                f"{how}, so every node was examined.")
    if lost := [o.name for o in outputs if o.below_range]:  # underflow, or fp64's noise of a structural 0:
        return (f"screened ({s.how}): output `{lost[0]}`{f' (and {len(lost) - 1} more)' if len(lost) > 1 else ''} "
                "keeps few of its values (below its format's range), so every node was examined to tell an "
                "underflow from a value 0 by the model's structure.")  # only the nodes tell (trial 51)
    points = tuple(dict.fromkeys(nid for nid, kind, _side in s.probed if kind == "nonfinite"))
    result = CheckResult(
        program=program.name, policy=plan_a.policy.name, against=key[1] if vs_oracle else key[1].name, nodes=(),
        outputs=outputs, first_divergent=None, nan_origin=None, culprits=(), hazards=lint(plan_a, s.ranges(figures)),
        explanations=(), unmodeled=tuple(plan_a.unmodeled),
        notes=tuple(t for n in plan_a.notes if (t := _for_policy(n, plan_a.policy))) + _inexact_note(plan_a) + ((
            f"screened ({s.how}): every output passes and none of {len(points)} checkpoint(s) turned "
            "NaN/inf where fp64 is finite, so no node was examined; examine every node with --every-node "
            "(check(..., nodes='all'))." + (
                " Its outputs' reference rmse is fp64 correctly rounded to their format alone; a check of every "
                "node also counts the error an output a matmul, sum or normalisation makes takes from its operands "
                "held in that format (its operand floor), so it shows a larger reference rmse for those outputs, a "
                "higher limit that no output the screen passes can fail." if oracle_values else "")),) + fallback + (dtype_branch_notes(program) if vs_oracle else ())
        + _empty_outputs_note(outputs) + slack_notes(outputs, rule, tol, vs_oracle)
        + scope_notes(program),
        mode="screen", checkpoints=points,
    )
    return replace(result, explanations=explain(result, plan_a, {}))


def _for_policy(note: str, policy: Policy) -> str | None:
    """A plan note as it applies to `policy`: its sentences about Inductor only under an Inductor
    policy (None when nothing is left)."""
    about = f"{policy.name} {policy.description} {policy.source}".lower()
    if "inductor" in about or "inductor" not in note.lower():
        return note
    kept = [s for s in re.split(r"(?<=[.;]) ", note) if "inductor" not in s.lower()]
    return " ".join(kept).rstrip(";") if kept else None


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


def _empty_outputs_note(outputs: Sequence[OutputVerdict]) -> tuple[str, ...]:
    """Say which outputs hold no element: they pass with nothing measured (trial 59: "rmse 0, ok")."""
    empty = [f"`{o.name}`" for o in outputs if o.vs_oracle.numel == 0]
    return (f"nothing measured at {', '.join(empty)}: no elements (a 0-size input?); they pass vacuously",) if empty else ()
