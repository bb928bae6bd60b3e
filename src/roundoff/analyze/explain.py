"""Plain-words findings of a `CheckResult`, in the order a user should read them."""

from __future__ import annotations

import math

import torch
import torch.fx

from roundoff.analyze.cause_sentences import (
    amplification,
    below_normal,
    below_normal_sentence,
    cause_sentence,
    source_sentence,
)
from roundoff.analyze.culprits import (
    amplifier,
    amplifies_fp32_rounding,
    ancestors,
    reported_operands,
)
from roundoff.analyze.decision_sentences import (
    decision_sentence,
    flip_sentences,
    near_tie_sentences,
)
from roundoff.analyze.hazards import ACCUMULATION_HAZARDS
from roundoff.analyze.naming import node_at, report_at
from roundoff.analyze.origin_sentences import origin_sentence, overflowing
from roundoff.analyze.output_sentences import output_sentences
from roundoff.analyze.result import CheckResult, NodeReport
from roundoff.analyze.verdict import EXCESS_LIMIT, OVERFLOW_HAZARDS, Verdict
from roundoff.capture.program import (
    Program,
)
from roundoff.numerics import get_format
from roundoff.plan.model import Plan

#: How a finding that stands for more nodes of the same op and line than the one it names ends: the line
#: after it lists them (a test's failure message quotes the finding before it instead).
FLAGGED_AS_WELL = "are flagged as well; the nodes table has them."


