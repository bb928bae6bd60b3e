"""Session 28 (H200): which values Triton's reduction kernels read unrounded. Per pattern: the generated
kernels (names list the fused ops) and the elements whose bits differ between real torch.compile and
the inductor-gpu emulation, per output, with Triton's reduction kernels modelled and without them
(`roundoff.plan.triton_kernels`). Integer-valued fp16 data keep fp32 sums exact, so a difference
is a rounding the plan placed differently, not summation order.

    python bench/gpu/session28_probe.py
"""
from __future__ import annotations

import dataclasses
import re

import torch
from torch._inductor.utils import run_and_get_code

from roundoff.capture import capture
from roundoff.execute import run_plan
from roundoff.numerics import bits_differ
from roundoff.plan import plan
from roundoff.policy import get_policy
from roundoff.policy.model import FusionModel

DEV = "cuda" if torch.cuda.is_available() else "cpu"
POLICY = "inductor-gpu"
H = torch.float16


def ints(*s, lo=-3000, hi=3000, seed=0):
    return torch.randint(lo, hi, s, generator=torch.Generator().manual_seed(seed)).to(H).to(DEV)


def small(*s, seed=0):
    return (torch.randn(*s, generator=torch.Generator().manual_seed(seed)) * 2).to(H).to(DEV)


def sum_epilogue(x):
    s = x.sum(-1)
    return s, s * 1.5


def sum_epilogue_only(x):
    return x.sum(-1) * 1.5


def sum_keepdim_full(x):
    s = x.sum(-1, keepdim=True)
    return s, x - s


def softmax_stored(x):
    m = x.amax(-1, keepdim=True)
    e = torch.exp(x - m)
    s = e.sum(-1, keepdim=True)
    return e, e / s


def softmax_plain(x):
    m = x.amax(-1, keepdim=True)
    e = torch.exp(x - m)
    return e / e.sum(-1, keepdim=True)


def prologue_stored(x):
    y = x * 1.1
    return y, y.sum(-1)


def rmsnorm(a, b):
    h = a + b
    v = h.float().pow(2).mean(-1, keepdim=True)
    return h, (h.float() * torch.rsqrt(v + 1e-6)).to(H)


def rmsnorm_half(a, b):
    h = a + b
    v = (h * h).mean(-1, keepdim=True)
    return h, h * torch.rsqrt(v + 1e-6)


def variance(x):
    mu = x.mean(-1, keepdim=True)
    d = x - mu
    return mu, (d * d).sum(-1)


def column_epilogue(x):
    s = x.sum(0)
    return s, x - s


def sum_then_matmul(x, w):
    s = x.sum(-1, keepdim=True)
    return s, (x - s) @ w


def two_consumers(x):
    s = x.sum(-1)
    return s * 3, s + 1


def oracle_program(a, b, c, d):
    h = a * b + c
    m = torch.amax(h * d, -1, keepdim=True)
    return h, h * d - a, (h * d - m) * 3.0


CASES = {
    "sum, output and *3 (512 cols)": (sum_epilogue, lambda: (ints(64, 512, lo=0, hi=60),)),
    "sum, output and *3 (16384 cols)": (sum_epilogue, lambda: (ints(64, 16384, lo=0, hi=4),)),
    "sum*3 only (512 cols)": (sum_epilogue_only, lambda: (ints(64, 512, lo=0, hi=60),)),
    "sum keepdim, x - s (512)": (sum_keepdim_full, lambda: (ints(64, 512, lo=0, hi=60),)),
    "sum keepdim, x - s (16384)": (sum_keepdim_full, lambda: (ints(64, 16384, lo=0, hi=4),)),
    "softmax, e stored (512)": (softmax_stored, lambda: (small(64, 512),)),
    "softmax, e stored (16384)": (softmax_stored, lambda: (small(64, 16384),)),
    "softmax (512)": (softmax_plain, lambda: (small(64, 512),)),
    "softmax (16384)": (softmax_plain, lambda: (small(64, 16384),)),
    "prologue stored (512)": (prologue_stored, lambda: (small(64, 512),)),
    "prologue stored (16384)": (prologue_stored, lambda: (small(64, 16384),)),
    "rmsnorm fp32 (512)": (rmsnorm, lambda: (small(64, 512), small(64, 512, seed=1))),
    "rmsnorm fp32 (16384)": (rmsnorm, lambda: (small(64, 16384), small(64, 16384, seed=1))),
    "rmsnorm half (512)": (rmsnorm_half, lambda: (small(64, 512), small(64, 512, seed=1))),
    "variance (512)": (variance, lambda: (small(64, 512),)),
    "variance (16384)": (variance, lambda: (small(64, 16384),)),
    "column sums, x - s": (column_epilogue, lambda: (ints(512, 64, lo=0, hi=60),)),
    "sum then matmul": (sum_then_matmul, lambda: (ints(64, 512, lo=0, hi=60), small(512, 32))),
    "two consumers of a sum": (two_consumers, lambda: (ints(64, 512, lo=0, hi=60),)),
    "oracle program (bf16 32x64)": (oracle_program, lambda: tuple(
        torch.randn(32, 64, generator=torch.Generator().manual_seed(i)).to(torch.bfloat16).to(DEV) for i in range(4))),
}


def main() -> None:
    for name, (fn, make) in CASES.items():
        args = make()
        try:
            torch._dynamo.reset()
            real, code = run_and_get_code(torch.compile(fn, dynamic=False, fullgraph=True), *args)
            real = real if isinstance(real, tuple) else (real,)
            kernels = sorted(set(re.findall(r"def (triton_\w+)\(", "\n".join(code))))
            program = capture(fn, *args)
            differ = [bits_differ(e, r) for e, r in zip(run_plan(plan(program, POLICY), args), real)]
            without = dataclasses.replace(get_policy(POLICY), fusion=FusionModel.POINTWISE)  # no reduction kernels
            before = [bits_differ(e, r) for e, r in zip(run_plan(plan(program, without), args), real)]
            print(f"{name}: bits differing per output {differ} (without Triton's reduction kernels {before}) "
                  f"of {[r.numel() for r in real]}; kernels {kernels}", flush=True)
        except Exception as e:  # noqa: BLE001 (one case must not hide the others)
            print(f"{name}: {type(e).__name__}: {str(e)[:300]}", flush=True)


if __name__ == "__main__":
    main()
