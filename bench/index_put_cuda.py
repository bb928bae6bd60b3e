"""index_put(accumulate=True) in bf16 on CUDA: real eager and real torch.compile against fp64, beside
roundoff's emulation under eager-cuda and inductor-gpu (which sum in fp32 and round once).

    python bench/index_put_cuda.py      # prints one line per run: relative error against fp64
"""

from __future__ import annotations

import torch

from roundoff.capture import capture
from roundoff.execute.run import run_plan
from roundoff.plan import plan


def scatter(idx: torch.Tensor, rows: torch.Tensor, base: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(base).index_put_((idx,), rows, accumulate=True) + base


def main() -> None:
    g = torch.Generator().manual_seed(0)
    idx = torch.randint(0, 4, (4000,), generator=g).cuda()
    rows = (torch.randn(4000, 64, generator=g) + 1).to(torch.bfloat16).cuda()
    base = torch.randn(4, 64, generator=g).to(torch.bfloat16).cuda()
    exact = scatter(idx, rows.double(), base.double())

    def rel(x: torch.Tensor) -> float:
        return float((x.double() - exact).norm() / exact.norm())

    xs = (idx, rows, base)
    program = capture(scatter, *xs)
    print(f"fp64 correctly rounded to bf16   {rel(exact.bfloat16()):.3g}")
    print(f"real eager (CUDA)                {rel(scatter(*xs)):.3g}")
    print(f"real torch.compile (CUDA)        {rel(torch.compile(scatter)(*xs)):.3g}")
    for preset in ("eager-cuda", "inductor-gpu", "eager"):
        (out,) = run_plan(plan(program, preset), xs)
        print(f"emulated {preset:24s}{rel(out):.3g}")


if __name__ == "__main__":
    main()
