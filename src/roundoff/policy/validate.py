"""validate(policy): reject a Policy that is malformed or contradicts itself.

Every message names the field, what was given, and the fix. Presets pass through this at import;
TOML-loaded and hand-built policies pass through it in ``get_policy`` / ``policy_from_toml``.
"""

from __future__ import annotations

import enum
import importlib
import re
from collections.abc import Mapping

import torch

from roundoff.numerics import FORMATS
from roundoff.ops.classes import OpClass
from roundoff.policy.errors import PolicyError
from roundoff.policy.model import (
    ComputePrecision,
    Division,
    FmaContraction,
    FusionModel,
    MatmulAdd,
    Negation,
    OpOverride,
    Policy,
    RoundingPoint,
    ScalarMixing,
)

KNOWN_DECOMPOSITIONS: frozenset[str] = frozenset({"inductor", "eager", "eager-cpu"})  # (`capture.retrace.DECOMPOSITION_SETS`)
COMPUTING_CLASSES: tuple[OpClass, ...] = tuple(c for c in OpClass if c.computes)
_NODE_ID = re.compile(r"n\d+(\.\d+)*")
_OP_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?")


def _fail(policy: Policy, field: str, message: str) -> PolicyError:
    return PolicyError(f"policy {policy.name!r}, field {field!r}: {message}")


def _check_enum(policy: Policy, field: str, value: object, kind: type[enum.Enum]) -> None:
    if not isinstance(value, kind):
        allowed = ", ".join(repr(m.value) for m in kind)
        raise _fail(policy, field, f"got {value!r}; expected a {kind.__name__} ({allowed})")


def _check_format(policy: Policy, field: str, value: object, optional: bool) -> None:
    if value is None and optional:
        return
    formats = tuple(FORMATS)
    if not isinstance(value, str) or value not in formats:
        none = " or omit it (None)" if optional else ""
        raise _fail(
            policy, field, f"unknown format {value!r}; use one of {', '.join(formats)}{none}"
        )


def _check_accumulate(policy: Policy, field: str, value: str) -> None:
    """An accumulation narrower than fp32 is refused: matmuls and reductions run on torch's kernels,
    which accumulate in fp32 whatever their dtype, so it would be reported as fp32's (trial 46: a bf16
    accumulation, 1024 where fp64 is 9219, reported "ok")."""
    fmt, fp32 = FORMATS[value], FORMATS["fp32"]
    if fmt.mantissa_bits < fp32.mantissa_bits or fmt.exponent_bits < fp32.exponent_bits:
        raise _fail(policy, field, f"{value!r} is not emulated: roundoff models an accumulation in fp32 or "
                    "fp64 only (torch's kernels accumulate in fp32 whatever their dtype, so a narrower one would "
                    "be reported as fp32's); use 'fp32' or 'fp64'")  # fmt: skip


def _check_compute(policy: Policy) -> None:
    for key, precision in policy.compute.items():
        if not isinstance(key, OpClass):
            raise _fail(policy, "compute", f"key {key!r} is not an OpClass")
        if not key.computes:
            computing = ", ".join(c.value for c in COMPUTING_CLASSES)
            raise _fail(
                policy, f"compute.{key.value}",
                f"{key.value} does no arithmetic a policy can place; remove it (classes: {computing})",
            )  # fmt: skip
        _check_enum(policy, f"compute.{key.value}", precision, ComputePrecision)
    missing = [c.value for c in COMPUTING_CLASSES if c not in policy.compute]
    if missing:
        raise _fail(policy, "compute", f"no precision for {', '.join(missing)}; add each as "
                    "'opmath' or 'storage'")  # fmt: skip


def _op_exists(key: str) -> bool:
    parts = key.split(".")
    if parts[0] == "prims":  # Inductor registers prims.fma, prims.inductor_random, ... on import
        importlib.import_module("torch._inductor.inductor_prims")
    namespace = getattr(torch.ops, parts[0], None)
    try:
        packet = getattr(namespace, parts[1]) if namespace is not None else None
    except (AttributeError, RuntimeError):
        return False
    if not isinstance(packet, torch._ops.OpOverloadPacket):
        return False
    overload = parts[2] if len(parts) == 3 else None
    return overload is None or overload in packet.overloads()


