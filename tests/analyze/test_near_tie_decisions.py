"""Ordered comparisons decided otherwise than fp64 near a tie (trial 79: one flipped ReLU-backward mask
element of an fp16 CNN made a BatchNorm weight gradient 3.3x eager's error under the emulated
inductor-cpu, where the real compiled program did not flip it, and `check` said "diverges").

Oracles: real eager's fp16 kernels on CPU and an fp64 run of the same formula, computed here with torch."""

from __future__ import annotations

import dataclasses

import torch

from roundoff.analyze import check
from roundoff.policy import get_policy
from roundoff.policy.model import MatmulAdd


def _gate(x: torch.Tensor, w: torch.Tensor, c: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """A threshold on a linear map: ``g`` where ``x @ w + c > 0``, else ``-g``."""
    return torch.where(x @ w + c > 0, g, -g)


def _inputs() -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64, 32, generator=gen).half()
    w = torch.randn(32, 48, generator=gen).half()
    # c cancels x @ w to within a rounding at every other element: near ties
    exact = x.double() @ w.double()
    c = torch.where(torch.rand(64, 48, generator=gen) < 0.5, -exact, torch.randn(64, 48, generator=gen).double())
    return x, w, c.half(), torch.rand(64, 48, generator=gen).half() + 1


def test_a_flip_within_the_references_error_of_the_threshold_is_judged_with_fp64s_decision() -> None:
    """Eager rounds ``x @ w`` to fp16 before adding ``c``; a reference that adds ``c`` in the GEMM's fp32
    accumulator (addmm) and stores the sum in fp16 decides as fp64 almost everywhere, its own error of
    ``x @ w + c`` a rounding of fp16. Eager's flips all lie within that error of 0: a decision near a tie.
    The output then fails against that reference as run (each flip moves an element by 2g) and passes
    with fp64's decisions, where both are exact."""
    x, w, c, g = _inputs()
    fused = dataclasses.replace(get_policy("eager"), name="eager-addmm", matmul_add=MatmulAdd.ADDMM)
    result = check(_gate, (x, w, c, g), policy="eager", against=fused)
    # oracle: real eager's decisions against fp64's
    eager_says = (x @ w + c) > 0
    exact_says = (x.double() @ w.double() + c.double()) > 0
    flipped = int((eager_says != exact_says).sum())
    assert flipped > 0  # the inputs make ties
    (out,) = result.outputs
    assert not result.diverges and out.near_ties, result
    (decision,) = result.near_tie_decisions
    assert (decision.differing, decision.of) == (flipped, eager_says.numel())
    # as run, eager's error is real eager's: 2g at each flipped element
    want = torch.where(exact_says, g, -g).double()
    as_run = float((torch.where(eager_says, g, -g).double() - want).pow(2).mean().sqrt())
    assert abs(out.rmse_result - as_run) <= 1e-6 * as_run
    assert out.rmse_pinned == 0.0 and out.rmse_reference_pinned == 0.0  # with fp64's decisions: exact
    assert any("near a tie" in e for e in result.explanations)


def _scaled_gate(x: torch.Tensor, s: torch.Tensor, c: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    return torch.where(x * s + c > 0, g, -g)


def test_a_flip_beyond_the_references_error_still_diverges() -> None:
    """``c`` is ``-(x * s)`` rounded to fp16 at every other element: eager rounds ``x * s`` to fp16 first
    and gets 0 there, where fp64 keeps the product's rounding residual, of either sign. inductor-cpu
    computes ``x * s + c`` in one kernel in fp32 (the product exact) and decides as fp64; its error at
    that comparison is a rounding of fp32, far below eager's flips: those are the policy's own rounding,
    a finding as before, not a tie."""
    gen = torch.Generator().manual_seed(1)
    x, s = (torch.randn(64, 48, generator=gen).half() for _ in range(2))
    product = (x.float() * s.float()).half()  # eager's rounding of the product
    c = torch.where(torch.rand(64, 48, generator=gen) < 0.5, -product, torch.randn(64, 48, generator=gen).half())
    g = torch.rand(64, 48, generator=gen).half() + 1
    eager_says, exact_says = (x * s + c) > 0, (x.double() * s.double() + c.double()) > 0
    assert bool((eager_says != exact_says).any())  # oracle: real eager flips
    result = check(_scaled_gate, (x, s, c, g), policy="eager", against="inductor-cpu")
    assert result.diverges and not result.near_tie_decisions and not result.outputs[0].near_ties
