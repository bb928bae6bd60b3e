"""`roundoff sweep`: error against fp64 per layer and policy, over several targets (zoo workloads
or the user's own ``SCRIPT:FUNCTION``).

A "layer" is one source line of the workload (``blocks.py:77``): the nodes it made, in graph order.
Each cell is the lowest SQNR against the fp64 oracle (dB, higher is closer to fp64) over that line's
nodes: a format-independent measure, so an fp32 node holding bf16-rounded values and a bf16 node
compare on one scale (ULP counts would not: one bf16 step is 2^16 fp32 ulps). ``inf`` means the
layer matches fp64 exactly; ``-inf`` means a node went NaN/inf where fp64 stays finite. A node whose
SQNR is finite but above `FP64_RESOLUTION_DB` is left out: fp64's own rounding of its signal is larger
than the error measured, so the figure says nothing (trial 82: 846 dB at an additive ``finfo.min``
attention mask, whose -3.4e38 entries are the signal); a layer of such nodes only has no cell. The last
row per workload is the output RMSE against fp64, the figure PyTorch's accuracy rule uses.
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
from roundoff.cli.outputs import progress_display
from roundoff.policy.model import Policy
from roundoff.report.json_report import jsonable, number

DEFAULT_WORKLOADS = ("zoo:llama-block", "zoo:mixtral-block")
# The XLA `mul` debate: 2.9 (opmath mul) vs 2.10 (native bf16 mul) as lowered, and the same two
# with XLA keeping fp32 inside fusions (xla-neuron = opmath mul, xla-excess-precision = bf16 mul).
DEFAULT_POLICIES = (
    "eager",
    "xla-2.9",
    "xla-2.10",
    "xla-neuron",
    "xla-excess-precision",
    "inductor-gpu",
)
OUTPUT_ROW = "output rmse"
#: The SQNR of fp64's own rounding: 20 log10(2**53) dB. A node measured above it has an error below what
#: fp64 resolves of its signal (its signal is dominated by a few huge values, such as a mask's finfo.min).
FP64_RESOLUTION_DB = 20 * math.log10(2.0**53)


@dataclass(frozen=True)
class SweepRow:
    """One layer of one workload: `values[policy]` is the lowest SQNR vs fp64 in dB (RMSE on the
    output row)."""

    workload: str
    layer: str
    values: dict[str, float | None]


def _layer_sqnr(run: dict[str, Any]) -> dict[str, float | None]:
    """Lowest SQNR (dB) vs fp64 per source line, in graph order of first appearance (None: every node
    of the line measures beyond `FP64_RESOLUTION_DB`)."""
    layers: dict[str, float | None] = {}
    for node in run["nodes"]:
        sqnr = number(node["metrics"]["sqnr_db"])
        if node["verdict"] == "nonfinite":
            sqnr = -math.inf
        if sqnr is None:
            continue
        key = node["source"] or "(no source line)"
        if FP64_RESOLUTION_DB < sqnr < math.inf:
            layers.setdefault(key, None)
            continue
        held = layers.get(key)
        layers[key] = sqnr if held is None else min(held, sqnr)
    return layers


def sweep_rows(document: dict[str, Any]) -> list[SweepRow]:
    """The rows of one workload's document (one run per policy)."""
    per_policy = {run["policy"]: _layer_sqnr(run) for run in document["runs"]}
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
    workloads: Sequence[str],
    policies: Sequence[Policy],
    backward: bool,
    progress_console: Console,
    inputs_ref: str | None = None,
) -> list[SweepRow]:
    """Check every target (``zoo:NAME`` or ``SCRIPT:FUNCTION``, whose inputs come from
    `inputs_ref` or ``FUNCTION_inputs``) under every policy against the fp64 oracle; all rows."""
    rows: list[SweepRow] = []
    with progress_display(progress_console) as progress:
        task = progress.add_task("sweep", total=len(workloads))
        for target in workloads:
            progress.update(task, description=f"sweep {target}")
            ref = None if target.startswith("zoo:") else inputs_ref
            loaded = load_target(target, ref, backward)
            rows += sweep_rows(check_document(loaded, policies, "oracle", nodes="all"))  # per layer
            progress.update(task, advance=1)
    return rows


def to_csv(rows: Sequence[SweepRow], policies: Sequence[str]) -> str:
    """CSV: workload, layer, the unit of its row (``sqnr_db``: lowest SQNR vs fp64 in dB over the layer's
    nodes; ``rmse``: the output row's RMSE vs fp64), one column per policy (inf/nan spelled out, empty:
    not measured)."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["workload", "layer", "unit", *policies])
    for r in rows:
        cells = ["" if r.values.get(p) is None else repr(float(r.values[p])) for p in policies]
        writer.writerow([r.workload, r.layer, "rmse" if r.layer == OUTPUT_ROW else "sqnr_db", *cells])
    return buf.getvalue()


def to_json(rows: Sequence[SweepRow], policies: Sequence[str]) -> str:
    """JSON: {"policies": [...], "unit": ..., "rows": [{"workload", "layer", "values"}]}."""
    doc = {
        "policies": list(policies),
        "unit": "lowest SQNR vs fp64 in dB over the layer's nodes; output row: RMSE vs fp64",
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
