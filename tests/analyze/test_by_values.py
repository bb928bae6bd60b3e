"""`check(..., by_values=True)` (`--by-values`, `assert_numerics(by_values=True)`): every output against the
oracle is judged by its values, also where no node on its path is flagged (trials 82 and 83 asked for it: an
output over the limit passed silently under the path rule). Oracle: an fp64 run of the same computation and
real bf16 eager, the error ratio computed here by hand; the default check of the same program as the contrast."""

from __future__ import annotations

import pytest
import torch

from roundoff.analyze import check
from roundoff.capture import capture
from roundoff.testing import assert_numerics
from tests.analyze.planted import lost_increments


def _forty_products() -> tuple[torch.Tensor, float]:
    """Input of `lost_increments` and real eager's error there as a multiple of fp64 correctly rounded to bf16."""
    x = (torch.rand(4096, generator=torch.Generator().manual_seed(0)) + 1.0).to(torch.bfloat16)
    exact = x.double()
    for _ in range(40):
        exact = exact * 1.0009765625
    real = lost_increments(x).double()
    return x, float((real - exact).norm() / (exact.to(torch.bfloat16).double() - exact).norm())


def test_an_output_over_the_limit_with_nothing_flagged_fails_by_its_values() -> None:
    x, ratio = _forty_products()
    assert ratio > 16  # precondition, by hand: real bf16 eager is beyond 16x bf16's rounding
    prog = capture(lost_increments, x)
    default = check(prog, (x,), "eager", against="oracle")
    assert not default.diverges and not default.outputs_by_values  # the path rule: no node flagged, it passes
    for nodes in ("screen", "all"):
        strict = check(prog, (x,), "eager", against="oracle", by_values=True, nodes=nodes)
        (o,) = strict.outputs
        assert strict.diverges and not o.passes and strict.outputs_by_values, nodes
        assert o.rmse_result / o.rmse_reference == pytest.approx(ratio, rel=0.05)
        assert not strict.culprits and strict.first_divergent is None  # no node to blame: the first finding says so
        assert strict.explanations[0].startswith("no node on the path of `x` is flagged"), strict.explanations
        assert strict.to_dict()["outputs_by_values"] is True
    with pytest.raises(AssertionError, match="no node on the path of `x` is flagged"):
        assert_numerics(lost_increments, (x,), "eager", against="oracle", by_values=True)
    assert not assert_numerics(lost_increments, (x,), "eager", against="oracle").diverges


def test_by_values_changes_nothing_where_the_outputs_are_within_the_limit() -> None:
    """Four bf16 products: real eager within 16x bf16's rounding (by hand), so both rules pass alike."""
    x = (torch.rand(4096, generator=torch.Generator().manual_seed(0)) + 1.0).to(torch.bfloat16)

    def few(x: torch.Tensor) -> torch.Tensor:
        for _ in range(4):
            x = x * 1.0009765625
        return x

    exact = x.double() * 1.0009765625 ** 4
    assert float((few(x).double() - exact).norm() / (exact.to(torch.bfloat16).double() - exact).norm()) < 16
    default = check(few, (x,), "eager", against="oracle", nodes="all")
    strict = check(few, (x,), "eager", against="oracle", nodes="all", by_values=True)
    assert not strict.diverges and [o.rmse_result for o in strict.outputs] == [o.rmse_result for o in default.outputs]
    screened = check(few, (x,), "eager", against="oracle", by_values=True)
    assert screened.mode == "screen" and not screened.diverges and screened.outputs_by_values


@pytest.mark.parametrize(("against", "rule"), [("eager", "same"), ("oracle", "allclose")])
def test_by_values_is_refused_where_every_output_is_judged_by_its_values_already(against: str, rule: str) -> None:
    x = torch.ones(8, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="by_values=True judges outputs against the fp64 oracle"):
        check(lost_increments, (x,), "eager", against=against, rule=rule, by_values=True)

