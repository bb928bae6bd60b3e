"""Golden tables: what each preset does per op class and storage dtype.

The tables below are the SPEC, written from the sources each preset cites (the issues listed in
docs/architecture.md "Sources", torch/Inductor/XLA/Thunder docs), not printed from the code. On failure only
the differing cells are shown.
"""

from __future__ import annotations

import pytest
import torch
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

from roundoff.ops import OpClass
from roundoff.policy import (
    PRESETS,
    ComputePrecision,
    RoundingPoint,
    ScalarMixing,
    class_precision,
    compute_dtype,
    compute_precision,
    get_policy,
    scalar_mixing,
)

_DT = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "fp64": torch.float64}
STORAGES = ("bf16", "fp16", "fp32")

# class abbreviations: arith, trans, red, mm, conv, attn, norm.
# row: class  compute@bf16 compute@fp16 compute@fp32  rounding  fma(y/n)
_OPMATH_EVERY = """
arith fp32 fp32 fp32 every_op n
trans fp32 fp32 fp32 every_op n
red   fp32 fp32 fp32 every_op n
mm    fp32 fp32 fp32 every_op n
conv  fp32 fp32 fp32 every_op n
attn  fp32 fp32 fp32 every_op n
norm  fp32 fp32 fp32 every_op n
"""
_FUSED_FMA = """
arith fp32 fp32 fp32 fusion_boundary y
trans fp32 fp32 fp32 fusion_boundary n
red   fp32 fp32 fp32 fusion_boundary n
mm    fp32 fp32 fp32 fusion_boundary n
conv  fp32 fp32 fp32 fusion_boundary n
attn  fp32 fp32 fp32 fusion_boundary n
norm  fp32 fp32 fp32 fusion_boundary n
"""
_FUSED_NO_FMA = _FUSED_FMA.replace("fusion_boundary y", "fusion_boundary n")
_THUNDER = """
arith fp32 fp32 fp32 fusion_boundary y
trans fp32 fp32 fp32 fusion_boundary n
red   fp32 fp32 fp32 fusion_boundary n
mm    bf16 fp16 fp32 every_op n
conv  bf16 fp16 fp32 every_op n
attn  bf16 fp16 fp32 every_op n
norm  fp32 fp32 fp32 fusion_boundary n
"""
_FP64 = """
arith fp64 fp64 fp64 every_op n
trans fp64 fp64 fp64 every_op n
red   fp64 fp64 fp64 every_op n
mm    fp64 fp64 fp64 every_op n
conv  fp64 fp64 fp64 every_op n
attn  fp64 fp64 fp64 every_op n
norm  fp64 fp64 fp64 every_op n
"""

GOLDEN: dict[str, str] = {
    "eager": _OPMATH_EVERY,
    "eager-cuda": _OPMATH_EVERY,  # differs from eager only in how scalars mix (table below)
    "inductor-gpu": _FUSED_FMA,
    "inductor-cpu": _FUSED_NO_FMA,
    "inductor-emulate": _OPMATH_EVERY,
    "xla-2.9": _OPMATH_EVERY,
    "xla-2.10": _OPMATH_EVERY,  # class level; mul's native bf16 is a per-op override (below)
    "xla-neuron": _FUSED_NO_FMA,
    "xla-excess-precision": _FUSED_NO_FMA,
    "thunder-nvfuser": _THUNDER,
    "thunder-autocast": _THUNDER,
    "fp32": _OPMATH_EVERY,
    "fp64": _FP64,
}

_CLASSES = {
    "arith": OpClass.POINTWISE_ARITHMETIC,
    "trans": OpClass.POINTWISE_TRANSCENDENTAL,
    "red": OpClass.REDUCTION,
    "mm": OpClass.MATMUL,
    "conv": OpClass.CONVOLUTION,
    "attn": OpClass.ATTENTION,
    "norm": OpClass.NORMALIZATION,
}

Cell = tuple[str, str, bool]  # (compute dtype, rounding point, fma)


def _spec_cells(preset: str) -> dict[tuple[str, str], Cell]:
    cells: dict[tuple[str, str], Cell] = {}
    for line in GOLDEN[preset].strip().splitlines():
        cls, *computes, rounding, fma = line.split()
        for storage, compute in zip(STORAGES, computes):
            cells[(cls, storage)] = (compute, rounding, fma == "y")
    return cells


def _name(dtype: torch.dtype) -> str:
    return next(k for k, v in _DT.items() if v == dtype)


def _actual_cells(preset: str) -> dict[tuple[str, str], Cell]:
    policy = PRESETS[preset]
    cells: dict[tuple[str, str], Cell] = {}
    for cls, op_class in _CLASSES.items():
        for storage in STORAGES:
            got = class_precision(policy, op_class, _DT[storage])
            cells[(cls, storage)] = (_name(got.compute_dtype), got.rounding.value, got.fma)
    return cells


