"""Selections that choose other indices than fp64: a discrete decision a rounding can flip.

`topk`, `sort`, `max`/`min` over a dim and `argmax`/`argmin` pick indices from float scores; where the
policy rounds those scores (a bf16 router's logits), near-ties can fall the other way than in fp64,
and everything computed from the other choice differs from fp64 by more than rounding.
"""

from __future__ import annotations

from typing import Any

import torch

_aten = torch.ops.aten

#: Ops that choose indices from float operands.
SELECTIONS = frozenset({
    _aten.topk.default, _aten.sort.default, _aten.sort.stable, _aten.max.dim, _aten.min.dim,
    _aten.argmax.default, _aten.argmin.default,
})


def _indices(value: Any) -> torch.Tensor | None:
    parts = value if isinstance(value, (tuple, list)) else (value,)
    return next((t for t in parts if isinstance(t, torch.Tensor) and not t.is_floating_point()), None)


def differing_indices(policy_value: Any, oracle_value: Any) -> tuple[int, int] | None:
    """(indices the policy's selection chose differently from fp64's, indices in all) of one selection's
    results, or None where they all agree (or are not comparable)."""
    mine, exact = _indices(policy_value), _indices(oracle_value)
    if mine is None or exact is None or mine.shape != exact.shape or not mine.numel():
        return None
    differing = int((mine != exact).sum())
    return (differing, mine.numel()) if differing else None
