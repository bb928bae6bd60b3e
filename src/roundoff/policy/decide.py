"""Pure decisions from a Policy: which override applies to a node, and in what it computes.

Resolution order for overrides, most specific first, field by field: node id > overload
(``"aten.mul.Tensor"``) > packet (``"aten.mul"``) > the policy's class defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from roundoff.numerics import get_format, opmath_dtype
from roundoff.ops.classes import OpClass
from roundoff.policy.model import (
    ComputePrecision,
    FmaContraction,
    FusionModel,
    OpOverride,
    Policy,
    RoundingPoint,
    ScalarMixing,
)


def _packet_of(op_name: str) -> str | None:
    parts = op_name.split(".")
    return ".".join(parts[:2]) if len(parts) == 3 else None


def override_for(policy: Policy, op_name: str, node_id: str | None = None) -> OpOverride:
    """The merged override for one node: each field from the most specific level that sets it.

    `op_name` is ``"namespace.op.overload"`` (as ``roundoff.ops.op_name`` prints) or a packet name.
    Returns an empty OpOverride when nothing applies.
    """
    levels: list[OpOverride] = []
    if node_id is not None and node_id in policy.node_overrides:
        levels.append(policy.node_overrides[node_id])
    if op_name in policy.op_overrides:
        levels.append(policy.op_overrides[op_name])
    packet = _packet_of(op_name)
    if packet is not None and packet in policy.op_overrides:
        levels.append(policy.op_overrides[packet])

    def first(field: str) -> object:
        return next((getattr(o, field) for o in levels if getattr(o, field) is not None), None)

    return OpOverride(
        compute=first("compute"),  # type: ignore[arg-type]
        round_result=first("round_result"),  # type: ignore[arg-type]
        contract_fma=first("contract_fma"),  # type: ignore[arg-type]
        scalars=first("scalars"),  # type: ignore[arg-type]
    )


def scalar_mixing(policy: Policy, op_name: str, node_id: str | None = None) -> ScalarMixing:
    """How this node's Python-scalar operands meet its tensors: the override, else ``policy.scalars``."""
    override = override_for(policy, op_name, node_id)
    return override.scalars if override.scalars is not None else policy.scalars


def compute_precision(
    policy: Policy, op_name: str, op_class: OpClass, node_id: str | None = None
) -> ComputePrecision:
    """Whether this node computes in opmath (fp32 for low-precision storage) or in storage.

    Overrides first (see ``override_for``), then ``policy.compute[op_class]``. Classes that do no
    arithmetic (data movement, casts, comparisons, ...) compute in STORAGE: exact either way.
    """
    override = override_for(policy, op_name, node_id)
    if override.compute is not None:
        return override.compute
    return policy.compute.get(op_class, ComputePrecision.STORAGE)


def storage_dtype(policy: Policy, program_dtype: torch.dtype) -> torch.dtype:
    """The dtype a floating tensor is stored in under `policy` (``storage`` promotes all floats)."""
    if policy.storage is None or not program_dtype.is_floating_point:
        return program_dtype
    return get_format(policy.storage).storage_dtype


def compute_dtype(precision: ComputePrecision, storage: torch.dtype) -> torch.dtype:
    """fp32 for OPMATH over a low-precision storage dtype (torch's ``at::opmath_type``), else storage."""
    return opmath_dtype(storage) if precision is ComputePrecision.OPMATH else storage


@dataclass(frozen=True)
class ClassPrecision:
    """What a policy does to one op class at one storage dtype (the golden-table cell).

    `rounding`: where an opmath result is rounded to storage (STORAGE compute rounds at once, as
    EVERY_OP). `fma`: an add/sub of this class may be contracted with a multiply feeding it.
    """

    compute_dtype: torch.dtype
    rounding: RoundingPoint
    fma: bool


def class_precision(
    policy: Policy, op_class: OpClass, program_dtype: torch.dtype
) -> ClassPrecision:
    """The class-level decision (no overrides) for ops of `op_class` on `program_dtype` tensors."""
    storage = storage_dtype(policy, program_dtype)
    precision = policy.compute.get(op_class, ComputePrecision.STORAGE)
    rounding = policy.rounding if precision is ComputePrecision.OPMATH else RoundingPoint.EVERY_OP
    if policy.fusion is FusionModel.NONE:
        rounding = RoundingPoint.EVERY_OP
    fma = (
        op_class is OpClass.POINTWISE_ARITHMETIC
        and policy.fma is FmaContraction.WITHIN_FUSION
        and policy.fusion is not FusionModel.NONE
    )
    return ClassPrecision(compute_dtype(precision, storage), rounding, fma)


def matmul_input_dtype(policy: Policy, program_dtype: torch.dtype) -> torch.dtype:
    """dtype matmul-like operands are read in: ``matmul_input`` if set, else as stored."""
    if policy.matmul_input is not None:
        return get_format(policy.matmul_input).storage_dtype
    return storage_dtype(policy, program_dtype)


__all__ = [
    "ClassPrecision",
    "class_precision",
    "compute_dtype",
    "compute_precision",
    "matmul_input_dtype",
    "override_for",
    "scalar_mixing",
    "storage_dtype",
]
