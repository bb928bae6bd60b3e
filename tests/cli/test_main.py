"""The `roundoff` command through typer's CliRunner: outputs checked against the library itself
(policy TOML round trip, trace text) and exit statuses 0/1/2 on zoo workloads and small scripts."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from roundoff.cli.main import app
from roundoff.policy import get_policy, list_policies, policy_from_toml, policy_to_toml

WIDE = {"COLUMNS": "1000"}


def run(*args: str):
    result = CliRunner(env=WIDE).invoke(app, list(args))
    result.cli_args = args  # for repro lines in failure messages
    return result


def _usage_error(result, *needles: str) -> None:
    repro = f"repro: roundoff {' '.join(result.cli_args)}"
    assert result.exit_code == 2, f"exit {result.exit_code}, stderr={result.stderr!r}; {repro}"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), f"not one line: {result.stderr!r}"
    assert "Traceback" not in result.output
    for n in needles:
        assert n in lines[0], f"{n!r} not in {lines[0]!r}"


def test_policies_lists_every_preset_with_its_source():
    result = run("policies")
    assert result.exit_code == 0, result.output
    for p in list_policies():
        assert p.name in result.stdout and p.source in result.stdout, (
            f"{p.name}: repro: roundoff policies"
        )


@pytest.mark.parametrize("name", [p.name for p in list_policies()])
def test_policy_show_prints_toml_that_loads_back_to_the_same_policy(name):
    result = run("policy", "show", name)
    assert result.exit_code == 0, result.output
    assert policy_from_toml(result.stdout) == get_policy(name), (
        f"repro: roundoff policy show {name}"
    )


def test_policy_show_accepts_a_toml_path(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(policy_to_toml(get_policy("xla-2.9")))
    result = run("policy", "show", str(path))
    assert result.exit_code == 0 and policy_from_toml(result.stdout) == get_policy("xla-2.9")


def test_unknown_policy_is_a_usage_error_listing_presets():
    _usage_error(run("policy", "show", "nope"), "'nope'", "eager", "inductor-gpu")


def test_trace_prints_the_planners_trace():
    from roundoff.capture import capture
    from roundoff.plan import format_trace, plan
    from roundoff.zoo import get_workload

    result = run("trace", "zoo:fma-cancel", "--policy", "inductor-gpu")
    assert result.exit_code == 0, result.output
    w = get_workload("fma-cancel")
    expected = format_trace(plan(capture(w.build(), *w.make_inputs()), get_policy("inductor-gpu")))
    assert result.stdout.strip() == expected.strip()
    assert "fma(" in result.stdout  # the FMA candidate at the subtraction is shown


def test_trace_two_policies_side_by_side_and_refuses_three(scripts):
    result = run("trace", f"{scripts}/good.py:f", "-p", "xla-2.9", "-p", "xla-2.10")
    assert result.exit_code == 0, result.output
    assert "xla-2.9" in result.stdout and "xla-2.10" in result.stdout
    _usage_error(run("trace", "zoo:fma-cancel", "-p", "eager", "-p", "fp32", "-p", "fp64"), "got 3")


@pytest.mark.parametrize(
    "target, extra, needles",
    [
        ("broken.py:f", [], ["failed to import", "ZeroDivisionError"]),
        ("good.py:nope", [], ["'nope' not found"]),
        ("good.py:mm", [], ["error in the program at good.py:", "RuntimeError"]),
        ("good.py:ints", [], ["no floating-point value"]),
        ("good.py:compare", [], ["no floating-point outputs"]),
        ("good.py:f", ["--policy", "nope"], ["unknown policy 'nope'"]),
        ("good.py:f", ["--policy", "inductor_cpu"], ["unknown policy 'inductor_cpu'; did you mean 'inductor-cpu'?"]),
        ("good.py:f", ["--policy", "absent.toml"], ["policy file 'absent.toml': No such file"]),  # (said twice: trial 61)
        ("good.py:f:extra", [], ["more than one ':' after the script", "good.py'"]),
        ("zoo:no-such-workload", [], ["unknown workload", "fma-cancel"]),
    ],
)
@pytest.mark.parametrize("command", ["check", "trace"])
def test_bad_input_exits_2_with_one_line(scripts, command, target, extra, needles):
    target = target if target.startswith("zoo:") else f"{scripts}/{target}"
    _usage_error(run(command, target, *extra), *needles)


def test_a_policy_file_without_toml_suffix_is_named_as_the_file_it_is(scripts, tmp_path, monkeypatch):
    """Trial 58: an existing file that is no policy, and a policy file named without its suffix, were
    both "unknown policy" with the preset list; the one now gets its parse error, the other a hint."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("just notes\n")
    (tmp_path / "fix.toml").write_text(policy_to_toml(get_policy("eager")))
    _usage_error(run("check", f"{scripts}/good.py:f", "-p", "notes.txt"), "'notes.txt' is no preset",
                 "does not parse", "TOML")
    _usage_error(run("check", f"{scripts}/good.py:f", "-p", "fix"), "did you mean 'fix.toml'?")


