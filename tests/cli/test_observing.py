"""`roundoff observe` through typer's CliRunner: exit codes and the JSON report, against the library."""

from __future__ import annotations

import json
import runpy

import pytest
import torch
from typer.testing import CliRunner

from roundoff.cli.main import app

SCRIPT = (
    "import torch\n"
    "def small_erf(x):\n    return torch.erf(x)\n"
    "def small_erf_inputs():\n    g = torch.Generator().manual_seed(0)\n"
    "    return ((torch.rand(2048, generator=g) * 2 - 1) * 1e-2,)\n"
)


def run(*args: str):
    return CliRunner(env={"COLUMNS": "1000"}).invoke(app, list(args))


def test_observe_names_the_erf_kernel_and_exits_1(tmp_path):
    script = tmp_path / "erf_small.py"
    script.write_text(SCRIPT)
    out = run("observe", f"{script}:small_erf", "--json")
    assert out.exit_code == 1, out.output
    doc = json.loads(out.stdout)  # (not `output`: stderr too, a progress line after 30 s on a loaded machine)
    first = doc["first_divergent"]
    assert doc["verdict"] == "diverges" and first["op"] == "erf" and first["source"] == "erf_small.py:3"
    assert first["emulation_cause"] == "transcendental implementation"
    assert doc["outputs_identical_to_unobserved"] is True
    text = run("observe", f"{script}:small_erf")
    assert text.exit_code == 1 and "first diverging kernel" in text.output and "erf_small.py:3" in text.output
    # the script's function compiled by torch.compile itself ran beside (its module importable by name: Dynamo
    # inlines the function), and computes erf as observe's step does: the same graph, bit for bit
    tc = doc["torch_compile"]
    assert tc == {"compared": True, "not_compared": None, "departures": []}, tc


def test_bad_usage_exits_2_with_one_line(tmp_path):
    script = tmp_path / "erf_small.py"
    script.write_text(SCRIPT)
    bad = run("observe", f"{script}:small_erf", "--backend", "xla")
    assert bad.exit_code == 2 and "--backend 'xla'" in bad.output and len(bad.output.strip().splitlines()) == 1
    ref = run("observe", f"{script}:small_erf", "--against", "bf16")
    assert ref.exit_code == 2 and "--against" in ref.output
    rule = run("observe", f"{script}:small_erf", "--rule", "close")
    assert rule.exit_code == 2 and "--rule 'close'" in rule.output and len(rule.output.strip().splitlines()) == 1
    split = run("observe", f"{script}:small_erf", "--partitioned")
    assert split.exit_code == 2 and "add --backward" in split.output and len(split.output.strip().splitlines()) == 1
    if not torch.cuda.is_available():
        cuda = run("observe", f"{script}:small_erf", "--device", "cuda")
        assert cuda.exit_code == 2 and "CUDA is not available" in cuda.output, cuda.output


NO_FAKE = (
    "import torch\n"
    "@torch.library.custom_op('roundoff_observe_test::no_fake', mutates_args=())\n"
    "def no_fake(x: torch.Tensor) -> torch.Tensor:\n    return x * 1.5\n"
    "def f(x):\n    return no_fake(x * 2).sum()\n"
    "def f_inputs():\n    return (torch.rand(8),)\n"
)


def test_a_custom_op_torch_compile_cannot_compile_is_the_programs_fault(tmp_path):
    """A custom op without a fake impl: torch.compile itself fails on the function, so observe says
    which op and what to do (exit 2, one line), not 'internal error, a roundoff bug' (trial 35)."""
    script = tmp_path / "no_fake.py"
    script.write_text(NO_FAKE)
    out = run("observe", f"{script}:f")
    assert out.exit_code == 2, out.output
    assert "roundoff_observe_test::no_fake" in out.output and "fake" in out.output
    assert len(out.output.strip().splitlines()) == 1 and "roundoff bug" not in out.output
    other = tmp_path / "no_fake2.py"  # the same program under another op name (an op registers once)
    other.write_text(NO_FAKE.replace("no_fake'", "no_fake2'"))
    namespace = runpy.run_path(str(other))
    with pytest.raises(Exception, match="fake"):  # the oracle: real torch.compile fails on it too
        torch.compile(namespace["f"], backend="inductor", fullgraph=True)(*namespace["f_inputs"]())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (run on the H200)")
def test_observe_on_cuda_runs(tmp_path):
    script = tmp_path / "erf_small.py"
    script.write_text(SCRIPT)
    out = run("observe", f"{script}:small_erf", "--device", "cuda", "--json")
    assert out.exit_code in (0, 1), out.output
    doc = json.loads(out.stdout)  # (not `output`: stderr too, a progress line after 30 s on a loaded machine)
    assert doc["device"].startswith("cuda") and doc["policy"] == "inductor-gpu" and doc["kernels"]


