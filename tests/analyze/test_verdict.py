"""Verdicts with a stated meaning (roundoff.analyze.verdict), each against an independent oracle:
torch's own casts and ops, an fp64 run, torch.testing's tolerances."""

from __future__ import annotations

import math

import pytest
import torch

from roundoff.analyze import check
from roundoff.analyze.verdict import EXCESS_LIMIT, Rule, Verdict
from roundoff.capture import capture


def _mlp(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    return (torch.nn.functional.gelu(x @ w1) @ w2).square().mean()


def _mlp_inputs() -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, 64, generator=g).bfloat16()
    w1 = (torch.randn(64, 64, generator=g) / 8).bfloat16().requires_grad_()
    w2 = (torch.randn(64, 64, generator=g) / 8).bfloat16().requires_grad_()
    return x, w1, w2


def test_norm_rel_and_excess_are_scale_aware_figures() -> None:
    x = torch.linspace(-3, 3, 257, dtype=torch.float64)
    xs = (x.to(torch.bfloat16),)
    r = check(capture(lambda t: t * 0.1, *xs), xs, "eager", against="oracle", nodes="all")
    mul = r.nodes[0]
    exact = xs[0].double() * 0.1
    got = (xs[0] * 0.1).double()  # torch's own bf16 multiply: fp32 opmath, one rounding
    assert mul.vs_oracle.norm_rel == pytest.approx(float((got - exact).norm() / exact.norm()), rel=1e-9)
    floor = exact.to(torch.bfloat16).double()  # torch's correctly rounded cast of the fp64 product
    want = float((got - exact).norm() / (floor - exact).norm())
    assert mul.vs_oracle.excess == pytest.approx(want, rel=1e-9) and want == pytest.approx(1.0)


def test_clean_bf16_mlp_forward_backward_has_no_diverging_node_against_the_oracle() -> None:
    xs = _mlp_inputs()
    r = check(capture(_mlp, *xs, backward=True), xs, "eager", against="oracle", nodes="all")
    # ULPs near zero are large here (what used to fail ~half the nodes), yet every node is a few roundings off.
    assert max(n.vs_oracle.max_bits for n in r.nodes) > 8
    assert [n.node_id for n in r.nodes if n.verdict is not Verdict.OK] == []
    assert max(n.own_excess for n in r.nodes) < EXCESS_LIMIT / 2
    assert not r.diverges and r.nan_origin is None and r.culprits == ()


def test_attention_mask_of_minus_inf_is_never_an_origin() -> None:
    g = torch.Generator().manual_seed(0)
    s = torch.randn(4, 8, 8, generator=g).bfloat16()

    def attn(scores: torch.Tensor) -> torch.Tensor:
        mask = torch.ones(8, 8, dtype=torch.bool).triu(1)  # built in the program (causal, as Llama/GPT-2 do)
        return scores.masked_fill(mask, -math.inf).softmax(-1)

    assert bool(attn(s.double()).isfinite().all())  # fp64 softmax: the mask's -inf becomes 0
    r = check(capture(attn, s), (s,), "eager", against="oracle")
    assert r.nan_origin is None and not r.diverges and r.culprits == ()


def test_nan_that_fp64_makes_too_is_not_a_divergence() -> None:
    x = torch.linspace(1, 2, 16).bfloat16()

    def f(t: torch.Tensor) -> torch.Tensor:
        return (t - t) / (t - t) + t

    nan64 = int(f(x.double()).isnan().sum())
    assert nan64 == 16  # fp64 makes the NaN itself
    for against in ("oracle", "eager"):
        r = check(capture(f, x), (x,), "eager", against=against)
        assert not r.diverges and r.nan_origin is None and r.outputs[0].nan_in_fp64 == nan64
        assert any("NaN in fp64 too" in e for e in r.explanations)
        assert not any("inf" in e.split("NaN in fp64")[0] for e in r.explanations)


def test_output_inf_where_fp64_is_finite_fails_even_when_the_reference_overflows_too() -> None:
    m, v = torch.full((512,), 1e-3).half(), torch.zeros(512).half()

    def adam(m: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return m / (torch.sqrt(v) + 1e-8)

    eager = adam(m, v)
    exact = adam(m.double(), v.double())
    assert int(eager.isinf().sum()) == 512 and bool(exact.isfinite().all())  # real eager overflows too
    r = check(capture(adam, m, v), (m, v), "eager", against="eager")
    out = r.outputs[0]
    assert r.diverges and not out.passes and out.nonfinite == 512
    assert out.unrepresentable == int(exact.to(torch.float16).isinf().sum()) == 512
    assert any("cannot hold" in e and "inf" in e and "NaN" not in e for e in r.explanations)


def test_rule_bitwise_and_allclose_against_torch_testing() -> None:
    from roundoff.execute import run_plan
    from roundoff.plan import plan

    g = torch.Generator().manual_seed(0)
    xs = tuple(torch.randn(256, generator=g).bfloat16() for _ in range(4))

    def chain(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        return ((a * b) + c) * d - a

    program = capture(chain, *xs)
    res = run_plan(plan(program, "inductor-cpu"), xs)[0]
    eager = chain(*xs)
    assert not torch.equal(res, eager)  # Inductor keeps fp32 inside the kernel: some bits differ
    got = {rule: check(program, xs, "inductor-cpu", against="eager", rule=rule).outputs[0].passes for rule in Rule}
    try:
        torch.testing.assert_close(res, eager)
        close = True
    except AssertionError:
        close = False
    assert got == {Rule.BITWISE: False, Rule.ALLCLOSE: close, Rule.SAME: True}


def test_fp64_is_the_oracle_in_the_library() -> None:
    from roundoff.blame.changes import Reference

    x = torch.linspace(1, 2, 16).bfloat16()
    a, b = (check(capture(torch.exp, x), (x,), "eager", against=name) for name in ("fp64", "oracle"))
    assert a.against == b.against == "oracle" and a.to_dict()["nodes"] == b.to_dict()["nodes"]
    assert Reference.parse("fp64") is Reference.ORACLE


def _fp32_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b


def test_matmul_read_in_bf16_by_an_autocast_policy_is_held_to_bf16s_rounding() -> None:
    # thunder-autocast rounds an fp32 matmul's operands to bf16 (matmul_input): its own error is
    # that of bf16 operands, not fp32's rounding. Oracle: fp64 matmul of the bf16-rounded operands.
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(16, 32, generator=g), torch.randn(32, 8, generator=g)
    result = check(_fp32_matmul, (a, b), "thunder-autocast", "oracle")
    (mm,) = [r for r in result.nodes if r.op.startswith("mm")]
    exact = a.double() @ b.double()
    autocast = a.bfloat16().double() @ b.bfloat16().double()
    expected = float(torch.linalg.vector_norm(autocast - exact) / torch.linalg.vector_norm(exact))
    assert mm.local.norm_rel == pytest.approx(expected, rel=0.01)
    assert mm.working_dtype == "bfloat16"
    assert mm.verdict is Verdict.OK and mm.own_excess <= EXCESS_LIMIT
