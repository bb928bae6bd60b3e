"""Analysis results -> report documents (the schema of ``roundoff.report.json_report``).

This is the one place that knows the field names of ``roundoff.analyze.CheckResult`` and
``roundoff.blame.BlameResult``; the renderers read only the document. Node metrics are the policy
run against the fp64 oracle (`vs_oracle`); `local_bits` is the max bits of the node recomputed from
oracle inputs, `inherited_bits` analyze's mean bits not explained by the local error.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from roundoff.analyze.metrics import Metrics
from roundoff.analyze.result import CheckResult, NodeReport
from roundoff.analyze.verdict import EXCESS_LIMIT
from roundoff.plan.model import Plan
from roundoff.report.json_report import (
    make_document,
    make_run,
    metrics,
    node_ref,
    output_entry,
)


def _metrics(n: NodeReport) -> dict[str, Any]:
    m: Metrics = n.vs_oracle
    return metrics(
        max_ulp=m.max_ulp,
        bits=m.max_bits,
        mean_bits=m.mean_bits,
        max_abs=m.max_abs,
        max_rel=m.max_rel,
        mismatch=m.mismatch_fraction,
        sqnr_db=m.sqnr_db,
        nan=m.nan,
        inf=m.inf,
        local_bits=None if n.local is None else n.local.max_bits,
        inherited_bits=n.inherited_bits,
        norm_rel=m.norm_rel,
        excess=m.excess,
        local_excess=n.own_excess,
        numel=m.numel,
        overflow=n.overflow,
    )


def _ref(result: CheckResult, node_id: str | None, explain: bool = False) -> dict | None:
    if node_id is None:
        return None
    try:
        n = result.node(node_id)
        op, source = n.op, n.source
    except KeyError:
        op, source = "?", None
    explanation = None
    if explain:
        tag = re.compile(rf"\({re.escape(node_id)}[ )]")
        lead = re.compile(rf"^`[^`]*` \({re.escape(node_id)}[ )]")  # a sentence about this node first
        kind = re.compile(r"\b(NaN|inf)\b")
        es = result.explanations
        hits = [e for e in es if lead.search(e) and kind.search(e)] + [e for e in es if tag.search(e) and kind.search(e)]
        hits += [e for e in es if tag.search(e)]
        explanation = hits[0] if hits else None
    return node_ref(node_id, op, source, explanation)


def _override_text(override: Any) -> str:
    """``"contract_fma=False"``: the fields an OpOverride sets, as TOML-ish assignments."""
    parts = []
    for key, value in vars(override).items():
        if value is not None:
            parts.append(f"{key}={getattr(value, 'value', value)}")
    return ", ".join(parts)


def blame_entry(blame: Any) -> dict[str, Any] | None:
    """The schema's blame object from a ``roundoff.blame.BlameResult`` (None passes through)."""
    if blame is None:
        return None
    changes = [
        {
            "node": c.node_id,
            "op": c.op,
            "change": _override_text(c.override),
            "kind": c.kind.value,
            "source": c.source,
            "explanation": e,
        }
        for c, e in zip(blame.changes, blame.explanations, strict=True)
    ]
    return {
        "status": blame.status.value,
        "search": blame.search,
        "candidates": blame.candidates,
        "changes": changes,
        "evaluations": int(blame.evaluations),
        "overrides_toml": blame.policy_toml or "",
        "notes": list(blame.notes),
        "over_limit": [{"output": name, "x_reference": ratio} for name, ratio in blame.over_limit],
    }


def run_from_check(
    result: CheckResult, plan: Plan | None = None, trace: str | None = None, blame: Any = None
) -> dict[str, Any]:
    """One run entry from a CheckResult, with kernel groups from `plan` and its `trace` text."""
    group_of = {} if plan is None else {k: d.group for k, d in plan.decisions.items()}
    nodes = [
        {
            "id": n.node_id,
            "op": n.op,
            "op_class": n.op_class,
            "source": n.source,
            "module": n.module,
            "group": group_of.get(n.node_id),
            "verdict": str(getattr(n.verdict, "value", n.verdict)),
            "metrics": _metrics(n),
        }
        for n in result.nodes
    ]
    outputs = [
        output_entry(
            o.name, "ok" if o.passes else "diverges", o.rmse_result, o.rmse_reference,
            EXCESS_LIMIT if result.against == "oracle" and o.rule == "same" else None, o.below_range,
            o.noise_only, o.nonfinite, o.real_eager_nonfinite, bool(o.near_ties),
        )
        for o in result.outputs
    ]
    groups = (
        []
        if plan is None
        else [{"id": g.id, "kind": g.kind, "nodes": list(g.node_ids)} for g in plan.groups]
    )
    notes = list(result.notes)
    if result.unmodeled and not any(n.startswith("unmodeled ops") for n in notes):  # the plan's says it
        notes.append(
            f"unmodeled ops (their numerics are not modelled by the policy): "
            f"{', '.join(result.unmodeled)}"
        )
    return make_run(
        result.policy,
        outputs,
        nodes,
        rule=result.outputs[0].rule if result.outputs else "same",
        outputs_by_values=result.outputs_by_values,
        causes=[_ref(result, c, explain=True)  # selections that chose otherwise first, as the findings name them
                for c in dict.fromkeys([*(nid for nid, _, _ in result.selection_flips), *result.culprits])],
        first_divergent=_ref(result, result.first_divergent),
        nan_origin=_ref(result, result.nan_origin, explain=True),
        hazards=[
            {"kind": h.kind, "node": h.node_id, "source": h.source, "message": h.message}
            for h in result.hazards
        ],
        groups=groups,
        explanations=list(result.explanations),
        notes=notes,
        trace=trace,
        blame=blame_entry(blame),
    )


def document_from_checks(
    target: str, against: str, runs: list[dict[str, Any]], specializations: Sequence[Any] = ()
) -> dict[str, Any]:
    """The whole document for `target` from run entries made by `run_from_check`;
    `specializations` are the program's (``Program.specializations``), reported as notes, once per
    line (a loop or a module called twice breaks the graph at the same line each time)."""
    return make_document(target, against, runs, *break_entries(specializations))


def break_entries(specializations: Sequence[Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """The document's entries for a program's graph breaks (``Program.specializations``): each break's
    sentence once per line and kind, with how many more the line made, and the breaks counted by line and kind
    (``{"source", "kind", "count"}``)."""
    counts = Counter(s.describe() for s in specializations)
    by_line = Counter((s.source, s.kind.value) for s in specializations)
    return ([text + (f" (the same at {n - 1} more break(s) of this line: a loop or a module called again)" if n > 1 else "")
             for text, n in counts.items()],
            [{"source": source, "kind": kind, "count": n} for (source, kind), n in by_line.items()])
