"""What compiling the numerics kernels (metric figures, rounding) costs and saves on this host.

1. Per call, warm: the metric pass (`finite_stats`, two bf16 actuals against fp64) and `round_to`
   (fp32 -> bf16, fp64 -> fp16), eager against the compiled kernel, at 2**17 to 2**23 elements; the
   first compiled call of each variant (compile or Inductor-cache load) reported apart.
2. A first `check` in a fresh process with an empty Inductor cache (every CLI call is a new process),
   on a bf16 two-layer MLP whose activations hold 2**19 elements: the compiled kernels at once (the
   behaviour before `roundoff.numerics.compile_after`) against the default (eager until a variant has
   earned its compilation), each in its own child process, side by side.

    python bench/compile_after.py [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import torch
from metrics import _median_time  # bench/metrics.py (bench/ is the script's folder)

CHILD = r"""
import sys, time, torch
from roundoff.numerics import _metric_kernel, rounding
from roundoff.numerics.compile_after import CompileAfter
if sys.argv[1] == "at-once":
    _metric_kernel.COMPILE_AFTER = CompileAfter(0)
    rounding.COMPILE_AFTER = CompileAfter(0)
from roundoff.analyze import check
torch.set_num_threads(int(sys.argv[2]))
g = torch.Generator().manual_seed(0)
w1 = (torch.randn(256, 2048, generator=g) / 16).bfloat16().requires_grad_()
w2 = (torch.randn(2048, 256, generator=g) / 45).bfloat16().requires_grad_()
x = torch.randn(256, 256, generator=g).bfloat16()
def mlp(x, w1, w2):
    return (torch.nn.functional.silu(x @ w1) @ w2).float().square().mean()
t = time.perf_counter()
r = check(mlp, (x, w1, w2), "eager", against="oracle", backward=True)
first = time.perf_counter() - t
t = time.perf_counter()
check(mlp, (x, w1, w2), "eager", against="oracle", backward=True)
print(f"{first:.2f} {time.perf_counter() - t:.2f} {'diverges' if r.diverges else 'ok'} {len(_metric_kernel.fused_status())}")
"""


def _median(fn, repeat: int = 5) -> float:
    return _median_time(fn, repeat, warmup=1)


def per_call() -> None:
    from roundoff.numerics import _metric_kernel, get_format, round_to
    from roundoff.numerics._metric_rows import eager_finite_stats

    f = get_format("bf16")
    print("| elements | metric pass eager | compiled | eager/compiled | first compiled call |"
          " round fp32->bf16 eager | compiled | round fp64->fp16 eager | compiled |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n in (1 << 17, 1 << 19, 1 << 21, 1 << 23):
        r = torch.randn(n, dtype=torch.float64)
        a = [(r * (1 + 2**-7 * torch.randn(n, dtype=torch.float64))).to(torch.bfloat16) for _ in range(2)]
        t = time.perf_counter()
        _metric_kernel.fused_rows(a, r, f, lambda got: None)
        first = time.perf_counter() - t
        eager = _median(lambda: eager_finite_stats(a, r, f))
        compiled = _median(lambda: _metric_kernel.fused_rows(a, r, f, lambda got: None))
        x32, x64 = r.float(), r
        rounds = [_median(lambda x=x, fmt=fmt, fused=fused: round_to(x, fmt, fused=fused))
                  for x, fmt in ((x32, "bf16"), (x64, "fp16")) for fused in (False, True)]
        print(f"| 2^{n.bit_length() - 1} | {eager * 1e3:.1f} ms | {compiled * 1e3:.1f} ms | {eager / compiled:.2f} | "
              f"{first:.1f} s | " + " | ".join(f"{t * 1e3:.1f} ms" for t in rounds) + " |", flush=True)


def first_check(threads: int) -> None:
    print("\n| kernels | first check (fresh process, empty Inductor cache) | second check | verdict | variants compiled |")
    print("| --- | ---: | ---: | --- | ---: |")
    for how in ("at-once", "default", "at-once", "default"):
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
            out = subprocess.run([sys.executable, "-c", CHILD, how, str(threads)], env=env, capture_output=True,
                                 text=True, check=True).stdout.split()
        print(f"| {how} | {out[0]} s | {out[1]} s | {out[2]} | {out[3]} |", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--first-only", action="store_true", help="part 2 only")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), TORCHINDUCTOR_CACHE_DIR="
          f"{os.environ.get('TORCHINDUCTOR_CACHE_DIR', '(default)')} for part 1\n")
    if not args.first_only:
        per_call()
    first_check(args.threads)


if __name__ == "__main__":
    main()
