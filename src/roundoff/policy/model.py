"""Policy data: one backend's precision rules as frozen, declarative values.

A Policy says, for a program whose tensors are stored in a low-precision format (bf16, fp16, fp8),
in which dtype each op computes, where results are rounded back to the storage dtype, whether
``a*b + c`` is contracted into one correctly rounded FMA, whether ``a / b`` is correctly rounded or a
multiply by an approximate reciprocal (itself an FMA candidate), and how matmuls and reductions
accumulate.
Decisions derived from it are pure functions of (node, policy): see ``roundoff.plan``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from roundoff.ops.classes import OpClass


class ComputePrecision(enum.Enum):
    """Dtype an op computes in when its operands are stored in a low-precision format."""

    OPMATH = "opmath"  # upcast to fp32 (torch's at::opmath_type), compute, round per `rounding`
    STORAGE = "storage"  # operands rounded to the storage dtype, result rounded to it at once


class RoundingPoint(enum.Enum):
    """Where an opmath result is rounded back to its storage dtype."""

    EVERY_OP = "every_op"  # eager PyTorch: after every op
    FUSION_BOUNDARY = "fusion_boundary"  # only where a value leaves a fused kernel; user casts dropped
    FUSION_BOUNDARY_HONOR_CASTS = "fusion_boundary_honor_casts"  # as above, but user-written casts kept


class FusionModel(enum.Enum):
    """How the backend groups ops into kernels (see ``roundoff.plan.fusion`` for the exact model)."""

    NONE = "none"  # one kernel per op (eager)
    POINTWISE = "pointwise"  # pointwise chains and reduction prologues fuse; extern ops stand alone
    # as POINTWISE, plus the C++ backend's realize-on-reuse rule: a multi-use pointwise value whose
    # fused computation calls exp/log/sigmoid/tanh (Inductor's "heavy ops") is stored
    POINTWISE_CPP = "pointwise_cpp"
    # as POINTWISE, plus Triton's reduction kernels: a reduction fuses the pointwise kernels that compute
    # its operand or read its result, and reductions of its shape (``roundoff.plan.triton_kernels``)
    POINTWISE_TRITON = "pointwise_triton"


class FmaContraction(enum.Enum):
    """Whether a multiply feeding an add/sub in the same kernel becomes one FMA."""

    NEVER = "never"
    WITHIN_FUSION = "within_fusion"


class Division(enum.Enum):
    """How fp32 (opmath) ``a / b`` is computed (``aten.div`` without ``rounding_mode``).

    IEEE: one correctly rounded quotient (eager PyTorch, Inductor's C++ backend, ``div_rn``).
    RECIPROCAL_MULTIPLY: ``a * R`` with ``R`` an approximate reciprocal of ``b``, as Triton's
    ``div.full.f32`` (SASS on an H200: ``MUFU.RCP`` then ``FMUL``; operands pre-scaled by 1/4 when
    ``|b| > 2**126`` and by ``2**24`` when ``|b| < 2**-126``). Its product is an FMA candidate
    (``roundoff.plan.fma``) when the quotient's only use is an add/sub in the same kernel: ptxas
    contracts the multiply of the expansion into that add/sub (measured: ``c - a/b`` equals
    ``fma(-a, R, c)`` in 4 x 2**24 of 4 x 2**24 elements, bench/results/gpu_div_contraction.txt).
    """

    IEEE = "ieee"
    RECIPROCAL_MULTIPLY = "reciprocal_multiply"


class Negation(enum.Enum):
    """How a floating-point ``aten.neg`` computes ``-x``; the two differ only for ``x = +0.0``.

    SIGN_FLIP: IEEE negate, flips the sign bit: ``-(+0.0) = -0.0`` (eager PyTorch; Inductor's C++
    code, ``CppVecOverrides.neg`` -> ``x.neg()`` and ``CppOverrides.neg`` -> ``decltype(x)(-x)``).
    SUBTRACT_FROM_ZERO: ``0.0 - x`` rounded to nearest, so ``-(+0.0) = +0.0`` (``-(-0.0) = +0.0``
    either way; NaN stays NaN): Inductor's Triton code writes ``-tmp`` (``TritonOverrides``
    inherits ``BasicMathOpsMixin.neg`` -> ``f"-{x}"``, torch/_inductor/ops_handler.py, torch
    2.11-2.13) and Triton's frontend lowers a float unary minus to ``sub(0, x)``
    (``semantic.minus``: ``sub(_0, input)`` with ``_0`` the type's null value), which LLVM may not
    turn into ``fneg`` (that needs no-signed-zeros). Not an Inductor graph rewrite: the generated
    code keeps ``x1 - x1`` and the ``where`` as written. Measured on an H200 (torch 2.11, Triton
    3.6): ``-where(x0 > x1 - x1, x0, x1 - x1)`` gives +0.0 where eager gives -0.0.
    Not modelled: where ptxas contracts ``0 - a*b`` into ``fma(-a, b, 0)`` the two differ again
    only in the sign of a product that underflows to zero.
    """

    SIGN_FLIP = "sign_flip"
    SUBTRACT_FROM_ZERO = "subtract_from_zero"


class MatmulAdd(enum.Enum):
    """How ``mm(a, b) + x`` is computed, where the 2-D matmul's one use is that add.

    SEPARATE: the matmul's result is rounded to its storage format, then added and rounded again
    (eager PyTorch; every backend that runs the add as a pointwise op).
    ADDMM: one GEMM, ``addmm(x, a, b)``: ``x`` joins the product in the GEMM's fp32 accumulator and the
    sum is rounded once (Inductor's post-grad pattern ``addmm``, ``torch/_inductor/fx_passes/post_grad.py``,
    torch 2.9-2.13, on CPU, where ``should_prefer_unfused_addmm`` is false). It applies to an
    ``aten.add.Tensor`` without ``alpha`` of an ``aten.mm`` with no other use and a tensor ``x`` of the
    matmul operands' dtype that broadcasts to the product's shape; ``add(x, mm)`` is tried before
    ``add(mm, x)``. Measured on CPU (torch 2.13, ``bench/gpu/session29_addmm.py --device cpu``): real
    torch.compile equals eager's ``addmm`` bit for bit in bf16, fp16 and fp32, where ``mm`` then ``add``
    differs in 15-36% of the bytes. A 3-D linear (``view``, ``mm``, ``view``, ``add``) is no match.
    """

    SEPARATE = "separate"
    ADDMM = "addmm"


class ScalarMixing(enum.Enum):
    """How a Python scalar operand meets a low-precision tensor."""

    OPMATH_UNROUNDED = "opmath_unrounded"  # torch: the scalar enters the fp32 computation unrounded
    ROUND_TO_STORAGE = "round_to_storage"  # JAX weak types / XLA: scalar rounded to bf16 first


@dataclass(frozen=True)
class OpOverride:
    """Per-op (or per-node) exceptions to a policy; None leaves the policy's choice in force.

    `round_result`: True forces the result to be rounded to its storage dtype even inside a fused
    kernel; False keeps it in the compute dtype for its direct consumers, in its kernel and in every
    other (a kernel boundary stores it in the compute dtype); a graph output is still rounded.
    `contract_fma`: for an add/sub that is an FMA candidate, force (True) or forbid (False) contraction.
    `scalars`: how this op's Python-scalar operands (and float keyword arguments such as ``alpha``)
    meet a low-precision tensor, replacing ``Policy.scalars`` for it (eager CPU rounds the scalar of
    add/sub/rsub to bf16/fp16 first but keeps mul/div's unrounded).

    `compute` on a matmul-like op (matmul, convolution, attention): OPMATH keeps its operands as
    stored (no ``Policy.matmul_input`` autocast downcast; fp32 accumulation per
    ``matmul_accumulate``); STORAGE reads them rounded to the storage format, or to
    ``matmul_input`` when the policy sets one. An OPMATH override is how one matmul is taken out of
    an autocast policy.
    """

    compute: ComputePrecision | None = None
    round_result: bool | None = None
    contract_fma: bool | None = None
    scalars: ScalarMixing | None = None

    def is_empty(self) -> bool:
        return (
            self.compute is None
            and self.round_result is None
            and self.contract_fma is None
            and self.scalars is None
        )


def _frozen(mapping: Mapping | None) -> Mapping:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Policy:
    """One backend's numerics. All fields are plain data; see the enums above for meanings.

    `storage`: None keeps the program's own dtypes; a format name (``"fp32"``, ``"fp64"``) promotes
    every floating-point tensor of the program to that format (the fp32 and fp64 reference runs).
    `matmul_input`: None computes matmul-like ops on operands as stored; a format name rounds
    (autocast-style downcast) or upcasts the operands to that format first.
    `division`: IEEE or approximate (reciprocal-multiply) fp32 division; see `Division`.
    `negation`: ``-x`` as a sign flip or as ``0.0 - x`` (differ at ``+0.0``); see `Negation`.
    `matmul_add`: ``mm(a, b) + x`` as a rounded matmul then an add, or as one ``addmm``; see `MatmulAdd`.
    `matmul_accumulate` / `reduction_accumulate`: format the accumulation is modelled in; the result
    is rounded once to the output's storage dtype.
    `op_overrides` keys are aten names, an overload (``"aten.mul.Tensor"``) or a packet (``"aten.mul"``);
    `node_overrides` keys are stable node ids from ``roundoff.capture``.
    """

    name: str
    description: str
    source: str
    compute: Mapping[OpClass, ComputePrecision]
    rounding: RoundingPoint
    fusion: FusionModel
    fma: FmaContraction
    scalars: ScalarMixing = ScalarMixing.OPMATH_UNROUNDED
    division: Division = Division.IEEE
    negation: Negation = Negation.SIGN_FLIP
    matmul_add: MatmulAdd = MatmulAdd.SEPARATE
    storage: str | None = None
    matmul_input: str | None = None
    matmul_accumulate: str = "fp32"
    reduction_accumulate: str = "fp32"
    decompositions: tuple[str, ...] = ()
    op_overrides: Mapping[str, OpOverride] = field(default_factory=dict)
    node_overrides: Mapping[str, OpOverride] = field(default_factory=dict)
    # the program `node_overrides` were made for (its name and graph fingerprint, as ``roundoff
    # blame`` records them): node ids are per program, so another program must not take them
    made_for: str | None = None
    made_for_graph: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "compute", _frozen(self.compute))
        object.__setattr__(self, "op_overrides", _frozen(self.op_overrides))
        object.__setattr__(self, "node_overrides", _frozen(self.node_overrides))
        object.__setattr__(self, "decompositions", tuple(self.decompositions))

    def __hash__(self) -> int:
        return hash(
            (self.name, self.rounding, self.fusion, self.fma, self.division, self.negation, self.storage)
        )
