"""The warm every-node check of the H200 Llama against one eager step, interleaved in one process.

The transformers Llama of bench/check.py at hidden 1024, 4 layers, seq 512 (bf16, CUDA SDPA),
forward+backward: the first call (graph capture and compilation) timed alone, then five rounds of
one eager step and one ``check(..., "inductor-gpu", against="eager", nodes="all")``; the medians.

    PYTHONPATH=$PWD/src:$PWD:$PWD/bench python bench/gpu/every_node_interleaved.py [LABEL]
"""

from __future__ import annotations

import sys
import time

import torch
from check import _setup  # bench/check.py: the same workload and calls as its items

label = sys.argv[1] if len(sys.argv) > 1 else "every node"
calls = _setup("llama", "1024:512:1:4", "cuda")
run, eager = calls["check-every-node"], calls["eager"]
start = time.perf_counter()
result = run()
torch.cuda.synchronize()
print(f"{label}: first call {time.perf_counter() - start:.1f} s, examined with {result.examined_with}")
for f in (run, eager, eager):
    f()
took: dict[str, list[float]] = {"eager": [], "every-node": []}
for _ in range(5):
    for name, f in (("eager", eager), ("every-node", run)):
        torch.cuda.synchronize()
        start = time.perf_counter()
        f()
        torch.cuda.synchronize()
        took[name].append(time.perf_counter() - start)
e, v = sorted(took["eager"])[2], sorted(took["every-node"])[2]
print(f"{label}: interleaved medians of 5: eager step {e * 1e3:.1f} ms, every node {v * 1e3:.1f} ms, {v / e:.1f}x")
