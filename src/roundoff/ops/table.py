"""The literal part of op classification: what torch does not record about an op.

torch records whether an overload is pointwise (``torch.Tag.pointwise``), a reduction
(``torch.Tag.reduction``), a view (``OpOverload.is_view``, ``torch.Tag.view_copy``) or random
(``torch.Tag.nondeterministic_seeded``); ``roundoff.ops.classify`` derives those. It does not record
which pointwise ops are transcendental (evaluated by a library approximation, not one IEEE
operation), which are comparisons/selections (no rounding of their own), nor the matmul,
convolution, attention, normalization, cast and factory families. Those are the tables below,
keyed by *base name*: the aten/prims packet name with an in-place trailing ``_`` removed
(``add_`` -> ``add``). A base name in a table wins over the tags.

Validated at import: no base name in two tables; names are lower-level identifiers, never an
overload (``"mul.Tensor"``) or a namespace (``"aten.mul"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from roundoff.ops.classes import OpClass


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Pointwise ops computed by a libm/libdevice approximation (or several IEEE ops with intermediate
# rounding inside one kernel): their fp32 results may differ between implementations by an ulp.
# sqrt, div and reciprocal are single correctly rounded IEEE operations: arithmetic.
_TRANSCENDENTAL = _names(
    """
    exp exp2 expm1 log log2 log10 log1p logaddexp logaddexp2 logit
    sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh
    arcsin arccos arctan arctan2 arcsinh arccosh arctanh angle hypot cbrt
    sigmoid rsqrt pow float_power erf erfc erfinv erf_inv erfcx
    gelu gelu_backward silu silu_backward mish mish_backward elu elu_backward celu selu
    softplus softplus_backward log_sigmoid_forward log_sigmoid_backward log_sigmoid
    infinitely_differentiable_gelu_backward
    digamma lgamma polygamma mvlgamma i0 igamma igammac zeta ndtri sinc xlogy
    bessel_i0 bessel_i0e bessel_i1 bessel_i1e bessel_j0 bessel_j1 spherical_bessel_j0
    special_entr special_log_ndtr special_xlog1py special_ndtr special_ndtri special_erfcx
    special_i0e special_i1 special_i1e special_expit special_exp2 special_expm1 special_erf
    special_erfc special_erfinv special_digamma special_psi special_gammaln special_polygamma
    special_i0 special_log1p special_logit special_sinc special_xlogy special_gammainc
    special_gammaincc special_multigammaln special_zeta
        glu glu_backward
"""
)

# No rounding of their own: the result is one of the inputs, a constant, or a boolean.
_COMPARISON_SELECT = _names(
    """
    eq ne lt le gt ge equal greater greater_equal less less_equal not_equal
    isfinite isinf isnan isneginf isposinf isreal isclose isin signbit
    logical_and logical_or logical_xor logical_not
    bitwise_and bitwise_or bitwise_xor bitwise_not __and__ __or__ __xor__
    where masked_fill maximum minimum fmax fmin max min clamp clamp_min clamp_max clip
    relu relu6 hardtanh hardtanh_backward threshold threshold_backward hardshrink
    sign sgn heaviside nan_to_num copysign nextafter
    sort argsort msort topk kthvalue searchsorted bucketize
    max_pool1d max_pool2d max_pool3d max_pool1d_with_indices max_pool2d_with_indices
    max_pool3d_with_indices adaptive_max_pool1d adaptive_max_pool2d adaptive_max_pool3d
        _low_memory_max_pool_with_offsets
"""
)

# Arithmetic ops that torch does not tag pointwise (composites, backward kernels).
_ARITHMETIC_EXTRA = _names(
    """
    addcmul addcdiv lerp divide multiply subtract negative absolute square fix floor_divide
    hardswish hardswish_backward hardsigmoid_backward leaky_relu_backward
    native_dropout_backward sigmoid_backward tanh_backward logit_backward
    mse_loss_backward smooth_l1_loss_backward huber_loss_backward
    soft_margin_loss_backward binary_cross_entropy_backward
    upsample_bilinear2d upsample_bicubic2d upsample_linear1d upsample_trilinear3d
    _upsample_bilinear2d_aa _upsample_bicubic2d_aa grid_sampler grid_sampler_2d
    affine_grid_generator kron
        leaky_relu hardsigmoid softshrink rsub true_divide prelu _prelu_kernel _prelu_kernel_backward
    special_round diff cross linalg_cross gradient rrelu_with_noise_backward _foreach_lerp
        fma
