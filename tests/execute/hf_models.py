"""Tiny transformers models (random weights, from config classes; never a hub download) for execute tests.

Every builder returns ``(module, inputs)``: the module computes the model's own training loss on token
ids (labels = the ids), bf16, train mode, ``use_cache=True`` (transformers' default cache leaves empty
bf16 tensor constants in the graph).
"""

from __future__ import annotations

import pytest
import torch

from roundoff.policy.registry import list_policies

POLICIES = tuple(p.name for p in list_policies())  # every preset `roundoff policies` lists


class LossOf(torch.nn.Module):
    """``model(input_ids=ids, labels=ids, use_cache=True).loss``."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids, labels=ids, use_cache=True).loss


def _common(**extra: object) -> dict[str, object]:
    return dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32, **extra)


def _finish(model: torch.nn.Module, seq: int = 8) -> tuple[torch.nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(1)
    ids = torch.randint(0, 64, (2, seq))
    return LossOf(model.to(torch.bfloat16).train()), (ids,)


def llama(attn: str = "eager", **config: object) -> tuple[torch.nn.Module, tuple[torch.Tensor]]:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(**_common(attn_implementation=attn, **config))
    return _finish(transformers.LlamaForCausalLM(cfg))


def mixtral() -> tuple[torch.nn.Module, tuple[torch.Tensor]]:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.MixtralConfig(**_common(num_local_experts=4, num_experts_per_tok=2,
                                               attn_implementation="eager"))
    return _finish(transformers.MixtralForCausalLM(cfg))
