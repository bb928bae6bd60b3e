"""Where a warm check's time goes on CUDA, for issue 15: cProfile (Python) or torch.profiler (kernels).

    PYTHONPATH=$PWD/src:$PWD:$PWD/bench python bench/gpu/profile_every_node.py [--item check-every-node]
        [--size 1024:512:1:4] [--kernels]

`--kernels`: torch.profiler over one warm call: the GPU's busy time against the wall time, and the
ops and kernels by their own CUDA time and by their CPU time (what the host spends issuing them).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import torch

from check import _setup  # bench/check.py: the same workload and calls as its items

ap = argparse.ArgumentParser()
ap.add_argument("--item", default="check-every-node")
ap.add_argument("--size", default="1024:512:1:4")
ap.add_argument("--kernels", action="store_true")
ap.add_argument("--time-only", action="store_true", help="no profile: the warm timings only")
args = ap.parse_args()
calls = _setup("llama", args.size, "cuda")
run, eager = calls[args.item], calls["eager"]
for f in (run, run, eager, eager):
    f()
torch.cuda.synchronize()
for name, f in (("eager step", eager), (args.item, run)):
    took = []
    for _ in range(3):
        start = time.perf_counter()
        f()
        torch.cuda.synchronize()
        took.append(time.perf_counter() - start)
    print(f"warm {name}: median of 3 {sorted(took)[1]:.4f} s")
if args.time_only:
    pass
elif args.kernels:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        run()
        torch.cuda.synchronize()
        wall = time.perf_counter() - start
    events = prof.key_averages()
    busy = sum(e.self_device_time_total for e in events) / 1e6
    launches = sum(e.count for e in events if e.self_device_time_total > 0 and e.device_type.name == "CUDA")
    print(f"\nwall {wall:.3f} s under the profiler; GPU busy (sum of kernel times) {busy:.3f} s; kernels {launches}")
    print(events.table(sort_by="self_device_time_total", row_limit=40, max_name_column_width=70))
    print(events.table(sort_by="self_cpu_time_total", row_limit=30, max_name_column_width=70))
else:
    prof = cProfile.Profile()
    prof.enable()
    run()
    torch.cuda.synchronize()
    prof.disable()
    stats = pstats.Stats(prof)
    stats.sort_stats("cumulative").print_stats(40)
    stats.sort_stats("tottime").print_stats(25)
