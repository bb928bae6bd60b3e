"""The roundoff check report as JSON: a documented, versioned schema (`SCHEMA`, `SCHEMA_VERSION`).

A report document is a plain dict; the terminal and HTML renderers read the same document, so what a
machine sees through ``--json`` is exactly what a person sees. Shape (version 1)::

    {
      "schema_version": 1,              # bumped on any incompatible change
      "roundoff_version": "0.1.0",
      "target": "zoo:fma-cancel",       # what was checked (SCRIPT:FUNCTION or zoo:NAME)
      "against": "eager",               # reference: "eager", "oracle" (fp64) or a policy name
      "legend": str,                    # what "reference" means in this mode (optional)
      "verdict": "diverges",            # worst verdict over all runs: "ok" | "diverges"
      "specializations": [str],         # graph breaks checked across (optional): eager's value
                                        # is used there, so the verdict holds for these inputs
      "graph_breaks": [{"source", "kind", "count"}],  # the same breaks by line and kind (optional)
      "runs": [{                        # one per --policy
        "policy": "inductor-gpu",
        "rule": "same",                 # same | allclose | bitwise (optional)
        "outputs_by_values": false,     # every output judged by its values against the oracle,
                                        # whatever its path (check --by-values; optional)
        "causes": [node],               # findings ranked by cause (optional; see analyze.check)
        "verdict": "ok" | "diverges",
        "outputs": [{"name", "verdict", "rmse", "ref_rmse", "multiplier", "below_range", "noise_only",
                     "nonfinite", "x_reference", "real_eager_nonfinite", "near_tie"}],
                                        # PyTorch's rule (torch._dynamo.utils.same): RMSE
                                        # of this run vs fp64 <= multiplier * RMSE of the
                                        # reference vs fp64 (multiplier null: not recorded);
                                        # below_range (optional): elements whose fp64 value
                                        # rounds to 0 in the output's dtype, counted where
                                        # the output is at least half its norm off fp64;
                                        # noise_only (optional): fp64 holds it as noise only
                                        # (0 by the model's structure); nonfinite (optional):
                                        # its elements NaN/inf where fp64 is finite;
                                        # x_reference: rmse / ref_rmse (null where either
                                        # is missing; the terminal's "x reference");
                                        # real_eager_nonfinite (optional): against an eager
                                        # reference emulated on the policy's graph, real
                                        # eager's NaN/inf elements where more than the
                                        # reference's (ref_rmse is then not real eager's);
                                        # near_tie (optional): passes with fp64's decisions at
                                        # comparisons decided otherwise near a tie
        "first_divergent": node | null, # node: {"id", "op", "source"}
        "nan_origin": node | null,      # first node making NaN/Inf from finite inputs
        "nodes": [{"id", "op", "op_class", "source", "group",
                   "module",            # (optional) the module whose call made it: "features.3.conv.4"
                   "verdict",           # "ok" | "diverges" | "nonfinite" (NaN/inf, fp64 finite)
                   "metrics": {"max_ulp", "bits", "mean_bits", "max_abs", "max_rel",
                               "mismatch", "sqnr_db", "nan", "inf", "local_bits",
                               "inherited_bits", "norm_rel", "excess", "local_excess", "numel",
                               "overflow"}}],
                                        # metrics of the policy run against the fp64 oracle
        "hazards": [{"kind", "node", "source", "message"}],
        "groups": [{"id", "kind", "nodes": [ids]}],      # the plan's kernels
        "explanations": [str],          # plain-words findings ("`sub` at model.py:12: ...")
        "notes": [str],                 # e.g. "reductions are not bit-exact: bounded against fp64"
        "trace": str | null,            # the plan as a runnable-Python trace
        "blame": null | {"changes": [{"node", "change", "source", "explanation"}],
                         "evaluations": int,   # distinct change sets run by the search
                         "overrides_toml": str,  # a whole policy --policy accepts
                         "status": "fixed" | "already_ok" | "no_fix", "search": str,
                         "candidates": int, "notes": [str],   # (these four optional)
                         # outputs the fix leaves over the limit by value, passed by check's path rule
                         "over_limit": [{"output": str, "x_reference": float}]}  # (optional)
      }]
    }

Numbers: every metric is a JSON number or null (not measured); non-finite values, which JSON
cannot hold, are the strings ``"inf"``, ``"-inf"`` and ``"nan"`` (see `jsonable`). Errors are in
the metric's own unit: `max_ulp` in units in the last place of the node's storage format, `bits`
as log2(1 + max ulp), `mean_bits` as the mean over elements of log2(1 + ulp), `sqnr_db` in
decibels, `mismatch` as a fraction of elements in [0, 1],
`nan`/`inf` as element counts, `overflow` the elements +-inf where fp64 is finite but beyond the
node's format (in its value, or where a kernel keeping it wider stores it: then `inf` can be 0). `local_bits` is the node's own error (max bits when recomputed under
the policy from oracle inputs); `inherited_bits` the mean bits of error not explained by it.
`norm_rel` is the normwise relative error ||x - x64|| / ||x64||; `excess` (`local_excess`) the
node's (local) error over that of fp64 correctly rounded to its format (see roundoff.analyze.verdict).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from roundoff.report.legend import legend

SCHEMA_VERSION = 1

_NUM = {
    "anyOf": [
        {"type": "number"},
        {"type": "null"},
        {"enum": ["inf", "-inf", "nan"]},
    ]
}
_NODE_REF = {
    "anyOf": [
        {"type": "null"},
        {
            "type": "object",
            "required": ["id", "op", "source"],
            "properties": {
                "id": {"type": "string"},
                "op": {"type": "string"},
                "source": {"type": ["string", "null"]},
                "explanation": {"type": ["string", "null"]},
            },
        },
    ]
}
_VERDICT = {"enum": ["ok", "diverges"]}
_NODE_VERDICT = {"enum": ["ok", "diverges", "nonfinite"]}
METRIC_KEYS = (
    "max_ulp",
    "bits",
    "mean_bits",
    "max_abs",
    "max_rel",
    "mismatch",
    "sqnr_db",
    "nan",
    "inf",
    "local_bits",
    "inherited_bits",
    "norm_rel",
    "excess",
    "local_excess",
    "numel",
    "overflow",
)

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "roundoff check report",
    "type": "object",
    "required": ["schema", "schema_version", "roundoff_version", "target", "against", "verdict", "runs"],
    "additionalProperties": False,
    "properties": {
        "schema": {"const": "roundoff.check"},
        "schema_version": {"const": SCHEMA_VERSION},
        "roundoff_version": {"type": "string"},
        "target": {"type": "string"},
        "against": {"type": "string"},
        "legend": {"type": "string"},
        "verdict": _VERDICT,
        "specializations": {"type": "array", "items": {"type": "string"}},
        "graph_breaks": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["source", "kind", "count"],
                "additionalProperties": False,
                "properties": {"source": {"type": ["string", "null"]}, "kind": {"type": "string"},
                               "count": {"type": "integer", "minimum": 1}},
            },
        },
        "runs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "policy",
                    "verdict",
                    "outputs",
                    "first_divergent",
                    "nan_origin",
                    "nodes",
                    "hazards",
                    "groups",
                    "explanations",
                    "notes",
                    "trace",
                    "blame",
                ],
                "additionalProperties": False,
                "properties": {
                    "policy": {"type": "string"},
                    "rule": {"enum": ["same", "allclose", "bitwise"]},
                    "outputs_by_values": {"type": "boolean"},
                    "causes": {"type": "array", "items": _NODE_REF},
                    "verdict": _VERDICT,
                    "outputs": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["name", "verdict", "rmse", "ref_rmse", "multiplier"],
                            "properties": {
                                "name": {"type": "string"},
                                "verdict": _VERDICT,
                                "rmse": _NUM,
                                "ref_rmse": _NUM,
                                "multiplier": _NUM,
                                "below_range": {"type": "integer", "minimum": 0},
                                "noise_only": {"type": "boolean"},
                                "nonfinite": {"type": "integer", "minimum": 0},
                                "x_reference": _NUM,
                                "real_eager_nonfinite": {"type": "integer", "minimum": 1},
                                "near_tie": {"type": "boolean"},
                            },
                        },
                    },
                    "first_divergent": _NODE_REF,
                    "nan_origin": _NODE_REF,
                    "nodes": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": [
                                "id",
                                "op",
                                "op_class",
                                "source",
                                "group",
                                "verdict",
                                "metrics",
                            ],
                            "properties": {
                                "id": {"type": "string"},
                                "op": {"type": "string"},
                                "op_class": {"type": ["string", "null"]},
                                "source": {"type": ["string", "null"]},
                                "module": {"type": ["string", "null"]},
                                "group": {"type": ["integer", "null"]},
                                "verdict": _NODE_VERDICT,
                                "metrics": {
                                    "type": "object",
                                    "required": list(METRIC_KEYS),
                                    "additionalProperties": False,
                                    "properties": {k: _NUM for k in METRIC_KEYS},
                                },
                            },
                        },
                    },
                    "hazards": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["kind", "node", "source", "message"],
                            "properties": {
                                "kind": {"type": "string"},
                                "node": {"type": ["string", "null"]},
                                "source": {"type": ["string", "null"]},
                                "message": {"type": "string"},
                            },
                        },
                    },
                    "groups": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["id", "kind", "nodes"],
                            "properties": {
                                "id": {"type": "integer"},
                                "kind": {"type": "string"},
                                "nodes": {"type": "array", "items": {"type": "string"}},
                            },
                        },
                    },
                    "explanations": {"type": "array", "items": {"type": "string"}},
                    "notes": {"type": "array", "items": {"type": "string"}},
                    "trace": {"type": ["string", "null"]},
                    "blame": {
                        "anyOf": [
                            {"type": "null"},
                            {
                                "type": "object",
                                "required": ["changes", "evaluations", "overrides_toml"],
                                "properties": {
                                    "changes": {"type": "array", "items": {"type": "object"}},
                                    "evaluations": {"type": "integer"},
                                    "overrides_toml": {"type": "string"},
                                    "status": {"enum": ["fixed", "already_ok", "no_fix"]},
                                    "search": {"type": "string"},
                                    "candidates": {"type": "integer"},
                                    "notes": {"type": "array", "items": {"type": "string"}},
                                    "over_limit": {"type": "array", "items": {"type": "object"}},
                                },
                            },
                        ]
                    },
                },
            },
        },
    },
}


def jsonable(x: float | None) -> float | int | str | None:
    """`x` as a JSON value: numbers unchanged, None as null, inf/-inf/NaN as strings."""
    if x is None or isinstance(x, bool):
        return None if x is None else int(x)
    if isinstance(x, int):
        return x
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def number(x: float | str | None) -> float | None:
    """Inverse of `jsonable` for renderers: a float (inf/nan included) or None."""
    if x is None:
        return None
    return float(x)


def error_ratio(value: Any, reference: Any) -> float | None:
    """`value / reference` for two report numbers: None where either is missing or NaN, 0 for 0/0 and
    inf for x/0 (an error where the reference has none)."""
    v, r = number(value), number(reference)
    if v is None or r is None or math.isnan(v) or math.isnan(r):
        return None
    return v / r if r > 0 else (0.0 if v == 0 else math.inf)


def worst_verdict(verdicts: list[str]) -> str:
    """``"diverges"`` if any verdict diverges, else ``"ok"`` (an empty list is ``"ok"``)."""
    return "diverges" if "diverges" in verdicts else "ok"


def dumps(document: dict[str, Any]) -> str:
    """The document as strict JSON (``allow_nan=False``: a stray float inf raises, never leaks)."""
    return json.dumps(document, indent=2, allow_nan=False, sort_keys=False)


def metrics(**values: float | None) -> dict[str, Any]:
    """A node's metrics with every key of the schema (missing ones null), values made jsonable."""
    unknown = set(values) - set(METRIC_KEYS)
    if unknown:
        raise ValueError(f"unknown metric(s) {sorted(unknown)}; known: {', '.join(METRIC_KEYS)}")
    return {k: jsonable(values.get(k)) for k in METRIC_KEYS}


