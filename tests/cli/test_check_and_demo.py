"""`roundoff check` and `roundoff demo` end to end on zoo workloads and a small script.

Oracles: the demo's numbers against torch's own fp32 arithmetic and casts and the C library's
`fmaf` (ctypes); check's JSON against the published schema and against analyze's own CheckResult.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import math
import runpy
import struct

import pytest
import torch
from typer.testing import CliRunner

from roundoff.cli.demo import SCALE, X, fma_demo
from roundoff.cli.main import app
from roundoff.report.json_report import SCHEMA

WIDE = {"COLUMNS": "1000"}


def run(*args: str):
    return CliRunner(env=WIDE).invoke(app, list(args))


def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def test_demo_numbers_match_torch_and_libm_fmaf():
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.fmaf.restype = ctypes.c_float
    libm.fmaf.argtypes = [ctypes.c_float] * 3
    d = fma_demo()
    x, s = torch.tensor(X, dtype=torch.float32), torch.tensor(SCALE, dtype=torch.float32)
    p = x * s
    assert d.product == p.item() and d.eager == torch.exp(p - p).item() == 1.0
    assert d.error == libm.fmaf(_f32(X), _f32(SCALE), -p.item()), "repro: roundoff demo --quick"
    assert d.error == d.exact - d.product != 0.0  # the product's rounding error, exactly
    assert d.contracted == torch.exp(torch.tensor(d.error, dtype=torch.float32)).item() == math.inf
    exact = x.double() * s.double()
    for fmt, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16), ("fp16", torch.float16)):
        assert dict(d.rounded)[fmt] == exact.to(dtype).item(), (
            f"{fmt}: repro: roundoff demo --quick"
        )


def test_demo_quick_prints_formats_and_the_fma_numbers():
    result = run("demo", "--quick")
    assert result.exit_code == 0, result.output
    d = fma_demo()
    for text in ("fp8_e4m3fn", "bf16", repr(d.error), repr(d.product), "inf"):
        assert text in result.stdout, f"{text!r} missing; repro: roundoff demo --quick"


def test_check_fma_cancel_diverges_under_inductor_gpu_and_not_under_emulation():
    jsonschema = pytest.importorskip("jsonschema")
    result = run(
        "check", "zoo:fma-cancel", "-p", "inductor-gpu", "-p", "inductor-emulate", "--json"
    )
    assert result.exit_code == 1, (
        f"{result.output}\nrepro: roundoff check zoo:fma-cancel -p inductor-gpu"
    )
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, SCHEMA)
    gpu, emulate = doc["runs"]
    assert (gpu["verdict"], emulate["verdict"]) == ("diverges", "ok")
    assert gpu["nan_origin"]["op"].startswith("exp") and gpu["first_divergent"]["op"].startswith(
        "sub"
    )
    assert any(h["kind"] == "fma-cancellation" for h in gpu["hazards"])
    assert result.stderr == ""  # no progress bar on a non-terminal, not even its closing newline


def test_check_within_tolerance_exits_0_and_writes_html(scripts, tmp_path):
    page = tmp_path / "r.html"
    result = run("check", f"{scripts}/good.py:f", "-p", "inductor-emulate", "--html", str(page))
    assert result.exit_code == 0, f"{result.output}\nrepro: roundoff check good.py:f"
    assert result.stderr == "" and page.stat().st_size > 1_000_000
    assert "inductor-emulate" in result.stdout and "ok" in result.stdout


def test_json_matches_analyze_check_result():
    from roundoff.analyze import check
    from roundoff.zoo import get_workload

    result = run("check", "zoo:bf16-chain", "-p", "inductor-cpu", "--against", "oracle", "--json")
    doc = json.loads(result.stdout)
    w = get_workload("bf16-chain")
    direct = check(w.build(), w.make_inputs(), "inductor-cpu", "oracle")
    assert result.exit_code == (1 if direct.diverges else 0)
    run0 = doc["runs"][0]
    assert [n["id"] for n in run0["nodes"]] == [n.node_id for n in direct.nodes]
    for entry, node in zip(run0["nodes"], direct.nodes, strict=True):
        assert entry["metrics"]["max_ulp"] == node.vs_oracle.max_ulp, f"{node.node_id}"
        assert entry["verdict"] == node.verdict


def test_demo_verdict_table_shows_the_motivating_divergences():
    from rich.console import Console

    from roundoff.cli.checking import motivating_checks

    rows = motivating_checks(Console(stderr=True))
    verdicts = {(w.split()[0], p): v for w, p, v, _ in rows}
    assert verdicts[("zoo:fma-cancel", "inductor-gpu")] == "diverges"
    assert verdicts[("zoo:fma-cancel", "inductor-emulate")] == "ok"
    assert verdicts[("zoo:softmax-backward", "inductor-gpu")] == "diverges"
    finding = {(w.split()[0], p): f for w, p, _, f in rows}
    assert "inf" in finding[("zoo:fma-cancel", "inductor-gpu")]
    assert "NaN" in finding[("zoo:softmax-backward", "inductor-gpu")]


def test_blame_fixes_fma_cancel_and_its_policy_passes_check(tmp_path):
    fixed, repro = tmp_path / "fixed.toml", tmp_path / "repro.py"
    result = run(
        "blame",
        "zoo:fma-cancel",
        "-p",
        "inductor-gpu",
        "--save-policy",
        str(fixed),
        "--repro",
        str(repro),
    )
    assert result.exit_code == 0, (
        f"{result.output}\nrepro: roundoff blame zoo:fma-cancel -p inductor-gpu"
    )
    assert "contract_fma=False" in result.stdout and "1 change(s), fixed" in result.stdout
    assert repro.read_text().strip() and fixed.read_text().strip()
    # the change set, applied as a policy, really brings the program within tolerance
    assert run("check", "zoo:fma-cancel", "-p", str(fixed)).exit_code == 0
    assert run("check", "zoo:fma-cancel", "-p", "inductor-gpu").exit_code == 1


def test_a_saved_fix_is_refused_for_another_program_with_the_same_node_ids(tmp_path):
    """Node ids are per program: blame's saved policy records the program (name and graph
    fingerprint) and another program with that node id is refused, not silently overridden."""
    from roundoff.capture import capture
    from roundoff.capture.program import graph_fingerprint
    from roundoff.zoo import get_workload

    fixed = tmp_path / "fix.toml"
    result = run("blame", "zoo:fma-cancel", "-p", "inductor-gpu", "--save-policy", str(fixed))
    assert result.exit_code == 0, result.output
    w = get_workload("fma-cancel")
    mine = graph_fingerprint(capture(w.build(), *w.make_inputs()))
    text = fixed.read_text()
    assert 'made_for = "fma_cancel"' in text and f'made_for_graph = "{mine}"' in text, text
    assert run("check", "zoo:fma-cancel", "-p", str(fixed)).exit_code == 0  # its own program
    other = tmp_path / "other.py"
    other.write_text(
        "import torch\n"
        "def g(x):\n    y = x * 3\n    z = y + 1\n    w = z * 2\n    return torch.exp(w - y)\n"
        "def g_inputs():\n    return (torch.randn(8).to(torch.bfloat16),)\n"
    )
    refused = run("check", f"{other}:g", "-p", str(fixed))
    assert refused.exit_code == 2, refused.output
    assert f"node overrides were made for program 'fma_cancel' (graph {mine}), not for 'g'" in (
        refused.stderr
    )
    assert "node ids differ between programs" in refused.stderr
    # a policy without the record behaves as before: the node id exists in g, so it is applied
    bare = tmp_path / "bare.toml"
    bare.write_text("\n".join(ln for ln in text.splitlines() if not ln.startswith("made_for")))
    assert run("check", f"{other}:g", "-p", str(bare)).exit_code in (0, 1)


def test_check_against_a_policy_agrees_with_analyze():
    from roundoff.analyze import check
    from roundoff.zoo import get_workload

    result = run(
        "check", "zoo:fma-cancel", "-p", "inductor-gpu", "--against", "inductor-cpu", "--json"
    )
    w = get_workload("fma-cancel")
    direct = check(w.build(), w.make_inputs(), "inductor-gpu", "inductor-cpu")
    assert result.exit_code == (1 if direct.diverges else 0)
    assert json.loads(result.stdout)["against"] == "inductor-cpu"


def test_graph_breaks_are_reported_in_json_terminal_and_html(tmp_path):
    """A branch on tensor data and an .item() make the check hold for these inputs only: every
    report says so, with the text capture itself gives for each graph break."""
    from roundoff.capture import capture

    script = tmp_path / "brk.py"
    script.write_text(
        "import torch\n"
        "def f(x):\n"
        "    if x.abs().max() > 100:\n"
        "        x = x / 2\n"
        "    s = x.float().sum().item()\n"
        "    return (x * s).to(torch.bfloat16)\n"
        "def f_inputs():\n"
        "    return (torch.linspace(-2, 2, 16).to(torch.bfloat16),)\n"
    )
    ns: dict = {}
    exec(compile(script.read_text(), str(script), "exec"), ns)
    expected = [s.describe() for s in capture(ns["f"], *ns["f_inputs"]()).specializations]
    assert len(expected) == 2, expected
    html = tmp_path / "r.html"
    result = run("check", f"{script}:f", "-p", "eager", "--json", "--html", str(html))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert len(doc["specializations"]) == 2
    for text, described in zip(doc["specializations"], expected, strict=True):
        assert text.startswith(described.split(" (")[0]) and "holds for these inputs" in text
        assert "checked across a graph break at brk.py:" in text
    page = html.read_text()
    assert page.count("checked across a graph break") == 2
    terminal = run("check", f"{script}:f", "-p", "eager").stdout
    notes = [ln for ln in terminal.splitlines() if "checked across a graph break" in ln]
    assert len(notes) == 2 and all(ln.startswith("note: ") for ln in notes), terminal


def test_every_node_examines_nodes_the_screen_skips():
    """A clean check screens (no node examined, a note says so); --every-node examines every node,
    the same nodes `check(..., nodes="all")` reports."""
    from roundoff.analyze import check
    from roundoff.zoo import get_workload

    screened = json.loads(run("check", "zoo:bf16-chain", "-p", "inductor-gpu", "--json").stdout)["runs"][0]
    every = json.loads(run("check", "zoo:bf16-chain", "-p", "inductor-gpu", "--every-node", "--json").stdout)["runs"][0]
    assert screened["verdict"] == every["verdict"] == "ok"
    assert screened["nodes"] == [] and any("--every-node" in n for n in screened["notes"])
    w = get_workload("bf16-chain")
    direct = check(w.build(), w.make_inputs(), "inductor-gpu", nodes="all")
    assert [n["id"] for n in every["nodes"]] == [n.node_id for n in direct.nodes] != []


def test_a_graph_break_repeated_at_one_line_is_reported_once_with_its_count():
    """A module called twice breaks the graph at the same line twice (a new user's MoE blocks): one
    note for that line that says how many more, not the same sentence twice."""
    from roundoff.capture import capture
    from roundoff.report.from_check import document_from_checks

    def f(x):
        for _ in range(3):
            x = x * x.float().abs().max().item()
        return x

    specs = capture(f, torch.linspace(-1, 1, 8).to(torch.bfloat16)).specializations
    assert len(specs) == 3 and len({s.describe() for s in specs}) == 1, specs
    doc = document_from_checks("f", "eager", [], specs)
    assert len(doc["specializations"]) == 1
    assert "the same at 2 more break(s) of this line" in doc["specializations"][0]


def test_many_graph_breaks_are_one_terminal_note_by_line_and_kind(tmp_path):
    """Trial 66: a MoE's expert loop put 14 graph-break notes before the findings. More than three are
    one note on the terminal, counted by line and kind; --json keeps each, and `graph_breaks` counts
    them. Oracle: the capture's own `specializations`."""
    from roundoff.capture import capture

    script = tmp_path / "many.py"
    script.write_text(
        "import torch\n"
        "def f(x):\n"
        "    a = x.float().sum().item()\n"
        "    b = x.float().amax().item()\n"
        "    if x.abs().max() > 100:\n"
        "        x = x / 2\n"
        "    for _ in range(3):\n"
        "        x = x * x.float().abs().amin().item()\n"
        "    return (x * (a + b)).to(torch.bfloat16)\n"
        "def f_inputs():\n"
        "    return (torch.linspace(1, 2, 16).to(torch.bfloat16),)\n"
    )
    ns = runpy.run_path(str(script))
    specs = capture(ns["f"], *ns["f_inputs"]()).specializations
    assert len(specs) == 6, specs
    doc = json.loads(run("check", f"{script}:f", "-p", "eager", "--json").stdout)
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert len(doc["specializations"]) == 4  # one per line (the loop's three breaks are one)
    counted = {(b["source"], b["kind"]): b["count"] for b in doc["graph_breaks"]}
    assert sum(counted.values()) == 6 and counted[("many.py:8", "item")] == 3
    assert counted == {(s.source, s.kind.value): sum(t.source == s.source and t.kind == s.kind for t in specs)
                       for s in specs}
    terminal = " ".join(run("check", f"{script}:f", "-p", "eager").stdout.split())
    assert terminal.count("note: checked across") == 1
    assert "checked across 6 graph breaks at 4 line(s)" in terminal and "many.py:8 (item x3)" in terminal


def test_blame_json_is_one_document_with_the_fix_and_the_files_it_wrote(tmp_path):
    fixed, repro = tmp_path / "fixed.toml", tmp_path / "repro.py"
    result = run("blame", "zoo:fma-cancel", "-p", "inductor-gpu", "--json", "--save-policy", str(fixed),
                 "--repro", str(repro))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)  # all of stdout is the document
    assert doc["schema"] == "roundoff.blame" and doc["status"] == "fixed"
    assert [c["node_id"] for c in doc["changes"]] and doc["ok_after"] and not doc["ok_before"]
    assert doc["written"] == {"--save-policy": str(fixed), "--repro": str(repro)}
    assert run("check", "zoo:fma-cancel", "-p", str(fixed)).exit_code == 0  # the fix, checked as a policy
    already = run("blame", "zoo:fma-cancel", "-p", str(fixed), "--json", "--save-policy", str(tmp_path / "x.toml"))
    assert already.exit_code == 0, already.output
    doc = json.loads(already.stdout)
    assert doc["status"] == "already_ok" and doc["written"] == {"--save-policy": None, "--repro": None}
    assert not (tmp_path / "x.toml").exists()


