"""transformers models as users write them: a wrapper module, a closure over the model taking token
ids, and the model itself; forward+backward with the model's own loss, bf16, training mode, against
real eager bit for bit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from capture_helpers import assert_matches_eager

from roundoff.capture import SpecializationKind, capture

transformers = pytest.importorskip("transformers")

VOCAB = 64


def _llama() -> torch.nn.Module:
    config = transformers.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
    )
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).to(torch.bfloat16).train()


class LossOf(torch.nn.Module):
    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids, labels=ids).loss


def _forms(model: torch.nn.Module) -> dict[str, tuple[Callable[..., Any], str]]:
    def closure(ids: torch.Tensor) -> torch.Tensor:
        return model(input_ids=ids, labels=ids).loss

    return {
        "module": (LossOf(model), "model.model.embed_tokens.weight"),
        "closure": (closure, "model.model.embed_tokens.weight"),
        "model": (model, "model.embed_tokens.weight"),  # logits out; its cache object is no output
    }


@pytest.mark.parametrize("form", ["module", "closure", "model"])
def test_llama_forward_backward_matches_eager(form: str) -> None:
    model = _llama()
    fn, first_param = _forms(model)[form]
    ids = torch.randint(1, VOCAB, (2, 8), generator=torch.Generator().manual_seed(1))
    program = capture(fn, ids, backward=True)
    assert program.input_names[:2] == ("ids" if form != "model" else "input_ids", first_param)
    assert len(program.grad_input_names) == len(list(model.parameters()))
    repro = f"capture(<llama {form}>, ids, backward=True)"
    assert_matches_eager(program, fn, (ids,), repro, params=list(model.parameters()))


def test_gpt2_dropout_and_tied_weights() -> None:
    """GPT-2 in training mode draws dropout masks: the graph holds eager's draws; its tied
    embedding/head weight is one input with one gradient."""
    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=16)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).to(torch.bfloat16).train()

    def loss(ids: torch.Tensor) -> torch.Tensor:
        return model(input_ids=ids, labels=ids).loss

    ids = torch.randint(0, VOCAB, (2, 8), generator=torch.Generator().manual_seed(1))
    torch.manual_seed(3)
    program = capture(loss, ids, backward=True)
    assert {s.kind for s in program.specializations} == {SpecializationKind.RANDOM}
    assert "model.lm_head.weight" not in program.input_names  # tied to transformer.wte.weight
    params = list(model.parameters())
    assert len(program.grad_input_names) == len(params)
    repro = "torch.manual_seed(3); capture(<gpt2 loss>, ids, backward=True)"
    assert_matches_eager(program, loss, (ids,), repro, params=params, seed=3)