def test_inductor_config_is_set_while_observe_compiles(tmp_path, monkeypatch):
    """Trial 45: torch 2.13's vectorized C++ code for an fp16 backward did not build, and only a wrapper
    script could set `cpp.simdlen=1`. Oracle: Inductor's own config, read while observe_compiled runs."""
    from torch._inductor import config

    import roundoff.observed

    seen = []
    original = roundoff.observed.observe_compiled

    def spy(*args, **kwargs):
        seen.append((config.cpp.simdlen, config.fallback_random))
        return original(*args, **kwargs)

    monkeypatch.setattr(roundoff.observed, "observe_compiled", spy)
    script = tmp_path / "erf_small.py"
    script.write_text(SCRIPT)
    out = run("observe", f"{script}:small_erf", "--inductor-config", "cpp.simdlen=1",
              "--inductor-config", "fallback_random=True")
    assert seen == [(1, True)], seen
    # and it took effect: Inductor's scalar C++ erf is accurate near 0 where its vectorized one is not
    # (test_observe_names_the_erf_kernel_and_exits_1, the same program with the default config)
    assert out.exit_code == 0, out.output
    assert config.cpp.simdlen is None  # restored
    bad = run("observe", f"{script}:small_erf", "--inductor-config", "cpp.simdlenx=1")
    assert bad.exit_code == 2 and "has no 'cpp.simdlenx'" in bad.output and len(bad.output.strip().splitlines()) == 1
    assert "did you mean 'cpp.simdlen'?" in bad.output, bad.output  # (trial 103: max_autotun had no suggestion)
    assert "cpp.simdlen" in config._config  # (the suggestion is a key this torch has)
    form = run("observe", f"{script}:small_erf", "--inductor-config", "cpp.simdlen")
    assert form.exit_code == 2 and "KEY=VALUE" in form.output


def test_inductor_config_values_are_read_as_the_type_inductor_declares(tmp_path, monkeypatch):
    """Trial 56: ``--inductor-config emulate_precision_casts=false`` was the text "false", which Inductor
    takes for true, and ``cpp.threads=two`` failed inside the compile as "a roundoff bug". Oracle:
    Inductor's own config, read while observe_compiled runs, and the types its config declares."""
    from torch._inductor import config

    import roundoff.observed

    seen = []
    original = roundoff.observed.observe_compiled

    def spy(*args, **kwargs):
        seen.append((config.fallback_random, config.cpp.simdlen))
        return original(*args, **kwargs)

    monkeypatch.setattr(roundoff.observed, "observe_compiled", spy)
    script = tmp_path / "erf_small.py"
    script.write_text(SCRIPT)
    with config.patch(fallback_random=True):
        run("observe", f"{script}:small_erf", "--inductor-config", "fallback_random=false",
            "--inductor-config", "cpp.simdlen=None")
    assert seen == [(False, None)], seen
    for setting, declared in (("cpp.threads=two", "int"), ("max_autotune=maybe", "bool"), ("cpp.simdlen=abc", "int or None")):
        bad = run("observe", f"{script}:small_erf", "--inductor-config", setting)
        assert bad.exit_code == 2 and f"takes {declared}" in bad.output, bad.output
        assert len(bad.output.strip().splitlines()) == 1, bad.output


def test_a_policy_with_node_overrides_is_refused(tmp_path):
    """Trial 57: ``observe -p FIX.toml`` compiled plain Inductor and compared its kernels with the fix's
    emulation, calling them identical though the fix (a node kept in fp32) was not in them: a fix only
    roundoff.compile enforces. Oracle: the policy file's own node overrides."""
    import dataclasses

    from roundoff.policy import get_policy
    from roundoff.policy.model import OpOverride
    from roundoff.policy.serialize import policy_to_toml

    fix = dataclasses.replace(get_policy("inductor-cpu"), name="fix", node_overrides={"n1": OpOverride(round_result=False)})
    (tmp_path / "fix.toml").write_text(policy_to_toml(fix))
    script = tmp_path / "erf_small.py"
    script.write_text(SCRIPT)
    out = run("observe", f"{script}:small_erf", "-p", str(tmp_path / "fix.toml"))
    assert out.exit_code == 2 and "node overrides (n1)" in out.output, out.output
    assert len(out.output.strip().splitlines()) == 1


def test_observe_piped_prints_a_progress_line_while_it_runs(tmp_path, monkeypatch):
    """A CI log showed nothing for the minute or more an observe of a real model takes (trial 92's Olmo2: 79 s);
    off a terminal it now prints, as check does, a line every `HEARTBEAT_S` naming what is under way."""
    monkeypatch.setattr("roundoff.cli.outputs.HEARTBEAT_S", 0.05)
    script = tmp_path / "erf_small.py"
    script.write_text(SCRIPT)
    out = run("observe", f"{script}:small_erf", "--json")
    assert out.exit_code == 1
    json.loads(out.stdout)  # (stdout stays one document)
    assert f"s: observing {script}:small_erf compiled by inductor" in out.stderr, out.stderr