def _check_override(policy: Policy, field: str, override: object) -> None:
    if not isinstance(override, OpOverride):
        raise _fail(policy, field, f"got {override!r}; expected an OpOverride")
    if override.is_empty():
        raise _fail(policy, field, "sets nothing; give compute, round_result, contract_fma "
                    "or scalars, or remove the override")  # fmt: skip
    if override.compute is not None:
        _check_enum(policy, f"{field}.compute", override.compute, ComputePrecision)
    if override.scalars is not None:
        _check_enum(policy, f"{field}.scalars", override.scalars, ScalarMixing)
    for flag in ("round_result", "contract_fma"):
        value = getattr(override, flag)
        if value is not None and not isinstance(value, bool):
            raise _fail(policy, f"{field}.{flag}", f"got {value!r}; expected true or false")


def _check_overrides(policy: Policy) -> None:
    for key, override in policy.op_overrides.items():
        field = f"op_overrides.{key}"
        if not isinstance(key, str) or not _OP_KEY.fullmatch(key):
            raise _fail(policy, field, "key must be 'namespace.op' or 'namespace.op.overload', "
                        "e.g. 'aten.mul' or 'aten.mul.Tensor'")  # fmt: skip
        if not _op_exists(key):
            raise _fail(policy, field, f"torch has no op {key!r}; check the spelling "
                        "(torch.ops.<namespace>.<op>.<overload>)")  # fmt: skip
        _check_override(policy, field, override)
    for key, override in policy.node_overrides.items():
        field = f"node_overrides.{key}"
        if not isinstance(key, str) or not _NODE_ID.fullmatch(key):
            raise _fail(policy, field, "key must be a roundoff node id such as 'n12' or 'n7.0' "
                        "(see the plan trace)")  # fmt: skip
        _check_override(policy, field, override)


def _check_text(policy: Policy) -> None:
    for field in ("name", "description", "source"):
        value = getattr(policy, field)
        if not isinstance(value, str) or not value.strip():
            raise PolicyError(f"policy field {field!r}: got {value!r}; give a non-empty string")
        if "\n" in value:
            raise _fail(policy, field, "must be one line; shorten it")


def _check_contradictions(policy: Policy) -> None:
    if policy.fusion is FusionModel.NONE and policy.rounding is not RoundingPoint.EVERY_OP:
        raise _fail(policy, "rounding", f"{policy.rounding.value!r} needs fused kernels but "
                    "fusion is 'none'; use rounding = 'every_op' or fusion = 'pointwise'")  # fmt: skip
    if policy.fusion is FusionModel.NONE and policy.fma is FmaContraction.WITHIN_FUSION:
        raise _fail(policy, "fma", "'within_fusion' needs fused kernels but fusion is 'none'; "
                    "use fma = 'never' or fusion = 'pointwise'")  # fmt: skip
    if policy.storage == "tf32":
        raise _fail(policy, "storage", "tf32 is a matmul input format, not a storage format; "
                    "use 'fp32' (or set matmul_input = 'tf32')")  # fmt: skip


def validate(policy: Policy) -> Policy:
    """Return `policy` unchanged if it is well formed and consistent; else raise PolicyError."""
    if not isinstance(policy, Policy):
        raise TypeError(f"validate() takes a Policy, got {type(policy).__name__}")
    _check_text(policy)
    _check_enum(policy, "rounding", policy.rounding, RoundingPoint)
    _check_enum(policy, "fusion", policy.fusion, FusionModel)
    _check_enum(policy, "fma", policy.fma, FmaContraction)
    _check_enum(policy, "scalars", policy.scalars, ScalarMixing)
    _check_enum(policy, "division", policy.division, Division)
    _check_enum(policy, "negation", policy.negation, Negation)
    _check_enum(policy, "matmul_add", policy.matmul_add, MatmulAdd)
    _check_format(policy, "storage", policy.storage, optional=True)
    _check_format(policy, "matmul_input", policy.matmul_input, optional=True)
    for field in ("matmul_accumulate", "reduction_accumulate"):
        _check_format(policy, field, getattr(policy, field), optional=False)
        _check_accumulate(policy, field, getattr(policy, field))
    for name in policy.decompositions:
        if name not in KNOWN_DECOMPOSITIONS:
            raise _fail(policy, "decompositions", f"unknown decomposition set {name!r}; use one "
                        f"of {sorted(KNOWN_DECOMPOSITIONS)} or none")  # fmt: skip
    _check_compute(policy)
    _check_overrides(policy)
    _check_contradictions(policy)
    return policy


def check_mapping_keys(where: str, data: Mapping[str, object], allowed: frozenset[str]) -> None:
    """Reject keys of a TOML table that the Policy schema does not have."""
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise PolicyError(
            f"{where}: unknown field(s) {', '.join(map(repr, unknown))}; "
            f"allowed: {', '.join(sorted(allowed))}"
        )
