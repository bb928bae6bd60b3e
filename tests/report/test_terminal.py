"""Terminal rendering: plain text off a TTY, colour on one; the worst nodes come first."""

from __future__ import annotations

import io

import torch
from rich.console import Console

from roundoff.report.cells import fmt_num
from roundoff.report.nodes_table import worst_nodes
from roundoff.report.terminal import check_report, sweep_table
from roundoff.zoo import get_workload


def _render(renderable, tty: bool) -> str:
    buf = io.StringIO()
    Console(
        file=buf,
        width=160,
        force_terminal=tty,
        color_system="standard" if tty else None,
        highlight=False,
    ).print(renderable)
    return buf.getvalue()


def test_report_off_a_tty_is_plain_text_with_the_findings(sample_document):
    text = _render(check_report(sample_document), tty=False)
    assert "\x1b[" not in text, "ANSI escapes in piped output; repro: check_report(doc) to a file"
    for needle in (
        "zoo:fma-cancel",
        "diverges",
        "aten.sub.Tensor (n3) at model.py:12",
        "NaN/Inf origin: aten.exp.default (n4)",
        "hazard [fma_cancellation]",
        "note: reductions",
    ):
        assert needle in text, f"{needle!r} not in report:\n{text}"


def test_report_on_a_tty_is_coloured(sample_document):
    assert "\x1b[" in _render(check_report(sample_document), tty=True)


def test_worst_nodes_puts_nonfinite_and_diverging_nodes_first(sample_document):
    run = sample_document["runs"][0]
    assert [n["id"] for n in worst_nodes(run, 3)] == ["n4", "n3", "n2"]
    assert [n["id"] for n in worst_nodes(run, 1)] == ["n4"]


def test_fmt_num_spells_out_missing_and_nonfinite_values():
    assert [fmt_num(x) for x in (None, "inf", "-inf", "nan", 3, 0.000123456)] == [
        "-",
        "inf",
        "-inf",
        "nan",
        "3",
        "0.0001235",
    ]


def _bold_cells(width: int) -> list[str]:
    rows = [("w", "a.py:1", {"p": 20.0, "q": 50.0}), ("w", "output rmse", {"p": 0.5, "q": 0.1})]
    console = Console(record=True, width=width, force_terminal=True, color_system="standard")
    console.print(sweep_table(rows, ["p", "q"]))
    return [
        seg.text.strip()
        for seg in console._record_buffer
        if seg.style is not None and seg.style.bold and seg.text.strip()
    ]


def test_closest_policy_is_bold_in_sqnr_and_rmse_rows():
    bold = _bold_cells(200)
    assert "50" in bold and "0.1" in bold  # highest SQNR, lowest RMSE
    assert "20" not in bold and "0.5" not in bold


def test_top_zero_never_claims_every_node_is_correctly_rounded(sample_document):
    from roundoff.report.nodes_table import nodes_table

    run = sample_document["runs"][0]
    assert any((n["metrics"]["bits"] or 0) != 0 for n in run["nodes"])  # some node has error
    for top in (0, 1):
        assert "correctly rounded" not in _render(nodes_table(run, top), tty=False)


def test_legend_says_what_reference_means_in_each_mode(sample_document):
    from roundoff.report.json_report import make_document

    texts = {a: _render(check_report(make_document("t", a, sample_document["runs"])), tty=False)
             for a in ("oracle", "eager")}
    assert "reference = the fp64 oracle correctly rounded" in " ".join(texts["oracle"].split())
    assert len(texts["oracle"].split("reference =")[1]) < 420  # two sentences, not seven lines
    for text in texts.values():  # after the verdict and the findings, not between them (trial 82)
        run_heading = text.index(f"policy {sample_document['runs'][0]['policy']}:")
        assert text.index("reference =") > run_heading
    assert "reference = the `eager` policy emulated" in " ".join(texts["eager"].split())
    assert "--against oracle judges both by fp64" in " ".join(texts["eager"].split())  # eager is not the truth


