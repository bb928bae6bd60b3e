"""The CLI contract under bad and unusual input, through the real console script in a subprocess.

Most cases run through `contract_driver.py`: it imports the console script's function once and
forks a fresh process per case (torch's import costs 2-4 s here; the table would take over 10
minutes on 2 busy cores otherwise); the cases marked `fresh` run as ``python -m roundoff.cli`` in a
plain subprocess, import-time behaviour included. For every case: the exit status (0 ok,
1 diverges, 2 bad usage, 3 internal error, 130 interrupted);
an error is exactly one ``error: ...`` line naming the file, line or option at fault; no Python
traceback (only ``--debug`` shows one); under ``--json`` stdout is one JSON document, the report or
``{"error": ..., "exit": N}``; no file is written in the case's folder other than those asked for.
Cases whose right behaviour needs another branch's fix carry the right expectation and an xfail.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from roundoff.policy import list_policies
from contract_scripts import write_all  # tests/cli is on sys.path (rootdir-less test dirs)

ROOT = Path(__file__).resolve().parents[2]
SRC = str(ROOT / "src")
OK, DIV, USAGE = frozenset({0}), frozenset({0, 1}), frozenset({2})


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]
    exit: frozenset[int]
    needles: tuple[str, ...] = ()  # in the error line (exit 2/3) or on stdout (exit 0/1)
    writes: tuple[str, ...] = ()  # files the command was asked to write
    xfail: str | None = None
    fresh: bool = False  # run as `python -m roundoff.cli` in its own interpreter


def check(id, *args, exit=DIV, needles=(), writes=(), xfail=None, fresh=False) -> Case:
    return Case(id, ("check", *args), frozenset(exit), tuple(needles), tuple(writes), xfail, fresh)


def cmd(id, *args, exit=USAGE, needles=(), writes=(), xfail=None, fresh=False) -> Case:
    return Case(id, tuple(args), frozenset(exit), tuple(needles), tuple(writes), xfail, fresh)


def inputs(factory: str, fn: str = "one", **kw) -> Case:
    return check(f"{fn}-on-{factory}", f"m.py:{fn}", "--inputs", f"m.py:{factory}", "-p", "eager",
                 **kw)


CASES = [
    # the script, the function and the factory
    check("script-missing", "nowhere.py:f", exit=USAGE, needles=["nowhere.py", "does not exist"]),
    check("script-not-py", "m.txt:f", exit=USAGE, needles=["m.txt", "not a .py file"]),
    check("script-is-folder", "adir.py:f", exit=USAGE, needles=["adir.py", "is a folder"]),
    check("target-no-colon", "m.py", exit=USAGE, needles=["'m.py'", "SCRIPT:NAME"]),
    check("function-missing", "m.py:nope", exit=USAGE, needles=["'nope' not found", "m.py"]),
    check("function-not-callable", "m.py:NOT_A_FUNCTION", exit=USAGE, needles=["not a function"]),
    check("target-is-a-class", "m.py:Net", exit=USAGE, needles=["'Net'", "nn.Module class", "model = Net()"]),
    check("module-without-forward", "m.py:headless", exit=USAGE, needles=["'headless'", "defines no forward()"]),
    check("import-raises", "broken.py:f", exit=USAGE, needles=["ZeroDivisionError", "broken.py:3"]),
    check("import-syntax-error", "syntax.py:f", exit=USAGE, needles=["SyntaxError", "syntax.py"]),
    check("import-missing-module", "missing_dep.py:f", exit=USAGE,
          needles=["ModuleNotFoundError", "missing_dep.py"]),
    check("import-sys-exit", "exit_import.py:f", exit=USAGE,
          needles=["sys.exit(0)", "exit_import.py:2"], fresh=True),
    check("factory-default-missing", "m.py:one", exit=USAGE, needles=["define one_inputs()"]),
    check("factory-missing", "m.py:f", "--inputs", "m.py:nope", exit=USAGE,
          needles=["input factory 'nope' not found"]),
    check("factory-bad-ref", "m.py:f", "--inputs", "m.py", exit=USAGE, needles=["--inputs"]),
    inputs("not_tuple", exit=USAGE, needles=["m.py:not_tuple()", "returned int"]),
    inputs("not_tensors", exit=USAGE, needles=["non-tensor inputs"]),
    inputs("empty", exit=USAGE, needles=["returned an empty tuple", "non-empty"]),
    inputs("none_f", exit=USAGE, needles=["returned NoneType"]),
    inputs("dict_f", exit=USAGE, needles=["returned dict"]),
    inputs("raises_f", exit=USAGE, needles=["factory broke", "m.py:"]),
    inputs("exits0_f", exit=USAGE, needles=["sys.exit(0)", "m.py:"]),
    check("factory-sys-exit-json", "m.py:one", "--inputs", "m.py:exits0_f", "--json",
          exit=USAGE, needles=["sys.exit(0)"]),
    check("function-sys-exit-0", "m.py:exits0", "--inputs", "m.py:x1", exit=USAGE,
          needles=["sys.exit(0)", "m.py:"]),
    check("function-sys-exit-1-json", "m.py:exits1", "--inputs", "m.py:x1", "--json",
          exit=USAGE, needles=["sys.exit(1)", "m.py:"]),
    check("function-interrupted", "m.py:interrupted", "--inputs", "m.py:x1", exit={130},
          needles=["interrupted"]),
    check("function-raises", "m.py:zde", "--inputs", "m.py:x1", exit=USAGE,
          needles=["ZeroDivisionError", "m.py:"]),
    check("function-returns-none", "m.py:returns_none", "--inputs", "m.py:x1", exit=USAGE,
          needles=["non-tensor output", "m.py:"]),
    check("function-returns-bool", "m.py:returns_bool", "--inputs", "m.py:x1", exit=USAGE,
          needles=["no floating-point outputs"]),
    check("function-shape-mismatch", "m.py:mm", "--inputs", "m.py:x1", exit=USAGE,
          needles=["m.py:", "RuntimeError"]),
    check("debug-shows-traceback", "broken.py:f", "--debug", exit=USAGE, needles=["Traceback"]),
    check("debug-keeps-exit-2", "m.py:nope", "--debug", exit=USAGE, needles=["Traceback", "nope"]),
    # prints of user code never reach stdout under --json
    check("prints-json", "m.py:noisy", "--inputs", "m.py:noisy_f", "-p", "eager", "--json",
          needles=['"verdict"'], fresh=True),
    # input dtypes and values
    inputs("ints_in", exit=USAGE, needles=["float"]),
    inputs("ints_in", fn="tofloat"),
    inputs("bools_in", exit=USAGE, needles=["float"]),
    inputs("complex_in", exit=USAGE, needles=["complex"]),
    # eager PyTorch has no fp8 arithmetic on CPU: the program itself fails where eager would
    inputs("fp8_in", exit=USAGE, needles=["m.py:", "Float8_e4m3fn"]),
    inputs("zero_in"),
    inputs("scalar_in"),
    inputs("nan_in", needles=["eager"]),
    check("nan-input-json", "m.py:one", "--inputs", "m.py:nan_in", "-p", "eager", "--json",
          needles=['"verdict"']),
    inputs("meta_in", exit=USAGE, needles=["meta"]),
    inputs("x1", fn="fp8_out"),
    # program constructs
    inputs("x1", fn="branch"),
    inputs("x1", fn="item"),
    inputs("x1", fn="nz"),
    inputs("x1", fn="inplace", exit=USAGE, needles=["m.py:", "in-place"]),
    inputs("x1", fn="rand"),
    inputs("x1", fn="custom_fn"),
    check("custom-autograd-backward", "m.py:custom_fn", "--inputs", "m.py:x1g", "--backward",
          "-p", "eager"),
    inputs("x1", fn="libop"),
    inputs("x1", fn="closure"),
    inputs("x1", fn="int8mm", exit=USAGE, needles=["_weight_int8pack_mm", "cannot be evaluated in float64"]),
    # policies
    check("policy-unknown", "m.py:f", "-p", "nope", exit=USAGE, needles=["unknown policy 'nope'"]),
    check("policy-malformed-toml", "m.py:f", "-p", "bad.toml", exit=USAGE, needles=["bad.toml"]),
    check("policy-missing-toml", "m.py:f", "-p", "gone.toml", exit=USAGE, needles=["gone.toml"]),
    check("policy-folder-toml", "m.py:f", "-p", "dir.toml", exit=USAGE, needles=["dir.toml"]),
    check("policy-mistyped-field", "m.py:f", "-p", "mistyped.toml", exit=USAGE,
          needles=["mistyped.toml", "rounding"]),
    check("policy-unknown-field", "m.py:f", "-p", "unknown_field.toml", exit=USAGE,
          needles=["unknown_field.toml", "frobnicate"]),
    check("policy-missing-node", "m.py:f", "-p", "n9999.toml", exit=USAGE,
          needles=["n9999", "roundoff trace"]),
    check("against-unknown", "m.py:f", "--against", "nope", exit=USAGE, needles=["'nope'"]),
    # options
    check("top-negative", "m.py:f", "--top", "-1", exit=USAGE, needles=["--top"]),
    check("top-not-int-json", "m.py:f", "--top", "abc", "--json", exit=USAGE, needles=["--top"],
          fresh=True),
    check("unknown-flag", "m.py:f", "--frobnicate", exit=USAGE, needles=["--frobnicate"]),
    check("no-target", exit=USAGE, needles=["TARGET"]),
    cmd("unknown-command", "frobnicate", needles=["frobnicate"]),
    cmd("command-typo", "chekc", needles=["Did you mean 'check'? See 'roundoff --help'"]),  # (trial 108: "?; see")
    check("zoo-unknown", "zoo:nope", exit=USAGE, needles=["zoo:nope"]),
    check("zoo-with-inputs", "zoo:fma-cancel", "--inputs", "m.py:x1", exit=USAGE,
          needles=["--inputs"]),
    cmd("trace-three-policies", "trace", "m.py:f", "-p", "eager", "-p", "fp32", "-p", "fp64",
        needles=["--policy", "got 3"]),
    cmd("trace-ok", "trace", "m.py:f", exit=OK, needles=["inductor-gpu"]),
    # outputs
    check("html-folder", "m.py:f", "--html", "outdir", exit=USAGE, needles=["--html", "folder"]),
    check("html-missing-folder", "m.py:f", "--html", "nodir/r.html", exit=USAGE,
          needles=["--html", "does not exist"]),
    check("html-unwritable", "m.py:f", "--html", "/proc/r.html", exit=USAGE, needles=["--html"]),
    check("html-folder-json", "m.py:f", "--html", "outdir", "--json", exit=USAGE,
          needles=["--html"]),
    check("html-suffix", "m.py:f", "--html", "r.txt", exit=USAGE, needles=["--html", ".html"]),  # trial 63
    check("html-ok", "m.py:f", "-p", "eager", "--html", "r.html", needles=["HTML report"],
          writes=["r.html"], fresh=True),
    cmd("blame-save-policy-folder", "blame", "m.py:f", "--save-policy", "outdir",
        needles=["--save-policy", "folder"]),
    cmd("blame-save-policy-suffix", "blame", "m.py:f", "--save-policy", "fix.txt",
        needles=["--save-policy", "ending in .toml"]),
    cmd("blame-repro-missing-folder", "blame", "m.py:f", "--repro", "nodir/r.py",
        needles=["--repro", "does not exist"]),
    cmd("blame-search-unknown", "blame", "m.py:f", "--search", "nope", needles=["--search"]),
    cmd("blame-against-policy", "blame", "m.py:f", "--against", "fp32", needles=["--against"]),
    cmd("blame-already-ok", "blame", "m.py:f", "-p", "eager", "--save-policy", "fix.toml",
        "--repro", "r.py", exit=OK, needles=["already within tolerance", "not written"]),
    cmd("blame-quoted-name-repro", "blame", "zoo:fma-cancel", "-p", "quotes.toml",
        "--repro", "r.py", exit=OK, needles=["repro script"], writes=["r.py"]),
    cmd("sweep-out-folder", "sweep", "m.py:f", "--out", "outdir", needles=["--out"]),
    cmd("sweep-out-suffix", "sweep", "m.py:f", "--out", "s.txt", needles=["--out", ".csv"]),
    cmd("sweep-script-target", "sweep", "m.py:f", "-p", "eager", "-p", "inductor-cpu",
        "--out", "s.csv", exit=OK, needles=["m.py:f", "output rmse"], writes=["s.csv"]),
    cmd("sweep-script-inputs", "sweep", "m.py:one", "--inputs", "m.py:x1", "-p", "eager",
        exit=OK, needles=["m.py:one"]),
    cmd("policy-show-unknown", "policy", "show", "nope", needles=["'nope'"]),
]
CASES += [
    check(f"against-{p.name}", "m.py:f", "-p", "eager", "--against", p.name)
    for p in list_policies()
]


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["PYTHONPATH"] = SRC
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(ROOT / ".inductor-cache"))
    return env


def _fresh(case: Case, folder: Path) -> int:
    with open(folder.parent / "out", "w") as out, open(folder.parent / "err", "w") as err:
        proc = subprocess.run([sys.executable, "-m", "roundoff.cli", *case.args], cwd=folder,
                              env=_env(), stdout=out, stderr=err, timeout=300)
    return proc.returncode


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, dict]:
    """Each case in its own folder (`<id>/work`, stdout and stderr beside it in `<id>/`)."""
    folders, before = {}, {}
    for c in CASES:
        folders[c.id] = tmp_path_factory.mktemp(c.id) / "work"
        folders[c.id].mkdir()
        write_all(folders[c.id])
        before[c.id] = _files(folders[c.id])
    batch = [c for c in CASES if not c.fresh]
    jobs = [{"argv": list(c.args), "cwd": str(folders[c.id]), "out": str(folders[c.id].parent /
             "out"), "err": str(folders[c.id].parent / "err")} for c in batch]
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("contract_driver.py"))],
                          input=json.dumps(jobs), capture_output=True, text=True, env=_env(),
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    codes = dict(zip([c.id for c in batch], json.loads(proc.stdout), strict=True))
    codes |= {c.id: _fresh(c, folders[c.id]) for c in CASES if c.fresh}
    return {
        c.id: {"rc": codes[c.id], "out": (folders[c.id].parent / "out").read_text(),
               "err": (folders[c.id].parent / "err").read_text(),
               "new": _files(folders[c.id]) - before[c.id], "folder": folders[c.id]}
        for c in CASES
    }


def test_the_table_is_large_enough_and_ids_are_unique():
    assert len(CASES) >= 60 and len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=c.id, marks=[pytest.mark.xfail(strict=False, reason=c.xfail)] if c.xfail
                  else []) for c in CASES],
)
def test_contract(case: Case, results):
    r = results[case.id]
    repro = f"repro: cd {r['folder']} && python -m roundoff.cli {' '.join(case.args)}"
    assert r["rc"] in case.exit, f"exit {r['rc']}, stderr={r['err'][-800:]!r}; {repro}"
    if "--debug" not in case.args:
        assert "Traceback" not in r["out"] + r["err"], f"{r['err'][-800:]}; {repro}"
    errors = [line for line in r["err"].splitlines()
              if line.startswith(("error: ", "internal error", "interrupted"))]
    if r["rc"] >= 2 and "--debug" not in case.args:
        assert len(errors) == 1, f"want one error line, got {r['err']!r}; {repro}"
        for needle in case.needles:
            assert needle in errors[0], f"{needle!r} not in {errors[0]!r}; {repro}"
    elif r["rc"] in (0, 1):
        assert not errors, f"{errors}; {repro}"
        for needle in case.needles:
            assert needle in r["out"], f"{needle!r} not on stdout; {repro}"
    if "--json" in case.args:
        doc = json.loads(r["out"])  # all of stdout is one JSON document
        if r["rc"] >= 2:
            assert doc["exit"] == r["rc"] and errors[0].endswith(doc["error"]), repro
    asked = set(case.writes) if r["rc"] in (0, 1) else set()
    assert r["new"] == asked, f"files written {sorted(r['new'])}, asked {sorted(asked)}; {repro}"


def test_blame_repro_with_a_quoted_policy_name_is_valid_python(results):
    """A policy named with triple quotes used to end repro.py's docstring (a SyntaxError)."""
    r = results["blame-quoted-name-repro"]
    text = (r["folder"] / "r.py").read_text()
    assert 'tri"""ple' in ast.get_docstring(ast.parse(text))


def test_blame_on_a_fine_program_says_so_in_words(results):
    out = results["blame-already-ok"]["out"]
    assert "already_ok" not in out and "fixed policy" not in out
    assert "--repro r.py: not written" in out and "--save-policy fix.toml: not written" in out


def test_console_script_runs_main():
    """`roundoff` must run main() (CPU allocator, usage errors as exit 2), not the typer app."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["roundoff"] == "roundoff.cli.main:main"
