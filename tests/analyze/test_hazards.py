"""Hazard rules fire where real eager PyTorch shows the trap, and stay quiet on safe programs."""

from __future__ import annotations

from collections.abc import Callable

import torch

from roundoff.analyze import check, lint
from roundoff.capture import capture
from roundoff.plan import plan
from roundoff.zoo import get_workload


def _kinds(fn: Callable[..., torch.Tensor], *xs: torch.Tensor, policy: str = "eager") -> set[str]:
    return {h.kind for h in check(capture(fn, *xs), xs, policy, against="oracle").hazards}


def test_fp16_overflow_where_eager_overflows() -> None:
    x = torch.linspace(100, 400, 64).half()
    assert bool((x * x).isinf().any())  # real eager: inf
    assert "fp16-overflow" in _kinds(lambda t: t * t, x)
    assert "fp16-overflow" not in _kinds(lambda t: t * t, x / 4)


def test_exp_overflow_without_max_subtraction() -> None:
    x = torch.linspace(0, 100, 64).bfloat16()
    assert bool(torch.exp(x).isinf().any())  # real eager: inf
    assert "exp-overflow" in _kinds(torch.exp, x)
    assert "exp-overflow" not in _kinds(lambda t: torch.exp(t - t.amax()), x)


def _scores_exp(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return torch.exp(q @ k.T * 4.0).float().sum()


def test_exp_overflow_advice_covers_an_argument_held_in_16_bits() -> None:
    """Trial 103: "compute it in fp32 (`x.float().exp()`)" turned an fp16 attention's inf into an error 44x fp16's
    rounding: its scores, near 40, were still rounded to fp16, which exp amplifies 40-fold. The advice now says
    to make the argument in fp32 too. Oracle: real eager, fp64 by hand."""
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(8, 16, generator=g).half(), torch.randn(8, 16, generator=g).half()
    exact = torch.exp(q.double() @ k.double().T * 4.0)
    u16 = 2.0**-11

    def rel(v: torch.Tensor) -> float:
        return float((v.double() - exact).norm() / exact.norm())

    assert bool(torch.exp(q @ k.T * 4.0).isinf().any())  # real eager: inf
    assert rel(torch.exp((q @ k.T * 4.0).float())) > 16 * u16  # exp in fp32 of the fp16 scores: still far off
    assert rel(torch.exp(q.float() @ k.float().T * 4.0)) < 4 * u16  # the scores in fp32 too: within fp16's rounding
    (h,) = [h for h in check(capture(_scores_exp, q, k), (q, k), "eager", against="oracle").hazards
            if h.kind == "exp-overflow"]
    assert "Compute it in fp32" in h.message and "compute the argument in fp32 too" in h.message, h.message
    x = torch.linspace(0, 14, 64).half()  # an argument below 16: its fp16 rounding is not amplified beyond the limit
    (h,) = [h for h in check(capture(torch.exp, x), (x,), "eager", against="oracle").hazards if h.kind == "exp-overflow"]
    assert "argument in fp32 too" not in h.message, h.message


def test_absorbed_epsilon_only_where_it_rounds_to_zero() -> None:
    x = torch.linspace(1, 2, 64).bfloat16()
    assert torch.equal(x + 1e-6, x)  # real eager: below half an ulp of x, the epsilon vanishes...
    exact = torch.rsqrt(x.double() + 1e-6)
    assert torch.equal(torch.rsqrt(x + 1e-6), exact.bfloat16())  # ...harmlessly: fp64 rounds the same
    assert "absorbed-epsilon" not in _kinds(lambda t: torch.rsqrt(t + 1e-6), x)
    v = torch.zeros(8).half()  # a zero variance, where the epsilon must keep rsqrt finite
    assert bool(torch.rsqrt(v + 1e-8).isinf().all()) and bool(torch.rsqrt(v.double() + 1e-8).isfinite().all())
    assert "absorbed-epsilon" in _kinds(lambda t: torch.rsqrt(t + 1e-8), v)  # 1e-8 rounds to 0 in fp16
    assert "absorbed-epsilon" not in _kinds(lambda t: torch.rsqrt(t + 1e-5), v)


def test_softmax_backward_traps_only_under_fusion() -> None:
    w = get_workload("softmax-backward")
    prog = capture(w.build(), *w.make_inputs(), backward=True)
    fused = {h.kind for h in lint(plan(prog, "inductor-cpu"))}
    assert {"mixed-precision-comparison", "max-subtraction-mismatch"} <= fused
    assert not {h.kind for h in lint(plan(prog, "eager"))}


def test_exp_of_a_mixed_precision_difference_says_a_fix_the_policy_can_take() -> None:
    """Trial 43: under inductor-cpu (no FMA contraction: -ffp-contract=off) the advice for a softmax's
    `exp(s - max)` read at two precisions was "round both operands the same way or forbid the FMA"."""
    w = get_workload("softmax-backward")
    prog = capture(w.build(), *w.make_inputs(), backward=True)
    (h,) = [h for h in lint(plan(prog, "inductor-cpu")) if h.kind == "exp-of-difference"]
    assert "one rounded to storage, one not" in h.message and "FMA" not in h.message
    assert "keep the rounded one in fp32" in h.message


def test_fma_hazard_only_where_contracted() -> None:
    w = get_workload("fma-cancel")
    prog = capture(w.build(), *w.make_inputs())
    assert "fma-cancellation" in {h.kind for h in lint(plan(prog, "inductor-gpu"))}
    assert not lint(plan(prog, "inductor-cpu"))  # no contraction on CPU (-ffp-contract=off)


def test_a_division_site_is_named_as_its_product() -> None:
    # exp(x - x/y): under inductor-gpu the division's a*(1/b) is folded into the sub (plan.fma)
    x = torch.linspace(1, 2, 64)
    y = torch.full((64,), 1.0000001)
    prog = capture(lambda a, b: torch.exp(a - a / b), x, y)
    (site,) = [d.fma for d in plan(prog, "inductor-gpu").decisions.values() if d.fma is not None]
    assert site.contracted and prog.node(site.mul_id).target is torch.ops.aten.div.Tensor
    texts = [h.message for h in lint(plan(prog, "inductor-gpu")) if h.kind == "fma-cancellation"]
    assert texts and "`a * (1/b)` inside `div`" in texts[0], texts


def test_no_fma_hazard_where_the_product_is_exact_in_fp32() -> None:
    """bf16 x bf16-representable scalar: the product is exact in fp32 (8 + 1 significant bits), so an FMA
    computes what the unfused subtraction does; 0.1 (53 bits) makes it inexact and the hazard real."""
    x = (torch.randn(64, generator=torch.Generator().manual_seed(0)) * 100).bfloat16()
    for s, exact in ((0.5, True), (3.0, True), (0.1, False)):
        product32 = (x.float() * s).double()  # the product as fp32 opmath computes it
        assert torch.equal(product32, x.double() * s) is exact  # independent: exact iff fp64 agrees
        kinds = _kinds(lambda t, s=s: torch.exp(t * s - t * s), x, policy="inductor-gpu")
        assert ("fma-cancellation" in kinds) is (not exact), (s, kinds)


def test_inductor_notes_only_under_inductor_policies() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        a = torch.exp(x * 2)
        return a / a.sum(-1, keepdim=True) + a

    x = torch.randn(4, 8).bfloat16()
    program = capture(f, x)
    assert any("Inductor" in n for n in plan(program, "xla-2.10").notes)  # the plan's own note names Inductor
    xla = check(program, (x,), "xla-2.10", against="oracle").notes
    ind = check(program, (x,), "inductor-gpu", against="oracle").notes
    assert not any("inductor" in n.lower() for n in xla) and any("Inductor" in n for n in ind)
    assert any(n.startswith("rematerialized pointwise nodes") for n in xla)  # the part that applies stays


def test_fp16_overflow_fix_does_not_offer_a_format_that_overflows_too() -> None:
    """exp(x) near 168 is 8e72 in fp64: fp32 overflows as well (real fp32 exp: inf), so the hazard must
    not suggest computing it in bf16/fp32."""
    x = torch.linspace(100, 168, 64).half()
    assert bool(torch.exp(x.float()).isinf().any()) and bool(torch.exp(x.double()).isfinite().all())
    msgs = [h.message for h in check(capture(torch.exp, x), (x,), "eager", against="oracle").hazards
            if h.kind == "fp16-overflow"]
    assert msgs and all("compute this node in bf16/fp32" not in m and "cannot hold it either" in m for m in msgs)


def test_a_node_the_policy_keeps_in_fp32_has_no_fp16_overflow_hazard() -> None:
    """A new user's fixed policy (blame's keep-fp32 on an fp16 sum of squares) still printed "it becomes
    inf in fp16" for the node it keeps in fp32: the rules read the format the plan holds the value in."""
    from roundoff.blame.changes import Change, ChangeKind, apply_changes
    from roundoff.policy.registry import get_policy

    x = (torch.randn(256, generator=torch.Generator().manual_seed(0)) * 40).half()

    def sum_of_squares(x: torch.Tensor) -> torch.Tensor:
        return x.pow(2).sum().sqrt()

    assert float(x.double().pow(2).sum()) > torch.finfo(torch.float16).max  # fp64's sum is beyond fp16
    program = capture(sum_of_squares, x)
    total = next(n for n in program.graph.nodes if n.target is torch.ops.aten.sum.default).meta["roundoff_id"]
    before = check(program, (x,), "eager", against="oracle", nodes="all")
    assert any(h.kind == "fp16-overflow" and h.node_id == total for h in before.hazards)
    kept = apply_changes(get_policy("eager"), [Change(0, total, ChangeKind.KEEP_FP32, "sum")])
    after = check(program, (x,), kept, against="oracle", nodes="all")
    assert not any(h.kind == "fp16-overflow" and h.node_id == total for h in after.hazards), after.hazards


def test_a_failing_running_total_is_the_first_finding():
    """Trial 28: a loss summed in a bf16 running total failed, and the first bullet was the failing
    output; the running-sum hazard that causes it came after. It now leads, as a cause. Oracle: the
    fp64 sum of the same values (the check's verdict), and the hazard rule's own node."""
    g = torch.Generator().manual_seed(0)
    xs = (torch.rand(600, 8, generator=g) + 1).bfloat16()

    from tests.analyze.planted import running_total

    exact = xs.double().sum()
    assert abs(float(running_total(xs)) - float(exact)) > 16 * float(exact) * 2**-8 / 8  # eager is off
    r = check(capture(running_total, xs), (xs,), "eager", against="oracle")
    assert r.diverges and any(h.kind == "narrow-running-sum" for h in r.hazards)
    assert "a running total of" in r.explanations[0] and "held in bfloat16" in r.explanations[0], r.explanations
    assert sum("a running total of" in e for e in r.explanations) == 1


def test_an_additive_mask_pushed_below_fp16s_range_is_no_overflow_hazard():
    """Trial 28: HF's `attn_weights + attention_mask` (the mask at finfo(fp16).min) on clean fp16 Bloom
    was reported as "reaches 6.55e+04 ... it becomes inf in fp16. Fix: scale the values down": the
    -inf lands where the mask is, which is what the mask means. A positive overflow still is one.
    Oracle: the fp64 values (torch) of the two sums."""
    g = torch.Generator().manual_seed(0)
    scores = (torch.randn(2, 8, 8, generator=g) - 3).half()  # negative scores
    mask = torch.zeros(8, 8).masked_fill(torch.ones(8, 8, dtype=torch.bool).triu(1), torch.finfo(torch.float16).min).half()
    assert float((scores.double() + mask.double()).min()) < -65504  # fp64 goes beyond fp16's range

    def masked_softmax(s, m):
        return torch.softmax(s + m, -1)

    r = check(capture(masked_softmax, scores, mask), (scores, mask), "eager", against="oracle", nodes="all")
    assert not any(h.kind == "fp16-overflow" for h in r.hazards), r.hazards
    big = (scores.double().abs() * 30000).half()
    assert float((big.double() + big.double()).max()) > 65504  # a real overflow
    r = check(capture(lambda a, b: (a + b) * 0.5, big, big), (big, big), "eager", against="oracle", nodes="all")
    assert any(h.kind == "fp16-overflow" for h in r.hazards), r.hazards


def test_exp_of_a_sum_of_an_input_and_a_slice_of_an_input_is_no_mixed_precision_difference() -> None:
    """Trial 62: an RWKV step's ``exp(u + k[t])`` was flagged as read at two precisions: ``k[t]``, a select
    of a graph input (fp16 in memory, as ``u`` is), counted as unrounded. A fused product beside an input
    still is one."""
    def step(u, k):  # type: ignore[no-untyped-def]
        return torch.exp(u + k[1]), torch.exp(u + k[2] * 3.0)

    g = torch.Generator().manual_seed(0)
    u, k = torch.randn(8, generator=g).half(), torch.randn(4, 8, generator=g).half()
    p = plan(capture(step, u, k), "inductor-cpu")
    flagged = [h.node_id for h in lint(p) if h.kind == "exp-of-difference"]
    from roundoff.capture.program import node_id

    assert flagged == [node_id(p.program.output_args()[1])], flagged


def test_exp_overflow_advises_fp32_only_where_fp32_holds_it() -> None:
    """Trial 63: an exp whose argument reaches 105 was told "or compute it in fp32", where fp32 overflows
    too. Oracle: torch's own fp32 exp, inf at 105 and finite at 80."""
    assert torch.exp(torch.tensor(105.0)).isinf() and torch.exp(torch.tensor(80.0)).isfinite()
    for top, fp32_helps in ((105.0, False), (80.0, True)):
        x = torch.linspace(0, top, 64).half()
        (message,) = [h.message for h in check(capture(torch.exp, x), (x,), "eager", against="oracle").hazards
                      if h.kind == "exp-overflow"]
        assert ("Compute it in fp32" in message) is fp32_helps and ("fp32 overflows there too" in message) is not fp32_helps
        # where fp32 holds it, that fix first: subtracting a maximum fits only a normalised exp (trial 74: a KL term)
        assert not fp32_helps or message.index("Compute it in fp32") < message.index("subtract the maximum")


def test_a_constant_made_in_bf16_is_read_rounded_under_eager() -> None:
    """Trial 63: a GAT's ``full((N,), -1e4, dtype=bf16).scatter_reduce(..., "amax")`` backward compares the
    constant with the maximum; under eager, which rounds everything, the comparison was flagged as made at
    two precisions. Oracle: torch's own bf16 ``full``, already rounded (-1e4 is no bf16 value)."""
    assert torch.full((1,), -1e4, dtype=torch.bfloat16).item() != -1e4
    e = torch.randn(12, generator=torch.Generator().manual_seed(0)).bfloat16().requires_grad_()
    idx = torch.tensor([0, 1, 2, 3] * 3)

    def emax(e):  # type: ignore[no-untyped-def]
        return torch.full((4,), -1e4, dtype=e.dtype).scatter_reduce(0, idx, e, "amax").float().sum()

    program = capture(emax, e, backward=True)
    assert any(n.target is torch.ops.aten.eq.Tensor for n in program.graph.nodes), "the case needs the comparison"
    assert "mixed-precision-comparison" not in {h.kind for h in lint(plan(program, "eager"))}


def test_a_fill_like_another_tensor_is_read_rounded_under_eager() -> None:
    """Trial 94: an RWKV's ``pp = full_like(k[:, 0], -1e38)`` (bf16), then ``p = maximum(pp, u + k)`` and
    ``exp(pp - p)``: under eager, which rounds everything, both were flagged as read at two precisions (the
    fill reads k's shape, not its values). Oracle: torch's own bf16 ``full_like``, already rounded."""
    assert torch.full_like(torch.zeros(1, dtype=torch.bfloat16), -1e38).item() != -1e38

    def step(u, k):  # type: ignore[no-untyped-def]
        pp = torch.full_like(k[:, 0], -1e38)
        p = torch.maximum(pp, u + k[:, 1])
        return (torch.exp(pp - p) + torch.exp(u + k[:, 1] - p)).float().sum()

    g = torch.Generator().manual_seed(0)
    u, k = torch.randn(8, generator=g).bfloat16().requires_grad_(), torch.randn(8, 4, generator=g).bfloat16()
    program = capture(step, u, k, backward=True)
    assert {torch.ops.aten.eq.Tensor, torch.ops.aten.exp.default} <= {n.target for n in program.graph.nodes}
    kinds = {h.kind for h in lint(plan(program, "eager"))}
    assert not kinds & {"mixed-precision-comparison", "exp-of-difference"}, kinds


def test_an_exp_that_overflows_only_into_a_denominator_is_no_hazard() -> None:
    """Inductor computes SiLU as ``x / (1 + exp(-x))``: for x below -88.7 ``exp(-x)`` is inf and the
    quotient -0, SiLU's limit, so nothing is lost and the user, who called F.silu, can do nothing
    (trial 72: a DiT's fp16 SiLU told to subtract the maximum). Oracle: torch's SiLU in fp32, finite
    and within fp16's rounding of fp64 at every element; an exp that overflows into a product is
    still flagged."""
    x = torch.linspace(-120, 10, 64).half()
    assert bool(torch.exp(-x.float()).isinf().any())  # the overflow is there
    silu = torch.nn.functional.silu(x.float())
    assert bool(silu.isfinite().all()) and torch.allclose(silu.double(), torch.nn.functional.silu(x.double()),
                                                          rtol=1e-3, atol=1e-6)
    assert "exp-overflow" not in _kinds(torch.nn.functional.silu, x, policy="inductor-cpu")
    assert "exp-overflow" not in _kinds(lambda t: t / (1 + torch.exp(-t)), x.float())
    assert "exp-overflow" in _kinds(lambda t: t * torch.exp(-t), x.float())


def test_a_tie_in_a_maximums_backward_is_not_said_to_make_nan() -> None:
    """Trial 95: a flash-attention-style running max ``m = maximum(m, amax(s))`` under inductor-cpu: the
    mixed-precision comparison in `maximum`'s backward was said to empty a tie mask and divide by a zero count,
    which only an amax/max backward does (it counts its ties). Oracle: torch's own `maximum` backward at a tie
    (the gradient split, finite) and `amax` backward (divided by the tie count)."""
    a, b = torch.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    torch.maximum(a, b).sum().backward()
    assert torch.equal(a.grad, torch.full((3,), 0.5))
    x = torch.ones(4, requires_grad=True)
    x.amax().backward()
    assert torch.equal(x.grad, torch.full((4,), 0.25))

    def running_max(q, k):  # type: ignore[no-untyped-def]
        m, total = torch.full((8, 1), float("-inf"), dtype=q.dtype), 0.0
        for start in (0, 16):  # an online softmax's running maximum over two key blocks
            s = (q @ k[start:start + 16].t()) * 0.25
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            total = total + torch.exp(m - m_new).sum() + torch.exp(s - m_new).sum()
            m = m_new
        return total.float()

    def norm_max(x):  # type: ignore[no-untyped-def]
        return torch.nn.functional.layer_norm(x, (32,)).amax(-1).float().sum()

    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(8, 16, generator=g).half().requires_grad_(), torch.randn(32, 16, generator=g).half()
    x = torch.randn(8, 32, generator=g).half().requires_grad_()
    said = {}
    for name, program in (("maximum", capture(running_max, q, k, backward=True)),
                          ("amax", capture(norm_max, x, backward=True))):
        said[name] = [h.message for h in lint(plan(program, "inductor-cpu")) if h.kind == "mixed-precision-comparison"]
    assert said["amax"] and all("zero count" in t for t in said["amax"]), said
    maximum = [t for t in said["maximum"] if "`maximum`" in t]  # (its amax's own tie mask is counted)
    assert maximum and all("zero count" not in t and "between the two operands" in t for t in maximum), said


def test_a_comparison_with_a_bound_far_beyond_its_values_is_no_tie_hazard() -> None:
    """Trial 98: T5's fp16 clamp at +-(65504 - 1000), on activations near 5, was flagged as a mixed-precision
    comparison under inductor-cpu ("values that are equal in the program can compare unequal"): no rounding
    makes them tie. With the oracle's ranges the hazard is kept where a tie is possible: an amax's backward
    (the max is one of its inputs). Oracle: the fp64 values themselves."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(16, 16).half()

    def clamped(x):  # type: ignore[no-untyped-def]
        h = lin(x) * 2 + 1
        c = torch.where(torch.isinf(h).any(), torch.finfo(h.dtype).max - 1000, torch.finfo(h.dtype).max)
        return torch.clamp(h, min=-c, max=c).float().pow(2).mean()

    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(1)).half()
    program = capture(clamped, x, backward=True)
    with torch.no_grad():
        top = float((lin(x).double() * 2 + 1).abs().max())
    assert top < 100  # the values: nowhere near the bounds
    planned = plan(program, "inductor-cpu")
    assert [h for h in lint(planned) if h.kind == "mixed-precision-comparison"]  # (static: no ranges)
    r = check(program, (x,), "inductor-cpu", against="oracle")
    assert not [h for h in r.hazards if h.kind == "mixed-precision-comparison"], r.hazards

    def norm_max(x):  # type: ignore[no-untyped-def]
        return torch.nn.functional.layer_norm(x, (16,)).amax().float()

    y = torch.randn(8, 16, generator=torch.Generator().manual_seed(2)).half().requires_grad_()
    r = check(capture(norm_max, y, backward=True), (y,), "inductor-cpu", against="oracle")
    assert [h for h in r.hazards if h.kind == "mixed-precision-comparison"], r.hazards  # the max ties its input
