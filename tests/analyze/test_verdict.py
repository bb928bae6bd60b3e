"""Verdicts with a stated meaning (roundoff.analyze.verdict), each against an independent oracle:
torch's own casts and ops, an fp64 run, torch.testing's tolerances."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from roundoff.analyze import check
from roundoff.analyze.verdict import EXCESS_LIMIT, Rule, Verdict
from roundoff.capture import capture
from roundoff.execute import run_oracle


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


def test_an_infinity_beyond_the_format_that_harms_nothing_is_no_origin() -> None:
    """GPT-Neo's mask: ``where(causal, scores, finfo(fp32).min) + finfo(fp32).min`` is -inf in fp32 where
    fp64 holds -6.8e38, which fp32 cannot: the softmax after it gives fp64's zeros, so nothing fails."""
    g = torch.Generator().manual_seed(0)
    s = torch.randn(2, 8, 8, generator=g)
    low = torch.finfo(torch.float32).min

    def attn(scores: torch.Tensor) -> torch.Tensor:
        causal = torch.ones(8, 8, dtype=torch.bool).tril()
        masked = torch.where(causal, scores, torch.tensor(low)) + torch.full((8, 8), low).triu(1)
        return masked.softmax(-1)

    exact = (torch.where(torch.ones(8, 8, dtype=torch.bool).tril(), s.double(), low) + torch.full((8, 8), low).triu(1).double())
    assert bool(exact.isfinite().all()) and bool(exact.float().isinf().any())  # torch's own cast overflows too
    assert torch.equal(attn(s), attn(s.double()).float().nan_to_num()) or torch.allclose(attn(s), attn(s.double()).float())
    r = check(capture(attn, s), (s,), "eager", against="oracle", nodes="all")
    assert r.nan_origin is None and not r.diverges and r.culprits == ()
    add = next(n for n in r.nodes if n.op == "add")
    assert add.overflow == int(exact.float().isinf().sum()) and add.verdict is Verdict.OK


def test_an_infinity_beyond_the_format_that_a_later_node_turns_into_nan_is_the_origin() -> None:
    x = (torch.rand(8, 32, generator=torch.Generator().manual_seed(1)) * 14).half()

    def softmax_no_max(t: torch.Tensor) -> torch.Tensor:
        e = torch.exp(t)
        return e / e.sum(-1, keepdim=True)

    beyond = int(torch.exp(x.double()).half().isinf().sum())  # torch's cast of fp64's exp overflows fp16
    assert beyond > 0 and bool(softmax_no_max(x).isnan().any()) and bool(softmax_no_max(x.double()).isfinite().all())
    r = check(capture(softmax_no_max, x), (x,), "eager", against="oracle")
    exp = next(n for n in r.nodes if n.op == "exp")
    assert r.nan_origin == exp.node_id and exp.verdict is Verdict.NONFINITE and exp.overflow == beyond
    assert r.culprits[0] == exp.node_id
    assert any(f"({exp.node_id} at" in e and "overflows float16" in e for e in r.explanations)


