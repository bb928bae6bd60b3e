"""`roundoff check --against fp64` is the oracle (as in the library); `--rule` picks the comparison."""

from __future__ import annotations

import json


from typer.testing import CliRunner

from roundoff.cli.main import app


def run(*args: str):
    return CliRunner(env={"COLUMNS": "1000"}).invoke(app, list(args))


def test_against_fp64_is_the_oracle_not_the_fp64_policy():
    a = run("check", "zoo:fma-cancel", "-p", "eager", "--against", "fp64", "--json")
    b = run("check", "zoo:fma-cancel", "-p", "eager", "--against", "oracle", "--json")
    assert a.exit_code == b.exit_code == 0, a.output
    da, db = json.loads(a.stdout), json.loads(b.stdout)
    assert da["against"] == db["against"] == "oracle" and da["runs"] == db["runs"]
    assert da["legend"].startswith("reference = the fp64 oracle")


def test_rule_bitwise_fails_where_same_passes(tmp_path):
    script = tmp_path / "chain.py"
    script.write_text(
        "import torch\n"
        "def chain(a, b, c, d):\n    return ((a * b) + c) * d - a\n"
        "def inputs():\n    g = torch.Generator().manual_seed(0)\n"
        "    return tuple(torch.randn(256, generator=g).bfloat16() for _ in range(4))\n"
    )
    target, inputs = f"{script}:chain", f"{script}:inputs"
    same = run("check", target, "--inputs", inputs, "-p", "inductor-cpu", "--json")
    bitwise = run("check", target, "--inputs", inputs, "-p", "inductor-cpu", "--rule", "bitwise", "--json")
    assert same.exit_code == 0 and bitwise.exit_code == 1, (same.output, bitwise.output)
    assert json.loads(bitwise.stdout)["runs"][0]["rule"] == "bitwise"
    bad = run("check", target, "--inputs", inputs, "--rule", "close")
    assert bad.exit_code == 2 and "--rule" in bad.output

