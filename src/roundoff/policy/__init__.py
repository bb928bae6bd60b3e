"""roundoff.policy: one backend's precision rules as frozen data, presets, TOML and decisions."""

from roundoff.policy.decide import (
    ClassPrecision,
    class_precision,
    compute_dtype,
    compute_precision,
    matmul_input_dtype,
    override_for,
    scalar_mixing,
    storage_dtype,
)
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
from roundoff.policy.presets import PRESETS
from roundoff.policy.registry import get_policy, list_policies
from roundoff.policy.serialize import (
    load_policy,
    policy_from_dict,
    policy_from_toml,
    policy_to_dict,
    policy_to_toml,
    save_policy,
)
from roundoff.policy.validate import validate

__all__ = [
    "PRESETS",
    "ClassPrecision",
    "ComputePrecision",
    "Division",
    "FmaContraction",
    "FusionModel",
    "MatmulAdd",
    "Negation",
    "OpOverride",
    "Policy",
    "PolicyError",
    "RoundingPoint",
    "ScalarMixing",
    "class_precision",
    "compute_dtype",
    "compute_precision",
    "get_policy",
    "list_policies",
    "load_policy",
    "matmul_input_dtype",
    "override_for",
    "policy_from_dict",
    "policy_from_toml",
    "policy_to_dict",
    "policy_to_toml",
    "save_policy",
    "scalar_mixing",
    "storage_dtype",
    "validate",
]
