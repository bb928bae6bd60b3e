"""The per-output table of one policy's run: each output's RMSE against fp64, its reference's, their
multiple and the limit against the oracle, and the verdict (an ok over the limit says the path rule passed it).
A program with many outputs (a training step's gradients) shows the failing ones, its own outputs and the
worst of the others, and counts the rest."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.table import Table
from rich.text import Text

from roundoff.report.cells import error_ratio, fmt_near, fmt_num, verdict_remark, verdict_text


def outputs_table(run: dict[str, Any], top: int = 10) -> Table:
    """Per-output verdict: RMSE vs fp64 and the reference's. Where the report records the limit's
    multiplier (against the oracle), the error as a multiple of the reference, the limit in the header,
    and an ok beyond it says why (no flagged node on its path: `roundoff.analyze.verdict`). Of a program
    with more than ``2 * top`` (at least 20) outputs, the passing gradients are shown `top` at most, the largest
    multiples first (`_outputs_shown`), and the caption counts the others (trial 99: a Whisper step's three
    tables of 89 passing gradients)."""
    table = Table(title=f"Outputs under {run['policy']}", title_justify="left")
    limits = {o["multiplier"] for o in run["outputs"] if o["multiplier"] is not None}
    limit = next(iter(limits)) if len(limits) == 1 else None
    shown = _outputs_shown(run["outputs"], limit, top)
    if len(shown) < len(run["outputs"]):
        kept = {id(o) for o in shown}
        hidden = [o for o in run["outputs"] if id(o) not in kept]
        over = sum(ok_over_limit(o, limit) for o in hidden)
        table.caption = (f"... and {len(hidden)} more passing output(s) not shown"
                         + (f", {over} of them over the limit by value (no flagged node on their path)" if over else "")
                         + f": shown are those that fail, the program's own outputs and the {top} passing gradients "
                         f"of largest multiple of their reference (--top {len(run['outputs'])} shows every one, --json "
                         "lists them)")
        table.caption_justify = "left"
    ratios = [error_ratio(out["rmse"], out["ref_rmse"]) for out in shown]
    beyond = [ok_over_limit(out, limit) for out in shown]
    where = " with a flagged node on its path" if any(beyond) else ""  # an ok over the limit: say the rule
    cols = ["output", "rmse vs fp64", "reference rmse"] + ([f"x reference (limit {limit:g}{where})"] if limit else [])
    for col in cols + ["verdict"]:  # a name folds, never cut short (trial 50: q/k/v_proj told apart)
        table.add_column(col, overflow="fold" if col == "output" else "ellipsis")
    for out, ratio, over in zip(shown, ratios, beyond):
        real = out.get("real_eager_nonfinite")  # the emulated eager reference is finite where real eager is not
        cells = [out["name"], fmt_num(out["rmse"]), fmt_num(out["ref_rmse"]) + (f" (real eager: {real} NaN/inf)"
                                                                                if real else "")]
        cells += [fmt_near(ratio, limit)] if limit else []
        table.add_row(*cells, Text.assemble(verdict_text(out["verdict"]), " (no flagged node on its path)" if over else "",
                                            verdict_remark(out)))
    return table


def _outputs_shown(outputs: list[dict[str, Any]], limit: float | None, top: int) -> list[dict[str, Any]]:
    """The rows `outputs_table` shows (`shown_outputs` of check's output entries)."""
    return shown_outputs(outputs, top, lambda o: o["verdict"] == "ok", lambda o: error_ratio(o["rmse"], o["ref_rmse"]))


def shown_outputs(outputs: list[dict[str, Any]], top: int, passes: Callable[[dict[str, Any]], bool],
                  ratio: Callable[[dict[str, Any]], float | None]) -> list[dict[str, Any]]:
    """The rows an outputs table shows, in the program's order: every output, or where there are more than
    ``max(20, 2 * top)``, those that fail, the program's own (not a ``grad_`` gradient: the loss) and the `top`
    passing gradients of largest multiple of their reference (over the limit by value first: trial 100, 60 of
    a ResNet's 63). `passes` and `ratio` read an entry's verdict and multiple (check's and observe's differ)."""
    if len(outputs) <= max(20, 2 * top):
        return outputs
    passing = [o for o in outputs if passes(o) and o["name"].startswith("grad_")]
    worst = sorted(passing, key=lambda o: -(ratio(o) or 0.0))[:top]
    plain = {id(o) for o in passing}
    keep = {id(o) for o in worst} | {id(o) for o in outputs if id(o) not in plain}
    return [o for o in outputs if id(o) in keep]


def ok_over_limit(out: dict[str, Any], limit: float | None) -> bool:
    """Whether output entry `out` passes though its error is over `limit` times its reference (the path rule:
    no flagged node on its path), fp64's noise aside."""
    ratio = error_ratio(out["rmse"], out["ref_rmse"])
    return limit is not None and ratio is not None and ratio > limit and out["verdict"] == "ok" and not out.get("noise_only")
