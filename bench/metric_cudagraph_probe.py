"""Probe (CUDA): per-call cost of `ErrorAccumulator.update_each` with the compiled metric kernel as
roundoff compiles it, or compiled with ``mode=METRIC_MODE`` (e.g. ``reduce-overhead``: CUDA graphs);
with an argument, then bench/profile_check.py's every-node profile of the H200 Llama in that mode.

    METRIC_MODE=reduce-overhead python bench/metric_cudagraph_probe.py [full]

Session 16 on the H200 (bench/results/h200-session16/): CUDA graphs save launch overhead at 2**17
elements only, nothing at 2**20 and more; and a check cannot use them as they are, since `unread_rows`
keeps a kernel's output past the next replay (the every-node run stops with "accessing tensor output
of CUDAGraphs that has been overwritten by a subsequent run")."""
import functools
import os
import statistics
import sys
import time
import types

import torch

from roundoff.numerics import _metric_kernel as mk

MODE = os.environ.get("METRIC_MODE", "default")
if MODE != "default":
    @functools.cache
    def _compiled(k, dtypes, f):
        def rows(*tensors):
            if k == 0:
                return mk.masked_row_stats(tensors[0], tensors[1], f)
            return mk.row_stats(tensors[:-1], tensors[-1], f)
        name = mk._variant(k, dtypes, f)
        code = rows.__code__.replace(co_name=name)
        fn = types.FunctionType(code, rows.__globals__, name, rows.__defaults__, rows.__closure__)
        return torch.compile(fn, mode=MODE)
    mk._compiled = _compiled

from roundoff.numerics import FORMATS, ErrorAccumulator


def micro():
    for n in (1 << 17, 1 << 20, 1 << 22):
        for k in (1, 3):
            r = torch.randn(n, dtype=torch.float64, device="cuda")
            acts = [(r * (1 + 1e-3 * torch.randn_like(r))).to(torch.bfloat16) for _ in range(k)]
            def f(acts=acts, r=r):
                ErrorAccumulator.update_each([ErrorAccumulator(FORMATS["bf16"]) for _ in acts], acts, r)
            for _ in range(3): f()
            torch.cuda.synchronize()
            ts = []
            for _ in range(20):
                t = time.perf_counter(); f(); torch.cuda.synchronize(); ts.append(time.perf_counter() - t)
            print(f"{MODE:16s} n=2**{n.bit_length()-1} k={k}: {statistics.median(ts)*1e3:.3f} ms", flush=True)
micro()
if len(sys.argv) > 1:
    sys.argv = [sys.argv[0], "--model", "llama", "--sizes", "1024:512:1:4", "--device", "cuda", "--item", "check-every-node", "--repeat", "3", "--top", "25"]
    from bench.profile_check import main
    main()
