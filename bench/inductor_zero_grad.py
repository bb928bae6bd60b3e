"""Trial 80's torch.compile defect on CPU: the gradient of a strided conv before a nearest upsample and a
concatenation, exactly 0 under torch.compile in fp16/bf16 (torch 2.13's CPU Inductor), eager's and fp32's not;
and what `roundoff observe` says of it.

    PYTHONPATH=$PWD/src:$PWD python bench/inductor_zero_grad.py
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch._inductor import config

from roundoff.observed import observe_compiled


def _net(dtype: torch.dtype) -> tuple[torch.nn.Module, ...]:
    torch.manual_seed(0)
    return tuple(m.to(dtype) for m in (torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.Conv2d(32, 64, 3, stride=2, padding=1),
                                       torch.nn.Conv2d(96, 32, 3, padding=1), torch.nn.Conv2d(96, 32, 1)))


def _loss_of(a: torch.nn.Module, p: torch.nn.Module, c: torch.nn.Module, skip: torch.nn.Module):  # type: ignore[no-untyped-def]
    def loss(x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        h = a(x)
        z = torch.cat([F.interpolate(p(h), scale_factor=2, mode="nearest"), h], 1)
        return F.mse_loss(c(F.silu(z)) + skip(z), target)

    return loss


def main() -> None:
    print(f"torch {torch.__version__}")
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        a, p, c, skip = _net(dtype)
        loss = _loss_of(a, p, c, skip)

        g = torch.Generator().manual_seed(1)
        x, t = torch.randn(2, 3, 16, 16, generator=g).to(dtype), torch.randn(2, 32, 16, 16, generator=g).to(dtype)
        norms = {}
        for name, fn, patch in (("eager", loss, {}), ("torch.compile", torch.compile(loss), {}),
                                ("max_fusion_size=1", torch.compile(loss), {"max_fusion_size": 1})):
            torch._dynamo.reset()
            p.bias.grad = None
            with config.patch(patch):
                fn(x, t).backward()
            norms[name] = float(p.bias.grad.float().norm())
        result = observe_compiled(loss, x, t, backward=True, partitioned=True, torch_compiled=True, repeats=1)
        wrong = [o.name for o in result.torch_compile if o.fails]
        print(f"{str(dtype).removeprefix('torch.'):9s} |grad p.bias| " + ", ".join(f"{k} {v:.6g}" for k, v in norms.items())
              + f"; observe: {'diverges' if result.diverges else 'ok'}, torch.compile's outputs wrong: "
              f"{len(wrong)} ({', '.join(wrong[:3])}{', ...' if len(wrong) > 3 else ''})")


if __name__ == "__main__":
    main()