def test_blame_with_many_changes_leads_with_the_lines_of_the_users_code():
    """The moment-variance MLP's fix keeps ~10 values fp32; the summary names the planted line
    (`var = (h*h).mean() - h.mean()**2`) among the lines it touches."""
    from roundoff.blame import blame
    from roundoff.capture import capture
    from roundoff.report.from_check import blame_entry
    from roundoff.report.terminal import by_line
    from tests.analyze.planted import PLANTED

    case = next(c for c in PLANTED if c.name == "mlp-with-moment-norm")
    xs = case.inputs()
    program = capture(case.fn, *xs, backward=case.backward)
    b = blame(program, case.policy, against=case.against, repro=False)
    changes = blame_entry(b)["changes"]
    summary = by_line(changes)
    planted = next(n for n in program.graph.nodes if n.target is case.op).meta["roundoff_source"]
    assert len(changes) > 3 and planted in summary
    assert sum(int(part.split("(")[1].split(":")[0]) for part in summary.split("; ")) == len(changes)


def test_blame_with_a_loop_in_its_fix_shows_one_row_per_line_not_per_iteration():
    """Trial 48: a 64-step recurrence's fix kept 1960 nodes in fp32 and blame printed one table row
    (five wrapped lines) for each. Past `MAX_CHANGE_ROWS` the table has a row per line, op and change,
    and every change is in exactly one of them."""
    from rich.console import Console

    from roundoff.report.terminal import MAX_CHANGE_ROWS, blame_report

    def change(i: int, line: str, op: str = "aten.add.Tensor") -> dict:
        return {"node": f"n{i}", "op": op, "change": "round_result=False", "kind": "keep_fp32", "source": line,
                "explanation": f"`{op}` (n{i}) at {line}: keep the result in fp32"}

    loop = [change(i, "rwkv.py:28") for i in range(40)]
    changes = [change(100, "rwkv.py:26", "aten.exp.default"), *loop, change(101, None)]
    console = Console(width=200, record=True)
    console.print(blame_report({"status": "fixed", "changes": changes, "evaluations": 7, "candidates": 300}))
    text = console.export_text()
    rows = [line for line in text.splitlines() if line.lstrip()[:1] == "n" and line.split()[0] != "node"]
    assert len(rows) == 3, rows
    assert "n0 .. n39 (40 nodes)" in text and "each as the first: `aten.add.Tensor` (n0)" in text
    few = changes[:MAX_CHANGE_ROWS]
    console = Console(width=200, record=True)
    console.print(blame_report({"status": "fixed", "changes": few, "evaluations": 7, "candidates": 300}))
    assert len([ln for ln in console.export_text().splitlines() if ln.lstrip()[:1] == "n" and ln.split()[0] != "node"]) == len(few)


def test_blame_says_a_reason_of_one_shape_once_and_points_to_it():
    """Trial 107: eleven rows of blame's table each held the same ~400-character reason, its names apart. A reason
    of a shape already shown is its first clause and the row that says the rest; --json keeps each whole."""
    from rich.console import Console

    from roundoff.report.terminal import blame_report

    def change(i: int, op: str, consumers: str, verb: str = "computes") -> dict:
        why = (f"`{op}` (n{i}) at m.py:19: keep the result in fp32 for its consumers — rounding it to bf16 here loses "
               f"what its consumer(s) {consumers} need. In code: cast what {consumers} {verb} from it back to bf16")
        return {"node": f"n{i}", "op": op, "change": "round_result=False", "kind": "keep_fp32", "source": "m.py:19",
                "explanation": why}

    changes = [change(17, "mm", "`sub` (n22)"), change(19, "mul", "`sum` (n20)"),
               change(24, "div", "`bmm` (n46), `bmm` (n54)", "compute")]
    console = Console(width=400, record=True)
    console.print(blame_report({"status": "fixed", "changes": changes, "evaluations": 7, "candidates": 30}))
    rows = {line.split()[0]: line for line in console.export_text().splitlines() if line.lstrip()[:1] == "n"
            and line.split()[0] != "node"}
    assert changes[0]["explanation"] in rows["n17"] and changes[2]["explanation"] in rows["n24"]
    assert rows["n19"].rstrip().endswith("`mul` (n19) at m.py:19: keep the result in fp32 for its consumers — as for n17 above")


