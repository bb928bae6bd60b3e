"""Which data-dependent branches the every-node observer takes on a clean model (issue 15, design item 4).

Per-node figures kept on the device and read once (not one host read per node) need the observer's
decisions to wait until after the run. That is possible where a clean model's nodes take only the
branches decided by figures every node computes anyway; a branch that needs a node's tensors again
(`same` per node against a reference, a structural-zero test, an overflow count, ...) would need those
tensors kept, or the interpreted observer. This counts, on bench/check.py's transformers Llama, how
often `check(..., nodes="all")` calls each such helper:

    PYTHONPATH=$PWD/src:$PWD:$PWD/bench python bench/every_node_branches.py [--size 256:128:1:2]
"""

from __future__ import annotations

import argparse
import collections
import time

from check import _workload  # bench/check.py: the same workload

from roundoff.analyze import check, observe
from roundoff.capture import capture

#: The helpers `NodeObserver` calls only where a node's figures ask for them (each reads tensors again).
BRANCHES = ("judge", "structural_zero_floor", "fp32_own_excess", "amplified_read", "nonfinite_counts",
            "stored_overflow", "unlike")

ap = argparse.ArgumentParser()
ap.add_argument("--size", default="256:128:1:2")
args = ap.parse_args()
calls: collections.Counter[str] = collections.Counter()


def _counted(name: str):
    original = getattr(observe, name)

    def counted(*a, **k):
        calls[name] += 1
        return original(*a, **k)

    return counted


for name in BRANCHES:
    setattr(observe, name, _counted(name))
module, xs = _workload("llama", args.size, "cpu")
program = capture(module, *xs, backward=True)
inputs = tuple(t.detach() for t in program.example_inputs)
for against in ("eager", "oracle"):
    calls.clear()
    start = time.perf_counter()
    r = check(program, inputs, "inductor-gpu", against=against, nodes="all")
    bad = [(n.node_id, n.op, n.verdict.value) for n in r.nodes if n.verdict.value != "ok"]
    print(f"against {against}: {len(r.nodes)} node reports, {time.perf_counter() - start:.1f} s (the process's first check "
          f"includes planning); branch calls {dict(calls)}; nodes not ok {bad[:10]}; "
          f"outputs pass {all(o.passes for o in r.outputs)}; NaN origin {r.nan_origin}")
