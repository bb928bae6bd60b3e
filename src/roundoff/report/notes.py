"""Notes shortened for a terminal: each at most ~3 lines, notes of one shape collapsed into one.

A large program makes analyze and the planner emit many notes, some listing every node or kernel
(``rematerialized pointwise nodes ...: n5 (kernels 1, 2); n6 (kernels 1, 3); ...``), some repeated
per kernel (``kernel 7 (reduction) ends at its stored result ...``). The report document
(``--json``, HTML) keeps every note whole; `compact_notes` is for the terminal only, and says where to find all.
A program's graph breaks, past `MAX_BREAK_NOTES`, are said in one note by line and kind (`graph_breaks_note`),
with the selections held at eager's choice named apart (`pinned_choices`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from roundoff.capture.specialize import EAGERS_CHOICE

MAX_CHARS = 320  # ~3 lines of a 110-column terminal
LIST_HEAD = 3  # items of a long list kept before "... and N more"
MORE = "; --json has all"

_NUMBER = re.compile(r"\d+")
_PARENS = re.compile(r"\([^()]*\)")
_FIRST_ID = re.compile(r"\b([A-Za-z]+) (n?\d+[\w.]*)")
_DECOMPOSED = re.compile(r"\bn\d+\.\d+\b")
_SENTENCE_END = re.compile(r"(?<!\.)\. ")  # ". ", not the end of an ellipsis ("n5, ... and 2 more")


def _shape(note: str) -> str:
    """What a note says with its numbers and parenthesized lists left out."""
    return _NUMBER.sub("#", _PARENS.sub("(...)", note))


def _abbrev(items: Sequence[str], sep: str) -> str:
    """`items` joined by `sep`, the first `LIST_HEAD` only when there are many."""
    if len(items) <= LIST_HEAD + 1:
        return sep.join(items)
    return f"{sep.join(items[:LIST_HEAD])}{sep}... and {len(items) - LIST_HEAD} more{MORE}"


def _shorten_list(text: str, sep: str) -> str:
    """The `sep`-separated items in `text` abbreviated when there are many."""
    parts = text.split(sep)
    return text if len(parts) <= LIST_HEAD + 2 else _abbrev(parts, sep)


def shorten(note: str) -> str:
    """`note` at most `MAX_CHARS` long: the lists in its first sentence abbreviated (the
    sentences after it kept), then the text cut."""
    first, dot, rest = _first_sentence(note)
    for sep in ("; ", ", "):  # items of a "; " list may hold ", " lists of their own: one pass
        if len(first) + len(rest) > MAX_CHARS and first != (short := _shorten_list(first, sep)):
            first = short
            break
    note = first + (f". {rest}" if dot else "")
    if len(note) > MAX_CHARS:
        cut = " ..." if MORE in note[:MAX_CHARS] else f" ... ({MORE[2:]})"
        sentences, kept = _SENTENCE_END.split(note), ""
        for sentence in sentences:  # whole sentences while they fit
            longer = f"{kept}. {sentence}" if kept else sentence
            if len(longer) + len(cut) > MAX_CHARS:
                break
            kept = longer
        if kept:
            return kept.rstrip(".") + "." + cut
        note = note[: MAX_CHARS - len(cut)].rsplit(" ", 1)[0].rstrip(",;:") + cut  # at a word boundary
    return note


def _first_sentence(note: str) -> tuple[str, str, str]:
    """`note` split at its first sentence end, as ``str.partition(". ")`` splits it."""
    parts = _SENTENCE_END.split(note, maxsplit=1)
    return (parts[0], ". ", parts[1]) if len(parts) == 2 else (note, "", "")


def compact_notes(notes: Sequence[str]) -> list[str]:
    """`notes` for a terminal: notes of one shape (differing only in their numbers and
    parenthesized lists) as one line with their count and the ids they are about, each note
    shortened (`shorten`). Order: where each shape first appears."""
    groups: dict[str, list[str]] = {}
    for note in notes:
        groups.setdefault(_shape(note), []).append(note)
    out = []
    for same in groups.values():
        if len(same) == 1:
            out.append(shorten(same[0]))
            continue
        first = _FIRST_ID.search(same[0])
        ids = [m.group(2) for m in map(_FIRST_ID.search, same) if m]
        named = first is not None and len(ids) == len(same)
        about = f" (for {first.group(1)} {_abbrev(ids, ', ')})" if named else ""
        out.append(shorten(f"{len(same)} similar notes{about}; the first: {same[0]}"))
    found = next((m.group(0) for n in out if (m := _DECOMPOSED.search(n))), None)
    if found is not None:  # (an id of this run: trial 54 read a fixed "n51" as one of its own nodes)
        parent = found.split(".")[0]
        out.append(f"node ids such as {found} name the nodes of {parent}'s decomposition (the policy decomposes "
                   f"{parent} into several ops)")
    return out


_CHOICE = re.compile(rf"at (\S+) \([^:]*: (\w+) {re.escape(EAGERS_CHOICE)}")


def pinned_choices(notes: Sequence[str]) -> list[str]:
    """One note for the selections held at eager's choice (`capture.specialize`), which the collapsed
    graph-break note does not name (trial 84: a MoE's router `topk`, 4 of 16384 tokens routed otherwise by
    fp64, never said)."""
    found = list(dict.fromkeys(f"{m[2]} at {m[1]}" for n in notes if (m := _CHOICE.search(n))))
    if not found:
        return []
    return [f"{', '.join(found[:3])}{' and more' if len(found) > 3 else ''}: a graph break below reads the choice, so "
            "every run takes eager's, fp64's too, with its own scores at those indices; where fp64 would choose other "
            "indices (a token routed to another expert), that difference is not in these figures"]


#: More graph-break notes than this are said in one line (trial 66: 14 notes before the findings).
MAX_BREAK_NOTES = 3


def graph_breaks_note(breaks: Sequence[Mapping[str, Any]]) -> str:
    """One note for a document's ``graph_breaks``: how many, and where, by line and kind."""
    total = sum(b["count"] for b in breaks)
    lines: dict[str, list[str]] = {}
    for b in breaks:
        lines.setdefault(b["source"] or "an unknown line", []).append(
            b["kind"] + (f" x{b['count']}" if b["count"] > 1 else ""))
    where = "; ".join(f"{line} ({', '.join(kinds)})" for line, kinds in lines.items())
    return (f"checked across {total} graph breaks at {len(lines)} line(s): the emulated runs use the values eager "
            f"computed there, so the verdict holds for these inputs only; at {where} (--json's specializations "
            "say what each holds)")


def break_notes(document: Mapping[str, Any]) -> list[str]:
    """A document's graph-break notes as a report prints them: each (``specializations``), or past
    `MAX_BREAK_NOTES` one line by line and kind (`graph_breaks_note`) and the selections held at eager's choice."""
    notes = list(document.get("specializations", []))
    if len(notes) > MAX_BREAK_NOTES and document.get("graph_breaks"):
        return [graph_breaks_note(document["graph_breaks"])] + pinned_choices(notes)
    return notes