def test_the_worst_nodes_table_shows_the_named_causes_and_the_origin_first():
    """A NaN run's table listed the largest excesses (nodes downstream of the NaN) and left out the
    origin the report names (a new user could not find it in the table)."""
    from roundoff.report.nodes_table import worst_nodes

    def node(nid: str, verdict: str, excess: float) -> dict:
        return {"id": nid, "verdict": verdict, "metrics": {"max_abs": 1.0, "local_excess": excess}}

    run = {"nodes": [node("n1", "nonfinite", 1.0), node("n2", "diverges", 900.0), node("n3", "diverges", 50.0)],
           "causes": [{"id": "n3", "explanation": "`mul` (n3 at model.py:3) ..."}], "nan_origin": {"id": "n1"}}
    assert {n["id"] for n in worst_nodes(run, 2)} == {"n1", "n3"}  # not n2, the largest excess


def test_the_worst_nodes_table_orders_the_named_causes_as_the_findings_do():
    """Trial 101: the findings named an overflowing `exp` (the NaN origin) first and two gradient sums NaN
    downstream of it after; the table, ranking the named nodes by own excess, listed the sums (1e18x, from
    fp64 values that underflow fp16) above the `exp` (0.005x)."""
    from roundoff.report.nodes_table import worst_nodes

    def node(nid: str, excess: float) -> dict:
        return {"id": nid, "verdict": "nonfinite", "metrics": {"max_abs": 1.0, "local_excess": excess}}

    causes = [{"id": i, "explanation": f"`op` ({i} at m.py:1) ..."} for i in ("n299", "n637", "n481")]
    run = {"nodes": [node("n637", 4.8e18), node("n481", 1.1e17), node("n299", 0.005), node("n677", 5.6e4)],
           "causes": causes, "nan_origin": {"id": "n299"}}
    assert [n["id"] for n in worst_nodes(run, 4)] == ["n299", "n637", "n481", "n677"]
    run["causes"] = causes[1:]  # the origin without a finding of its own still leads
    assert [n["id"] for n in worst_nodes(run, 3)] == ["n299", "n637", "n481"]


def test_worst_nodes_cells_say_what_their_figures_cover():
    """Trial 27: a node NaN/inf at every element showed "rel err 0, bits 0" (the figures cover the
    elements finite on both sides: none), and a node diverging by a zero a later node divides by read
    "diverges" at an own excess of 4.58 beside "diverges above 16". Oracle: the planted programs' own
    check results (the fp16 epsilon absorbed before a division; an fp16 softmax without max)."""
    from roundoff.analyze import check
    from roundoff.capture import capture
    from roundoff.report.from_check import run_from_check
    from roundoff.report.nodes_table import nodes_table
    from tests.analyze.planted import PLANTED

    def rows(name):
        case = next(c for c in PLANTED if c.name == name)
        xs = case.inputs()
        r = check(capture(case.fn, *xs, backward=case.backward), xs, case.policy, against=case.against)
        return r, _render(nodes_table(run_from_check(r), 10), tty=False)

    r, text = rows("softmax-no-max-fp16")
    full = [n for n in r.nodes if n.vs_oracle.nonfinite >= n.vs_oracle.numel > 0]
    assert full, "precondition: a node NaN/inf everywhere"
    for n in full:
        line = next(t for t in text.splitlines() if t.split()[:2] == [n.node_id, n.op])
        assert line.split()[4:6] == ["-", "-"], line
    r, text = rows("eps-absorbed-fp16")
    zeros = [n for n in r.nodes if n.verdict.value == "diverges" and n.own_excess <= 16]
    assert zeros, "precondition: a node that diverges by its zeros"
    for n in zeros:
        assert any(t.split()[:2] == [n.node_id, n.op] and t.rstrip().endswith("diverges*") for t in text.splitlines()), text
    assert "* diverges at or below 16" in " ".join(text.split())


def test_against_a_reference_the_nodes_caption_gives_the_rule_and_marks_no_zeros():
    """Trial 53: against eager, a node diverging by the `same` rule with its own excess within 16 was
    marked "diverges*", captioned "it is 0 where fp64 is not, and a later node divides by it" and "it
    diverges above 16", none of which holds for a verdict the rule gives. Oracle: the planted
    user-softmax-backward case's check against eager (nodes diverging by the rule with own excess <= 16)."""
    from roundoff.analyze import check
    from roundoff.capture import capture
    from roundoff.report.from_check import document_from_checks, run_from_check
    from tests.analyze.planted import PLANTED

    case = next(c for c in PLANTED if c.name == "user-softmax-backward")
    xs = case.inputs()
    r = check(capture(case.fn, *xs, backward=case.backward), xs, case.policy, against=case.against)
    low = [n for n in r.nodes if n.verdict.value == "diverges" and n.own_excess <= 16]
    assert case.against == "eager" and low, "precondition: nodes the rule fails with own excess within the limit"
    text = " ".join(_render(check_report(document_from_checks("t", "eager", [run_from_check(r)])), tty=False).split())
    assert "diverges*" not in text and "diverges above 16" not in text and "later node divides" not in text
    assert "verdict: the `same` rule on the node's value and eager's" in text


