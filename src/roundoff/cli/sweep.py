"""`roundoff sweep`: error against fp64 per layer and policy, over several zoo workloads.

A "layer" is one source line of the workload (``blocks.py:77``): the nodes it made, in graph order.
Each cell is the largest, over that line's nodes, of the mean bits of error against the fp64 oracle
(mean over elements of log2(1 + ulp) in the node's storage format; the max over elements is
dominated by values near 0 and says little per layer), inf where a node goes NaN/inf while fp64
stays finite. The last row per workload is the output RMSE against fp64, the figure PyTorch's
accuracy rule uses.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from roundoff.cli.checking import check_document
from roundoff.cli.loading import load_target
from roundoff.policy.model import Policy
from roundoff.report.json_report import jsonable, number
from roundoff.report.terminal import progress_bar

DEFAULT_WORKLOADS = ("zoo:llama-block", "zoo:mixtral-block")
DEFAULT_POLICIES = ("eager", "xla-2.9", "xla-2.10", "xla-neuron", "inductor-gpu")
OUTPUT_ROW = "output rmse"


@dataclass(frozen=True)
class SweepRow:
    """One layer of one workload: `values[policy]` is mean bits vs fp64 (RMSE on the output row)."""

    workload: str
    layer: str
    values: dict[str, float | None]


def _layer_bits(run: dict[str, Any]) -> dict[str, float]:
    """Mean bits of error per source line (worst node), in graph order of first appearance."""
    layers: dict[str, float] = {}
    for node in run["nodes"]:
        bits = number(node["metrics"]["mean_bits"])
        if node["verdict"] == "nonfinite":
            bits = math.inf
        if bits is None:
            continue
        key = node["source"] or "(no source line)"
        layers[key] = max(layers.get(key, 0.0), bits)
    return layers


def sweep_rows(document: dict[str, Any]) -> list[SweepRow]:
    """The rows of one workload's document (one run per policy)."""
    per_policy = {run["policy"]: _layer_bits(run) for run in document["runs"]}
    order: list[str] = []
    for layers in per_policy.values():
        order += [k for k in layers if k not in order]
    rows = [
        SweepRow(document["target"], layer, {p: v.get(layer) for p, v in per_policy.items()})
        for layer in order
    ]
    rmse = {
        run["policy"]: max((number(o["rmse"]) or 0.0) for o in run["outputs"])
        for run in document["runs"]
    }
    rows.append(SweepRow(document["target"], OUTPUT_ROW, rmse))
    return rows


def run_sweep(
    workloads: Sequence[str], policies: Sequence[Policy], backward: bool, progress_console: Console
) -> list[SweepRow]:
    """Check every workload under every policy against the fp64 oracle; all rows."""
    rows: list[SweepRow] = []
    with progress_bar(progress_console) as progress:
        task = progress.add_task("sweep", total=len(workloads))
        for target in workloads:
            progress.update(task, description=f"sweep {target}")
            loaded = load_target(target, None, backward)
            rows += sweep_rows(check_document(loaded, policies, "oracle"))
            progress.update(task, advance=1)
    return rows


def to_csv(rows: Sequence[SweepRow], policies: Sequence[str]) -> str:
    """CSV: workload, layer, one column per policy (inf/nan spelled out, empty: not measured)."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["workload", "layer", *policies])
    for r in rows:
        cells = ["" if r.values.get(p) is None else repr(float(r.values[p])) for p in policies]
        writer.writerow([r.workload, r.layer, *cells])
    return buf.getvalue()


def to_json(rows: Sequence[SweepRow], policies: Sequence[str]) -> str:
    """JSON: {"policies": [...], "unit": ..., "rows": [{"workload", "layer", "values"}]}."""
    doc = {
        "policies": list(policies),
        "unit": "mean bits of error vs fp64 (worst node of the layer); output row: RMSE vs fp64",
        "rows": [
            {
                "workload": r.workload,
                "layer": r.layer,
                "values": {p: jsonable(r.values.get(p)) for p in policies},
            }
            for r in rows
        ],
    }
    return json.dumps(doc, indent=2, allow_nan=False)
