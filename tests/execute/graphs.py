"""Random pointwise programs for fidelity tests: a recipe is data, so hypothesis can draw and shrink it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from hypothesis import strategies as st

from roundoff.numerics import bits_differ, same_bits

__all__ = ["build", "inputs", "n_differ", "recipes", "same_bits"]
n_differ = bits_differ  # elements whose bit patterns differ (NaN vs NaN: same)

UNARY = ("exp", "log", "tanh", "sigmoid", "rsqrt", "neg")
BINARY = ("add", "sub", "mul", "div")
N_INPUTS = 3

# One step: (op, i, j, scalar): operands are earlier values i, j (or the Python float `scalar`
# when it is not None); "where" selects values[i] or values[j] on values[i] > values[j].
Step = tuple[str, int, int, "float | None"]


@st.composite
def recipes(draw: st.DrawFn, max_steps: int = 8, scalar_ops: tuple[str, ...] = ("mul", "div")) -> list[Step]:
    steps: list[Step] = []
    for k in range(draw(st.integers(1, max_steps))):
        avail = N_INPUTS + k
        op = draw(st.sampled_from(UNARY + BINARY + ("where",)))
        i, j = draw(st.integers(0, avail - 1)), draw(st.integers(0, avail - 1))
        scalar = None
        if op in scalar_ops and draw(st.booleans()):
            scalar = draw(st.sampled_from([0.1, -0.3, 1.7, 2.5, 1e-3, 3.0, 0.180336877703666687]))
        steps.append((op, i, j, scalar))
    return steps


def build(recipe: Sequence[Step]) -> Callable[..., torch.Tensor]:
    """A plain PyTorch function computing `recipe` on three tensors; returns the last value."""

    def fn(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        vals = [a, b, c]
        for op, i, j, scalar in recipe:
            x, y = vals[i], (vals[j] if scalar is None else scalar)
            if op == "where":
                vals.append(torch.where(x > vals[j], x, vals[j]))
            elif op in BINARY:
                vals.append(getattr(torch, op)(x, y))
            else:
                vals.append(getattr(torch, op)(x))
        return vals[-1]

    return fn


def inputs(dtype: torch.dtype, n: int = 512, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """Three tensors of `dtype`: normal values, a few large and tiny ones, exact-representable."""
    g = torch.Generator().manual_seed(seed)
    return tuple((torch.randn(n, generator=g) * torch.exp2(torch.randint(-6, 7, (n,), generator=g).float())).to(dtype) for _ in range(N_INPUTS))
