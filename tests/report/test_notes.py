"""Terminal notes: long lists abbreviated, notes of one shape collapsed, nothing lost silently."""

from __future__ import annotations

from roundoff.report.notes import MAX_CHARS, compact_notes
from roundoff.report.terminal import run_report


def _notes() -> list[str]:
    remat = (
        "rematerialized pointwise nodes, recomputed unrounded in every consuming kernel: "
        + "; ".join(f"n{i} (kernels {i}, {i + 1})" for i in range(100))
        + ". Inductor's realize heuristics may store one instead"
    )
    per_kernel = [
        f"kernel {k} (reduction) ends at its stored result; a persistent reduction may fuse its "
        f"pointwise epilogue (n{k}, n{k + 1}) into the same kernel"
        for k in range(3, 63, 1)
    ]
    return [remat, *per_kernel, "reductions are not bit-exact: bounded against fp64"]


def test_long_and_repeated_notes_are_compacted_with_counts():
    notes = _notes()
    short = compact_notes(notes)
    assert len(short) == 3
    assert all(len(n) <= MAX_CHARS for n in short), [len(n) for n in short]
    remat, kernels, last = short
    assert remat.startswith("rematerialized pointwise nodes") and "n0 (kernels 0, 1)" in remat
    assert "... and 97 more; --json has all" in remat and remat.endswith("may store one instead")
    assert kernels.startswith(f"{len(notes) - 2} similar notes (for kernel 3, 4, 5, ... and 57 more")
    assert "ends at its stored result" in kernels
    assert last == notes[-1]  # a short unique note is unchanged


def test_a_long_note_without_a_list_is_cut_with_a_pointer_to_json():
    long = "word " * 200
    (short,) = compact_notes([long])
    assert len(short) <= MAX_CHARS and short.endswith("... (--json has all)")
    assert long.startswith(short.removesuffix(" ... (--json has all)"))
    assert short.removesuffix(" ... (--json has all)").endswith("word")  # cut between words


def test_the_terminal_report_prints_compacted_notes(sample_document):
    run = dict(sample_document["runs"][0], notes=_notes())
    from rich.console import Console

    console = Console(width=110, record=True)
    console.print(run_report(run))
    lines = [ln for ln in console.export_text().splitlines()]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("note: rematerialized"))
    notes = lines[start:]
    assert sum(ln.startswith("note: ") for ln in notes) == 3
    assert len(notes) <= 3 * 3, notes  # each note at most 3 lines of 110 columns


def test_a_long_note_is_cut_after_its_last_whole_sentence_and_points_to_json_once():
    """A new user saw "... may store one instead; its ... (--json has all)": cut mid-sentence, the
    pointer twice. Whole sentences are kept; the list's own pointer is not repeated."""
    note = (
        "rematerialized pointwise nodes, recomputed unrounded in every consuming kernel: "
        + "; ".join(f"n{i}.0 (kernels 0, 1, 93, 94, 98)" for i in range(50, 160))
        + ". Inductor's realize heuristics (multi-use nodes, read counts) may store one instead; its "
        "consumers in other kernels would then read it rounded. " + "More words follow here. " * 8
    )
    short, ids = compact_notes([note])
    assert len(short) <= MAX_CHARS and short.count("--json has all") == 1
    assert short.endswith(". ...") and "; its" not in short  # the cut sentence is left out whole
    assert "such as n50.0 name the nodes of n50's decomposition" in ids  # an id of this note, not a fixed example


def test_the_decomposition_note_names_an_id_of_the_notes_themselves():
    """Trial 54: the note read "ids such as n51.4 name the nodes of n51's decomposition" where n51 was a
    plain, undecomposed mul of the user's program. Oracle: the notes' own ids."""
    _, ids = compact_notes(["kernel 3 stores n7.2 (a decomposed layer norm's mean)"])
    assert "such as n7.2 name the nodes of n7's decomposition" in ids and "n51" not in ids


def test_an_abbreviated_list_is_not_taken_for_a_sentence_end():
    """Trial 99: "5 similar notes (for reduction n61.1, n83.1, n105.1, . ..." — the ". " closing the list's
    ellipsis was split as a sentence end, and the note cut there. Oracle: the notes' own text."""
    notes = [f"reduction n{i}.1 (sum) is emulated with an fp32 accumulator over {i} terms in one pass, and the "
             "compiler may split a long reduction into kernels whose partial sums are rounded " + "word " * 50
             + ". A second sentence." for i in (61, 83, 105, 127, 149)]
    short = compact_notes(notes)[0]
    assert len(short) <= MAX_CHARS
    assert short.startswith("5 similar notes (for reduction n61.1, n83.1, n105.1, ... and 2 more; --json has all); "
                            "the first: reduction n61.1 (sum) is emulated"), short
    assert ", . " not in short and short.endswith(" ..."), short