def test_a_passing_run_folds_its_modelling_notes_into_one_line():
    """Trial 27: on a clean model each Inductor/XLA policy printed rematerialized nodes, 20 persistent-
    reduction notes, unmodelled ops and decomposition ids, none of which a user can act on when the
    check passes. A passing run shows the screen's note and one line counting the rest (--json keeps
    them); a failing run shows them all."""
    from roundoff.analyze import check
    from roundoff.capture import capture
    from roundoff.report.from_check import document_from_checks, run_from_check

    w = get_workload("llama-block")
    xs = w.make_inputs()
    r = check(capture(w.build(), *xs, backward=w.backward), xs, "inductor-gpu", against="eager")
    assert not r.diverges and any("rematerialized" in n for n in r.notes), r.notes  # clean, with modelling notes
    doc = document_from_checks("t", "eager", [run_from_check(r)])
    text = " ".join(_render(check_report(doc), tty=False).split())
    from roundoff.analyze.output_verdicts import SCOPE_NOTE_STARTS

    scope = sum(n.startswith(SCOPE_NOTE_STARTS) for n in r.notes)  # what was not judged: shown when passing too
    assert f"{len(r.notes) - 1 - scope} note(s) on how inductor-gpu was modelled" in text, text
    assert ("policy inductor-gpu: ok (with findings within the limit, below)" in text) == bool(r.hazards or r.explanations)
    assert "screened (" in text and "rematerialized" not in text
    doc["runs"][0]["verdict"] = "diverges"  # the same notes under a failing verdict: shown
    assert "rematerialized" in " ".join(_render(check_report(doc), tty=False).split())


def test_outputs_table_shows_each_error_as_a_multiple_of_its_reference_and_the_limit():
    """Trial 28: outputs at 108x their reference passed and at 181x failed, with no limit shown. Against
    the oracle the table gives the multiple and the limit; an ok beyond it says why (no flagged node).
    Oracle: the check's own figures (forty bf16 products: ill-conditioned, no node flagged)."""
    import torch

    from roundoff.analyze import check
    from roundoff.capture import capture
    from roundoff.report.from_check import document_from_checks, run_from_check
    from roundoff.report.terminal import outputs_table
    from tests.analyze.planted import lost_increments

    x = (torch.rand(4096, generator=torch.Generator().manual_seed(0)) + 1.0).to(torch.bfloat16)
    r = check(capture(lost_increments, x), (x,), "eager", against="oracle")
    (o,) = r.outputs
    ratio = o.rmse_result / o.rmse_reference
    assert o.passes and ratio > 16, ratio  # precondition: beyond the limit, passing (nothing flagged)
    doc = document_from_checks("t", "oracle", [run_from_check(r)])
    text = " ".join(_render(outputs_table(doc["runs"][0]), tty=False).split())
    assert "x reference (limit 16 with a flagged node on its path)" in text and f"{ratio:.3g}" in text, text
    assert "ok (no flagged node on its path)" in text, text
    from roundoff.report.terminal import run_report

    head = _render(run_report(doc["runs"][0]), tty=False).splitlines()[0]  # trial 86: "ok (with findings within
    assert "ok by the path rule: 1 output(s) over the limit by value" in head, head  # the limit)" over 45-322x
    for said in ((), ("a finding",)):  # trial 94: "findings below" where none came
        head = _render(run_report({**doc["runs"][0], "explanations": list(said), "hazards": []}), tty=False).splitlines()[0]
        assert ("findings below" in head) == bool(said) and ("says why" in head) != bool(said), head
    failing = {**doc["runs"][0], "verdict": "diverges"}  # (trial 87: "diverges by the path rule" of passing ones)
    assert "by the path rule" not in _render(run_report(failing), tty=False).splitlines()[0]


