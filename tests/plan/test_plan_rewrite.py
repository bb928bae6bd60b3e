"""`plan(..., rewritten=rewrite(program, p))`: planning on a graph rewritten once gives the plan made
from scratch, for every policy that differs from `p` only in node overrides.

Oracle: `plan(program, policy)` alone (which decomposes and CSEs the graph itself), compared decision
by decision and by the emulated outputs' bits.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from roundoff.capture import capture
from roundoff.execute import run_plan
from roundoff.plan import plan
from roundoff.plan.rewrite import rewrite
from roundoff.policy import get_policy
from roundoff.policy.model import OpOverride


def _f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    z = x * y
    e = torch.exp(z - torch.amax(z, dim=-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


@pytest.fixture(scope="module")
def program_and_inputs() -> tuple:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 16, generator=g).bfloat16()
    y = (torch.randn(4, 16, generator=g) * 3).bfloat16().requires_grad_()
    return capture(_f, x, y, backward=True), [x, y.detach()]


@pytest.mark.parametrize("policy", ["inductor-gpu", "inductor-cpu", "xla-excess-precision"])
def test_overrides_planned_on_the_rewritten_graph_equal_a_fresh_plan(program_and_inputs, policy) -> None:
    program, inputs = program_and_inputs
    base = get_policy(policy)
    rw = rewrite(program, base)
    first = plan(program, base, rewritten=rw)
    computing = [d for d in first.decisions.values() if d.compute_dtype is not None][::3]
    overrides = {d.node_id: OpOverride(round_result=True, contract_fma=False) for d in computing}
    changed = dataclasses.replace(base, node_overrides=overrides)
    fresh, reused = plan(program, changed), plan(program, changed, rewritten=rw)
    assert fresh.decisions == reused.decisions, policy
    assert fresh.decisions != first.decisions or not overrides, "the overrides changed nothing"
    for a, b in zip(run_plan(fresh, inputs), run_plan(reused, inputs)):
        assert torch.equal(a.view(-1).view(torch.uint8), b.view(-1).view(torch.uint8)), policy


def test_a_rewrite_for_other_decompositions_is_not_used(program_and_inputs) -> None:
    program, _ = program_and_inputs
    eager, gpu = get_policy("eager"), get_policy("inductor-gpu")
    rw = rewrite(program, eager)
    assert eager.decompositions != gpu.decompositions
    assert not rw.fits(program, gpu) and rw.fits(program, eager)
    assert plan(program, gpu, rewritten=rw).decisions == plan(program, gpu).decisions
