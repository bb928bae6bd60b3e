"""Values a 16-bit run cannot be judged by the usual rule: values fp64 holds only as noise (0 by the
model's structure), and wide values that overflow only where a kernel boundary stores them.

Numeric contract: none of its own; every figure here is read from fp64's value of a node (`exact`),
the policy's, or fp64's evaluation of the node with some operands replaced by 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from typing import Any

import torch
import torch.fx

from roundoff.analyze.metrics import Metrics
from roundoff.execute.formats import is_float
from roundoff.execute.node_numerics import OracleNumerics
from roundoff.numerics import get_format, round_to


def stored_overflow(value: torch.Tensor, exact: torch.Tensor, dtype: torch.dtype) -> int:
    """The elements of `value`, held wider than its storage `dtype` (a kernel keeps it in fp32), that
    turn +-inf when stored in `dtype` where fp64 correctly rounded to `dtype` does too (the format's
    overflow)."""
    big = value.isfinite() & (value.abs() > torch.finfo(dtype).max)
    if not bool(big.any()):
        return 0
    fmt = get_format(dtype)
    return int((round_to(value[big], fmt).isinf() & round_to(exact[big], fmt).isinf()).sum())


def overflows_format(absmax: float, dtype: torch.dtype) -> bool:
    """Whether a value whose largest finite fp64 magnitude is `absmax` holds an element `dtype` cannot:
    fp64 correctly rounded to `dtype` is +-inf there (what reads it stored in `dtype` reads inf)."""
    return bool(round_to(torch.tensor(absmax, dtype=torch.float64), get_format(dtype)).isinf())


def stored_overflow_count(value: torch.Tensor, exact: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """`stored_overflow` as a device count, not read (every element rounded: no data-dependent branch)."""
    big = value.isfinite() & (value.abs() > torch.finfo(dtype).max)
    fmt = get_format(dtype)
    return (big & round_to(value, fmt).isinf() & round_to(exact, fmt).isinf()).sum()


def overflowed_reads(shape: torch.Size, reads: Collection[tuple[torch.Tensor, torch.dtype]]) -> torch.Tensor | None:
    """The elements of a pointwise result of `shape` that read an operand fp64 holds finite where its
    value as read, fp64 correctly rounded to the read format, is +-inf (`reads`: each such operand's
    fp64 value and that format); None where none does or an operand does not broadcast to `shape`. What
    the op makes there (``x / inf = 0``, ``inf / inf = NaN``) is the operand format's overflow, not the
    op's own error."""
    mask = None
    for exact, dtype in reads:
        over = exact.isfinite() & round_to(exact, get_format(dtype)).isinf()
        if not bool(over.any()):
            continue
        try:
            over = torch.broadcast_to(over, shape)
        except RuntimeError:
            return None
        mask = over if mask is None else mask | over
    return mask


def noise_size(exact: torch.Tensor, own: Metrics) -> float:
    """What a value fp64 holds only as noise is held to: the larger of its RMS and of its `own` error."""
    finite = exact[exact.isfinite()]
    return max(float(finite.double().square().mean().sqrt()), own.rmse) if finite.numel() else 0.0


def unlike(res: object, exact: object) -> bool:
    """Whether float `res` is at least as far from fp64's `exact` as `exact` is from 0 (normwise, finite
    elements; all 0 is as far), where `exact` is not all 0."""
    norms = unlike_norms(res, exact)
    return norms is not None and unlike_from([float(x) for x in norms])


def unlike_norms(res: object, exact: object) -> torch.Tensor | None:
    """`unlike`'s two norms (fp64's, and the distance), not read; None where `unlike` is False whatever
    the values (not two float tensors of one shape)."""
    if not (is_float(res) and is_float(exact)) or res.shape != exact.shape:
        return None
    both = res.isfinite() & exact.isfinite()
    e = exact.double().masked_fill(~both, 0.0)
    return torch.stack([e.norm(), (res.double().masked_fill(~both, 0.0) - e).norm()])


def unlike_from(norms: list[float]) -> bool:
    """`unlike` from `unlike_norms` read."""
    size, distance = norms
    return size > 0 and distance >= size


def rms_of(m: Metrics) -> float:
    """The RMS of the fp64 values `m` compares with (from its RMSE and normwise relative error)."""
    return m.rmse / m.norm_rel if 0.0 < m.norm_rel < math.inf else (0.0 if m.norm_rel == math.inf else math.inf)


def fp64_without(node: torch.fx.Node, read: Callable[[torch.fx.Node], Any], noise: Collection[torch.fx.Node]) -> Any:
    """fp64's value of `node` with each float operand in `noise` read as 0 (`read`: fp64's values)."""
    return OracleNumerics().evaluate(node, lambda p: torch.zeros_like(v) if p in noise and is_float(v := read(p))
                                     else read(p))


def all_zero(value: Any) -> bool:
    """Whether float `value` is 0 at every finite element."""
    return is_float(value) and not bool((value[value.isfinite()] != 0).any())
