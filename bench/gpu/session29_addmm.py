"""Does Inductor (CUDA) compute ``mm(a, b) + x`` as one addmm (post-grad pattern ``addmm``)?

torch 2.13's ``fx_passes/post_grad.py`` folds a 2-D ``add(mm(a, b), x)`` into ``addmm(x, a, b)`` (one
rounding) unless, on a GPU, every user of the add is pointwise (``should_prefer_unfused_addmm``). Per case:
elements whose bits differ between real torch.compile and eager's ``addmm`` and eager's ``mm`` then ``add``.
Usage: ``python bench/gpu/session29_addmm.py [--device cuda]``.
"""

from __future__ import annotations

import argparse

import torch
import torch._dynamo


def _output_user(x: torch.Tensor, w: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    return r + x @ w


def _pointwise_users(x: torch.Tensor, w: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    return torch.relu(x @ w + r) * 2


def _matmul_user(x: torch.Tensor, w: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    return (x @ w + r) @ w.t()


def _folded(fn: object, x: torch.Tensor, w: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """`fn` with its ``x @ w + r`` computed as eager's ``addmm``."""
    added = torch.addmm(r, x, w)
    if fn is _output_user:
        return added
    return torch.relu(added) * 2 if fn is _pointwise_users else added @ w.t()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    dev = ap.parse_args().device
    g = torch.Generator().manual_seed(0)
    print(f"torch {torch.__version__} device {dev}")
    for fn in (_output_user, _pointwise_users, _matmul_user):
        for dtype in (torch.bfloat16, torch.float16, torch.float32):
            x = torch.randn(64, 256, generator=g).to(dtype).to(dev)
            w = (torch.randn(256, 256, generator=g) / 16).to(dtype).to(dev)
            r = torch.randn(64, 256, generator=g).to(dtype).to(dev)
            torch._dynamo.reset()
            real = torch.compile(fn)(x, w, r)
            folded = _folded(fn, x, w, r)
            apart = fn(x, w, r)
            def differ(a: torch.Tensor, b: torch.Tensor) -> int:
                return int((a.contiguous().view(torch.uint8) != b.contiguous().view(torch.uint8)).sum())
            print(f"{fn.__name__:18s} {dtype!s:15s} differ from addmm: {differ(real, folded):6d}  "
                  f"from mm+add: {differ(real, apart):6d}  of {real.numel() * real.element_size()} bytes")


if __name__ == "__main__":
    main()