"""
)
# ``fma`` is Inductor's ``prims.fma`` (its softmax-backward decomposition emits it): one correctly
# rounded IEEE operation. torch 2.13 tags it pointwise, torch 2.9 does not, so it is listed.

# Ops that accumulate (sum over a dimension, a window or colliding indices).
_REDUCTION_EXTRA = _names(
    """
    cumsum cumprod logcumsumexp cummax cummin nanmean nansum trace dist frobenius_norm
    avg_pool1d avg_pool2d avg_pool3d avg_pool2d_backward avg_pool3d_backward
    adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d _adaptive_avg_pool2d
    _adaptive_avg_pool3d _adaptive_avg_pool2d_backward _adaptive_avg_pool3d_backward
    max_pool2d_with_indices_backward max_pool3d_with_indices_backward
    embedding_dense_backward embedding_backward index_add index_reduce scatter_add scatter_reduce
    index_put _unsafe_index_put gather_backward index_select_backward col2im unfold_backward
    mse_loss l1_loss smooth_l1_loss huber_loss soft_margin_loss binary_cross_entropy
    binary_cross_entropy_with_logits nll_loss nll_loss_forward nll_loss_backward nll_loss2d
    nll_loss2d_forward nll_loss2d_backward nll_loss_nd cross_entropy_loss kl_div
    cosine_similarity pairwise_distance sum_to_size
        std_mean count_nonzero norm special_logsumexp renorm cummaxmin_backward cumprod_backward
    cdist _cdist_forward pdist _pdist_forward _euclidean_dist embedding_bag _embedding_bag
    trapezoid trapz cumulative_trapezoid margin_ranking_loss hinge_embedding_loss
    triplet_margin_loss poisson_nll_loss multi_margin_loss multilabel_margin_loss
    multilabel_margin_loss_forward cosine_embedding_loss
"""
)

_MATMUL = _names(
    """
    mm bmm addmm addmv addr baddbmm addbmm matmul linear mv dot vdot outer ger inner
    tensordot einsum bilinear linalg_matmul linalg_vecdot chain_matmul linalg_multi_dot
    _scaled_mm _int_mm _addmm_activation _grouped_mm _scaled_grouped_mm
        affine_grid_generator_backward
"""
)

_CONVOLUTION = _names(
    """
    convolution _convolution _convolution_mode convolution_backward _convolution_double_backward
    conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d conv_tbc
    conv_tbc_backward thnn_conv2d slow_conv3d mkldnn_convolution
    """
)

_ATTENTION = _names(
    """
    scaled_dot_product_attention _scaled_dot_product_attention_math
    _scaled_dot_product_flash_attention _scaled_dot_product_flash_attention_backward
    _scaled_dot_product_flash_attention_for_cpu _scaled_dot_product_flash_attention_for_cpu_backward
    _scaled_dot_product_efficient_attention _scaled_dot_product_efficient_attention_backward
    _scaled_dot_product_cudnn_attention _scaled_dot_product_cudnn_attention_backward
    _flash_attention_forward _flash_attention_backward
    _efficient_attention_forward _efficient_attention_backward
    """
)

_NORMALIZATION = _names(
    """
    softmax _softmax _safe_softmax log_softmax _log_softmax special_softmax special_log_softmax
    _softmax_backward_data _log_softmax_backward_data
    layer_norm native_layer_norm native_layer_norm_backward
    rms_norm _fused_rms_norm _fused_rms_norm_backward
    group_norm native_group_norm native_group_norm_backward instance_norm
    batch_norm native_batch_norm native_batch_norm_backward batch_norm_backward
    _native_batch_norm_legit _native_batch_norm_legit_functional _native_batch_norm_legit_no_training
    _batch_norm_with_update _batch_norm_with_update_functional _batch_norm_no_update
    _batch_norm_impl_index _batch_norm_impl_index_backward cudnn_batch_norm cudnn_batch_norm_backward
    miopen_batch_norm miopen_batch_norm_backward _weight_norm _weight_norm_interface
        prepare_softmax_online
