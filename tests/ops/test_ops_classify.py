"""classify(): coverage of the core ATen opset and Inductor's decompositions, and agreement with
torch's own metadata (tags, promotion kinds, and the dtypes eager torch really returns)."""

from __future__ import annotations

import math
import operator

import pytest
import torch
import torch._inductor.inductor_prims
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

from roundoff.ops import (
    LITERAL_CLASSES,
    OpClass,
    classify,
    core_aten_ops,
    inductor_decomposition_ops,
    op_name,
    prims_ops,
)
from roundoff.ops.classify import is_reduction
from roundoff.ops.table import NOT_IN_EVERY_TORCH, _validate

aten = torch.ops.aten
prims = torch.ops.prims

# Core ATen ops roundoff deliberately leaves UNMODELED (FFTs: complex arithmetic outside the
# op-class vocabulary). Anything else unmodeled in the core opset is a coverage bug.
CORE_UNMODELED_ALLOWED = {"aten._fft_c2r", "aten._fft_r2c"}


def _packet(name: str) -> str:
    return name.rsplit(".", 1)[0]


def test_every_core_aten_op_is_modeled() -> None:
    unmodeled = sorted(
        op_name(op) for op in core_aten_ops() if classify(op).op_class is OpClass.UNMODELED
    )
    unexpected = [n for n in unmodeled if _packet(n) not in CORE_UNMODELED_ALLOWED]
    assert len(core_aten_ops()) > 150, "torch.Tag.core enumeration came back nearly empty"
    assert not unexpected, (
        f"core ATen ops classed UNMODELED: {unexpected}; repro: "
        'python -c "import torch, roundoff.ops as o; print(o.classify(torch.ops.aten.<op>))"'
    )


def test_inductor_decomposition_keys_unmodeled_are_only_exotic_families() -> None:
    """Keys of select_decomp_table() that stay UNMODELED belong to families roundoff does not model
    (linalg, fft, sparse, quantized, RNN, test ops); none is a pointwise/reduction-tagged op."""
    exotic = ("linalg_", "fft_", "_fft", "sparse", "quant", "fbgemm", "_test", "lstm", "gru",
              "rnn", "_cufft", "qparams", "_validate_sparse", "to_sparse", "to_dense", "to_mkldnn",
              "_foreach_", "align_")  # fmt: skip
    # Named-tensor overloads (torch 2.9's table still decomposes median.names_dim, mode.dimname, ...).
    named_overloads = ("names", "dimname", "Dimname")
    leftover = []
    for op in inductor_decomposition_ops():
        info = classify(op)
        if info.op_class is not OpClass.UNMODELED:
            continue
        assert torch.Tag.pointwise not in op.tags and not is_reduction(op), (
            f"{info.name} is tagged by torch yet classed UNMODELED"
        )
        named = any(part in op._overloadname for part in named_overloads)
        if not named and not any(part in op._opname for part in exotic):
            leftover.append(info.name)
    # The rest are named here so growth is noticed: each is real arithmetic roundoff does not model.
    allowed_rest = {
        "det", "inverse", "logdet", "slogdet", "svd", "qr", "orgqr", "lu_solve", "_lu_with_info",
        "matrix_exp", "matrix_exp_backward", "matrix_power", "pinverse", "nuclear_norm",
        "corrcoef", "cov", "vander", "quantile", "nanquantile", "histogramdd", "istft", "stft",
        "ctc_loss", "norm_except_dim", "_weight_norm_differentiable_backward", "_backward",
        "_embedding_bag_sparse_backward", "embedding_sparse_backward", "_gather_sparse_backward",
        "_pack_padded_sequence_backward", "_pad_packed_sequence", "pad_sequence", "_rowwise_prune",
        "_sobol_engine_draw", "_upsample_lanczos2d_aa", "fake_quantize_per_channel_affine",
        "fake_quantize_per_tensor_affine", "flatten_dense_tensors", "unflatten_dense_tensors",
        "nested_to_padded_tensor", "smm", "sspaddmm", "_wrapped_linear_prepack",
        "_wrapped_quantized_linear_prepacked", "_grid_sampler_2d_cpu_fallback_backward",
    }  # fmt: skip
    unexpected = sorted(n for n in leftover if n.split(".")[1] not in allowed_rest)
    assert not unexpected, f"UNMODELED decomposition keys outside the known families: {unexpected}"


