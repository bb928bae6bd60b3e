"""Terminal rendering with rich: tables built from report documents and library records.

Every function returns a rich renderable; only ``roundoff.cli`` prints. Colour and styles come out
only on a TTY (rich's `Console` decides when `force_terminal` is unset), so piped output and CI logs
are plain text. Numbers are shown with 4 significant digits; non-finite values as inf/-inf/nan.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch
from rich import box
from rich.console import Console, Group, RenderableType
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from roundoff.analyze.hazards import ROUNDING_DECIDED_HAZARDS
from roundoff.analyze.output_verdicts import (
    NOT_DIFFERENTIATED,
    SCOPE_NOTE_STARTS,
    SLACK_NOTE,
    WIDE_ONLY,
)
from roundoff.analyze.run_notes import CPU_ATTENTION, DYNAMO_FALLBACK, REAL_EAGER
from roundoff.plan.rewrite import ONE_GRAPH_NOTE
from roundoff.report.cells import (
    fmt_num,
    narrow_table,
    verdict_text,
)
from roundoff.report.json_report import node_ref_text
from roundoff.report.legend import short_legend
from roundoff.report.nodes_table import nodes_table
from roundoff.report.notes import break_notes, compact_notes
from roundoff.report.outputs_table import ok_over_limit, outputs_table


def _cell(value: Any) -> str:
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, float):
        return fmt_num(value, 6)
    if isinstance(value, (tuple, list, frozenset)):
        return ", ".join(_cell(v) for v in value)
    return "-" if value is None else str(value)


def records_table(title: str, records: Sequence[Any], skip: Iterable[str] = ()) -> Table:
    """A table with one row per dataclass record and one column per (non-skipped) field."""
    table = Table(title=title, title_justify="left")
    if not records:
        return table
    names = [f.name for f in dataclasses.fields(records[0]) if f.name not in set(skip)]
    for name in names:
        table.add_column(name.replace("_", " "), overflow="fold")
    for rec in records:
        table.add_row(*(_cell(getattr(rec, n)) for n in names))
    return table


def formats_table(formats: Sequence[Any]) -> Table:
    """The floating-point formats (``roundoff.numerics.Format``): exponent/mantissa bits and
    derived constants (3 significant digits; "max" is the largest finite value). "overflow" is
    what a finite value too large for the format becomes: inf, the largest finite value
    (saturate), or NaN (formats without inf)."""
    table = Table(
        title="Floating-point formats", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for col in ("name", "e/m", "max", "min normal", "min sub", "eps", "overflow"):
        table.add_column(col, no_wrap=True)
    for f in formats:
        table.add_row(
            f.name,
            f"{f.exponent_bits}/{f.mantissa_bits}",
            fmt_num(f.max_finite, 3),
            fmt_num(f.min_normal, 3),
            fmt_num(f.min_subnormal, 3),
            fmt_num(f.eps, 3),
            _cell(f.overflow),
        )
    return table


def policies_table(policies: Sequence[Any]) -> Table:
    """Presets: name, one-line description and the source (release, PR, config) each follows."""
    table = Table(title="Precision policies", title_justify="left")
    table.add_column("name", style="bold", no_wrap=True)
    # one column for both texts: at 80 columns a third would fold long identifiers of the sources
    # (`opmath_gpu_kernel_with_scalars`) in the middle
    table.add_column("what it models, and its source", overflow="fold")
    for p in policies:
        table.add_row(p.name, Text.assemble(p.description, "\n", ("source: ", "dim"), p.source))
    return table


def key_values(title: str, rows: Sequence[tuple[str, str]]) -> Table:
    """A two-column table of labelled values (used by the FMA demo)."""
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value", overflow="fold")
    for k, v in rows:
        table.add_row(k, v)
    return table


def verdict_table(rows: Sequence[tuple[str, str, str, str]]) -> Table:
    """Summary of several checks: (workload, policy, verdict, finding) per row."""
    table = Table(title="Verdicts", title_justify="left")
    for col in ("workload", "policy", "verdict", "finding"):
        table.add_column(col, overflow="fold")
    for workload, policy, verdict, finding in rows:
        table.add_row(workload, policy, verdict_text(verdict), finding)
    return table



def run_report(run: dict[str, Any], top: int = 10, against: str = "oracle") -> Group:
    """One policy's section, causes first: verdict, what blame changes, the findings (failing outputs,
    the nodes whose own error causes them), outputs, worst nodes, NaN/Inf origin, hazards, notes."""
    over = [o for o in run["outputs"] if run["verdict"] == "ok" and ok_over_limit(o, o["multiplier"])]
    parts: list[RenderableType] = [
        Text.assemble(("policy ", "bold"), run["policy"], ": ", verdict_text(run["verdict"]),
                      f" by the path rule: {len(over)} output(s) over the limit by value with no flagged node on "
                      "their path (--by-values fails them" + ("; findings below)" if run["explanations"] or run["hazards"]
                                                               else " and says why)") if over else
                      " (with findings within the limit, below)" if run["verdict"] == "ok" and (
                          run["explanations"] or run["hazards"]) else ""),
    ]
    # what changes how to read the rest (trial 104: a training step checked without --backward passed, its gradients
    # 300x off, and the note saying none was computed came after the tables)
    first = [n for n in run["notes"] if n.startswith((REAL_EAGER, WIDE_ONLY, NOT_DIFFERENTIATED))]
    parts += [Text(f"note: {n}", style="yellow") for n in first]
    if run["blame"] is not None:
        parts.append(blame_report(run["blame"]))
    for line in run["explanations"]:
        parts.append(Text(f"- {line}"))
    origin = run["nan_origin"]
    if origin and origin.get("explanation") and origin["explanation"] not in run["explanations"]:
        parts.append(Text(f"  {origin['explanation']}"))
    parts += [
        outputs_table(run, top),
        nodes_table(run, top, against),
        Text((f"first node beyond the limit: {node_ref_text(run['first_divergent'])} (no output fails for it)"
              if run["first_divergent"] is not None and run["verdict"] == "ok" else
              f"first divergent node (graph order): {node_ref_text(run['first_divergent'])}")
             + (" (no node's own error is beyond the limit: see the causes above)"
                if run["first_divergent"] is None and run.get("causes") else "")),
        Text(f"NaN/Inf origin: {node_ref_text(run['nan_origin'])}"),
    ]
    listed = set(run["explanations"])
    groups: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
    for h in run["hazards"]:  # one line per kind and source line (an op in a loop repeats its hazard)
        groups.setdefault((h["kind"], h.get("source")), []).append(h)
    for (kind, source), hs in groups.items():
        h = hs[0]
        where = f" at {source}" if source else ""
        more = f" (and {len(hs) - 1} more node(s) at this line: {', '.join(str(o['node']) for o in hs[1:4])}" \
            f"{', ...' if len(hs) > 4 else ''})" if len(hs) > 1 else ""
        text = f"hazard [{kind}] {h['node'] or ''}{where}{more}"
        # analyze's findings often repeat the hazard's advice word for word: say it once
        text += " (see above)" if any(line.startswith(h["message"]) for line in listed) else f": {h['message']}"
        parts.append(Text(text, style="yellow"))
    notes = [n for n in run["notes"] if n not in first]  # (those shown under the verdict)
    if run["verdict"] == "ok":  # how the policy was modelled (fusion, summation order, unmodelled ops): for failures
        # a tie with a stored maximum that rounding decides: whether the real step reads it so is what the
        # one-graph plan of a training step leaves open (trial 77: ok here, NaN gradients under torch.compile)
        ties = any(h["kind"] in ROUNDING_DECIDED_HAZARDS for h in run["hazards"])
        kept = [n for n in notes if _shown_when_passing(n) or ties and n.startswith(ONE_GRAPH_NOTE)]
        if modelling := len(notes) - len(kept):
            kept.append(f"{modelling} note(s) on how {run['policy']} was modelled (fusion, summation order, "
                        "unmodelled ops): --json has them; they matter when a check fails.")
        notes = kept
    for note in compact_notes(notes):
        parts.append(Text(f"note: {note}", style="dim"))
    return Group(*parts)


def _shown_when_passing(note: str) -> bool:
    """Notes a passing run still shows on a terminal: what the screen examined, whether it ran as asked,
    what the fp64 oracle inherits from a 16-bit capture (`roundoff.analyze.oracle_notes`), outputs with
    nothing to measure, what was not judged (`roundoff.analyze.output_verdicts.scope_notes`), outputs passing by
    `same`'s absolute slack alone (`output_verdicts.slack_notes`) and modules
    torch.compile runs eagerly (`roundoff.analyze.run_notes.DYNAMO_FALLBACK`)."""
    return note.startswith(("screened", "the fp64 oracle runs the graph as captured", "nothing measured",
                            *SCOPE_NOTE_STARTS, SLACK_NOTE, DYNAMO_FALLBACK, CPU_ATTENTION)) \
        or "screen failed" in note


def blame_report(blame: dict[str, Any]) -> Group:
    """Blame's change set: one row per change with its source line and why, then the TOML."""
    status = blame.get("status", "fixed")
    head = Text.assemble(
        ("blame: ", "bold"),
        f"{len(blame['changes'])} change(s), {status}, {blame['evaluations']} change sets tried",
        f" (from {blame['candidates']} candidate changes)" if blame.get("candidates") is not None else "",
    )
    if over := blame.get("over_limit"):  # fixed as check judges it, not by every output's values (trial 58)
        head.append(f"; as check judges outputs: {len(over)} output(s) stay up to "
                     f"{max(o['x_reference'] for o in over):.3g}x their reference by value (see the first note)",
                     style="yellow")
    parts: list[RenderableType] = [head]
    if len(blame["changes"]) > 3:  # many changes: where they are in the user's code, first
        parts.append(Text("the fix by line: " + by_line(blame["changes"])))
    if blame["changes"]:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        for col in ("node", "change", "source", "why"):
            table.add_column(col, overflow="fold")
        said: dict[str, str] = {}  # a reason's shape -> the row that gave it whole
        for group in _row_groups(blame["changes"]):
            c = group[0]
            why = _said_once(c["explanation"], c["node"], said)
            if len(group) == 1:
                table.add_row(c["node"], c["change"], c["source"] or "-", why)
            else:  # one line's repeated op (a loop, every layer): one row, its first node's reason
                nodes = f"{c['node']} .. {group[-1]['node']} ({len(group)} nodes)"
                table.add_row(nodes, c["change"], c["source"] or "-", f"each as the first: {why}")
        parts.append(table)
    parts += [Text(f"note: {n}", style="dim") for n in blame.get("notes", [])]
    return Group(*parts)