def output_entry(
    name: str, verdict: str, rmse: float | None, ref_rmse: float | None, multiplier: float | None,
    below_range: int = 0, noise_only: bool = False, nonfinite: int = 0, real_eager_nonfinite: int | None = None,
    near_tie: bool = False,
) -> dict[str, Any]:
    """One output's verdict row (PyTorch's rule: rmse <= multiplier * ref_rmse, both vs fp64);
    `below_range`: its elements whose fp64 value rounds to 0 in its dtype, where that loses most of it;
    `nonfinite`: its elements NaN/inf where fp64 is finite; `real_eager_nonfinite`: real eager's, where
    more than an emulated eager reference's (the key only then); `near_tie`: it passes with fp64's decisions
    at comparisons decided otherwise near a tie (`roundoff.analyze.decisions`; the key only then)."""
    entry = {
        "name": name,
        "verdict": verdict,
        "rmse": jsonable(rmse),
        "ref_rmse": jsonable(ref_rmse),
        "multiplier": jsonable(multiplier),
        "below_range": below_range,
        "noise_only": noise_only,
        "nonfinite": nonfinite,
        "x_reference": jsonable(error_ratio(rmse, ref_rmse)),
    }
    entry |= {"near_tie": True} if near_tie else {}
    return entry | {"real_eager_nonfinite": real_eager_nonfinite} if real_eager_nonfinite else entry


