"""Cost of a full `roundoff.analyze.check` against one eager forward+backward, same machine, same run.

Workload: the zoo's Llama-style block, forward+backward, in bf16, at the zoo's batch (2) and at a
larger batch so per-op work, not per-node Python overhead, dominates. Measured per configuration:

- eager: the real module, ``block(x)`` then ``out.backward(ones)`` (autograd), one step;
- check: ``check(program, inputs, "inductor-gpu", against="eager")``: emulated policy run, fp64
  oracle, emulated eager reference and every node's comparison + local error, streaming;
- check-lite: the same against the oracle only and without local error.

Time is the median of `--repeat` runs after one warm-up. Peak memory is measured in a fresh
subprocess per item (CPU: resident set size sampled every 0.5 ms above the level before the call;
CUDA: ``torch.cuda.max_memory_allocated`` above the level before the call).

    python bench/check.py [--device cpu|cuda] [--batch 2 64] [--repeat 5] [--threads 1] [--out FILE.json]

The check's time includes planning (decomposition re-trace: a fixed cost per program, independent of
the batch), so the larger batch shows the per-element cost.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import torch

ITEMS = ("eager", "check", "check-lite")


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak_cpu(fn: Callable[[], Any]) -> int:
    base, peak, done = _rss(), [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _rss())
            time.sleep(0.0005)

    t = threading.Thread(target=sample)
    t.start()
    try:
        fn()
    finally:
        done.set()
        t.join()
    return max(peak[0], _rss()) - base


def _peak_cuda(fn: Callable[[], Any]) -> int:
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base


def _setup(batch: int, device: str) -> dict[str, Callable[[], Any]]:
    from roundoff.analyze import check
    from roundoff.capture import capture
    from roundoff.zoo import get_workload

    w = get_workload("llama-block")
    block = w.build(device=device)
    (x,) = w.make_inputs(device=device)
    x = x.detach().repeat(batch // x.shape[0] or 1, 1, 1)[:batch].contiguous().requires_grad_()
    program = capture(block, x, backward=True)
    inputs = tuple(t.detach() for t in program.example_inputs)

    def eager() -> None:
        out = block(x)
        out.backward(torch.ones_like(out))
        block.zero_grad(set_to_none=True)
        x.grad = None

    return {
        "eager": eager,
        "check": lambda: check(program, inputs, "inductor-gpu", against="eager"),
        "check-lite": lambda: check(program, inputs, "inductor-gpu", against="oracle", local=False),
        "_nodes": lambda: sum(1 for _ in program.graph.nodes),
    }


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def measure_one(item: str, batch: int, device: str, repeat: int) -> dict[str, Any]:
    """Run in a fresh process: peak memory of the first call, then median time of `repeat` calls."""
    fns = _setup(batch, device)
    fn = fns[item]
    peak = _peak_cuda(fn) if device == "cuda" else _peak_cpu(fn)
    times = []
    for _ in range(repeat):
        _sync(device)
        t0 = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return {"item": item, "batch": batch, "seconds": statistics.median(times), "peak_bytes": peak,
            "nodes": fns["_nodes"]()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batch", type=int, nargs="+", default=[2, 64])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=None)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (CPU); same for every item")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.one:
        print(json.dumps(measure_one(args.one, args.batch[0], args.device, args.repeat)))
        return
    rows = []
    for batch in args.batch:
        res = {}
        for item in ITEMS:
            cmd = [sys.executable, __file__, "--one", item, "--batch", str(batch), "--device", args.device,
                   "--repeat", str(args.repeat), "--threads", str(args.threads)]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            res[item] = json.loads(out.strip().splitlines()[-1])
        e = res["eager"]
        for item in ITEMS:
            r = res[item]
            r["time_ratio"] = r["seconds"] / e["seconds"]
            r["memory_ratio"] = r["peak_bytes"] / e["peak_bytes"] if e["peak_bytes"] > 0 else None
            rows.append(r)
            mem = f"{r['memory_ratio']:.2f}x" if r["memory_ratio"] is not None else "n/a"
            print(f"batch {batch:4d} {item:11s} {r['seconds'] * 1e3:9.2f} ms  {r['time_ratio']:7.1f}x time  "
                  f"{r['peak_bytes'] / 2**20:8.1f} MiB  {mem} memory  ({r['nodes']} nodes)")
    doc = {
        "command": "python bench/check.py " + " ".join(sys.argv[1:]),
        "device": args.device if args.device == "cpu" else torch.cuda.get_device_name(),
        "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
        "torch": torch.__version__, "threads": args.threads, "rows": rows,
        "targets": {"time_ratio": 5.0, "memory_ratio": 3.0},
    }
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=2)


if __name__ == "__main__":
    main()