def test_a_named_cause_with_an_ok_verdict_says_it_is_named():
    """Trial 28: the nodes the report names as the cause (a bf16 cast whose rounding `cos` amplifies)
    read a bare "ok" in the worst-nodes table, beside the bullet naming them."""
    from roundoff.analyze import check
    from roundoff.capture import capture
    from roundoff.report.from_check import run_from_check
    from roundoff.report.nodes_table import nodes_table
    from tests.analyze.planted import PLANTED

    case = next(c for c in PLANTED if c.name == "bf16-timesteps")
    xs = case.inputs()
    r = check(capture(case.fn, *xs, backward=case.backward), xs, case.policy, against=case.against)
    ok_causes = [n for n in r.nodes if n.node_id in r.culprits and n.verdict.value == "ok"]
    assert ok_causes, "precondition: a cause correct in its format"
    text = _render(nodes_table(run_from_check(r), 10), tty=False)
    for n in ok_causes:
        assert any(t.split()[:2] == [n.node_id, n.op] and t.rstrip().endswith("ok (named above)")
                   for t in text.splitlines()), text


def test_a_ranked_cause_no_finding_names_is_not_said_to_be_named():
    """Trial 80: three ranked causes without a sentence of their own read "ok (named above)" and were listed
    above nodes 100x worse. Oracle: the run's own findings text, which does not give their ids."""
    from roundoff.analyze import check
    from roundoff.capture import capture
    from roundoff.report.from_check import run_from_check
    from roundoff.report.nodes_table import named_causes, nodes_table
    from tests.analyze.planted import PLANTED

    case = next(c for c in PLANTED if c.name == "bf16-timesteps")
    xs = case.inputs()
    run = run_from_check(check(capture(case.fn, *xs, backward=case.backward), xs, case.policy, against=case.against))
    text = " ".join(run["explanations"])
    silent = next(n for n in run["nodes"] if n["verdict"] == "ok" and n["id"] not in {c["id"] for c in run["causes"]}
                  and f"{n['id']} " not in text and f"({n['id']}" not in text and (n["metrics"].get("max_abs") or 0) > 0)
    run["causes"] = [*run["causes"], {"id": silent["id"], "op": silent["op"], "source": silent["source"],
                                      "explanation": None}]
    assert silent["id"] not in named_causes(run)
    lines = _render(nodes_table(run, len(run["nodes"])), tty=False).splitlines()
    row = next(t for t in lines if t.split()[:2] == [silent["id"], silent["op"]])
    assert "named above" not in row, row


def test_diverging_nodes_the_table_leaves_out_are_counted(sample_document):
    """Trial 46: the worst-nodes table showed 2 of 12 diverging nodes and said nothing of the rest."""
    from roundoff.report.nodes_table import nodes_table

    run = sample_document["runs"][0]
    beyond = [n["id"] for n in run["nodes"] if n["verdict"] != "ok"]
    assert len(beyond) >= 2
    text = _render(nodes_table(run, 1), tty=False)
    assert f"and {len(beyond) - 1} more node(s) beyond the limit not shown" in text, text
    assert "more node(s) beyond the limit" not in _render(nodes_table(run, len(run["nodes"])), tty=False)
    # under the bitwise rule against a reference there is no limit: the count says what the rule fails
    # (trial 80); the rule's own name, from the document
    bitwise = {**run, "rule": "bitwise"}
    text = _render(nodes_table(bitwise, 1, against="eager"), tty=False)
    assert f"and {len(beyond) - 1} more node(s) failing the `bitwise` rule against eager not shown" in text, text


def test_outputs_table_keeps_long_output_names_whole():
    """Trial 50: `grad_model.text_model.encoder.layers.0.sel…` hid which projection a row is."""
    from roundoff.report.terminal import outputs_table

    names = [f"grad_model.text_model.encoder.layers.0.self_attn.{p}_proj.weight" for p in "qkv"]
    run = {"policy": "eager", "outputs": [{"name": n, "verdict": "ok", "rmse": 1e-3, "ref_rmse": 1e-3,
                                           "multiplier": 16.0} for n in names]}
    console = Console(width=100, record=True, color_system=None)
    console.print(outputs_table(run))
    text = "".join(line.split("│")[1].strip() if "│" in line else "" for line in console.export_text().splitlines())
    assert all(n in text for n in names), text


