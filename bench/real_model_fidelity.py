"""Emulation fidelity on a real model: a transformers Llama, forward + backward (issue 12).

Builds ``LlamaForCausalLM`` from its config class with random weights (hidden 1024, 4 layers, seq 512,
bf16, CUDA SDPA attention by default), captures loss + every parameter gradient with roundoff, and
compares, element by element and bit for bit (bf16 bit patterns; NaN payloads aside, -0.0 != +0.0):

- emulated ``eager-cuda`` (``eager`` on CPU) against the real eager run (``loss.backward()`` on the
  model itself),
- emulated ``inductor-gpu`` (``inductor-cpu`` on CPU) against the real ``torch.compile`` run,
- each emulation against the *other* real run, to say whether a policy's emulation is closer to the
  run it models than to the other one (the point of a policy).

Per pair: the fraction of bit-identical output and gradient elements, and the normwise relative
difference ``||a - b|| / ||b||`` (fp64) over all of them. Usage:
``python bench/real_model_fidelity.py [--device cuda] [--hidden 1024 --layers 4 --seq 512] --out DIR``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import torch

from roundoff.capture import capture
from roundoff.execute import run_plan
from roundoff.numerics import bits_differ
from roundoff.plan import plan


class LossOf(torch.nn.Module):
    """The model's own causal-LM loss on `ids` (labels = ids), as PyTorch's accuracy harness runs it."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids, labels=ids, use_cache=False).loss


def build(hidden: int, layers: int, seq: int, attn: str, device: str) -> tuple[LossOf, torch.Tensor]:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=hidden,
        intermediate_size=hidden * 11 // 4,
        num_hidden_layers=layers,
        num_attention_heads=hidden // 64,
        num_key_value_heads=max(1, hidden // 128),
        vocab_size=8192,
        max_position_embeddings=max(seq, 64),
        attention_dropout=0.0,
        attn_implementation=attn,
    )
    model = LlamaForCausalLM(config).to(device=device, dtype=torch.bfloat16).train()
    ids = torch.randint(0, config.vocab_size, (1, seq), device=device)
    return LossOf(model), ids


def real_run(
    run: torch.nn.Module, module: torch.nn.Module, ids: torch.Tensor, names: tuple[str, ...]
) -> list[torch.Tensor]:
    """Loss and the gradients of `names` (`module`'s qualified parameter names) from a real forward +
    backward of `run` (the module itself, or its torch.compile)."""
    params = dict(module.named_parameters())
    for p in params.values():
        p.grad = None
    loss = run(ids)
    loss.backward()
    grads = [params[n].grad.detach().clone() for n in names]
    for p in params.values():
        p.grad = None
    return [loss.detach().clone(), *grads]


def compare(emulated: list[torch.Tensor], real: list[torch.Tensor]) -> dict[str, float]:
    """Bit-identical element fraction and normwise relative difference over all tensors."""
    same = total = 0
    diff2 = ref2 = 0.0
    for a, b in zip(emulated, real, strict=True):
        a, b = a.reshape(-1), b.reshape(-1).to(a.dtype)
        both_nan = a.isnan() & b.isnan()
        same += a.numel() - bits_differ(a, b)
        total += a.numel()
        d = (a.double() - b.double())[~both_nan]
        diff2 += float((d * d).sum())
        ref2 += float((b.double()[~both_nan] ** 2).sum())
    return {
        "identical_fraction": same / total,
        "elements": total,
        "relative_difference": (diff2 / ref2) ** 0.5 if ref2 else 0.0,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)

    module, ids = build(args.hidden, args.layers, args.seq, args.attn, args.device)
    t0 = time.perf_counter()
    program = capture(module, ids, backward=True)
    timings = {"capture_s": time.perf_counter() - t0}
    names = program.grad_input_names
    real = {"eager": real_run(module, module, ids, names)}
    compiled = torch.compile(module)
    real_run(compiled, module, ids, names)  # compile (forward and backward) outside the measured comparison
    real["compiled"] = real_run(compiled, module, ids, names)
    inputs = (ids, *[t for t in program.example_inputs[1:]])
    emulated = {}
    eager_policy, compiled_policy = ("eager-cuda", "inductor-gpu") if args.device == "cuda" else ("eager", "inductor-cpu")
    for policy, impl in ((eager_policy, "eager"), (compiled_policy, "inductor")):
        t0 = time.perf_counter()
        emulated[policy] = list(run_plan(plan(program, policy), inputs, transcendentals=impl))
        timings[f"emulate_{policy}_s"] = time.perf_counter() - t0
    rows = [
        {"emulated": p, "real": r, **compare(emulated[p], real[r])}
        for p in emulated
        for r in real
    ]
    by = {(row["emulated"], row["real"]): row for row in rows}
    verdict = {
        f"{eager_policy} closer to real eager than to compiled": by[(eager_policy, "eager")]["relative_difference"]
        < by[(eager_policy, "compiled")]["relative_difference"],
        f"{compiled_policy} closer to compiled than to real eager": by[(compiled_policy, "compiled")]["relative_difference"]
        < by[(compiled_policy, "eager")]["relative_difference"],
    }
    result = {
        "command": "python " + " ".join(sys.argv),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
        "model": {"hidden": args.hidden, "layers": args.layers, "seq": args.seq, "attn": args.attn},
        "graph_nodes": len(program.graph_module.graph.nodes),
        "rows": rows,
        "verdict": verdict,
        "timings": timings,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "real_model_fidelity.json").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
