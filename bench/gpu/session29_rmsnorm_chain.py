"""Session 29 diagnostic: how the inductor-gpu plan (paired with eager, as observe pairs it) computes each
RMSNorm of bench/observe.py's transformers Llama: per ``rsqrt``, the nodes up to the residual adds with their
kernel, its kind, the operands read rounded and whether the partitioner saves the value.
Usage: ``python bench/gpu/session29_rmsnorm_chain.py``."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from real_model_fidelity import build

from roundoff.capture import capture
from roundoff.capture.program import node_id
from roundoff.plan.partitioner import saved_values
from roundoff.plan.shared import plan_pair


def main() -> None:
    module, ids = build(128, 2, 64, "eager", "cpu")
    program = capture(module, ids, backward=True, name="llama")
    saved = saved_values(program.captured()) or {}
    p, _ = plan_pair(program, "inductor-gpu", "eager")
    kind = {g.id: g.kind for g in p.groups}
    print(f"torch {torch.__version__}; {len(p.groups)} kernels")
    for n in p.program.graph.nodes:
        if n.op != "call_function" or "rsqrt" not in str(n.target) or "@" in node_id(n):
            continue
        chain, m = [n], n
        for _ in range(8):
            ins = [a for a in m.all_input_nodes if a.op not in ("placeholder", "get_attr")]
            if not ins:
                break
            m = ins[0]
            chain.append(m)
        for c in chain:
            d = p.decisions[node_id(c)]
            print(f"  {node_id(c):10s} {c.target!s:40s} kernel {d.group} {kind.get(d.group)} "
                  f"rounds={d.rounds_result} reads_rounded={sorted(d.rounded_inputs)} saved={node_id(c) in saved} "
                  f"users={[node_id(u) for u in c.users]}")
        print()


if __name__ == "__main__":
    main()
