"""Replay the recorded H200 observe run's non-identical buffers through `emulation_cause`.

Run from the repository root (~40 s, CPU): `python bench/results/observe-cuda-session3-replay-causes.py`.
Observed buffers are rebuilt from observe-cuda-session3.json (fused ids, kinds, dtypes; H200 id = CPU
capture id + 10 from n60 on); prints the recorded cause, the cause from the fused nodes alone, and
the cause from the local region (`roundoff.observed.compare.local_region`).
"""
import json
import sys

sys.path.insert(0, "bench")
import torch
from real_model_fidelity import build
from roundoff.capture import capture
from roundoff.plan import plan
from roundoff.observed.compare import Observed, emulation_cause
module, ids = build(128, 2, 64, "eager", "cpu")
program = capture(module, ids, backward=True, name="llama")
p = plan(program, "inductor-gpu")
d = json.load(open("bench/results/observe-cuda-session3.json"))
cpu = lambda i: f"n{int(i[1:]) - 10}"
observed, launch, prev = {}, -1, None
for k in d["kernels"]:
    if k["kernel"] != prev:
        launch, prev = launch + 1, k["kernel"]
    observed[cpu(k["node"])] = Observed(k["kernel"], k["buffer"], k["kind"], tuple(cpu(i) for i in k["fused_nodes"]),
                                        torch.empty(1, dtype=getattr(torch, k["dtype"])), len(observed), launch)
for k in d["kernels"]:
    if k["kind"] == "pointwise" and not k["emulated_identical"] or k["kind"] == "reduction" and not k["emulated_identical"]:
        nid = cpu(k["node"]); o = observed[nid]
        print(k["buffer"], k["node"], "| recorded:", k["emulation_cause"], "| fused only:", emulation_cause(program, nid, o, p),
              "| region:", emulation_cause(program, nid, o, p, observed))