# Backward ops autograd emits for the ops above, with the class the op-class spec gives them.
BACKWARD_SPEC = {
    aten._softmax_backward_data.default: OpClass.NORMALIZATION,
    aten._log_softmax_backward_data.default: OpClass.NORMALIZATION,
    aten.native_layer_norm_backward.default: OpClass.NORMALIZATION,
    aten.native_batch_norm_backward.default: OpClass.NORMALIZATION,
    aten.threshold_backward.default: OpClass.COMPARISON_SELECT,
    aten.tanh_backward.default: OpClass.POINTWISE_ARITHMETIC,
    aten.sigmoid_backward.default: OpClass.POINTWISE_ARITHMETIC,
    aten.gelu_backward.default: OpClass.POINTWISE_TRANSCENDENTAL,
    aten.silu_backward.default: OpClass.POINTWISE_TRANSCENDENTAL,
    aten.mm.default: OpClass.MATMUL,
    aten.bmm.default: OpClass.MATMUL,
    aten.sum.dim_IntList: OpClass.REDUCTION,
    aten.convolution_backward.default: OpClass.CONVOLUTION,
    aten.embedding_dense_backward.default: OpClass.REDUCTION,
    aten.native_dropout_backward.default: OpClass.POINTWISE_ARITHMETIC,
    aten.max_pool2d_with_indices_backward.default: OpClass.REDUCTION,
    aten.select_backward.default: OpClass.DATA_MOVEMENT,
    aten.slice_backward.default: OpClass.DATA_MOVEMENT,
    aten._scaled_dot_product_flash_attention_for_cpu_backward.default: OpClass.ATTENTION,
}


@pytest.mark.parametrize("op", list(BACKWARD_SPEC), ids=lambda op: op_name(op))
def test_backward_ops(op: torch._ops.OpOverload) -> None:
    got = classify(op).op_class
    assert got is BACKWARD_SPEC[op], f"classify({op_name(op)}) = {got}, spec {BACKWARD_SPEC[op]}"


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (operator.getitem, OpClass.DATA_MOVEMENT),
        (operator.mul, OpClass.OTHER),  # symbolic-size arithmetic in FX graphs
        (math.ceil, OpClass.OTHER),
        (torch.sym_int, OpClass.OTHER),
        (aten.mul, OpClass.POINTWISE_ARITHMETIC),  # packet: its default overload's class
        (aten.add_.Tensor, OpClass.POINTWISE_ARITHMETIC),  # in-place variant
        (aten.exp.out, OpClass.POINTWISE_TRANSCENDENTAL),
        (aten.max.dim, OpClass.REDUCTION),  # torch tags it a reduction, like amax
        (aten.max.other, OpClass.COMPARISON_SELECT),
        (aten.view.default, OpClass.DATA_MOVEMENT),  # derived from is_view
        (aten.bernoulli.p, OpClass.RANDOM),  # derived from nondeterministic_seeded
        (aten.sym_size.int, OpClass.OTHER),
        (aten._to_copy.default, OpClass.CAST),
        (prims.convert_element_type.default, OpClass.CAST),
        (prims.sum.default, OpClass.REDUCTION),  # from the prim's meta function
        (prims.broadcast_in_dim.default, OpClass.DATA_MOVEMENT),
        (prims.inductor_random.default, OpClass.RANDOM),
        (print, OpClass.UNMODELED),
        (lambda x: x, OpClass.UNMODELED),
    ],
    ids=lambda v: v.name if isinstance(v, OpClass) else op_name(v),
)
def test_targets_of_every_kind(target: object, expected: OpClass) -> None:
    got = classify(target).op_class
    assert got is expected, f"classify({op_name(target)}) = {got}, expected {expected}"


def test_non_callable_target_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="placeholder"):
        classify("placeholder")


def test_classes_agree_with_torch_tags() -> None:
    """Where torch tags an overload, the class is one that tag allows (literal tables refine tags,
    never contradict them)."""
    allowed = {
        torch.Tag.pointwise: {OpClass.POINTWISE_ARITHMETIC, OpClass.POINTWISE_TRANSCENDENTAL,
                              OpClass.COMPARISON_SELECT, OpClass.DATA_MOVEMENT, OpClass.CAST,
                              OpClass.RANDOM},
        "reduction": {OpClass.REDUCTION, OpClass.NORMALIZATION},  # torch's tag, or its recorded set
        torch.Tag.view_copy: {OpClass.DATA_MOVEMENT},
    }  # fmt: skip
    bad = []
    for op in core_aten_ops() | inductor_decomposition_ops() | prims_ops():
        got = classify(op).op_class
        for tag, classes in allowed.items():
            has = is_reduction(op) if tag == "reduction" else tag in op.tags
            if has and got not in classes:
                bad.append(f"{op_name(op)}: tagged {getattr(tag, 'name', tag)}, classed {got.name}")
    assert not bad, "\n".join(bad)


def test_literal_tables_name_real_ops() -> None:
    """Every name in the literal tables is an aten or prims packet (catches typos), except names
    listed in NOT_IN_EVERY_TORCH where the installed torch lacks that op."""
    missing, absent_here = [], []
    for op_class, names in LITERAL_CLASSES.items():
        for name in names:
            found = any(
                isinstance(getattr(ns, n, None), torch._ops.OpOverloadPacket)
                for ns in (aten, prims)
                for n in (name, name + "_")
            )
            if not found:
                (absent_here if name in NOT_IN_EVERY_TORCH else missing).append(
                    f"{op_class.name}: {name}"
                )
    assert not missing, f"table names with no torch op: {missing}"
    table_names = set().union(*LITERAL_CLASSES.values())
    assert set(NOT_IN_EVERY_TORCH) <= table_names, "NOT_IN_EVERY_TORCH names a non-table op"


