"""Checking mode: warns/raises on a divergent policy, silent on a faithful one, samples calls."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from compile_helpers import eager

import roundoff
from roundoff.compiler import RoundoffDivergenceError, RoundoffDivergenceWarning
from roundoff.policy import get_policy


def cancel(x: torch.Tensor, y: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    return torch.exp(x * s - y * s)


def _cancel_inputs() -> tuple[torch.Tensor, ...]:
    # y == x but a distinct tensor, so Inductor cannot CSE the products; |x*s| ~ 1e10 makes one
    # product's rounding error (~600) survive an FMA, and exp turns it into inf or 0.
    x = torch.randn(4096, generator=torch.Generator().manual_seed(0)) * 1e4
    return x, x.clone(), torch.tensor(1e6)


def test_divergent_policy_warns_with_output_and_metrics() -> None:
    f = roundoff.compile(cancel, policy=get_policy("inductor-gpu"), check="warn")
    with pytest.warns(
        RoundoffDivergenceWarning, match=r"output: rmse vs fp64.*non-finite compiled=[1-9]"
    ):
        out = f(*_cancel_inputs())
    assert torch.isinf(out).any(), "repro: inductor-gpu FMA policy on CPU, exp(x*s - y*s)"
    assert (cancel(*_cancel_inputs()) == 1).all()


def test_divergent_policy_raises() -> None:
    f = roundoff.compile(cancel, policy=get_policy("inductor-gpu"), check="raise")
    with pytest.raises(RoundoffDivergenceError) as info:
        f(*_cancel_inputs())
    assert info.value.report and not info.value.report[0].passed


def test_faithful_policy_is_silent_and_samples_every_nth_call() -> None:
    f = roundoff.compile(cancel, policy=eager(), check="raise", sample_every=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(7):
            out = f(*_cancel_inputs())
    assert (out == 1).all()
    history = f.roundoff_state.checker.history
    assert [call for call, _ in history] == [1, 4, 7]
    assert all(c.passed and c.mismatch_fraction == 0.0 for _, checks in history for c in checks)
    # bit-identical to eager: same()'s allclose test decides, so the fp64 run was skipped
    assert all(math.isnan(c.rmse_compiled) for _, checks in history for c in checks)


def test_module_is_checked_with_its_parameters() -> None:
    torch.manual_seed(0)
    lin = torch.nn.Linear(16, 16).to(torch.bfloat16)
    m = roundoff.compile(lin, policy=eager(), check="raise")
    assert isinstance(m, torch.nn.Module)
    assert list(m.parameters()) == list(lin.parameters())
    m(torch.randn(8, 16, dtype=torch.bfloat16))
    ((_, checks),) = m._roundoff.checker.history
    assert checks[0].passed
