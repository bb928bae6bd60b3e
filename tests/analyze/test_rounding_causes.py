"""A 16-bit value whose rounding alone takes a training step's gradients beyond the limit, though no
op amplifies it 16x (trial 48: a diffusion UNet's GroupNorm with its mean stored in fp16, 50x off in
the gradients, passed as ill-conditioned with nothing named): named first, as a finding. Oracle: the fp64 step with only that mean rounded to fp16
by hand, and the real fp16 eager step, both against the fp64 step."""

from __future__ import annotations

import copy
import math

import torch

from roundoff.analyze import check


class GroupNorm(torch.nn.Module):
    """GroupNorm as research code writes it: two-pass variance, the mean kept in the input's format;
    `held`: the mean rounded to fp16 and back (the fp64 replay of the test's oracle)."""

    def __init__(self, groups: int, channels: int) -> None:
        super().__init__()
        self.groups, self.held = groups, False
        self.weight = torch.nn.Parameter(torch.ones(channels))
        self.bias = torch.nn.Parameter(torch.zeros(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        x = x.reshape(b, self.groups, -1)
        mean = x.mean(-1, keepdim=True)
        if self.held:
            mean = mean.half().to(x.dtype)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        x = ((x - mean) / torch.sqrt(var + 1e-5)).reshape(b, c, h, w)
        return x * self.weight[None, :, None, None] + self.bias[None, :, None, None]


class Attention(torch.nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.norm = GroupNorm(8, c)
        self.qkv = torch.nn.Conv2d(c, 3 * c, 1)
        self.proj = torch.nn.Conv2d(c, c, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(b, 3, c, h * w).unbind(1)
        scores = torch.einsum("bci,bcj->bij", q, k) / math.sqrt(c)
        p = (scores - scores.max(dim=-1, keepdim=True).values).exp()
        p = p / p.sum(dim=-1, keepdim=True)
        return x + self.proj(torch.einsum("bij,bcj->bci", p, v).reshape(b, c, h, w))


def test_a_rounding_no_op_amplifies_16x_that_moves_the_gradients_is_named_first():
    torch.manual_seed(0)
    model = Attention(32)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 32, 8, 8, generator=g) * 0.5 + 6.0  # un-normalised features: mean 6, std 0.5
    noise = torch.randn(2, 32, 8, 8, generator=g)

    def grads(m: torch.nn.Module, dtype: torch.dtype, held: bool = False) -> dict[str, torch.Tensor]:
        m = copy.deepcopy(m).to(dtype)
        m.norm.held = held
        (m(x.to(dtype)).float() - noise.float()).pow(2).mean().backward()
        return {k: p.grad.double() for k, p in m.named_parameters()}

    exact, held, real = grads(model, torch.float64), grads(model, torch.float64, held=True), grads(model, torch.float16)

    def times(got: dict[str, torch.Tensor], k: str) -> float:
        return float((got[k] - exact[k]).norm() / (exact[k].half().double() - exact[k]).norm())

    moved = {k for k in exact if times(held, k) > 16}
    assert moved == {"norm.weight", "qkv.weight", "proj.weight"}, {k: times(held, k) for k in exact}
    assert all(times(real, k) > 16 for k in moved)  # fp16 eager is that far off too
    fp16 = copy.deepcopy(model).half()

    def step(x, noise):
        return (fp16(x).float() - noise.float()).pow(2).mean()

    r = check(step, (x.half(), noise.half()), "eager", against="oracle", backward=True)
    over = {o.name.removeprefix("grad_fp16.") for o in r.outputs if o.rmse_result > 16 * o.rmse_reference}
    assert over == moved and not r.diverges  # (no node flagged: a finding, the verdict kept)
    (cause,) = r.rounding_causes
    line = GroupNorm.forward.__code__.co_firstlineno + 3
    assert r.culprits[0] == cause and r.node(cause).op == "mean" and r.node(cause).source.endswith(f":{line}")
    assert "rounded to float16, and fp64 run again with only that rounding moves outputs" in r.explanations[0]
