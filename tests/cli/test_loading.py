"""TARGET resolution: good scripts load; each kind of bad input is a one-line UsageError."""

from __future__ import annotations

import pytest
import torch

from roundoff.capture.errors import CaptureError
from roundoff.cli.loading import UsageError, capture_target, load_target


def test_good_script_loads_with_default_factory_and_runs(scripts):
    loaded = load_target(f"{scripts}/good.py:f")
    a, b = loaded.inputs
    assert a.dtype == torch.bfloat16 and a.shape == (64,)
    assert torch.equal(loaded.fn(a, b), (a * b + a) * b - a)


def test_inputs_option_picks_another_factory(scripts):
    loaded = load_target(f"{scripts}/good.py:f", inputs_ref=f"{scripts}/good.py:other_inputs")
    assert [t.shape for t in loaded.inputs] == [(8,), (8,)]


@pytest.mark.parametrize(
    "target, inputs, pattern",
    [
        (
            "broken.py:f",
            None,
            r"failed to import: it raised ZeroDivisionError: division by zero \(broken.py:3\)",
        ),
        ("missing_dep.py:f", None, r"failed to import: it raised ModuleNotFoundError"),
        ("good.py:nope", None, r"function 'nope' not found .* it defines: .*\bf\b"),
        ("good.py:mmm", None, r"function 'mmm' not found in .*; did you mean 'mm'\? it defines"),  # (trial 61)
        ("good.py:NOT_A_FUNCTION", None, r"is an int, not a function"),
        ("good.py:no_factory", None, r"define no_factory_inputs\(\)"),
        ("good.py:f", "good.py:nope", r"input factory 'nope' not found"),
        ("good.py:bad_factory", None, r"non-tensor inputs \(#1: float\)"),
        ("good.py:mm", None, r"error in the program at good.py:\d+: RuntimeError"),
        ("good.py:ints", None, r"no floating-point value"),
        ("good.py:f", "good.py:one_input", r"good.py:f\(a, b\) cannot take the 1 tensor\(s\) .*missing a required"),
        ("good.py:ints", "good.py:other_inputs", r"good.py:ints\(a\) cannot take the 2 tensor\(s\) .*too many"),
        ("good.py:compare", None, r"no floating-point outputs \(outputs are bool\)"),
        ("nowhere.py:f", None, r"does not exist$"),  # (an absolute path: no folder it was looked in)
        ("good.txt:f", None, r"not a .py file"),
        ("good.py", None, r"not of the form SCRIPT:NAME .*; did you mean '.*/good.py:NAME' with NAME one of f, mm, ints, "
                          r"compare, bad_factory \(each has a NAME_inputs factory\)\?$"),  # (trial 83: 'good.py:py'; trial 103: one of several)
        ("one_target.py", None, r"not of the form SCRIPT:NAME .*; did you mean '.*/one_target.py:loss'\?$"),
        ("good.f", None, r"not of the form SCRIPT:NAME .*; did you mean '.*/good.py:f'\?$"),  # (trial 82)
        ("good.py.f", None, r"not of the form SCRIPT:NAME .*; did you mean '.*/good.py:f'\?$"),
        # the option's form is checked before the (broken) script is imported; no zoo:NAME offered
        ("broken.py:f", "good.py", r"^--inputs '.*good.py' is not of the form SCRIPT:FACTORY \(e"),
    ],
)
def test_bad_input_is_a_one_line_usage_error(scripts, target, inputs, pattern):
    target = f"{scripts}/{target}" if not target.startswith("zoo:") else target
    inputs = f"{scripts}/{inputs}" if inputs else None
    with pytest.raises((UsageError, CaptureError), match=pattern) as info:
        capture_target(load_target(target, inputs))
    assert "\n" not in str(info.value), (
        f"multi-line error; repro: load_target({target!r}, {inputs!r})"
    )


def test_the_function_runs_once_and_its_prints_go_to_stderr(tmp_path, capsys):
    """The old preflight ran FUNCTION eagerly before capture: side effects happened twice."""
    (tmp_path / "count.py").write_text(
        "import torch\nCALLS = []\n"
        "def f(a):\n    CALLS.append(1)\n    print('in f')\n    return a * 2\n"
        "def f_inputs():\n    print('in factory')\n    return (torch.ones(3),)\n"
    )
    loaded = load_target(f"{tmp_path}/count.py:f")
    capture_target(loaded)
    assert len(loaded.fn.__globals__["CALLS"]) == 1
    out = capsys.readouterr()
    assert out.out == "" and "in f" in out.err and "in factory" in out.err


@pytest.mark.parametrize(
    "body, pattern",
    [
        ("raise SystemExit(0)", r"called sys.exit\(0\) \(exits.py:4\)"),
        ("import sys; sys.exit(1)", r"called sys.exit\(1\) \(exits.py:4\)"),
        (
            "raise ZeroDivisionError('mine')",
            # from the factory the loader says it; from the function, capture does (same line)
            r"raised ZeroDivisionError: mine \(exits.py:4\)"
            r"|error in the program at exits.py:4: ZeroDivisionError: mine",
        ),
    ],
)
@pytest.mark.parametrize("where", ["function", "factory"])
def test_user_code_cannot_exit_or_raise_past_the_loader(tmp_path, body, pattern, where):
    """sys.exit in user code used to decide roundoff's exit status (the loader caught Exception)."""
    fn_body, factory_body = (body, "pass") if where == "function" else ("pass", body)
    (tmp_path / "exits.py").write_text(
        "import torch\n\n"
        f"def f(a):\n    {fn_body}\n    return a * 2\n\n"
        f"def f_inputs():\n    {factory_body}\n    return (torch.ones(3),)\n"
    )
    if where == "factory":  # the factory's body is on line 8
        pattern = pattern.replace("exits.py:4", "exits.py:8")
    with pytest.raises((UsageError, CaptureError), match=pattern):
        capture_target(load_target(f"{tmp_path}/exits.py:f"))


def test_a_script_alone_is_offered_the_function_that_has_an_inputs_factory(tmp_path):
    """Trial 94: ``check simclr.py`` offered ``simclr.py:nt_xent``, a helper defined before ``loss``, the
    function its ``loss_inputs`` factory is for."""
    (tmp_path / "sim.py").write_text(
        "import torch\n"
        "def helper(z):\n    return z * 2\n"
        "def loss(a):\n    return helper(a).sum()\n"
        "def loss_inputs():\n    return (torch.ones(3),)\n"
    )
    with pytest.raises(UsageError, match=r"did you mean '.*/sim.py:loss'\?$"):
        load_target(f"{tmp_path}/sim.py")
