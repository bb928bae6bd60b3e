"""The check report as ONE self-contained HTML page (no network at view time).

The page inlines plotly.js from the installed ``plotly`` package and draws, from a schema-valid
report document (``roundoff.report.json_report``): the verdict, bits of error per node along the
graph (one line per policy; a run that examined no node is named instead of drawn), outputs, the NaN/Inf origin, hazards, the kernel groups, blame results
when present, and the plan's trace. Non-finite results (a node whose value is inf/NaN where fp64 is
finite, verdict "nonfinite", or an infinite error) are drawn in red at a ceiling two bits above the
largest finite error, with their NaN/inf counts in the hover text.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup

from roundoff.report.cells import error_ratio, fmt_near, fmt_num, verdict_remark
from roundoff.report.json_report import node_ref_text, number


@lru_cache(maxsize=1)
def _plotlyjs() -> str:
    from plotly.offline import get_plotlyjs

    # A literal "</script>" inside the inlined library would end the <script> element early.
    return get_plotlyjs().replace("</script", "<\\/script")


@lru_cache(maxsize=1)
def _template() -> jinja2.Template:
    text = (
        resources.files("roundoff.report").joinpath("templates/report.html.j2").read_text("utf-8")
    )
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    return env.from_string(text)


def plot_series(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Per policy: x = node ids in graph order, y = bits of error (non-finite at a ceiling)."""
    finite = [
        b
        for run in document["runs"]
        for n in run["nodes"]
        if (b := number(n["metrics"]["bits"])) is not None and math.isfinite(b)
    ]
    ceiling = (max(finite) if finite else 0.0) + 2.0
    series = []
    for run in document["runs"]:
        xs, ys, texts, colors = [], [], [], []
        for n in run["nodes"]:
            bits = number(n["metrics"]["bits"])
            if bits is None:
                continue
            label = f"{n['id']} {n['op']}" + (f" ({n['source']})" if n["source"] else "")
            nonfinite = n["verdict"] == "nonfinite" or not math.isfinite(bits)
            if nonfinite:
                m = n["metrics"]
                label += (
                    f" - non-finite where fp64 is finite (NaN: {fmt_num(m['nan'])}, "
                    f"inf: {fmt_num(m['inf'])}, bits: {fmt_num(bits)})"
                )
                bits = ceiling
            xs.append(n["id"])
            ys.append(bits)
            texts.append(label)
            colors.append("#c5221f" if nonfinite else None)
        series.append({"name": run["policy"], "x": xs, "y": ys, "text": texts, "bad": colors})
    return series



def unplotted(document: dict[str, Any]) -> list[str]:
    """The policies whose run examined no node (a screened check that passed: its report holds outputs
    only), which the chart cannot draw (trial 77: such a page showed one line, or none, unexplained)."""
    return [run["policy"] for run in document["runs"] if not run["nodes"]]


def times_reference(output: dict[str, Any]) -> str:
    """An output's RMSE against fp64 as a multiple of its reference's ("-" where either is missing or
    the reference's is 0): what the outputs table compares with the limit (trial 49: the page showed
    the limit itself, 16 on every row)."""
    ratio, reference = error_ratio(output["rmse"], output["ref_rmse"]), number(output["ref_rmse"])
    usable = ratio is not None and math.isfinite(ratio) and reference is not None and reference > 0
    return fmt_near(ratio, output["multiplier"]) if usable else "-"


def render_html(document: dict[str, Any]) -> str:
    """The full page for `document`; the caller writes it to a file."""
    plot_json = json.dumps({"series": plot_series(document)}, allow_nan=False)
    return _template().render(
        doc=document,
        num=fmt_num,
        times=times_reference,
        remark=verdict_remark,
        ref=node_ref_text,
        unplotted=unplotted(document),
        plotlyjs=Markup(_plotlyjs()),
        plot_json=Markup(plot_json.replace("</", "<\\/")),
    )