def test_golden_covers_every_preset() -> None:
    assert set(GOLDEN) == set(PRESETS), f"golden {sorted(GOLDEN)} vs presets {sorted(PRESETS)}"


@pytest.mark.parametrize("preset", sorted(GOLDEN))
def test_preset_golden_table(preset: str) -> None:
    spec, actual = _spec_cells(preset), _actual_cells(preset)
    diff = [
        f"  {cls:<6} {storage}: spec {spec[(cls, storage)]} got {actual[(cls, storage)]}"
        for (cls, storage) in spec
        if spec[(cls, storage)] != actual[(cls, storage)]
    ]
    assert not diff, (
        f"preset {preset!r}: {len(diff)} cell(s) differ (compute, rounding, fma):\n"
        + "\n".join(diff)
        + f"\nrepro: pytest tests/policy/test_policy_golden.py -k '{preset}'"
    )


# Per-op spec at bf16 storage: the XLA mul debate in one table.
PER_OP_BF16 = {
    ("xla-2.9", "aten.mul.Tensor"): "fp32",
    ("xla-2.10", "aten.mul.Tensor"): "bf16",
    ("xla-2.10", "aten.mul.Scalar"): "bf16",
    ("xla-excess-precision", "aten.mul.Tensor"): "bf16",
    ("xla-neuron", "aten.mul.Tensor"): "fp32",
    ("xla-2.10", "aten.add.Tensor"): "fp32",
    ("xla-2.10", "aten.mm.default"): "fp32",
    ("eager", "aten.mul.Tensor"): "fp32",
    ("inductor-gpu", "aten.mul.Tensor"): "fp32",
}
_OP_CLASS = {"aten.mul.Tensor": OpClass.POINTWISE_ARITHMETIC, "aten.mul.Scalar":
             OpClass.POINTWISE_ARITHMETIC, "aten.add.Tensor": OpClass.POINTWISE_ARITHMETIC,
             "aten.mm.default": OpClass.MATMUL}  # fmt: skip


def test_per_op_compute_dtypes() -> None:
    diff = []
    for (preset, op), spec in PER_OP_BF16.items():
        precision = compute_precision(get_policy(preset), op, _OP_CLASS[op], node_id="n3")
        got = _name(compute_dtype(precision, torch.bfloat16))
        if got != spec:
            diff.append(f"  {preset} {op}: spec {spec} got {got}")
    assert not diff, "per-op compute dtype at bf16 differs:\n" + "\n".join(diff)


@pytest.mark.parametrize("storage", ["bf16", "fp16", "fp32", "fp64"])
def test_opmath_matches_torch_elementwise_dtypes(storage: str) -> None:
    """Oracle: torch's own opmath rule (elementwise_dtypes' computation dtype) is what OPMATH
    gives for every storage dtype, and eager's pointwise classes are OPMATH."""
    x = torch.ones(2, dtype=_DT[storage])
    torch_compute, _ = elementwise_dtypes(
        x, type_promotion_kind=ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT
    )
    eager = PRESETS["eager"]
    for op_class in (OpClass.POINTWISE_ARITHMETIC, OpClass.POINTWISE_TRANSCENDENTAL):
        got = class_precision(eager, op_class, _DT[storage]).compute_dtype
        assert got == torch_compute, f"eager {op_class.name} on {storage}: {got} vs {torch_compute}"
    assert compute_dtype(ComputePrecision.OPMATH, _DT[storage]) == torch_compute


def test_every_preset_has_description_and_source() -> None:
    for policy in PRESETS.values():
        assert policy.description and "\n" not in policy.description, policy.name
        assert len(policy.source) > 10, f"{policy.name}: source {policy.source!r} too thin"
    names = list(PRESETS)
    assert names == [
        "eager", "eager-cuda", "inductor-gpu", "inductor-cpu", "inductor-emulate", "xla-2.9", "xla-2.10",
        "xla-neuron", "xla-excess-precision", "thunder-nvfuser", "thunder-autocast", "fp32", "fp64",
    ]  # fmt: skip


def test_fusion_none_presets_round_every_op() -> None:
    for policy in PRESETS.values():
        if policy.fusion.value == "none":
            assert policy.rounding is RoundingPoint.EVERY_OP, policy.name


