"""Inductor settings that enforce a Policy, detected on the installed torch (2.9 to 2.13).

Mapping (each knob only where ``torch._inductor.config`` has it; nothing is assumed by version):

- ``rounding=EVERY_OP`` (eager): ``emulate_precision_casts=True``. Inductor then keeps every
  low-precision op's downcast/upcast pair, so each result is rounded (RNE) to its storage dtype as
  eager does, and Triton's FP fusion (FMA contraction by ptxas) is turned off with it. Where present,
  ``eager_numerics.disable_ftz`` (keep subnormals as eager CUDA does) and
  ``eager_numerics.use_pytorch_libdevice`` are switched on too; ``numerics="strict"`` where a
  ``numerics`` mode exists. Per-op ``compute=STORAGE`` is the same thing here: one correctly rounded
  bf16/fp16 ``+ - * / sqrt`` equals the fp32 result rounded once (fp32 has >= 2p+2 bits).
- ``division``: where ``eager_numerics.division_rounding`` exists, on CUDA it is ``True`` for IEEE
  (Triton ``div_rn``, correctly rounded) and ``False`` for RECIPROCAL_MULTIPLY (Triton's
  ``div.full.f32``); on CPU, where Inductor's C++ ``/`` is IEEE either way, it follows per-op
  rounding as the other ``eager_numerics`` flags do (a RECIPROCAL_MULTIPLY policy cannot make the C++
  backend approximate: listed in `unenforced` only when the policy also contracts FMAs, since only
  then does the emulated result differ).
- ``negation``: no knob. On CUDA a SIGN_FLIP policy is enforced by a graph rewrite in the backend
  (``rewrite.sign_flip_negations``); SUBTRACT_FROM_ZERO on CPU cannot be (Inductor's C++ ``neg()``
  flips the sign bit) and is listed in `unenforced`.
- ``rounding=FUSION_BOUNDARY``: Inductor's own behaviour, ``emulate_precision_casts=False``.
- no knob, listed in `unenforced` (trial 61: ``thunder-autocast`` compiled as plain torch.compile, silently):
  ``matmul_input`` (Inductor multiplies the operands as stored), ``storage``, policy-wide
  ``scalars=round_to_storage`` (Inductor keeps a Python scalar in fp32), and a policy-wide
  ``compute=storage`` for an elementwise or reduction class under fusion-boundary rounding (per-op
  overrides are placed by `roundoff.compiler.rewrite`; a matmul, convolution or attention reads its
  operands as stored anyway).
- ``rounding=FUSION_BOUNDARY_HONOR_CASTS``: not expressible (Inductor keeps user casts only under
  ``emulate_precision_casts``, which also rounds every op); enforced as FUSION_BOUNDARY with a warning.
- ``fma``: on CPU ``cpp.enable_floating_point_contract_flag`` = ``"off"`` (NEVER) or ``"fast"``
  (WITHIN_FUSION). On GPU contraction follows ``not emulate_precision_casts`` (Inductor passes
  ``enable_fp_fusion`` to Triton itself, so ``TRITON_DEFAULT_FP_FUSION`` has no effect); a policy
  asking for NEVER with fusion-boundary rounding, or WITHIN_FUSION with per-op rounding, is enforced
  as far as it can be and the rest is listed in `unenforced` (and warned about by the backend).

All of this is applied with ``torch._inductor.config.patch`` around one compilation; global config
is never changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from roundoff.ops.classes import OpClass
from roundoff.policy.model import (
    ComputePrecision,
    Division,
    FmaContraction,
    Negation,
    Policy,
    RoundingPoint,
    ScalarMixing,
)


@dataclass(frozen=True)
class InductorSettings:
    """Config patches for one compilation and the parts of the policy they cannot express."""

    patches: Mapping[str, Any] = field(default_factory=dict)
    unenforced: tuple[str, ...] = ()
    emulates_casts: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "patches", MappingProxyType(dict(self.patches)))


def has_config(name: str) -> bool:
    """Whether the installed ``torch._inductor.config`` has the (dotted) option `name`."""
    from torch._inductor import config

    obj: Any = config
    for part in name.split("."):
        try:
            obj = getattr(obj, part)
        except (AttributeError, RuntimeError):
            return False
    return True


_DIVISION_ROUNDING = "eager_numerics.division_rounding"
_EAGER_NUMERICS = (
    "eager_numerics.disable_ftz",
    "eager_numerics.use_pytorch_libdevice",
)
_CPP_CONTRACT = "cpp.enable_floating_point_contract_flag"


def inductor_settings(policy: Policy, device_type: str) -> InductorSettings:
    """The Inductor config patches enforcing `policy` for tensors on `device_type` ("cpu", "cuda")."""
    if not isinstance(policy, Policy):
        raise TypeError(f"inductor_settings expects a roundoff Policy, got {type(policy).__name__}")
    patches: dict[str, Any] = {}
    unenforced: list[str] = []
    per_op = policy.rounding is RoundingPoint.EVERY_OP
    if policy.rounding is RoundingPoint.FUSION_BOUNDARY_HONOR_CASTS:
        unenforced.append(
            "rounding=fusion_boundary_honor_casts: Inductor keeps user casts only with "
            "emulate_precision_casts, which rounds every op; enforced as fusion_boundary"
        )
    if has_config("emulate_precision_casts"):
        patches["emulate_precision_casts"] = per_op
    elif per_op:
        unenforced.append("rounding=every_op: this torch has no emulate_precision_casts")
    if per_op:
        patches.update({name: True for name in _EAGER_NUMERICS if has_config(name)})
        if has_config("numerics"):
            patches["numerics"] = "strict"
    contract = policy.fma is FmaContraction.WITHIN_FUSION
    ieee = policy.division is Division.IEEE
    if has_config(_DIVISION_ROUNDING):
        patches[_DIVISION_ROUNDING] = ieee if device_type != "cpu" else per_op
    if device_type == "cpu" and not ieee and contract and not per_op:
        unenforced.append(
            "division=reciprocal_multiply on cpu: Inductor's C++ division is IEEE, so no "
            "reciprocal product is contracted into an add/sub"
        )
    if device_type == "cpu" and policy.negation is Negation.SUBTRACT_FROM_ZERO:
        unenforced.append(
            "negation=subtract_from_zero on cpu: Inductor's C++ neg() flips the sign bit, so "
            "-(+0.0) is -0.0 where the policy says +0.0"
        )
    if device_type == "cpu":
        if has_config(_CPP_CONTRACT):
            patches[_CPP_CONTRACT] = "fast" if contract and not per_op else "off"
        if contract and not per_op:  # (trial 62: inductor-gpu's exp(x*s - x*s) compiled on CPU contracted nothing)
            unenforced.append(
                "fma=within_fusion on cpu: the C++ compiler may contract a multiply into an add "
                "(-ffp-contract=fast) but need not (Inductor's vectorized kernels multiply and add apart), so the "
                "policy's FMA sites can compute as two roundings")
        if contract and per_op:
            unenforced.append(
                "fma=within_fusion with every_op rounding: no fused kernel to contract in"
            )
    elif contract == per_op:
        want = "within_fusion" if contract else "never"
        unenforced.append(
            f"fma={want} on {device_type}: Inductor ties Triton FP fusion to emulate_precision_casts "
            f"(fusion on exactly when per-op rounding is off)"
        )
    unenforced.extend(_without_knob(policy, per_op))
    return InductorSettings(patches=patches, unenforced=tuple(unenforced), emulates_casts=per_op)


#: classes whose kernels read their operands as stored: computing them at storage precision is Inductor's way
_READ_AS_STORED = frozenset({OpClass.MATMUL, OpClass.CONVOLUTION, OpClass.ATTENTION})


def _without_knob(policy: Policy, per_op: bool) -> list[str]:
    """The policy-wide fields no Inductor setting or graph rewrite of roundoff's enforces."""
    out = []
    if policy.matmul_input is not None:
        out.append(f"matmul_input={policy.matmul_input}: Inductor multiplies matmul operands as stored, "
                   f"without rounding them to {policy.matmul_input} first")
    if policy.storage is not None:
        out.append(f"storage={policy.storage}: Inductor stores each value in its program's dtype")
    for field_name in ("matmul_accumulate", "reduction_accumulate"):
        if getattr(policy, field_name) != "fp32":
            out.append(f"{field_name}={getattr(policy, field_name)}: Inductor accumulates 16- and 32-bit "
                       "values in fp32")
    if policy.scalars is ScalarMixing.ROUND_TO_STORAGE:
        out.append("scalars=round_to_storage: Inductor computes with a Python scalar in fp32, unrounded")
    storage_classes = sorted(c.value for c, p in policy.compute.items()
                             if p is ComputePrecision.STORAGE and c not in _READ_AS_STORED)
    if storage_classes and not per_op:
        out.append(f"compute=storage for {', '.join(storage_classes)} with fusion-boundary rounding: Inductor "
                   "computes those in fp32 and rounds at its kernels' boundaries")
    return out
