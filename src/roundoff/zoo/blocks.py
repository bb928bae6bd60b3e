"""Small Llama-style and Mixtral-style transformer blocks, written out op by op.

The layers follow Hugging Face's eager Llama/Mixtral code, casts included: RMSNorm computes in fp32
and rounds back before the weight multiply; attention scores are softmaxed in fp32 and rounded back;
rotary embedding tables are computed in fp32 and stored in the parameter dtype. Sizes are tiny
(d=64, 4 heads, seq 16, batch 2) so capture, plan and emulation run in about a second on a CPU.

Mixtral's mixture of experts routes each token to its top-2 experts. Hugging Face gathers each
expert's tokens by index (data-dependent shapes, which no static graph can hold); here every expert
runs on every token and a dense combine matrix (the top-2 routing weights scattered into zeros) weighs
the results. A selected expert's output for a token is computed exactly as in the gather form; the
unselected ones contribute ``0 * y``, which adds +-0 (NaN or inf in an unselected expert would leak).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from roundoff.zoo.registry import Workload, register

DIM, HEADS, SEQ, BATCH, FFN, EXPERTS, TOP_K = 64, 4, 16, 2, 128, 4, 2


class RMSNorm(nn.Module):
    """``weight * (x / sqrt(mean(x^2) + eps))`` with the normalisation computed in fp32."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        input_dtype = x.dtype
        h = x.to(torch.float32)
        variance = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(variance + self.eps)
        return self.weight * h.to(input_dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    """Causal multi-head attention with rotary embedding, scores softmaxed in fp32."""

    def __init__(self, dim: int, heads: int, seq: int, sdpa: bool = False) -> None:
        super().__init__()
        self.heads, self.head_dim, self.sdpa = heads, dim // heads, sdpa
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, dim, bias=False)
        self.v_proj = nn.Linear(dim, dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)
        inv_freq = 1.0 / (
            10000.0 ** (torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim)
        )
        freqs = torch.outer(torch.arange(seq, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())
        self.register_buffer("mask", torch.full((seq, seq), float("-inf")).triu(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        cos, sin = self.cos[:s], self.sin[:s]
        q = (q * cos) + (rotate_half(q) * sin)
        k = (k * cos) + (rotate_half(k) * sin)
        if self.sdpa:
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = torch.matmul(q, k.transpose(2, 3)) * (1.0 / math.sqrt(self.head_dim))
            scores = scores + self.mask[:s, :s]
            probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
            out = torch.matmul(probs, v)
        return self.o_proj(out.transpose(1, 2).reshape(b, s, d))


class SwiGLU(nn.Module):
    """``down(silu(gate(x)) * up(x))``."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(torch.nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class MixtureOfExperts(nn.Module):
    """Top-2 of `experts` SwiGLU experts; router softmax in fp32, top-k weights renormalised."""

    def __init__(self, dim: int, hidden: int, experts: int, top_k: int) -> None:
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(dim, experts, bias=False)
        self.experts = nn.ModuleList(SwiGLU(dim, hidden) for _ in range(experts))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        h = x.reshape(b * s, d)
        router_logits = self.gate(h)
        routing = torch.softmax(router_logits, dim=-1, dtype=torch.float32)
        top_w, top_i = torch.topk(routing, self.top_k, dim=-1)
        top_w = (top_w / top_w.sum(dim=-1, keepdim=True)).to(x.dtype)
        combine = torch.zeros_like(router_logits).scatter(-1, top_i, top_w)
        out = torch.zeros_like(h)
        for e, expert in enumerate(self.experts):
            out = out + expert(h) * combine[:, e : e + 1]
        return out.reshape(b, s, d)


class Block(nn.Module):
    """Pre-norm transformer block: ``h = x + attn(norm(x)); out = h + mlp(norm(h))``."""

    def __init__(self, mlp: nn.Module, sdpa: bool = False) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(DIM)
        self.self_attn = Attention(DIM, HEADS, SEQ, sdpa=sdpa)
        self.post_attention_layernorm = RMSNorm(DIM)
        self.mlp = mlp

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.self_attn(self.input_layernorm(x))
        return h + self.mlp(self.post_attention_layernorm(h))


def _initialise(
    module: nn.Module, seed: int, device: str | torch.device, dtype: torch.dtype
) -> nn.Module:
    """Deterministic init from `seed`: linear weights ``randn / sqrt(fan_in)``, norm weights
    ``1 + 0.1 randn``, drawn in fp32 in parameter order, then rounded to `dtype` with the buffers."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in module.named_parameters():
            r = torch.randn(p.shape, generator=g)
            p.copy_(1 + 0.1 * r if p.dim() == 1 else r / math.sqrt(p.shape[-1]))
    return module.to(device=device, dtype=dtype)


def llama_block(
    seed: int = 0,
    device: str | torch.device = "cpu",
    dtype: torch.dtype | None = None,
    sdpa: bool = False,
) -> nn.Module:
    """A Llama-style block (RMSNorm, rotary causal attention, SwiGLU MLP) initialised from `seed`."""
    return _initialise(Block(SwiGLU(DIM, FFN), sdpa=sdpa), seed, device, dtype or torch.bfloat16)


def mixtral_block(
    seed: int = 0,
    device: str | torch.device = "cpu",
    dtype: torch.dtype | None = None,
    sdpa: bool = False,
) -> nn.Module:
    """A Mixtral-style block: attention as in Llama, then a top-2 mixture of 4 SwiGLU experts."""
    moe = MixtureOfExperts(DIM, FFN // 2, EXPERTS, TOP_K)
    return _initialise(Block(moe, sdpa=sdpa), seed, device, dtype or torch.bfloat16)


def _sdpa_llama(
    seed: int = 0, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
) -> nn.Module:
    return llama_block(seed, device, dtype, sdpa=True)


def block_inputs(
    seed: int = 0, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
) -> tuple[torch.Tensor, ...]:
    """Hidden states ``randn(2, 16, 64)`` in `dtype` (default bf16), requiring grad. Drawn from
    ``seed + 1000`` so they differ from the weights of the same seed."""
    g = torch.Generator().manual_seed(seed + 1000)
    x = torch.randn(BATCH, SEQ, DIM, generator=g).to(dtype or torch.bfloat16).to(device)
    return (x.requires_grad_(),)


_SOURCE = "Hugging Face eager Llama/Mixtral layers; PyTorch/XLA's mul revert (docs/architecture.md, Sources)"
register(
    Workload(
        "llama-block",
        "Llama-style block: RMSNorm, rotary embedding, causal attention written "
        "out, SwiGLU MLP; d=64, 4 heads, seq 16, bf16",
        _SOURCE,
        llama_block,
        block_inputs,
        torch.bfloat16,
    )
)
register(
    Workload(
        "llama-block-sdpa",
        "llama-block with scaled_dot_product_attention instead of the written-out attention",
        _SOURCE,
        _sdpa_llama,
        block_inputs,
        torch.bfloat16,
    )
)
register(
    Workload(
        "mixtral-block",
        "Mixtral-style block: llama attention, router and top-2 mixture of 4 "
        "SwiGLU experts (dense combine); bf16",
        _SOURCE,
        mixtral_block,
        block_inputs,
        torch.bfloat16,
    )
)
