"""torch.compile's own step of the user's function beside the step observe compiles (`observed.real_step`).

Trial 80: on torch 2.13's CPU Inductor, torch.compile of an fp16 step through a strided conv, a nearest
upsample and a concatenation returns exactly 0 for the upstream conv's gradients (fp32, backend
aot_eager and max_fusion_size=1 are right), where observe's compile of the captured program (another
graph: eager autograd's backward, decomposed after) was within tolerance and observe said ok.

Oracles: real torch.compile's and real eager's gradients, computed here."""

from __future__ import annotations

import io

import torch
import torch.nn.functional as F
from rich.console import Console
from torch._inductor import config

from roundoff.observed import observe_compiled
from roundoff.report.observed import observe_report
from roundoff.report.observed_document import observe_document
from tests.compiler.compile_helpers import loop_with_a_graph_break as _loop_with_a_break

HALF = torch.float16


def _net() -> tuple[torch.nn.Module, ...]:
    torch.manual_seed(0)
    return tuple(m.to(HALF) for m in (torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.Conv2d(32, 64, 3, stride=2, padding=1),
                                      torch.nn.Conv2d(96, 32, 3, padding=1), torch.nn.Conv2d(96, 32, 1)))


A, P, C, SKIP = _net()


def _loss(x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    h = A(x)
    z = torch.cat([F.interpolate(P(h), scale_factor=2, mode="nearest"), h], 1)
    return F.mse_loss(C(F.silu(z)) + SKIP(z), target)


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.randn(2, 3, 16, 16, generator=g).to(HALF), torch.randn(2, 32, 16, 16, generator=g).to(HALF)


def _bias_grad(step) -> torch.Tensor:  # type: ignore[no-untyped-def]
    P.bias.grad = None
    step(*_inputs()).backward()
    grad, P.bias.grad = P.bias.grad, None
    return grad


def test_observe_flags_an_output_torch_compile_computes_wrong_where_its_own_step_does_not() -> None:
    """Where real torch.compile's gradient of the strided conv's bias is 0 and eager's is not (torch 2.13's
    CPU Inductor), observe names it and fails; where torch.compile gets it right (another torch), it
    names no failing output of torch.compile's step."""
    torch._dynamo.reset()
    real = _bias_grad(torch.compile(_loss))
    eager = _bias_grad(_loss)
    torch._dynamo.reset()
    with config.patch(max_fusion_size=1):  # right on 2.13; Dynamo keeps this graph for `_loss`'s code object,
        _bias_grad(torch.compile(_loss))  # which must not answer for the default config's compile below
    result = observe_compiled(_loss, *_inputs(), backward=True, partitioned=True, torch_compiled=True, repeats=1)
    assert result.torch_compile_compared
    by_name = {o.name: o for o in result.torch_compile}
    broken = bool((real == 0).all()) and not bool((eager == 0).all())
    if broken:
        o = by_name["grad_P.bias"]
        assert o.fails and o.zeros == o.numel == real.numel()
        assert result.diverges
        eager_rmse = float((eager.double() - real.double()).pow(2).mean().sqrt())  # real is 0: its RMSE off eager
        assert abs(o.rmse - eager_rmse) <= 0.05 * eager_rmse  # ~eager's norm: fp64 is within eager's rounding
        # trial 110: the headline names an output that is 0 throughout first, and says what that means
        console = Console(width=10_000, record=True, file=io.StringIO())
        console.print(observe_report(observe_document(result)))
        headline = console.export_text().splitlines()[0]
        blank = [w.name for w in result.torch_compile if w.fails and w.zeros == w.numel]
        assert "grad_P.bias" in blank and f"computes `{blank[0]}`" in headline, (blank, headline)
        assert "no rounding makes a whole output 0" in headline, headline
    else:
        assert not any(o.fails for o in result.torch_compile)


def test_a_step_torch_compile_computes_as_observe_departs_in_nothing_that_fails() -> None:
    """A Linear + SiLU fp16 step: torch.compile's own step and observe's partitioned step run the same
    kernels (tests/observed/test_partition.py), so no output departs beyond the limit."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(32, 16).to(HALF)

    def loss(x: torch.Tensor) -> torch.Tensor:
        return F.silu(lin(x)).float().square().mean()

    x = torch.randn(8, 32).to(HALF)
    result = observe_compiled(loss, x, backward=True, partitioned=True, torch_compiled=True, repeats=1)
    assert result.torch_compile_compared and result.torch_compile_not_compared is None
    assert not any(o.fails for o in result.torch_compile)
    assert not result.diverges


def test_a_function_torch_compile_runs_eagerly_is_not_compared_and_says_why() -> None:
    """Trial 84: a research MoE's loop held a graph break, so torch.compile ran it eagerly; observe put
    eager's own fp16 error down to "a defect of torch.compile's graph". Oracle: Dynamo's own count of
    the graphs it compiled for the function (none) and the eager result it returns."""
    counts = torch._dynamo.utils.counters
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(3, 4, 8, generator=g).half(), torch.randn(8, 8, generator=g).half()
    torch._dynamo.reset()
    counts.clear()
    assert torch.equal(torch.compile(_loop_with_a_break)(x, w), _loop_with_a_break(x, w))
    assert counts["stats"]["unique_graphs"] == 0  # the frame was skipped: nothing compiled
    result = observe_compiled(_loop_with_a_break, x, w, torch_compiled=True, repeats=1)
    assert not result.torch_compile and "ran it eagerly" in (result.torch_compile_not_compared or "")
