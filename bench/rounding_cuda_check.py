"""One-shot CUDA correctness check of round_to / fma against torch's CUDA casts, plus what tf32 does.

Usage: python bench/rounding_cuda_check.py  (needs a GPU; prints one line per check)
- round_to (eager and fused) vs x.to(dtype).to(fp32) on 2**26 random fp32 bit patterns per format;
- fp64 sources: does torch's CUDA fp64 -> narrow cast round once, or twice through fp32 (as on CPU)?
- fma on CUDA vs the CPU result (itself checked against fmaf by the test suite) on 10**7 triples;
- tf32: A @ I with TF32 matmuls allowed, compared with round_to(A, "tf32", mode) for each mode.
"""

from __future__ import annotations

import torch

from roundoff.numerics import FORMATS, RoundingMode, fma, round_to


def same(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    ib = torch.int32 if a.dtype == torch.float32 else torch.int64
    return (a.view(ib) == b.view(ib)) | (torch.isnan(a) & torch.isnan(b))


def main() -> None:
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(0)
    x = torch.randint(-(2**31), 2**31 - 1, (1 << 26,), dtype=torch.int32, device=dev, generator=g).view(torch.float32)
    for name, f in FORMATS.items():
        if f.torch_dtype is None or f.mantissa_bits >= 23:
            continue
        ref = x.to(f.torch_dtype).to(torch.float32)
        for fused in (False, True):
            bad = int((~same(round_to(x, name, fused=fused), ref)).sum())
            print(f"fp32->{name} fused={fused}: {bad} mismatches of {x.numel()} vs torch CUDA cast")
    x64 = torch.randint(-(2**63), 2**63 - 1, (1 << 24,), dtype=torch.int64, device=dev, generator=g).view(torch.float64)
    x64 = torch.cat([x64, x64 * 2.0**-1000, (1 + torch.rand(1 << 20, dtype=torch.float64, device=dev)) * 2.0**-20])
    for name, f in FORMATS.items():
        if f.torch_dtype is None or f.mantissa_bits >= 23:
            continue
        ref = x64.to(f.torch_dtype).to(torch.float64)
        once = int((~same(round_to(x64, name), ref)).sum())
        twice = int((~same(round_to(x64, name, torch_compatible=True), ref)).sum())
        print(f"fp64->{name}: torch CUDA cast differs from single rounding in {once}, "
              f"from torch_compatible (via fp32) in {twice}, of {x64.numel()}")
    a, b, c = (torch.randn(10_000_000, device=dev, generator=g) * s for s in (1.0, 1.0, 1e-3))
    c = c - a * b
    bad = int((~same(fma(a, b, c), fma(a.cpu(), b.cpu(), c.cpu()).to(dev))).sum())
    print(f"fma CUDA vs CPU: {bad} mismatches of {a.numel()}")
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
    except (AttributeError, RuntimeError):  # releases that know only the newer spelling
        torch.backends.cuda.matmul.fp32_precision = "tf32"
    A = torch.randn(2048, 2048, device=dev, generator=g)
    A[0, :8] = torch.tensor([1 + 2**-11, -(1 + 2**-11), 1 + 3 * 2**-11, 1 + 2**-11 + 2**-20, 1 + 2**-12, 1, 2, 3], device=dev)
    C = A @ torch.eye(2048, device=dev)
    print("tf32 matmul by identity changes", int((C != A).sum()), "of", A.numel(), "elements")
    for mode in RoundingMode:
        m = int(same(C, round_to(A, "tf32", mode)).sum())
        print(f"  A@I equals round_to(A, 'tf32', {mode.name}) in {m} of {A.numel()}")
    print("  ties row:", C[0, :8].tolist())


if __name__ == "__main__":
    main()
