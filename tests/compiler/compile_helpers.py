"""Helpers for roundoff.compiler tests: policies with overrides and seeded bf16 inputs."""

from __future__ import annotations

import dataclasses

import torch

from roundoff.policy import get_policy
from roundoff.policy.model import OpOverride, Policy


def eager() -> Policy:
    return get_policy("eager")


def with_overrides(
    policy: Policy,
    name: str,
    node: dict[str, OpOverride] | None = None,
    op: dict[str, OpOverride] | None = None,
) -> Policy:
    """`policy` with node/op overrides added (what `roundoff blame` emits)."""
    return dataclasses.replace(policy, name=name, node_overrides=node or {}, op_overrides=op or {})


def bf16_inputs(n: int, count: int, seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n, generator=g).to(torch.bfloat16) for _ in range(count)]


def differing(a: torch.Tensor, b: torch.Tensor) -> float:
    """Fraction of elements whose values differ (NaN == NaN)."""
    both_nan = a.isnan() & b.isnan()
    return ((a != b) & ~both_nan).float().mean().item()


def loop_with_a_graph_break(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """A loop whose body holds a graph break: Dynamo skips the whole frame and runs it eagerly (trial 84's
    research MoE, whose expert loop held one)."""
    total = torch.zeros(8, dtype=x.dtype)
    for i in range(3):
        h = (x[i] @ w).sum(0)
        torch._dynamo.graph_break()
        total = total + h
    return total
