"""Findings (`check`'s culprits and their sentences) name only nodes that cause a divergence.

Oracles: the captured graph itself (which nodes are comparisons, which come before which), the fp64
run (values beyond a format's range) and `check`'s own node reports (own excess, non-finite)."""

from __future__ import annotations

import pytest
import torch

from roundoff.analyze import check
from roundoff.analyze.verdict import EXCESS_LIMIT
from roundoff.capture import capture
from roundoff.capture.program import NODE_ID

_aten = torch.ops.aten
_DECIDING = {_aten.eq, _aten.ne, _aten.lt, _aten.le, _aten.gt, _aten.ge, _aten.where, _aten.argmax,
             _aten.argmin, _aten.max, _aten.min, _aten.sort, _aten.topk}


def _masked_softmax_no_max(s: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    mask = torch.triu(torch.full((8, 8), float("-inf"), dtype=s.dtype), diagonal=1)
    e = torch.exp(s + mask)
    return e / e.sum(-1, keepdim=True) @ v


def _softmax_no_max(x: torch.Tensor) -> torch.Tensor:
    e = torch.exp(x)
    return e / e.sum(-1, keepdim=True)


def _sentence(result, nid: str) -> str:
    return next(e for e in result.explanations if f"({nid} at" in e or f"({nid})" in e)


def test_a_non_float_culprit_is_a_comparison_before_the_node_it_decides():
    g = torch.Generator().manual_seed(0)
    s = (torch.randn(2, 8, 8, generator=g) * 30).half().requires_grad_()
    v = torch.randn(2, 8, 4, generator=g).half().requires_grad_()
    program = capture(_masked_softmax_no_max, s, v, backward=True, name="masked")
    result = check(program, (s, v), "inductor-gpu", "oracle")
    reported = {r.node_id: r for r in result.nodes}
    assert result.diverges and result.culprits
    for nid in result.culprits:
        if nid in reported:
            r = reported[nid]
            own = r.local if r.local is not None else r.vs_oracle
            assert r.own_excess > EXCESS_LIMIT or own.new_nonfinite or "is 0 where fp64 is not" in _sentence(result, nid)
        else:  # an expand/view decides nothing
            assert program.node(nid).target.overloadpacket in _DECIDING, program.node(nid).target


def test_an_operand_that_overflows_is_named_as_overflow_not_as_a_zero():
    g = torch.Generator().manual_seed(0)
    x = 87 + torch.rand(4, 8, generator=g) * 0.5
    x[:, 0] = -30
    # fp64: exp(x) is finite, but its sum exceeds fp32's range (and every exp exceeds fp16's)
    assert bool((x.double().exp().sum(-1) > torch.finfo(torch.float32).max).all())
    result = check(_softmax_no_max, (x.half(),), "inductor-gpu", "oracle")
    assert result.diverges
    finding = _sentence(result, result.nan_origin)
    assert "overflow" in finding and "is 0 where fp64" not in finding
    for e in result.explanations:  # a factor within the limit is no loss of accuracy
        if "loses accuracy itself" in e and "times the rounding" in e:
            factor = float(e.split("its error is ")[1].split(" times")[0])
            assert factor > EXCESS_LIMIT, e


def _moments_norm(x: torch.Tensor) -> torch.Tensor:
    mu = x.mean(-1, keepdim=True)
    var = (x * x).mean(-1, keepdim=True) - mu * mu  # E[x^2] - E[x]^2: cancels in bf16
    return (x - mu) / torch.sqrt(var + 1e-5)


def test_a_nan_from_finite_inputs_names_the_largest_own_error_on_its_path():
    g = torch.Generator().manual_seed(0)
    x = (40 + torch.randn(64, 32, generator=g) * 0.5).bfloat16()
    x64 = x.double()
    assert bool((x64.var(-1, unbiased=False) > 0).all())  # fp64: the variance is positive, no NaN
    program = capture(_moments_norm, x, name="moments")
    result = check(program, (x,), "eager", "oracle")
    assert result.diverges and result.nan_origin is not None
    origin = program.node(result.nan_origin)
    assert origin.target is _aten.sqrt.default
    reported = {r.node_id: r for r in result.nodes}
    subs = [r for r in result.nodes if r.op.startswith("sub") and r.own_excess > EXCESS_LIMIT]
    worst = max(subs, key=lambda r: r.own_excess)
    assert worst.own_excess == max(r.own_excess for r in reported.values() if r.node_id != result.nan_origin)
    assert result.culprits[0] == worst.node_id
    assert f"`sub` ({worst.node_id}" in _sentence(result, result.nan_origin)


def _centred(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    mu = x.mean(-1, keepdim=True)  # a 16-bit mean of values near 100: Inductor stores it in bf16
    xc = x - mu
    return ((xc * torch.rsqrt((xc * xc).mean(-1, keepdim=True) + 1e-5) * w).float() ** 2).mean()


def test_a_value_a_decomposition_made_is_named_as_the_op_the_user_wrote():
    """Trial 43: the finding read "It reads `convert_element_type` (n10.3 at model_a.py:19)": the cast
    that ends the plan's decomposition of the user's `x.mean(...)`, an op the user never wrote."""
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(16, 64, generator=g) + 100).bfloat16()
    w = (1 + 0.1 * torch.randn(64, generator=g)).bfloat16().requires_grad_()
    result = check(_centred, (x, w), "inductor-cpu", against="oracle", backward=True)
    assert result.diverges and "the value of `mean` n2," in result.explanations[0], result.explanations


def _kl_loss(x: torch.Tensor, w_mu: torch.Tensor, w_lv: torch.Tensor) -> torch.Tensor:
    mu, logvar = x @ w_mu, x @ w_lv + 6.0  # a "wide posterior": exp(6) = 403 per element
    kl = -0.5 * torch.sum(1 + logvar - mu**2 - logvar.exp())  # about 1e5: beyond fp16's 65504
    return kl + torch.sum(mu * mu)


def test_a_sum_kept_in_fp32_that_overflows_where_it_is_stored_is_the_origin():
    """Trial 50: under inductor-cpu a VAE's fp16 KL sum is kept in fp32 inside its kernel and stored in
    fp16 at the kernel boundary, where it is inf; check named the `mul` reading it ("makes inf from
    finite inputs"). Oracle: real torch.compile's loss is inf where fp64's is finite, and fp64's sum is
    beyond fp16's range."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 64, generator=g).half()
    w_mu, w_lv = ((torch.randn(64, 64, generator=g) * 0.01).half() for _ in range(2))
    exact = _kl_loss(x.double(), w_mu.double(), w_lv.double())
    assert torch.isfinite(exact) and not torch.isfinite(torch.compile(_kl_loss)(x, w_mu, w_lv))
    program = capture(_kl_loss, x, w_mu, w_lv)
    r = check(program, program.example_inputs, "inductor-cpu", against="oracle")
    total = next(n for n in r.nodes if n.op == "sum" and n.source and n.source.endswith(
        f":{_kl_loss.__code__.co_firstlineno + 2}"))
    assert r.diverges and r.nan_origin == total.node_id, r.nan_origin
    assert r.explanations[0].startswith(f"`sum` ({total.node_id}") and "overflows float16" in r.explanations[0]


def _decayed(g: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    a = torch.cumsum(g, 0)  # a running log decay (rounded differently by the two runs)
    decay = torch.exp(a[:, None] - a[None, :])  # beyond fp16's range above the diagonal, which is masked
    mask = torch.tril(torch.ones(a.shape[0], a.shape[0], dtype=torch.bool))
    return decay.masked_fill(~mask, 0.0) @ v


def test_a_wide_kept_exp_is_not_held_to_eagers_overflow_of_its_format():
    """Trial 53: a gated linear attention's fp16 ``exp(A_i - A_j)``, masked above the diagonal. Eager's
    exp is inf there, where fp64 is finite but correctly rounded to fp16 is inf too (the format's
    overflow); inductor-gpu keeps it in fp32 inside its kernel. Judged in fp16 against eager, the exp was
    called diverging (its fp32 value stored is that same inf) and headed the report as "first node beyond
    the limit". Oracle: fp64's values and torch's fp16 cast of them; the module doc of
    `roundoff.analyze.verdict` (a format's overflow is not held against the node at first)."""
    gen = torch.Generator().manual_seed(0)
    g = (-2.0 - 0.1 * torch.rand(16, generator=gen)).half()
    v = torch.randn(16, 8, generator=gen).half()
    a = torch.cumsum(g.double(), 0)
    exact = torch.exp(a[:, None] - a[None, :])
    assert bool(exact.isfinite().all()) and bool(exact.half().isinf().any())  # the format's overflow
    a16 = torch.cumsum(g, 0)
    assert bool(torch.exp(a16[:, None] - a16[None, :]).isinf().any())  # eager's fp16 exp is inf there
    r = check(_decayed, (g, v), "inductor-gpu", against="eager", nodes="all")
    exp = next(n for n in r.nodes if n.op == "exp")
    assert exp.verdict.value == "ok" and r.first_divergent is None, (exp.verdict, r.first_divergent)
    assert not r.diverges


def _decayed_by_product(a: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    causal = torch.tril(torch.ones(a.shape[0], a.shape[0], dtype=a.dtype))
    return (torch.exp(a[:, None] - a[None, :]) * causal) @ v  # eager: inf * 0 = NaN above the diagonal


def test_a_node_is_not_held_to_eagers_nan_where_fp64_and_the_policy_are_finite():
    """The same decay masked by a product: eager's fp16 ``inf * 0`` is NaN where fp64 is 0; inductor-gpu
    keeps the exp in fp32 and gets 0. Integer log decays make every other element agree exactly, so
    under `allclose` (which fails on the reference's NaN) the product was called diverging for eager's
    failure alone. Oracle: fp64's values; eager's own fp16 run; their agreement below the diagonal."""
    a = (-2.0 * torch.arange(16)).half()
    v = torch.randn(16, 8, generator=torch.Generator().manual_seed(0)).half()
    causal = torch.tril(torch.ones(16, 16))
    eager = torch.exp(a[:, None] - a[None, :]) * causal.half()
    exact = torch.exp(a.double()[:, None] - a.double()[None, :]) * causal.double()
    assert bool(eager.isnan().any()) and bool(exact.isfinite().all())
    assert torch.equal(eager[causal.bool()], exact.half()[causal.bool()])  # eager is right where it is finite
    r = check(_decayed_by_product, (a, v), "inductor-gpu", against="eager", nodes="all", rule="allclose")
    product = next(n for n in r.nodes if n.op == "mul")
    assert product.vs_reference.ref_nan and product.verdict.value == "ok", product
    assert r.first_divergent is None, r.first_divergent
    assert torch.isnan(_decayed_by_product(a, v)).any() and not r.outputs[0].nonfinite  # eager fails, the policy not
    said = next(e for e in r.explanations if "itself fails there" in e)  # (trial 54: "at 1 of them" read as elements)
    assert "this policy does not at all of those outputs" in said, said


def _softplus(x: torch.Tensor) -> torch.Tensor:
    return torch.log(1 + torch.exp(x))


def test_a_node_reading_an_overflow_another_finding_names_refers_to_where_it_began():
    """Trial 54: an fp16 hand-written softplus. The exp's overflow was named, then `log` was said to make
    inf because "its operand `add` exceeds its format's range": the add only carries the exp's infinity.
    Oracle: fp64 (the exp's argument beyond 11.09, where fp16's exp overflows; log of it finite) and the
    captured graph (which node is the exp)."""
    x = torch.linspace(0, 30, 64).half()
    assert bool(torch.exp(x.double()).isfinite().all()) and bool(torch.exp(x).isinf().any())
    program = capture(_softplus, x)
    exp_id = next(n.meta[NODE_ID] for n in program.graph.nodes if n.target is _aten.exp.default)
    r = check(program, (x,), "eager", against="oracle")
    log_line = next(line for line in r.explanations if line.startswith("`log`"))
    assert f"the overflow of `exp` ({exp_id}" in log_line and "exceed their format's range" not in log_line, log_line


def _outer_decay(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    big = torch.cumsum(g, dim=1)  # (B, T, 1), decreasing: exp(-big) >= 1
    decay = torch.exp(big) * torch.exp(-big).transpose(1, 2)
    decay = decay.masked_fill(~torch.ones(q.shape[1], q.shape[1], dtype=torch.bool).tril(), 0.0)
    return ((q @ k.transpose(1, 2)) * q.shape[-1] ** -0.5 * decay) @ v


def test_under_the_bitwise_rule_a_cause_within_the_limit_is_not_said_to_be_zero():
    """Trial 54: with --rule bitwise, a cause whose own error is within the limit was explained as "0
    where fp64 is not ... the zeros come from `neg` ... it subtracts values that agree in almost every
    bit": the zero-divisor sentence, for an exp that is at least 1 everywhere and a neg that subtracts
    nothing. Oracle: fp64's exp(-G) >= 1 (fp16 cannot round it to 0)."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 64, 32, generator=gen).half() for _ in range(3))
    g = (-0.5 * torch.rand(2, 64, 1, generator=gen) - 0.1).half()
    assert float(torch.exp(-torch.cumsum(g.double(), 1)).min()) >= 1.0
    r = check(_outer_decay, (q, k, v, g), "inductor-gpu", against="oracle", rule="bitwise")
    assert r.diverges and r.explanations
    assert not any("is 0 where fp64 is not" in e or "the zeros come from" in e for e in r.explanations), r.explanations


def _attention_no_max(x: torch.Tensor, wq: torch.Tensor, wk: torch.Tensor, wv: torch.Tensor) -> torch.Tensor:
    s = (x @ wq) @ (x @ wk).transpose(-1, -2) * (x.shape[-1] ** -0.5)
    p = torch.exp(s)  # no max subtracted
    return p / p.sum(-1, keepdim=True) @ (x @ wv)


def _attention_no_max_inputs() -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
    """fp16 inputs of `_attention_no_max`, and its exp in fp64."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 16, 32, generator=g).half()
    wq, wk = (torch.randn(32, 32, generator=g) * 0.33).half(), (torch.randn(32, 32, generator=g) * 0.33).half()
    wv = (torch.randn(32, 32, generator=g) / 32 ** 0.5).half()
    xd, qd, kd = x.double(), wq.double(), wk.double()
    return (x, wq, wk, wv), torch.exp((xd @ qd) @ (xd @ kd).transpose(-1, -2) * 32 ** -0.5)


@pytest.mark.parametrize("policy", ["inductor-cpu", "eager"])
def test_a_division_by_an_operand_its_format_overflows_does_not_lose_accuracy_itself(policy: str):
    """Trial 55: fp16 attention without the max under inductor-cpu. The exp (kept in fp32 in its kernel)
    is stored as inf, and the row sum, stored in fp16, is inf at every row where fp64's sum is beyond
    fp16's range; the division reading it makes 0 and NaN there. check named the division first, as
    losing accuracy itself (1.4e3x its format's rounding). Oracle: fp64's values
    and torch's fp16 cast of them (the exp's and the sum's overflow), and the division recomputed in
    fp64 from fp64's operands (exact where they are finite). Trial 63: under eager the first finding was the
    rounding of the exp's finite elements that the division amplifies, and the overflow only "(above)"."""
    (x, wq, wk, wv), exp = _attention_no_max_inputs()
    assert bool(exp.isfinite().all()) and bool(exp.half().isinf().any())  # the format's overflow
    assert bool(exp.sum(-1).half().isinf().sum() > exp.half().isinf().any(-1).sum())  # a row sum's too
    r = check(_attention_no_max, (x, wq, wk, wv), policy, against="oracle", nodes="all")
    by_op = {n.op: n for n in r.nodes}
    origin = next(n for n in r.nodes if n.node_id == r.nan_origin)
    assert r.diverges and origin.op in ("exp", "sum") and origin.overflow, (r.nan_origin, origin)
    assert r.explanations[0].startswith(f"`{origin.op}` ({origin.node_id}"), r.explanations
    assert "overflows float16" in r.explanations[0]
    assert by_op["div"].own_excess <= EXCESS_LIMIT, by_op["div"].own_excess
    assert not any("`div`" in e and ("loses accuracy itself" in e or "amplifies" in e) for e in r.explanations), r.explanations


def _two_softmaxes_no_max(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    e1 = torch.exp(x)
    p1 = e1 / e1.sum(-1, keepdim=True)  # inf / inf: NaN where exp(x) overflows fp16
    e2 = torch.exp(p1 + y)  # NaN there already, and fp64's value beyond fp16's range there too
    return e2 / e2.sum(-1, keepdim=True)


def test_a_sum_reading_an_overflow_hidden_by_an_earlier_nan_does_not_make_nan_itself():
    """Trial 109: an fp16 Perceiver's second softmax, without the max, after a first that made NaN. The
    second `exp`'s value is NaN where fp64's overflows fp16, so the overflow was not seen; recomputed
    from fp64's operands the row `sum` (fp32 in its kernel) reads that exp stored in fp16, inf, and was
    said to "make NaN itself", the `div` too. Oracle: torch's fp16 cast of fp64's exp is inf there
    (what the sum reads), and torch's fp32 sum of that cast's finite rows is finite."""
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(4, 8, generator=g), torch.randn(4, 8, generator=g)
    x[:2, 0] = y[:2, 0] = 12.0  # exp(12) and exp(13) beyond fp16's 65504
    x, y = x.half(), y.half()
    xd, yd = x.double(), y.double()
    e1 = xd.exp()
    e2 = (e1 / e1.sum(-1, keepdim=True) + yd).exp()
    read = e2.half()  # the second exp as its sum reads it
    assert bool(e2.isfinite().all()) and read.isinf().any(-1).tolist() == [True, True, False, False]
    assert bool(read[2:].float().sum(-1).isfinite().all())
    assert bool(_two_softmaxes_no_max(x, y)[:2].isnan().any())  # eager fp16's NaN (fp64: finite)
    r = check(_two_softmaxes_no_max, (x, y), "inductor-cpu", against="oracle", nodes="all")
    assert r.diverges and "overflows float16" in r.explanations[0], r.explanations
    assert not any(f"`{op}`" in e and "itself" in e for e in r.explanations for op in ("sum", "div")), r.explanations
    second_sum = [n for n in r.nodes if n.op == "sum"][-1]
    assert not (second_sum.local or second_sum.vs_oracle).new_nonfinite, second_sum


def test_triton_computes_the_attention_without_max_in_one_kernel_in_fp32():
    """Under inductor-gpu the exp, its row sum and the division are one Triton reduction kernel, which reads
    the exp and the sum as computed, in fp32 (`roundoff.plan.triton_kernels`): nothing overflows, as nothing
    does in fp64, and check finds no NaN (the plan of every reduction ending its kernel stored the sum in
    fp16 as inf, and made NaN). Oracle: fp64's exp and row sums, finite and within fp32's range."""
    (x, wq, wk, wv), exp = _attention_no_max_inputs()
    assert bool(exp.float().isfinite().all()) and bool(exp.sum(-1).float().isfinite().all())
    r = check(_attention_no_max, (x, wq, wk, wv), "inductor-gpu", against="oracle")
    assert r.nan_origin is None and not any(o.nonfinite for o in r.outputs), r.explanations


def _timestep_embedding(t: torch.Tensor) -> torch.Tensor:
    freqs = torch.exp(-9.210340371976184 * torch.arange(16, dtype=torch.float16) / 16)  # log(10000)
    args = t[:, None].half() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


def test_a_correctly_rounded_source_names_the_operands_that_carry_as_much_of_the_error():
    """Trial 56: a diffusion model's fp16 timestep embedding. check said "keep `mul` (t * freqs) in a
    wider format"; with only that, the sines stay far off fp64, since the fp16 ``freqs`` carry as much of
    the phase error. Oracle: fp64's sines of t times the fp16 freqs (the product exact) against fp64's,
    beyond 16x fp16's rounding of them."""
    t = torch.tensor([17, 999])
    exact = torch.exp(-9.210340371976184 * torch.arange(16, dtype=torch.float64) / 16)
    freqs16 = torch.exp(-9.210340371976184 * torch.arange(16, dtype=torch.float16) / 16).double()
    sines = torch.sin(t[:, None].double() * exact[None])
    only_product_wide = torch.sin(t[:, None].double() * freqs16[None])
    floor = (sines.half().double() - sines).norm()
    assert (only_product_wide - sines).norm() > EXCESS_LIMIT * floor  # the freqs' rounding alone fails
    r = check(_timestep_embedding, (t,), "eager", against="oracle")
    exp_id = next(n.node_id for n in r.nodes if n.op == "exp")
    said = next(e for e in r.explanations if "amplifies that error" in e)
    assert said.startswith("`mul`") and f"`exp` ({exp_id}" in said, said


def _overflowing_softmax(x: torch.Tensor) -> torch.Tensor:
    e = torch.exp(x * 12)  # fp16 overflows for x > 0.93
    p = e / e.sum(-1, keepdim=True)
    return p.float().sum(-1) + (x * 1e-7).float().sum(-1) * 1e7  # and a subnormal product beside it


def test_an_overflow_that_begins_the_nan_is_named_before_what_reads_it() -> None:
    """Trial 64: under inductor-cpu against eager (NaN too), the first finding was the `div` reading the
    overflowed `exp` ("loses accuracy itself", 8e3x), or a backward underflow, and the overflow came after.
    Oracle: fp64's exp beyond fp16's largest value, and real torch.compile NaN there."""
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(0)).half()
    assert float(torch.exp(x.double() * 12).max()) > torch.finfo(torch.float16).max
    torch._dynamo.reset()
    assert torch.compile(_overflowing_softmax)(x).isnan().any()
    result = check(_overflowing_softmax, (x,), "inductor-cpu")
    assert result.explanations[0].startswith("`exp`") and "overflows float16" in result.explanations[0], (
        result.explanations[:2])


def _vq_distances(z: torch.Tensor, codebook: torch.Tensor) -> torch.Tensor:
    d = (z * z).sum(-1, keepdim=True) - 2 * (z @ codebook.t()) + (codebook * codebook).sum(-1)
    return d.float()


def test_a_fused_fp32_op_that_amplifies_a_rounded_read_is_not_said_to_lose_accuracy_itself() -> None:
    """Trial 65: a VQ-VAE's distances under inductor-cpu: the fused fp32 `add` reads the codebook's squared
    norms (a reduction, stored in bf16) rounded, and was said to "lose accuracy itself". Oracle: the same
    sum in fp64 from the norms rounded by torch's bf16 cast is far off fp64's, and exact from exact norms."""
    g = torch.Generator().manual_seed(0)
    base = torch.randn(32, generator=g) + 2.0
    codebook = (base + 0.05 * torch.randn(16, 32, generator=g)).bfloat16()
    z = (base + 0.05 * torch.randn(64, 32, generator=g)).bfloat16()
    z64, c64 = z.double(), codebook.double()
    norms = (c64 * c64).sum(-1)
    exact = (z64 * z64).sum(-1, keepdim=True) - 2 * (z64 @ c64.t()) + norms
    from_rounded = (z64 * z64).sum(-1, keepdim=True) - 2 * (z64 @ c64.t()) + norms.bfloat16().double()
    assert float((from_rounded - exact).norm() / exact.norm()) > 16 * 2.0**-9  # the read's rounding, amplified
    result = check(_vq_distances, (z, codebook), "inductor-cpu", against="oracle")
    first = result.explanations[0]
    assert first.startswith("`add`") and "amplifies the rounding of what it reads" in first and "`sum`" in first, first
    assert "loses accuracy itself" not in first


def _naive_cross_entropy(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    z = x @ w  # fp16 logits near 200, rounded at the GEMM's store (ulp 2**-3)
    e = torch.exp(z - 192.0)  # the subtraction cancels them: its error is many times fp16's rounding
    s = e.sum(-1, keepdim=True)  # 128 terms near exp(8): beyond fp16's range
    return -torch.log(e[:, :1] / s).mean()


def test_an_overflow_fp64_makes_too_is_named_before_an_inaccuracy_upstream_of_it() -> None:
    """Trial 70: a naive fp16 cross-entropy's loss is inf because its sum of exps overflows fp16; the finding
    ranked first was an inaccurate node upstream (the rule for NaN/inf made from finite, inaccurate inputs),
    whose fix changes nothing. Oracle: fp64's sum itself is beyond fp16's largest value."""
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(32, 64, generator=g) * 0.02 + 1).half()
    w = (torch.randn(64, 128, generator=g) * 0.01 + 200 / 64).half()
    exact = torch.exp(x.double() @ w.double() - 192.0).sum(-1)
    assert float(exact.min()) > torch.finfo(torch.float16).max
    program = capture(_naive_cross_entropy, x, w)
    summed = next(n.meta["roundoff_id"] for n in program.nodes() if n.target is torch.ops.aten.sum.dim_IntList)
    r = check(program, (x, w), "inductor-cpu", against="oracle")
    assert r.nan_origin == summed and r.culprits[0] == summed, r.culprits
    assert any(n.verdict.value == "diverges" for n in r.nodes if n.node_id not in (summed,))  # the inaccuracy


def _standardised_mse(past: torch.Tensor, future: torch.Tensor) -> torch.Tensor:
    mu = past.mean(1, keepdim=True)
    var = (past * past).mean(1, keepdim=True) - mu * mu  # E[x^2] - E[x]^2 of fp16 values near 150
    sd = torch.sqrt(var.clamp_min(1e-4))
    return torch.nn.functional.mse_loss((past[:, 24:] - mu) / sd * 3, (future - mu) / sd)


def test_a_loss_that_overflows_on_inputs_an_upstream_error_made_names_that_error_first() -> None:
    """Trial 105: a PatchTST standardised its fp16 series with a one-pass variance; the values it divided by
    the wrong deviation came out ~150x fp64's, the fp16 ``mse_loss`` overflowed, and check named the loss (to
    be computed in float32) and the zeros of its target, not the variance's ``sub``. Oracle: fp64's loss of
    the same inputs is finite, and so is eager's fp16 loss of fp64's normalised values."""
    g = torch.Generator().manual_seed(1)
    level = 150 + 10 * torch.rand(4, 1, 3, generator=g, dtype=torch.float64)
    series = (level + 0.5 * torch.randn(4, 40, 3, generator=g, dtype=torch.float64)).half()
    past, future = series[:, :32].contiguous(), series[:, 32:].contiguous()
    p64, f64 = past.double(), future.double()
    mu64 = p64.mean(1, keepdim=True)
    sd64 = ((p64 - mu64) ** 2).mean(1, keepdim=True).sqrt()
    assert torch.isfinite(_standardised_mse(p64, f64))
    assert torch.isfinite(torch.nn.functional.mse_loss(((p64[:, 24:] - mu64) / sd64 * 3).half(), ((f64 - mu64) / sd64).half()))
    assert torch.isinf(_standardised_mse(past, future))  # real eager in fp16
    program = capture(_standardised_mse, past, future)
    result = check(program, (past, future), "eager", "oracle")
    first = program.node(result.culprits[0])
    assert first.target is _aten.sub.Tensor and first.args[0].target is _aten.mean.dim, result.culprits
    loss = _sentence(result, result.nan_origin)
    assert f"({result.culprits[0]}" in loss and "float32" not in loss.split("which is the one to fix")[0], loss
    assert not any("is 0 where fp64 is not" in e for e in result.explanations), result.explanations