#: The parts of a change's reason that name its node and the values around it (`_said_once`)
_NAMED = re.compile(r"`[^`]*`(?: \(n[\w.]+(?: at [^)]*)?\))?|\bn\d+[\w.]*|\S+\.py:\d+")


def _said_once(why: str, node: str, said: dict[str, str]) -> str:
    """`why` whole the first time a reason of its shape (its names aside) is shown, then its first clause and
    where the rest was said (trial 107: eleven rows of the same ~400-character sentence, a name apart)."""
    first = said.setdefault(_NAMED.sub("#", why), node)
    head, dash, _ = why.partition(" — ")
    return why if first == node or not dash else f"{head} — as for {first} above"


#: More changes than this and blame's table shows one row per source line, op and change (--json: each).
MAX_CHANGE_ROWS = 12


def _row_groups(changes: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """`changes` one per row, or, when there are more than `MAX_CHANGE_ROWS`, those of one source line,
    op and change together (in order of first appearance)."""
    if len(changes) <= MAX_CHANGE_ROWS:
        return [[c] for c in changes]
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for c in changes:
        groups.setdefault((c["source"], c.get("op"), c["change"]) if c["source"] else c["node"], []).append(c)
    return list(groups.values())


def by_line(changes: Sequence[Mapping[str, Any]]) -> str:
    """``model.py:20 (4: keep mean, mul in fp32), ...``: blame's changes grouped by source line, the
    lines with most changes first."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for c in changes:
        groups.setdefault(c["source"] or "-", []).append(c)
    words = []
    for line, cs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        kinds = sorted({c["change"] for c in cs})
        ops = sorted({c["op"].split(".")[1] if c["op"].startswith("aten.") else c["op"] for c in cs if c.get("op")})
        words.append(f"{line} ({len(cs)}: {', '.join(kinds)}{' on ' + ', '.join(ops) if ops else ''})")
    return "; ".join(words)


def check_report(document: dict[str, Any], top: int = 10) -> Group:
    """The whole `roundoff check` report for a terminal, from a schema-valid document."""
    head = Text.assemble(
        ("roundoff check ", "bold"),
        document["target"],
        f" against {document['against']}: ",
        verdict_text(document["verdict"]),
    )
    parts: list[RenderableType] = [head]
    parts += [Text(f"note: {s}", style="yellow") for s in break_notes(document)]
    parts += [run_report(r, top, document["against"]) for r in document["runs"]]
    if document.get("legend"):  # what the figures mean, after them: the verdict and findings first (trial 82)
        rule = next((r["rule"] for r in document["runs"] if r.get("rule")), "same")
        by_values = any(r.get("outputs_by_values") for r in document["runs"])
        parts.append(Text(short_legend(document["against"], rule, by_values), style="dim"))
    return Group(*parts)


def sweep_table(
    rows: Sequence[tuple[str, str, Mapping[str, float | None]]], policies: Sequence[str]
) -> RenderableType:
    """Error against fp64 per (workload, layer) row and policy column, a heading row per workload;
    the smallest error of each row is bold (the policy closest to fp64 there: the highest SQNR, the
    lowest output RMSE) where they differ.
    Where the policies' names do not fit side by side, the columns are numbered and a legend
    names them (rather than folding names and layers mid-word)."""
    return _SweepTable(rows, policies)


#: What a sweep cell is (trial 67: the nodes table's caption, about columns a sweep has not, was shown;
#: trial 80: `-` for a layer whose ops only move values; trial 82: above fp64's resolution; trial 83: `inf`).
_SWEEP_CAPTION = ("each cell above the output RMSE row: the lowest signal-to-quantization-noise ratio (dB) against fp64 "
                  "over the layer's nodes, "
                  "inherited error included; bold: the policy closest to fp64 on that row; inf: every node of the "
                  "layer equals fp64 exactly (exact ops, or values its format holds); -inf: NaN/inf where fp64 is "
                  "finite; far below 0 dB where fp64's value is its own noise (a gradient 0 by the model's structure, "
                  "which check passes and its outputs table names); -: no node of that layer "
                  "is measured under that policy (its ops there only move values: a copy, an index), or "
                  "each measures above fp64's own resolution (319 dB: a signal dominated by huge values, such as "
                  "an additive finfo.min mask)")


class _SweepTable:
    def __init__(
        self, rows: Sequence[tuple[str, str, Mapping[str, float | None]]], policies: Sequence[str]
    ) -> None:
        self.rows, self.policies = rows, policies

    def _table(self, headers: Sequence[str]) -> Table:
        table = narrow_table("Error against fp64 per layer (lowest SQNR in dB, higher is closer; last row: "
            "output RMSE)", _SWEEP_CAPTION)
        table.add_column("layer", no_wrap=True)
        for h in headers:
            table.add_column(h, justify="right", no_wrap=True)
        previous = None
        for workload, layer, values in self.rows:
            if workload != previous:
                table.add_row(Text(workload, style="bold"), *([""] * len(headers)))
                previous = workload
            known = [
                v for p in self.policies if (v := values.get(p)) is not None and not math.isnan(v)
            ]
            # SQNR rows: higher is closer to fp64; the output row is an RMSE: lower is closer
            closest = min if layer == "output rmse" else max
            best = closest(known) if known else None
            cells = []
            for p in self.policies:
                v = values.get(p)
                style = "bold" if v is not None and v == best and len(set(known)) > 1 else ""
                cells.append(Text(fmt_num(v, 3), style=style))
            table.add_row(f"  {layer}", *cells)
        return table

    def __rich_console__(self, console: Console, options: Any) -> Iterable[RenderableType]:
        wide = self._table(self.policies)
        if console.measure(wide, options=options).maximum < options.max_width:
            yield wide
            return
        yield self._table([f"({i})" for i in range(1, len(self.policies) + 1)])
        yield Text("  ".join(f"({i}) {p}" for i, p in enumerate(self.policies, 1)), style="dim")


def progress_bar(console: Console | None = None, transient: bool = True) -> Progress:
    """A progress bar for steps that take seconds, on `console` (the CLI passes stderr so stdout
    stays clean for ``--json``); nothing at all where that console is not a terminal (rich would
    still end a bar with an empty line there)."""
    console = console or Console()
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=transient,
        disable=not console.is_terminal,
    )
