"""Cost of the per-node metric pass (`ErrorAccumulator.update_each`) against reading its inputs once.

Inputs are what `roundoff.analyze.check` feeds it: k = 1 or 3 actuals in fp32 containers against an
fp64 oracle `r` (standard normal values times a spread of binades):

- ``bf16``: actuals are bf16 values (``round_to(r * (1 + 2**-7 * noise), "bf16")``), ULPs in bf16;
- ``fp32``: actuals are ``(r * (1 + 1e-5 * noise)).float()``, ULPs in fp32 (many ulps exceed 4096);
- ``+nan``: the same with 0.1% NaN and 0.1% inf in the actuals (the masked path).

Baseline, timed in the same run on the same tensors: ``torch.sub(a, r)`` for each actual (one fused
elementwise pass reading a and r, writing fp64): the cost of reading the inputs once.
The ratio ``update_each / baseline`` is printed; time is the median of `--repeat` calls after warm-up
calls (which also compile where a compiled path is taken for large inputs).

Run (glibc otherwise returns large freed blocks to the OS and every temporary is page-faulted anew)::

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000 python bench/metrics.py [--threads 1] [--repeat 5] [--device cpu]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import time
from collections.abc import Callable

import torch

from roundoff.numerics import ErrorAccumulator, round_to

SIZES = tuple(1 << e for e in (12, 15, 17, 20, 23))
CASES = ("bf16", "fp32", "bf16+nan", "fp32+nan")


def _inputs(case: str, n: int, k: int) -> tuple[list[torch.Tensor], torch.Tensor]:
    g = torch.Generator().manual_seed(n + k)
    scale = torch.exp2(torch.randint(-20, 20, (n,), generator=g).double())
    r = torch.randn(n, dtype=torch.float64, generator=g) * scale
    fmt = case.split("+")[0]
    acts = []
    for _ in range(k):
        noise = torch.randn(n, dtype=torch.float64, generator=g)
        if fmt == "bf16":
            acts.append(round_to((r * (1 + 2.0**-7 * noise)).float(), "bf16"))
        else:
            acts.append((r * (1 + 1e-5 * noise)).float())
    if case.endswith("+nan"):
        for a in acts:
            a[::997] = math.nan
            a[5::1009] = math.inf
    return acts, r


def _median_time(fn: Callable[[], object], repeat: int, warmup: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (CUDA times are synchronized)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="*", default=list(SIZES), help="element counts")
    ap.add_argument("--ks", type=int, nargs="*", default=[1, 3], help="numbers of actuals per call")
    ap.add_argument("--cases", nargs="*", default=list(CASES), choices=CASES)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    malloc = {k: os.environ.get(k, "-") for k in ("MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_")}
    where = torch.cuda.get_device_name() if args.device.startswith("cuda") else platform.machine()
    print(f"# bench/metrics.py  torch {torch.__version__}  {where}  threads {args.threads}  "
          f"repeat {args.repeat}  env {malloc}")
    print(f"{'case':<10} {'k':>2} {'n':>9} {'baseline ms':>12} {'update_each ms':>15} {'ratio':>7}")
    for case in args.cases:
        for k in args.ks:
            for n in args.sizes:
                base, t = _row(case, k, n, args.repeat, args.device)
                print(f"{case:<10} {k:>2} {n:>9} {base * 1e3:>12.3f} {t * 1e3:>15.3f} {t / base:>7.1f}")


def _row(case: str, k: int, n: int, repeat: int, device: str) -> tuple[float, float]:
    """(baseline seconds, update_each seconds) for one case, k actuals, n elements."""
    fmt = case.split("+")[0]
    acts, r = _inputs(case, n, k)
    acts, r = [a.to(device) for a in acts], r.to(device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    def baseline() -> None:
        [torch.sub(a, r) for a in acts]
        sync()

    def metric() -> None:
        ErrorAccumulator.update_each([ErrorAccumulator(fmt) for _ in acts], acts, r)  # ends in a host sync

    base = _median_time(baseline, repeat, 2)
    t = _median_time(metric, repeat, 2)
    return base, t

if __name__ == "__main__":
    main()
