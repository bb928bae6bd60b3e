"""Ordered comparisons that decide a branch (a ReLU's mask in its backward, ``where(x > t, a, b)``), and
their flips at near ties.

Where fp64 holds an operand within a rounding of the threshold, a 16-bit run falls on either side by
the luck of its roundings (its summation order included, which the emulation does not reproduce for
every compiled reduction): a ReLU's backward then passes or drops one gradient element, which moves a
weight gradient by that element's size, far more than rounding (trial 79: one flipped mask element of a
CNN's last block made an fp16 BatchNorm weight gradient 3.3x the reference's error, where the real
compiled program did not flip it). Such a flip is a discrete decision near a tie, not the policy's
arithmetic: `near_tie_flip` finds it, and `pinned_outputs` runs the emulated sides again with fp64's
decisions at those comparisons, so that the verdict compares arithmetic with arithmetic.

A flip is near a tie where fp64's margin ``|a - t|`` at every element the policy decides otherwise is
within the reference's own largest error of ``a - t`` at that comparison: the reference could have
fallen on the other side there as well. A comparison whose operand the policy computes worse (a bf16
score where the reference keeps fp32) flips where the reference's error cannot reach: not near a tie,
a finding as before.

Numeric contract: none of its own; margins and errors are fp64 differences of the sides' values.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from roundoff.capture.program import NODE_ID, Program
from roundoff.execute.interpreter import Lockstep

_aten = torch.ops.aten

#: Ordered comparisons of float values: a threshold's two sides (`selections.COMPARISONS` holds equality).
ORDERED = frozenset(getattr(getattr(_aten, op), overload)
                    for op in ("lt", "le", "gt", "ge") for overload in ("Tensor", "Scalar"))


@dataclass(frozen=True)
class DecisionFlip:
    """An ordered comparison the policy decided otherwise than fp64 at `differing` of `of` elements, each
    within the reference's error of the threshold; `reference_differing`: where the reference did."""

    node_id: str
    differing: int
    of: int
    reference_differing: int


def is_decision(node: torch.fx.Node) -> bool:
    """Whether `node` is an ordered comparison with a float tensor operand."""
    return node.op == "call_function" and node.target in ORDERED and any(
        isinstance(v := a.meta.get("val"), torch.Tensor) and v.is_floating_point() for a in node.all_input_nodes)


def _margin(node: torch.fx.Node, read: Callable[[torch.fx.Node], Any]) -> torch.Tensor | None:
    """``a - t`` of comparison `node` in fp64 as one side holds its operands (None where not tensors)."""
    a, t = (read(x) if isinstance(x, torch.fx.Node) else x for x in node.args[:2])
    if not isinstance(a, torch.Tensor):
        return None
    return a.double() - (t.double() if isinstance(t, torch.Tensor) else float(t))


def near_tie_flip(node: torch.fx.Node, vals: tuple, readers: Sequence[Callable[[torch.fx.Node], Any]],
                  policy: int, oracle: int, reference: int) -> DecisionFlip | None:
    """The `DecisionFlip` of comparison `node` (`vals`: its value per side, `readers`: each side's reader
    of other nodes), or None where the policy decides as fp64 everywhere or some element it decides
    otherwise lies beyond the reference's error of the threshold (module doc)."""
    mine, exact, ref = vals[policy], vals[oracle], vals[reference]
    if not all(isinstance(v, torch.Tensor) and v.dtype == torch.bool for v in (mine, exact, ref)):
        return None
    differ = mine != exact
    if not bool(differ.any()):
        return None
    exact_margin, ref_margin = _margin(node, readers[oracle]), _margin(node, readers[reference])
    if exact_margin is None or ref_margin is None or exact_margin.shape != ref_margin.shape:
        return None
    error = (ref_margin - exact_margin).abs()
    reach = error[error.isfinite()].amax() if bool(error.isfinite().any()) else None
    margin = torch.broadcast_to(exact_margin.abs(), differ.shape)[differ]
    if reach is None or not bool((margin <= reach).all()):
        return None
    return DecisionFlip(node.meta.get(NODE_ID, node.name), int(differ.sum()), differ.numel(), int((ref != exact).sum()))


def pinned_outputs(program: Program, sides: Sequence[Any], inputs: Sequence[Any], node_ids: Collection[str],
                   oracle: int) -> tuple:
    """Every side's outputs of `program` run again with each comparison of `node_ids` given fp64's
    decisions on every side (the caller checks the program draws no random numbers)."""
    pinned = {n for n in program.graph.nodes if n.meta.get(NODE_ID, n.name) in node_ids}

    def substitute(n: torch.fx.Node, vals: tuple, _ls: Lockstep) -> tuple | None:
        return tuple(vals[oracle] for _ in vals) if n in pinned else None

    with torch.inference_mode():
        return tuple(Lockstep(program, sides, on_node=substitute).run_inputs(inputs))