# How a Python scalar meets a bf16/fp16 tensor, per (preset, op): "rnd" = rounded to the tensor's
# dtype before the fp32 opmath computation, "unr" = enters fp32 unrounded. From the sources:
# eager CPU: TensorIterator casts CPU scalars to the common dtype (add/sub/rsub, pow, fmod,
# remainder), except the kernels that read `iter.original_scalar_value<opmath_t>` (mul, div in
# BinaryOpsKernel.cpp) or take the scalar as opmath_t (addcmul/addcdiv `value`, lerp's weight).
# eager CUDA: opmath_gpu_kernel_with_scalars reads every scalar as opmath_t. torch_xla:
# GetIrValueForScalar(value, element_type) for every op. Inductor / Thunder: fp32 scalar constants.
_SCALAR_OPS = ("aten.add.Tensor", "aten.sub.Tensor", "aten.rsub.Scalar", "aten.mul.Tensor",
               "aten.div.Tensor", "aten.pow.Tensor_Scalar", "aten.fmod.Scalar",
               "aten.remainder.Scalar", "aten.addcmul.default", "aten.lerp.Scalar")  # fmt: skip
SCALARS_GOLDEN = """
preset            add sub rsub mul div pow fmod remainder addcmul lerp
eager             rnd rnd rnd  unr unr rnd rnd  rnd       unr     unr
eager-cuda        unr unr unr  unr unr unr unr  unr       unr     unr
inductor-gpu      unr unr unr  unr unr unr unr  unr       unr     unr
inductor-cpu      unr unr unr  unr unr unr unr  unr       unr     unr
xla-2.9           rnd rnd rnd  rnd rnd rnd rnd  rnd       rnd     rnd
xla-2.10          rnd rnd rnd  rnd rnd rnd rnd  rnd       rnd     rnd
thunder-nvfuser   unr unr unr  unr unr unr unr  unr       unr     unr
"""
_MIXING = {"rnd": ScalarMixing.ROUND_TO_STORAGE, "unr": ScalarMixing.OPMATH_UNROUNDED}


def test_scalar_mixing_golden_table() -> None:
    header, *rows = SCALARS_GOLDEN.strip().splitlines()
    assert len(header.split()) == len(_SCALAR_OPS) + 1
    diff = []
    for row in rows:
        preset, *cells = row.split()
        for op, cell in zip(_SCALAR_OPS, cells):
            got = scalar_mixing(get_policy(preset), op, node_id="n3")
            if got is not _MIXING[cell]:
                diff.append(f"  {preset} {op}: spec {cell} got {got.value}")
    assert not diff, (
        "scalar mixing differs:\n"
        + "\n".join(diff)
        + "\nrepro: pytest tests/policy/test_policy_golden.py -k scalar_mixing"
    )


# fp32 division per preset, from the sources: Triton lowers fp32 `/` to PTX div.full.f32, a multiply
# by MUFU.RCP (SASS and 4 x 2**24 elements measured on an H200, bench/results/gpu_div_contraction.txt);
# emulate_precision_casts leaves it alone (div_rn needs eager_numerics.division_rounding). Inductor
# C++, eager ATen, XLA and nvFuser: IEEE (nothing measured says otherwise).
DIVISION_GOLDEN = {
    "inductor-gpu": "reciprocal_multiply",
    "inductor-emulate": "reciprocal_multiply",
}

# -x per preset: Triton's frontend lowers a float unary minus to `0.0 - x` (triton.language.semantic
# .minus: sub(null value, x)), so -(+0.0) is +0.0 under Inductor on CUDA (measured on an H200: random
# graph 2 of bench/gpu_validation.py); Inductor C++ neg() and eager ATen flip the sign bit.
NEGATION_GOLDEN = {"inductor-gpu": "subtract_from_zero"}

# mm(a, b) + x per preset: Inductor's post-grad pattern `addmm` (torch/_inductor/fx_passes/post_grad.py)
# rewrites a 2-D add of a matmul's result as one addmm on CPU (should_prefer_unfused_addmm is false there);
# on CUDA it is skipped where every user of the add is pointwise, and cuBLAS gave both the same bits where
# measured (bench/results/gpu-session29); eager, XLA and Thunder add the rounded matmul result.
MATMUL_ADD_GOLDEN = {"inductor-cpu": "addmm", "inductor-emulate": "addmm"}


@pytest.mark.parametrize("field, golden, default", [
    ("division", DIVISION_GOLDEN, "ieee"),
    ("negation", NEGATION_GOLDEN, "sign_flip"),
    ("matmul_add", MATMUL_ADD_GOLDEN, "separate"),
])
def test_enum_golden_table(field: str, golden: dict[str, str], default: str) -> None:
    """One policy-wide enum per preset: the table's value, else `default`."""
    diff = [
        f"  {name}: spec {golden.get(name, default)} got {getattr(p, field).value}"
        for name, p in PRESETS.items()
        if getattr(p, field).value != golden.get(name, default)
    ]
    assert not diff, f"{field} differs:\n" + "\n".join(diff) + f"\nrepro: pytest tests/policy/test_policy_golden.py -k {field}"
