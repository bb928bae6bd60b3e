"""Every-node check, figures gathered and read once (graphed on CUDA) vs interpreted, side by side.

One process, bench/check.py's workloads: the eager forward+backward step, `check(..., nodes="all")`
with ``nodes_with="graphed"`` (CUDA; ``"deferred"`` on CPU) and with ``nodes_with="interpreter"``,
interleaved, medians of `--repeat` warm calls, each as a ratio to the eager step measured beside it;
the first call of each (capture, compilation of the metric kernels) separately; peak device memory
of a warm call (CUDA: the captured graph's pool is resident and counted); and whether the two
results are the same (every figure to 1e-9 relative, every verdict exactly).

    PYTHONPATH=$PWD/src:$PWD:$PWD/bench python bench/every_node_graphed.py --device cuda --size 1024:512:1:4
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time
from typing import Any

import torch
from check import _setup  # bench/check.py


def _differences(a: Any, b: Any) -> int:
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        return sum(_differences(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
                   if f.name != "examined_with")
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return 1 if len(a) != len(b) else sum(_differences(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return 0 if a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-9 * max(abs(a), abs(b)) else 1
    return 0 if a == b else 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=("block", "llama"), default="llama")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--size", default="corpus")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    from roundoff.analyze import check

    fns = _setup(args.model, args.size, args.device)
    cuda = args.device == "cuda"
    how = "graphed" if cuda else "deferred"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    def timed(fn: Any) -> tuple[float, Any]:
        sync()
        t0 = time.perf_counter()
        out = fn()
        sync()
        return time.perf_counter() - t0, out

    program, inputs = fns["_program"](), fns["_inputs"]()

    def every_node(with_: str) -> Any:
        return check(program, inputs, "inductor-gpu", against="eager", nodes="all", nodes_with=with_)

    rows: dict[str, Any] = {}
    before = torch.cuda.memory_allocated() if cuda else 0
    resident = 0  # what the first graphed call leaves allocated: the captured graph's pool, held per program
    for name in (how, "interpreter"):
        first, result = timed(lambda name=name: every_node(name))
        rows[name] = {"first_call_seconds": first, "examined_with": result.examined_with, "result": result}
        if cuda and name == how:
            resident = torch.cuda.memory_allocated() - before
    fns["eager"]()
    times: dict[str, list[float]] = {"eager": [], how: [], "interpreter": []}
    ratios: dict[str, list[float]] = {how: [], "interpreter": []}
    for _ in range(args.repeat):
        for name in (how, "interpreter"):
            e, _r = timed(fns["eager"])
            t, _r = timed(lambda name=name: every_node(name))
            times["eager"].append(e)
            times[name].append(t)
            ratios[name].append(t / e)
    peak = None
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fns["eager"]()
        eager_peak = torch.cuda.max_memory_allocated() - base
        torch.cuda.reset_peak_memory_stats()
        every_node(how)
        torch.cuda.synchronize()
        graphed = resident + torch.cuda.max_memory_allocated() - base
        peak = {"eager_peak_bytes": eager_peak, "graph_pool_bytes": resident, "graphed_peak_bytes": graphed,
                "graphed_ratio": graphed / eager_peak}
    same = _differences(rows["interpreter"]["result"], rows[how]["result"])
    eager_s = statistics.median(times["eager"])
    doc = {
        "command": "python bench/every_node_graphed.py " + " ".join(sys.argv[1:]),
        "device": torch.cuda.get_device_name() if cuda else "cpu", "torch": torch.__version__,
        "model": args.model, "size": args.size, "nodes": fns["_nodes"](), "eager_seconds": eager_s,
        "items": {name: {"median_seconds": statistics.median(times[name]),
                         "ratio_interleaved": statistics.median(ratios[name]),
                         "first_call_seconds": rows[name]["first_call_seconds"],
                         "examined_with": rows[name]["examined_with"]} for name in (how, "interpreter")},
        "memory": peak, "fields_differing": same,
        "nodes_flagged": sum(1 for n in rows[how]["result"].nodes if n.verdict.value != "ok"),
    }
    print(json.dumps(doc, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=2)


if __name__ == "__main__":
    main()