def node_ref(node_id: str, op: str, source: str | None, explanation: str | None = None) -> dict:
    """A reference to one node (first divergent node, NaN/Inf origin)."""
    return {"id": node_id, "op": op, "source": source, "explanation": explanation}


def node_ref_text(ref: dict[str, Any] | None) -> str:
    """A node reference in words: ``"sub (n4) at model.py:12"``, or ``"none"``."""
    if ref is None:
        return "none"
    where = f" at {ref['source']}" if ref.get("source") else ""
    return f"{ref['op']} ({ref['id']}){where}"


def make_run(policy: str, outputs: list[dict], nodes: list[dict], **rest: Any) -> dict[str, Any]:
    """One run's entry; the run verdict is the worst output verdict. `rest` fills optional keys."""
    run: dict[str, Any] = {
        "policy": policy,
        "rule": "same",
        "outputs_by_values": False,
        "causes": [],
        "verdict": worst_verdict([o["verdict"] for o in outputs]),
        "outputs": outputs,
        "first_divergent": None,
        "nan_origin": None,
        "nodes": nodes,
        "hazards": [],
        "groups": [],
        "explanations": [],
        "notes": [],
        "trace": None,
        "blame": None,
    }
    unknown = set(rest) - set(run)
    if unknown:
        raise ValueError(f"unknown run key(s) {sorted(unknown)}; known: {', '.join(run)}")
    run.update(rest)
    return run


