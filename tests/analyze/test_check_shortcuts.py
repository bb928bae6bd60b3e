"""`check`'s shortcuts give the figures the long way gives: local error of a node fed only exact
values (no recompute), and the cached plan of a second check."""

from __future__ import annotations

import torch

from roundoff.analyze import check, measure
from roundoff.analyze.check import _PLANS
from roundoff.capture import capture


def _fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.exp(x * y + x)


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(512, generator=g).to(torch.bfloat16) for _ in range(2))  # type: ignore[return-value]


def test_local_error_of_a_node_reading_inputs_is_eager_bf16_mul_vs_fp64() -> None:
    x, y = _inputs()
    program = capture(_fn, x, y)
    res = check(program, (x, y), "eager", against="oracle")
    mul = next(r for r in res.nodes if r.op == "mul")
    # Independent oracle: torch's own bf16 multiply (fp32 opmath, one rounding) against the fp64 product.
    want = measure((x * y).float(), x.double() * y.double(), torch.bfloat16)
    assert mul.local == want and mul.vs_oracle == want, "repro: check(capture(_fn, x, y), (x, y), 'eager', 'oracle')"
    assert mul.inherited_bits == 0.0


def test_second_check_reuses_the_plan_and_gives_the_same_result() -> None:
    x, y = _inputs()
    program = capture(_fn, x, y)
    first = check(program, (x, y), "inductor-cpu", against="eager")
    (planned,) = _PLANS[program.graph_module].values()
    second = check(program, (x, y), "inductor-cpu", against="eager")
    assert next(iter(_PLANS[program.graph_module].values())) is planned
    assert first.to_dict() == second.to_dict(), "repro: check(program, ...) twice with 'inductor-cpu' vs 'eager'"
