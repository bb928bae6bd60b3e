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


def test_a_router_choice_a_graph_break_reads_is_eagers_in_every_run() -> None:
    """Trial 65: a Qwen3-MoE step with transformers' eager expert loop (``torch.where(expert_mask[e])``,
    pinned to eager's value across its graph break). fp64's router ordered one token's top-2 otherwise
    (the same two experts), so the fp64 run gave expert 0 the routing weight of expert 6 under eager's
    pinned token lists, and eager's gate gradient failed at 79x against that hybrid. The topk upstream of
    the break is now eager's choice in every run. Oracle: real eager's gradient against a real fp64 copy
    (which routes every token to the same two experts)."""
    import copy

    if not hasattr(transformers, "Qwen3MoeConfig"):
        pytest.skip("this transformers has no Qwen3-MoE")
    torch.manual_seed(0)
    config = transformers.Qwen3MoeConfig(
        hidden_size=64, intermediate_size=128, moe_intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, num_experts=8, num_experts_per_tok=2, vocab_size=256,
        decoder_sparse_step=1, max_position_embeddings=64, output_router_logits=False, attn_implementation="eager",
        experts_implementation="eager")  # (a loop over experts, with a graph break per expert)
    model = _Loss(transformers.Qwen3MoeForCausalLM(config).to(torch.bfloat16).train())
    ids = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(1))
    exact = copy.deepcopy(model).double()
    exact(ids).backward()
    model(ids).backward()
    name = "model.model.layers.0.mlp.gate.weight"
    grad, grad64 = dict(model.named_parameters())[name].grad, dict(exact.named_parameters())[name].grad
    real = float((grad.double() - grad64).pow(2).mean().sqrt())
    program = capture(model, ids, backward=True)
    assert any("topk = eager's choice" in s.detail for s in program.specializations), program.specializations
    r = check(program, (ids,), "eager", against="oracle")
    gate = next(o for o in r.outputs if o.name == "grad_" + name)
    assert gate.rmse_result == pytest.approx(real, rel=1e-3) and not r.diverges, (gate.rmse_result, real)