def held_for_these_inputs(specializations: Sequence[str]) -> list[str]:
    """The notes of a program's graph breaks (``Specialization.describe()``), each stated as holding for these inputs."""
    return [f"{text}; the verdict holds for these inputs only" for text in specializations]


def make_document(
    target: str, against: str, runs: list[dict[str, Any]], specializations: Sequence[str] = (),
    graph_breaks: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """A version-1 report document; its verdict is the worst over `runs`. `specializations` are the
    program's graph breaks (``Specialization.describe()``), stated as holding for these inputs;
    `graph_breaks` the same counted by line and kind (``{"source", "kind", "count"}``)."""
    from roundoff import __version__

    rule = next((r["rule"] for r in runs if r.get("rule")), "same")
    by_values = any(r.get("outputs_by_values") for r in runs)
    document = {
        "schema": "roundoff.check",
        "schema_version": SCHEMA_VERSION,
        "roundoff_version": __version__,
        "target": target,
        "against": against,
        "legend": legend(against, rule, by_values),
        "verdict": worst_verdict([r["verdict"] for r in runs]),
        "runs": runs,
    }
    if specializations:
        document["specializations"] = held_for_these_inputs(specializations)
    if graph_breaks:
        document["graph_breaks"] = [dict(b) for b in graph_breaks]
    return document