def explain(result: CheckResult, plan: Plan, zero_operands: dict[str, list[str]] | None = None) -> tuple[str, ...]:
    """Sentences, causes first (what `blame` would change): selections that chose other indices than
    fp64, the nodes whose own error causes the failing outputs (with the NaN/inf origin); then those
    outputs, NaN fp64 makes too, the first divergence when no cause is named, hazards."""
    by_id = {r.node_id: r for r in result.nodes}
    lines: list[str] = []
    caused = []  # selections downstream of a named cause: its consequence, said after the causes
    for sentence, after_cause in flip_sentences(result, plan.program.node):
        (caused if after_cause else lines).append(sentence)
    origin = result.nan_origin if result.nan_origin in by_id else None
    overflow = {h.node_id for h in result.hazards if h.kind in OVERFLOW_HAZARDS}
    named = set()
    sources: dict[str, str] = {}  # amplifier id -> the source its sentence named
    zeros = frozenset(z for zs in (zero_operands or {}).values() for z in zs)
    rule = result.outputs[0].rule if result.outputs else "same"
    at_line: dict[tuple[str, str], str] = {}  # (op, source) -> the last culprit whose sentence said one

    def subject(nid: str) -> str:
        """The node a culprit's sentence is about: its amplifier where that works in subnormals, else itself."""
        amp = amplifier(result.culprits, plan.program, by_id, nid) if nid in by_id and not by_id[nid].overflow else None
        return amp.node_id if amp is not None and below_normal(amp) else nid

    def subject_line(nid: str) -> tuple[str, str] | None:
        r = by_id.get(subject(nid))
        return (r.op, r.source) if r is not None and r.source else None

    after: dict[str, int] = {}  # culprit -> where the sentence after its own goes
    for nid in result.culprits[:3]:
        if nid in named:  # an amplifier its source's sentence named, with its own error within the limit
            continue
        key = subject_line(nid)
        if nid in result.rounding_causes and nid in by_id:
            lines.append(_rounding_sentence(plan.program.node(nid), by_id[nid].dtype, result.outputs_by_values))
            named.add(nid)
            continue
        if nid not in by_id:  # a non-float node (a comparison) that decides a zero operand
            lines.append(decision_sentence(plan.program.node(nid), result, by_id))
        elif by_id[nid].overflow:  # the format's overflow first, not the rounding of its finite elements that a
            # reader amplifies (trial 63: an fp16 U-Net's attention exp under eager; the next line said "above")
            lines.append(origin_sentence(by_id[nid], by_id, plan, (zero_operands or {}).get(nid, []), named, overflow))
        elif (amp := amplifier(result.culprits, plan.program, by_id, nid)) is not None and amplification(
                by_id[nid], amp) < 2 and by_id[nid].own_excess <= EXCESS_LIMIT:
            continue  # a correctly rounded source of an error its amplifier barely grows: not a cause to name
        elif amp is not None and below_normal(amp):  # not an amplification: the format's subnormals
            if amp.node_id not in named:
                lines.append(below_normal_sentence(amp))
            named.add(amp.node_id)
        elif amp is not None and amplification(by_id[nid], amp) >= 2:
            lines.append(below_normal_sentence(by_id[nid]) + f" {report_at(amp)} amplifies that error about "
                         f"{amplification(by_id[nid], amp):.3g}x." if below_normal(by_id[nid])
                         else source_sentence(by_id[nid], amp, plan, by_id))
            sources.update({a: nid for a in result.culprits if a in by_id and by_id[a].amplifies_read is not None
                            and a != nid})
            if ((amp.own_excess <= EXCESS_LIMIT or amp.amplifies_read) and not (amp.local or amp.vs_oracle).new_nonfinite
                    and not amp.overflow):  # (an overflowing amplifier has its own sentence: trial 54's stored exp)
                named.add(amp.node_id)
        elif nid in sources and by_id[nid].amplifies_read is not None:  # amplifies a read another sentence named
            r = by_id[nid]
            lines.append(f"{report_at(r)} amplifies the rounding of what it reads in {r.working_dtype or r.dtype} "
                         f"as well: recomputed from it unrounded it is within {EXCESS_LIMIT:g}x its format's rounding.")
        elif nid == origin or by_id[nid].overflow or (  # a second overflow worded as the first, and what
                (by_id[nid].local or by_id[nid].vs_oracle).new_nonfinite  # reads one: not "makes inf itself"
                and overflowing(plan.program.node(nid), by_id, overflow)):
            lines.append(origin_sentence(by_id[nid], by_id, plan, (zero_operands or {}).get(nid, []), named, overflow))
        else:
            lines.append(cause_sentence(by_id[nid], plan, by_id, zeros, rule))
        named.add(nid)
        if key is not None:
            at_line[key], after[nid] = nid, len(lines)
    said = {subject(n) for n in named}
    for key, nid in sorted(at_line.items(), key=lambda kv: -after[kv[1]]):  # (from the last: indices hold)
        alike = [*(subject(c) for c in result.culprits if subject_line(c) == key),
                 *(r.node_id for r in result.nodes if (r.op, r.source) == key and r.verdict is not Verdict.OK)]
        if more := [c for c in dict.fromkeys(alike) if c not in said and c not in named]:  # (trial 85: four
            # diverging `mul`s of one line in the table, two named)
            shown = ", ".join(more[:4]) + (", ..." if len(more) > 4 else "")
            lines.insert(after[nid], f"{len(more)} more `{key[0]}` node(s) of {key[1]} ({shown}) {FLAGGED_AS_WELL}")
    if origin is not None and origin not in named:
        lines.append(origin_sentence(by_id[origin], by_id, plan, (zero_operands or {}).get(origin, []), named, overflow))
    lines.extend(caused)
    failing = {o.node_id for o in result.outputs if not o.passes}
    on_path = ancestors(plan.program, failing) if failing and any(
        h.kind in ACCUMULATION_HAZARDS for h in result.hazards) else set()
    accumulating = [h for h in result.hazards if h.kind in ACCUMULATION_HAZARDS and h.node_id in on_path]
    lines.extend(dict.fromkeys(h.message for h in accumulating))  # a cause as much as a node's own error
    lines.extend(output_sentences(result))
    lines.extend(near_tie_sentences(result, plan.program))
    lines.extend(conditioning_sentences(result, plan.program, by_id))
    if result.culprits and not result.diverges and not set(result.culprits) <= set(result.rounding_causes):
        # (a rounding cause's own sentence says why its outputs pass)
        own = [o for o in result.outputs if o.node_id in result.culprits]
        why = ("later ops dilute it, e.g. a tiny term added to a large one" if not own else
               f"output `{own[0].name}` is the value of {node_at(plan.program.node(own[0].node_id))}, and its reference, "
               f"RMSE {own[0].rmse_reference:.3g}, is fp64 correctly "  # (trial 97: "is that value" after another node)
               "rounded to its format or, where larger, the error its last op takes from its operands' rounding")
        lines.append(
            f"No output fails: the outputs the error named above reaches are within {EXCESS_LIMIT:g}x their reference "
            f"({why}), so the verdict is ok; it is listed as a place where the format loses accuracy."
        )
    broken = [o for o in result.outputs if o.reference_nonfinite]
    if broken:  # one sentence for all: a NaN eager run breaks every gradient alike
        clean = [o for o in broken if not o.nonfinite]
        names = ", ".join(f"`{o.name}`" for o in broken[:3]) + (f" and {len(broken) - 3} more" if len(broken) > 3 else "")
        lines.append(
            f"the reference ({result.against}) is NaN/inf where fp64 is finite at {len(broken)} output(s) ({names}; "
            f"{sum(o.reference_nonfinite for o in broken)} element(s)): {result.against} itself fails there"
            + (f", this policy does not at {'all' if len(clean) == len(broken) else len(clean)} of those outputs"
               if clean else "")
            + "; check each against fp64 with --against oracle."
            + (" This plan computes the training step as one graph, where torch.compile compiles two and the "
               "backward reads what the forward stored: the real step may be NaN/inf there too (trial 106: a GPT-J "
               "whose fp16 softmax underflowed); `roundoff observe --backward --partitioned` runs it."
               if clean and plan.program.backward and "inductor" in plan.policy.decompositions else "")
        )
    far = [o for o in result.outputs if result.against != "oracle" and not o.reference_nonfinite and not o.nonfinite
           and math.isfinite(o.rmse_reference) and o.rmse_reference > EXCESS_LIMIT * o.rmse_result]
    if far:  # (trial 104: a passing check against eager, whose loss was 1770x the compiled one's error)
        worst = max(far, key=lambda o: o.rmse_reference / max(o.rmse_result, 1e-300))
        lines.append(
            f"the reference ({result.against}) is over {EXCESS_LIMIT:g}x farther from fp64 than this policy at "
            f"{len(far)} output(s) (`{worst.name}`: RMSE {worst.rmse_reference:.3g} against this policy's "
            f"{worst.rmse_result:.3g}): matching it is no sign of accuracy there; check it against fp64 with "
            f"-p {result.against} --against oracle.")
    for o in result.outputs:
        if o.nan_in_fp64:
            lines.append(
                f"output `{o.name}`: {o.nan_in_fp64} element(s) are NaN in fp64 too (the program makes NaN there "
                "itself, e.g. 0/0 or NaN in its inputs): not a rounding divergence."
            )
    if not result.culprits and result.first_divergent is not None and result.first_divergent != origin:
        r = by_id[result.first_divergent]
        if r.reference_vs_oracle is not None:  # against a reference: how far each is from fp64 there
            lines.append(
                f"first divergence at {report_at(r)}: normwise relative error {r.vs_oracle.norm_rel:.2g} against fp64, "
                f"{result.against}'s {r.reference_vs_oracle.norm_rel:.2g}; its own error is within the limit, so the "
                f"difference comes from what it reads{_read_as(plan, r.node_id)}, and no node makes it alone beyond "
                "the limit."
            )
        else:
            lines.append(
                f"first divergence at {report_at(r)}: normwise relative error {r.vs_oracle.norm_rel:.2g} against fp64 "
                f"({r.vs_oracle.excess or 0:.3g} times its format's rounding)."
            )
    groups: dict[tuple[str, str | None], list[str]] = {}  # an op in a loop repeats its hazard: once per line
    for h in result.hazards:
        if h in accumulating:
            continue  # said with the causes
        if h.kind == "fp16-overflow" and named and (named & ({h.node_id} | ancestors(plan.program, {h.node_id}))):
            continue  # the named cause's overflow and its consequences downstream: said by the cause's sentence
        groups.setdefault((h.kind, h.source), []).append(h.message)
    lines.extend(ms[0] + (f" (The same at {len(ms) - 1} more node(s) of this line.)" if len(ms) > 1 else "")
                 for ms in groups.values())
    return tuple(lines)


