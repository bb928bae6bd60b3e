"""Errors an op makes only by amplifying the rounding of what it reads: not the op's own defect.

A node whose error against fp64, recomputed from its operands as it reads them, is beyond the limit
may owe it all to the operands' format: a ``cos`` of positions held in bf16, an ``exp`` of fp32
logits near 30. Where a 16-bit operand's rounding alone makes it (`amplified_read`), the operand's
producer is named first; where fp32 operands' rounding does (`fp32_own_excess`), the node is judged
against that rounding, which no format short of fp64 avoids.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from roundoff.analyze.metrics import Metrics, measure
from roundoff.analyze.output_floor import operand_floor
from roundoff.analyze.verdict import EXCESS_LIMIT, excess, new_nonfinite
from roundoff.capture.program import NODE_ID
from roundoff.execute.formats import is_float
from roundoff.numerics import round_to
from roundoff.ops.classes import OpClass

Read = Callable[[torch.fx.Node], Any]


def amplified_read(side: Any, node: torch.fx.Node, read: Read, oracle: torch.Tensor, dtype: torch.dtype,
                   floor_work: float, work: torch.dtype, terms: float) -> str | None:
    """The producer of a bf16/fp16-stored operand whose rounding `node` amplifies beyond the limit:
    `node` recomputed by the plan's numerics `side` from its fp64 operands *unrounded* (``fresh=False``:
    its own arithmetic and output rounding only) is within `EXCESS_LIMIT` of its working format.
    None otherwise."""
    narrow = [p for p in node.all_input_nodes
              if p.op == "call_function" and side.storage(p) in (torch.bfloat16, torch.float16)]
    if not narrow:
        return None
    try:
        wide = side.evaluate(node, read, fresh=False)
    except (RuntimeError, TypeError, ValueError):  # an op that takes its operands in their stored format only
        return None
    if not is_float(wide) or wide.shape != oracle.shape:
        return None
    m = measure(wide, oracle, dtype)
    if new_nonfinite(wide, oracle) or excess(m, floor_work, work, terms) > EXCESS_LIMIT:
        return None
    src = max(narrow, key=lambda p: _rounding_loss(read(p), side.storage(p))) if len(narrow) > 1 else narrow[0]
    # through views (a bf16 position vector unsqueezed on both sides of a sub)
    while (src.op == "call_function" and src.args and isinstance(src.args[0], torch.fx.Node)
           and (d := side.decision(src)) is not None and d.op_class is OpClass.DATA_MOVEMENT):
        src = src.args[0]
    return src.meta.get(NODE_ID, src.name)


def _rounding_loss(value: Any, dtype: torch.dtype) -> float:
    """The normwise relative error of fp64 `value` correctly rounded to `dtype`: which of several 16-bit
    operands loses the most to its format (a subnormal variance beside an ordinary numerator)."""
    if not is_float(value) or not value.numel():
        return 0.0
    x = value.double()
    x = x[x.isfinite()]
    scale = float(x.norm())
    return float((round_to(x, dtype).double() - x).norm()) / scale if scale > 0 else 0.0


def fp32_own_excess(side: Any, node: torch.fx.Node, read: Read, oracle: torch.Tensor, dtype: torch.dtype,
                    local: Metrics, floor_work: float, work: torch.dtype, terms: float) -> float | None:
    """For a node that reads and stores fp32 or wider and is no FMA site: its local excess against the
    error its operands' fp32 rounding alone gives it (`output_floor.operand_floor` in fp32), where
    that is within `EXCESS_LIMIT`; else None."""
    d = side.decision(node)
    formats = [side.storage(p) for p in node.all_input_nodes] + [dtype]
    if (d is not None and d.fma is not None) or any(
            isinstance(f, torch.dtype) and f.is_floating_point and f.itemsize < 4 for f in formats):
        return None
    (held,) = operand_floor(node, oracle, read, torch.float32)
    finite = int(oracle.isfinite().sum())
    if not finite or not held:
        return None
    own = excess(local, floor_work, work, max(terms, held / finite**0.5))
    return own if own <= EXCESS_LIMIT else None
