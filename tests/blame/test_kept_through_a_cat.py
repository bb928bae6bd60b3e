"""A value kept in fp32 through a ``cat`` and the ``chunk`` after it (trial 86: a RealNVP flow's coupling
layers, bf16, gradients 776x fp64's rounding; blame offered no change for the ``cat`` that rounds each layer's
kept ``y2`` beside its bf16 ``x1`` and said "no fix", while the step in fp32 is 0.02x). Oracle: the fp64 step
by hand, and plain torch.compile of the same step (over the limit)."""

from __future__ import annotations

import math

import torch

import roundoff
from roundoff.analyze import check
from roundoff.blame import blame
from roundoff.capture import capture

D, H, LAYERS = 32, 64, 4
_G = torch.Generator().manual_seed(0)
PARAMS = {
    f"{name}_{layer}": (torch.randn(*shape, generator=_G) * scale).to(torch.bfloat16).requires_grad_()
    for layer in range(LAYERS)
    for name, shape, scale in (("w1", (D // 2, H), 1 / math.sqrt(D // 2)), ("ws", (H, D // 2), 1 / math.sqrt(H)),
                               ("wt", (H, D // 2), 1 / math.sqrt(H)))
}


def _nll_with(x: torch.Tensor, params: dict[str, torch.Tensor]) -> torch.Tensor:
    """Affine coupling layers, research style: ``y2 = x2 * exp(s) + t``, the halves swapped every layer."""
    z, logdet = x, 0
    for layer in range(LAYERS):
        x1, x2 = z.chunk(2, dim=1)
        if layer % 2:
            x1, x2 = x2, x1
        h = torch.relu(x1 @ params[f"w1_{layer}"])
        s = torch.tanh(h @ params[f"ws_{layer}"]) * 3.0
        y2 = x2 * torch.exp(s) + h @ params[f"wt_{layer}"]
        logdet = logdet + s.sum(dim=1)
        z = torch.cat([x1, y2], 1) if layer % 2 == 0 else torch.cat([y2, x1], 1)
    return -(-0.5 * (z**2).sum(dim=1) + logdet).mean()


def nll(x: torch.Tensor) -> torch.Tensor:
    return _nll_with(x, PARAMS)


def _gradients(fn, x: torch.Tensor) -> dict[str, torch.Tensor]:
    for p in PARAMS.values():
        p.grad = None
    fn(x).backward()
    return {k: p.grad.double() for k, p in PARAMS.items()}


def test_blame_keeps_a_value_through_the_cat_that_rounds_it_and_the_compiled_fix_holds() -> None:
    x = torch.randn(64, D, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)
    p64 = {k: p.detach().double().requires_grad_() for k, p in PARAMS.items()}
    _nll_with(x.double(), p64).backward()
    exact = {k: p.grad for k, p in p64.items()}

    def rmse(got: dict[str, torch.Tensor]) -> dict[str, float]:
        return {k: float((got[k] - exact[k]).pow(2).mean().sqrt()) for k in got}

    def worst(got: dict[str, torch.Tensor]) -> float:  # error over fp64 correctly rounded to bf16's
        return max(e / float((exact[k].bfloat16().double() - exact[k]).pow(2).mean().sqrt())
                   for k, e in rmse(got).items())

    plain = worst(_gradients(torch.compile(nll), x))
    assert plain > 100  # precondition: the compiled step is far off
    torch._dynamo.reset()
    program = capture(nll, x, backward=True)
    found = blame(program, "eager", against="oracle", trim=False, placeable=True, repro=False)
    assert found.status.value == "fixed", found.notes
    assert any(c.op == "aten.cat.default" for c in found.changes), [c.op for c in found.changes]
    real = _gradients(roundoff.compile(nll, policy=found.fixed_policy), x)
    assert worst(real) < plain / 8
    emulated = {o.name.removeprefix("grad_PARAMS."): o.rmse_result
                for o in check(program, (x,), found.fixed_policy, against="oracle", nodes="all").outputs[1:]}
    assert all(0.5 < e / emulated[k] < 2 for k, e in rmse(real).items()), (rmse(real), emulated)  # as predicted
