"""override_for / compute_precision: node > overload > packet > class defaults, field by field."""

from __future__ import annotations

import torch

from roundoff.ops import OpClass
from roundoff.policy import (
    PRESETS,
    ComputePrecision,
    OpOverride,
    Policy,
    compute_precision,
    get_policy,
    matmul_input_dtype,
    override_for,
    storage_dtype,
)

OPMATH, STORAGE = ComputePrecision.OPMATH, ComputePrecision.STORAGE
ARITH = OpClass.POINTWISE_ARITHMETIC


def _layered() -> Policy:
    base = PRESETS["inductor-gpu"]
    fields = {f: getattr(base, f) for f in Policy.__dataclass_fields__}
    fields["op_overrides"] = {
        "aten.mul": OpOverride(compute=STORAGE, round_result=True),
        "aten.mul.Scalar": OpOverride(compute=OPMATH),
    }
    fields["node_overrides"] = {"n4": OpOverride(contract_fma=False, compute=OPMATH)}
    return get_policy(Policy(**fields))


def test_resolution_order() -> None:
    policy = _layered()
    cases = [
        # (op, node, expected compute, expected override)
        ("aten.mul.Tensor", None, STORAGE, OpOverride(compute=STORAGE, round_result=True)),
        ("aten.mul.Scalar", None, OPMATH, OpOverride(compute=OPMATH, round_result=True)),
        ("aten.mul.Tensor", "n4", OPMATH,
         OpOverride(compute=OPMATH, round_result=True, contract_fma=False)),
        ("aten.mul", "n9", STORAGE, OpOverride(compute=STORAGE, round_result=True)),
        ("aten.add.Tensor", "n4", OPMATH, OpOverride(compute=OPMATH, contract_fma=False)),
        ("aten.add.Tensor", "n5", OPMATH, OpOverride()),
    ]  # fmt: skip
    for op, node, compute, override in cases:
        got_override = override_for(policy, op, node)
        got_compute = compute_precision(policy, op, ARITH, node)
        assert (got_compute, got_override) == (compute, override), (
            f"{op} at {node}: got {got_compute}, {got_override}; expected {compute}, {override}"
        )


def test_class_defaults_and_non_computing_classes() -> None:
    thunder = PRESETS["thunder-nvfuser"]
    assert compute_precision(thunder, "aten.mm.default", OpClass.MATMUL) is STORAGE
    assert compute_precision(thunder, "aten.add.Tensor", ARITH) is OPMATH
    for op_class in (OpClass.DATA_MOVEMENT, OpClass.CAST, OpClass.COMPARISON_SELECT):
        assert compute_precision(thunder, "aten.x.default", op_class) is STORAGE


def test_storage_and_matmul_input_dtypes() -> None:
    assert storage_dtype(PRESETS["fp64"], torch.bfloat16) == torch.float64
    assert storage_dtype(PRESETS["fp64"], torch.int64) == torch.int64  # only floats promote
    assert storage_dtype(PRESETS["eager"], torch.float16) == torch.float16
    assert matmul_input_dtype(PRESETS["thunder-autocast"], torch.float32) == torch.bfloat16
    assert matmul_input_dtype(PRESETS["thunder-nvfuser"], torch.float32) == torch.float32
