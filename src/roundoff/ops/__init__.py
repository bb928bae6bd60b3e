"""roundoff.ops: aten op -> op class and torch's type-promotion kind.

``classify(target)`` accepts any FX node target; unknown ops are ``OpClass.UNMODELED``.
"""

from roundoff.ops.classes import OpClass, OpInfo
from roundoff.ops.classify import base_name, classify, op_name, short_name
from roundoff.ops.promotion import promotion_kind
from roundoff.ops.table import LITERAL_CLASSES
from roundoff.ops.universe import core_aten_ops, inductor_decomposition_ops, prims_ops

__all__ = [
    "LITERAL_CLASSES",
    "OpClass",
    "OpInfo",
    "base_name",
    "classify",
    "core_aten_ops",
    "inductor_decomposition_ops",
    "op_name",
    "prims_ops",
    "promotion_kind",
    "short_name",
]