def test_a_program_with_many_passing_outputs_shows_its_failing_ones_and_the_worst_others():
    """Trial 99: a Whisper step printed three tables of 89 passing gradients. Past 20 outputs (2x --top), the
    table keeps every failing output and every one over the limit, and the --top passing ones of largest multiple;
    the caption counts the rest. Oracle: the rows' own figures."""
    from roundoff.report.terminal import outputs_table

    outs = [{"name": f"grad_w{i}", "verdict": "ok", "rmse": 1e-3 * (1 + i % 7), "ref_rmse": 1e-3, "multiplier": 16.0}
            for i in range(40)]
    outs[0] = {**outs[0], "name": "loss"}  # the program's own output: kept
    outs[5] = {**outs[5], "verdict": "diverges", "rmse": 1.0}  # failing: kept
    outs[9], outs[11] = {**outs[9], "rmse": 0.5}, {**outs[11], "rmse": 0.02}  # ok over the limit (the path rule)
    outs[13] = {**outs[13], "rmse": 0.018}  # over the limit too, not among the top 2
    console = Console(width=160, record=True, color_system=None)
    console.print(outputs_table({"policy": "eager", "outputs": outs}, top=2))
    text = console.export_text()
    shown = [line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│")]
    worst = sorted((o for i, o in enumerate(outs) if i not in (0, 5)), key=lambda o: -o["rmse"])[:2]
    assert worst == [outs[9], outs[11]]  # (trial 100: 60 of 63 over the limit: those too are capped)
    assert set(shown) == {"loss", "grad_w5", *(o["name"] for o in worst)}, shown
    assert shown == [o["name"] for o in outs if o["name"] in shown]  # (in the program's order)
    caption = " ".join(text.split())
    assert "... and 36 more passing output(s) not shown, 1 of them over the limit by value" in caption, caption
    assert "(--top 40 shows every one" in caption, caption
    few = outs[:20]
    console = Console(width=160, record=True, color_system=None)
    console.print(outputs_table({"policy": "eager", "outputs": few}, top=3))
    assert sum(line.startswith("│") for line in console.export_text().splitlines()) == 20  # all, up to 20


def test_observes_outputs_table_keeps_the_same_rows_as_checks():
    """Trial 101: observe printed all 50 outputs of a DeBERTa step where check's table kept 11. Its table now
    keeps, by observe's own entries (`passes`, RMSEs against fp64 and the reference), the rows check's keeps.
    Oracle: the rows' own figures."""
    from roundoff.report.observed_outputs import outputs_table

    outs = [{"name": f"grad_w{i}", "passes": True, "rmse_vs_fp64": 1e-3 * (1 + i % 7), "reference_rmse": 1e-3,
             "nonfinite": 0} for i in range(40)]
    outs[0] = {**outs[0], "name": "loss"}
    outs[5] = {**outs[5], "passes": False, "rmse_vs_fp64": 1.0}
    outs[9], outs[11] = {**outs[9], "rmse_vs_fp64": 0.5}, {**outs[11], "rmse_vs_fp64": 0.02}
    console = Console(width=160, record=True, color_system=None)
    console.print(*outputs_table({"against": "oracle", "backend": "inductor", "outputs": outs}, top=2))
    text = console.export_text()
    shown = [line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│")]
    assert shown == ["loss", "grad_w5", "grad_w9", "grad_w11"], shown
    assert "... and 36 more passing output(s) not shown" in " ".join(text.split())


def test_an_ok_row_over_the_limit_at_fp64_rounded_says_its_format_loses_it():
    """Trial 101: a DeBERTa step's gradients below fp16's range read "8.19e+03  1  0  ok" (own excess 8192,
    rel err 1, 0 bits: all 0, as eager's), which looked alarming. Oracle: torch's fp16 cast of fp64's products
    (all 0: below fp16's smallest subnormal)."""
    from roundoff.analyze import check
    from roundoff.capture import capture
    from roundoff.report.from_check import run_from_check
    from roundoff.report.nodes_table import nodes_table

    g = torch.Generator().manual_seed(0)
    x, w = ((torch.rand(64, generator=g) * 1e-3 + 1e-4).half() for _ in range(2))

    def f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return (x * w * 1e-2).float().sum() + x.float().sum()

    tiny = x.double() * w.double() * 1e-2
    assert not bool(tiny.half().any()) and bool(tiny.all())  # fp64 rounded to fp16: every product 0
    r = check(capture(f, x, w), (x, w), "eager", against="eager", nodes="all")
    text = _render(nodes_table(run_from_check(r), 10), tty=False)
    lost = [n for n in r.nodes if n.verdict.value == "ok" and n.own_excess > 16 and n.vs_oracle.max_bits == 0]
    assert lost, text
    for n in lost:
        line = next(t for t in text.splitlines() if t.split()[:2] == [n.node_id, n.op])
        assert line.rstrip().endswith("ok (fp64 rounded: its format loses it too)"), line


def test_a_value_kept_wide_and_stored_as_inf_shows_its_stored_infinities_and_its_overflow_sentence():
    """Trial 54: inductor-cpu stores an fp16 exp(-G) its kernel computes in fp32: the node read `nonfinite`
    beside nan/inf 0/0, and its overflow went unsaid behind an amplification sentence. Oracle: torch's
    fp16 cast of fp64's exp(-G) (its infinities: the format's overflow)."""
    from roundoff.analyze import check
    from roundoff.report.from_check import run_from_check
    from roundoff.report.nodes_table import nodes_table
    from tests.analyze.test_culprits import _outer_decay

    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 64, 32, generator=gen).half() for _ in range(3))
    g = (-0.5 * torch.rand(2, 64, 1, generator=gen) - 0.1).half()
    beyond = int(torch.exp(-torch.cumsum(g.double(), 1)).half().isinf().sum())
    assert beyond > 0
    r = check(_outer_decay, (q, k, v, g), "inductor-cpu", against="oracle")
    text = _render(nodes_table(run_from_check(r), 20), tty=False)
    exp_rows = [t for t in text.splitlines() if " exp " in t and "nonfinite" in t]
    assert exp_rows and f"0/0, {beyond} inf stored" in exp_rows[0], text
    assert any(e.startswith("`exp`") and f"overflows float16: at {beyond} element(s)" in e for e in r.explanations), r.explanations