"""
)

# Exact: the result holds input values (or zeros) rearranged, selected or repeated.
_DATA_MOVEMENT = _names(
    """
    clone copy copy_to copy_strided contiguous lift lift_fresh lift_fresh_copy _to_cpu
    cat concat concatenate stack hstack vstack dstack column_stack row_stack _chunk_cat block_diag
    index index_select gather take take_along_dim scatter select_scatter slice_scatter
    diagonal_scatter as_strided_scatter index_copy index_fill masked_scatter masked_select
    constant_pad_nd pad _pad_circular _pad_enum reflection_pad1d reflection_pad2d reflection_pad3d
    replication_pad1d replication_pad2d replication_pad3d reflection_pad1d_backward
    reflection_pad2d_backward reflection_pad3d_backward
    flip fliplr flipud rev roll rot90 repeat tile repeat_interleave expand_as reshape view_as
    flatten unflatten _unsafe_view _reshape_alias_copy narrow split unsafe_split
    unsafe_split_with_sizes chunk unbind movedim swapaxes select_backward slice_backward
    diagonal_backward tril triu diag diag_embed diagflat embedding one_hot pixel_shuffle
    pixel_unshuffle channel_shuffle native_channel_shuffle im2col meshgrid broadcast_tensors
    atleast_1d atleast_2d atleast_3d conj conj_physical real imag resize_as
    upsample_nearest1d upsample_nearest2d upsample_nearest3d _upsample_nearest_exact1d
    _upsample_nearest_exact2d _upsample_nearest_exact3d
        value_selecting_reduction_backward trace_backward masked_select_backward narrow_copy
    split_with_sizes_copy detach data put max_unpool2d max_unpool3d _reshape_from_tensor
    _add_batch_dim _remove_batch_dim combinations as_strided collapse device_put
    inductor_force_stride_order
"""
)

_CAST = _names(
    """
    _to_copy to convert_element_type type_as _cast_Byte _cast_Char _cast_Double _cast_Float
    _cast_Half _cast_Int _cast_Long _cast_Short chalf _saturate_weight_to_fp16
        inductor_cvt_e8m0_rceil
"""
)

_RANDOM = _names(
    """
    bernoulli native_dropout dropout _fused_dropout rand rand_like randn randn_like randint
    randint_like randperm normal uniform cauchy exponential geometric log_normal rrelu
    rrelu_with_noise rrelu_with_noise_functional inductor_random inductor_seed inductor_seeds
    inductor_lookup_seed
        inductor_randint
"""
)

# Known ops without float arithmetic roundoff models: metadata queries, symbolic sizes,
# factories (their constant is rounded to the requested dtype as torch does), index outputs.
_OTHER = _names(
    """
    sym_size sym_numel sym_stride sym_storage_offset sym_is_contiguous sym_constrain_range
    sym_constrain_range_for_size size stride numel dim is_complex is_conj is_distributed
    is_floating_point is_inference is_leaf is_neg is_nonzero is_signed is_same_size get_device
    output_nr _version can_cast promote_types result_type item _local_scalar_dense scalar_tensor
    empty empty_like empty_strided empty_permuted new_empty new_empty_strided new_full new_ones
    new_zeros full full_like fill zero ones ones_like zeros zeros_like arange linspace logspace
    eye iota tril_indices triu_indices hann_window nonzero nonzero_numpy argwhere
    _unique2 unique_consecutive _assert_async _assert_scalar _assert_tensor_metadata
    _make_dep_token _make_token _sink_tokens _functional_assert_async _print
        _dim_arange _shape_as_tensor _is_zerotensor _has_compatible_shallow_copy_type
    _debug_has_internal_overlap cudnn_is_acceptable _nnpack_available is_vulkan_available
    retains_grad _propagate_xla_data get_gradients _use_cudnn_rnn_flatten_weight maximum_value
    minimum_value _low_memory_max_pool_offsets_to_indices resize
