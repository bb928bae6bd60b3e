"""`plan_pair`: two policies planned over one graph, each side computing what it computes alone."""

from __future__ import annotations

import itertools

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

    def spy(prog, policy):
        applied.extend(policy.decompositions)
        return plan(prog, policy)

    plan_a, plan_b = plan_pair(program, "eager", "inductor-gpu", spy)
    assert applied == ["eager-cpu", "inductor"]  # (eager's set first: the graph of the policy checked)
    assert plan_b.policy.decompositions == ("inductor",)  # the plan records the policy as given
    assert _same_outputs(plan(program, "inductor-gpu"), plan_b, inputs)


def _softmax_gelu_and_amax(a, b, c, d, x, w):  # type: ignore[no-untyped-def]
    h = a * b + c  # inductor-cpu recomputes h*d in two kernels that read h differently: a copy
    m = torch.amax(h * d, -1, keepdim=True)
    return h, h * d - a, (h * d - m) * 3.0, _f(x, w)  # _f's backward: inductor-gpu's copies


def test_two_policies_each_needing_copies_of_their_own_are_refused_in_words() -> None:
    """One graph cannot hold both sides' per-kernel copies (a reader reads one copy or the other): the
    pair is refused with what to do instead, never planned on a graph where one side computes otherwise."""
    g = torch.Generator().manual_seed(0)
    args = [torch.randn(32, 64, generator=g).to(torch.bfloat16).requires_grad_() for _ in range(4)]
    args += [torch.randn(8, 16, generator=g).to(torch.bfloat16).requires_grad_(),
             torch.randn(16, 16, generator=g).to(torch.bfloat16).requires_grad_()]
    program = capture(_softmax_gelu_and_amax, *args, backward=True)
    assert plan(program, "inductor-cpu").copies and plan(program, "inductor-gpu").copies
    with pytest.raises(ValueError, match="each recompute nodes .* as per-kernel copies.*'eager' or the fp64 oracle"):
        plan_pair(program, "inductor-cpu", "inductor-gpu")


@pytest.mark.parametrize(("a", "b"), itertools.permutations(("inductor-cpu", "inductor-gpu", "xla-2.10"), 2))
def test_two_fusing_policies_each_compute_as_alone_on_the_shared_graph(program_and_inputs: tuple, a: str, b: str) -> None:
    """Where one side recomputes nodes as per-kernel copies (inductor-gpu's softmax backward here), the other
    side's plan is lifted onto the graph holding them: each side's outputs are its plan's alone, bit for bit."""
    program, inputs = program_and_inputs
    plan_a, plan_b = plan_pair(program, a, b)
    assert plan_a.program is plan_b.program
    assert _same_outputs(plan(program, a), plan_a, inputs), f"{a} differs on the graph shared with {b}"
    assert _same_outputs(plan(program, b), plan_b, inputs), f"{b} differs on the graph shared with {a}"
