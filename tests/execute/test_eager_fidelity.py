"""Under the "eager" policy the emulator reproduces real eager PyTorch bit for bit on pointwise graphs."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings

from roundoff.capture import capture
from roundoff.execute import run_oracle, run_plan
from roundoff.plan import plan
from roundoff.zoo import get_workload
from tests.execute.graphs import build, inputs, n_differ, recipes, same_bits

POINTWISE_ZOO = ["fma-cancel", "fma-cancel-vector", "bf16-chain"]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("name", POINTWISE_ZOO)
def test_zoo_pointwise_equals_eager(name: str, dtype: torch.dtype) -> None:
    w = get_workload(name)
    fn, xs = w.build(dtype=dtype), tuple(x.detach() for x in w.make_inputs(dtype=dtype))
    real = fn(*xs)
    (emu,) = run_plan(plan(capture(fn, *xs), "eager"), xs)
    assert same_bits(emu, real), (
        f"{n_differ(emu, real)} of {real.numel()} elements differ; repro: "
        f"run_plan(plan(capture(get_workload({name!r}).build(dtype={dtype})), 'eager'), inputs)"
    )


@settings(max_examples=60, deadline=None, derandomize=True)
@given(recipe=recipes())
def test_random_pointwise_bf16_equals_eager(recipe: list) -> None:
    _check_random(recipe, torch.bfloat16)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(recipe=recipes())
def test_random_pointwise_fp16_equals_eager(recipe: list) -> None:
    _check_random(recipe, torch.float16)


def _check_random(recipe: list, dtype: torch.dtype) -> None:
    fn, xs = build(recipe), inputs(dtype)
    real = fn(*xs)
    (emu,) = run_plan(plan(capture(fn, *xs), "eager"), xs)
    assert same_bits(emu, real), (
        f"{n_differ(emu, real)} of {real.numel()} differ; repro: build({recipe!r}) on inputs({dtype}) under 'eager'"
    )


@settings(max_examples=20, deadline=None, derandomize=True)
@given(recipe=recipes())
def test_oracle_equals_fp64_eager(recipe: list) -> None:
    """The oracle of a cast-free graph is the graph run on fp64 inputs (an independent fp64 run)."""
    fn, xs = build(recipe), inputs(torch.bfloat16)
    real = fn(*(x.double() for x in xs))
    (oracle,) = run_oracle(capture(fn, *xs), xs)
    assert oracle.dtype == torch.float64
    assert same_bits(oracle, real), f"repro: run_oracle(capture(build({recipe!r}), ...))"


# Eager CPU kernels for add/sub/rsub cast a Python-scalar operand to the tensor's dtype *before* the
# fp32 opmath computation (the scalar is rounded to bf16/fp16); mul and div read it unrounded
# (`original_scalar_value`). The eager preset records that per op (`OpOverride.scalars`), so the
# plan gives add/sub a `scalar_format` and leaves mul's scalar unrounded.
_SCALAR_RECIPE = [("add", 0, 0, 0.1), ("sub", 3, 0, 0.180336877703666687), ("mul", 4, 0, 0.1)]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_add_sub_scalar_preset_matches_eager(dtype: torch.dtype) -> None:
    fn, xs = build(_SCALAR_RECIPE), inputs(dtype)
    (emu,) = run_plan(plan(capture(fn, *xs), "eager"), xs)
    real = fn(*xs)
    assert same_bits(emu, real), f"{n_differ(emu, real)} differ; repro: build({_SCALAR_RECIPE!r}), {dtype}, 'eager'"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_add_sub_scalar_eager_cuda_preset_differs_on_cpu(dtype: torch.dtype) -> None:
    """eager-cuda keeps add/sub scalars unrounded, which CPU eager does not: the model must see it."""
    fn, xs = build(_SCALAR_RECIPE), inputs(dtype)
    (emu,) = run_plan(plan(capture(fn, *xs), "eager-cuda"), xs)
    real = fn(*xs)
    assert n_differ(emu, real) > 0, f"repro: build({_SCALAR_RECIPE!r}), {dtype}, 'eager-cuda' equals CPU eager"


@settings(max_examples=60, deadline=None, derandomize=True)
@given(recipe=recipes(scalar_ops=("add", "sub", "mul", "div")))
def test_random_scalar_pointwise_bf16_equals_eager(recipe: list) -> None:
    _check_random(recipe, torch.bfloat16)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(recipe=recipes(scalar_ops=("add", "sub", "mul", "div")))
def test_random_scalar_pointwise_fp16_equals_eager(recipe: list) -> None:
    _check_random(recipe, torch.float16)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_add_sub_scalar_rounded_first_matches_eager(dtype: torch.dtype) -> None:
    from dataclasses import replace

    from roundoff.numerics import format_of_dtype

    fn, xs = build(_SCALAR_RECIPE), inputs(dtype)
    p = plan(capture(fn, *xs), "eager")
    aten = torch.ops.aten
    decisions = dict(p.decisions)
    for n in p.program.graph.nodes:
        if n.target in (aten.add.Tensor, aten.sub.Tensor) and any(isinstance(a, float) for a in n.args):
            nid = n.meta["roundoff_id"]
            decisions[nid] = replace(decisions[nid], scalar_format=format_of_dtype(dtype).name)
    (emu,) = run_plan(replace(p, decisions=decisions), xs)
    real = fn(*xs)
    assert same_bits(emu, real), f"{n_differ(emu, real)} differ; repro: build({_SCALAR_RECIPE!r}), {dtype}"


def _matmul_chain(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, q: torch.Tensor, k: torch.Tensor) -> tuple:
    h = torch.relu(a @ b) @ c  # mm, pointwise, mm
    s = torch.bmm(q, k.transpose(1, 2)) * 0.125  # bmm on a transposed (data-movement) operand
    return h, s.softmax(-1)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_matmul_graph_equals_eager(dtype: torch.dtype) -> None:
    """mm/bmm with operands held in the storage dtype run torch's own kernel, as eager does: bit for bit."""
    g = torch.Generator().manual_seed(7)
    shapes = [(48, 200), (200, 72), (72, 40), (3, 33, 64), (3, 29, 64)]
    xs = tuple(torch.randn(*s, generator=g).to(dtype) for s in shapes)
    real = _matmul_chain(*xs)
    emu = run_plan(plan(capture(_matmul_chain, *xs), "eager"), xs)
    for e, r in zip(emu, real):
        assert same_bits(e, r), (
            f"{n_differ(e, r)} of {r.numel()} elements differ; repro: "
            f"run_plan(plan(capture(_matmul_chain, *xs), 'eager'), xs) with xs from seed 7, {dtype}"
        )


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_embedding_gradient_equals_eager(dtype: torch.dtype) -> None:
    """Eager CPU sums an embedding's gradient rows in the storage dtype: the "eager" preset runs that
    kernel (bit for bit, forward+backward of a real nn.Embedding), "eager-cuda" sums in fp32 as CUDA's
    kernel does (its result equals the fp32 kernel's, rounded once)."""
    g = torch.Generator().manual_seed(3)
    emb = torch.nn.Embedding(7, 16, padding_idx=1).to(dtype)
    ids = torch.randint(0, 7, (2, 600), generator=g)

    def loss(w: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.embedding(ids, w, padding_idx=1).square().sum()

    w = emb.weight.detach().requires_grad_()
    real_loss = loss(w, ids)
    (real_grad,) = torch.autograd.grad(real_loss, w)
    program = capture(loss, w, ids, backward=True)
    emu = run_plan(plan(program, "eager"), program.example_inputs)
    assert same_bits(emu[0], real_loss) and same_bits(emu[1], real_grad)
    dy = (2 * w.detach().float())[ids]  # the fp32 gradient rows d(sum x^2)/dx
    fp32_sum = torch.ops.aten.embedding_dense_backward(dy, ids, 7, 1, False).to(dtype)
    cuda_like = run_plan(plan(program, "eager-cuda"), program.example_inputs)[1]
    assert not same_bits(real_grad, fp32_sum) and n_differ(cuda_like, fp32_sum) == 0


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_a_gathered_weights_gradient_equals_eager(dtype: torch.dtype) -> None:
    """Trial 49: eager CPU's ``index_put(accumulate=True)`` (the gradient of ``w[idx]``, an MoE's expert
    weights) adds into the 16-bit destination one element at a time, 14% off fp64 over 4096 tokens,
    where roundoff summed in fp32 and rounded once (0.16%). Oracle: real eager autograd, bit for bit;
    ``index_add`` and ``scatter_add`` in the same program sum in fp32 and round once, as emulated."""
    g = torch.Generator().manual_seed(4)
    w = torch.randn(3, 8, generator=g).to(dtype).requires_grad_()
    idx = torch.randint(0, 3, (700,), generator=g)
    rows = (torch.randn(700, 8, generator=g) + 1).to(dtype)
    src = (torch.randn(700, 8, generator=g) + 1).to(dtype)

    def step(w: torch.Tensor, idx: torch.Tensor, rows: torch.Tensor, src: torch.Tensor) -> tuple[torch.Tensor, ...]:
        loss = (w[idx].float() * rows.float()).sum()
        base = torch.zeros(3, 8, dtype=w.dtype)
        return loss, base.index_add(0, idx, src), base.scatter_add(0, idx[:, None].expand_as(src), src)

    loss, added, scattered = step(w, idx, rows, src)
    (real_grad,) = torch.autograd.grad(loss, w)
    program = capture(step, w, idx, rows, src, backward=True)
    emu = run_plan(plan(program, "eager"), program.example_inputs)
    grads = [o for o, label in zip(emu, program.output_labels()) if label.startswith("grad")]
    assert len(grads) == 1 and same_bits(grads[0], real_grad)
    assert same_bits(emu[1], added) and same_bits(emu[2], scattered)
    exact = torch.zeros(3, 8, dtype=torch.float64).index_put_((idx,), rows.double(), accumulate=True)
    def rel(x: torch.Tensor) -> float:
        return float((x.double() - exact).norm() / exact.norm())

    assert rel(real_grad) > 4 * rel(exact.to(dtype))  # a rounding per addition, not one at the end


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize(("shape", "dim"), [((64,), 0), ((64, 32), 0), ((32, 64), 1), ((4, 64, 8), 1)],
                         ids=["1d", "2d-rows", "2d-columns", "3d-middle"])
def test_a_16_bit_index_add_equals_eager_whatever_its_shape(dtype: torch.dtype, shape: tuple, dim: int) -> None:
    """Trial 92: eager CPU's 16-bit ``index_add`` sums one term at a time, rounding every sum, into a 1-D result
    (a GAT's softmax denominators; and a 3-D one along its middle dimension) and in fp32, rounded once, into a
    2-D one; roundoff summed every one in fp32 and put eager's GAT gradients 50x closer to fp64 than real eager's.
    Oracle: real eager, bit for bit; and the two ways of summing by hand, to show which this shape takes."""
    g = torch.Generator().manual_seed(5)
    idx = torch.randint(0, 5, (600,), generator=g)
    src = torch.randn(*[600 if i == dim else n for i, n in enumerate(shape)], generator=g).to(dtype)

    def add(src: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        return torch.zeros(shape, dtype=src.dtype).index_add(dim, idx, src)

    real = add(src, idx)
    assert same_bits(run_plan(plan(capture(add, src, idx), "eager"), (src, idx))[0], real)
    once = torch.zeros(shape).index_add(dim, idx, src.float()).to(dtype)
    one_by_one = torch.zeros(shape, dtype=dtype)
    for i, j in enumerate(idx.tolist()):
        into = one_by_one.select(dim, j)
        into.copy_((into.float() + src.select(dim, i).float()).to(dtype))
    assert same_bits(real, one_by_one if len(shape) != 2 else once)
    assert not same_bits(once, one_by_one)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_a_16_bit_layer_norms_weight_gradient_equals_eager(dtype: torch.dtype) -> None:
    """Eager CPU's ``native_layer_norm_backward`` with 16-bit weights adds each row's term of the weight
    and bias gradients into a 16-bit buffer, a rounding per row (2.4x and 4.3x fp16's rounding off
    fp64 here), where roundoff summed in fp32 and rounded once (trial 49: emulated eager 30%
    optimistic on fp16 LayerNorm gradients). Oracle: real eager autograd, bit for bit, and the row by
    row 16-bit sum by hand (one thread: more split the rows, each its own buffer)."""
    g = torch.Generator().manual_seed(5)
    ln = torch.nn.LayerNorm(256).to(dtype)
    with torch.no_grad():
        ln.weight.copy_(torch.rand(256, generator=g) + 0.5)
        ln.bias.copy_(torch.randn(256, generator=g) * 0.1)
    x = (torch.randn(64, 256, generator=g) * 3 + 1).to(dtype).requires_grad_()

    def loss(x: torch.Tensor) -> torch.Tensor:
        return ln(x).float().square().mean()

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        real = torch.autograd.grad(loss(x), (x, ln.weight, ln.bias))
        program = capture(loss, x, backward=True)
        emu = run_plan(plan(program, "eager"), program.example_inputs)
    finally:
        torch.set_num_threads(threads)
    labels = program.output_labels()
    for name, value in zip(("grad_x", "grad_ln.weight", "grad_ln.bias"), real):
        assert same_bits(emu[labels.index(name)], value), name
    # the bias gradient by hand: each row of the output's gradient added into a 16-bit buffer in turn
    y = torch.nn.functional.layer_norm(x.detach().float(), (256,), ln.weight.float(), ln.bias.float())
    dy = (2 * y.to(dtype).float() / y.numel()).to(dtype)
    by_rows = torch.zeros(256, dtype=dtype)
    for row in dy:
        by_rows = (by_rows.float() + row.float()).to(dtype)
    assert same_bits(real[2], by_rows)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_a_16_bit_batch_norm_equals_eager(dtype: torch.dtype) -> None:
    """Eager CPU's BatchNorm in training with 16-bit weights rounds the batch's mean and 1/std to 16 bits
    and normalizes with the rounded values: a third of the outputs differ from fp32 statistics rounded
    once, which roundoff computed (trial 65: a bf16 CNN's emulated eager conv gradients 1.3-1.5x closer to
    fp64 than real eager's). Oracles: real eager autograd, bit for bit; the normalization by hand with the
    statistics rounded first; the program's running statistics, which the emulation must not update."""
    g = torch.Generator().manual_seed(6)
    bn = torch.nn.BatchNorm2d(16).to(dtype).train()
    with torch.no_grad():
        bn.weight.copy_(torch.rand(16, generator=g) + 0.5)
        bn.bias.copy_(torch.randn(16, generator=g) * 0.1)
    x = (torch.randn(4, 16, 8, 8, generator=g) * 0.7 + 0.3).to(dtype).requires_grad_()

    def loss(x: torch.Tensor) -> torch.Tensor:
        return (bn(x).float() * torch.linspace(-1, 1, 64).view(8, 8)).square().mean()

    out = loss(x)
    real = torch.autograd.grad(out, (x, bn.weight, bn.bias))
    program = capture(loss, x, backward=True)
    running = [program.example_inputs[program.input_names.index(f'bn.running_{s}')] for s in ('mean', 'var')]
    before = [t.clone() for t in running]
    emu = run_plan(plan(program, "eager"), program.example_inputs)
    labels = program.output_labels()
    assert same_bits(emu[0], out)
    for name, value in zip(("grad_x", "grad_bn.weight", "grad_bn.bias"), real):
        assert same_bits(emu[labels.index(name)], value), name
    assert all(same_bits(now, then) for now, then in zip(running, before))  # not updated again
    # by hand: the fp32 normalization with eager's own statistics, which it saved rounded to 16 bits (up to
    # an element in 1000 differs: the kernel's order of operations), against fp32 statistics rounded once
    with torch.no_grad():
        y, mean, rstd = torch.native_batch_norm(x, bn.weight, bn.bias, None, None, True, 0.0, bn.eps)
        xf, shape, w, b = x.float(), (1, -1, 1, 1), bn.weight.float().view(1, -1, 1, 1), bn.bias.float().view(1, -1, 1, 1)
        by_hand = (xf - mean.float().view(shape)) * rstd.float().view(shape) * w + b
        unrounded = torch.nn.functional.batch_norm(xf, None, None, w.flatten(), b.flatten(), True, 0.0, bn.eps)
    assert mean.dtype == rstd.dtype == dtype
    assert n_differ(by_hand.to(dtype), y) <= y.numel() // 1000 < y.numel() // 10 < n_differ(unrounded.to(dtype), y)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_a_16_bit_group_norm_and_its_gradients_equal_eager(dtype: torch.dtype) -> None:
    """Eager CPU's 16-bit GroupNorm normalizes in its own order: fp32 ``native_group_norm`` rounded once
    differed from it in 2 of 16384 fp16 elements, and through a UNet's attention in most gradient elements
    (trial 80: emulated eager 5-13% closer to fp64 than real eager). Oracle: real eager autograd, bit for bit."""
    g = torch.Generator().manual_seed(0)
    gn = torch.nn.GroupNorm(8, 32).to(dtype)
    with torch.no_grad():
        gn.weight.copy_(torch.randn(32, generator=g))
        gn.bias.copy_(torch.randn(32, generator=g))
    x = (torch.randn(2, 32, 16, 16, generator=g) * 3 + 5).to(dtype).requires_grad_()

    def loss(x: torch.Tensor) -> torch.Tensor:
        return (torch.nn.functional.silu(gn(x)).float() * torch.linspace(-1, 1, 256).view(16, 16)).square().mean()

    out = loss(x)
    real = torch.autograd.grad(out, (x, gn.weight, gn.bias))
    program = capture(loss, x, backward=True)
    emu = run_plan(plan(program, "eager"), program.example_inputs)
    labels = program.output_labels()
    assert same_bits(emu[0], out)
    for name, value in zip(("grad_x", "grad_gn.weight", "grad_gn.bias"), real):
        assert same_bits(emu[labels.index(name)], value), name


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_a_16_bit_conv_nets_training_step_equals_eager(dtype: torch.dtype) -> None:
    """A 16-bit CNN's training step (convolution, BatchNorm, overlapping max pooling, a linear head,
    cross-entropy on its 16-bit logits) under `eager`: the loss and every gradient bit for bit real eager's,
    the convolutions and their backward, the pool's backward, the log-softmax and the NLL loss run as eager's
    own kernels. One fp32 convolution backward rounded once, which roundoff computed, differs from
    oneDNN's fp16 one in half of the weight gradient (bf16's equals it). Oracle: real eager autograd."""
    g = torch.Generator().manual_seed(7)
    torch.manual_seed(7)
    cnn = torch.nn.Sequential(  # an overlapping max pool (ResNet's stem's: trial 68)
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.MaxPool2d(3, 2, 1),
        torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
        torch.nn.Linear(16, 4)).to(dtype).train()
    x = torch.randn(4, 3, 16, 16, generator=g).to(dtype)
    y = torch.randint(0, 4, (4,), generator=g)

    def loss(x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(cnn(x), y)  # on 16-bit logits: eager's own log_softmax

    params = dict(cnn.named_parameters())
    real_loss = loss(x)
    real = dict(zip(params, torch.autograd.grad(real_loss, tuple(params.values()))))
    program = capture(loss, x, backward=True)
    emu = dict(zip(program.output_labels(), run_plan(plan(program, "eager"), program.example_inputs)))
    assert same_bits(emu[program.output_labels()[0]], real_loss)
    for name, value in real.items():
        assert same_bits(emu[f"grad_cnn.{name}"], value), (name, n_differ(emu[f"grad_cnn.{name}"], value))
    # the second convolution's weight gradient by oneDNN's 16-bit kernel and by an fp32 one rounded once
    grad_out, inputs = torch.randn(4, 16, 8, 8, generator=g).to(dtype), torch.randn(4, 8, 8, 8, generator=g).to(dtype)
    args = (None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [False, True, False])
    weight = cnn[4].weight.detach()
    native = torch.ops.aten.convolution_backward(grad_out, inputs, weight, *args)[1]
    wide = torch.ops.aten.convolution_backward(grad_out.float(), inputs.float(), weight.float(), *args)[1]
    if dtype is torch.float16:
        assert n_differ(wide.to(dtype), native) > native.numel() // 10
    # eager's 16-bit log_softmax: an ulp or two off one rounding of the fp32 op in some 6% of elements
    logits = (torch.randn(64, 1000, generator=g) * 3).to(dtype)
    assert n_differ(torch.log_softmax(logits.float(), 1).to(dtype), torch.log_softmax(logits, 1)) > logits.numel() // 50


def _logsumexps(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return torch.logsumexp(x, -1), torch.logsumexp(x, (0, 2), keepdim=True), x.logsumexp(1)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_logsumexp_equals_eager(dtype: torch.dtype) -> None:
    """Trial 57: eager runs ``logsumexp`` as amax, sub, exp, sum, log and add, each rounded to the
    input's dtype (``logsumexp_out_impl``); the eager policy planned it as one op rounded once, 2 of 64
    fp16 rows off real eager on CLIP-style logits. Oracle: real eager, bit for bit, on rows up to 14 (an
    fp16 exp of 14 overflows without the max), rows of -inf (a mask: eager's max is set to 0 there) and
    a row of +inf."""
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(6, 16, 32, generator=g) * 4 + 8).to(dtype)
    x[1, 3] = float("-inf")
    x[2, 5, :7] = float("-inf")
    x[3, 2, 4] = float("inf")
    program = capture(_logsumexps, x)
    assert sum(n.target is torch.ops.aten.logsumexp.default for n in program.graph.nodes) == 3
    emulated = run_plan(plan(program, "eager"), (x,))
    for got, want in zip(emulated, _logsumexps(x)):
        assert same_bits(got, want), n_differ(got, want)


def test_roundoff_compile_under_eager_gives_eagers_logsumexp() -> None:
    """The same steps enforced on Inductor (`roundoff.compile(policy="eager")`, per-op rounding): bit for
    bit real eager's fp16 ``logsumexp`` (Inductor's own decomposition computes it in fp32 and rounds
    once: 2 of 64 rows off). Oracle: real eager."""
    import roundoff

    g = torch.Generator().manual_seed(0)
    a0 = torch.randn(64, 32, generator=g)
    a = torch.nn.functional.normalize(a0, dim=-1).half()
    b = torch.nn.functional.normalize(a0 + 0.3 * torch.randn(64, 32, generator=g), dim=-1).half()
    logits = a @ b.T / 0.07
    torch._dynamo.reset()
    got = roundoff.compile(lambda t: torch.logsumexp(t, -1), policy="eager")(logits)
    assert same_bits(got, torch.logsumexp(logits, -1)), n_differ(got, torch.logsumexp(logits, -1))


@pytest.mark.parametrize("dtype, exponent", [
    *((torch.bfloat16, e) for e in (3, -2, 2, 0.5, -1, 4)), *((torch.float16, e) for e in (3, -2, 2, -1, 4))])
def test_pow_by_a_scalar_equals_eager_on_every_16_bit_value(dtype: torch.dtype, exponent: float) -> None:
    """Trial 70: CPU ATen computes bf16 ``x ** 3`` and ``x ** -2`` in BFloat16 arithmetic, ``(x * x) * x`` and
    ``1 / (x * x)`` with the square rounded (3569 and 4206 of 16384 elements off one rounding); fp16 and other
    exponents round once. ``pow(y, 3)`` is rsqrt's derivative: a hand-written RMSNorm's backward. Oracle: real
    eager on every bit pattern of the format, NaN payloads aside. Not modelled: fp16 ``x ** 0.5``, which ATen's
    Half kernel computes with ``std::pow`` (17 of the 65536 values differ from the emulation's ``sqrt``, ``-0.0``
    among them)."""
    x = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)

    def power(x: torch.Tensor) -> torch.Tensor:
        return torch.pow(x, exponent)

    (emu,) = run_plan(plan(capture(power, x), "eager"), (x,))
    assert same_bits(emu, power(x)), f"{n_differ(emu, power(x))} of 65536 differ"


def _rms_norm_loss(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """A hand-written RMSNorm in bf16 throughout (its rsqrt too), then a float loss."""
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (y * w).float().pow(2).sum()


def test_a_bf16_rms_norms_backward_equals_eager() -> None:
    """Trial 70: the gradient of a hand-written bf16 RMSNorm reads rsqrt's derivative ``pow(r, 3)``, which
    eager computes as ``(r * r) * r`` in bf16; the emulation rounded it once (most gradient elements off).
    Oracle: real eager's gradients, bit for bit."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 256, generator=g).bfloat16().requires_grad_()
    w = torch.randn(256, generator=g).bfloat16().requires_grad_()
    _rms_norm_loss(x, w).backward()
    program = capture(_rms_norm_loss, x, w, backward=True)
    (_, grad_x, grad_w) = run_plan(plan(program, "eager"), program.example_inputs)
    assert same_bits(grad_x, x.grad) and same_bits(grad_w, w.grad)


LOSSES = {
    "mse_loss": lambda a, b, r: torch.nn.functional.mse_loss(a, b, reduction=r),
    "smooth_l1_loss": lambda a, b, r: torch.nn.functional.smooth_l1_loss(a, b, reduction=r),
    "smooth_l1_loss(beta=1000)": lambda a, b, r: torch.nn.functional.smooth_l1_loss(a, b, reduction=r, beta=1000.0),
    "huber_loss(delta=1000)": lambda a, b, r: torch.nn.functional.huber_loss(a, b, reduction=r, delta=1000.0),
}


@pytest.mark.parametrize("reduction", ["mean", "none"])
@pytest.mark.parametrize("name", list(LOSSES))
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_a_16_bit_regression_loss_and_its_gradient_equal_eager(dtype: torch.dtype, name: str, reduction: str) -> None:
    """Eager's 16-bit ``mse_loss``, ``smooth_l1_loss`` and ``huber_loss`` compute each element's loss in 16
    bits, a rounding per operation, before reducing: with fp16 differences near 100 the squares pass 65504
    and eager's mean is inf, where one rounding of the fp32 op gave a finite 1e4 (trial 72). Oracle: real
    eager autograd, bit for bit, loss and gradient."""
    g = torch.Generator().manual_seed(7)
    x = (torch.randn(64, 48, generator=g) * 100).to(dtype).requires_grad_()
    y = (torch.randn(64, 48, generator=g) * 100).to(dtype)

    def loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = LOSSES[name](x, y, reduction)
        return out.float().sum() if reduction == "none" else out.float()

    real = loss(x, y)
    (real_grad,) = torch.autograd.grad(real, x)
    program = capture(loss, x, y, backward=True)
    emu = run_plan(plan(program, "eager"), program.example_inputs)
    assert same_bits(emu[0], real.detach()), (emu[0], real)
    assert same_bits(emu[program.output_labels().index("grad_x")], real_grad)
    if dtype == torch.float16 and reduction == "mean" and "beta" not in name and name != "smooth_l1_loss":
        assert real.isinf()  # the case: an overflow inside the loss, before its mean


def test_against_eager_a_reference_finite_where_real_eager_is_inf_is_said() -> None:
    """Against eager the reference emulates eager on the policy's graph: inductor-cpu computes fp16
    ``mse_loss`` from fp32 parts, finite, where real eager's fp16 loss is inf (trial 72). The check
    says so, and the eager policy against the oracle finds the inf. Oracle: real eager."""
    import io

    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the test extra")
    from rich.console import Console

    from roundoff.analyze import check
    from roundoff.report.from_check import document_from_checks, run_from_check
    from roundoff.report.html import render_html
    from roundoff.report.json_report import SCHEMA
    from roundoff.report.terminal import check_report

    x = (torch.randn(1024, generator=torch.Generator().manual_seed(0)) * 100).half()

    def f(out: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.mse_loss(out, torch.zeros_like(out))

    assert f(x).isinf()  # real eager
    compiled = check(capture(f, x), (x,), "inductor-cpu", against="eager")
    assert compiled.outputs[0].reference_nonfinite == 0
    assert any(n.startswith("real eager gives NaN/inf in 1 element(s) of `out`") for n in compiled.notes)
    assert compiled.outputs[0].real_eager_nonfinite == int(f(x).isinf())  # the table's and --json's field
    run = run_from_check(compiled)
    assert run["outputs"][0]["real_eager_nonfinite"] == 1
    jsonschema.validate(document_from_checks("f", "eager", [run]), SCHEMA, cls=jsonschema.Draft202012Validator)
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(check_report(document_from_checks("f", "eager", [run])))
    text = console.export_text()
    assert "(real eager: 1 NaN/inf)" in text and text.index("real eager gives") < text.index("Outputs under")
    assert "(real eager: 1 NaN/inf)" in render_html(document_from_checks("f", "eager", [run]))
    eager = check(capture(f, x), (x,), "eager", against="oracle")
    assert eager.outputs[0].nonfinite == 1 and not eager.outputs[0].passes
    assert not any(n.startswith("real eager gives") for n in check(capture(f, x / 8), (x / 8,), "inductor-cpu").notes)


def _factories(dtype: torch.dtype):
    def fn(x: torch.Tensor) -> torch.Tensor:
        t = torch.linspace(2.0, 6.0, 32, dtype=dtype)  # a NeRF's sample depths (trial 88)
        a = torch.arange(0.1, 3.3, 0.1, dtype=dtype)  # (32 values)
        f = torch.full((32,), 0.1, dtype=dtype)
        g = torch.logspace(-2.0, 2.0, 32, dtype=dtype)
        return x * t + a * f + g
    return fn


@pytest.mark.parametrize("policy", ["eager", "eager-cuda"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_factories_in_a_16_bit_dtype_equal_eager(dtype: torch.dtype, policy: str) -> None:
    """A factory makes its values in its own dtype with its own kernel (torch's bf16 linspace sums a bf16
    step: 2.25 at index 2 of linspace(2, 6, 32), where the fp32 value rounded is 2.2656)."""
    fn = _factories(dtype)
    x = torch.randn(32, generator=torch.Generator().manual_seed(0)).to(dtype)
    real = fn(x)
    (emu,) = run_plan(plan(capture(fn, x), policy), (x,))
    assert same_bits(emu, real), f"{n_differ(emu, real)} of {real.numel()} differ; repro: _factories({dtype}) under {policy}"
    assert not same_bits(torch.linspace(2.0, 6.0, 32).to(dtype), torch.linspace(2.0, 6.0, 32, dtype=dtype))  # (it matters)


def _cpu_flags() -> str:
    """This host's CPU flags (Linux's /proc/cpuinfo; empty elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            return f.read()
    except OSError:
        return ""


def test_a_bf16_lstms_training_step_equals_eager_and_its_oracle_is_fp64s() -> None:
    """CPU nn.LSTM in bf16 runs oneDNN's LSTM layer (``mkldnn_rnn_layer``, forward and backward), which has no
    fp64 kernel: the oracle ran into "cannot be evaluated in float64" and the check exited 3 (trial 89's ASR
    model), and emulated from fp32 its gradients were 0.71-0.96x eager's error. Oracles: real eager autograd,
    bit for bit; the same LSTM in fp64 (torch's own fp64 implementation), to fp64's rounding."""
    from roundoff.execute import run_oracle

    torch.manual_seed(0)
    lstm = torch.nn.LSTM(8, 16, num_layers=2, bidirectional=True, batch_first=True).to(torch.bfloat16)
    x = torch.randn(3, 7, 8, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)

    def loss(x: torch.Tensor) -> torch.Tensor:
        return lstm(x)[0].float().square().mean()

    params = tuple(lstm.parameters())
    out = loss(x)
    real = torch.autograd.grad(out, params)
    program = capture(loss, x, backward=True)
    # (the case where eager runs oneDNN's layer: ATen's `mkldnn_bf16_device_check`, AVX-512 BW/VL/DQ on x86; on a
    # CPU without them, as session 44's AMD EPYC, ATen's own LSTM, which the rest checks as well)
    onednn = any("mkldnn_rnn_layer" in str(n.target) for n in program.nodes())
    flags = _cpu_flags().split()
    assert onednn or not torch.backends.mkldnn.is_available() or not all(
        f in flags for f in ("avx512bw", "avx512vl", "avx512dq"))
    emu = run_plan(plan(program, "eager"), program.example_inputs)
    labels = program.output_labels()
    assert same_bits(emu[0], out)
    grads = [labels.index(f"grad_lstm.{name}") for name, _ in lstm.named_parameters()]
    assert all(same_bits(emu[i], g) for i, g in zip(grads, real))
    wide = torch.nn.LSTM(8, 16, num_layers=2, bidirectional=True, batch_first=True).double()
    wide.load_state_dict({k: v.double() for k, v in lstm.state_dict().items()})
    exact = wide(x.double())[0].square().mean()
    exact_grads = torch.autograd.grad(exact, tuple(wide.parameters()))
    oracle = run_oracle(program, program.example_inputs)
    assert torch.allclose(oracle[0], exact.detach(), rtol=1e-12, atol=0)
    assert all(torch.allclose(oracle[i], g, rtol=1e-9, atol=1e-15) for i, g in zip(grads, exact_grads))
