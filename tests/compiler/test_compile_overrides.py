"""Node and op overrides through roundoff.compile change exactly the intended rounding."""

from __future__ import annotations

import pytest
import torch
from compile_helpers import bf16_inputs, differing, eager, with_overrides
from compile_helpers import loop_with_a_graph_break as _loop_with_a_break

import roundoff
from roundoff.capture import capture
from roundoff.capture.program import NODE_ID
from roundoff.compiler import RoundoffPlacementError
from roundoff.policy import get_policy
from roundoff.policy.model import OpOverride

KEEP = OpOverride(round_result=False)


def chain(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    return ((a * b) + c) * d - a


def _f(t: torch.Tensor) -> torch.Tensor:
    return t.float()


def _first_mul_id(xs: list[torch.Tensor]) -> str:
    prog = capture(chain, *xs)
    muls = [n for n in prog.graph.nodes if n.op == "call_function" and "mul" in str(n.target)]
    return muls[0].meta["roundoff_id"]


def test_node_override_keeps_one_product_in_fp32() -> None:
    a, b, c, d = xs = bf16_inputs(100_000, 4)
    nid = _first_mul_id(xs)
    # oracle by hand, eager torch with explicit casts: a*b stays fp32, everything else rounds.
    m1 = _f(a) * _f(b)
    t = (m1 + _f(c)).bfloat16()
    oracle = (_f((_f(t) * _f(d)).bfloat16()) - _f(a)).bfloat16()
    f = roundoff.compile(chain, policy=with_overrides(eager(), "keep-ab", node={nid: KEEP}))
    out = f(*xs)
    repro = (
        f"repro: roundoff.compile(chain, eager + node_overrides {{{nid!r}: round_result=False}})"
    )
    assert out.dtype == torch.bfloat16
    assert differing(out, oracle) == 0.0, repro
    assert differing(out, chain(*xs)) > 0.01, "override had no effect; " + repro
    assert f.roundoff_state.placements == [f"{nid} -> mul (aten.mul.Tensor, keep_unrounded)"]


def test_op_override_keeps_every_product_in_fp32() -> None:
    a, b, c, d = xs = bf16_inputs(100_000, 4, seed=2)
    t = (_f(a) * _f(b) + _f(c)).bfloat16()
    oracle = (_f(t) * _f(d) - _f(a)).bfloat16()
    out = roundoff.compile(
        chain, policy=with_overrides(eager(), "keep-mul", op={"aten.mul": KEEP})
    )(*xs)
    assert differing(out, oracle) == 0.0, (
        "repro: eager + op_overrides {'aten.mul': round_result=False}"
    )


def test_unknown_node_id_fails_loudly() -> None:
    f = roundoff.compile(chain, policy=with_overrides(eager(), "bad", node={"n999": KEEP}))
    with pytest.raises(RoundoffPlacementError, match="n999"):
        f(*bf16_inputs(16, 4))
    # trial 99: a blame policy with 84 backward-only overrides named the first one only
    f = roundoff.compile(chain, policy=with_overrides(eager(), "bad", node={"n998": KEEP, "n999": KEEP}))
    with pytest.raises(RoundoffPlacementError, match=r"'n998' and 1 more of the policy's 2 node overrides name no"
                       r".*roundoff blame --placeable"):
        f(*bf16_inputs(16, 4))


def test_unenforceable_override_fails_loudly() -> None:
    xs = bf16_inputs(16, 4)
    pol = with_overrides(eager(), "fma", node={_first_mul_id(xs): OpOverride(contract_fma=True)})
    with pytest.raises(RoundoffPlacementError, match="contract_fma"):
        roundoff.compile(chain, policy=pol)(*xs)


def test_registered_backend_refuses_node_overrides() -> None:
    pol = with_overrides(eager(), "n", node={"n4": KEEP})
    with pytest.raises(RoundoffPlacementError, match="roundoff.compile"):
        roundoff.compiler.make_backend(pol)


def _cancel(x: torch.Tensor, y: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    return torch.exp(x * s - y * s)


def test_blame_overrides_through_compile_remove_the_divergence() -> None:
    from roundoff.blame import blame
    from roundoff.compiler import RoundoffEnforcementWarning

    x = torch.randn(4096, generator=torch.Generator().manual_seed(0)) * 1e4
    inputs = (x, x.clone(), torch.tensor(1e6))  # y == x, distinct tensors: no CSE of the products
    result = blame(capture(_cancel, *inputs), "inductor-gpu", inputs)
    fixed = result.fixed_policy  # (its TOML round trip: tests/blame; the H200 machine lacks tomli-w)
    assert [o.contract_fma for o in fixed.node_overrides.values()] == [False], result.changes
    eager_out = _cancel(*inputs)
    diverged = roundoff.compile(_cancel, policy="inductor-gpu")(*inputs)
    assert differing(diverged, eager_out) > 0.05, (
        "repro: roundoff.compile(_cancel, 'inductor-gpu') on CPU"
    )
    with pytest.warns(RoundoffEnforcementWarning, match="contraction turned off"):
        out = roundoff.compile(_cancel, policy=fixed)(*inputs)
    assert differing(out, eager_out) == 0.0, (
        "repro: blame(capture(_cancel)) policy through roundoff.compile"
    )


def test_kept_rounding_under_fusion_boundary_policy() -> None:
    from roundoff.policy import get_policy

    a, b, c, d = xs = bf16_inputs(100_000, 4, seed=3)
    fused = get_policy("inductor-cpu")
    nid = _first_mul_id(xs)
    single = (
        (_f(a) * _f(b) + _f(c)) * _f(d) - _f(a)
    ).bfloat16()  # Inductor: one rounding at the end
    oracle = (
        (_f((_f(a) * _f(b)).bfloat16()) + _f(c)) * _f(d) - _f(a)
    ).bfloat16()  # a*b rounded too
    base = roundoff.compile(chain, policy=fused)(*xs)
    out = roundoff.compile(
        chain, policy=with_overrides(fused, "round-ab", node={nid: OpOverride(round_result=True)})
    )(*xs)
    repro = f"repro: roundoff.compile(chain, inductor-cpu + {{{nid!r}: round_result=True}})"
    assert differing(base, single) == 0.0, "inductor-cpu should round once; " + repro
    assert differing(out, oracle) == 0.0, repro
    assert differing(out, base) > 0.01, "override had no effect; " + repro


def _rounded_minus_exact(x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return (x * y) - w  # bf16 product (rounded or not) minus an fp32 tensor: fp32 result


def test_kept_rounding_bit_trick_matches_torch_cast_on_every_bf16_pattern() -> None:
    from roundoff.policy import get_policy

    x = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    g = torch.Generator().manual_seed(4)
    y = torch.randint(-(2**15), 2**15, (x.numel(),), generator=g, dtype=torch.int32).to(torch.int16)
    y = y.view(torch.bfloat16)
    w = _f(x) * _f(y)  # the exact product in fp32 (ties, overflow to inf, subnormals, NaN, -0.0)
    expected = _rounded_minus_exact(x, y, w)  # eager: the product rounded by torch's own cast
    prog = capture(_rounded_minus_exact, x, y, w)
    nid = next(n.meta["roundoff_id"] for n in prog.graph.nodes if "mul" in str(n.target))
    pol = with_overrides(
        get_policy("inductor-cpu"), "round", node={nid: OpOverride(round_result=True)}
    )
    out = roundoff.compile(_rounded_minus_exact, policy=pol)(x, y, w)
    bad = ((out != expected) & ~(out.isnan() & expected.isnan())).nonzero().flatten()
    assert bad.numel() == 0, (
        f"first bad: x={x[bad[0]].item()!r} y={y[bad[0]].item()!r}; repro: this test"
    )


def test_kept_rounding_bit_trick_matches_torch_cast_on_every_fp16_pattern() -> None:
    """The fp16 kept rounding (trial 60: blame's fp16 fix was refused as bf16-only): every fp16 pattern
    times a random one, exact in fp32 (11-bit significands), rounded by the rewrite inside a fused
    kernel against torch's own cast: ties, overflow to inf at 65520, subnormals, NaN, -0.0."""
    from roundoff.policy import get_policy

    x = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(torch.float16)
    g = torch.Generator().manual_seed(5)
    y = torch.randint(-(2**15), 2**15, (x.numel(),), generator=g, dtype=torch.int32).to(torch.int16)
    y = y.view(torch.float16)
    w = _f(x) * _f(y)
    expected = _rounded_minus_exact(x, y, w)
    assert ((_f(x) * _f(y)).half().float() != _f(x) * _f(y)).sum() > 30_000  # the rounding is exercised
    prog = capture(_rounded_minus_exact, x, y, w)
    nid = next(n.meta["roundoff_id"] for n in prog.graph.nodes if "mul" in str(n.target))
    pol = with_overrides(get_policy("inductor-cpu"), "round", node={nid: OpOverride(round_result=True)})
    out = roundoff.compile(_rounded_minus_exact, policy=pol)(x, y, w)
    bad = ((out != expected) & ~(out.isnan() & expected.isnan())).nonzero().flatten()
    assert bad.numel() == 0, f"{bad.numel()} bad, first: x={x[bad[0]].item()!r} y={y[bad[0]].item()!r}; repro: this test"
    unrounded = roundoff.compile(_rounded_minus_exact, policy="inductor-cpu")(x, y, w)
    assert ((unrounded != expected) & ~expected.isnan()).sum() > 30_000  # without it, the kernel keeps fp32


def _offset(x: torch.Tensor, w: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    h = x + 64.0  # near 64 in bf16 (an ulp of 0.5); Inductor stores it for the matmul: a kernel boundary
    return (h @ w) * c


def _offset_inputs(device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(5)
    xs = (torch.randn(32, 64, generator=g).bfloat16(), (torch.randn(64, 64, generator=g) / 8).bfloat16(),
          torch.randn(64, generator=g).bfloat16())
    return tuple(x.to(device) for x in xs)  # type: ignore[return-value]


@pytest.mark.parametrize(("policy", "device"), [
    ("inductor-cpu", "cpu"), ("eager", "cpu"),
    pytest.param("inductor-gpu", "cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")),
])
def test_kept_fp32_at_a_kernel_boundary_is_stored_in_fp32(policy: str, device: str) -> None:
    """Trial 41: under fusion-boundary rounding ``round_result=False`` changed nothing where a kernel
    boundary stores the value, so no policy could say "keep this value in fp32 in your code"; and a
    matmul reading a kept value got two dtypes. Oracle: eager torch with that cast written by hand
    (the matmul in fp32, its result and the output bf16), the same under per-op rounding."""
    from roundoff.execute import run_plan
    from roundoff.plan import plan
    from roundoff.policy import get_policy

    x, w, c = xs = _offset_inputs(device)
    prog = capture(_offset, *xs)
    nid = next(n.meta["roundoff_id"] for n in prog.graph.nodes if n.target is torch.ops.aten.add.Tensor)
    kept = with_overrides(get_policy(policy), "keep-h", node={nid: KEEP})
    y = ((_f(x) + 64.0) @ _f(w)).bfloat16()
    oracle = (_f(y) * _f(c)).bfloat16()
    out = roundoff.compile(_offset, policy=kept)(*xs)
    repro = f"repro: roundoff.compile(_offset, {policy} + {{{nid!r}: round_result=False}})"
    assert differing(roundoff.compile(_offset, policy=policy)(*xs), _offset(*xs)) == 0.0, repro
    assert differing(out, oracle) == 0.0, repro
    assert differing(out, _offset(*xs)) > 0.1, "override had no effect; " + repro
    assert differing(run_plan(plan(prog, kept), xs)[0], out) == 0.0, "the emulation predicts another value; " + repro


class _OffsetNorm(torch.nn.Module):
    """Trial 42: a hand-written LayerNorm whose 16-bit mean of values near 100 Inductor stores in bf16."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.g, self.b = torch.nn.Parameter(torch.ones(d)), torch.nn.Parameter(torch.zeros(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mu = x.mean(-1, keepdim=True)
        xc = x - mu
        return xc * torch.rsqrt((xc * xc).mean(-1, keepdim=True) + 1e-5) * self.g + self.b


class _OffsetNet(torch.nn.Module):
    def __init__(self, d: int = 64) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.inp, self.norm, self.head = torch.nn.Linear(d, d), _OffsetNorm(d), torch.nn.Linear(d, d)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return ((self.head(self.norm(self.inp(x) + 100.0)) - y) ** 2).mean()


def test_blames_kept_mean_is_placed_on_a_training_step_and_fixes_the_real_gradients() -> None:
    """Trial 42: blame's fix keeps the mean's stored value (``n11.3``, the cast that ends the plan's
    decomposition of the 16-bit mean) in fp32. roundoff.compile refused that id, and the same override
    on the mean (``n11``) was placed on the partitioned forward only: the backward still read the mean
    saved in bf16 (62x where the emulation predicted a fix). It is now placed on the mean, on the joint
    graph before the partitioner, so the forward saves it in fp32. Oracle: an fp64 copy's gradients."""
    import copy

    from roundoff.blame import blame

    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(64, 64, generator=g).bfloat16(), torch.randn(64, 64, generator=g).bfloat16()
    model = _OffsetNet().bfloat16()
    ref = copy.deepcopy(model).double()
    ref(x.double(), y.double()).backward()
    exact = ref.inp.weight.grad

    def ratio(policy: object) -> float:  # the compiled gradient's error over bf16's rounding of fp64's
        model.zero_grad(set_to_none=True)
        torch._dynamo.reset()
        roundoff.compile(model, policy=policy)(x, y).backward()
        return float((model.inp.weight.grad.double() - exact).pow(2).mean().sqrt()
                     / (exact.bfloat16().double() - exact).pow(2).mean().sqrt())

    program = capture(model, x, y, backward=True)
    result = blame(program, "inductor-cpu", (x, y), against="oracle", repro=False)
    assert [c.label for c in result.changes] == ["keep_fp32@n11.3"], result.changes
    # named as the user wrote it, with the edit roundoff.compile makes (trial 42: `.float()` on the whole
    # norm instead made the real step worse)
    assert "`mean` (n11;" in result.explanations[0] and ".to(torch.bfloat16)" in result.explanations[0]
    base, fixed = ratio("inductor-cpu"), ratio(result.fixed_policy)
    assert base > 16 and fixed < 4, (base, fixed)
    # the same override written on the mean itself is the same policy to the emulation (it was a no-op)
    from roundoff.analyze import check
    from roundoff.policy import get_policy

    at_mean = with_overrides(get_policy("inductor-cpu"), "keep-mean", node={"n11": KEEP})
    assert check(program, (x, y), "inductor-cpu", against="oracle").diverges
    assert not check(program, (x, y), at_mean, against="oracle").diverges
    assert ratio(at_mean) == fixed


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_kept_mean_on_a_cuda_training_step_is_saved_in_fp32() -> None:
    """The joint-graph placement on Triton: the 16-bit mean kept in fp32 on a training step. Oracle: an
    fp64 copy's gradients, over bf16's rounding of them."""
    import copy

    from roundoff.policy import get_policy

    g = torch.Generator().manual_seed(1)
    x, y = (torch.randn(64, 64, generator=g).bfloat16().cuda() for _ in range(2))
    model = _OffsetNet().bfloat16().cuda()
    ref = copy.deepcopy(model).double()
    ref(x.double(), y.double()).backward()
    exact = ref.inp.weight.grad

    def ratio(policy: object) -> float:
        model.zero_grad(set_to_none=True)
        torch._dynamo.reset()
        roundoff.compile(model, policy=policy)(x, y).backward()
        return float((model.inp.weight.grad.double() - exact).pow(2).mean().sqrt()
                     / (exact.bfloat16().double() - exact).pow(2).mean().sqrt())

    kept = with_overrides(get_policy("inductor-gpu"), "keep-mean", node={"n11": KEEP})
    base, fixed = ratio("inductor-gpu"), ratio(kept)
    assert base > 8 and fixed < min(4, base / 3), (base, fixed)  # (H200: 11.9x -> 2.5x; CPU: 52x -> 2.9x)


def test_a_training_steps_override_names_the_node_check_backward_names() -> None:
    """Trial 44: blame (--backward) kept `sum` n218 of a hand-written fp16 log-sum-exp in fp32, and
    roundoff.compile placed the override on n218 of its forward-only capture, an integer `unsqueeze`:
    nothing changed, silently (loss inf). roundoff.compile now keys a training step's overrides on the
    capture with its backward, as check and blame number it. Oracle: the loss of an fp64 copy."""
    import copy

    transformers = pytest.importorskip("transformers")

    class _LM(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                                           num_attention_heads=4, num_key_value_heads=2, vocab_size=256)
            self.backbone, self.head = transformers.LlamaModel(cfg), torch.nn.Linear(64, 256, bias=False)
            torch.nn.init.normal_(self.head.weight, std=0.19)

        def forward(self, ids: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
            logits = self.head(self.backbone(input_ids=ids).last_hidden_state) * 2.0
            lse = torch.exp(logits).sum(-1).log()  # no max subtracted: the fp16 sum overflows
            return (lse - logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)).mean()

    model = _LM().half().train()
    ids = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(1))
    targets = torch.roll(ids, -1, 1)
    exact = float(copy.deepcopy(model).double()(ids, targets))
    program = capture(model, ids, targets, backward=True)
    (nid,) = [n.meta["roundoff_id"] for n in program.graph.nodes if n.target is torch.ops.aten.sum.dim_IntList
              and str(n.meta.get("roundoff_source", "")).endswith(f":{_LM.forward.__code__.co_firstlineno + 2}")]
    assert capture(model, ids, targets).node(nid).target is not torch.ops.aten.sum.dim_IntList  # numbered apart
    from roundoff.policy import get_policy

    torch._dynamo.reset()
    loss = roundoff.compile(model, policy=with_overrides(get_policy("inductor-cpu"), "keep", node={nid: KEEP}))(ids, targets)
    loss.backward()
    assert abs(float(loss) - exact) < 0.01 * exact, (float(loss), exact)
    assert all(bool(p.grad.isfinite().all()) for p in model.parameters())


def _info_nce(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    logits = a @ b.T / 0.07
    return -(logits.diag() - torch.log(torch.exp(logits).sum(-1))).mean()


def test_a_kept_exp_the_backward_reads_through_an_alias_is_saved_in_fp32() -> None:
    """Trial 57: blame's forward-only fix for an fp16 InfoNCE loss keeps the exp and its row sum in fp32.
    On the joint graph the backward reads the exp through an ``aten.alias`` of it, which the placement
    cast back to fp16 like any other reader: the partitioner saved that inf-holding fp16 copy, and every
    gradient of the real step was inf where the emulation (and fp64) are finite. Oracle: fp64's
    gradients, and the emulated policy's (`run_plan`) error against them."""
    from roundoff.execute import run_plan
    from roundoff.plan import plan
    from roundoff.policy import get_policy

    g = torch.Generator().manual_seed(0)
    a0 = torch.randn(64, 32, generator=g)
    a = torch.nn.functional.normalize(a0, dim=-1).half()
    b = torch.nn.functional.normalize(a0 + 0.3 * torch.randn(64, 32, generator=g), dim=-1).half()
    a64, b64 = a.double().requires_grad_(), b.double().requires_grad_()
    _info_nce(a64, b64).backward()
    program = capture(_info_nce, a.requires_grad_(), b.requires_grad_(), backward=True)
    ids = {n.target: n.meta["roundoff_id"] for n in program.graph.nodes if n.op == "call_function"}
    fixed = with_overrides(get_policy("inductor-cpu"), "keep-exp-sum", node={
        ids[torch.ops.aten.exp.default]: KEEP, ids[torch.ops.aten.sum.dim_IntList]: KEEP})
    emulated = run_plan(plan(program, fixed), program.example_inputs)[1]
    assert bool(emulated.isfinite().all())  # the plan's prediction: finite gradients
    torch._dynamo.reset()
    xa, xb = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    roundoff.compile(_info_nce, policy=fixed)(xa, xb).backward()
    assert bool(xa.grad.isfinite().all()), int((~xa.grad.isfinite()).sum())
    floor = (a64.grad.half().double() - a64.grad).norm()
    assert (xa.grad.double() - a64.grad).norm() <= 2 * max((emulated.double() - a64.grad).norm(), floor)


def _attention_with_bias(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    q = (x @ w).view(2, 16, 4, 16).transpose(1, 2)
    k = x.view(2, 16, 4, 16).transpose(1, 2)
    return torch.nn.functional.scaled_dot_product_attention(q, k, k, attn_mask=bias, scale=1.0).float().sum()


def test_a_kept_query_matmul_before_a_fused_attention_compiles_and_runs() -> None:
    """Trial 58: a policy keeping the query's ``mm`` in fp32 (part of blame's fix for an fp16 T5) made
    the compiled step fail inside Inductor's CPU flash attention ("Attention mask is the same data type
    as query"): the fp32 query reached it beside fp16 keys and mask. An op of several results reads a
    kept value as it was. Oracle: real eager's output and the emulated policy's (`run_plan`)."""
    from roundoff.execute import run_plan
    from roundoff.plan import plan
    from roundoff.policy import get_policy

    g = torch.Generator().manual_seed(0)
    w = torch.randn(64, 64, generator=g).half()
    x, bias = torch.randn(2, 16, 64, generator=g).half(), torch.randn(1, 4, 16, 16, generator=g).half()
    program = capture(_attention_with_bias, x, w.requires_grad_(), bias, backward=True)
    mm = next(n.meta["roundoff_id"] for n in program.graph.nodes if n.target is torch.ops.aten.mm.default)
    policy = with_overrides(get_policy("eager"), "keep-q", node={mm: KEEP})
    torch._dynamo.reset()
    wc = w.detach().clone().requires_grad_()
    out = roundoff.compile(_attention_with_bias, policy=policy)(x, wc, bias)
    out.backward()
    want = run_plan(plan(program, policy), program.example_inputs)
    assert torch.isfinite(out) and abs(float(out) - float(want[0])) <= 1e-3 * abs(float(want[0])), (out, want[0])
    assert bool(wc.grad.isfinite().all())


def _clamped(x: torch.Tensor, c: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    h = torch.clamp(x * 1.001, min=-c, max=c)  # T5's fp16 clamp, with tensor bounds
    return h * 7.0 + y.to(torch.bfloat16) * 3.0


def test_overrides_on_ops_inductor_decomposes_are_placed_on_their_last_step() -> None:
    """Trial 58: blame's T5 fix keeps a ``clamp`` with tensor bounds and a ``.to`` in fp32. Inductor's
    decomposition table turns the one into an fp32 clamp and a cast back and the other into a cast, so
    roundoff.compile found neither in the compiled graph and refused the fix. Each is now placed on the
    cast that ends its decomposition, made a cast to fp32. Oracle: the same arithmetic by hand in fp32."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4096, generator=g).to(torch.bfloat16) * 4
    c = torch.tensor(3.0).to(torch.bfloat16)
    y = torch.randn(4096, generator=g) * 2
    prog = capture(_clamped, x, c, y)
    ids: dict[str, str] = {}
    for n in prog.graph.nodes:  # the first node of each op
        ids.setdefault(str(n.target), n.meta["roundoff_id"])
    keep = {ids["aten.mul.Tensor"]: KEEP, ids["aten.clamp.Tensor"]: KEEP, ids["aten._to_copy.default"]: KEEP}
    f = roundoff.compile(_clamped, policy=with_overrides(eager(), "keep-clamp", node=keep))
    out = f(x, c, y)
    h = torch.clamp(_f(x) * 1.001, min=-_f(c), max=_f(c))
    oracle = ((h * 7.0).bfloat16().float() + (y * 3.0).bfloat16().float()).bfloat16()
    repro = "repro: pytest tests/compiler/test_compile_overrides.py -k decomposes"
    assert differing(out, oracle) == 0.0, repro
    assert differing(out, _clamped(x, c, y)) > 0.01, "the overrides had no effect; " + repro
    placed = {p.split(" -> ")[0]: p.split(" (")[1] for p in f.roundoff_state.placements}
    assert placed == {ids["aten.mul.Tensor"]: "aten.mul.Tensor, keep_unrounded)",
                      ids["aten.clamp.Tensor"]: "prims.convert_element_type.default, keep_unrounded)",
                      ids["aten._to_copy.default"]: "prims.convert_element_type.default, keep_unrounded)"}


def test_a_fix_made_for_another_program_is_refused() -> None:
    """Trial 60: a policy blame saved for one function, given to roundoff.compile of another, placed its
    overrides on that function's nodes of the same ids, silently (970 elements changed); the CLI refused
    it. The policy records its program's graph, and roundoff.compile now refuses another graph too."""
    import dataclasses

    from roundoff.capture.program import graph_fingerprint

    xs = bf16_inputs(1000, 4)
    nid = _first_mul_id(xs)
    fix = dataclasses.replace(with_overrides(eager(), "chain+blame", node={nid: KEEP}),
                              made_for="chain", made_for_graph=graph_fingerprint(capture(chain, *xs)))
    out = roundoff.compile(chain, policy=fix)(*xs)  # its own program: placed
    assert differing(out, chain(*xs)) > 0.0

    def other(a, b, c, d):
        return (a * d + b) * c

    with pytest.raises(RoundoffPlacementError, match=r"made for program 'chain' \(graph [0-9a-f]{12}\), not for 'other'"
                       r".*compile the function blame was run on \('chain'"):  # (trial 104: it compiled the model)
        roundoff.compile(other, policy=fix)(*xs)
    other.__name__ = "chain"  # trial 108: another function of the fix's name, not "the model it calls"
    with pytest.raises(RoundoffPlacementError, match=r"not for 'chain' \(graph [0-9a-f]{12}, captured without its "
                       r"backward\): the same name, another graph: another function of that name") as refused:
        roundoff.compile(other, policy=fix)(*xs)
    assert "model it calls" not in str(refused.value)


def test_a_forward_fix_given_a_training_call_says_how_to_run_the_forward_alone() -> None:
    """Trial 82: blame's fix for a model's forward, given to roundoff.compile of that model whose
    parameters require grad, was refused as made for another program, with only `blame --backward` as
    the way out; under torch.no_grad() the same call places it. The refusal names both."""
    import dataclasses

    from roundoff.capture.program import graph_fingerprint

    xs = bf16_inputs(1000, 4)
    nid = _first_mul_id(xs)
    fix = dataclasses.replace(with_overrides(eager(), "chain+blame", node={nid: KEEP}),
                              made_for="chain", made_for_graph=graph_fingerprint(capture(chain, *xs)))
    compiled = roundoff.compile(chain, policy=fix)
    trainable = [x.clone().requires_grad_() for x in xs]
    with pytest.raises(RoundoffPlacementError, match=r"captured with its backward.*under torch\.no_grad\(\)"):
        compiled(*trainable)
    with torch.no_grad():
        assert torch.equal(compiled(*trainable), roundoff.compile(chain, policy=fix)(*xs))


def test_a_forward_fix_placed_without_gradients_refuses_a_later_call_that_takes_them() -> None:
    """Trial 83: a forward fix placed by a first call under torch.no_grad() was silently not enforced on a
    later call with gradients enabled (torch.compile compiles that one as a training step: the NaN the fix
    removed came back, no error). Oracle: the fixed compile's own no_grad output, and the policy's
    refusal of a first call that takes gradients (the test above)."""
    import dataclasses

    from roundoff.capture.program import graph_fingerprint

    xs = bf16_inputs(1000, 4)
    nid = _first_mul_id(xs)
    fix = dataclasses.replace(with_overrides(eager(), "chain+blame", node={nid: KEEP}),
                              made_for="chain", made_for_graph=graph_fingerprint(capture(chain, *xs)))
    compiled = roundoff.compile(chain, policy=fix)
    with torch.no_grad():
        fixed = compiled(*xs)
    assert differing(fixed, chain(*xs)) > 0.0  # the fix is placed: not eager's rounding
    trainable = [x.clone().requires_grad_() for x in xs]
    with pytest.raises(RoundoffPlacementError, match=r"placed for the forward alone.*under torch\.no_grad\(\)"):
        compiled(*trainable)
    with torch.no_grad():
        assert torch.equal(compiled(*trainable), fixed)


def test_a_fix_for_a_function_torch_compile_runs_eagerly_is_refused_not_dropped() -> None:
    """Trial 84: a research MoE's expert loop held a graph break; Dynamo ran the whole function eagerly,
    and roundoff.compile with blame's fix returned eager's bits without a word. Oracle: the call's
    eager result (what it would have returned) and the compile counter (no graph compiled)."""
    from roundoff.compiler.backend import compilations

    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(3, 4, 8, generator=g).half(), torch.randn(8, 8, generator=g).half()
    program = capture(_loop_with_a_break, x, w)
    nid = next(n.meta[NODE_ID] for n in program.graph.nodes if "sum" in str(n.target))
    before = sum(compilations.values())
    plain = roundoff.compile(_loop_with_a_break, policy="eager")(x, w)
    assert sum(compilations.values()) == before and torch.equal(plain, _loop_with_a_break(x, w))  # ran eagerly
    fix = with_overrides(eager(), "loop+fix", node={nid: KEEP})
    with pytest.raises(RoundoffPlacementError, match=r"compiled no graph of loop_with_a_graph_break and ran it eagerly"):
        roundoff.compile(_loop_with_a_break, policy=fix)(x, w)


def _frequencies(t: torch.Tensor) -> torch.Tensor:
    freqs = -9.210340371976184 * torch.arange(0, 64, dtype=t.dtype) / 3  # -log(10000) * arange / 3, one line
    return t[:, None] * freqs[None]


def test_an_override_on_a_line_with_an_arange_is_placed() -> None:
    """Trial 63: blame --placeable's fix for a sinusoidal timestep embedding was refused by
    roundoff.compile ("mul occurs 1x in the capture but 2x in the compiled graph"): the compiled graph holds
    arange decomposed (``iota * step + start``). Nodes made from a factory op are not the user's op at that
    line. Oracle by hand, eager torch with explicit casts: the product kept in fp32, the quotient rounded."""
    t = torch.tensor([1.0, 917.0, 433.0]).half()
    prog = capture(_frequencies, t)
    (mul,) = [n.meta["roundoff_id"] for n in prog.graph.nodes if n.op == "call_function" and "mul" in str(n.target)
              and any("arange" in str(getattr(a, "target", "")) for a in n.args)]
    product = torch.arange(0, 64, dtype=torch.float16).float() * torch.tensor(-9.210340371976184, dtype=torch.float32)
    oracle = (t.float()[:, None] * (product / 3).half().float()[None]).half()
    f = roundoff.compile(_frequencies, policy=with_overrides(eager(), "keep-mul", node={mul: KEEP}))
    out = f(t)
    assert differing(out, oracle) == 0.0 and differing(out, _frequencies(t)) > 0, f"repro: {mul} kept"


class _TopTwoRouter(torch.nn.Module):
    """Trial 64's bf16 top-2 mixture of experts, reduced: near-tied router scores (small router weights)."""

    def __init__(self, d: int = 32, experts: int = 4, fp32_softmax: bool = False) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.fp32_softmax = fp32_softmax
        self.norm = torch.nn.LayerNorm(d)
        self.router = torch.nn.Parameter(torch.randn(experts, d, generator=g) * 0.004)
        self.w1 = torch.nn.Parameter(torch.randn(experts, d, 64, generator=g) * 0.1)
        self.w2 = torch.nn.Parameter(torch.randn(experts, 64, d, generator=g) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x)
        scores = h @ self.router.t()
        probs = scores.float().softmax(-1) if self.fp32_softmax else scores.softmax(-1)
        top_v, top_i = probs.topk(2, -1)
        top_v = (top_v / top_v.sum(-1, keepdim=True)).to(h.dtype)
        out = torch.zeros_like(h)
        for e in range(self.w1.shape[0]):
            weight = (top_v * (top_i == e)).sum(-1, keepdim=True)
            out = out + weight * (torch.nn.functional.gelu(h @ self.w1[e]) @ self.w2[e])
        return out.float().pow(2).mean()


def test_a_kept_softmax_before_a_topk_is_placed_and_fixes_the_real_gradients() -> None:
    """Trial 64: blame --placeable keeps a router's softmax (``n?.6``, the cast that ends its bf16
    decomposition) in fp32. roundoff.compile refused it (the joint graph's backward casts the saved
    softmax at the same line, counted as forward), and once placed, the topk reading the fp32 softmax
    returned fp32 values its readers were traced as bf16: gradients 4x to 50x off. Oracle: an fp64
    copy's gradients, and eager with the softmax computed in fp32 by hand."""
    import copy

    from roundoff.blame import blame

    g = torch.Generator().manual_seed(3)
    x = torch.randn(64, 32, generator=g).bfloat16()
    model = _TopTwoRouter().bfloat16()
    exact = copy.deepcopy(model).double()
    exact(x.double()).backward()

    def error(policy: object) -> float:  # the compiled w1 gradient's relative error against fp64
        model.zero_grad(set_to_none=True)
        torch._dynamo.reset()
        roundoff.compile(model, policy=policy)(x).backward()
        return float((model.w1.grad.double() - exact.w1.grad).norm() / exact.w1.grad.norm())

    result = blame(capture(model, x, backward=True), "inductor-cpu", (x,), against="oracle", repro=False,
                   placeable=True)
    assert result.fixed and any("`_softmax`" in e for e in result.explanations), result.explanations
    by_hand = _TopTwoRouter(fp32_softmax=True).bfloat16()  # the edit the fix names, in eager
    by_hand.load_state_dict(model.state_dict())
    by_hand(x).backward()
    hand = float((by_hand.w1.grad.double() - exact.w1.grad).norm() / exact.w1.grad.norm())
    base, fixed = error("inductor-cpu"), error(result.fixed_policy)
    assert base > 0.1 and fixed < 2 * hand + 1e-3, (base, fixed, hand)


def _broken(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    h = torch.tanh(x @ w)
    if h.sum() > 0:  # a graph break: the rest is a graph of its own
        h = h * 2
    return torch.exp((h @ w) * 0.5)


def _broken_by_hand(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:  # the second matmul kept in fp32
    h = torch.tanh(x @ w)
    if h.sum() > 0:
        h = h * 2
    return torch.exp((h.float() @ w.float()) * 0.5).to(x.dtype)


def test_an_override_after_a_graph_break_is_placed_in_the_graph_that_holds_it() -> None:
    """Trial 65: node overrides were placed per graph and the first graph's placement raised for the ones
    after a graph break. Keys now count on across the graphs in the order they compile, and a missing
    override is reported once a first call has compiled them all. Oracle: real torch.compile of the same
    change written in the code, bit for bit."""
    g = torch.Generator().manual_seed(4)
    x, w = torch.randn(16, 32, generator=g).bfloat16(), (torch.randn(32, 32, generator=g) / 4).bfloat16()
    program = capture(_broken, x, w)
    assert program.specializations, "the case needs a graph break"
    second = [n.meta[NODE_ID] for n in program.graph.nodes if n.target is torch.ops.aten.mm.default][-1]
    policy = with_overrides(get_policy("inductor-cpu"), "keep-second-mm", node={second: KEEP})
    torch._dynamo.reset()
    fixed = roundoff.compile(_broken, policy=policy)(x, w)
    torch._dynamo.reset()
    by_hand = torch.compile(_broken_by_hand)(x, w)
    torch._dynamo.reset()
    plain = torch.compile(_broken)(x, w)
    assert differing(fixed, plain) > 0 and torch.equal(fixed.view(torch.int16), by_hand.view(torch.int16))


def _upsampled_energy(h: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.interpolate(h, scale_factor=2, mode="nearest").float().square().mean()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_an_op_override_of_index_put_leaves_inductors_fp32_index_put_alone(dtype: torch.dtype) -> None:
    """inductor-cpu's `compute=storage` on index_put (a 16-bit destination adds in its dtype) met the fp32
    index_put Inductor decomposes a nearest upsample's backward into, and refused to compile any training
    step with one (trial 80: "a kept rounding of index_put ... is implemented for bf16 and fp16 only"). An
    fp32 value kept rounded to fp32 is itself. Oracle: real torch.compile's gradient, bit for bit (the
    policy is Inductor's own)."""
    h = torch.randn(2, 8, 4, 4, generator=torch.Generator().manual_seed(0)).to(dtype)
    grads = []
    for compiled in (torch.compile(_upsampled_energy), roundoff.compile(_upsampled_energy, policy="inductor-cpu")):
        x = h.clone().requires_grad_()
        compiled(x).backward()
        grads.append(x.grad)
        torch._dynamo.reset()
    assert differing(*grads) == 0


_G = torch.Generator().manual_seed(0)
_TEXT = torch.nn.functional.normalize(torch.randn(16, 32, generator=_G), dim=-1).half()
_TEMPERATURE = torch.tensor(0.01, dtype=torch.half, requires_grad=True)


def _contrastive_of(image: torch.Tensor, text: torch.Tensor, temperature: torch.Tensor) -> torch.Tensor:
    """Trial 85's hand-written InfoNCE: two log-sum-exps, each with its own ``torch.exp``."""
    logits = image @ text.T / temperature
    pos = logits.diagonal()
    rows = -(pos - torch.log(torch.exp(logits).sum(dim=1))).mean()
    cols = -(pos - torch.log(torch.exp(logits).sum(dim=0))).mean()
    return (rows + cols) / 2


def _contrastive(image: torch.Tensor) -> torch.Tensor:
    """`_contrastive_of` in fp16, its text embeddings and learnable temperature closed over."""
    return _contrastive_of(image, _TEXT, _TEMPERATURE)


def test_a_kept_value_the_plan_merged_a_repeat_into_keeps_the_repeat_too() -> None:
    """Trial 85: blame kept an fp16 ``exp`` of a training step in fp32; the plan merged the second, equal ``exp``
    into it (CSE), so the fix named only the first, and the real compile computed the second in fp16: the loss
    inf, the gradients NaN. Oracle: the fp64 step, and the unfixed compile (inf)."""
    x = torch.nn.functional.normalize(torch.randn(16, 32, generator=torch.Generator().manual_seed(1)), dim=-1)
    x = x.half().requires_grad_()
    prog = capture(_contrastive, x, backward=True)
    exps = [n.meta[NODE_ID] for n in prog.graph.nodes if n.target is torch.ops.aten.exp.default]
    sums = [n.meta[NODE_ID] for n in prog.graph.nodes if n.target is torch.ops.aten.sum.dim_IntList]
    from roundoff.plan import plan

    policy = with_overrides(get_policy("inductor-cpu"), "keep-first-exp", node={i: KEEP for i in [exps[0], *sums[:2]]})
    assert plan(prog, policy).cse.get(exps[1]) == exps[0]  # precondition: the repeat is merged into the kept one
    exact = _contrastive_of(x.detach().double(), _TEXT.double(), _TEMPERATURE.detach().double())

    def step(fn):
        x.grad = None
        loss = fn(x)
        loss.backward()
        return loss.detach(), x.grad

    loss, grad = step(roundoff.compile(_contrastive, policy=policy))
    assert torch.isfinite(loss) and abs(float(loss) - float(exact)) <= 4 * float(exact) * 2 ** -11, (loss, exact)
    assert torch.isfinite(grad).all()
    assert not torch.isfinite(step(torch.compile(_contrastive))[0])  # the unfixed compile: the fp16 exp overflows