def test_two_policy_files_of_one_name_are_told_apart_by_their_file(scripts, tmp_path):
    """Trial 58: two fixes blame saved from one preset both printed "policy eager+blame: ...", one
    diverging, one not, with no way to tell which file was which."""
    import dataclasses

    paths = [tmp_path / "a.toml", tmp_path / "b.toml"]
    for path, rounding in zip(paths, ["eager", "fp32"]):
        p = dataclasses.replace(get_policy(rounding), name="eager+blame")
        path.write_text(policy_to_toml(p))
    result = run("check", f"{scripts}/good.py:f", "-p", str(paths[0]), "-p", str(paths[1]), "--json")
    names = [r["policy"] for r in json.loads(result.stdout)["runs"]]
    assert names == [f"eager+blame ({paths[0]})", f"eager+blame ({paths[1]})"], result.output


def test_unknown_against_names_the_option_and_every_reference(scripts):
    result = run("check", f"{scripts}/good.py:f", "--against", "eagr")
    _usage_error(result, "--against 'eagr'", "eager", "oracle (fp64)", "inductor-gpu", "xla-2.9")
    # trial 82: -p suggested the preset meant, --against did not
    _usage_error(run("check", f"{scripts}/good.py:f", "--against", "oracel"), "did you mean 'oracle'?")
    _usage_error(run("check", f"{scripts}/good.py:f", "--against", "inductor_cpu"), "did you mean 'inductor-cpu'?")


def test_debug_mode_prints_the_traceback_and_keeps_the_exit_status(scripts):
    plain, debug = run("check", f"{scripts}/broken.py:f"), run("check", f"{scripts}/broken.py:f", "--debug")
    assert plain.exit_code == debug.exit_code == 2  # the user's script raises: bad usage either way
    assert "Traceback" in debug.stderr and "ZeroDivisionError" in debug.stderr and "Traceback" not in plain.stderr


def test_cli_usage_mistakes_exit_2():
    assert run("check").exit_code == 2  # missing TARGET (click's own usage error)
    assert run("frobnicate").exit_code == 2



