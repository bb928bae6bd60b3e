"""A 16-bit LayerNorm's gradients: real eager against fp64, beside roundoff's emulated eager.

Eager CPU's ``native_layer_norm_backward`` with bf16/fp16 input adds each row's term of the weight and
bias gradients into a 16-bit buffer (a rounding per row); the "eager" preset runs that kernel. On
CUDA the kernel accumulates those sums in fp32 ("eager-cuda" sums in fp32 and rounds once). Prints,
per device, dtype and gradient, the error against fp64 as a multiple of fp64 correctly rounded to
the dtype, for real eager and for the emulation, and whether the two are bit-identical.

    python bench/layer_norm_storage.py [--device cpu|cuda] [--rows 8192]
"""

from __future__ import annotations

import argparse

import torch

from roundoff.capture import capture
from roundoff.execute.run import run_plan
from roundoff.plan import plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--rows", type=int, default=8192)
    args = parser.parse_args()
    preset = "eager-cuda" if args.device == "cuda" else "eager"
    g = torch.Generator().manual_seed(0)
    x32 = torch.randn(args.rows, 64, generator=g) * 3 + 1
    w32, b32 = torch.rand(64, generator=g) + 0.5, torch.randn(64, generator=g) * 0.1

    def step(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.layer_norm(x, (64,), w, b).float().square().sum()

    def grads(dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
        x, w, b = (t.to(dtype).to(args.device).requires_grad_() for t in (x32, w32, b32))
        return torch.autograd.grad(step(x, w, b), (x, w, b))

    exact = grads(torch.float64)
    print(f"device {args.device}, {args.rows} rows x 64, preset {preset}, torch {torch.__version__}")
    for dtype in (torch.float16, torch.bfloat16):
        real = grads(dtype)
        xs = tuple(t.to(dtype).to(args.device).requires_grad_() for t in (x32, w32, b32))
        program = capture(step, *xs, backward=True)
        labels = program.output_labels()
        emulated = run_plan(plan(program, preset), program.example_inputs)
        for name, r, e in zip(("grad_x", "grad_w", "grad_b"), real, exact):
            emu = emulated[labels.index(name)]
            floor = float((e.to(dtype).double() - e).norm())
            print(f"{str(dtype)[6:]:9s} {name:7s} real eager {float((r.double() - e).norm()) / floor:8.2f}x  "
                  f"emulated {float((emu.double() - e).norm()) / floor:8.2f}x  "
                  f"elements differing {int((emu.view(torch.int16) != r.view(torch.int16)).sum())} of {r.numel()}")


if __name__ == "__main__":
    main()
