"""The fusion model's graph: one `FusionNode` per node, independent of FX (tests build graphs of them).

`roundoff.plan.planner` makes the nodes from a planned program (kind, shape, strides, whether the
training step's forward saves the value); `roundoff.plan.realize` decides which values are stored,
`roundoff.plan.fusion` groups them into kernels, `roundoff.plan.loops` models loop nests.
"""

from __future__ import annotations

import enum
from collections.abc import Container, Sequence
from dataclasses import dataclass

#: what separates a kernel's copy of a node from the node's id (``n7@k4``: `roundoff.plan.remat`)
COPY_MARK = "@"


class Kind(enum.Enum):
    """A node's role in the fusion model."""

    INPUT = "input"  # placeholder: a stored value
    FUSIBLE = "fusible"  # pointwise / comparison / cast: inlined into consuming kernels
    VIEW = "view"  # data movement: fusible, or an alias when its operands are stored
    REDUCTION = "reduction"  # prologue fuses into it; ends its kernel
    EXTERN = "extern"  # a kernel of its own, operands read from memory
    ITEM = "item"  # getitem of a multi-output node: computed where its producer is


@dataclass(frozen=True)
class FusionNode:
    """What the fusion model needs of one graph node (independent of FX, so tests can build graphs)."""

    id: str
    kind: Kind
    inputs: tuple[str, ...]  # producer ids, in argument order (duplicates allowed)
    is_output: bool = False  # a graph output (stored)
    op: str = ""  # the op's base name ("exp", "add"): `HEAVY_OPS` decides C++ realization by it
    numel: int = 0  # its element count (0: unknown); pointwise kernels of different counts never merge
    saved: bool = False  # a training step's forward stores it for the backward (`roundoff.plan.saved`)
    #: computed for a training step's backward only: torch.compile compiles the backward apart, so its
    #: reads of a forward value are no reuse in the forward's kernels (the C++ realize-on-reuse rule)
    backward: bool = False
    shape: tuple[int, ...] | None = None  # its value's sizes and strides (None: unknown, or no tensor)
    strides: tuple[int, ...] | None = None
    reduced: tuple[int, ...] | None = None  # a reduction's reduced dims of its first operand (None: unknown)
    #: a reduction Inductor unrolls into a pointwise loop of this many terms (kind FUSIBLE; 0: none)
    terms: int = 0
    #: its Python-number operands (each a constant of the kernel's code: `roundoff.plan.realize` counts ops)
    scalars: tuple[float, ...] = ()


def users_of(nodes: Sequence[FusionNode]) -> dict[str, list[FusionNode]]:
    users: dict[str, list[FusionNode]] = {n.id: [] for n in nodes}
    for n in nodes:
        for p in dict.fromkeys(n.inputs):
            users[p].append(n)
    return users


def inlined(root: FusionNode, by_id: dict[str, FusionNode], stored: Container[str]) -> set[str]:
    """The unstored nodes `root`'s kernel computes with it: its ancestors reached without crossing a stored value."""
    out: set[str] = set()
    stack = [p for p in root.inputs if p not in stored]
    while stack:
        p = stack.pop()
        if p in out:
            continue
        out.add(p)
        stack.extend(q for q in by_id[p].inputs if q not in stored and q not in out)
    return out


def view_bases(n: FusionNode, by_id: dict[str, FusionNode]) -> set[str]:
    """The values a view (an alias of stored memory) reads, through views of views; empty for others."""
    out: set[str] = set()
    todo = [n] if n.kind is Kind.VIEW else []
    while todo:
        for p in todo.pop().inputs:
            if p not in out:
                out.add(p)
                if by_id[p].kind is Kind.VIEW:
                    todo.append(by_id[p])
    return out
