"""`roundoff sweep`: per-layer error table, checked against analyze's own per-node metrics."""

from __future__ import annotations

import csv
import json
import math

from typer.testing import CliRunner

from roundoff.cli.main import app


def run(*args: str):
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, list(args))


def _expected(workload: str, policy: str) -> dict[str, float]:
    """Per source line, the lowest SQNR (dB) vs fp64, straight from analyze.check."""
    from roundoff.analyze import check
    from roundoff.zoo import get_workload

    w = get_workload(workload)
    return _layers(check(w.build(), w.make_inputs(), policy, "oracle", nodes="all"))


def _layers(result) -> dict[str, float]:
    layers: dict[str, float] = {}
    for n in result.nodes:
        sqnr = -math.inf if n.verdict == "nonfinite" else n.vs_oracle.sqnr_db
        key = n.source or "(no source line)"
        layers[key] = min(layers.get(key, math.inf), sqnr)
    layers["output rmse"] = max(o.rmse_result for o in result.outputs)
    return layers


def test_sweep_table_matches_analyze_per_layer(tmp_path):
    out = tmp_path / "sweep.json"
    result = run(
        "sweep", "-w", "zoo:bf16-chain", "-p", "eager", "-p", "inductor-cpu", "--out", str(out)
    )
    assert result.exit_code == 0, f"{result.output}\nrepro: roundoff sweep -w zoo:bf16-chain"
    doc = json.loads(out.read_text())
    assert doc["policies"] == ["eager", "inductor-cpu"]
    for policy in doc["policies"]:
        expected = _expected("bf16-chain", policy)
        got = {r["layer"]: r["values"][policy] for r in doc["rows"]}
        assert got.keys() == expected.keys()
        for layer, value in expected.items():
            assert got[layer] == value, f"{policy} {layer}: repro: roundoff sweep -w zoo:bf16-chain"
    assert "output rmse" in result.stdout and "inductor-cpu" in result.stdout


def test_sweep_csv_has_one_column_per_policy(tmp_path):
    out = tmp_path / "sweep.csv"
    result = run(
        "sweep", "-w", "zoo:fma-cancel", "-p", "inductor-gpu", "-p", "eager", "--out", str(out)
    )
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(out.read_text().splitlines()))
    assert rows[0] == ["workload", "layer", "unit", "inductor-gpu", "eager"]
    by_layer = {r[1]: r for r in rows[1:]}
    assert float(by_layer["output rmse"][3]) == math.inf  # the FMA's inf output
    assert float(by_layer["output rmse"][4]) == 0.0
    # each row names its unit (trial 59: one column held dB for the layers and an RMSE for the output)
    assert {r[1]: r[2] for r in rows[1:]} == {r[1]: "rmse" if r[1] == "output rmse" else "sqnr_db" for r in rows[1:]}
    assert by_layer["output rmse"][2] == "rmse" and len(rows) > 2


def test_sweep_bad_usage_exits_2(tmp_path):
    assert run("sweep", "-w", "model.py:f").exit_code == 2
    assert run("sweep", "-w", "zoo:fma-cancel", "--out", str(tmp_path / "x.txt")).exit_code == 2


def test_sweep_takes_a_script_target_and_matches_analyze(tmp_path):
    """Issue 12 item 8: sweep took only zoo workloads."""
    from roundoff.analyze import check

    (tmp_path / "mine.py").write_text(
        "import torch\n\ndef f(a, b):\n    c = a * b + a\n    return c * b - a\n\n"
        "def f_inputs():\n    g = torch.Generator().manual_seed(0)\n"
        "    return (torch.randn(64, generator=g).to(torch.bfloat16),\n"
        "            torch.randn(64, generator=g).to(torch.bfloat16))\n"
    )
    out = tmp_path / "s.json"
    target = f"{tmp_path}/mine.py:f"
    result = run("sweep", target, "-p", "eager", "-p", "inductor-cpu", "--out", str(out))
    assert result.exit_code == 0, f"{result.output}\nrepro: roundoff sweep {target}"
    rows = json.loads(out.read_text())["rows"]
    assert {r["workload"] for r in rows} == {target}
    import importlib.util

    spec = importlib.util.spec_from_file_location("mine", tmp_path / "mine.py")
    mine = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mine)
    for policy in ("eager", "inductor-cpu"):
        expected = _layers(check(mine.f, mine.f_inputs(), policy, "oracle", nodes="all"))
        got = {r["layer"]: r["values"][policy] for r in rows}
        assert got == expected, f"{policy}: repro: roundoff sweep {target}"


def test_sweep_table_at_80_columns_numbers_the_policies_instead_of_folding_names():
    names = ["eager", "xla-2.9", "xla-2.10", "xla-neuron", "xla-excess-precision", "inductor-gpu"]
    args = ["sweep", "zoo:bf16-chain"] + [a for n in names for a in ("-p", n)]
    result = CliRunner(env={"COLUMNS": "80"}).invoke(app, args)
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert "motivating.py:161" in result.stdout and "…" not in result.stdout
    assert "(5) xla-excess-precision" in result.stdout


def test_a_layer_whose_sqnr_is_beyond_fp64s_resolution_has_no_cell(tmp_path):
    """Trial 82: an additive finfo.min attention mask's -3.4e38 entries are the signal of its `add`, whose
    SQNR (846 dB) said nothing of the scores it masks, and showed as the model's most accurate layer.
    Oracle: analyze's own SQNR of that node, above fp64's resolution; the other layers as analyze has them."""
    from roundoff.analyze import check
    from roundoff.cli.sweep import FP64_RESOLUTION_DB

    (tmp_path / "masked.py").write_text(
        "import torch\n\ndef f(q, k):\n    s = q @ k.T\n"
        "    mask = torch.triu(torch.full(s.shape, torch.finfo(s.dtype).min, dtype=s.dtype), 1)\n"
        "    s = s + mask\n    return torch.softmax(s, -1)\n\n"
        "def f_inputs():\n    g = torch.Generator().manual_seed(0)\n"
        "    return (torch.randn(16, 8, generator=g).to(torch.bfloat16),\n"
        "            torch.randn(16, 8, generator=g).to(torch.bfloat16))\n"
    )
    out = tmp_path / "s.json"
    target = f"{tmp_path}/masked.py:f"
    result = run("sweep", target, "-p", "eager", "--out", str(out))
    assert result.exit_code == 0, f"{result.output}\nrepro: roundoff sweep {target}"
    got = {r["layer"]: r["values"]["eager"] for r in json.loads(out.read_text())["rows"]}
    import importlib.util

    spec = importlib.util.spec_from_file_location("masked", tmp_path / "masked.py")
    masked = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(masked)
    nodes = check(masked.f, masked.f_inputs(), "eager", "oracle", nodes="all").nodes
    mask_line = next(n.source for n in nodes if n.op == "add")
    assert all(FP64_RESOLUTION_DB < n.vs_oracle.sqnr_db < math.inf for n in nodes if n.source == mask_line)
    assert got[mask_line] is None
    assert all(v is None or float(v) <= FP64_RESOLUTION_DB or float(v) == math.inf for v in got.values())
