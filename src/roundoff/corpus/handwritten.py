"""Hand-written models in the style of research code (not transformers), bf16, training mode.

- `nanogpt-sdpa` / `nanogpt-manual`: Karpathy's nanoGPT (``model.py``) at 2 layers, d=64, 4 heads,
  vocab 256, context 32: causal attention through ``F.scaled_dot_product_attention``, or written out
  with a hand-written softmax ``exp(x - x.amax(-1)) / sum`` (the softmax whose compiled gradient
  went NaN in roundoff's zoo); tied embeddings, GELU MLP, LayerNorm, cross-entropy loss.
- `cnn-bn`: two Conv2d -> BatchNorm2d -> ReLU -> MaxPool2d stages and a Linear head on 3x16x16
  images, cross-entropy over 10 classes (batch 4: BatchNorm in training needs more than one value
  per channel; its running statistics are updated in place, as in any training step).
Dropout is 0 everywhere (see `roundoff.corpus`).
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import nn

from roundoff.corpus.registry import Entry, Family

VOCAB, CONTEXT, SEQ, BATCH = 256, 32, 16, 2
SOURCE = "written here after karpathy/nanoGPT model.py and a textbook CNN"


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, flash: bool) -> None:
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head, self.n_embd, self.flash = n_head, n_embd, flash
        mask = torch.tril(torch.ones(CONTEXT, CONTEXT, dtype=torch.bool))
        self.register_buffer("bias", mask.view(1, 1, CONTEXT, CONTEXT), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.flash:
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(~self.bias[:, :, :T, :T], float("-inf"))
            att = torch.exp(att - att.amax(dim=-1, keepdim=True))
            att = att / att.sum(dim=-1, keepdim=True)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, flash: bool) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, flash)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(),
                                 nn.Linear(4 * n_embd, n_embd))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, flash: bool, n_layer: int = 2, n_head: int = 4, n_embd: int = 64) -> None:
        super().__init__()
        self.wte = nn.Embedding(VOCAB, n_embd)
        self.wpe = nn.Embedding(CONTEXT, n_embd)
        self.h = nn.ModuleList(Block(n_embd, n_head, flash) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, VOCAB, bias=False)
        self.wte.weight = self.lm_head.weight  # weight tying, as nanoGPT does

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class CNN(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Linear(32 * 4 * 4, classes)

    def forward(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(self.head(self.features(images).flatten(1)), labels)


def _build(factory: type, seed: int, **kwargs: bool) -> nn.Module:
    torch.manual_seed(seed)
    return factory(**kwargs).to(torch.bfloat16)


def _gpt_inputs(model: nn.Module, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {"input_ids": torch.randint(0, VOCAB, (BATCH, SEQ), generator=g),
            "labels": torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)}


def _cnn_inputs(model: nn.Module, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {"images": torch.randn(4, 3, 16, 16, generator=g).to(torch.bfloat16),
            "labels": torch.randint(0, 10, (4,), generator=g)}


def _gpt_loss(model: nn.Module, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return model(input_ids, labels)


def _cnn_loss(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return model(images, labels)


ENTRIES: tuple[Entry, ...] = (
    Entry("nanogpt-sdpa", Family.HANDWRITTEN, SOURCE, functools.partial(_build, GPT, flash=True),
          _gpt_inputs, _gpt_loss, ids_inputs=("labels",), note="F.scaled_dot_product_attention"),
    Entry("nanogpt-manual", Family.HANDWRITTEN, SOURCE, functools.partial(_build, GPT, flash=False),
          _gpt_inputs, _gpt_loss, ids_inputs=("labels",), note="hand-written softmax attention"),
    Entry("cnn-bn", Family.HANDWRITTEN, SOURCE, functools.partial(_build, CNN),
          _cnn_inputs, _cnn_loss, note="Conv2d/BatchNorm2d/ReLU/MaxPool2d + Linear"),
)