def test_an_output_that_overflows_its_format_names_the_node_where_it_began() -> None:
    m, v = torch.full((64,), 1e-3).half(), torch.zeros(64).half()

    def adam(m: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return m / (torch.sqrt(v) + 1e-8)

    assert bool(adam(m.double(), v.double()).half().isinf().all())  # fp64 rounded to fp16 overflows
    r = check(capture(adam, m, v), (m, v), "eager", against="oracle")
    div = next(n for n in r.nodes if n.op == "div")
    assert r.diverges and r.nan_origin == div.node_id and div.verdict is Verdict.NONFINITE


def test_a_matmul_is_allowed_the_rounding_of_its_operands() -> None:
    """A bf16 weight gradient (x^T @ dy over many rows, cancelling) is judged against the error that
    rounding its operands to bf16 causes (`matmul_floor`), measured here by torch's own casts."""
    from roundoff.analyze.verdict import matmul_floor

    g = torch.Generator().manual_seed(0)
    a = torch.randn(64, 512, generator=g, dtype=torch.float64)
    b = torch.randn(512, 64, generator=g, dtype=torch.float64)
    rounded = a.bfloat16().double() @ b.bfloat16().double()  # only the operands' rounding, exact sums
    measured = float(((rounded - a @ b).square().mean()).sqrt())
    assert matmul_floor(a, b, 64 * 64, torch.bfloat16) == pytest.approx(measured, rel=0.25)
    xs = (a.bfloat16(), b.bfloat16())
    r = check(capture(torch.mm, *xs), xs, "eager", against="oracle", nodes="all")
    assert [n.verdict for n in r.nodes] == [Verdict.OK] and not r.diverges


def test_an_embedding_gradient_that_cancels_to_zero_is_judged_against_its_terms() -> None:
    """RoBERTa's token-type embedding: every token reads row 0, and the rows' gradients, after a
    LayerNorm, sum to ~0 in fp64; bf16 leaves rounding noise there, no defect. Summed in bf16 one by
    one over many tokens (CPU eager's kernel does) the error grows beyond the terms' rounding."""
    g = torch.Generator().manual_seed(0)
    y = torch.randn(16, 64, generator=g)
    ids = torch.zeros(16, dtype=torch.long)

    def grad(dy: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten.embedding_dense_backward(dy, ids, 2, -1, False)

    def centred_grad(y: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return grad((y - y.mean(0)).bfloat16(), ids)  # the rows' gradients cancel to 0 over the tokens

    program = capture(centred_grad, y, ids)
    row = run_oracle(program, (y, ids))[0][0]  # fp64 (casts ignored): 0 up to fp64's rounding
    assert float(row.norm()) < 1e-12 * float(y.double().norm())
    r = check(program, (y, ids), "eager", against="oracle")
    assert not r.diverges and r.culprits == ()
    bf16_err = float((centred_grad(y, ids)[0].double() - row).norm())
    assert bf16_err > 1e6 * float(row.norm())  # judged by its own scale, bf16's noise would fail it
    long = torch.randn(4096, 64, generator=g).bfloat16()  # one row, 4096 terms, no cancellation
    ids = torch.zeros(4096, dtype=torch.long)
    err = float((grad(long, ids)[0].double() - long.double().sum(0)).norm() / long.double().sum(0).norm())
    r = check(capture(grad, long, ids), (long, ids), "eager", against="oracle")
    assert r.diverges == (err > EXCESS_LIMIT * 2**-9)  # the kernel's own accuracy decides, not a constant


def test_rule_bitwise_tells_the_sign_of_zero_at_nodes_and_outputs() -> None:
    """``-where(x0 > x1 - x1, x0, x1 - x1)``: real eager gives -0.0 wherever ``x1 - x1`` is taken;
    inductor-gpu's ``0.0 - x`` gives +0.0 there (values equal, bits not), inductor-cpu -0.0."""

    def graph2(x0: torch.Tensor, x1: torch.Tensor) -> torch.Tensor:
        return -torch.where(x0 > x1 - x1, x0, x1 - x1)

    g = torch.Generator().manual_seed(2)
    xs = tuple((torch.randn(256, generator=g) * 4).bfloat16() for _ in range(2))
    program = capture(graph2, *xs)
    gpu = check(program, xs, "inductor-gpu", against="eager", rule=Rule.BITWISE)
    assert not gpu.outputs[0].passes and gpu.nodes[-1].verdict is Verdict.DIVERGES, "repro: graph 2, bitwise"
    cpu = check(program, xs, "inductor-cpu", against="eager", rule=Rule.BITWISE)
    assert cpu.outputs[0].passes and all(n.verdict is Verdict.OK for n in cpu.nodes)


def test_a_sum_that_cancels_below_the_formats_range_is_noise_of_its_terms() -> None:
    """fp16 products that cancel to 2**-30 in fp64 (below fp16's smallest subnormal, so fp64 correctly
    rounded is 0 too): eager's 0 is within what its terms' rounding allows, not an underflow defect."""
    s = 2.0**-5
    a = torch.tensor([[s * (1 + 2**-10), -s * (1 + 2**-9)]] * 8, dtype=torch.float16)
    b = torch.tensor([[s * (1 + 2**-10), s]] * 8, dtype=torch.float16)

    def dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a * b).sum(-1)

    exact = (a.double() * b.double()).sum(-1)
    assert bool((exact == 2.0**-30).all()) and bool((exact.half() == 0).all()) and bool((dot(a, b) == 0).all())
    r = check(capture(dot, a, b), (a, b), "eager", against="oracle")
    assert not r.diverges and all(n.verdict is Verdict.OK for n in r.nodes)


def _sinusoidal(t: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
    phase = t[:, None] * freqs[None]  # fp32 phases up to ~900 radians
    return torch.cat([phase.cos(), phase.sin()], -1).to(torch.bfloat16)


def test_an_fp32_value_rounded_to_bf16_downstream_is_held_to_bf16() -> None:
    """A sinusoidal embedding in fp32, cast to bf16: sin/cos of fp32 phases near 900 lose ~10 bits of
    fp32 (the phase's own rounding, amplified), yet the bf16 result is as good as bf16 holds. Evidence:
    real eager's output equals fp64's correctly rounded to bf16 within bf16's rounding; so no node
    diverges, even with every node examined (each judged in the narrowest format it is kept in downstream)."""
    t = torch.tensor([437.0, 913.0])
    freqs = torch.exp(-math.log(10000) * torch.arange(32, dtype=torch.float32) / 32)
    eager = _sinusoidal(t, freqs).double()
    exact = _sinusoidal(t.double(), freqs.double()).double()  # the final .to(bf16) rounds fp64 once
    assert float((eager - exact).norm() / exact.norm()) < 2 * 2.0**-9
    r = check(capture(_sinusoidal, t, freqs), (t, freqs), "eager", against="oracle", nodes="all")
    sin = next(n for n in r.nodes if n.op == "sin")
    assert sin.dtype == "float32" and sin.working_dtype == "bfloat16"
    assert sin.local.norm_rel > EXCESS_LIMIT * 2.0**-24  # beyond fp32's limit: what used to diverge
    assert [n.node_id for n in r.nodes if n.verdict is not Verdict.OK] == [] and not r.diverges


def test_an_fp32_output_of_a_bf16_path_is_reported_against_bf16s_best() -> None:
    """The outputs table's reference RMSE is what the verdict holds the output to: fp64 correctly rounded
    to the narrowest format on its path (bf16 here, though the loss is fp32), or a quarter of that
    format's unit roundoff where larger (a scalar fp64 rounds luckily; trial 28 read 108x "ok" and
    181x "diverges" against a reference that was not the limit's); oracle: torch's cast."""
    xs = _mlp_inputs()

    def loss(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
        return _mlp(x, w1, w2).float() * 3

    r = check(capture(loss, *xs), xs, "eager", against="oracle")
    (out,) = r.outputs
    exact = _mlp(*(t.detach().double() for t in xs)) * 3  # fp64 throughout (the oracle ignores the cast)
    best = exact.to(torch.bfloat16).double()  # one value: torch's cast rounds it correctly
    assert out.dtype == "float32" and out.judged_dtype == "bfloat16"
    base = float(exact.abs()) * torch.finfo(torch.bfloat16).eps / 8
    assert out.rmse_reference == pytest.approx(max(float((best - exact).abs()), base), rel=1e-9)
    assert out.passes == (out.rmse_result <= 16 * out.rmse_reference)  # the limit is 16x the reference shown


def test_path_dtypes_in_one_pass_equals_path_dtype_per_node() -> None:
    """The one-pass table the output verdicts use gives each node's own ancestor walk's answer."""
    from roundoff.analyze.verdict import path_dtype, path_dtypes

    xs = _mlp_inputs()
    program = capture(lambda x, w1, w2: _mlp(x, w1, w2).float() * 2, *xs, backward=True)
    table = path_dtypes(program.graph)
    (loss, *_) = program.output_args()
    assert loss.meta["val"].dtype == torch.float32 and table[loss] == torch.bfloat16
    assert all(table[n] == path_dtype(n) for n in program.graph.nodes)


def test_a_gradient_the_defect_cannot_reach_passes() -> None:
    """``ones_like(loss)`` starts every gradient: it reads the loss's shape, not its value, so a defect in
    one branch of the loss fails only the gradients it reaches (a new user saw every gradient fail)."""
    g = torch.Generator().manual_seed(1)
    a = torch.randn(8, 8, generator=g).bfloat16().requires_grad_()
    b = torch.randn(8, generator=g).bfloat16().requires_grad_()
    x, s = torch.randn(4, 8, generator=g).bfloat16(), torch.full((8,), 1e-3).bfloat16()

    def loss(x, s, a, b, log1p: bool = False):
        tiny = torch.log1p(s.float()).bfloat16() if log1p else torch.log(1 + s)  # planted: 1 + 1e-3 in bf16
        return (x @ a).float().pow(2).mean() + (tiny * b).float().sum()

    program = capture(loss, x, s, a, b, backward=True)
    r = check(program, (x, s, a, b), "eager", against="oracle", nodes="all")
    verdicts = {o.name: o.passes for o in r.outputs}
    # independent: real eager's gradients of `a` are bit for bit those of the program without the defect
    ga = torch.autograd.grad(loss(x, s, a, b), a)[0]
    assert torch.equal(ga, torch.autograd.grad(loss(x, s, a, b, log1p=True), a)[0])
    assert verdicts["grad_a"] and not verdicts["grad_b"], verdicts


def test_an_overflow_the_loss_absorbs_fails_only_the_gradients_it_makes_nan() -> None:
    """A GRU gate written ``1 / (1 + exp(-x))`` in fp16: exp overflows where fp64 is finite, the forward
    is still right (1 / inf = 0, fp64 ~1e-13) and the backward makes NaN (inf / inf). The loss passes,
    the NaN gradient fails, the exp is the finding, and no operand multiplied by that inf is blamed."""
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(64, generator=g) * 6).half()
    w = (2 + torch.rand(64, generator=g)).half().requires_grad_()

    def loss(x, w):
        return (1 / (1 + torch.exp(-x * w))).float().sum()

    out, (gw,) = loss(x, w), torch.autograd.grad(loss(x, w), w)  # independent: real eager and fp64
    out64, (gw64,) = loss(x.double(), w.double()), torch.autograd.grad(loss(x.double(), w.double()), w)
    assert abs(float(out) - float(out64)) < 1e-2 * abs(float(out64))
    assert bool(gw.isnan().any()) and bool(gw64.isfinite().all())
    program = capture(loss, x, w, backward=True)
    r = check(program, (x, w), "eager", against="oracle", nodes="all")
    verdicts = {o.name: o.passes for o in r.outputs}
    assert verdicts == {"out": True, "grad_w": False}, verdicts
    exp = next(n for n in program.graph.nodes if n.target is torch.ops.aten.exp.default).meta["roundoff_id"]
    assert r.culprits[0] == exp and r.first_divergent == exp, (r.culprits, r.first_divergent)


def test_a_divergence_that_does_not_reach_an_output_is_a_finding_not_a_failure() -> None:
    """check and blame judge an output by its values once a node on its path is flagged: a bf16
    variance by moments (a real divergence, the finding) scaled to nothing in the loss fails nothing,
    so check's verdict and blame's "nothing to fix" agree (new users saw them contradict each other)."""
    from roundoff.blame import blame

    x = (100 + torch.randn(4, 64, generator=torch.Generator().manual_seed(7))).bfloat16()

    def loss(x):
        var = (x * x).mean(-1) - x.mean(-1) ** 2
        return x.float().sum() + 1e-6 * var.float().sum()

    exact = loss(x.double())  # independent: eager's bf16 loss is within 16 roundings of bf16
    assert abs(float(loss(x)) - float(exact)) <= 16 * 2.0**-9 * abs(float(exact))
    program = capture(loss, x)
    r = check(program, (x,), "eager", against="oracle", nodes="all")
    sub = next(n for n in program.graph.nodes if n.target is torch.ops.aten.sub.Tensor).meta["roundoff_id"]
    assert not r.diverges and r.node(sub).verdict is Verdict.DIVERGES and sub in r.culprits
    assert any(e.startswith("No output fails: the outputs the error named above reaches are within 16x") for e in r.explanations), r.explanations
    assert blame(program, "eager", against="oracle", repro=False).status.value == "already_ok"


def test_a_selection_that_flips_against_fp64_is_named_as_a_discrete_decision() -> None:
    """A router's topk of scores rounded to bf16 picks another expert than fp64 at a near-tie (a new
    user's MoE): the report says so, instead of only "keep it in a wider format" downstream."""
    scores = torch.tensor([[1.0, 1.0001, 0.5], [0.2, 0.9, 0.1]])
    table = torch.tensor([3.0, -2.0, 7.0])

    def route(s, w):
        v, i = s.to(torch.bfloat16).topk(1, -1)
        return w[i.squeeze(-1)] * v.float().squeeze(-1)

    # independent: torch's own topk picks another index in bf16 than in fp64 for the first row only
    flips = int((scores.bfloat16().topk(1, -1)[1] != scores.double().topk(1, -1)[1]).sum())
    assert flips == 1
    r = check(capture(route, scores, table), (scores, table), "eager", against="oracle", nodes="all")
    said = [e for e in r.explanations if "selects differently from fp64 at 1 of 2 positions" in e]
    assert r.diverges and said and said[0].startswith("`topk`"), r.explanations


def test_a_selection_no_wider_format_fixes_is_blamed_as_a_selection_not_an_implementation() -> None:
    """Scores 1e-12 apart tie in fp32 as in bf16, so no placement change can make topk choose as fp64
    does (a new user's bf16 MoE): blame's no_fix names the selection, not "an implementation
    difference", and check names no op after the selection as amplifying an error."""
    from roundoff.blame import blame

    scores = torch.tensor([[1.0, 1.0 + 1e-12, 0.5], [0.2, 0.9, 0.1]], dtype=torch.float64)
    table = torch.tensor([3.0, -2.0, 7.0])

    def route(s, w):
        v, i = s.to(torch.bfloat16).topk(1, -1)
        return w[i.squeeze(-1)] * v.float().squeeze(-1)

    # independent: fp32 ties too, and picks the other index than fp64 in the first row
    assert scores.float().topk(1, -1)[1].flatten().tolist() == [0, 1] != scores.topk(1, -1)[1].flatten().tolist()
    program = capture(route, scores, table)
    r = check(program, (scores, table), "eager", against="oracle", nodes="all")
    assert r.diverges and not any("amplifies" in e for e in r.explanations), r.explanations
    b = blame(program, "eager", against="oracle", repro=False)
    assert b.status.value == "no_fix"
    assert not any("implementation difference" in n for n in b.notes), b.notes
    assert any(n.startswith("`topk`") and "1 of 2 positions" in n for n in b.notes), b.notes


def test_a_gradient_zero_by_structure_is_not_a_divergence() -> None:
    """A hand-written log-sum-exp cross-entropy (a new user's research code): the gradient reaching the
    row max is ``1 - sum(softmax)``, 0 by structure; in fp32 it is rounding noise of its terms (6e-8),
    in fp64 1e-16, so its relative error is 1, "1.02e3 times bf16's rounding" before, and the finding
    outranked a planted bug. It is judged against its operands' rounding, as a sum is against its terms'."""
    def ce(logits, targets):
        lf = logits.float()
        m = lf.max(-1, keepdim=True).values
        lse = m.squeeze(-1) + torch.log(torch.exp(lf - m).sum(-1))
        return (lse - lf.gather(-1, targets[..., None]).squeeze(-1)).mean()

    g = torch.Generator().manual_seed(0)
    logits = (torch.randn(62, 512, generator=g) * 0.5).bfloat16().requires_grad_(True)
    targets = torch.randint(0, 512, (62,), generator=g)
    # independent: the gradient reaching m is fp32 noise (|.| <= 1e-6) and 1e-15 in fp64
    for dt, bound in ((torch.float32, 1e-6), (torch.float64, 1e-15)):
        m = logits.detach().to(dt).max(-1, keepdim=True).values.requires_grad_(True)
        (m.squeeze(-1) + torch.log(torch.exp(logits.detach().to(dt) - m).sum(-1))).sum().backward()
        assert float(m.grad.abs().max()) <= bound
    r = check(capture(ce, logits, targets, backward=True), (logits, targets), "eager", against="oracle", nodes="all")
    assert not r.diverges and r.first_divergent is None and not r.culprits, (r.first_divergent, r.explanations)


def test_an_op_correctly_rounded_in_its_format_is_where_the_error_an_amplifier_reads_began() -> None:
    """A decay gate ``log(sigmoid(g.half()))`` with sigmoid near 1 (a new user's research code): log
    amplifies the fp16 sigmoid's own rounding. The bf16 operand the sigmoid reads carries a larger
    relative error, which sigmoid's flat tail barely passes on; the finding named that operand's
    producer (keep the RMSNorm output wider), where the fix is the sigmoid's format."""
    g = torch.Generator().manual_seed(5)
    x = torch.randn(64, 32, generator=g).bfloat16()
    w = (torch.randn(32, 8, generator=g) / 6).bfloat16()

    def gate(x, w):
        z = x @ w + 8.0
        return torch.log(torch.sigmoid(z.half())).float()

    # independent: from the same bf16 z, fp32 log(sigmoid) is within bf16's rounding, the fp16 one is not
    z64 = (x @ w + 8.0).double()
    exact = torch.nn.functional.logsigmoid(z64)
    fp16 = torch.log(torch.sigmoid(z64.half())).double()
    fp32 = torch.log(torch.sigmoid(z64.float())).double()
    rel = lambda v: float((v - exact).norm() / exact.norm())  # noqa: E731
    assert rel(fp16) > 16 * 2.0**-9 > rel(fp32) * 16
    program = capture(gate, x, w)
    r = check(program, (x, w), "eager", against="oracle", nodes="all")
    sig = next(n for n in program.graph.nodes if n.target is torch.ops.aten.sigmoid.default).meta["roundoff_id"]
    assert r.diverges and r.culprits[0] == sig, (r.culprits, r.explanations)


def test_a_running_total_held_in_bf16_is_flagged_and_fails_its_output() -> None:
    """A loss accumulated term by term in a bf16 running total (a new user's per-token loss loop): each
    add is correctly rounded, so no node diverged and the output passed at 17.7x its reference. The
    chain is a hazard, and an output beyond the limit with it on its path fails."""
    g = torch.Generator().manual_seed(0)
    x = (torch.rand(128, 16, generator=g) * 0.2 + 6).bfloat16()

    def running(x):
        total = torch.zeros(16, dtype=torch.bfloat16)
        for i in range(x.shape[0]):
            total = total + x[i]
        return total

    # independent: the bf16 running total is far beyond 16x fp64's rounding to bf16
    exact = x.double().sum(0)
    assert float((running(x).double() - exact).norm()) > 16 * float((exact.bfloat16().double() - exact).norm())
    r = check(capture(running, x), (x,), "eager", against="oracle", nodes="all")
    assert [h.kind for h in r.hazards] == ["narrow-running-sum"], r.hazards
    assert r.diverges and any("running total of 128 additions" in e for e in r.explanations), r.explanations


def test_a_reference_that_is_nan_where_fp64_is_finite_is_said() -> None:
    """``e / (e.norm() + 1e-8)`` in fp16 with a zero row: eager's epsilon rounds to 0 and it makes
    0/0, Inductor's fused fp32 kernel does not. Against eager the policy passes (it is the better
    one); the report said nothing while real eager training of that script went NaN (a new user)."""
    e = torch.randn(4, 8, generator=torch.Generator().manual_seed(1)).half()
    e[2] = 0

    def normed(e):
        return e / (e.norm(dim=-1, keepdim=True) + 1e-8)

    assert bool(normed(e).isnan().any()) and not bool(normed(e.double()).isnan().any())  # independent: eager
    r = check(capture(normed, e), (e,), "inductor-gpu", against="eager", nodes="all")
    said = [x for x in r.explanations if "the reference (eager) is NaN/inf where fp64 is finite at 1 output(s)" in x]
    assert not r.diverges and said and "8 element(s)" in said[0] and "this policy does not" in said[0], r.explanations


def test_a_reference_nan_at_many_outputs_is_said_once() -> None:
    """Trial 28: a NaN eager run gave one near-identical bullet per output (30 of them) and called an
    output that eager broke "diverges from eager ... the reference's is nan". Said once, for all."""
    e = torch.randn(4, 8, generator=torch.Generator().manual_seed(1)).half()
    e[2] = 0

    def normed(e):
        return e / (e.norm(dim=-1, keepdim=True) + 1e-8)

    outs = lambda e: (normed(e), normed(e) * 2, normed(e) + 1)  # noqa: E731 - three outputs eager breaks alike
    r = check(capture(outs, e), (e,), "inductor-gpu", against="eager", nodes="all")
    said = [x for x in r.explanations if "is NaN/inf where fp64 is finite at" in x]
    assert len(said) == 1 and "at 3 output(s)" in said[0], r.explanations
    assert not any("the reference's is nan" in x for x in r.explanations), r.explanations


def test_autograd_summing_a_loops_slice_gradients_is_no_running_total() -> None:
    """A recurrence over time slices (a new user's Mamba-like block): autograd sums the gradients of
    the slices at the slicing line, a chain of bf16 adds that is exact here; only the user's own
    forward running total is the hazard."""
    x = torch.randn(32, 8, generator=torch.Generator().manual_seed(0)).bfloat16().requires_grad_(True)

    def scan(x):
        h = torch.zeros(8)
        for t in range(x.shape[0]):
            h = 0.9 * h + x[t].float()
        return h.sum()

    r = check(capture(scan, x, backward=True), (x,), "eager", against="oracle", nodes="all")
    assert not [h for h in r.hazards if h.kind == "narrow-running-sum"], r.hazards


def test_an_fp32_op_amplifying_its_fp32_operands_rounding_is_not_a_cause() -> None:
    """``exp`` of fp32 logits near 60 (a new user's CLIP-style fp16 ViT with its softmax moved to fp32):
    it amplifies the fp32 rounding of its argument 60 times, which no op and no format short of fp64
    avoids; it was named "losing accuracy itself, 47.7 times fp32's rounding" before the real cause."""
    g = torch.Generator().manual_seed(2)
    feats = torch.nn.functional.normalize(torch.randn(8, 32, generator=g), dim=-1).half()
    w = torch.nn.functional.normalize(torch.randn(16, 32, generator=g), dim=-1).half()

    def loss(f):
        logits = (10.0 * f @ w.t() + 60.0).float()
        e = torch.exp(logits)
        return -torch.log(e[:, 0] / e.sum(-1)).mean()

    # independent: torch's fp32 exp is within an ulp of the exact exp of the same fp32 argument
    z = (10.0 * feats @ w.t() + 60.0).float()
    assert float(((torch.exp(z).double() - torch.exp(z.double())) / torch.exp(z.double())).abs().max()) < 2.0**-23
    program = capture(loss, feats)
    r = check(program, (feats,), "eager", against="oracle", nodes="all")
    exp = next(n for n in program.graph.nodes if n.target is torch.ops.aten.exp.default).meta["roundoff_id"]
    assert r.node(exp).verdict is Verdict.OK and exp not in r.culprits, (r.node(exp).own_excess, r.culprits)


def _near_tie_scores() -> tuple[torch.Tensor, torch.Tensor]:
    """bf16 activations and weights whose first two score columns differ below bf16's resolution."""
    g = torch.Generator().manual_seed(11)
    x = torch.randn(64, 16, generator=g).bfloat16()
    w = torch.randn(16, 3, generator=g)
    w[:, 1] = w[:, 0] * (1 + 2.0**-12)
    return x, w.bfloat16()


def test_a_softmax_max_that_flips_is_not_named_its_choice_only_shifts():
    """Trial 45: a hand-written softmax's `max` chose other indices than fp64 at near-ties and check said
    "what is computed from the other choice differs from fp64 by more than rounding"; the choice only
    shifts what the softmax is invariant to. Oracle: fp64 autograd with the max taken at bf16's choice."""
    x, w = _near_tie_scores()

    def softmax_loss(x, w):
        s = x @ w
        e = torch.exp(s - s.max(-1, keepdim=True).values)
        return (e / e.sum(-1, keepdim=True)).pow(2).sum()

    chosen = (x @ w).max(-1).indices  # torch's own bf16 choice
    s64 = x.double() @ w.double()
    assert (chosen != s64.max(-1).indices).any()  # the selection flips
    grads = []
    for pick in (s64.max(-1).indices, chosen):
        xx = x.double().requires_grad_()
        s = xx @ w.double()
        m = s.gather(-1, pick[:, None])
        e = torch.exp(s - m)
        (e / e.sum(-1, keepdim=True)).pow(2).sum().backward()
        grads.append(xx.grad)
    assert float((grads[0] - grads[1]).norm() / grads[0].norm()) < 1e-12  # the choice does not matter
    r = check(softmax_loss, (x.clone().requires_grad_(), w), "eager", against="oracle", nodes="all", backward=True)
    assert not r.selection_flips and not any("selects differently" in e for e in r.explanations), r.explanations


def test_a_routing_choice_that_flips_is_named():
    """The same near-ties choosing which value is taken (a router): the flip moves the output, so it is
    named. Oracle: the output computed in fp64 at bf16's choice, beyond 16x bf16's rounding from fp64's."""
    x, w = _near_tie_scores()
    table = torch.tensor([[1.0], [-3.0], [0.5]])

    def route(x, w, table):
        return table[(x @ w).argmax(-1)].sum(0)

    s64 = x.double() @ w.double()
    at_bf16, at_fp64 = table.double()[(x @ w).argmax(-1)].sum(0), table.double()[s64.argmax(-1)].sum(0)
    assert float((at_bf16 - at_fp64).abs().max()) > 16 * 2.0**-9 * float(at_fp64.abs().max())
    r = check(route, (x, w, table), "eager", against="oracle", nodes="all")
    assert [f[0] for f in r.selection_flips] and any(e.startswith("`argmax`") for e in r.explanations), r.explanations


def test_blame_does_not_name_an_underflow_that_loses_nothing():
    """Trial 45: blame's no_fix named `exp` in a hand-written log-sum-exp, whose terms below 1e-38 (beside a
    term of 1) fp32 flushes to 0, and advised fp64, while a router's topk flip was the cause. Oracle: the
    fp64 output with those terms flushed, equal to fp64's within 1e-30."""
    from roundoff.blame import blame

    scores = torch.tensor([[1.0, 1.0 + 1e-12, 0.5], [0.2, 0.9, 0.1]], dtype=torch.float64)
    table = torch.tensor([3.0, -2.0, 7.0])

    def route_lse(s, w):
        v, i = s.to(torch.bfloat16).topk(1, -1)
        z = s.float() * 200
        m = z.max(-1, keepdim=True).values
        lse = (m + torch.log(torch.exp(z - m).sum(-1, keepdim=True))).squeeze(-1)
        return w[i.squeeze(-1)] * v.float().squeeze(-1) + 1e-3 * lse

    z = scores * 200
    terms = torch.exp(z - z.max(-1, keepdim=True).values)
    assert ((terms < 1e-45) & (terms > 0)).any()  # below fp32's least subnormal: flushed
    flushed = torch.where(terms < 1e-45, 0.0, terms)
    assert float((terms.sum(-1).log() - flushed.sum(-1).log()).abs().max()) < 1e-30
    b = blame(capture(route_lse, scores, table), "eager", against="oracle", repro=False)
    assert b.status.value == "no_fix"
    assert not any("cannot hold" in n for n in b.notes) and any(n.startswith("`topk`") for n in b.notes), b.notes


def offset_matmul_plus_tiny(a, b, t):
    return (a + 1000).half() @ b + (t * 1e-9).sum()


def test_an_underflow_that_moves_no_output_is_named_after_the_cause_that_does():
    """Trial 45: fp16 attention-score gradients flushing to 0 were named first (8.2e3x fp16's rounding by
    the range rule) while a matmul amplifying its operands' rounding made the failing gradients. Here a
    sum of values below fp16's range, added to a cancelling fp16 matmul. Oracle: the fp64 output with the
    tiny values as torch's fp16 cast holds them, within 16x fp16's rounding of fp64's output."""
    k = 2048
    a = torch.tensor([0.25, 0.75]).repeat(4, k // 2)  # 1000.25 -> 1000, 1000.75 -> 1001 in fp16: coherent
    b = torch.tensor([1.0, -1.0]).repeat(k // 2).reshape(k, 1).expand(k, 4).half().contiguous()
    t = torch.randn(64, generator=torch.Generator().manual_seed(0)).half()
    exact = (a.double() + 1000) @ b.double() + (t.double() * 1e-9).sum()
    held = (a.double() + 1000) @ b.double() + (t.double() * 1e-9).half().double().sum()
    assert float((held - exact).norm()) < 16 * 2.0**-11 * float(exact.norm())  # the underflow moves nothing
    r = check(offset_matmul_plus_tiny, (a, b, t), "eager", against="oracle", nodes="all")
    ops = [r.node(n).op for n in r.culprits]
    assert r.diverges and "mm" in ops and "mul" in ops and ops.index("mm") < ops.index("mul"), ops


def pooled(a, c):
    return (F.max_pool2d(a.half(), 2).float() * c).sum()


def test_a_max_pool_that_picks_other_elements_than_fp64_is_named_and_fails_the_gradient():
    """Trial 47: an fp16 CNN's max pooling picked other elements than fp64 in 11 windows, 95% of its
    c1.weight gradient's error, and check called that gradient ill-conditioned. Oracles: torch's own
    max_pool2d indices in fp16 and fp64, and fp64's gradient routed through fp16's choice."""
    g = torch.Generator().manual_seed(0)
    a = (1 + 1e-4 * torch.rand(2, 3, 8, 8, generator=g)).requires_grad_()  # neighbours tie in fp16
    c = torch.randn(2, 3, 4, 4, generator=g)
    _, i16 = F.max_pool2d(a.detach().half().double(), 2, return_indices=True)
    _, i64 = F.max_pool2d(a.detach().double(), 2, return_indices=True)
    flips = int((i16 != i64).sum())
    grad64 = torch.zeros(2, 3, 64, dtype=torch.float64).scatter_(-1, i64.flatten(-2), c.double().flatten(-2))
    routed = torch.zeros(2, 3, 64, dtype=torch.float64).scatter_(-1, i16.flatten(-2), c.double().flatten(-2))
    assert flips and float((routed - grad64).norm()) > 16 * 2.0**-24 * float(grad64.norm())
    r = check(pooled, (a, c), "eager", against="oracle", nodes="all", backward=True)
    assert [(n, of) for _nid, n, of in r.selection_flips] == [(flips, i16.numel())], r.selection_flips
    assert r.explanations[0].startswith("`max_pool2d_with_indices`"), r.explanations
    assert [o.name for o in r.outputs if not o.passes] == ["grad_a"]


def _pooled_product(a, w, c):
    return (F.max_pool2d((a.half() @ w.half()).view(2, 3, 8, 8), 2).float() * c).sum()


def test_inductors_offset_max_pool_that_picks_other_elements_than_fp64_is_named():
    """Trial 68: under inductor-cpu, whose decomposition pools with each window's offset of its maximum
    (`_low_memory_max_pool_with_offsets`), the flips an fp16 CNN's pool made were not looked for, and its
    gradient passed where eager's, the same 96x, failed. Oracles: torch's max_pool2d indices of the fp16
    product (a matmul kernel's stored result) and of fp64's, and fp64's gradient routed through fp16's."""
    g = torch.Generator().manual_seed(0)
    a = (1 + 1e-3 * torch.rand(48, 16, generator=g)).requires_grad_()
    w = torch.full((16, 8), 1 / 16) + 1e-4 * torch.rand(16, 8, generator=g)
    c = torch.randn(2, 3, 4, 4, generator=g)
    _, i16 = F.max_pool2d((a.detach().half() @ w.half()).double().view(2, 3, 8, 8), 2, return_indices=True)
    _, i64 = F.max_pool2d((a.detach().double() @ w.double()).view(2, 3, 8, 8), 2, return_indices=True)  # casts ignored
    flips = int((i16 != i64).sum())
    assert flips
    r = check(_pooled_product, (a, w, c), "inductor-cpu", against="oracle", nodes="all", backward=True)
    assert [(n, of) for _nid, n, of in r.selection_flips] == [(flips, i16.numel())], r.selection_flips
    assert r.explanations[0].startswith("`_low_memory_max_pool_with_offsets`"), r.explanations
    from roundoff.report.from_check import run_from_check  # the --json report's causes name it first too

    assert run_from_check(r)["causes"][0]["id"] == r.selection_flips[0][0]


def test_findings_name_a_multi_output_result_as_the_nodes_table_does() -> None:
    """Trial 97: a finding named `getitem` (n232) what the nodes table calls `native_batch_norm[0]`. Oracle:
    check's own node reports, which name each result of a multi-output op."""
    from roundoff.analyze.naming import node_at
    from roundoff.capture.program import multi_output_parent, node_id

    bn = torch.nn.BatchNorm1d(8).bfloat16().train()
    x = torch.randn(16, 8, generator=torch.Generator().manual_seed(0)).bfloat16()
    program = capture(lambda x: bn(x).float().square().sum(), x, backward=True)
    r = check(program, (x,), "eager", against="oracle", nodes="all")
    results = [n for n in program.graph.nodes if multi_output_parent(n) is not None and r.node(node_id(n)) is not None]
    assert results
    for n in results:
        assert node_at(n).startswith(f"`{r.node(node_id(n)).op}` ("), (node_at(n), r.node(node_id(n)).op)
