"""An output's operand floor (roundoff.analyze.output_floor): structurally zero gradients judged against
what their last op's operands' rounding causes, real cancellations not excused."""

from __future__ import annotations

import math
import operator

import torch

from roundoff.analyze import check
from roundoff.analyze.output_floor import operand_floor, oracle_floors, producer
from roundoff.analyze.verdict import oracle_output_passes, unit_roundoff
from roundoff.blame import blame
from roundoff.capture import capture
from roundoff.execute import run_eager

aten = torch.ops.aten


def _g(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_the_producer_is_found_through_views_casts_and_getitem() -> None:
    def f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.layer_norm(x, (8,))
        return (y @ w).t().float(), y.sum()

    x, w = torch.randn(4, 8), torch.randn(8, 3)
    program = capture(f, x, w)
    args = program.output_args()
    mm, _ = producer(args[0])
    assert mm.target in (aten.mm.default, aten.addmm.default), mm.target
    total, index = producer(args[1])
    assert total.target is aten.sum.default and index is None


def test_the_floor_of_a_sum_is_the_random_sign_rounding_of_its_terms() -> None:
    """For ``sum(x)`` the floor is ``u/2 * |sum s_i x_i|`` with random signs: its square's expectation is
    ``(u/2)^2 ||x||^2`` (`verdict.reduction_floor`'s model); over 64 sums of 4096 terms, within 10%."""
    x = torch.randn(64, 4096, generator=_g(), dtype=torch.float64)
    program = capture(lambda x: x.sum(-1), x)
    _, floors = oracle_floors(program, (x,))
    assert floors == {0: 0.0}  # fp64 sums of random terms: no structural zero
    node = next(n for n in program.graph.nodes if n.target is aten.sum.dim_IntList)
    (norm,) = operand_floor(node, x.sum(-1), lambda n: x, torch.bfloat16)
    expected = unit_roundoff(torch.bfloat16) / 2 * float(x.norm())
    assert abs(norm / expected - 1) < 0.1, (norm, expected)


def _bias_before_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A bias constant over the normalised channels: its gradient is 0 by the model's structure."""
    h = (x @ w + b[:, None]).float()
    y = torch.nn.functional.layer_norm(h, (h.shape[-1],)).bfloat16()
    return (y.float() * torch.linspace(-1, 1, h.shape[-1])).square().mean()


def _bias_inputs() -> tuple[torch.Tensor, ...]:
    x = torch.randn(16, 32, generator=_g()).bfloat16()
    w = (torch.randn(32, 32, generator=_g(1)) / 6).bfloat16().requires_grad_()
    b = (torch.randn(16, generator=_g(2)) / 6).bfloat16().requires_grad_()
    return x, w, b


def test_a_structurally_zero_bias_gradient_passes_check_and_blame_finds_nothing_to_fix() -> None:
    xs = _bias_inputs()
    program = capture(_bias_before_norm, *xs, backward=True)
    names = list(program.output_names)
    i = names.index("grad_b") if "grad_b" in names else len(program.output_args()) - 1
    oracle, floors = oracle_floors(program, xs)
    eager = run_eager(program, xs)
    # independent evidence: fp64's bias gradient is fp64's rounding noise, bf16 eager's is far beyond
    # the rounding of that tiny value, so judged by its own scale it would fail
    assert float(oracle[i].norm()) < 1e-12 * float(oracle[i - 1].norm())
    assert not oracle_output_passes(eager[i], oracle[i], torch.bfloat16)
    assert floors[i] > 0 and oracle_output_passes(eager[i], oracle[i], torch.bfloat16, floors[i])
    r = check(program, xs, "eager", against="oracle", nodes="all")
    assert not r.diverges and r.culprits == (), [o for o in r.outputs if not o.passes]
    assert blame(program, "eager", against="oracle", repro=False).status.value == "already_ok"


def test_a_real_cancellation_at_the_output_gets_no_floor() -> None:
    """``E[x^2] - E[x]^2`` of bf16 values near 100: fp32 operands resolve the variance (it is no
    structural zero), so bf16's cancellation is judged by the variance's own scale and fails."""

    def variance(x: torch.Tensor) -> torch.Tensor:
        return (x * x).mean(-1) - x.mean(-1) ** 2

    x = (100 + torch.randn(8, 64, generator=_g())).bfloat16()
    program = capture(variance, x)
    oracle, floors = oracle_floors(program, (x,))
    assert floors == {0: 0.0}
    assert float(oracle[0].norm()) > 0.5 * math.sqrt(8)  # a real value, ~1 per row
    r = check(program, (x,), "eager", against="oracle", nodes="all")
    assert r.diverges and not r.outputs[0].passes


def test_an_output_a_sum_produces_gets_its_terms_floor_even_when_not_zero() -> None:
    """A bias gradient sums a batch's gradients: judged against its terms' rounding as a sum node is, not
    only when structurally zero (a new user's clean CLIP text-bias gradient was 4% off by cancellation
    and sent blame to keep unrelated attention in fp32)."""
    g = torch.Generator().manual_seed(5)
    x = torch.randn(256, 8, generator=g).bfloat16()
    program = capture(lambda x: x.sum(0), x)
    oracle, floors = oracle_floors(program, (x,))
    node = next(n for n in program.graph.nodes if n.target is aten.sum.dim_IntList)
    (expected,) = operand_floor(node, oracle[0], lambda n: x.double(), torch.bfloat16)
    assert float(oracle[0].norm()) > 1.0 and floors[0] == expected > 0


def test_a_layernorms_saved_mean_of_centred_values_is_a_structural_zero():
    """Trial 28 (fp16 Bloom): a LayerNorm of a LayerNorm's output saves a mean fp64 puts at ~1e-17; the
    fp16 run's is rounding noise, and `getitem` (the mean of `native_layer_norm`'s results) read as
    "8.19e+03 times the rounding of float16 ... underflow, scale the loss". Its floor is taken from
    its producer's operands as for any structural zero. Oracle: the fp64 mean of the centred values."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 16, 64, generator=g).half()
    ln1, ln2 = torch.nn.LayerNorm(64).half(), torch.nn.LayerNorm(64).half()
    centred = torch.nn.functional.layer_norm(x.double(), (64,))
    assert float(centred.mean(-1).abs().max()) < 1e-15  # the second LayerNorm's mean is 0 by structure
    x.requires_grad_()
    program = capture(lambda x: ln2(ln1(x)).float().pow(2).mean(), x, backward=True)  # the backward reads the means
    r = check(program, (x,), "eager", against="oracle", nodes="all")
    ids = {n.meta["roundoff_id"] for n in program.graph.nodes if n.target is operator.getitem and n.args[1] == 1
           and n.args[0].target is torch.ops.aten.native_layer_norm.default}
    means = [n for n in r.nodes if n.node_id in ids]
    assert len(means) == 2 and all(n.verdict.value == "ok" for n in means), [(n.node_id, n.own_excess) for n in means]
