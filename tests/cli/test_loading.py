"""TARGET resolution: good scripts load; each kind of bad input is a one-line UsageError."""

from __future__ import annotations

import pytest
import torch

from roundoff.cli.loading import UsageError, load_target


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
            r"failed to import: ZeroDivisionError: division by zero \(broken.py:3\)",
        ),
        ("missing_dep.py:f", None, r"failed to import: ModuleNotFoundError"),
        ("good.py:nope", None, r"function 'nope' not found .* it defines: .*\bf\b"),
        ("good.py:NOT_A_FUNCTION", None, r"is a int, not a function"),
        ("good.py:no_factory", None, r"define no_factory_inputs\(\)"),
        ("good.py:f", "good.py:nope", r"input factory 'nope' not found"),
        ("good.py:bad_factory", None, r"non-tensor inputs \(#1: float\)"),
        (
            "good.py:mm",
            None,
            r"fails on its inputs \[\(2, 3\) float32, \(4, 5\) float32\]: RuntimeError",
        ),
        ("good.py:ints", None, r"integer-only program \(outputs are int64\)"),
        ("good.py:compare", None, r"no floating-point outputs \(outputs are bool\)"),
        ("nowhere.py:f", None, r"does not exist"),
        ("good.txt:f", None, r"not a .py file"),
        ("good.py", None, r"not of the form SCRIPT:NAME"),
    ],
)
def test_bad_input_is_a_one_line_usage_error(scripts, target, inputs, pattern):
    target = f"{scripts}/{target}" if not target.startswith("zoo:") else target
    inputs = f"{scripts}/{inputs}" if inputs else None
    with pytest.raises(UsageError, match=pattern) as info:
        load_target(target, inputs)
    assert "\n" not in str(info.value), (
        f"multi-line error; repro: load_target({target!r}, {inputs!r})"
    )