def test_check_blame_and_observe_documents_carry_the_same_version_keys():
    """Trial 54: check's JSON had schema_version/roundoff_version, blame's schema/version, observe's none;
    trial 77: check's had no `schema` name while blame's and observe's did. Oracle: the package's own
    version string and the command that wrote the document."""
    from roundoff import __version__

    docs = [json.loads(run(*args).stdout) for args in (
        ("check", "zoo:fma-cancel", "-p", "inductor-gpu", "--json"),
        ("blame", "zoo:fma-cancel", "-p", "inductor-gpu", "--json"),
        ("observe", "zoo:fma-cancel", "--json"),
    )]
    for doc in docs:
        assert doc["roundoff_version"] == __version__ and isinstance(doc["schema_version"], int), sorted(doc)
    assert [d.get("schema") for d in docs] == ["roundoff.check", "roundoff.blame", "roundoff.observe"]


def test_tol_reaches_the_rule_and_bad_values_are_refused(tmp_path):
    """Trial 67: the README said to lower `--tol` for outputs whose error is below `tol/10`, and check had
    no such option. An output of order 1e-4 whose RMS error against fp64 (3.9e-6) is 46x its reference's
    passes `same` by the absolute slack tol/10 = 1e-5, and fails at --tol 1e-7: the verdicts of
    `check(..., tol=)` in each case, and the RMSEs by hand."""
    from roundoff.analyze import check

    script = tmp_path / "tiny.py"
    script.write_text(
        "import torch\n"
        "def f(x):\n"
        "    y = x * 3.0 + 1.0\n"
        "    return ((y * y - 1.0) * 1e-3).to(torch.bfloat16)\n"
        "def f_inputs():\n"
        "    g = torch.Generator().manual_seed(0)\n"
        "    return ((torch.randn(256, generator=g) * 1e-2).bfloat16(),)\n"
    )
    ns = runpy.run_path(str(script))
    (x,) = ns["f_inputs"]()
    exact = ns["f"](x.double()).double()
    eager = ns["f"](x).double()
    assert 1e-5 > float((eager - exact).pow(2).mean().sqrt()) > 1e-7  # within tol/10 only by default
    for tol, code in ((1e-4, 0), (1e-7, 1)):
        direct = check(ns["f"], (x,), "eager", against="inductor-cpu", tol=tol)
        assert direct.diverges is bool(code)
        result = run("check", f"{script}:f", "-p", "eager", "--against", "inductor-cpu", "--tol", str(tol))
        assert result.exit_code == code, result.output
    for bad in ("0", "-1e-4", "inf"):
        result = run("check", f"{script}:f", "--tol", bad)
        assert result.exit_code == 2 and "--tol" in result.output and "Traceback" not in result.output, result.output


