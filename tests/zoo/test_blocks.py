"""Llama- and Mixtral-style blocks: deterministic, bf16, and each layer agrees with an independent
formulation (torch's own rms_norm and sdpa, and Hugging Face's gather-style expert dispatch)."""

from __future__ import annotations

import pytest
import torch

from roundoff.zoo import get_workload
from roundoff.zoo.blocks import MixtureOfExperts, RMSNorm, mixtral_block

BLOCKS = ["llama-block", "llama-block-sdpa", "mixtral-block"]


@pytest.mark.parametrize("name", BLOCKS)
def test_block_runs_forward_backward_in_bf16(name: str) -> None:
    w = get_workload(name)
    block, (x,) = w.build(), w.make_inputs()
    assert all(p.dtype == torch.bfloat16 for p in block.parameters())
    out = block(x)
    assert out.shape == x.shape and out.dtype == torch.bfloat16
    out.sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in block.parameters())


@pytest.mark.parametrize("name", BLOCKS)
def test_init_is_a_function_of_the_seed(name: str) -> None:
    w = get_workload(name)
    a, b, c = w.build(seed=0), w.build(seed=0), w.build(seed=1)
    for (k, p), q, r in zip(a.named_parameters(), b.parameters(), c.parameters()):
        assert torch.equal(p, q), k
    assert any(not torch.equal(p, r) for p, r in zip(a.parameters(), c.parameters()))


def test_rmsnorm_matches_torch_rms_norm() -> None:
    norm = RMSNorm(64)
    with torch.no_grad():
        norm.weight.copy_(torch.linspace(0.5, 1.5, 64))
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(0))
    want = torch.nn.functional.rms_norm(x, (64,), norm.weight, eps=1e-6)
    torch.testing.assert_close(norm(x), want, rtol=2e-6, atol=1e-6)


def test_written_out_attention_matches_sdpa_variant() -> None:
    """Same weights (same seed), fp32: the explicit q@k^T*scale, causal mask, softmax, @v path agrees
    with torch's scaled_dot_product_attention to fp32 rounding."""
    x = get_workload("llama-block").make_inputs(dtype=torch.float32)[0].detach()
    plain = get_workload("llama-block").build(dtype=torch.float32)
    sdpa = get_workload("llama-block-sdpa").build(dtype=torch.float32)
    torch.testing.assert_close(plain(x), sdpa(x), rtol=1e-5, atol=1e-5)


def _gather_moe(moe: MixtureOfExperts, x: torch.Tensor) -> torch.Tensor:
    """Hugging Face's Mixtral dispatch: each expert runs on its own tokens, results index_add_-ed."""
    b, s, d = x.shape
    h = x.reshape(b * s, d)
    routing = torch.softmax(moe.gate(h), dim=-1, dtype=torch.float32)
    top_w, top_i = torch.topk(routing, moe.top_k, dim=-1)
    top_w = (top_w / top_w.sum(dim=-1, keepdim=True)).to(x.dtype)
    out = torch.zeros_like(h)
    for e, expert in enumerate(moe.experts):
        token, slot = torch.where(top_i == e)
        if token.numel():
            out.index_add_(0, token, expert(h[token]) * top_w[token, slot, None])
    return out.reshape(b, s, d)


def test_dense_expert_combine_matches_gather_dispatch() -> None:
    """fp64, so that running an expert on all tokens or on a subset gives the same per-token bits up
    to matmul blocking; the dense form then equals the gather form to 1e-12."""
    block = mixtral_block(seed=3, dtype=torch.float64)
    x = torch.randn(2, 16, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        torch.testing.assert_close(block.mlp(x), _gather_moe(block.mlp, x), rtol=1e-12, atol=1e-12)
