"""Op classes: the coarse numeric behaviour of an aten op, as policies talk about it."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND


class OpClass(enum.Enum):
    """What kind of arithmetic an op does; policies choose precision per class."""

    POINTWISE_ARITHMETIC = "pointwise_arithmetic"  # add, sub, mul, div, neg, abs, ...
    POINTWISE_TRANSCENDENTAL = "pointwise_transcendental"  # exp, log, tanh, sigmoid, rsqrt, pow, ...
    COMPARISON_SELECT = "comparison_select"  # eq, lt, where, maximum, clamp (no rounding of its own)
    REDUCTION = "reduction"  # sum, mean, amax, var, ...
    MATMUL = "matmul"  # mm, bmm, addmm, linear, ...
    CONVOLUTION = "convolution"
    ATTENTION = "attention"  # scaled_dot_product_attention and its fused kernels
    NORMALIZATION = "normalization"  # native_layer_norm, softmax kernels, batch_norm, ...
    DATA_MOVEMENT = "data_movement"  # view, permute, cat, index, expand, clone, ... (exact)
    CAST = "cast"  # _to_copy, convert_element_type: rounds to the target dtype
    RANDOM = "random"  # rand, dropout, ...
    OTHER = "other"  # known ops with no float arithmetic roundoff models (e.g. sym size)
    UNMODELED = "unmodeled"  # ops roundoff does not know: always listed, never guessed

    @property
    def computes(self) -> bool:
        """Whether ops of this class do floating-point arithmetic that a policy can place."""
        return self in _COMPUTING


_COMPUTING = frozenset(
    {
        OpClass.POINTWISE_ARITHMETIC,
        OpClass.POINTWISE_TRANSCENDENTAL,
        OpClass.REDUCTION,
        OpClass.MATMUL,
        OpClass.CONVOLUTION,
        OpClass.ATTENTION,
        OpClass.NORMALIZATION,
    }
)


@dataclass(frozen=True)
class OpInfo:
    """Classification of one aten overload.

    `name` is the overload's qualified name (``"aten.mul.Tensor"``); `promotion` is torch's own
    ``ELEMENTWISE_TYPE_PROMOTION_KIND`` for the op where torch records one, else None.
    """

    name: str
    op_class: OpClass
    promotion: ELEMENTWISE_TYPE_PROMOTION_KIND | None = None
