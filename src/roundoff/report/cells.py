"""Table cells shared by the terminal renderings: numbers and verdicts as words and styles."""

from __future__ import annotations

import math
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from roundoff.report.json_report import error_ratio, number

__all__ = ["error_ratio"]  # (defined with the document's numbers; renderers import it from here)

VERDICT_STYLE = {"ok": "bold green", "diverges": "bold red", "nonfinite": "bold magenta"}


def where_cell(source: str | None, module: str | None) -> str:
    """A table cell for where a node or buffer was made: its source line and, where known, the module whose
    call made it (``mbv2.py:68 features.0.1``), or "-"."""
    return " ".join(p for p in (source, module) if p) or "-"


def fmt_num(x: Any, digits: int = 4) -> str:
    """A metric for a table cell: ``-`` for None, ``inf``/``nan`` as words, else `digits` digits."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, str) and x not in ("inf", "-inf", "nan"):
        return x
    v = number(x) if isinstance(x, str) else float(x)
    assert v is not None
    if math.isnan(v) or math.isinf(v):
        return str(v)
    return f"{v:.{digits}g}"


def verdict_text(verdict: str) -> Text:
    return Text(verdict, style=VERDICT_STYLE.get(verdict.rstrip("*"), ""))


def narrow_table(title: str, caption: str) -> Table:
    """A left-titled, captioned table without edge padding, for layouts that must fit 80 columns."""
    return Table(title=title, title_justify="left", caption=caption, caption_justify="left",
                 box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1, 0, 0))


def fmt_near(x: float | None, limit: float | None, digits: int = 3) -> str:
    """`fmt_num(x, digits)` with more digits where that would print a value beyond `limit` as the limit
    itself (trial 49: 16.013 printed as "16" beside "diverges")."""
    text = fmt_num(x, digits)
    while limit is not None and x is not None and x != limit and digits < 8 and text == fmt_num(limit, digits):
        digits += 1
        text = fmt_num(x, digits)
    return text



def verdict_remark(output: dict[str, Any]) -> str:
    """What an output row's verdict cell adds to a passing verdict: that it is 0 by the model's structure
    and what either side holds of it is rounding noise (`noise_only`: fp64's 1e-16, or the result's
    where fp64 cancels to 0 exactly), or how many of its values its format cannot hold (`below_range`; the findings say
    why it passes and what to do)."""
    if output.get("noise_only") and output["verdict"] == "ok":
        return " (0 by the model's structure: its values are rounding noise)"
    if output.get("near_tie") and output["verdict"] == "ok":
        return " (with fp64's decisions near a tie: see the findings)"
    below = output.get("below_range") or 0
    return f" ({below} values below its format's range)" if below and output["verdict"] == "ok" else ""


def none_finite(m: dict[str, Any]) -> bool:
    """Whether no element of metrics `m`'s value is finite (its error figures cover finite ones only)."""
    numel, bad = number(m.get("numel")), (number(m.get("nan")) or 0) + (number(m.get("inf")) or 0)
    return numel is not None and bad >= numel > 0
