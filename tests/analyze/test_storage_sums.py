"""Trial 49: a bf16 mixture-of-experts step whose expert weights are gathered per token (``w1[idx]``):
eager CPU's gradient, ``index_put(accumulate=True)``, adds each token's row into the bf16 result one at
a time, ~100x bf16's rounding off fp64, and check passed it (emulated as one rounding of an fp32 sum).
Oracle: the real bf16 eager step against the fp64 step, by hand."""

from __future__ import annotations

import copy

import torch

from roundoff.analyze import check


def test_a_gradient_summed_in_16_bits_by_its_kernel_fails_and_is_named_with_its_fix():
    g = torch.Generator().manual_seed(0)
    w = torch.randn(2, 16, generator=g).bfloat16()
    idx = torch.randint(0, 2, (4000,), generator=g)
    x = (torch.randn(4000, 16, generator=g) + 1).bfloat16()

    def step(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return (w[idx] * x).float().sum()  # the gradient of w[idx]: index_put(accumulate=True)

    def grad(dtype: torch.dtype) -> torch.Tensor:
        leaf = w.to(dtype).requires_grad_()
        step(leaf, x.to(dtype)).backward()
        return leaf.grad.double()

    exact, real = grad(torch.float64), grad(torch.bfloat16)
    limit = 16 * float((exact.bfloat16().double() - exact).norm())
    assert float((real - exact).norm()) > limit  # real eager is that far off

    r = check(step, (w, x), "eager", against="oracle", backward=True)
    (out,) = [o for o in r.outputs if o.name.startswith("grad")]
    assert not out.passes and r.diverges
    first = next(n for n in r.nodes if n.node_id == r.culprits[0])
    assert first.op == "index_put", r.culprits
    assert "adds each term into its bfloat16 result one at a time" in r.explanations[0], r.explanations[0]


def test_a_16_bit_layer_norms_weight_gradient_fails_and_blame_computes_it_in_fp32():
    """Eager CPU's LayerNorm backward with fp16 weights adds each of 8192 rows into the fp16 weight and
    bias gradients in turn (with fp32 weights too); check passed them (the op's outputs were judged by
    their rounding only). Oracle: real eager autograd against fp64 autograd by hand, and the fp32 run
    (what blame's fix computes), within the limit once rounded to fp16."""
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(8192, 64, generator=g) * 3 + 1).half()
    weight, bias = torch.rand(64, generator=g) + 0.5, torch.randn(64, generator=g) * 0.1

    def step(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.layer_norm(x, (64,), w, b).float().square().sum()

    def weight_grad(dtype: torch.dtype, weights: torch.dtype) -> torch.Tensor:
        w, b = weight.to(weights).clone().requires_grad_(), bias.to(weights).clone().requires_grad_()
        step(x.to(dtype), w, b).backward()
        return w.grad.double()

    exact = weight_grad(torch.float64, torch.float64)
    limit = 16 * float((exact.half().double() - exact).norm())
    assert float((weight_grad(torch.float16, torch.float16) - exact).norm()) > limit  # real eager, fp16 weights
    assert float((weight_grad(torch.float16, torch.float32) - exact).norm()) > limit  # fp32 weights: the same sums
    assert float((weight_grad(torch.float32, torch.float32).half().double() - exact).norm()) < limit  # fp32: within

    w, b = weight.half().requires_grad_(), bias.half().requires_grad_()
    r = check(step, (x, w, b), "eager", against="oracle", backward=True)
    failing = {o.name for o in r.outputs if not o.passes}
    assert "grad_w" in failing and r.diverges, failing
    first = next(n for n in r.nodes if n.node_id == r.culprits[0])
    assert first.op == "native_layer_norm_backward[1]", r.culprits
    assert "run the LayerNorm in float32" in r.explanations[0], r.explanations[0]

    from roundoff.blame import blame
    from roundoff.capture import capture

    found = blame(capture(step, x, w, b, backward=True), "eager", against="oracle", repro=False)
    assert found.status.value == "fixed" and [c.kind.value for c in found.changes] == ["upcast"], found.changes
    assert found.changes[0].op == "aten.native_layer_norm_backward.default"


def test_a_16_bit_batch_norm_of_input_features_is_named_with_its_fix():
    """Eager CPU's BatchNorm with bf16 weights normalizes with its mean and 1/std rounded to bf16: on input
    features far from 0 (mean 30, std 0.5) its output is 45x bf16's rounding off fp64. check judged such
    an op of graph inputs by its outputs' rounding only (1x). Oracles: real eager against an fp64 copy of
    the module, and the same module with fp32 weights (the sentence's fix), correctly rounded."""
    g = torch.Generator().manual_seed(0)
    bn = torch.nn.BatchNorm1d(8).bfloat16().train()
    x = (torch.randn(64, 8, generator=g) * 0.5 + 30).bfloat16()
    exact = copy.deepcopy(bn).double()(x.double()).detach()

    def off(y: torch.Tensor) -> float:
        return float((y.double() - exact).norm() / (exact.bfloat16().double() - exact).norm())

    assert off(copy.deepcopy(bn)(x)) > 16 and off(copy.deepcopy(bn).float()(x)) < 1.01

    r = check(bn, (x,), "eager", against="oracle")
    (node,) = [n for n in r.nodes if n.node_id in r.culprits]
    assert node.op == "native_batch_norm[0]" and node.own_excess > 16
    sentence = next(e for e in r.explanations if "loses accuracy itself" in e)
    assert "rounds the batch's mean and 1/std to bfloat16" in sentence and "`bn.float()`" in sentence


def test_a_16_bit_batch_norm_backward_is_given_the_batch_norm_fix():
    """Trial 98: a bf16 MobileNet's flagged ``native_batch_norm_backward[1]`` was told to "index a float32 copy,
    `w.float()[idx]`" (index_put's advice). Oracle: real eager's weight gradient against an fp64 copy of the
    module, with bf16 weights (far off) and with fp32 weights (the sentence's fix: correctly rounded or better)."""
    from types import SimpleNamespace

    from roundoff.analyze.cause_sentences import _storage_sums
    from roundoff.capture import capture
    from roundoff.capture.program import node_id
    from roundoff.plan import plan

    g = torch.Generator().manual_seed(0)
    bn = torch.nn.BatchNorm1d(8).bfloat16().train()
    x = (torch.randn(256, 8, generator=g) * 0.5 + 30).bfloat16()
    up = torch.randn(256, 8, generator=g).bfloat16().double()  # (its gradient reaches the module unrounded)

    def weight_grad(module: torch.nn.Module, inputs: torch.Tensor) -> torch.Tensor:
        module = copy.deepcopy(module)
        (module(inputs).double() * up).sum().backward()
        return module.weight.grad.double()

    exact = weight_grad(copy.deepcopy(bn).double(), x.double())
    rounding = float((exact.bfloat16().double() - exact).norm())
    assert float((weight_grad(bn, x) - exact).norm()) > 16 * rounding
    assert float((weight_grad(copy.deepcopy(bn).float(), x) - exact).norm()) <= rounding

    program = capture(lambda x: (bn(x).double() * up).sum(), x, backward=True)
    planned = plan(program, "eager")
    (backward,) = [n for n in planned.program.graph.nodes
                   if n.op == "call_function" and "getitem" in str(n.target)
                   and getattr(n.args[0], "target", None) is torch.ops.aten.native_batch_norm_backward.default
                   and n.args[1] == 1]
    sentence = _storage_sums(SimpleNamespace(node_id=node_id(backward)), planned)
    assert "its backward computes the gradients from those rounded values" in sentence, sentence
    assert "`bn.float()`" in sentence and "idx" not in sentence, sentence


def test_a_batch_norms_saved_statistics_are_not_said_to_be_in_the_backward():
    """Trial 100: eager's `native_batch_norm[2]` (the saved 1/std, which only the backward reads) was named
    "in the backward", at the forward's line. Oracle: torch's forward op returns it (its third result)."""
    g = torch.Generator().manual_seed(0)
    bn = torch.nn.BatchNorm1d(8).bfloat16().train()
    x = torch.randn(64, 8, generator=g).bfloat16().requires_grad_()
    out = torch.ops.aten.native_batch_norm.default(x, bn.weight, bn.bias, None, None, True, 0.1, 1e-5)
    assert len(out) == 3 and out[2].shape == (8,)  # the forward makes the saved statistics
    r = check(lambda x: bn(x).float().sum(), (x,), "eager", against="oracle", backward=True, nodes="all")
    stats = [n for n in r.nodes if n.op in ("native_batch_norm[1]", "native_batch_norm[2]")]
    backward = [n for n in r.nodes if n.op.startswith("native_batch_norm_backward")]
    assert stats and not any(n.backward for n in stats), stats
    assert backward and all(n.backward for n in backward)


def test_a_16_bit_layer_norm_backward_fed_wrong_gradients_is_not_named_for_them():
    """Trial 103: a bf16 Conformer's output norm computed its variance as E[x^2] - E[x]^2 (features near 12),
    so every gradient upstream came back ~1e6x fp64's; the 16-bit LayerNorm backward summing those gradients
    was named the cause at 1e7x bf16's rounding, its kernel's error on the wrong gradients set against fp64's
    small values, and the variance's `sub` was not shown. Oracle: the same program with the variance computed
    stably, where the LayerNorm backward reads fp64's gradients (its own excess there, a few units), and the
    line of the planted variance."""
    import inspect

    import torch.nn.functional as F

    from roundoff.analyze.verdict import EXCESS_LIMIT

    def program(stable: bool) -> tuple:
        torch.manual_seed(0)
        ln, lin, head = torch.nn.LayerNorm(64).bfloat16(), torch.nn.Linear(64, 64).bfloat16(), torch.nn.Linear(64, 10).bfloat16()

        def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            h = x + lin(ln(x))
            mean = h.mean(-1, keepdim=True)
            var = ((h - mean) ** 2).mean(-1, keepdim=True) if stable else (h * h).mean(-1, keepdim=True) - mean * mean
            return F.cross_entropy(head(((h - mean) / torch.sqrt(var + 1e-5)).mean(0, keepdim=True)).float(), y)

        g = torch.Generator().manual_seed(1)
        return step, ((torch.randn(24, 64, generator=g) + 12.0).bfloat16(), torch.tensor([3]))

    def layer_norm_backward(r: object) -> dict[str, float]:
        return {n.op: n.local.excess for n in r.nodes if n.op.startswith("native_layer_norm_backward")}

    clean = check(*program(stable=True), "eager", against="oracle", backward=True, nodes="all")
    step, inputs = program(stable=False)
    r = check(step, inputs, "eager", against="oracle", backward=True, nodes="all")
    assert r.diverges and not clean.diverges
    wrong = next(n for n in r.nodes if n.op.startswith("native_layer_norm_backward"))
    assert wrong.vs_oracle.norm_rel > 1e3  # its total error: the wrong gradients it sums
    own, own_clean = layer_norm_backward(r), layer_norm_backward(clean)
    assert own.keys() == own_clean.keys() and len(own) == 2
    assert all(own[k] < max(4 * own_clean[k], EXCESS_LIMIT) for k in own), (own, own_clean)
    variance_line = inspect.getsourcelines(step)[1] + 3
    first = next(n for n in r.nodes if n.node_id == r.culprits[0])
    assert first.source.endswith(f":{variance_line}"), (first.op, first.source, variance_line)