def test_observe_legend_numbers_a_cause_once_whatever_node_it_names() -> None:
    """Trial 74's LSTM: one sigmoid line kept unrounded at every time step made 14 legend entries, one per
    node. Causes that differ only in their node id share a number; the legend names the nodes once."""
    from roundoff.report.observed import _cause_notes

    keeps = [f"unmodelled decision: the kernel keeps sigmoid (n{i}) unrounded where the plan rounds it"
             for i in range(76, 76 + 17 * 8, 17)]
    rows = [{"emulated_identical": False, "emulation_cause": c}
            for c in (*keeps, "summation order", keeps[0], "transcendental implementation")]
    rows.append({"emulated_identical": True, "emulation_cause": "summation order"})
    notes, numbers = _cause_notes(rows)
    assert [numbers[c] for c in keeps] == [1] * 8 and numbers["summation order"] == 2
    assert numbers["transcendental implementation"] == 3 and len(notes) == 3
    assert notes[0] == ("[1] unmodelled decision: the kernel keeps sigmoid unrounded where the plan rounds it "
                        "(at n76, n93, n110, n127, n144, n161 and 2 more)")
    # every bare cause `emulation_cause` can give is said in words (trial 105: "[3] unmodelled decision" alone)
    bare = ("transcendental implementation", "summation order or transcendental implementation", "unmodelled decision")
    said, _ = _cause_notes([{"emulated_identical": False, "emulation_cause": c} for c in bare])
    assert all(note.startswith(f"[{i}] {c} (") for i, (note, c) in enumerate(zip(said, bare), 1)), said


