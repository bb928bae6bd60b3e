"""A clean bf16 transformer under `eager` against the fp64 oracle, forward and backward: no node
diverges, no NaN/Inf origin (its -inf attention mask is fp64's too), exit 0."""

from __future__ import annotations

import pytest
import torch

from roundoff.analyze import check
from roundoff.analyze.verdict import EXCESS_LIMIT, Verdict
from roundoff.capture import capture

transformers = pytest.importorskip("transformers")


class _Loss(torch.nn.Module):
    """The model's training loss from token ids (ids as an input, the model as parameters)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids, labels=ids, use_cache=False).loss


def test_small_llama_bf16_eager_has_no_diverging_node_against_the_oracle() -> None:
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64,
    )  # default attention (sdpa): its mask holds -inf, as fp64's does
    model = _Loss(transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).train())
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(0))
    r = check(capture(model, ids, backward=True), (ids,), "eager", against="oracle", nodes="all")
    loss64 = next(o for o in r.outputs if o.name == "out")
    assert loss64.vs_oracle.norm_rel < 1e-3  # the loss is close to fp64's: a clean run
    assert len(r.nodes) > 200
    assert [n.node_id for n in r.nodes if n.verdict is not Verdict.OK] == []
    assert max(n.own_excess for n in r.nodes) < EXCESS_LIMIT / 2, "margin below the verdict's limit"
    assert r.nan_origin is None and r.culprits == () and not r.diverges
