"""`blame(program, policy, inputs)`: the smallest set of decision changes that removes a divergence."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace

import torch

from roundoff.analyze.cause_sentences import BLAME_FINDS_WHICH
from roundoff.analyze.culprits import ancestors
from roundoff.analyze.hazards import ROUNDING_DECIDED_HAZARDS
from roundoff.analyze.result import CheckResult, OutputVerdict
from roundoff.analyze.verdict import EXCESS_LIMIT, Rule, Verdict
from roundoff.blame.changes import (
    Change,
    ChangeKind,
    Reference,
    affected_nodes,
    apply_changes,
    candidate_changes,
    compile_placeable,
    merge_overrides,
)
from roundoff.blame.evaluate import Evaluator
from roundoff.blame.explain import explain
from roundoff.blame.notes import (
    backward_only,
    beyond_fp32,
    bits_the_compiler_decides,
    causes_left,
    nonfinite_removed,
    over_limit_by_value,
    unreachable_causes,
)
from roundoff.blame.repro import ReproError, repro_script
from roundoff.blame.result import BlameResult, BlameStatus
from roundoff.blame.search import SearchOutcome, ddmin, prefix_search
from roundoff.capture.program import (
    Program,
    SpecializationKind,
    node_id,
)
from roundoff.plan import Plan
from roundoff.policy import get_policy
from roundoff.policy.model import ComputePrecision, Policy, RoundingPoint

SEARCHES = ("ddmin", "prefix", "prefix-linear")


def _policy_toml(policy: Policy) -> str | None:
    """`policy` as TOML, or None without the optional `tomli-w` (the search needs only torch)."""
    from roundoff.policy import policy_to_toml

    try:
        return policy_to_toml(policy)
    except ImportError:
        return None


def _search(name: str, changes: Sequence[Change], ev: Evaluator, whole_lines: bool) -> SearchOutcome[Change]:
    if name == "ddmin" and whole_lines and len(changes) > NODE_SEARCH_MAX:
        units = _line_units(changes, ev.base_plan.program)
        order = {c: i for i, c in enumerate(changes)}

        def flat(chosen: Sequence[tuple[Change, ...]]) -> tuple[Change, ...]:
            return tuple(sorted((c for unit in chosen for c in unit), key=order.__getitem__))

        found = ddmin(units, lambda chosen: ev.fixes(flat(chosen)))
        return replace(found, changes=None if found.changes is None else flat(found.changes))
    if name == "ddmin":
        return ddmin(changes, ev.fixes)
    if name in ("prefix", "prefix-linear"):
        return prefix_search(changes, ev.fixes, bisect=name == "prefix")
    raise ValueError(f"unknown search {name!r}; choose one of {', '.join(SEARCHES)}")


@torch.no_grad()  # every run is of captured graphs (a backward is in them): no autograd, and a constant
# the function closes over that requires grad (a research-style parameter) does not reach a kernel's out=
def blame(
    program: Program,
    policy: Policy | str,
    inputs: Sequence[torch.Tensor] | None = None,
    *,
    against: Reference | str = Reference.EAGER,
    tol: float = 1e-4,
    rmse_ratio: float | None = None,
    search: str = "ddmin",
    transcendentals: str = "eager",
    incremental: bool = True,
    repro: bool = True,
    on_evaluation: Callable[[int, int], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
    whole_lines: bool = True,
    trim: bool = True,
    placeable: bool = False,
    rule: Rule | str = Rule.SAME,
) -> BlameResult:
    """Find a small set of per-node decision changes that brings `program` within tolerance: 1-minimal
    for the search's rule, a line whose op repeats changed whole (`whole_lines`) and, against
    the oracle, without the lines `check` passes without (`_lines_check_needs`; ``trim=False`` keeps
    them: every output within the limit by its values, not only by check's path rule).

    Runs `program` emulated under `policy` (preset name or Policy) on `inputs` (default: the
    program's example inputs); the verdict is PyTorch's `same` rule against `against` ("eager": the
    real eager run; "oracle": the fp64 run) with `tol`; `rmse_ratio` replaces same's multiplier by a
    user tolerance (pass when rmse(result, fp64) <= rmse_ratio * rmse(reference, fp64)). `search` is "ddmin" (1-minimal set) or the
    Polygraphy-style baselines "prefix" (bisect the shortest topological prefix) and
    "prefix-linear" (scan for it). With `repro`, the result holds a standalone repro.py text.
    `on_evaluation(evaluations so far, candidate changes)` is called after each evaluation (progress), and
    `on_phase(what)` as each step after the search begins (trial 98: two silent minutes after the search).
    `whole_lines`: ddmin searches the changes of one op, source line and pass that repeats (a loop's
    iterations, the same line in every layer) as one change (`_line_units`), as a fix in the code
    would change them, so its result is 1-minimal in such lines; False searches node by node.
    `placeable`: search only changes roundoff.compile can place: on a training step, at forward nodes
    (by default a fix may change backward-only nodes: a note counts them), and under fusion-boundary
    rounding no kept rounding of a value other than bf16 or fp16 (`_placeable_rounding`).
    `rule`: check's output rule (`roundoff.analyze.verdict.Rule`); with ``allclose`` or ``bitwise`` a fix
    brings every output within that rule against eager, or against fp64 correctly rounded to its path's
    format (those check fails; the others no worse than the policy), and nothing is trimmed by check's
    path rule, which only ``same`` has.
    """
    if search not in SEARCHES:
        raise ValueError(f"unknown search {search!r}; choose one of {', '.join(SEARCHES)}")
    if not isinstance(program, Program):
        raise TypeError(
            f"program must be a roundoff Program (from roundoff.capture.capture), got "
            f"{type(program).__name__}"
        )
    pol = get_policy(policy)
    ref = Reference.parse(against)
    rule = Rule.parse(rule)  # (an rmse_ratio with another rule: the Evaluator refuses it, before any run)
    args = tuple(program.example_inputs if inputs is None else inputs)
    # (trim=False: the outputs to fix are those over the limit by their values, as check --by-values fails them;
    # trial 87: "nothing to fix" where check --by-values failed three gradients)
    checked = _checked(program, pol, args, transcendentals, rule=rule, by_values=not trim and rule is Rule.SAME) if (
        ref is Reference.ORACLE and rmse_ratio is None) else None
    judged = _output_indices(program, checked, lambda o: not o.passes) if checked is not None else None
    ev = Evaluator(
        program, pol, args, reference=ref, tol=tol, rmse_ratio=rmse_ratio,
        transcendentals=transcendentals, incremental=incremental, judged=judged,
        noise=_output_indices(program, checked, lambda o: o.noise_only) if checked is not None else None, rule=rule,
    )
    candidates = every_candidate = candidate_changes(ev.base_plan, ref)
    backward_ids = set(backward_only(ev.base_plan.program, candidates)) if placeable else set()
    in_backward = [c for c in candidates if c.node_id in backward_ids]
    unplaceable = [c for c in candidates if placeable and c.node_id not in backward_ids
                   and not _placeable_rounding(c, ev.base_plan)]
    places = compile_placeable(program, ev.base_plan) if placeable else None
    in_steps = [c for c in candidates if places is not None and c.node_id not in backward_ids and c not in unplaceable
                and not places(c)]
    left_out = bool(in_backward or unplaceable or in_steps)
    candidates = tuple(c for c in candidates
                       if c not in unplaceable and c not in in_steps and c.node_id not in backward_ids)
    if on_evaluation is not None:  # progress: (evaluations so far, candidate changes)
        ev.on_evaluation = lambda n: on_evaluation(n, len(candidates))
    outcome = _search(search, candidates, ev, whole_lines)
    found = outcome.changes or ()
    phase = on_phase or (lambda what: None)
    if outcome.none_fix:
        status = BlameStatus.ALREADY_OK
    elif outcome.changes is None:
        status = BlameStatus.NO_FIX
    else:
        status = BlameStatus.FIXED
    # The search holds each output to its values, check to the path rule, which the trim below applies to a fix:
    # where no set brings the outputs within the limit by value, every candidate together may pass check (trial
    # 107: --placeable said no fix where blame without it found 11 placeable changes, trimmed so)
    every_change: CheckResult | None = None  # check with every candidate change applied
    from_all = False
    if status is BlameStatus.NO_FIX and checked is not None and trim and rule is Rule.SAME and candidates:
        phase("checking every candidate change together as check judges them")
        every_change = _checked(program, apply_changes(pol, candidates), args, transcendentals)
        if not every_change.diverges and _no_worse(every_change, checked):
            status, found, from_all = BlameStatus.FIXED, tuple(candidates), True
    notes: list[str] = [(
        f"--placeable left out {len(unplaceable)} candidate change(s) that keep a value rounded inside a fused "
        "kernel to a format roundoff.compile writes no such rounding for (bf16 and fp16 only): blame without "
        "--placeable finds a fix for check and the repro, and a policy with rounding=every_op places such roundings"
    )] if unplaceable else []
    if in_steps and status is BlameStatus.NO_FIX:
        notes.append(f"--placeable left out {len(in_steps)} candidate change(s) at steps of a decomposition (ids "
                     "such as n7.0: inside a logsumexp, a softmax, a norm), which roundoff.compile cannot place")
    if in_backward and status is BlameStatus.NO_FIX:  # trial 63: said "not a placement decision" alone
        notes.append(f"--placeable left out {len(in_backward)} candidate change(s) at backward-only nodes, which "
                     "roundoff.compile cannot place (it places overrides on the forward graph)")
    if from_all:
        notes.append(
            f"no set of the {len(candidates)} {'placeable ' if left_out else ''}candidate changes brings every output "
            "within the limit by its values (the search's rule); with all of them check passes (no flagged node on "
            "the path of an output over the limit), and no output ends farther off than with no change: the fix is "
            "those, less the lines check passes without")
    over_limit: tuple[tuple[str, float], ...] = ()  # outputs the trimmed fix leaves over the limit by value
    evaluations = outcome.evaluations
    if status is BlameStatus.FIXED and whole_lines and len(candidates) <= NODE_SEARCH_MAX and not from_all:
        phase("extending the fix to whole lines")
        found, added = _whole_lines(found, candidates, ev)
        evaluations += added != 0  # one more change set run (-1: it did not fix, the search's set is kept)
        if added > 0:
            notes.append(
                f"the fix is extended to every node of the same op and line in the same pass ({added} more: a "
                "loop's other iterations, the same line in other layers), as a fix in the code would be; the "
                "search alone needed fewer")
    lines_taken_whole = (status is BlameStatus.FIXED and whole_lines and search == "ddmin" and not from_all
                         and len(candidates) > NODE_SEARCH_MAX)  # (the search's units were whole lines)
    if status is BlameStatus.ALREADY_OK and checked is not None and (checked.culprits or checked.hazards):
        notes.append(
            f"check lists {len(checked.culprits)} cause(s) and {len(checked.hazards)} hazard(s) whose effect stays "
            "within the limit at every output (see `roundoff check --every-node`): blame changes only what fails")
    if status is BlameStatus.FIXED and checked is not None and trim and rule is Rule.SAME:
        found_before = found
        found, dropped, trimmed = _lines_check_needs(program, pol, args, found, checked, transcendentals, phase)
        trimmed = trimmed if trimmed is not None else every_change  # (None: the search's fix, within it by value)
        over_limit = over_limit_by_value(trimmed) if trimmed is not None else ()
        if dropped:
            over = "; ".join(f"`{name}` {ratio:.3g}x" for name, ratio in over_limit[:4])
            notes.insert(0,
                f"{len(found_before) - len(found)} more change(s) {'of all the candidates' if from_all else 'the search kept'} "
                f"on {', '.join(dropped)} are left out: `check` passes "
                "without them (the search holds an output to its values; check passes it once no node on its "
                "path is flagged)"
                + (f", though {len(over_limit)} output(s) stay over the limit ({EXCESS_LIMIT:g}x their reference) by "
                   f"their values: {over}{'; ...' if len(over_limit) > 4 else ''}" if over_limit else "")
                + "; to keep every output within the limit by its values, blame with --by-values (trim=False)")
    if lines_taken_whole and (repeated := [unit for unit in _line_units(found, ev.base_plan.program, candidates)
                                           if len(unit) > 1]):  # (counted in the fix as trimmed: trial 109's 9 of 6)
        notes.append(
            f"the fix changes every node of {len({unit[0].source for unit in repeated})} line(s) whose op "
            "repeats in one pass "
            f"({sum(map(len, repeated))} changes: a loop's iterations, the same line in every layer), as a "
            "fix in the code would; the search takes such a line whole (whole_lines=False: node by node)")
    if status is BlameStatus.FIXED and checked is not None:
        notes.extend(causes_left(ev.base_plan.program, checked, found))
    if status is BlameStatus.FIXED and (at_backward := backward_only(ev.base_plan.program, found)):
        notes.append(
            f"{len(at_backward)} of the {len(found)} change(s) are at backward-only nodes "
            f"({', '.join(at_backward[:4])}{', ...' if len(at_backward) > 4 else ''}): check and the repro apply "
            "them, but roundoff.compile places overrides on forward nodes only and refuses these "
            "(RoundoffPlacementError); what the forward changes alone do, `roundoff check` with a policy that "
            "keeps only those tells")
    if status is BlameStatus.FIXED and rule is Rule.BITWISE:
        notes.extend(bits_the_compiler_decides(ev.base_plan, transcendentals))
    breaks = [b for b in program.specializations if b.kind is not SpecializationKind.RANDOM]
    if status is BlameStatus.FIXED and breaks:
        notes.append(
            f"the program has {len(breaks)} graph break(s) (the first at {breaks[0].source}): torch.compile compiles "
            "it as several graphs, and roundoff.compile places a node override only where its line's compiled code "
            "serves that node alone; code compiled once for several calls (a loop's, each layer's) refuses it "
            "(RoundoffPlacementError): make such a change in the code, or remove the break")
    fixed_policy = replace(
        apply_changes(pol, found),
        name=f"{pol.name}+blame",
        description=f"{pol.name} with the {len(found)} node override(s) roundoff blame found "
        f"against {ref.value} for {program.name}",
    )
    repro_text = None
    explanations = _explained(ev, found)  # (the repro's notes and the result's: one pass)
    if repro and status is BlameStatus.FIXED:
        phase("writing the repro script")
        try:
            repro_text = repro_script(
                ev.base_plan.program, ev.base_plan, ev.plan_for(found), args, reference=ref.value, tol=tol, rmse_ratio=rmse_ratio, rule=rule.value,
                title=f"{program.name} under {pol.name} against {ref.value}",
                notes=explanations, judged=judged,
                by_path=[name for name, _ in over_limit],
            )
        except ReproError as exc:
            notes.append(f"no repro script: {exc}")
        if repro_text is not None and transcendentals != "eager":
            notes.append(
                "the repro script evaluates exp/log/tanh/... with eager's kernels, not Inductor's as this "
                "search did: its figures may differ from blame's by an ulp at those ops"
            )
    if status is BlameStatus.NO_FIX:
        phase("finding why no change fixes it")
        beyond = beyond_fp32(program, args) if ref is Reference.ORACLE else None
        if checked is None:  # the causes check names, to say why no change reaches them (trial 62)
            checked = _checked(program, pol, args, transcendentals, against=ref.value, rule=rule)
        together = ev.outputs(candidates)
        still = ev.failing(together)
        removed = nonfinite_removed(ev, together) if ref is Reference.ORACLE else []
        # (trial 108: "the changes --placeable left out may fix it" where fp32 itself overflowed: one run tells)
        left_out_fix = left_out and ev.fixes(every_candidate)
        notes.append(
            f"all {len(candidates)} {'placeable ' if left_out else ''}candidate changes together still diverge"
            + (f" at {', '.join(f'`{n}`' for n in still[:3])}{' and more' if len(still) > 3 else ''}" if still else "")
            + (": with the changes --placeable left out, all of them fix it (blame without --placeable finds which)"
               if left_out_fix else (f", and so do all {len(every_candidate)} with those --placeable left out" if left_out
                                     else "")
               + (": beyond the NaN/inf they remove (below), " if removed else ": ")
               + "the divergence is not a placement decision this policy controls"
               + (f"; {beyond}" if beyond else "" if checked and (checked.selection_flips or checked.culprits
                                                                   or checked.nan_origin)
                  else _CONDITIONED if ref is Reference.ORACLE and checked and checked.first_divergent is None
                  else " (e.g. an implementation difference)"))
        )
        if candidates and (left := every_change or _checked(program, apply_changes(pol, candidates), args,
                                                            transcendentals, against=ref.value, rule=rule)).explanations:
            notes.append("with every placeable candidate change applied, what check still finds first: " if left_out else
                         "with every candidate change applied, what check still finds first (a change in the code, "
                         "not a placement, addresses it): ")
            # (trial 101: nothing said what to do; trial 103: not "blame finds which to keep": blame tried them all)
            notes[-1] += left.explanations[0].replace(BLAME_FINDS_WHICH, "")
        if removed:
            notes.append(
                f"all candidate changes together remove the NaN/inf this policy makes at {', '.join(removed[:3])}"
                f"{' and more' if len(removed) > 3 else ''}, where eager is finite: what stays over the limit is "
                "also eager's error (check -p eager --against oracle); blame --against eager finds the fewest "
                "changes that bring this policy to eager there")
        broken = [f"`{o.name}`" for o in checked.outputs if o.reference_nonfinite and not o.passes]
        if ref is Reference.EAGER and broken:  # no change can match a reference that is itself wrong
            notes.append(
                f"eager itself is NaN/inf where fp64 is finite at {', '.join(broken[:3])}"
                f"{' and more' if len(broken) > 3 else ''}, so no change can agree with it there: blame --against "
                "oracle searches for the change that brings this policy to fp64")
        elif not removed:  # (where the changes remove the NaN, its causes and hazards are removable)
            notes.extend(unreachable_causes(ev.base_plan.program, checked, candidates))
            notes.extend(f"check names a hazard that no change here removes: [{h.kind}] {h.message}"
                         for h in checked.hazards if h.kind in ROUNDING_DECIDED_HAZARDS)
            if rule is not Rule.SAME and checked.first_divergent is not None and not checked.culprits:
                notes.append(_first_unplaceable(program, pol, args, transcendentals, ref, rule, checked, candidates))
    cost = ev.cost()
    return BlameResult(
        over_limit=over_limit,
        program=program.name,
        policy=pol.name,
        reference=ref.value,
        rule=rule.value,
        search=search,
        status=status,
        changes=tuple(found),
        explanations=explanations,
        candidates=len(candidates),
        evaluations=evaluations,
        nodes_recomputed=cost.nodes_recomputed,
        nodes_full=cost.nodes_full,
        ok_before=outcome.none_fix,
        ok_after=status is not BlameStatus.NO_FIX,
        policy_toml=_policy_toml(fixed_policy),
        fixed_policy=fixed_policy,
        repro=repro_text,
        notes=tuple(notes),
        affects=affected_nodes(ev.base_plan, ev.plan_for(found)) if status is BlameStatus.FIXED else (),
    )


def _explained(ev: Evaluator, found: Sequence[Change]) -> tuple[str, ...]:
    """A sentence per change (`blame.explain`); an upcast says overflow where the node makes NaN/inf from
    finite operands under the policy, not only rounding (trial 73: an fp16 ``mse_loss``)."""
    places = compile_placeable(ev.base_plan.program.captured(), ev.base_plan)  # (built once for every change)
    return tuple(explain(c, ev.base_plan.program, ev.base_plan, places=places,
                         makes_nonfinite=c.kind is ChangeKind.UPCAST and ev.makes_nonfinite(c.node_id)) for c in found)


def _first_unplaceable(program: Program, pol: Policy, args: tuple, transcendentals: str, ref: Reference, rule: Rule,
                       checked: CheckResult, candidates: Sequence[Change]) -> str:
    """Where no fix exists under a rule other than `same`: check's first differing node, the first node that still
    differs with every candidate change applied (one check; none: the policy's graph is what differs, trial 91),
    and whether the candidate changes at the first node's line make it agree (one more check). Trial 75: the node
    was unnamed; trial 76: a rotary embedding's ``q * cos`` was said to be computed differently, where it reads
    the ``cos`` Gemma2 casts to bf16 unrounded (the cast dropped inside the kernel), which no change offers to
    round; trial 91: a GNN's ``agg * deg_inv``, where rounding ``1.0 / deg`` at another line makes it agree."""
    first = next(r for r in checked.nodes if r.node_id == checked.first_divergent)
    at = f"`{first.op}` ({first.node_id}) at {first.source or 'an unknown line'}"
    said = f"by the {rule.value} rule check's first differing node is {at}"  # (check's ids: against eager its
    at_line = [c for c in candidates if c.source is not None and c.source == first.source]  # graph is both
    after = _checked(program, apply_changes(pol, candidates), args, transcendentals, against=ref.value, rule=rule)
    still = next((r for r in after.nodes if r.node_id == after.first_divergent), None)
    if still is None:  # every node agrees with eager on the policy's graph: the rest is that graph's (trial 91)
        return (f"{said}; with every candidate change applied, every node agrees with eager run on this policy's "
                "graph, yet the outputs differ from real eager's: the policy's decompositions compute some op eager "
                "runs as one kernel in pieces (a softmax, a loss, a normalisation), an implementation difference no "
                "placement decision changes: bit-for-bit agreement with real eager is out of reach here (blame without "
                "--rule bitwise judges by error instead)")
    ends = (f"but no set of changes makes every output agree: with every candidate change applied, `{still.op}` "
            f"({still.node_id}) at {still.source or 'an unknown line'} still differs")
    if at_line:
        there = _checked(program, apply_changes(pol, at_line), args, transcendentals, against=ref.value, rule=rule)
        if all(r.verdict is Verdict.OK for r in there.nodes if r.node_id == first.node_id):
            return (f"{said}; the {len(at_line)} candidate change(s) at that line make it agree (blame a function "
                    f"holding that line finds the fewest), {ends}")
    if still.node_id != first.node_id:  # (trial 91: an upstream rounding, at another line, made it agree)
        return f"{said}; changes at lines upstream of it make it agree (blame a function holding them finds the fewest), {ends}"
    return (f"{said}; no change this policy offers makes it agree: it differs in how the op is computed (its kernel's "
            "formula or summation order) or in how it reads its operands (one kept in float32 inside its kernel where "
            "eager reads it rounded, as Inductor does with an explicit cast unless emulate_precision_casts is set), "
            "not in where it rounds its own result")


#: Why no placement fixes outputs over the limit by value where no node's own error is (trial 94: an fp16
#: SimCLR's gradients, 93-357x; check called it conditioning, blame "an implementation difference").
_CONDITIONED = (": no node's own error is beyond the limit, so the outputs are over it by how the computation is "
                "conditioned in its formats (check --by-values says so), not by one op's rounding: compute them in a "
                "wider format, or in fewer rounded steps")


def _checked(program: Program, policy: Policy, inputs: tuple, transcendentals: str,
             against: str = "oracle", rule: Rule = Rule.SAME, by_values: bool = False) -> CheckResult:
    """`check` with every node examined: against the oracle, what blame must bring within the limit (`by_values`:
    every output by its values); against eager, the causes a search that found no fix names."""
    from roundoff.analyze import check

    return check(program, inputs, policy, against=against, nodes="all", transcendentals=transcendentals, rule=rule,
                 by_values=by_values)


#: Nodes of one op, line and pass from which they are a loop (or layers) that the search takes whole.
MIN_REPEATS = 3
#: Up to this many candidates ddmin searches node by node (about a hundred change sets at most) and the
#: fix is then widened to whole lines (`_whole_lines`); beyond, it searches whole lines (`_line_units`).
#: Node by node finds the smaller fix where it is affordable (a planted moment-norm MLP: 12 changes that
#: bring every output within the limit by value; by lines, 5 that blame's rule accepts but fp64 does not).
NODE_SEARCH_MAX = 64


def _whole_lines(found: Sequence[Change], candidates: Sequence[Change], ev: Evaluator) -> tuple[tuple[Change, ...], int]:
    """`found` with every candidate in the same `_line_units` unit (a user fixes a line of code, not the
    17th iteration of a loop the search happened to pick: trial 28). Kept only where the widened set still
    fixes the program (one evaluation); returns it and how many it adds (-1: evaluated, not kept)."""
    chosen, order = set(found), {c: i for i, c in enumerate(candidates)}
    widened = tuple(sorted((c for unit in _line_units(candidates, ev.base_plan.program) if chosen.intersection(unit)
                            for c in unit), key=order.__getitem__))
    if len(widened) == len(found):
        return tuple(found), 0
    return (widened, len(widened) - len(found)) if ev.fixes(widened) else (tuple(found), -1)


def _line_units(
    changes: Sequence[Change], program: Program, among: Sequence[Change] | None = None,
) -> list[tuple[Change, ...]]:
    """`changes` as the units the whole-line search chooses from, in order of first appearance: the
    changes of one kind on one op, source line and pass (forward and backward apart: a line's backward
    op of the same name computes something else) together where `among` (default: `changes`) holds at
    least `MIN_REPEATS` of them (a loop's iterations, the same line in each of several layers: a user
    fixes a line of code, not the 17th iteration the search happened to pick, trial 28), every other
    change alone. Trial 48: 2673 node changes of a 64-step recurrence, searched one by one, did not
    finish in 15 minutes."""
    forward = ancestors(program, {node_id(a) for a in program.output_args()[: program.num_forward_outputs]
                                  if isinstance(a, torch.fx.Node)})

    def key(c: Change) -> tuple:
        return c.source, c.op, c.kind, c.node_id in forward

    sizes = Counter(key(c) for c in (changes if among is None else among) if c.source is not None)
    units: dict[object, list[Change]] = {}
    for c in changes:
        k = key(c)
        units.setdefault(k if c.source is not None and sizes[k] >= MIN_REPEATS else c, []).append(c)
    return [tuple(unit) for unit in units.values()]


MAX_PRUNE_CHECKS = 8


def _no_worse(result: CheckResult, checked: CheckResult) -> bool:
    """No output `result` leaves over the limit by its values is farther over than in `checked`, the check with no
    change (trial 106: a CapsNet's trimmed fix passed check by the path rule with every gradient worse than
    unfixed eager's); an output NaN unfixed: any finite one is better."""
    before = {o.name: ratio if not math.isnan(ratio := o.rmse_result / o.rmse_reference) else math.inf
              for o in checked.outputs if o.rmse_reference > 0}
    return all(ratio <= before.get(name, math.inf) for name, ratio in over_limit_by_value(result))


def _lines_check_needs(
    program: Program, policy: Policy, inputs: tuple, found: Sequence[Change], checked: CheckResult, transcendentals: str,
    phase: Callable[[str], None] = lambda what: None,
) -> tuple[tuple[Change, ...], list[str], CheckResult | None]:
    """`found` without the source lines whose changes `check` (every node, against the oracle) passes
    without: the search's fix is 1-minimal under its own rule, which holds each output to its values,
    while check passes an output once no node on its path is flagged, so the search may keep changes
    check does not need (transformers' RoPE lines for an fp16 softmax). A line is dropped only where no
    output it leaves over the limit by its values ends farther over than with no change at all. Lines that
    none of check's causes is on are tried first, fewest changes first; at most `MAX_PRUNE_CHECKS` checks. Returns the
    changes kept, the lines dropped (with their change counts) and the check of the kept changes (None
    where no line was dropped)."""
    by_line: dict[str, list[Change]] = {}
    for c in found:
        by_line.setdefault(c.source or "an unknown line", []).append(c)
    if len(by_line) < 2:
        return tuple(found), [], None
    cause_lines = {r.source for r in checked.nodes if r.node_id in checked.culprits}
    order = sorted(by_line, key=lambda line: (line in cause_lines, len(by_line[line])))[:MAX_PRUNE_CHECKS]
    kept, dropped, passing = list(found), [], None
    for i, line in enumerate(order, 1):
        phase(f"checking which of the fix's lines check needs: check {i} of {len(order)} (without {line})")
        trial = [c for c in kept if c not in by_line[line]]
        if trial and not (result := _checked(program, apply_changes(policy, trial), inputs, transcendentals)).diverges \
                and _no_worse(result, checked):
            kept, passing = trial, result
            dropped.append(f"{line} ({len(by_line[line])})")
    return tuple(kept), dropped, passing


def _placeable_rounding(change: Change, base: Plan) -> bool:
    """Whether roundoff.compile can place `change`'s rounding: a kept rounding (``round_result=True``,
    ``compute=STORAGE``) under fusion-boundary rounding is written as integer RNE to bf16 and fp16 only
    (`roundoff.compiler.rewrite.keep_rounded`; an fp8 value's is not)."""
    o = change.override
    if not (o.round_result is True or o.compute is ComputePrecision.STORAGE):
        return True
    d = base.decisions.get(change.node_id)
    return base.policy.rounding is RoundingPoint.EVERY_OP or d is None or d.storage_dtype in (torch.bfloat16,
                                                                                                torch.float16)


def _output_indices(program: Program, checked: CheckResult, which: Callable[[OutputVerdict], bool]) -> set[int]:
    """Indices of the outputs of `checked` that `which` picks: those it fails (held to the limit), those
    fp64 holds only as noise (`OutputVerdict.noise_only`: no change is held to them)."""
    picked = {o.name for o in checked.outputs if which(o)}
    return {i for i, name in enumerate(program.output_labels()) if name in picked}


def overrides_of(result: BlameResult) -> dict:
    """The node overrides of `result`'s changes (to merge into a policy by hand)."""
    return merge_overrides({}, result.changes)
