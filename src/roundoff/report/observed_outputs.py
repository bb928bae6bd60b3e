"""The compiled program's outputs in observe's report: their table (every output against fp64 of the whole
program and its reference), and the notes on outputs that fail, on those real eager makes NaN/inf and on those
over the limit by value alone that pass."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from roundoff.analyze.verdict import EXCESS_LIMIT
from roundoff.report.cells import error_ratio, fmt_num, verdict_text
from roundoff.report.outputs_table import shown_outputs


def outputs_table(doc: dict[str, Any], top: int = 10) -> list[Table]:
    """The compiled program's outputs, each against fp64 of the whole program and its reference (--json's
    outputs), as check's outputs table shows the emulated policy's, and as many (`shown_outputs`: of more
    than 20, the failing ones, the program's own and the `top` passing gradients of largest multiple; trial
    101: a DeBERTa step's 50 rows where check showed 11)."""
    outs = doc.get("outputs") or []
    if not outs:
        return []
    reference = "real eager" if doc["against"] == "eager" else "reference"  # as check's outputs table names it
    table = Table(title=f"outputs of the compiled program ({doc['backend']}) against fp64 of the whole program",
                  title_justify="left")
    for column in ("output", "rmse vs fp64", f"{reference} rmse", "x reference", "verdict"):
        table.add_column(column, justify="right" if "rmse" in column or column.startswith("x") else "left")
    shown = shown_outputs(outs, top, lambda o: o["passes"], lambda o: error_ratio(o["rmse_vs_fp64"], o["reference_rmse"]))
    if len(shown) < len(outs):
        table.caption = (f"... and {len(outs) - len(shown)} more passing output(s) not shown: shown are those that "
                         f"fail, the program's own outputs and the {top} passing gradients of largest multiple of "
                         "their reference (--json lists them all)")
        table.caption_justify = "left"
    for o in shown:
        rmse_, ref = o["rmse_vs_fp64"], o["reference_rmse"]
        times = "-" if rmse_ is None or ref is None else fmt_num(rmse_ / ref, 3) if ref else "inf" if rmse_ else "1"
        lost = f" ({o['nonfinite']} NaN/inf)" if o["nonfinite"] else ""
        table.add_row(o["name"], "-" if rmse_ is None else fmt_num(rmse_, 4), "-" if ref is None else fmt_num(ref, 4),
                      times, Text.assemble(verdict_text("ok" if o["passes"] else "fails"), lost))
    return [table]


def eager_wrong_notes(doc: dict[str, Any]) -> list[Text]:
    """Against eager, a line naming the outputs real eager makes NaN/inf where fp64 and the compiled program are
    finite (the reference is wrong there, not the compiled program), and one naming those where both are NaN/inf
    unless the headline says so (`no_worse_than_eager`)."""
    outs = doc.get("eager_nonfinite_outputs") or []
    lines = []
    finite = [o for o in outs if o["nonfinite"] > o.get("compiled_too", 0)]
    if finite:
        named = ", ".join(f"`{o['name']}` ({o['nonfinite'] - o.get('compiled_too', 0)} element(s))" for o in finite[:3])
        more = f" and {len(finite) - 3} more" if len(finite) > 3 else ""
        lines.append(Text(f"note: real eager's output is NaN/inf where fp64 and the compiled program are finite: "
                          f"{named}{more}; there eager is wrong, not the compiled program: --against oracle judges both "
                          "by fp64, and `roundoff check -p eager --against oracle` names the eager op that makes it.",
                          style="yellow"))
    both = [o for o in outs if o.get("compiled_too")]
    if both and not no_worse_than_eager(doc):
        named = ", ".join(f"`{o['name']}` ({o['compiled_too']} element(s))" for o in both[:3])
        more = f" and {len(both) - 3} more" if len(both) > 3 else ""
        lines.append(Text(f"note: real eager's output is NaN/inf where fp64 is finite, as the compiled program's is: "
                          f"{named}{more}; eager fails there too: `roundoff check -p eager --against oracle` names the "
                          "op that makes it.", style="yellow"))
    return lines


def no_worse_than_eager(doc: dict[str, Any]) -> bool:
    """Against eager: every failing output of the compiled program is NaN/inf (fp64 finite) only where real
    eager's is too, and fails by nothing else (its finite elements' RMSE unknown or within eager's)."""
    shared = {o["name"]: o.get("compiled_too", 0) for o in doc.get("eager_nonfinite_outputs") or []}
    failing = doc.get("failing_outputs") or []
    return doc["against"] == "eager" and bool(failing) and all(
        o["name"] in shared and 0 < o["nonfinite"] <= shared[o["name"]]
        and (o["rmse_vs_fp64"] is None or o["reference_rmse"] is None or o["rmse_vs_fp64"] <= o["reference_rmse"])
        for o in failing)


def unflagged_notes(doc: dict[str, Any]) -> list[Text]:
    """A line naming the outputs over the limit by value alone that pass, no kernel on their path flagged."""
    outs = doc.get("unflagged_outputs") or []
    if not outs:
        return []
    # each as the outputs table gives it (its reference the larger of fp64 correctly rounded and the error its
    # last op takes from its operands' rounding), the worst first (trial 81: 41.1x here, 23.5x in the table,
    # and the table's worst, 36.8x, left among "1 more")
    table = {o["name"]: o for o in doc.get("outputs") or []}

    def ratio(o: dict[str, Any]) -> float | None:
        t = table.get(o["name"], o)
        rmse, ref = t.get("rmse_vs_fp64"), t.get("reference_rmse")
        return rmse / ref if isinstance(rmse, (int, float)) and isinstance(ref, (int, float)) and ref else None

    outs = sorted(outs, key=lambda o: -(ratio(o) or 0.0))
    named = ", ".join(f"`{o['name']}` ({fmt_num(r, 3)}x)" if (r := ratio(o)) is not None else f"`{o['name']}`"
                      for o in outs[:3])
    more = f" and {len(outs) - 3} more" if len(outs) > 3 else ""
    return [Text(f"outputs {named}{more} are over {EXCESS_LIMIT:g}x their reference (the outputs table's), but no kernel on their "
                 f"path diverges, turns NaN/inf or amplifies an error it reads more than {EXCESS_LIMIT:g}x: they pass "
                 "by check's output rule (an error grown over many roundings, none beyond the limit: the conditioning "
                 "of the format or of the formula, not one wrong kernel; --json's unflagged_outputs lists them).",
                 style="dim")]


def named_outputs(failing: list[dict[str, Any]]) -> tuple[str, str]:
    """The first three failing outputs with their figures, and " and N more" where there are more."""
    def said(o: dict[str, Any]) -> str:
        if o["nonfinite"] or o["rmse_vs_fp64"] is None:
            return f"`{o['name']}` ({o['nonfinite']} NaN/inf where fp64 is finite)"
        times = fmt_num(o["rmse_vs_fp64"] / o["reference_rmse"], 3) if o["reference_rmse"] else "inf"
        by = (f", its own format's; moved there by the values of the diverging buffers of {', '.join(o['moved_by'])}"
              if o.get("moved_by") else "")
        return f"`{o['name']}` (RMSE {fmt_num(o['rmse_vs_fp64'], 3)}, {times}x its reference{by})"

    return ", ".join(said(o) for o in failing[:3]), f" and {len(failing) - 3} more" if len(failing) > 3 else ""


def failing_too_notes(doc: dict[str, Any]) -> list[Text]:
    """Where the headline names a diverging kernel: the compiled program's outputs that fail (--json's
    failing_outputs), so that the verdict on the outputs is never in the JSON alone (trial 48)."""
    if doc["first_divergent"] is None or not doc.get("failing_outputs"):
        return []
    named, more = named_outputs(doc["failing_outputs"])
    against = "real eager's outputs" if doc["against"] == "eager" else "fp64 of the whole program"
    return [Text(f"failing outputs of the compiled program against {against}: {named}{more}.", style="bold red")]
