"""Plan data: a Policy applied to a Program, one decision per node.

Value model (what ``roundoff.execute`` implements): every floating-point node produces one value in
its `compute_dtype`. A consumer reads a producer's value either as computed, or rounded (RNE) to the
producer's `storage_dtype`; which one is recorded on the consumer (`rounded_inputs`) so that fusion
boundaries, per-op rounding and user casts are all the same mechanism. Graph outputs are always
rounded to their storage dtype.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from roundoff.capture.program import Program
from roundoff.ops.classes import OpClass
from roundoff.policy.model import Negation, Policy

#: FX node kinds whose value is given, not computed: graph inputs and tensor constants (``get_attr``,
#: e.g. ``_tensor_constant0``). Both are stored values in their own dtype; no rounding, no kernel.
STORED_INPUT_OPS = frozenset({"placeholder", "get_attr"})


@dataclass(frozen=True)
class FmaSite:
    """An add/sub that may be computed as one correctly rounded ``fma(a, b, ±c)``.

    `node_id`: the add/sub; `mul_id`: the multiply folded into it, or a division ``a / b`` computed
    as ``a * R`` with ``R`` an approximate reciprocal of ``b`` (``Division.RECIPROCAL_MULTIPLY``; the
    site is then ``fma(a, R, ±c)``); `operand`: which argument of the add/sub (0 or 1) the product is; `contracted`: the plan's choice; `alternatives`: other multiplies
    the backend could have folded instead (recorded where its choice is ambiguous).
    """

    node_id: str
    mul_id: str
    operand: int
    contracted: bool
    alternatives: tuple[str, ...] = ()


@dataclass(frozen=True)
class FusionGroup:
    """One kernel of the backend's fusion model: the nodes computed in it, in graph order."""

    id: int
    kind: str  # "pointwise", "reduction", "extern", "single"
    node_ids: tuple[str, ...]


@dataclass(frozen=True)
class NodeDecision:
    """How one node computes under the plan.

    `storage_dtype`: dtype the program gives the node's result (after the policy's `storage`
    promotion). `compute_dtype`: dtype the arithmetic is done in. `rounds_result`: the result is
    rounded to `storage_dtype` as it is produced, so every consumer sees the rounded value.
    `rounded_inputs`: ids of producers whose values this node reads rounded to their storage dtype
    (fusion boundaries). `scalar_format`: format Python-scalar operands are rounded to first (None:
    unrounded). `input_format`: format tensor operands are rounded to before computing (matmul
    autocast downcast, STORAGE compute); None leaves them as read. `fma`: set when this node is
    computed as a contracted FMA. `negation`: on a floating-point ``aten.neg``, how ``-x`` is
    computed (``Negation``: sign flip or ``0.0 - x``); None on every other node. `gemm`: on an add
    computed inside a matmul's GEMM (``MatmulAdd.ADDMM``), that matmul's id: the add is ``addmm(x, a, b)``
    of its other operand and the matmul's operands, one fp32 accumulation rounded once.
    """

    node_id: str
    op: str
    op_class: OpClass
    storage_dtype: torch.dtype | None
    compute_dtype: torch.dtype | None
    rounds_result: bool
    group: int | None = None
    rounded_inputs: frozenset[str] = frozenset()
    scalar_format: str | None = None
    input_format: str | None = None
    fma: FmaSite | None = None
    source: str | None = None
    negation: Negation | None = None
    gemm: str | None = None


@dataclass(frozen=True)
class Plan:
    """Program x Policy: per-node decisions, kernel groups, FMA sites and unmodeled ops.

    `program` is the program as planned (after the policy's decompositions and CSE), so every id in
    `decisions` is one of its nodes; `cse` maps ids the backend's CSE merged away to the id kept;
    `copies` maps the id of a per-kernel copy of a recomputed node (``"n6@k1"``, see
    ``roundoff.plan.remat``) to the original node's id.
    """

    program: Program
    policy: Policy
    decisions: dict[str, NodeDecision]
    groups: tuple[FusionGroup, ...] = ()
    fma_sites: tuple[FmaSite, ...] = ()
    unmodeled: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    cse: dict[str, str] = field(default_factory=dict)
    copies: dict[str, str] = field(default_factory=dict)