def _read_as(plan: Plan, node_id: str) -> str:
    """", which this policy rounds to bfloat16 first (...)" where the plan reads `node_id`'s operands in
    another format than they are stored in (an autocast cast: `NodeDecision.input_format`), else "" (trial
    78: thunder-autocast's fp16 matmuls read in bf16, the divergence put down to "what it reads" alone)."""
    d = plan.decisions.get(node_id)
    fmt = d.input_format if d is not None else None
    if fmt is None:
        return ""
    stored = sorted({str(s).removeprefix("torch.") for p in plan.program.node(node_id).all_input_nodes
                     if isinstance(s := getattr(p.meta.get("val"), "dtype", None), torch.dtype) and s.is_floating_point
                     and s != get_format(fmt).storage_dtype})
    return (f", which this policy reads rounded to {fmt} (its {'/'.join(stored) + ' ' if stored else ''}operands "
            f"cast to {fmt} first, as the policy's autocast casts a matmul's inputs)")


def _rounding_sentence(n: torch.fx.Node, dtype: str, by_values: bool = False) -> str:
    """A 16-bit value whose rounding alone takes outputs beyond the limit (`CheckResult.rounding_causes`);
    `by_values`: the outputs were judged by their values (they fail), not by the path rule (they pass)."""
    verdict = ("so no node is flagged, and those outputs fail by their values (--by-values)" if by_values else
               "so no node is flagged and those outputs pass by the path rule (--by-values fails them)")
    return (f"{node_at(n)} is rounded to {dtype}, and fp64 run again with only that rounding moves outputs "
            f"beyond {EXCESS_LIMIT:g}x their reference: the ops after it amplify it, none beyond {EXCESS_LIMIT:g}x "
            f"alone, {verdict}, but this one rounding makes them that far off; keep it in fp32, or compute what "
            "reads it from values it does not cancel against.")


