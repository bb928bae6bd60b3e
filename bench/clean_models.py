"""Clean transformers models (random weights, from config classes) under `eager` against the fp64
oracle, bf16, train mode, loss forward+backward: diverging nodes, NaN/Inf origin, verdict.

Runs against whatever roundoff is on PYTHONPATH (the branch base or the branch):

    PYTHONPATH=<checkout>/src python bench/clean_models.py [eager|sdpa]
"""

from __future__ import annotations

import sys
import time

import torch
import transformers

from roundoff.analyze import check
from roundoff.capture import capture


class Loss(torch.nn.Module):
    def __init__(self, model: torch.nn.Module, **extra: object) -> None:
        super().__init__()
        self.model, self.extra = model, extra

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids, labels=ids, **self.extra).loss


def models(attn: str = "eager") -> dict[str, torch.nn.Module]:
    common = {"attn_implementation": attn}
    llama = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, **common)
    gpt2 = transformers.GPT2Config(vocab_size=128, n_embd=64, n_layer=2, n_head=4, n_positions=64, **common)
    bert = transformers.BertConfig(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                   intermediate_size=128, max_position_embeddings=64, **common)
    return {
        "llama": Loss(transformers.LlamaForCausalLM(llama), use_cache=False),
        "gpt2": Loss(transformers.GPT2LMHeadModel(gpt2), use_cache=False),
        "bert": Loss(transformers.BertForMaskedLM(bert)),
    }


def main() -> None:
    attn = sys.argv[1] if len(sys.argv) > 1 else "eager"  # "sdpa": transformers' default attention
    torch.manual_seed(0)
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(0))
    for name, model in models(attn).items():
        model = model.to(torch.bfloat16).train()
        t0 = time.perf_counter()
        try:
            r = check(capture(model, ids, backward=True), (ids,), "eager", against="oracle", nodes="all")
        except Exception as exc:
            print({"model": name, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"}, flush=True)
            continue
        bad = [n for n in r.nodes if str(getattr(n.verdict, "value", n.verdict)) != "ok"]
        row = {
            "model": name, "attn": attn, "nodes": len(r.nodes), "diverging": len(bad), "nan_origin": r.nan_origin,
            "failing_outputs": sum(not o.passes for o in r.outputs), "outputs": len(r.outputs),
            "exit": 1 if r.diverges else 0, "seconds": round(time.perf_counter() - t0, 1),
        }
        if hasattr(r.nodes[0], "own_excess"):
            row["max_own_excess"] = round(max(n.own_excess for n in r.nodes), 2)
        print(row, flush=True)


if __name__ == "__main__":
    main()
