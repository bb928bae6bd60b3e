"""An fp32 op that amplifies only fp32's own rounding (trial 80: an fp32 diffusion UNet's sinusoidal time
embedding, ``cos(t * freqs)`` with timesteps up to 1000, took its gradients 78x fp32's rounding against
fp64, and `check --against oracle` said "diverges", where the same model in bf16/fp16 passed). No format
short of fp64 computes that phase better: the formula's conditioning, named as a finding, not a failure.
Oracles: real eager fp32 and fp64 runs of the same function, computed here."""

from __future__ import annotations

import math

import torch

from roundoff.analyze import check


def _embedding_mlp(t: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    freqs = torch.exp(-math.log(10000.0) * torch.arange(16, dtype=t.dtype) / 16)
    args = t[:, None] * freqs[None]
    return (torch.cat([torch.cos(args), torch.sin(args)], dim=-1) @ w).square().mean()


def _inputs(t_dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    t = torch.randint(0, 1000, (8,), generator=g).to(torch.float32)
    w = torch.randn(32, 16, generator=g).requires_grad_()
    return t, w


def test_an_fp32_cos_of_a_large_phase_passes_with_the_conditioning_named() -> None:
    t, w = _inputs()
    # oracle: real fp32 eager's weight gradient is over 16x fp64 correctly rounded to fp32
    (real,) = torch.autograd.grad(_embedding_mlp(t, w), w)
    w64 = w.detach().double().requires_grad_()
    (exact,) = torch.autograd.grad(_embedding_mlp(t.double(), w64), w64)
    rmse = float((real.double() - exact).pow(2).mean().sqrt())
    rounded = float((exact.float().double() - exact).pow(2).mean().sqrt())
    assert rmse > 16 * rounded
    result = check(_embedding_mlp, (t, w), "eager", against="oracle", backward=True)
    grad = next(o for o in result.outputs if o.name == "grad_w")
    assert grad.passes and not result.diverges, result
    assert abs(grad.rmse_result - rmse) <= 1e-3 * rmse  # emulated eager is real eager here
    assert any("conditioning in fp32" in e and "`cos`" in e for e in result.explanations), result.explanations


def test_the_same_phase_from_bf16_timesteps_still_diverges() -> None:
    """Timesteps rounded to bf16 first (917 -> 916): the `cos` amplifies bf16's rounding, beyond fp32's."""
    t, w = _inputs()
    result = check(lambda t, w: _embedding_mlp(t.bfloat16().float(), w), (t, w), "eager", against="oracle",
                   backward=True)
    assert result.diverges