"""
)

# Known ops that roundoff deliberately does not model (their float arithmetic is real but
# outside the op-class vocabulary): listed so their tags (e.g. the seeded RNN composites)
# cannot drag them into a wrong class.
_NOT_MODELED = _names(
    """
    lstm gru rnn_relu rnn_tanh lstm_cell gru_cell rnn_relu_cell rnn_tanh_cell
    """
)

LITERAL_CLASSES: Mapping[OpClass, frozenset[str]] = MappingProxyType(
    {
        OpClass.POINTWISE_TRANSCENDENTAL: _TRANSCENDENTAL,
        OpClass.COMPARISON_SELECT: _COMPARISON_SELECT,
        OpClass.POINTWISE_ARITHMETIC: _ARITHMETIC_EXTRA,
        OpClass.REDUCTION: _REDUCTION_EXTRA,
        OpClass.MATMUL: _MATMUL,
        OpClass.CONVOLUTION: _CONVOLUTION,
        OpClass.ATTENTION: _ATTENTION,
        OpClass.NORMALIZATION: _NORMALIZATION,
        OpClass.DATA_MOVEMENT: _DATA_MOVEMENT,
        OpClass.CAST: _CAST,
        OpClass.RANDOM: _RANDOM,
        OpClass.OTHER: _OTHER,
        OpClass.UNMODELED: _NOT_MODELED,
    }
)


def _validate(tables: Mapping[OpClass, frozenset[str]]) -> dict[str, OpClass]:
    """Invert the tables; raise if a name is in two classes or is not a bare base name."""
    owner: dict[str, OpClass] = {}
    for op_class, names in tables.items():
        for name in names:
            if "." in name or not name.isidentifier():
                raise ValueError(
                    f"op table {op_class.name}: {name!r} is not a base op name; write the packet "
                    "name without namespace or overload (e.g. 'mul', not 'aten.mul.Tensor')"
                )
            if name.endswith("_") and not name.endswith("__"):
                raise ValueError(
                    f"op table {op_class.name}: {name!r} is an in-place name; list {name[:-1]!r}"
                )
            if name in owner:
                raise ValueError(
                    f"op {name!r} is in two op tables ({owner[name].name} and {op_class.name}); "
                    "keep it in exactly one"
                )
            owner[name] = op_class
    return owner


BASE_NAME_CLASS: Mapping[str, OpClass] = MappingProxyType(_validate(LITERAL_CLASSES))

#: Table names whose op not every torch of the supported range (2.9-2.13) has, with where it was
#: seen: classification of an op that exists is unaffected; tests accept only these as missing.
NOT_IN_EVERY_TORCH: Mapping[str, str] = MappingProxyType(
    {
        "inductor_cvt_e8m0_rceil": "prims op registered by torch._inductor.inductor_prims in torch "
        "2.13; absent from torch 2.9.1",
    }
)


#: aten overloads that torch tags ``Tag.reduction`` (recorded from torch 2.13). torch 2.9 has no such
#: tag, so `roundoff.ops.classify` reads this set where the tag is missing; where torch has the tag,
#: tests check that the two agree.
REDUCTION_OVERLOADS: frozenset[str] = frozenset({
    "all.all_out", "all.default", "all.dim", "all.dims", "all.dims_out", "all.out", "amax.default",
    "amax.out", "amin.default", "amin.out", "aminmax.default", "aminmax.out", "any.all_out",
    "any.default", "any.dim", "any.dims", "any.dims_out", "any.out", "argmax.default", "argmax.out",
    "argmin.default", "argmin.out", "count_nonzero.default", "count_nonzero.dim_IntList",
    "linalg__powsum.default", "linalg_vector_norm.default",
    "linalg_vector_norm.out", "logsumexp.default", "logsumexp.out",
    "max.default", "max.dim", "max.dim_max", "max.unary_out", "mean.default", "mean.dim",
    "mean.dtype_out", "mean.out", "min.default", "min.dim", "min.dim_min", "min.unary_out",
    "nansum.default", "nansum.out", "norm.Scalar", "norm.ScalarOpt_dim", "norm.ScalarOpt_dim_dtype",
    "norm.ScalarOpt_dtype", "norm.dtype_out", "norm.out", "prod.default", "prod.dim_int",
    "prod.int_out", "std.correction", "std.correction_out", "std.default", "std.dim", "std.out",
    "std_mean.correction", "std_mean.default", "std_mean.dim", "sum.IntList_out", "sum.default",
    "sum.dim_IntList", "var.correction", "var.correction_out", "var.default", "var.dim", "var.out",
    "var_mean.correction", "var_mean.default", "var_mean.dim",
})  # fmt: skip
