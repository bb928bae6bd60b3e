"""Selections Inductor runs as ATen fallbacks (topk, and on CPU sort) read their scores from memory,
rounded (trial 64: a bf16 router's topk read its softmax unrounded in the plan, so check predicted
fp64's choices where torch.compile made eager's, and passed a training step 31% off fp64). Oracle: real
torch.compile on CPU, bit for bit."""

from __future__ import annotations

import torch

from roundoff.capture import capture
from roundoff.execute import run_plan
from roundoff.numerics import bits_differ
from roundoff.plan import plan

BF16 = torch.bfloat16


def _router(x: torch.Tensor, w: torch.Tensor):  # type: ignore[no-untyped-def]
    probs = (x @ w).softmax(-1)
    v, i = probs.topk(2, -1)
    s, j = probs.sort(-1, descending=True)
    return v / v.sum(-1, keepdim=True), i, s * 2.0, j


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    x = torch.randn(512, 32, generator=g).to(BF16)
    w = (torch.randn(32, 8, generator=g) * 0.02).to(BF16)  # near-tied scores: rounding decides the order
    return x, w


def test_topk_and_sort_read_their_scores_rounded_as_torch_compile_does() -> None:
    x, w = _inputs()
    torch._dynamo.reset()
    real = torch.compile(_router, dynamic=False, fullgraph=True)(x, w)
    emulated = run_plan(plan(capture(_router, x, w), "inductor-cpu"), (x, w))
    assert [bits_differ(e, r) for e, r in zip(emulated, real)] == [0, 0, 0, 0]
    probs64 = (x.double() @ w.double()).softmax(-1)
    assert (probs64.topk(2, -1).indices != real[1]).any()  # the choice is rounding's: fp64 chooses otherwise
