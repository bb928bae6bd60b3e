"""Where a check's time goes: cProfile of one warm `check` call, beside one eager step and the bare runs.

Builds bench/check.py's workload (``--model llama --sizes D:SEQ:BATCH:LAYERS``), makes one warm-up call
of the item (planning and kernel compilation happen there), then times `--repeat` calls of eager, the
bare lockstep runs (``runs-only``) and the item, and profiles one more call of the item with cProfile.
Prints the medians, their ratios to eager, and the profile's top functions by own time and by
cumulative time (host-synchronising calls such as ``tolist``/``item``/``torch.equal`` show the device
time spent waiting there).

    python bench/profile_check.py --model llama --sizes 1024:512:1:4 --device cuda --item check-every-node
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time

import torch

from bench.check import _setup, _sync


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=("block", "llama"), default="llama")
    ap.add_argument("--sizes", default="corpus")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--item", default="check-every-node")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (as bench/check.py)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    fns = _setup(args.model, args.sizes, args.device)
    item = fns[args.item]
    item()
    fns["runs-only"]()
    fns["eager"]()
    times: dict[str, list[float]] = {"eager": [], "runs-only": [], args.item: []}
    for _ in range(args.repeat):
        for name, into in times.items():
            _sync(args.device)
            t0 = time.perf_counter()
            fns[name]()
            _sync(args.device)
            into.append(time.perf_counter() - t0)
    eager = statistics.median(times["eager"])
    for name, ts in times.items():
        print(f"{name:24s} {statistics.median(ts):9.4f} s  {statistics.median(ts) / eager:7.1f}x eager")
    print(f"nodes: {fns['_nodes']()}")
    prof = cProfile.Profile()
    prof.enable()
    item()
    _sync(args.device)
    prof.disable()
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(order).print_stats(args.top)
        print(out.getvalue())


if __name__ == "__main__":
    main()