def test_a_passing_training_step_with_a_tie_hazard_shows_what_its_one_graph_plan_leaves_open():
    """Trial 77: a passing check of a training step whose backward compares softmax scores with their stored
    maximum gave the one-graph caveat in --json only; whether the real step reads the scores so is what the
    plan can get wrong (trial 77's attention step was "ok" with NaN gradients under torch.compile, since
    fixed: tests/plan/test_plan_inductor_oracle.py). A passing run with a rounding-decided comparison shows
    it on the terminal, one without none."""
    from roundoff.analyze import check
    from roundoff.capture import capture
    from roundoff.report.from_check import run_from_check
    from roundoff.report.terminal import run_report

    x = torch.randn(16, 32, generator=torch.Generator().manual_seed(0)).half().requires_grad_()

    def step(x: torch.Tensor) -> torch.Tensor:
        s = (x @ x.T) / 8
        e = torch.exp(s - s.amax(-1, keepdim=True))
        return (e / e.sum(-1, keepdim=True)).square().mean()

    program = capture(step, x, backward=True)
    r = check(program, program.example_inputs, "inductor-cpu", against="oracle")
    assert not r.diverges and any(h.kind == "max-subtraction-mismatch" for h in r.hazards)
    text = _render(run_report(run_from_check(r)), tty=False)
    assert "note: the gradients a rounding-decided result reaches" in text, text
    plain = capture(lambda a: (a.float() * 2).square().mean(), x, backward=True)
    calm = check(plain, plain.example_inputs, "inductor-cpu", against="oracle")
    assert "rounding-decided" not in _render(run_report(run_from_check(calm)), tty=False)


def test_an_fp32_programs_note_comes_right_under_the_verdict() -> None:
    """Trial 80: an fp32 UNet's report said that no bf16/fp16 rounding was checked in its last of ~200 lines;
    it changes how everything above it reads. Oracle: the program's own dtypes (fp32 only)."""
    from roundoff.analyze import check
    from roundoff.report.from_check import run_from_check
    from roundoff.report.terminal import run_report

    x = torch.randn(8, 8, generator=torch.Generator().manual_seed(0))
    r = check(lambda a: (a @ a).tanh(), (x,), "inductor-cpu", against="eager")
    lines = _render(run_report(run_from_check(r)), tty=False).splitlines()
    assert lines[0].startswith("policy inductor-cpu") and lines[1].startswith("note: every floating-point value of"), lines[:3]


def test_a_training_step_checked_without_backward_says_so_under_the_verdict() -> None:
    """Trial 104: a training step checked without --backward passed (its gradients 300x off fp64), and the note
    that no gradient was computed came after both tables. Oracle: the program's inputs that require grad."""
    from roundoff.analyze import check
    from roundoff.capture import capture
    from roundoff.report.from_check import run_from_check
    from roundoff.report.terminal import run_report

    w = torch.randn(8, 8, generator=torch.Generator().manual_seed(0)).bfloat16().requires_grad_()
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(1)).bfloat16()
    program = capture(lambda a, b: (a @ b).float().square().mean(), x, w)
    assert program.trainable  # w requires grad: a loss of a training step
    r = check(program, program.example_inputs, "eager", against="oracle")
    lines = _render(run_report(run_from_check(r)), tty=False).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("note: not differentiated:"))
    table = next(i for i, line in enumerate(lines) if "output" in line and ("┃" in line or "|" in line))
    assert at < table, lines[: table + 2]


def test_a_router_choice_held_at_eagers_is_said_where_the_graph_break_note_is_collapsed():
    """Trial 84: a MoE's router `topk` read by its expert loop's boolean masks is held at eager's choice in
    every run (capture.specialize), fp64's too; with more than three breaks the terminal collapsed them
    into one line by kind ("data-dependent shape x8") and never said so. Oracle: capture's own
    specializations (the `topk` among them) and the document's notes."""
    from roundoff.analyze import check
    from roundoff.capture import capture
    from roundoff.report.from_check import document_from_checks, run_from_check

    def route(x, router):
        idx = torch.topk(x @ router, 2).indices
        out = torch.zeros_like(x)
        for e in range(4):  # each expert's tokens: a boolean mask, a graph break reading the topk
            mask = (idx == e).any(-1)
            out[mask] = out[mask] + x[mask] * (e + 1)
        return out

    g = torch.Generator().manual_seed(0)
    x, router = torch.randn(16, 8, generator=g).half(), torch.randn(8, 4, generator=g).half()
    program = capture(route, x, router)
    assert any("topk = eager's choice" in s.detail for s in program.specializations)
    result = check(program, program.example_inputs, "eager", against="oracle")
    doc = document_from_checks("route", "oracle", [run_from_check(result)], program.specializations)
    assert len(doc["specializations"]) > 3
    text = " ".join(_render(check_report(doc), tty=False).split())
    assert "topk at " in text and "every run takes eager's, fp64's too" in text