def test_json_outputs_count_their_nan_and_inf_elements(tmp_path):
    """Trial 69: the JSON outputs held `rmse: "nan"` only; the counts were in the prose, for the first three
    failing outputs. Oracle: real eager's outputs, NaN where its fp16 exp overflows and is multiplied by 0
    and inf where it overflows alone (fp64's values are finite everywhere)."""
    script = tmp_path / "overflow.py"
    script.write_text(
        "import torch\n"
        "def f(x):\n"
        "    e = torch.exp(x)\n"
        "    return e * (x < 11.5), e[::3]\n"
        "def f_inputs():\n"
        "    return (torch.linspace(10.5, 12.5, 64).half(),)\n"
    )
    x = torch.linspace(10.5, 12.5, 64).half()
    e = torch.exp(x)
    want = [int((~t.isfinite()).sum()) for t in (e * (x < 11.5), e[::3])]
    assert bool(torch.exp(x.double()).isfinite().all()) and 0 < want[1] < want[0]
    result = run("check", f"{script}:f", "-p", "eager", "--against", "oracle", "--json")
    doc = json.loads(result.stdout)
    assert [o["nonfinite"] for o in doc["runs"][0]["outputs"]] == want


def test_blame_of_a_training_step_says_before_the_search_that_its_fix_may_not_compile(tmp_path):
    """Trial 71: a 13-minute blame --backward saved a fix at backward-only nodes, and only roundoff.compile's
    error then said it cannot place them. The command says so before it searches, and not with --placeable."""
    script = tmp_path / "step.py"
    script.write_text("import torch\n\n\ndef loss(x):\n    return (x * 3).exp().sum()\n\n\ndef loss_inputs():\n"
                      "    return (torch.linspace(-1, 1, 8, dtype=torch.bfloat16).requires_grad_(),)\n")
    args = ("blame", f"{script}:loss", "--backward", "-p", "eager", "--save-policy", str(tmp_path / "fix.toml"))
    said = run(*args)
    assert said.exit_code == 0 and "add --placeable for a fix roundoff.compile applies" in said.stderr, said.output
    assert said.stderr.startswith("blame: searching without --placeable, so a fix it finds may")  # (of the search)
    assert "--placeable" not in run(*args, "--placeable").stderr


def test_check_without_a_policy_says_the_default_models_a_gpu(scripts):
    """Trial 76: with no -p, CPU inputs were checked under inductor-gpu without a word; a hint on stderr
    (stdout, the report, stays as it was), none where a policy is named."""
    default = run("check", f"{scripts}/good.py:f", "--json")
    named = run("check", f"{scripts}/good.py:f", "-p", "inductor-gpu", "--json")
    assert "no --policy: checking inductor-gpu" in default.stderr and "-p inductor-cpu" in default.stderr
    assert "no --policy" not in named.stderr
    assert json.loads(default.stdout)["runs"][0]["policy"] == "inductor-gpu"
