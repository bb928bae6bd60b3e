"""fp8 outputs get a verdict (``same`` cannot take fp8: they are compared as bf16, exactly)."""

from __future__ import annotations

import math

import pytest
import torch

from roundoff.analyze import check
from roundoff.analyze.verdict import same_rule


def _to_fp8(x: torch.Tensor) -> torch.Tensor:
    return (x * 2.0).to(torch.float8_e4m3fn)


@pytest.mark.parametrize("against", ["oracle", "eager", "inductor-cpu"])
def test_fp8_output_rmse_against_fp64(against: str) -> None:
    torch.manual_seed(0)
    x = torch.randn(4, 8, dtype=torch.bfloat16)
    (out,) = check(_to_fp8, [x], "eager", against=against).outputs
    real = _to_fp8(x).double()  # real eager's fp8 result
    exact = x.double() * 2.0
    assert out.rmse_result == pytest.approx(math.sqrt(((real - exact) ** 2).mean().item()), rel=1e-12)
    assert out.passes


def test_same_rule_on_fp8_fails_a_wrong_result() -> None:
    torch.manual_seed(1)
    exact = torch.randn(64, dtype=torch.float64)
    ref = exact.to(torch.float8_e5m2)
    assert same_rule(ref, ref, exact, 1e-4)
    assert not same_rule(ref, (exact * 1.5).to(torch.float8_e5m2), exact, 1e-4)