def conditioning_sentences(result: CheckResult, program: Program, by_id: dict[str, NodeReport]) -> list[str]:
    """Against the oracle, one sentence for the passing outputs over the limit by value whose path has a
    node amplifying fp32's own rounding (`culprits.amplifies_fp32_rounding`), naming the first such node."""
    over = [o for o in result.outputs if result.against == "oracle" and o.passes and not o.noise_only
            and o.rmse_reference and o.rmse_result > EXCESS_LIMIT * o.rmse_reference]
    amps = [r for r in result.nodes if amplifies_fp32_rounding(program, r, by_id)] if over else []
    if not amps:
        return []
    first = None
    reached = []
    for o in over:
        path = ancestors(program, {o.node_id})
        hit = next((r for r in amps if r.node_id in path), None)
        if hit is not None:
            first = first or hit
            reached.append(o)
    if first is None:
        return []
    o = reached[0]
    names = f"`{o.name}`" + (f" and {len(reached) - 1} more output(s)" if len(reached) > 1 else "")
    reads = max(u.vs_oracle.norm_rel for u in reported_operands(program.node(first.node_id), by_id))
    return [(
        f"{names} pass though {o.rmse_result / o.rmse_reference:.3g}x their reference: {report_at(first)} amplifies the "
        f"fp32 rounding of what it reads {first.vs_oracle.norm_rel / reads:.3g}x (normwise relative error "
        f"{reads:.2g} in, {first.vs_oracle.norm_rel:.2g} out; a `cos` or `sin` of a large phase, an `exp` of large "
        "logits): the formula's conditioning in fp32, which no format short of fp64 improves, not a low-precision "
        "defect. Where that accuracy matters, compute what it reads in fp64 or reduce it first (a phase modulo 2*pi).")]