def test_a_command_group_alone_says_a_command_is_missing(capsys):
    """Trial 63: `roundoff policy` printed the usage, then "error: ; see ..."."""
    from roundoff.cli.main import main

    with pytest.raises(SystemExit) as exited:
        main(["policy"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "error: no command given" in err and "roundoff policy --help" in err, err


def test_an_error_inside_roundoff_is_exit_3_not_a_usage_error(scripts, monkeypatch):
    """Any ValueError/TypeError/KeyError used to be exit 2, hiding roundoff bugs as usage errors."""
    import roundoff.analyze

    def broken(*args, **kwargs):
        raise KeyError("internal table lookup")

    monkeypatch.setattr(roundoff.analyze, "check", broken)
    result = run("check", f"{scripts}/good.py:f", "-p", "eager", "--json")
    assert result.exit_code == 3, result.output
    assert "roundoff bug" in result.stderr and "--debug" in result.stderr
    assert json.loads(result.stdout) == {"error": result.stderr.strip(), "exit": 3}


def test_check_help_names_default_policy_inputs_convention_exit_codes_and_code_execution():
    text = run("check", "--help").stdout
    flat = " ".join(text.split())
    for needle in ("inductor-gpu", "FUNCTION_inputs", "Exit status: 0", "3 internal error",
                   "run only code you trust", "check [OPTIONS] TARGET"):
        assert needle in flat, f"{needle!r} missing from check --help"
    assert "<bool>" not in text and "{target}" not in text


@pytest.mark.parametrize("command", ["trace", "blame", "sweep"])
def test_every_command_running_user_code_says_so(command):
    assert "run only code you trust" in " ".join(run(command, "--help").stdout.split())


def test_nodes_table_keeps_source_names_whole_at_80_columns():
    """At 80 columns rich folded `motivating.py:69` into `motivati` / `ng.py:69`."""
    result = CliRunner(env={"COLUMNS": "80"}).invoke(
        app, ["check", "zoo:softmax-backward", "-p", "inductor-gpu"]
    )
    assert result.exit_code == 1, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert "motivating.py:69" in result.stdout
    assert re.search(r"motivati(?!ng\.py:\d)", result.stdout) is None, result.stdout
    assert re.search(r"nonfinit(?!e)", result.stdout) is None  # not `nonfinit` / `e`


def test_a_missing_optional_package_is_an_environment_error_not_a_roundoff_bug(monkeypatch, tmp_path):
    """Without plotly, --html used to exit 3 ("this is a roundoff bug"); it is exit 2 naming the extra."""
    import builtins

    real_import = builtins.__import__

    def no_plotly(name, *args, **kwargs):
        if name.split(".")[0] == "plotly":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_plotly)
    from roundoff.report.html import _plotlyjs

    _plotlyjs.cache_clear()  # an earlier --html in this process would otherwise serve plotly.js
    result = run("check", "zoo:bf16-chain", "-p", "eager", "--html", str(tmp_path / "r.html"))
    assert result.exit_code == 2, result.output
    assert "pip install 'roundoff[cli]'" in result.stderr and "roundoff bug" not in result.stderr


def test_blame_refuses_several_policies_instead_of_taking_the_last() -> None:
    _usage_error(run("blame", "zoo:fma-cancel", "-p", "eager", "-p", "inductor-gpu"),
                 "one policy at a time", "--policy eager --policy inductor-gpu")
    # trial 60: --by-values against eager was accepted and changed nothing
    _usage_error(run("blame", "zoo:fma-cancel", "-p", "inductor-gpu", "--against", "eager", "--by-values"),
                 "--by-values is for --against oracle")
    _usage_error(run("blame", "zoo:fma-cancel", "--rule", "exact"), "--rule 'exact': choose same, allclose or bitwise")


def test_blame_and_observe_take_check_s_tol(tmp_path) -> None:
    """Trial 75: check has --tol, blame and observe had none. A bad one is refused before any work; blame's is
    the tolerance of its verdict, as check's: ``x*s - x*s`` under inductor-gpu is the product's rounding error
    (FMA), eager's exact 0, which `same` fails at 1e-4 and its allclose passes at 1 (errors below 0.01)."""
    for command in ("blame", "observe"):
        _usage_error(run(command, "zoo:fma-cancel", "--tol", "-1"), "--tol -1.0: a positive number")
    script = tmp_path / "cancel.py"
    script.write_text("import torch\n\ndef f(x):\n    return x * 0.1 - x * 0.1\n\n"
                      "def f_inputs():\n    return (torch.linspace(1e5, 1e6, 64),)\n")
    statuses = {}
    for tol in ("1e-4", "1"):
        check_exit = run("check", f"{script}:f", "-p", "inductor-gpu", "--tol", tol).exit_code
        result = run("blame", f"{script}:f", "-p", "inductor-gpu", "--tol", tol, "--json")
        statuses[tol] = (check_exit, json.loads(result.stdout)["status"])
    assert statuses == {"1e-4": (1, "fixed"), "1": (0, "already_ok")}, statuses


def test_blame_refuses_to_write_its_repro_over_the_script_it_runs(tmp_path) -> None:
    """Trial 75: ``--repro model.py`` on target model.py:f replaced the user's code with the repro."""
    script = tmp_path / "model.py"
    text = "import torch\n\ndef f(x):\n    return x * 3\n\ndef f_inputs():\n    return (torch.ones(4).half(),)\n"
    script.write_text(text)
    _usage_error(run("blame", f"{script}:f", "--repro", str(script)), "is the script", "model.py:f")
    assert script.read_text() == text
    _usage_error(run("blame", "zoo:fma-cancel", "--against", "oracle", "--rule", "bitwise", "--by-values"),
                 "--by-values is for the same rule")


def test_check_by_values_fails_an_output_the_path_rule_passes(tmp_path) -> None:
    """Trials 82/83: an output over the limit by its values, no node on its path flagged, passed with no way
    to fail it. Forty bf16 products (tests/analyze/test_by_values.py has the fp64 oracle): exit 0 by default,
    1 with --by-values, the finding and the legend saying why; refused against eager."""
    script = tmp_path / "products.py"
    script.write_text("import torch\n\ndef f(x):\n    for _ in range(40):\n        x = x * 1.0009765625\n    return x\n\n"
                      "def f_inputs():\n    g = torch.Generator().manual_seed(0)\n"
                      "    return ((torch.rand(4096, generator=g) + 1.0).to(torch.bfloat16),)\n")
    assert run("check", f"{script}:f", "-p", "eager", "--against", "oracle").exit_code == 0
    strict = run("check", f"{script}:f", "-p", "eager", "--against", "oracle", "--by-values")
    assert strict.exit_code == 1, strict.output
    text = " ".join(strict.stdout.split())
    assert "no node on the path of `x` is flagged" in text and "(--by-values: whatever its path)" in text, text
    doc = json.loads(run("check", f"{script}:f", "-p", "eager", "--against", "oracle", "--by-values", "--json").stdout)
    assert doc["runs"][0]["outputs_by_values"] is True and "--by-values" in doc["legend"]
    _usage_error(run("check", f"{script}:f", "--by-values"), "--by-values is for --against oracle")


def test_piped_tables_keep_one_line_per_row(tmp_path):
    """Piped (no terminal, no COLUMNS), a table wider than 160 columns is printed at its own width: at 160
    a Wav2Vec2's 63-character gradient names folded onto lines of empty cells and a grep of the log lost
    them (trial 88)."""
    script = tmp_path / "deep.py"
    script.write_text(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "model = torch.nn.Sequential()\n"
        "model.add_module('feature_extractor_with_a_long_name_as_research_code_nests_its_modules', torch.nn.ModuleDict(\n"
        "    {'convolution_layers_number_zero_projection_of_the_first_block': torch.nn.Linear(4, 4).to(torch.bfloat16)}))\n"
        "def step(x):\n"
        "    return model.feature_extractor_with_a_long_name_as_research_code_nests_its_modules['convolution_layers_number_zero_projection_of_the_first_block'](x).square().sum()\n"
        "def step_inputs():\n"
        "    return (torch.randn(3, 4).to(torch.bfloat16),)\n"
    )
    result = CliRunner(env={"COLUMNS": None}).invoke(
        app, ["check", f"{script}:step", "--backward", "-p", "eager", "--against", "eager"])
    assert result.exit_code == 0, result.output
    rows = [line for line in result.stdout.splitlines() if "grad_model.feature_extractor" in line]
    names = {n for n, _ in model_names(script)}
    assert len(rows) == len(names) == 2, result.stdout
    for name in names:  # the whole name, its figures and its verdict on one line
        assert any(f"grad_{name}" in line and "│ ok" in line for line in rows), result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) > 160  # (the table's own width)


def model_names(script):
    """The script's parameter names, as the check names their gradients."""
    import runpy
    return list(runpy.run_path(str(script))["model"].named_parameters(prefix="model"))


def test_a_script_and_a_name_given_apart_are_offered_as_one_target(scripts, capsys):
    """Trial 96: ``check mdn.py nll`` (a space for the colon) was told only "unexpected extra argument"."""
    from roundoff.cli.main import main

    with pytest.raises(SystemExit) as exited:
        main(["check", f"{scripts}/good.py", "f"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1 and "unexpected extra argument" in err, err
    assert f"did you mean '{scripts}/good.py:f'? See 'roundoff check --help'" in err, err
    assert err.startswith("error: got unexpected"), err  # (trial 105: the one capitalised error)
