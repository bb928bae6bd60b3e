"""Trial 49: ConvNeXt's fp16 layer-scale gradients were all 0 where fp64's are not, and check showed
them as "1x ok" without a word (fp64 correctly rounded to fp16 is 0 too, so the rule passes them).
Oracle: the step's gradients in fp64 by autograd, rounded to fp16 by torch's own cast."""

from __future__ import annotations

import torch

from roundoff.analyze import check
from roundoff.report.from_check import run_from_check


def _step(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return ((x @ w) * 1e-4).float().mean() * 1e-3  # gradients ~1e-10: below fp16's smallest subnormal


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return torch.randn(32, 64, generator=g).half(), torch.randn(64, 64, generator=g).half()


def _fp64_grads() -> dict[str, torch.Tensor]:
    x, w = (t.double().requires_grad_() for t in _inputs())
    _step(x, w).backward()
    return {"grad_x": x.grad, "grad_w": w.grad}


def test_outputs_whose_values_fp16_cannot_hold_pass_with_a_count_and_a_finding():
    exact = _fp64_grads()
    vanishing = {k: int(((g.half() == 0) & (g != 0)).sum()) for k, g in exact.items()}
    assert all(v == exact[k].numel() for k, v in vanishing.items())  # every value is lost to fp16's range

    x, w = (t.requires_grad_() for t in _inputs())
    for against in ("oracle", "eager"):
        r = check(_step, (x, w), "eager", against=against, backward=True)
        outs = {o.name: o for o in r.outputs}
        assert not r.diverges
        assert {k: outs[k].below_range for k in exact} == vanishing, against
        assert outs["out"].below_range == 0  # the loss keeps its value
        (finding,) = [e for e in r.explanations if "keep little of their values" in e]
        assert "`grad_x` (2048 of 2048 values, 100% off fp64)" in finding and "GradScaler" in finding
        rows = {o["name"]: o for o in run_from_check(r)["outputs"]}
        assert rows["grad_w"]["below_range"] == vanishing["grad_w"] and rows["out"]["below_range"] == 0


def test_an_output_partly_in_range_is_not_counted():
    def step(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return ((x @ w) * 1e-1).float().mean()  # gradients ~1e-3 .. 1e-5: in fp16's range

    x, w = (t.requires_grad_() for t in _inputs())
    r = check(step, (x, w), "eager", against="oracle", backward=True)
    assert not r.diverges and all(o.below_range == 0 for o in r.outputs)
    assert not any("below float16's range" in e for e in r.explanations)


def test_a_product_below_the_normal_range_is_said_to_be_so_not_thousands_of_roundings_off():
    """Trial 67: an fp16 Wav2Vec2 matmul of values near 1e-8 was said to lose accuracy itself at "5.27e+03
    times the rounding of float16", where fp64 correctly rounded to fp16 is as far off (subnormals). Oracle:
    fp64's product correctly rounded to fp16, its normwise error by hand."""
    g = torch.Generator().manual_seed(0)
    a, b = ((torch.randn(*shape, generator=g) * 3e-4).half() for shape in ((16, 32), (32, 16)))
    exact = a.double() @ b.double()
    loss = float((exact.half().double() - exact).norm() / exact.norm())
    assert loss > 16 * 2.0**-11  # far beyond fp16's precision: the range, not the op

    r = check(lambda a, b: a @ b, (a, b), "eager", against="oracle", nodes="all")
    sentence = next(e for e in r.explanations if e.startswith("`mm`"))
    assert "below float16's normal range" in sentence and f"off by {loss * 100:.2g}% (normwise)" in sentence, sentence
    assert "times the rounding" not in sentence


def _softmax_entropy(x: torch.Tensor) -> torch.Tensor:
    e = torch.exp(x - x.max(-1, keepdim=True).values)
    p = e / e.sum(-1, keepdim=True)
    return -(p * torch.log(p)).sum(-1).mean()


def test_zeros_a_division_makes_are_said_to_be_an_underflow_not_a_cancellation():
    """Trial 68: an fp16 softmax entropy's `log(p)` is -inf where `p = e / sum(e)` underflows, and check
    said the zeros came from the division because "it subtracts values that agree in almost every bit" (a
    division subtracts nothing). Oracle: fp64's p, below fp16's smallest subnormal at many elements."""
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(16, 64, generator=g) * 8).half()
    p = torch.softmax(x.double(), -1)
    assert int((p < 2.0**-25).sum()) > 100  # rounds to 0 in fp16

    r = check(_softmax_entropy, (x.requires_grad_(),), "inductor-cpu", against="oracle", backward=True)
    sentence = next(e for e in r.explanations if e.startswith("`div`"))
    assert "subtracts nothing" in sentence and "below float16's range" in sentence, sentence
    assert "agree in almost every bit" not in sentence and "an epsilon absorbed upstream" not in sentence


def test_a_backward_node_is_named_as_the_backwards() -> None:
    """Trial 78: an underflowing backward ``add`` was named "at vit.py:25" (the forward's ``max`` it
    differentiates) with no word that it is the backward's. Oracle: the nodes of the same program captured
    without its backward are the forward's; every other node is the backward's."""
    from roundoff.capture import capture

    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(16, 16).half())
    x = torch.randn(8, 16).half()

    def f(x: torch.Tensor) -> torch.Tensor:
        return (torch.tanh(x @ w) * 1e-3).float().sum() * 1e-3  # gradients below fp16's normal range

    forward = {n.meta["roundoff_id"] for n in capture(f, x).graph.nodes}
    result = check(capture(f, x, backward=True), (x,), "eager", against="oracle", nodes="all")
    assert {r.node_id for r in result.nodes if not r.backward} <= forward
    assert all(r.node_id not in forward or r.op == "sum" for r in result.nodes if r.backward)  # (+ the seed's sum)
    named = [e for e in result.explanations if "below float16's normal range" in e]
    assert named and all(", in the backward)" in e for e in named), named
