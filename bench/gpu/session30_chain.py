"""Session 30 diagnostic: the reused pointwise chain of tests/plan/test_plan_triton_kernels.py (k steps of
``v * 1.01 + 0.5``, read by ``v.sum(0)`` and ``v.sum(1)``) on the given device: Inductor's generated code, and the
plan's kernels and rounded reads for the chain's last node and the two sums.
Usage: ``python bench/gpu/session30_chain.py cuda 13 14``."""

from __future__ import annotations

import sys

import torch
import torch._dynamo
from torch._inductor.utils import run_and_get_code

from roundoff.capture import capture
from roundoff.capture.program import node_id
from roundoff.plan import plan


def chain_of(k: int):
    def chain(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        v = x
        for _ in range(k):
            v = v * 1.01 + 0.5
        return v.sum(0), v.sum(1)

    return chain


def main(device: str, ks: list[int]) -> None:
    x = (torch.randn(64, 256, generator=torch.Generator().manual_seed(0)).bfloat16() / 4).to(device)
    preset = "inductor-gpu" if device == "cuda" else "inductor-cpu"
    for k in ks:
        torch._dynamo.reset()
        _, code = run_and_get_code(torch.compile(chain_of(k), dynamic=False, fullgraph=True), x)
        if device == "cuda":
            print(f"===== k={k}: Inductor's code\n" + "\n".join(code))
        p = plan(capture(chain_of(k), x), preset)
        nodes = [n for n in p.program.graph.nodes if n.op == "call_function"]
        for n in nodes[-4:]:
            d = p.decisions.get(node_id(n))
            if d is not None:
                print(f"plan {node_id(n)} {n.target} kernel={d.group} rounds={d.rounds_result} "
                      f"reads_rounded={sorted(d.rounded_inputs)} stored={getattr(d, 'stored', None)}")
        print("plan kernels:", [(g.id, g.kind, len(g.node_ids)) for g in p.groups])


if __name__ == "__main__":
    main(sys.argv[1], [int(k) for k in sys.argv[2:]])