def test_table_validation_rejects_duplicates_and_inplace_names() -> None:
    with pytest.raises(ValueError, match="two op tables"):
        _validate({OpClass.MATMUL: frozenset({"mm"}), OpClass.REDUCTION: frozenset({"mm"})})
    with pytest.raises(ValueError, match="in-place"):
        _validate({OpClass.POINTWISE_ARITHMETIC: frozenset({"add_"})})
    with pytest.raises(ValueError, match="base op name"):
        _validate({OpClass.POINTWISE_ARITHMETIC: frozenset({"aten.add"})})


# --- promotion kinds against what eager torch really does ------------------------------------

_PROBE_DTYPES = (torch.int32, torch.bool, torch.bfloat16)


def _unary_pointwise_with_kind() -> list[torch._ops.OpOverload]:
    ops = []
    for op in core_aten_ops():
        info = classify(op)
        schema = op._schema
        tensor_args = [a for a in schema.arguments if a.kwarg_only is False]
        if (
            info.promotion is not None
            and torch.Tag.pointwise in op.tags
            and len(tensor_args) == 1
            and str(tensor_args[0].type) == "Tensor"
            and len(schema.returns) == 1
        ):
            ops.append(op)
    return sorted(ops, key=op_name)


def test_promotion_kinds_match_eager_result_dtypes() -> None:
    """For unary pointwise core ops, the recorded kind predicts the dtype eager torch returns on
    int32, bool and bf16 inputs (the oracle is torch's own kernel, not its metadata)."""
    ops = _unary_pointwise_with_kind()
    assert len(ops) > 30, f"only {len(ops)} unary pointwise ops with a recorded kind"
    wrong = []
    for op in ops:
        kind = classify(op).promotion
        for dtype in _PROBE_DTYPES:
            x = torch.ones(4, dtype=dtype)
            try:
                real = op(x).dtype
            except (RuntimeError, TypeError):
                continue  # op does not accept this dtype (e.g. bitwise_not on bf16)
            predicted = elementwise_dtypes(x, type_promotion_kind=kind)[1]
            if real != predicted:
                wrong.append(
                    f"{op_name(op)}({dtype}): eager {real}, kind {kind.name} -> {predicted}"
                )
    assert not wrong, "\n".join(wrong)


def test_promotion_kind_coheres_with_class() -> None:
    """Comparisons/tests return bool (ALWAYS_BOOL) or select (NO_OPMATH/DEFAULT); an op torch makes
    int->float (INT_TO_FLOAT) is transcendental unless it is IEEE operations or a scaling.
    (``addcdiv``, ``a + v * b / c``, is INT_TO_FLOAT where torch's ref says so, as in torch 2.9.)"""
    ieee_int_to_float = {"sqrt", "reciprocal", "true_divide", "div", "deg2rad", "rad2deg", "addcdiv"}
    bad = []
    for op in core_aten_ops() | inductor_decomposition_ops():
        info = classify(op)
        kind = info.promotion
        if kind is ELEMENTWISE_TYPE_PROMOTION_KIND.ALWAYS_BOOL and info.op_class not in (
            OpClass.COMPARISON_SELECT,
        ):
            bad.append(f"{info.name}: ALWAYS_BOOL but {info.op_class.name}")
        if (
            kind is ELEMENTWISE_TYPE_PROMOTION_KIND.INT_TO_FLOAT
            and info.op_class is OpClass.POINTWISE_ARITHMETIC
            and op._opname.rstrip("_") not in ieee_int_to_float
        ):
            bad.append(f"{info.name}: INT_TO_FLOAT arithmetic (transcendental?)")
    assert not bad, "\n".join(bad)


def test_reduction_overloads_table_equals_torch_tags() -> None:
    """The literal set used where torch lacks ``Tag.reduction`` (torch 2.9) is exactly what torch tags."""
    import pytest

    from roundoff.ops.table import REDUCTION_OVERLOADS

    if not hasattr(torch.Tag, "reduction"):
        pytest.skip("this torch has no Tag.reduction to compare with")
    tagged, loaded = set(), set()  # (ops registered lazily, e.g. by Inductor, may be absent)
    for name in dir(torch.ops.aten):
        packet = getattr(torch.ops.aten, name, None)
        if isinstance(packet, torch._ops.OpOverloadPacket):
            for o in packet.overloads():
                full = f"{packet._qualified_op_name.split('::')[1]}.{o}"
                loaded.add(full)
                if torch.Tag.reduction in getattr(packet, o).tags:
                    tagged.add(full)
    # Named-tensor overloads (Dimname arguments) never reach a captured graph; torch 2.11 tags some
    # of them and torch 2.13 does not, so they are left out of the comparison.
    tagged = {t for t in tagged if not any(k in t.split(".")[1].lower() for k in ("name", "dimname"))}
    listed = REDUCTION_OVERLOADS & loaded
    assert tagged == listed, f"missing {sorted(tagged - listed)}, extra {sorted(listed - tagged)}"
