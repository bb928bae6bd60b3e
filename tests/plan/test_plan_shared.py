"""`plan_pair`: two policies planned over one graph, each side computing what it computes alone."""

from __future__ import annotations

import pytest
import torch

from roundoff.capture import capture
from roundoff.capture.program import NODE_ID
from roundoff.execute import run_plan
from roundoff.plan import plan, plan_pair
from roundoff.policy.registry import list_policies

POLICIES = tuple(p.name for p in list_policies())


def _f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    y = torch.softmax(x @ w, -1)
    return torch.nn.functional.gelu(y * x - 0.5).sum(-1)


@pytest.fixture(scope="module")
def program_and_inputs() -> tuple:
    torch.manual_seed(0)
    x = torch.randn(8, 16, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(16, 16, dtype=torch.bfloat16, requires_grad=True)
    return capture(_f, x, w, backward=True), [x.detach(), w.detach()]


def _same_outputs(p_a, p_b, inputs) -> bool:
    return all(torch.equal(a, b) for a, b in zip(run_plan(p_a, inputs), run_plan(p_b, inputs)))


@pytest.mark.parametrize("reference", POLICIES)
def test_reference_on_the_shared_graph_computes_as_alone(program_and_inputs: tuple, reference: str) -> None:
    """Against the eager policy (which rewrites nothing) the graph is the reference's own."""
    program, inputs = program_and_inputs
    plan_a, plan_b = plan_pair(program, "eager", reference)
    assert plan_a.program is plan_b.program
    assert _same_outputs(plan(program, reference), plan_b, inputs), f"{reference} differs on the shared graph"


@pytest.mark.parametrize("reference", POLICIES)
def test_decomposing_policy_keeps_its_graph_against_any_reference(program_and_inputs: tuple, reference: str) -> None:
    """inductor-cpu decomposes; no reference rewrites that graph further, so its side is unchanged."""
    program, inputs = program_and_inputs
    plan_a, plan_b = plan_pair(program, "inductor-cpu", reference)
    assert plan_a.program is plan_b.program
    ids = {n.meta[NODE_ID] for n in plan_a.program.graph.nodes if n.op != "output"}
    assert ids <= set(plan_a.decisions) and ids <= set(plan_b.decisions)
    assert _same_outputs(plan(program, "inductor-cpu"), plan_a, inputs)


def test_a_decomposition_set_is_applied_once(program_and_inputs: tuple) -> None:
    """Inductor's table may rewrite its own output (CUDA attention did, on the H200): re-applying it each
    round never settled. Each set is applied once across both policies and all rounds."""
    program, inputs = program_and_inputs
    applied: list[str] = []

    def spy(prog, policy):  # noqa: ANN001, ANN202
        applied.extend(policy.decompositions)
        return plan(prog, policy)

    plan_a, plan_b = plan_pair(program, "eager", "inductor-gpu", spy)
    assert applied == ["eager", "inductor"]  # (eager's set first: the graph of the policy checked)
    assert plan_b.policy.decompositions == ("inductor",)  # the plan records the policy as given
    assert _same_outputs(plan(program, "inductor-gpu"), plan_b, inputs)
