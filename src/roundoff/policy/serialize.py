"""Policy <-> plain dict <-> TOML, exact round trip.

Layout (None-valued fields are omitted; enum values are their lower-case ``.value``)::

    name = "xla-2.10"
    description = "..."
    source = "..."
    rounding = "every_op"
    fusion = "pointwise"
    fma = "never"
    scalars = "round_to_storage"
    division = "ieee"                 # optional: "ieee" (default) or "reciprocal_multiply"
    matmul_accumulate = "fp32"
    reduction_accumulate = "fp32"
    decompositions = []

    [compute]
    pointwise_arithmetic = "opmath"   # one key per computing OpClass

    [op_overrides."aten.mul"]
    compute = "storage"

    [op_overrides."aten.add"]
    scalars = "round_to_storage"

    [node_overrides.n12]
    contract_fma = false
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

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
from roundoff.policy.validate import check_mapping_keys, validate

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

_ENUM_FIELDS: dict[str, type[enum.Enum]] = {
    "rounding": RoundingPoint,
    "fusion": FusionModel,
    "fma": FmaContraction,
    "scalars": ScalarMixing,
    "division": Division,
    "negation": Negation,
    "matmul_add": MatmulAdd,
}
_POLICY_FIELDS = frozenset(f.name for f in fields(Policy))
_OVERRIDE_FIELDS = frozenset(f.name for f in fields(OpOverride))
_REQUIRED = ("name", "description", "source", "compute", "rounding", "fusion", "fma")


def _override_to_dict(override: OpOverride) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if override.compute is not None:
        out["compute"] = override.compute.value
    if override.scalars is not None:
        out["scalars"] = override.scalars.value
    for flag in ("round_result", "contract_fma"):
        if getattr(override, flag) is not None:
            out[flag] = getattr(override, flag)
    return out


def policy_to_dict(policy: Policy) -> dict[str, Any]:
    """Plain TOML-ready data for `policy` (None fields omitted, enums as their values)."""
    data: dict[str, Any] = {}
    for f in fields(Policy):
        value = getattr(policy, f.name)
        if value is None:
            continue
        if isinstance(value, enum.Enum):
            value = value.value
        elif f.name == "compute":
            value = {c.value: p.value for c, p in value.items()}
        elif f.name in ("op_overrides", "node_overrides"):
            value = {k: _override_to_dict(v) for k, v in value.items()}
        elif f.name == "decompositions":
            value = list(value)
        data[f.name] = value
    return data


def _enum(kind: type[enum.Enum], value: object, field: str) -> Any:
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(repr(m.value) for m in kind)
        raise PolicyError(
            f"field {field!r}: unknown value {value!r}; use one of {allowed}"
        ) from None


def _table(value: object, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise PolicyError(f"field {field!r}: expected a table, got {value!r}")
    return value


def _override_from_dict(data: object, field: str) -> OpOverride:
    table = _table(data, field)
    check_mapping_keys(f"field {field!r}", table, _OVERRIDE_FIELDS)
    compute, scalars = table.get("compute"), table.get("scalars")
    return OpOverride(
        compute=None if compute is None else _enum(ComputePrecision, compute, f"{field}.compute"),
        round_result=table.get("round_result"),
        contract_fma=table.get("contract_fma"),
        scalars=None if scalars is None else _enum(ScalarMixing, scalars, f"{field}.scalars"),
    )


def _compute_from_dict(data: object) -> dict[OpClass, ComputePrecision]:
    compute: dict[OpClass, ComputePrecision] = {}
    for key, value in _table(data, "compute").items():
        op_class = _enum(OpClass, key, f"compute.{key}")
        compute[op_class] = _enum(ComputePrecision, value, f"compute.{key}")
    return compute


def policy_from_dict(data: Mapping[str, Any]) -> Policy:
    """Build and validate a Policy from plain data (the inverse of ``policy_to_dict``)."""
    check_mapping_keys("policy", data, _POLICY_FIELDS)
    for field, kind in _ENUM_FIELDS.items():  # a value written wrong first (trial 62: only "missing" was said)
        if field in data:
            _enum(kind, data[field], field)
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise PolicyError(
            f"policy {data.get('name', '?')!r}: missing field(s) {', '.join(missing)}; a policy file has every "
            "field (`roundoff policy show inductor-cpu > my.toml` writes one to edit)"
        )
    kwargs: dict[str, Any] = dict(data)
    for field, kind in _ENUM_FIELDS.items():
        if field in kwargs:
            kwargs[field] = _enum(kind, kwargs[field], field)
    kwargs["compute"] = _compute_from_dict(data["compute"])
    for field in ("op_overrides", "node_overrides"):
        table = _table(data.get(field, {}), field)
        kwargs[field] = {k: _override_from_dict(v, f"{field}.{k}") for k, v in table.items()}
    decompositions = data.get("decompositions", ())
    if isinstance(decompositions, str) or not isinstance(decompositions, (list, tuple)):
        raise PolicyError(
            f"field 'decompositions': expected a list of names, got {decompositions!r}"
        )
    kwargs["decompositions"] = tuple(decompositions)
    return validate(Policy(**kwargs))


def policy_to_toml(policy: Policy) -> str:
    """TOML text for `policy`; ``policy_from_toml`` of it equals `policy`."""
    try:
        import tomli_w  # only saving needs it: loading/analysis must work without it
    except ImportError:
        raise ImportError(
            "saving a policy as TOML needs the 'tomli_w' package; install it with `pip install tomli_w`"
        ) from None
    return tomli_w.dumps(policy_to_dict(validate(policy)))


def policy_from_toml(text: str) -> Policy:
    """Parse and validate a policy written as TOML (layout in this module's docstring)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise PolicyError(f"policy TOML does not parse: {err}") from None
    return policy_from_dict(data)


def load_policy(path: str | Path) -> Policy:
    """Read a policy from a ``.toml`` file; PolicyError names the file on any problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise PolicyError(f"cannot read policy file {str(path)!r}: {err.strerror}") from None
    try:
        return policy_from_toml(text)
    except PolicyError as err:
        raise PolicyError(f"{path}: {err}") from None


def save_policy(policy: Policy, path: str | Path) -> Path:
    """Write `policy` as TOML to `path` and return the path."""
    path = Path(path)
    path.write_text(policy_to_toml(policy), encoding="utf-8")
    return path
