# AOT ID: ['0_inference']
from ctypes import c_void_p, c_long, c_int
import torch
import math
import random
import os
import tempfile
from math import inf, nan
from cmath import nanj
from torch._inductor.hooks import run_intermediate_hooks
from torch._inductor.utils import maybe_profile
from torch._inductor.codegen.memory_planning import _align as align
from torch import device, empty_strided
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.select_algorithm import extern_kernels
import triton
import triton.language as tl
from torch._inductor.runtime.triton_heuristics import start_graph, end_graph
from torch._C import _cuda_getCurrentRawStream as get_raw_stream

aten = torch.ops.aten
inductor_ops = torch.ops.inductor
_quantized = torch.ops._quantized
assert_size_stride = torch._C._dynamo.guards.assert_size_stride
assert_alignment = torch._C._dynamo.guards.assert_alignment
empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu
empty_strided_cpu_pinned = torch._C._dynamo.guards._empty_strided_cpu_pinned
empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda
empty_strided_xpu = torch._C._dynamo.guards._empty_strided_xpu
empty_strided_mtia = torch._C._dynamo.guards._empty_strided_mtia
reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor
alloc_from_pool = torch.ops.inductor._alloc_from_pool
async_compile = AsyncCompile()
empty_strided_p2p = torch._C._distributed_c10d._SymmetricMemory.empty_strided_p2p


# kernel path: /tmp/ind/db/cdbrlq776eoarq6hxmwu6kqg5az5yaporbb2vi7okqfm2jsj5ytv.py
# Topologically Sorted Source Nodes: [embedding, _to_copy_4, pow_1, mean, add_3, rsqrt, mul_2, _to_copy_5, mul_3], Original ATen: [aten.embedding, aten._to_copy, aten.pow, aten.mean, aten.add, aten.rsqrt, aten.mul]
# Source node to ATen node mapping:
#   _to_copy_4 => convert_element_type_4
#   _to_copy_5 => convert_element_type_5
#   add_3 => add_3
#   embedding => embedding
#   mean => mean
#   mul_2 => mul_2
#   mul_3 => mul_3
#   pow_1 => pow_1
#   rsqrt => rsqrt
# Graph fragment:
#   %arg1_1 : Tensor "i64[1, 64][64, 1]cuda:0" = PlaceHolder[target=arg1_1]
#   %arg2_1 : Tensor "bf16[8192, 128][128, 1]cuda:0" = PlaceHolder[target=arg2_1]
#   %arg10_1 : Tensor "bf16[128][1]cuda:0" = PlaceHolder[target=arg10_1]
#   %buf0 : Tensor "f32[1, 64, 1][64, 1, 64]cuda:0" = PlaceHolder[target=buf0]
#   %embedding : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.embedding.default](args = (%arg2_1, %arg1_1), kwargs = {})
#   %convert_element_type_4 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%embedding, torch.float32), kwargs = {})
#   %pow_1 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%convert_element_type_4, 2), kwargs = {})
#   %mean : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mean.dim](args = (%pow_1, [-1], True), kwargs = {})
#   %add_3 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mean, 1e-06), kwargs = {})
#   %rsqrt : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_3,), kwargs = {})
#   %mul_2 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_4, %rsqrt), kwargs = {})
#   %convert_element_type_5 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_2, torch.bfloat16), kwargs = {})
#   %mul_3 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.mul.Tensor](args = (%arg10_1, %convert_element_type_5), kwargs = {})
#   return %buf0,%mul_3
triton_red_fused__to_copy_add_embedding_mean_mul_pow_rsqrt_0 = async_compile.triton('triton_red_fused__to_copy_add_embedding_mean_mul_pow_rsqrt_0', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.reduction(
    size_hints={'x': 64, 'r0_': 128},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*i64', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', 'out_ptr0': '*fp32', 'out_ptr1': '*bf16', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr', 'R0_BLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_red_fused__to_copy_add_embedding_mean_mul_pow_rsqrt_0', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 2, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 1024, 'r0_': 33024}}
)
@triton.jit
def triton_red_fused__to_copy_add_embedding_mean_mul_pow_rsqrt_0(in_ptr0, in_ptr1, in_ptr2, out_ptr0, out_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    xnumel = 64
    r0_numel = 128
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask, eviction_policy='evict_last')
    _tmp10 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp1 = tl.full([1, 1], 8192, tl.int32)
        tmp2 = tmp0 + tmp1
        tmp3 = tmp0 < 0
        tmp4 = tl.where(tmp3, tmp2, tmp0)
        tl.device_assert(((0 <= tmp4) & (tmp4 < 8192)) | ~(xmask), "index out of bounds: 0 <= tmp4 < 8192")
        tmp6 = tl.load(in_ptr1 + (r0_1 + 128*tmp4), r0_mask & xmask, eviction_policy='evict_last', other=0.0).to(tl.float32)
        tmp7 = tmp6.to(tl.float32)
        tmp8 = tmp7 * tmp7
        tmp9 = tl.broadcast_to(tmp8, [XBLOCK, R0_BLOCK])
        tmp11 = _tmp10 + tmp9
        _tmp10 = tl.where(r0_mask & xmask, tmp11, _tmp10)
    tmp10 = tl.sum(_tmp10, 1)[:, None]
    tl.store(out_ptr0 + (x0), tmp10, xmask)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp12 = tl.load(in_ptr2 + (r0_1), r0_mask, eviction_policy='evict_last', other=0.0).to(tl.float32)
        tmp13 = tl.full([1, 1], 8192, tl.int32)
        tmp14 = tmp0 + tmp13
        tmp15 = tmp0 < 0
        tmp16 = tl.where(tmp15, tmp14, tmp0)
        tl.device_assert(((0 <= tmp16) & (tmp16 < 8192)) | ~(xmask), "index out of bounds: 0 <= tmp16 < 8192")
        tmp18 = tl.load(in_ptr1 + (r0_1 + 128*tmp16), r0_mask & xmask, eviction_policy='evict_first', other=0.0).to(tl.float32)
        tmp19 = tmp18.to(tl.float32)
        tmp20 = tl.full([1, 1], 128.0, tl.float32)
        tmp21 = (tmp10 / tmp20)
        tmp22 = tl.full([1, 1], 1e-06, tl.float32)
        tmp23 = tmp21 + tmp22
        tmp24 = libdevice.rsqrt(tmp23)
        tmp25 = tmp19 * tmp24
        tmp26 = tmp25.to(tl.float32)
        tmp27 = tmp12 * tmp26
        tl.store(out_ptr1 + (r0_1 + 128*x0), tmp27, r0_mask & xmask)
''', device_str='cuda')


# kernel path: /tmp/ind/5t/c5ta3ugneut4wfwyszzk2kbyzasabeu7tz7cv2jvibfjizu27uje.py
# Topologically Sorted Source Nodes: [unsqueeze_13, unsqueeze_14, expand_1, _to_copy], Original ATen: [aten.unsqueeze, aten.expand, aten._to_copy]
# Source node to ATen node mapping:
#   _to_copy => convert_element_type
#   expand_1 => expand_1
#   unsqueeze_13 => unsqueeze_7
#   unsqueeze_14 => unsqueeze_8
# Graph fragment:
#   %arg23_1 : Tensor "bf16[32][1]cuda:0" = PlaceHolder[target=arg23_1]
#   %unsqueeze_7 : Tensor "bf16[1, 32][32, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%arg23_1, 0), kwargs = {})
#   %unsqueeze_8 : Tensor "bf16[1, 32, 1][32, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%unsqueeze_7, 2), kwargs = {})
#   %expand_1 : Tensor "bf16[1, 32, 1][32, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.expand.default](args = (%unsqueeze_8, [1, -1, 1]), kwargs = {})
#   %convert_element_type : Tensor "f32[1, 32, 1][32, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%expand_1, torch.float32), kwargs = {})
#   return %expand_2
triton_poi_fused__to_copy_expand_unsqueeze_1 = async_compile.triton('triton_poi_fused__to_copy_expand_unsqueeze_1', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 32}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused__to_copy_expand_unsqueeze_1', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 1, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 320}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused__to_copy_expand_unsqueeze_1(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 32
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask).to(tl.float32)
    tmp1 = tmp0.to(tl.float32)
    tl.store(out_ptr0 + (x0), tmp1, xmask)
''', device_str='cuda')


# kernel path: /tmp/ind/mj/cmjqbl7iaszzspi7huyxxuut34ejgcz4uqnuktpzuumfn2d2jx5b.py
# Topologically Sorted Source Nodes: [arange, add, unsqueeze, unsqueeze_15, _to_copy_1], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten._to_copy]
# Source node to ATen node mapping:
#   _to_copy_1 => convert_element_type_1
#   add => add
#   arange => iota
#   unsqueeze => unsqueeze
#   unsqueeze_15 => unsqueeze_9
# Graph fragment:
#   %iota : Tensor "i64[64][1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.iota.default](args = (64,), kwargs = {start: 0, step: 1, dtype: torch.int64, device: cuda:0, requires_grad: False})
#   %add : Tensor "i64[64][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%iota, 0), kwargs = {})
#   %unsqueeze : Tensor "i64[1, 64][64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%add, 0), kwargs = {})
#   %unsqueeze_9 : Tensor "i64[1, 1, 64][64, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%unsqueeze, 1), kwargs = {})
#   %convert_element_type_1 : Tensor "f32[1, 1, 64][64, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%unsqueeze_9, torch.float32), kwargs = {})
#   return %expand_3
triton_poi_fused__to_copy_add_arange_unsqueeze_2 = async_compile.triton('triton_poi_fused__to_copy_add_arange_unsqueeze_2', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 64}, 
    filename=__file__,
    triton_meta={'signature': {'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused__to_copy_add_arange_unsqueeze_2', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 0, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 512}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused__to_copy_add_arange_unsqueeze_2(out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 64
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = x0
    tmp1 = tmp0.to(tl.float32)
    tl.store(out_ptr0 + (x0), tmp1, xmask)
''', device_str='cuda')


# kernel path: /tmp/ind/g7/cg7zsgdkgmqdpud2kzfjjmehc4gfgdxlsqfdyupmptmqae4g2koy.py
# Topologically Sorted Source Nodes: [_unsafe_view_1, view_3, transpose_1, bmm, transpose, cat_1, cos, mul, _to_copy_2, unsqueeze_16, mul_4, slice_5, neg, slice_4, cat_2, sin, mul_1, _to_copy_3, unsqueeze_17, mul_5, add_4], Original ATen: [aten._unsafe_view, aten.view, aten.transpose, aten.bmm, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.unsqueeze, aten.slice, aten.neg, aten.sin, aten.add]
# Source node to ATen node mapping:
#   _to_copy_2 => convert_element_type_2
#   _to_copy_3 => convert_element_type_3
#   _unsafe_view_1 => view_5
#   add_4 => add_4
#   bmm => unsqueeze_default
#   cat_1 => clone_1, expand_4, unsqueeze_10, view_3
#   cat_2 => cat
#   cos => cos
#   mul => mul
#   mul_1 => mul_1
#   mul_4 => mul_4
#   mul_5 => mul_5
#   neg => neg
#   sin => sin
#   slice_4 => slice_1
#   slice_5 => slice_2
#   transpose => permute
#   transpose_1 => permute_2
#   unsqueeze_16 => unsqueeze_11
#   unsqueeze_17 => unsqueeze_12
#   view_3 => view_6
# Graph fragment:
#   %mm : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm]
#   %mm_default : Tensor "f32[32, 64][64, 1]cuda:0" = PlaceHolder[target=mm_default]
#   %view_5 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm, [1, 64, 128]), kwargs = {})
#   %view_6 : Tensor "bf16[1, 64, 2, 64][8192, 128, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%view_5, [1, 64, -1, 64]), kwargs = {})
#   %permute_2 : Tensor "bf16[1, 2, 64, 64][8192, 64, 128, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.permute.default](args = (%view_6, [0, 2, 1, 3]), kwargs = {})
#   %unsqueeze_default : Tensor "f32[1, 32, 64][2048, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%mm_default, 0), kwargs = {})
#   %permute : Tensor "f32[1, 64, 32][2048, 1, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%unsqueeze_default, [0, 2, 1]), kwargs = {})
#   %unsqueeze_10 : Tensor "f32[1, 64, 1, 32][2048, 1, 2048, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%permute, 2), kwargs = {})
#   %expand_4 : Tensor "f32[1, 64, 2, 32][2048, 1, 0, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.expand.default](args = (%unsqueeze_10, [1, 64, 2, 32]), kwargs = {})
#   %clone_1 : Tensor "f32[1, 64, 2, 32][4096, 64, 32, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.clone.default](args = (%expand_4,), kwargs = {memory_format: torch.contiguous_format})
#   %view_3 : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.reshape.default](args = (%clone_1, [1, 64, 64]), kwargs = {})
#   %cos : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.cos.default](args = (%view_3,), kwargs = {})
#   %mul : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%cos, 1.0), kwargs = {})
#   %convert_element_type_2 : Tensor "bf16[1, 64, 64][4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul, torch.bfloat16), kwargs = {})
#   %unsqueeze_11 : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%convert_element_type_2, 1), kwargs = {})
#   %mul_4 : Tensor "bf16[1, 2, 64, 64][8192, 64, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%permute_2, %unsqueeze_11), kwargs = {})
#   %slice_2 : Tensor "bf16[1, 2, 64, 32][8192, 64, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice.Tensor](args = (%permute_2, 3, 32, 9223372036854775807), kwargs = {})
#   %neg : Tensor "bf16[1, 2, 64, 32][4096, 32, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.neg.default](args = (%slice_2,), kwargs = {})
#   %slice_1 : Tensor "bf16[1, 2, 64, 32][8192, 64, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice.Tensor](args = (%permute_2, 3, 0, 32), kwargs = {})
#   %cat : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.cat.default](args = ([%neg, %slice_1], -1), kwargs = {})
#   %sin : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sin.default](args = (%view_3,), kwargs = {})
#   %mul_1 : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%sin, 1.0), kwargs = {})
#   %convert_element_type_3 : Tensor "bf16[1, 64, 64][4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_1, torch.bfloat16), kwargs = {})
#   %unsqueeze_12 : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%convert_element_type_3, 1), kwargs = {})
#   %mul_5 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%cat, %unsqueeze_12), kwargs = {})
#   %add_4 : Tensor "bf16[1, 2, 64, 64][8192, 64, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_4, %mul_5), kwargs = {})
#   return %expand_7
triton_poi_fused__to_copy__unsafe_view_add_bmm_cat_cos_mul_neg_sin_slice_transpose_unsqueeze_view_3 = async_compile.triton('triton_poi_fused__to_copy__unsafe_view_add_bmm_cat_cos_mul_neg_sin_slice_transpose_unsqueeze_view_3', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'y': 64, 'x': 128}, tile_hint=TileHint.DEFAULT,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'in_ptr1': '*fp32', 'out_ptr0': '*bf16', 'ynumel': 'i32', 'xnumel': 'i32', 'YBLOCK': 'constexpr', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid2D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused__to_copy__unsafe_view_add_bmm_cat_cos_mul_neg_sin_slice_transpose_unsqueeze_view_3', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 4, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'y': 8192, 'x': 81920}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused__to_copy__unsafe_view_add_bmm_cat_cos_mul_neg_sin_slice_transpose_unsqueeze_view_3(in_ptr0, in_ptr1, out_ptr0, ynumel, xnumel, YBLOCK : tl.constexpr, XBLOCK : tl.constexpr):
    ynumel = 64
    xnumel = 128
    yoffset = tl.program_id(1) * YBLOCK
    yindex = yoffset + tl.arange(0, YBLOCK)[:, None]
    ymask = yindex < ynumel
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[None, :]
    xmask = xindex < xnumel
    x3 = xindex
    y0 = yindex
    x1 = (xindex % 64)
    x2 = xindex // 64
    tmp0 = tl.load(in_ptr0 + (x3 + 128*y0), xmask & ymask, eviction_policy='evict_last').to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (y0 + 64*((x1 % 32))), xmask & ymask, eviction_policy='evict_last')
    tmp2 = tl_math.cos(tmp1)
    tmp3 = tl.full([1, 1], 1.0, tl.float32)
    tmp4 = tmp2 * tmp3
    tmp5 = tmp4.to(tl.float32)
    tmp6 = tmp0 * tmp5
    tmp7 = x1
    tmp8 = tl.full([1, 1], 0, tl.int64)
    tmp9 = tmp7 >= tmp8
    tmp10 = tl.full([1, 1], 32, tl.int64)
    tmp11 = tmp7 < tmp10
    tmp12 = tl.load(in_ptr0 + (32 + 64*x2 + 128*y0 + (x1)), tmp11 & xmask & ymask, eviction_policy='evict_last', other=0.0).to(tl.float32)
    tmp13 = -tmp12
    tmp14 = tl.full(tmp13.shape, 0.0, tmp13.dtype)
    tmp15 = tl.where(tmp11, tmp13, tmp14)
    tmp16 = tmp7 >= tmp10
    tmp17 = tl.full([1, 1], 64, tl.int64)
    tmp18 = tmp7 < tmp17
    tmp19 = tl.load(in_ptr0 + (64*x2 + 128*y0 + ((-32) + x1)), tmp16 & xmask & ymask, eviction_policy='evict_last', other=0.0).to(tl.float32)
    tmp20 = tl.where(tmp11, tmp15, tmp19)
    tmp21 = tl_math.sin(tmp1)
    tmp22 = tmp21 * tmp3
    tmp23 = tmp22.to(tl.float32)
    tmp24 = tmp20 * tmp23
    tmp25 = tmp6 + tmp24
    tl.store(out_ptr0 + (x1 + 64*y0 + 4096*x2), tmp25, xmask & ymask)
''', device_str='cuda')


# kernel path: /tmp/ind/i2/ci2yi3ydkx56xcqqnbft2u6ipfvysxe5dgtsxqcyuzku3mmk4qje.py
# Topologically Sorted Source Nodes: [bmm, transpose, cat_1, cos, mul, _to_copy_2, unsqueeze_16, sin, mul_1, _to_copy_3, unsqueeze_17, _unsafe_view_2, view_5, transpose_2, mul_6, slice_7, neg_1, slice_6, cat_3, mul_7, add_5], Original ATen: [aten.bmm, aten.transpose, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.unsqueeze, aten.sin, aten._unsafe_view, aten.view, aten.slice, aten.neg, aten.add]
# Source node to ATen node mapping:
#   _to_copy_2 => convert_element_type_2
#   _to_copy_3 => convert_element_type_3
#   _unsafe_view_2 => view_8
#   add_5 => add_5
#   bmm => unsqueeze_default
#   cat_1 => clone_1, expand_4, unsqueeze_10, view_3
#   cat_3 => cat_1
#   cos => cos
#   mul => mul
#   mul_1 => mul_1
#   mul_6 => mul_6
#   mul_7 => mul_7
#   neg_1 => neg_1
#   sin => sin
#   slice_6 => slice_3
#   slice_7 => slice_4
#   transpose => permute
#   transpose_2 => permute_4
#   unsqueeze_16 => unsqueeze_11
#   unsqueeze_17 => unsqueeze_12
#   view_5 => view_9
# Graph fragment:
#   %mm_1 : Tensor "bf16[64, 64][64, 1]cuda:0" = PlaceHolder[target=mm_1]
#   %mm_default : Tensor "f32[32, 64][64, 1]cuda:0" = PlaceHolder[target=mm_default]
#   %unsqueeze_default : Tensor "f32[1, 32, 64][2048, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%mm_default, 0), kwargs = {})
#   %permute : Tensor "f32[1, 64, 32][2048, 1, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%unsqueeze_default, [0, 2, 1]), kwargs = {})
#   %unsqueeze_10 : Tensor "f32[1, 64, 1, 32][2048, 1, 2048, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%permute, 2), kwargs = {})
#   %expand_4 : Tensor "f32[1, 64, 2, 32][2048, 1, 0, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.expand.default](args = (%unsqueeze_10, [1, 64, 2, 32]), kwargs = {})
#   %clone_1 : Tensor "f32[1, 64, 2, 32][4096, 64, 32, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.clone.default](args = (%expand_4,), kwargs = {memory_format: torch.contiguous_format})
#   %view_3 : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.reshape.default](args = (%clone_1, [1, 64, 64]), kwargs = {})
#   %cos : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.cos.default](args = (%view_3,), kwargs = {})
#   %mul : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%cos, 1.0), kwargs = {})
#   %convert_element_type_2 : Tensor "bf16[1, 64, 64][4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul, torch.bfloat16), kwargs = {})
#   %unsqueeze_11 : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%convert_element_type_2, 1), kwargs = {})
#   %sin : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sin.default](args = (%view_3,), kwargs = {})
#   %mul_1 : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%sin, 1.0), kwargs = {})
#   %convert_element_type_3 : Tensor "bf16[1, 64, 64][4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_1, torch.bfloat16), kwargs = {})
#   %unsqueeze_12 : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%convert_element_type_3, 1), kwargs = {})
#   %view_8 : Tensor "bf16[1, 64, 64][4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_1, [1, 64, 64]), kwargs = {})
#   %view_9 : Tensor "bf16[1, 64, 1, 64][4096, 64, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%view_8, [1, 64, -1, 64]), kwargs = {})
#   %permute_4 : Tensor "bf16[1, 1, 64, 64][4096, 64, 64, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.permute.default](args = (%view_9, [0, 2, 1, 3]), kwargs = {})
#   %mul_6 : Tensor "bf16[1, 1, 64, 64][4096, 64, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%permute_4, %unsqueeze_11), kwargs = {})
#   %slice_4 : Tensor "bf16[1, 1, 64, 32][4096, 64, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice.Tensor](args = (%permute_4, 3, 32, 9223372036854775807), kwargs = {})
#   %neg_1 : Tensor "bf16[1, 1, 64, 32][2048, 32, 32, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.neg.default](args = (%slice_4,), kwargs = {})
#   %slice_3 : Tensor "bf16[1, 1, 64, 32][4096, 64, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice.Tensor](args = (%permute_4, 3, 0, 32), kwargs = {})
#   %cat_1 : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.cat.default](args = ([%neg_1, %slice_3], -1), kwargs = {})
#   %mul_7 : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%cat_1, %unsqueeze_12), kwargs = {})
#   %add_5 : Tensor "bf16[1, 1, 64, 64][4096, 64, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_6, %mul_7), kwargs = {})
#   return %add_5
triton_poi_fused__to_copy__unsafe_view_add_bmm_cat_cos_mul_neg_sin_slice_transpose_unsqueeze_view_4 = async_compile.triton('triton_poi_fused__to_copy__unsafe_view_add_bmm_cat_cos_mul_neg_sin_slice_transpose_unsqueeze_view_4', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'y': 64, 'x': 64}, tile_hint=TileHint.DEFAULT,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'in_ptr1': '*fp32', 'out_ptr0': '*bf16', 'ynumel': 'i32', 'xnumel': 'i32', 'YBLOCK': 'constexpr', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid2D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused__to_copy__unsafe_view_add_bmm_cat_cos_mul_neg_sin_slice_transpose_unsqueeze_view_4', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 4, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'y': 40960, 'x': 8192}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused__to_copy__unsafe_view_add_bmm_cat_cos_mul_neg_sin_slice_transpose_unsqueeze_view_4(in_ptr0, in_ptr1, out_ptr0, ynumel, xnumel, YBLOCK : tl.constexpr, XBLOCK : tl.constexpr):
    ynumel = 64
    xnumel = 64
    yoffset = tl.program_id(1) * YBLOCK
    yindex = yoffset + tl.arange(0, YBLOCK)[:, None]
    ymask = yindex < ynumel
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[None, :]
    xmask = xindex < xnumel
    x1 = xindex
    y0 = yindex
    tmp0 = tl.load(in_ptr0 + (y0 + 64*x1), xmask & ymask).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (x1 + 64*((y0 % 32))), xmask & ymask)
    tmp2 = tl_math.cos(tmp1)
    tmp3 = tl.full([1, 1], 1.0, tl.float32)
    tmp4 = tmp2 * tmp3
    tmp5 = tmp4.to(tl.float32)
    tmp6 = tmp0 * tmp5
    tmp7 = y0
    tmp8 = tl.full([1, 1], 0, tl.int64)
    tmp9 = tmp7 >= tmp8
    tmp10 = tl.full([1, 1], 32, tl.int64)
    tmp11 = tmp7 < tmp10
    tmp12 = tl.load(in_ptr0 + (32 + 64*x1 + (y0)), tmp11 & xmask & ymask, eviction_policy='evict_last', other=0.0).to(tl.float32)
    tmp13 = -tmp12
    tmp14 = tl.full(tmp13.shape, 0.0, tmp13.dtype)
    tmp15 = tl.where(tmp11, tmp13, tmp14)
    tmp16 = tmp7 >= tmp10
    tmp17 = tl.full([1, 1], 64, tl.int64)
    tmp18 = tmp7 < tmp17
    tmp19 = tl.load(in_ptr0 + (64*x1 + ((-32) + y0)), tmp16 & xmask & ymask, eviction_policy='evict_last', other=0.0).to(tl.float32)
    tmp20 = tl.where(tmp11, tmp15, tmp19)
    tmp21 = tl_math.sin(tmp1)
    tmp22 = tmp21 * tmp3
    tmp23 = tmp22.to(tl.float32)
    tmp24 = tmp20 * tmp23
    tmp25 = tmp6 + tmp24
    tl.store(out_ptr0 + (y0 + 64*x1), tmp25, xmask & ymask)
''', device_str='cuda')


# kernel path: /tmp/ind/eu/ceusj3tktbzj72bmwwhn6oael23tabde234m5w73zbz22xabwz64.py
# Topologically Sorted Source Nodes: [_unsafe_view_4, mul_8, arange_4, add_2, unsqueeze_10, unsqueeze_11, unsqueeze_12, arange_3, add_1, unsqueeze_7, unsqueeze_8, unsqueeze_9, le, expand, scalar_tensor, where, add_6, _to_copy_6, _softmax, _to_copy_7], Original ATen: [aten._unsafe_view, aten.mul, aten.arange, aten.add, aten.unsqueeze, aten.le, aten.expand, aten.scalar_tensor, aten.where, aten._to_copy, prims.prepare_softmax_online, aten.sub, aten.exp, aten._softmax]
# Source node to ATen node mapping:
#   _softmax => div
#   _to_copy_6 => convert_element_type_14
#   _to_copy_7 => convert_element_type_15
#   _unsafe_view_4 => view_17
#   add_1 => add_1
#   add_2 => add_2
#   add_6 => add_6
#   arange_3 => iota_1
#   arange_4 => iota_2
#   expand => expand
#   le => le
#   mul_8 => mul_8
#   scalar_tensor => full_default
#   unsqueeze_10 => unsqueeze_4
#   unsqueeze_11 => unsqueeze_5
#   unsqueeze_12 => unsqueeze_6
#   unsqueeze_7 => unsqueeze_1
#   unsqueeze_8 => unsqueeze_2
#   unsqueeze_9 => unsqueeze_3
#   where => where
# Graph fragment:
#   %bmm_1 : Tensor "bf16[2, 64, 64][4096, 64, 1]cuda:0" = PlaceHolder[target=bmm_1]
#   %arg0_1 : Tensor "bf16[][]cuda:0" = PlaceHolder[target=arg0_1]
#   %getitem_4 : Tensor "f32[1, 2, 64, 1][128, 64, 1, 128]cuda:0" = PlaceHolder[target=getitem_4]
#   %getitem_5 : Tensor "f32[1, 2, 64, 1][128, 64, 1, 128]cuda:0" = PlaceHolder[target=getitem_5]
#   %view_17 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%bmm_1, [1, 2, 64, 64]), kwargs = {})
#   %mul_8 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%view_17, 0.125), kwargs = {})
#   %iota_2 : Tensor "i64[64][1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.iota.default](args = (64,), kwargs = {start: 0, step: 1, dtype: torch.int64, device: cuda:0, requires_grad: False})
#   %add_2 : Tensor "i64[64][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%iota_2, 0), kwargs = {})
#   %unsqueeze_4 : Tensor "i64[1, 64][64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%add_2, 0), kwargs = {})
#   %unsqueeze_5 : Tensor "i64[1, 1, 64][64, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%unsqueeze_4, 1), kwargs = {})
#   %unsqueeze_6 : Tensor "i64[1, 1, 1, 64][64, 64, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%unsqueeze_5, 2), kwargs = {})
#   %iota_1 : Tensor "i64[64][1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.iota.default](args = (64,), kwargs = {start: 0, step: 1, dtype: torch.int64, device: cuda:0, requires_grad: False})
#   %add_1 : Tensor "i64[64][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%iota_1, 0), kwargs = {})
#   %unsqueeze_1 : Tensor "i64[1, 64][64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%add_1, 0), kwargs = {})
#   %unsqueeze_2 : Tensor "i64[1, 1, 64][64, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%unsqueeze_1, 1), kwargs = {})
#   %unsqueeze_3 : Tensor "i64[1, 1, 64, 1][64, 64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%unsqueeze_2, 3), kwargs = {})
#   %le : Tensor "b8[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.le.Tensor](args = (%unsqueeze_6, %unsqueeze_3), kwargs = {})
#   %expand : Tensor "b8[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.expand.default](args = (%le, [1, -1, 64, 64]), kwargs = {})
#   %full_default : Tensor "bf16[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], -3.3895313892515355e+38), kwargs = {dtype: torch.bfloat16, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %where : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.where.self](args = (%expand, %arg0_1, %full_default), kwargs = {})
#   %add_6 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_8, %where), kwargs = {})
#   %convert_element_type_14 : Tensor "f32[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_6, torch.float32), kwargs = {})
#   %prepare_softmax_online_default_2 : [num_users=2] = call_function[target=torch.ops.prims.prepare_softmax_online.default](args = (%convert_element_type_14, -1), kwargs = {})
#   %sub_tensor_2 : Tensor "f32[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%convert_element_type_14, %getitem_4), kwargs = {})
#   %exp_default_2 : Tensor "f32[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.exp.default](args = (%sub_tensor_2,), kwargs = {})
#   %div : Tensor "f32[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.div.Tensor](args = (%exp_default_2, %getitem_5), kwargs = {})
#   %convert_element_type_15 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%div, torch.bfloat16), kwargs = {})
#   return %getitem_4,%getitem_5,%expand_9
triton_per_fused__softmax__to_copy__unsafe_view_add_arange_exp_expand_le_mul_prepare_softmax_online_scalar_tensor_sub_unsqueeze_where_5 = async_compile.triton('triton_per_fused__softmax__to_copy__unsafe_view_add_arange_exp_expand_le_mul_prepare_softmax_online_scalar_tensor_sub_unsqueeze_where_5', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 128, 'r0_': 64},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'out_ptr0': '*fp32', 'out_ptr1': '*fp32', 'out_ptr2': '*bf16', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused__softmax__to_copy__unsafe_view_add_arange_exp_expand_le_mul_prepare_softmax_online_scalar_tensor_sub_unsqueeze_where_5', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 2, 'num_store': 3, 'num_reduction': 4, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 2048, 'r0_': 49152}}
)
@triton.jit
def triton_per_fused__softmax__to_copy__unsafe_view_add_arange_exp_expand_le_mul_prepare_softmax_online_scalar_tensor_sub_unsqueeze_where_5(in_ptr0, in_ptr1, out_ptr0, out_ptr1, out_ptr2, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 128
    r0_numel = 64
    R0_BLOCK: tl.constexpr = 64
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_2 = r0_index
    x3 = xindex
    x0 = (xindex % 64)
    tmp0 = tl.load(in_ptr0 + (r0_2 + 64*x3), xmask, other=0.0).to(tl.float32)
    tmp6 = tl.load(in_ptr1 + (0)).to(tl.float32)
    tmp7 = tl.broadcast_to(tmp6, [1, 1])
    tmp1 = tl.full([1, 1], 0.125, tl.float32)
    tmp2 = tmp0 * tmp1
    tmp3 = r0_2
    tmp4 = x0
    tmp5 = tmp3 <= tmp4
    tmp8 = tl.full([1, 1], -3.3895313892515355e+38, tl.float32)
    tmp9 = tl.where(tmp5, tmp7, tmp8)
    tmp10 = tmp2 + tmp9
    tmp11 = tmp10.to(tl.float32)
    tmp12 = tl.broadcast_to(tmp11, [XBLOCK, R0_BLOCK])
    tmp14 = tl.broadcast_to(tmp12, [XBLOCK, R0_BLOCK])
    tmp16 = tl.where(xmask, tmp14, float("-inf"))
    tmp17 = triton_helpers.max2(tmp16, 1)[:, None].to(tl.float32)
    tmp18 = tmp12 - tmp17
    tmp19 = libdevice.exp(tmp18)
    tmp20 = tl.broadcast_to(tmp19, [XBLOCK, R0_BLOCK])
    tmp22 = tl.where(xmask, tmp20, 0)
    tmp23 = tl.sum(tmp22, 1)[:, None].to(tl.float32)
    tmp24 = tmp11 - tmp17
    tmp25 = libdevice.exp(tmp24)
    tmp26 = (tmp25 / tmp23)
    tmp27 = tmp26.to(tl.float32)
    tl.store(out_ptr2 + (r0_2 + 64*x3), tmp27, xmask)
    tl.store(out_ptr0 + (x3), tmp17, xmask)
    tl.store(out_ptr1 + (x3), tmp23, xmask)
''', device_str='cuda')


# kernel path: /tmp/ind/f4/cf46xarn2but2o4jqpf2dfwhffrnonrm7xks5apuiaap3bij7gol.py
# Topologically Sorted Source Nodes: [_unsafe_view_5, transpose_5, clone, view_14, view_15], Original ATen: [aten._unsafe_view, aten.transpose, aten.clone, aten.view]
# Source node to ATen node mapping:
#   _unsafe_view_5 => view_20
#   clone => clone_3
#   transpose_5 => permute_8
#   view_14 => view_21
#   view_15 => view_22
# Graph fragment:
#   %bmm_2 : Tensor "bf16[2, 64, 64][4096, 64, 1]cuda:0" = PlaceHolder[target=bmm_2]
#   %view_20 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%bmm_2, [1, 2, 64, 64]), kwargs = {})
#   %permute_8 : Tensor "bf16[1, 64, 2, 64][8192, 64, 4096, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_20, [0, 2, 1, 3]), kwargs = {})
#   %clone_3 : Tensor "bf16[1, 64, 2, 64][8192, 128, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.clone.default](args = (%permute_8,), kwargs = {memory_format: torch.contiguous_format})
#   %view_21 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%clone_3, [1, 64, -1]), kwargs = {})
#   %view_22 : Tensor "bf16[64, 128][128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.reshape.default](args = (%view_21, [64, 128]), kwargs = {})
#   return %view_22
triton_poi_fused__unsafe_view_clone_transpose_view_6 = async_compile.triton('triton_poi_fused__unsafe_view_clone_transpose_view_6', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 8192}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'out_ptr0': '*bf16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused__unsafe_view_clone_transpose_view_6', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 1, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 49152}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused__unsafe_view_clone_transpose_view_6(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 8192
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)[:]
    x0 = (xindex % 128)
    x1 = xindex // 128
    x2 = xindex
    tmp0 = tl.load(in_ptr0 + (64*x1 + 4096*(x0 // 64) + ((x0 % 64))), None).to(tl.float32)
    tl.store(out_ptr0 + (x2), tmp0, None)
''', device_str='cuda')


# kernel path: /tmp/ind/ch/cch2vogyvndewguygea7vjedyxs2faurmmcx33dx7rpl4hwtixn5.py
# Topologically Sorted Source Nodes: [embedding, _unsafe_view_6, add_7, _to_copy_8, pow_2, mean_1, add_8, rsqrt_1, mul_9, _to_copy_9, mul_10], Original ATen: [aten.embedding, aten._unsafe_view, aten.add, aten._to_copy, aten.pow, aten.mean, aten.rsqrt, aten.mul]
# Source node to ATen node mapping:
#   _to_copy_8 => convert_element_type_20
#   _to_copy_9 => convert_element_type_21
#   _unsafe_view_6 => view_23
#   add_7 => add_7
#   add_8 => add_8
#   embedding => embedding
#   mean_1 => mean_1
#   mul_10 => mul_10
#   mul_9 => mul_9
#   pow_2 => pow_2
#   rsqrt_1 => rsqrt_1
# Graph fragment:
#   %arg1_1 : Tensor "i64[1, 64][64, 1]cuda:0" = PlaceHolder[target=arg1_1]
#   %arg2_1 : Tensor "bf16[8192, 128][128, 1]cuda:0" = PlaceHolder[target=arg2_1]
#   %mm_3 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_3]
#   %arg11_1 : Tensor "bf16[128][1]cuda:0" = PlaceHolder[target=arg11_1]
#   %buf17 : Tensor "f32[1, 64, 1][64, 1, 64]cuda:0" = PlaceHolder[target=buf17]
#   %embedding : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.embedding.default](args = (%arg2_1, %arg1_1), kwargs = {})
#   %view_23 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_3, [1, 64, 128]), kwargs = {})
#   %add_7 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%embedding, %view_23), kwargs = {})
#   %convert_element_type_20 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_7, torch.float32), kwargs = {})
#   %pow_2 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%convert_element_type_20, 2), kwargs = {})
#   %mean_1 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mean.dim](args = (%pow_2, [-1], True), kwargs = {})
#   %add_8 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mean_1, 1e-06), kwargs = {})
#   %rsqrt_1 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_8,), kwargs = {})
#   %mul_9 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_20, %rsqrt_1), kwargs = {})
#   %convert_element_type_21 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_9, torch.bfloat16), kwargs = {})
#   %mul_10 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.mul.Tensor](args = (%arg11_1, %convert_element_type_21), kwargs = {})
#   return %buf17,%mul_10
triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_7 = async_compile.triton('triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_7', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 64, 'r0_': 128},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*i64', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', 'in_ptr3': '*bf16', 'out_ptr0': '*fp32', 'out_ptr1': '*bf16', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]], (7,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_7', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 3, 'num_store': 2, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 1024, 'r0_': 49408}}
)
@triton.jit
def triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_7(in_ptr0, in_ptr1, in_ptr2, in_ptr3, out_ptr0, out_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 64
    r0_numel = 128
    R0_BLOCK: tl.constexpr = 128
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    x0 = xindex
    r0_1 = r0_index
    tmp0 = tl.load(in_ptr0 + (x0), xmask, eviction_policy='evict_last')
    tmp7 = tl.load(in_ptr2 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp15 = tl.load(in_ptr3 + (r0_1), None, eviction_policy='evict_last').to(tl.float32)
    tmp1 = tl.full([1, 1], 8192, tl.int32)
    tmp2 = tmp0 + tmp1
    tmp3 = tmp0 < 0
    tmp4 = tl.where(tmp3, tmp2, tmp0)
    tl.device_assert(((0 <= tmp4) & (tmp4 < 8192)) | ~(xmask), "index out of bounds: 0 <= tmp4 < 8192")
    tmp6 = tl.load(in_ptr1 + (r0_1 + 128*tmp4), xmask, other=0.0).to(tl.float32)
    tmp8 = tmp6 + tmp7
    tmp9 = tmp8.to(tl.float32)
    tmp10 = tmp9 * tmp9
    tmp11 = tl.broadcast_to(tmp10, [XBLOCK, R0_BLOCK])
    tmp13 = tl.where(xmask, tmp11, 0)
    tmp14 = tl.sum(tmp13, 1)[:, None].to(tl.float32)
    tmp16 = tl.full([1, 1], 128.0, tl.float32)
    tmp17 = (tmp14 / tmp16)
    tmp18 = tl.full([1, 1], 1e-06, tl.float32)
    tmp19 = tmp17 + tmp18
    tmp20 = libdevice.rsqrt(tmp19)
    tmp21 = tmp9 * tmp20
    tmp22 = tmp21.to(tl.float32)
    tmp23 = tmp15 * tmp22
    tl.store(out_ptr1 + (r0_1 + 128*x0), tmp23, xmask)
    tl.store(out_ptr0 + (x0), tmp14, xmask)
''', device_str='cuda')


# kernel path: /tmp/ind/m6/cm6n7blqeryyq5az6uprjsyxmmcybncmijxo5g62nby7ulhd7r3y.py
# Topologically Sorted Source Nodes: [_unsafe_view_7, silu, _unsafe_view_8, mul_11], Original ATen: [aten._unsafe_view, aten.silu, aten.mul]
# Source node to ATen node mapping:
#   _unsafe_view_7 => view_25
#   _unsafe_view_8 => view_27
#   mul_11 => mul_11
#   silu => add_9, convert_element_type_24, convert_element_type_25, div_1, exp_1, neg_2
# Graph fragment:
#   %mm_4 : Tensor "bf16[64, 352][352, 1]cuda:0" = PlaceHolder[target=mm_4]
#   %mm_5 : Tensor "bf16[64, 352][352, 1]cuda:0" = PlaceHolder[target=mm_5]
#   %view_25 : Tensor "bf16[1, 64, 352][22528, 352, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_4, [1, 64, 352]), kwargs = {})
#   %convert_element_type_24 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%view_25, torch.float32), kwargs = {})
#   %neg_2 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.neg.default](args = (%convert_element_type_24,), kwargs = {})
#   %exp_1 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.exp.default](args = (%neg_2,), kwargs = {})
#   %add_9 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%exp_1, 1), kwargs = {})
#   %div_1 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.div.Tensor](args = (%convert_element_type_24, %add_9), kwargs = {})
#   %convert_element_type_25 : Tensor "bf16[1, 64, 352][22528, 352, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%div_1, torch.bfloat16), kwargs = {})
#   %view_27 : Tensor "bf16[1, 64, 352][22528, 352, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_5, [1, 64, 352]), kwargs = {})
#   %mul_11 : Tensor "bf16[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_25, %view_27), kwargs = {})
#   return %mul_11
triton_poi_fused__unsafe_view_mul_silu_8 = async_compile.triton('triton_poi_fused__unsafe_view_mul_silu_8', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 32768}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'out_ptr0': '*bf16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused__unsafe_view_mul_silu_8', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 180224}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused__unsafe_view_mul_silu_8(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 22528
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask).to(tl.float32)
    tmp8 = tl.load(in_ptr1 + (x0), xmask).to(tl.float32)
    tmp1 = tmp0.to(tl.float32)
    tmp2 = -tmp1
    tmp3 = libdevice.exp(tmp2)
    tmp4 = tl.full([1], 1.0, tl.float32)
    tmp5 = tmp3 + tmp4
    tmp6 = (tmp1 / tmp5)
    tmp7 = tmp6.to(tl.float32)
    tmp9 = tmp7 * tmp8
    tl.store(out_ptr0 + (x0), tmp9, xmask)
''', device_str='cuda')


# kernel path: /tmp/ind/n2/cn2dbnrmvn5slfknn33uvazvs4obdtn2netlgiwyuzmpbkerpmbd.py
# Topologically Sorted Source Nodes: [embedding, _unsafe_view_6, add_7, _unsafe_view_9, add_9, _to_copy_10, pow_3, mean_2, add_10, rsqrt_2, mul_12, _to_copy_11, mul_13], Original ATen: [aten.embedding, aten._unsafe_view, aten.add, aten._to_copy, aten.pow, aten.mean, aten.rsqrt, aten.mul]
# Source node to ATen node mapping:
#   _to_copy_10 => convert_element_type_30
#   _to_copy_11 => convert_element_type_31
#   _unsafe_view_6 => view_23
#   _unsafe_view_9 => view_29
#   add_10 => add_11
#   add_7 => add_7
#   add_9 => add_10
#   embedding => embedding
#   mean_2 => mean_2
#   mul_12 => mul_12
#   mul_13 => mul_13
#   pow_3 => pow_3
#   rsqrt_2 => rsqrt_2
# Graph fragment:
#   %arg1_1 : Tensor "i64[1, 64][64, 1]cuda:0" = PlaceHolder[target=arg1_1]
#   %arg2_1 : Tensor "bf16[8192, 128][128, 1]cuda:0" = PlaceHolder[target=arg2_1]
#   %mm_3 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_3]
#   %mm_6 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_6]
#   %buf23 : Tensor "f32[1, 64, 1][64, 1, 64]cuda:0" = PlaceHolder[target=buf23]
#   %arg19_1 : Tensor "bf16[128][1]cuda:0" = PlaceHolder[target=arg19_1]
#   %convert_element_type_31 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0" = PlaceHolder[target=convert_element_type_31]
#   %embedding : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.embedding.default](args = (%arg2_1, %arg1_1), kwargs = {})
#   %view_23 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_3, [1, 64, 128]), kwargs = {})
#   %add_7 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%embedding, %view_23), kwargs = {})
#   %view_29 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_6, [1, 64, 128]), kwargs = {})
#   %add_10 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_7, %view_29), kwargs = {})
#   %convert_element_type_30 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_10, torch.float32), kwargs = {})
#   %pow_3 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%convert_element_type_30, 2), kwargs = {})
#   %mean_2 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mean.dim](args = (%pow_3, [-1], True), kwargs = {})
#   %add_11 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mean_2, 1e-06), kwargs = {})
#   %rsqrt_2 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_11,), kwargs = {})
#   %mul_12 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_30, %rsqrt_2), kwargs = {})
#   %convert_element_type_31 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_12, torch.bfloat16), kwargs = {})
#   %mul_13 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.mul.Tensor](args = (%arg19_1, %convert_element_type_31), kwargs = {})
#   return %buf23,%convert_element_type_31,%mul_13
triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_9 = async_compile.triton('triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_9', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 64, 'r0_': 128},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*i64', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', 'in_ptr3': '*bf16', 'in_ptr4': '*bf16', 'out_ptr0': '*fp32', 'out_ptr1': '*bf16', 'out_ptr2': '*bf16', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]], (7,): [['tt.divisibility', 16]], (8,): [['tt.divisibility', 16]], (9,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_9', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 4, 'num_store': 3, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 1024, 'r0_': 98560}}
)
@triton.jit
def triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_9(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, out_ptr0, out_ptr1, out_ptr2, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 64
    r0_numel = 128
    R0_BLOCK: tl.constexpr = 128
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    x0 = xindex
    r0_1 = r0_index
    tmp0 = tl.load(in_ptr0 + (x0), xmask, eviction_policy='evict_last')
    tmp7 = tl.load(in_ptr2 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp9 = tl.load(in_ptr3 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp24 = tl.load(in_ptr4 + (r0_1), None, eviction_policy='evict_last').to(tl.float32)
    tmp1 = tl.full([1, 1], 8192, tl.int32)
    tmp2 = tmp0 + tmp1
    tmp3 = tmp0 < 0
    tmp4 = tl.where(tmp3, tmp2, tmp0)
    tl.device_assert(((0 <= tmp4) & (tmp4 < 8192)) | ~(xmask), "index out of bounds: 0 <= tmp4 < 8192")
    tmp6 = tl.load(in_ptr1 + (r0_1 + 128*tmp4), xmask, other=0.0).to(tl.float32)
    tmp8 = tmp6 + tmp7
    tmp10 = tmp8 + tmp9
    tmp11 = tmp10.to(tl.float32)
    tmp12 = tmp11 * tmp11
    tmp13 = tl.broadcast_to(tmp12, [XBLOCK, R0_BLOCK])
    tmp15 = tl.where(xmask, tmp13, 0)
    tmp16 = tl.sum(tmp15, 1)[:, None].to(tl.float32)
    tmp17 = tl.full([1, 1], 128.0, tl.float32)
    tmp18 = (tmp16 / tmp17)
    tmp19 = tl.full([1, 1], 1e-06, tl.float32)
    tmp20 = tmp18 + tmp19
    tmp21 = libdevice.rsqrt(tmp20)
    tmp22 = tmp11 * tmp21
    tmp23 = tmp22.to(tl.float32)
    tmp25 = tmp24 * tmp23
    tl.store(out_ptr1 + (r0_1 + 128*x0), tmp23, xmask)
    tl.store(out_ptr2 + (r0_1 + 128*x0), tmp25, xmask)
    tl.store(out_ptr0 + (x0), tmp16, xmask)
''', device_str='cuda')


# kernel path: /tmp/ind/eh/ceh424aeygnb7in66axwripvmgxzgktuzlx3s4kh2at2f2bwxq6t.py
# Topologically Sorted Source Nodes: [embedding, _unsafe_view_6, add_7, _unsafe_view_9, add_9, _unsafe_view_15, add_14, _to_copy_14, pow_4, mean_3, add_15, rsqrt_3, mul_19, _to_copy_15, mul_20], Original ATen: [aten.embedding, aten._unsafe_view, aten.add, aten._to_copy, aten.pow, aten.mean, aten.rsqrt, aten.mul]
# Source node to ATen node mapping:
#   _to_copy_14 => convert_element_type_46
#   _to_copy_15 => convert_element_type_47
#   _unsafe_view_15 => view_49
#   _unsafe_view_6 => view_23
#   _unsafe_view_9 => view_29
#   add_14 => add_15
#   add_15 => add_16
#   add_7 => add_7
#   add_9 => add_10
#   embedding => embedding
#   mean_3 => mean_3
#   mul_19 => mul_19
#   mul_20 => mul_20
#   pow_4 => pow_4
#   rsqrt_3 => rsqrt_3
# Graph fragment:
#   %arg1_1 : Tensor "i64[1, 64][64, 1]cuda:0" = PlaceHolder[target=arg1_1]
#   %arg2_1 : Tensor "bf16[8192, 128][128, 1]cuda:0" = PlaceHolder[target=arg2_1]
#   %mm_3 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_3]
#   %mm_6 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_6]
#   %mm_10 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_10]
#   %add_15 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0" = PlaceHolder[target=add_15]
#   %arg20_1 : Tensor "bf16[128][1]cuda:0" = PlaceHolder[target=arg20_1]
#   %buf39 : Tensor "f32[1, 64, 1][64, 1, 64]cuda:0" = PlaceHolder[target=buf39]
#   %embedding : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.embedding.default](args = (%arg2_1, %arg1_1), kwargs = {})
#   %view_23 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_3, [1, 64, 128]), kwargs = {})
#   %add_7 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%embedding, %view_23), kwargs = {})
#   %view_29 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_6, [1, 64, 128]), kwargs = {})
#   %add_10 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_7, %view_29), kwargs = {})
#   %view_49 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_10, [1, 64, 128]), kwargs = {})
#   %add_15 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_10, %view_49), kwargs = {})
#   %convert_element_type_46 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_15, torch.float32), kwargs = {})
#   %pow_4 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%convert_element_type_46, 2), kwargs = {})
#   %mean_3 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mean.dim](args = (%pow_4, [-1], True), kwargs = {})
#   %add_16 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mean_3, 1e-06), kwargs = {})
#   %rsqrt_3 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_16,), kwargs = {})
#   %mul_19 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_46, %rsqrt_3), kwargs = {})
#   %convert_element_type_47 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_19, torch.bfloat16), kwargs = {})
#   %mul_20 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.mul.Tensor](args = (%arg20_1, %convert_element_type_47), kwargs = {})
#   return %add_15,%buf39,%mul_20
triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_10 = async_compile.triton('triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_10', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 64, 'r0_': 128},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*bf16', 'in_ptr0': '*i64', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', 'in_ptr3': '*bf16', 'in_ptr4': '*bf16', 'out_ptr0': '*fp32', 'out_ptr1': '*bf16', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]], (7,): [['tt.divisibility', 16]], (8,): [['tt.divisibility', 16]], (9,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_10', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 5, 'num_store': 3, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 1024, 'r0_': 114944}}
)
@triton.jit
def triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_10(in_out_ptr0, in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, out_ptr0, out_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 64
    r0_numel = 128
    R0_BLOCK: tl.constexpr = 128
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    x0 = xindex
    r0_1 = r0_index
    tmp0 = tl.load(in_ptr0 + (x0), xmask, eviction_policy='evict_last')
    tmp7 = tl.load(in_ptr2 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp9 = tl.load(in_ptr3 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp11 = tl.load(in_out_ptr0 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp19 = tl.load(in_ptr4 + (r0_1), None, eviction_policy='evict_last').to(tl.float32)
    tmp1 = tl.full([1, 1], 8192, tl.int32)
    tmp2 = tmp0 + tmp1
    tmp3 = tmp0 < 0
    tmp4 = tl.where(tmp3, tmp2, tmp0)
    tl.device_assert(((0 <= tmp4) & (tmp4 < 8192)) | ~(xmask), "index out of bounds: 0 <= tmp4 < 8192")
    tmp6 = tl.load(in_ptr1 + (r0_1 + 128*tmp4), xmask, other=0.0).to(tl.float32)
    tmp8 = tmp6 + tmp7
    tmp10 = tmp8 + tmp9
    tmp12 = tmp10 + tmp11
    tmp13 = tmp12.to(tl.float32)
    tmp14 = tmp13 * tmp13
    tmp15 = tl.broadcast_to(tmp14, [XBLOCK, R0_BLOCK])
    tmp17 = tl.where(xmask, tmp15, 0)
    tmp18 = tl.sum(tmp17, 1)[:, None].to(tl.float32)
    tmp20 = tl.full([1, 1], 128.0, tl.float32)
    tmp21 = (tmp18 / tmp20)
    tmp22 = tl.full([1, 1], 1e-06, tl.float32)
    tmp23 = tmp21 + tmp22
    tmp24 = libdevice.rsqrt(tmp23)
    tmp25 = tmp13 * tmp24
    tmp26 = tmp25.to(tl.float32)
    tmp27 = tmp19 * tmp26
    tl.store(in_out_ptr0 + (r0_1 + 128*x0), tmp12, xmask)
    tl.store(out_ptr1 + (r0_1 + 128*x0), tmp27, xmask)
    tl.store(out_ptr0 + (x0), tmp18, xmask)
''', device_str='cuda')


# kernel path: /tmp/ind/ih/cihmq3h4gkky243aulumzqprkgkokq5viyvdwgxnp2k4knxhuujf.py
# Topologically Sorted Source Nodes: [_unsafe_view_18, add_16, _to_copy_16, pow_5, mean_4, add_17, rsqrt_4, mul_22, _to_copy_17, mul_23], Original ATen: [aten._unsafe_view, aten.add, aten._to_copy, aten.pow, aten.mean, aten.rsqrt, aten.mul]
# Source node to ATen node mapping:
#   _to_copy_16 => convert_element_type_56
#   _to_copy_17 => convert_element_type_57
#   _unsafe_view_18 => view_55
#   add_16 => add_18
#   add_17 => add_19
#   mean_4 => mean_4
#   mul_22 => mul_22
#   mul_23 => mul_23
#   pow_5 => pow_5
#   rsqrt_4 => rsqrt_4
# Graph fragment:
#   %add_15 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0" = PlaceHolder[target=add_15]
#   %mm_13 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_13]
#   %arg21_1 : Tensor "bf16[128][1]cuda:0" = PlaceHolder[target=arg21_1]
#   %buf45 : Tensor "f32[1, 64, 1][64, 1, 64]cuda:0" = PlaceHolder[target=buf45]
#   %view_55 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_13, [1, 64, 128]), kwargs = {})
#   %add_18 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_15, %view_55), kwargs = {})
#   %convert_element_type_56 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_18, torch.float32), kwargs = {})
#   %pow_5 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%convert_element_type_56, 2), kwargs = {})
#   %mean_4 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mean.dim](args = (%pow_5, [-1], True), kwargs = {})
#   %add_19 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mean_4, 1e-06), kwargs = {})
#   %rsqrt_4 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_19,), kwargs = {})
#   %mul_22 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_56, %rsqrt_4), kwargs = {})
#   %convert_element_type_57 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_22, torch.bfloat16), kwargs = {})
#   %mul_23 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%arg21_1, %convert_element_type_57), kwargs = {})
#   return %buf45,%mul_23
triton_per_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_11 = async_compile.triton('triton_per_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_11', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 64, 'r0_': 128},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', 'out_ptr0': '*fp32', 'out_ptr1': '*bf16', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_11', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 3, 'num_store': 2, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 512, 'r0_': 65792}}
)
@triton.jit
def triton_per_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_11(in_ptr0, in_ptr1, in_ptr2, out_ptr0, out_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 64
    r0_numel = 128
    R0_BLOCK: tl.constexpr = 128
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp9 = tl.load(in_ptr2 + (r0_1), None, eviction_policy='evict_last').to(tl.float32)
    tmp2 = tmp0 + tmp1
    tmp3 = tmp2.to(tl.float32)
    tmp4 = tmp3 * tmp3
    tmp5 = tl.broadcast_to(tmp4, [XBLOCK, R0_BLOCK])
    tmp7 = tl.where(xmask, tmp5, 0)
    tmp8 = tl.sum(tmp7, 1)[:, None].to(tl.float32)
    tmp10 = tl.full([1, 1], 128.0, tl.float32)
    tmp11 = (tmp8 / tmp10)
    tmp12 = tl.full([1, 1], 1e-06, tl.float32)
    tmp13 = tmp11 + tmp12
    tmp14 = libdevice.rsqrt(tmp13)
    tmp15 = tmp3 * tmp14
    tmp16 = tmp15.to(tl.float32)
    tmp17 = tmp9 * tmp16
    tl.store(out_ptr1 + (r0_1 + 128*x0), tmp17, xmask)
    tl.store(out_ptr0 + (x0), tmp8, xmask)
''', device_str='cuda')


# kernel path: /tmp/ind/pv/cpvvbuicksk3ffflmdt6g7jzcqzwr6so2lcdju2kcwbxcviel2qc.py
# Topologically Sorted Source Nodes: [constant_pad_nd, slice_12, view_38, nll_loss_forward], Original ATen: [aten.constant_pad_nd, aten.slice, aten.view, aten.nll_loss_forward]
# Source node to ATen node mapping:
#   constant_pad_nd => constant_pad_nd
#   nll_loss_forward => ne_2, sum_4
#   slice_12 => slice_9
#   view_38 => view_59
# Graph fragment:
#   %arg1_1 : Tensor "i64[1, 64][64, 1]cuda:0" = PlaceHolder[target=arg1_1]
#   %constant_pad_nd : Tensor "i64[1, 65][65, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.constant_pad_nd.default](args = (%arg1_1, [0, 1], -100.0), kwargs = {})
#   %slice_9 : Tensor "i64[1, 64][65, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice.Tensor](args = (%constant_pad_nd, 1, 1, 9223372036854775807), kwargs = {})
#   %view_59 : Tensor "i64[64][1]cuda:0"[num_users=5] = call_function[target=torch.ops.aten.reshape.default](args = (%slice_9, [-1]), kwargs = {})
#   %ne_2 : Tensor "b8[64][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.ne.Scalar](args = (%view_59, -100), kwargs = {})
#   %sum_4 : Tensor "i64[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.default](args = (%ne_2,), kwargs = {})
#   return %sum_4
triton_per_fused_constant_pad_nd_nll_loss_forward_slice_view_12 = async_compile.triton('triton_per_fused_constant_pad_nd_nll_loss_forward_slice_view_12', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 1, 'r0_': 64},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*i64', 'out_ptr0': '*i64', 'xnumel': 'constexpr', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {'xnumel': 1}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused_constant_pad_nd_nll_loss_forward_slice_view_12', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 1, 'num_store': 1, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'r0_': 512}}
)
@triton.jit
def triton_per_fused_constant_pad_nd_nll_loss_forward_slice_view_12(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 1
    r0_numel = 64
    R0_BLOCK: tl.constexpr = 64
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = tl.full([XBLOCK], True, tl.int1)[:, None]
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_0 = r0_index
    tmp0 = 1 + r0_0
    tmp1 = tl.full([1, 1], 64, tl.int64)
    tmp2 = tmp0 < tmp1
    tmp3 = tl.load(in_ptr0 + (tl.broadcast_to(1 + r0_0, [XBLOCK, R0_BLOCK])), tmp2, other=-100)
    tmp4 = tl.full([1, 1], -100, tl.int64)
    tmp5 = tmp3 != tmp4
    tmp6 = tmp5.to(tl.int64)
    tmp7 = tl.broadcast_to(tmp6, [XBLOCK, R0_BLOCK])
    tmp9 = tl.sum(tmp7, 1)[:, None].to(tl.int64)
    tl.store(out_ptr0 + (tl.full([1, 1], 0, tl.int32).broadcast_to(XBLOCK, 1)), tmp9, None)
''', device_str='cuda')


# kernel path: /tmp/ind/jr/cjruwgkpuna4pdkxwxs6zz36ttainpvnfwnpmoiqkjyfpjpdzuuf.py
# Topologically Sorted Source Nodes: [constant_pad_nd, slice_12, view_38, _unsafe_view_19, _to_copy_18, view_37, _log_softmax, nll_loss_forward, _log_softmax_backward_data, nll_loss_backward, expand_16, view_39, _to_copy_19, view_40], Original ATen: [aten.constant_pad_nd, aten.slice, aten.view, aten._unsafe_view, aten._to_copy, prims.prepare_softmax_online, aten.sub, aten._log_softmax, aten.nll_loss_forward, aten._log_softmax_backward_data, aten.nll_loss_backward, aten.expand, aten.arange, aten.eq, aten.scalar_tensor, aten.where]
# Source node to ATen node mapping:
#   _log_softmax => log, sub_3
#   _log_softmax_backward_data => exp_5, mul_25, sub_4, sum_7
#   _to_copy_18 => convert_element_type_60
#   _to_copy_19 => convert_element_type_62
#   _unsafe_view_19 => view_57
#   constant_pad_nd => constant_pad_nd
#   expand_16 => full_default_3
#   nll_loss_backward => div_5, full_default_4, full_default_6, mul_24, ne_3, ne_4, unsqueeze_20, where_3, where_4
#   nll_loss_forward => convert_element_type_61
#   slice_12 => slice_9
#   view_37 => view_58
#   view_38 => view_59
#   view_39 => view_60
#   view_40 => view_61
# Graph fragment:
#   %arg1_1 : Tensor "i64[1, 64][64, 1]cuda:0" = PlaceHolder[target=arg1_1]
#   %sum_4 : Tensor "i64[][]cuda:0" = PlaceHolder[target=sum_4]
#   %mm_14 : Tensor "bf16[64, 8192][8192, 1]cuda:0" = PlaceHolder[target=mm_14]
#   %getitem : Tensor "f32[64, 1][1, 64]cuda:0" = PlaceHolder[target=getitem]
#   %getitem_1 : Tensor "f32[64, 1][1, 64]cuda:0" = PlaceHolder[target=getitem_1]
#   %sum_7 : Tensor "f32[64, 1][1, 64]cuda:0" = PlaceHolder[target=sum_7]
#   %sub_4 : Tensor "f32[64, 8192][8192, 1]cuda:0" = PlaceHolder[target=sub_4]
#   %constant_pad_nd : Tensor "i64[1, 65][65, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.constant_pad_nd.default](args = (%arg1_1, [0, 1], -100.0), kwargs = {})
#   %slice_9 : Tensor "i64[1, 64][65, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice.Tensor](args = (%constant_pad_nd, 1, 1, 9223372036854775807), kwargs = {})
#   %view_59 : Tensor "i64[64][1]cuda:0"[num_users=5] = call_function[target=torch.ops.aten.reshape.default](args = (%slice_9, [-1]), kwargs = {})
#   %view_57 : Tensor "bf16[1, 64, 8192][524288, 8192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_14, [1, 64, 8192]), kwargs = {})
#   %convert_element_type_60 : Tensor "f32[1, 64, 8192][524288, 8192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%view_57, torch.float32), kwargs = {})
#   %view_58 : Tensor "f32[64, 8192][8192, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.reshape.default](args = (%convert_element_type_60, [-1, 8192]), kwargs = {})
#   %prepare_softmax_online_default : [num_users=2] = call_function[target=torch.ops.prims.prepare_softmax_online.default](args = (%view_58, 1), kwargs = {})
#   %sub_tensor : Tensor "f32[64, 8192][8192, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.sub.Tensor](args = (%view_58, %getitem), kwargs = {})
#   %log : Tensor "f32[64, 1][1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.log.default](args = (%getitem_1,), kwargs = {})
#   %sub_3 : Tensor "f32[64, 8192][8192, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.sub.Tensor](args = (%sub_tensor, %log), kwargs = {})
#   %convert_element_type_61 : Tensor "f32[][]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%sum_4, torch.float32), kwargs = {})
#   %exp_5 : Tensor "f32[64, 8192][8192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.exp.default](args = (%sub_3,), kwargs = {})
#   %unsqueeze_20 : Tensor "i64[64, 1][1, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%view_59, 1), kwargs = {})
#   %ne_3 : Tensor "b8[64, 1][1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.ne.Scalar](args = (%unsqueeze_20, -100), kwargs = {})
#   %full_default_4 : Tensor "i64[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], 0), kwargs = {dtype: torch.int64, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %where_3 : Tensor "i64[64, 1][1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.where.self](args = (%ne_3, %unsqueeze_20, %full_default_4), kwargs = {})
#   %expand_default : Tensor "i64[64, 8192][1, 0]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.expand.default](args = (%where_3, [64, 8192]), kwargs = {})
#   %iota_default : Tensor "i64[8192][1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.iota.default](args = (8192,), kwargs = {start: 0, step: 1, dtype: torch.int64, device: cuda:0, requires_grad: False})
#   %view_default : Tensor "i64[1, 8192][8192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%iota_default, [1, 8192]), kwargs = {})
#   %eq_tensor : Tensor "b8[64, 8192][8192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.eq.Tensor](args = (%expand_default, %view_default), kwargs = {})
#   %scalar_tensor_default_1 : Tensor "f32[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.scalar_tensor.default](args = (-1.0,), kwargs = {dtype: torch.float32, layout: torch.strided, device: cuda:0})
#   %scalar_tensor_default : Tensor "f32[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.scalar_tensor.default](args = (0,), kwargs = {dtype: torch.float32, layout: torch.strided, device: cuda:0})
#   %where_self : Tensor "f32[64, 8192][8192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.where.self](args = (%eq_tensor, %scalar_tensor_default_1, %scalar_tensor_default), kwargs = {})
#   %ne_4 : Tensor "b8[64, 1][1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.ne.Scalar](args = (%unsqueeze_20, -100), kwargs = {})
#   %full_default_3 : Tensor "f32[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], 1.0), kwargs = {dtype: torch.float32, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %div_5 : Tensor "f32[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.div.Tensor](args = (%full_default_3, %convert_element_type_61), kwargs = {})
#   %full_default_6 : Tensor "f32[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], 0.0), kwargs = {dtype: torch.float32, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %where_4 : Tensor "f32[64, 1][1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.where.self](args = (%ne_4, %div_5, %full_default_6), kwargs = {})
#   %mul_24 : Tensor "f32[64, 8192][8192, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.mul.Tensor](args = (%where_self, %where_4), kwargs = {})
#   %sum_7 : Tensor "f32[64, 1][1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%mul_24, [1], True), kwargs = {})
#   %mul_25 : Tensor "f32[64, 8192][8192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%exp_5, %sum_7), kwargs = {})
#   %sub_4 : Tensor "f32[64, 8192][8192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%mul_24, %mul_25), kwargs = {})
#   %view_60 : Tensor "f32[1, 64, 8192][524288, 8192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%sub_4, [1, 64, 8192]), kwargs = {})
#   %convert_element_type_62 : Tensor "bf16[1, 64, 8192][524288, 8192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%view_60, torch.bfloat16), kwargs = {})
#   %view_61 : Tensor "bf16[64, 8192][8192, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.reshape.default](args = (%convert_element_type_62, [64, 8192]), kwargs = {})
#   return %sum_7,%getitem,%getitem_1,%sub_4,%view_61
triton_red_fused__log_softmax__log_softmax_backward_data__to_copy__unsafe_view_arange_constant_pad_nd_eq_expand_nll_loss_backward_nll_loss_forward_prepare_softmax_online_scalar_tensor_slice_sub_view_where_13 = async_compile.triton('triton_red_fused__log_softmax__log_softmax_backward_data__to_copy__unsafe_view_arange_constant_pad_nd_eq_expand_nll_loss_backward_nll_loss_forward_prepare_softmax_online_scalar_tensor_slice_sub_view_where_13', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.reduction(
    size_hints={'x': 64, 'r0_': 8192},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*i64', 'in_ptr1': '*i64', 'in_ptr2': '*bf16', 'out_ptr1': '*fp32', 'out_ptr2': '*fp32', 'out_ptr4': '*bf16', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr', 'R0_BLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]], (7,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_red_fused__log_softmax__log_softmax_backward_data__to_copy__unsafe_view_arange_constant_pad_nd_eq_expand_nll_loss_backward_nll_loss_forward_prepare_softmax_online_scalar_tensor_slice_sub_view_where_13', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 6, 'num_store': 3, 'num_reduction': 3, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'add_persistent_rblock': True, 'tiling_scores': {'x': 1536, 'r0_': 3145728}}
)
@triton.jit
def triton_red_fused__log_softmax__log_softmax_backward_data__to_copy__unsafe_view_arange_constant_pad_nd_eq_expand_nll_loss_backward_nll_loss_forward_prepare_softmax_online_scalar_tensor_slice_sub_view_where_13(in_ptr0, in_ptr1, in_ptr2, out_ptr1, out_ptr2, out_ptr4, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    xnumel = 64
    r0_numel = 8192
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    x0 = xindex
    tmp13 = tl.load(in_ptr1 + (0))
    tmp14 = tl.broadcast_to(tmp13, [1, 1])
    _tmp21 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    _tmp26_max = tl.full([XBLOCK, R0_BLOCK], float('-inf'), tl.float32)
    _tmp26_sum = tl.zeros([XBLOCK, R0_BLOCK], tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp23 = tl.load(in_ptr2 + (r0_1 + 8192*x0), r0_mask & xmask, eviction_policy='evict_last', other=0.0).to(tl.float32)
        tmp0 = 1 + x0
        tmp1 = tl.full([1, 1], 64, tl.int64)
        tmp2 = tmp0 < tmp1
        tmp3 = tl.load(in_ptr0 + (tl.broadcast_to(1 + x0, [XBLOCK, R0_BLOCK])), r0_mask & tmp2 & xmask, eviction_policy='evict_last', other=-100)
        tmp4 = tl.full([1, 1], -100, tl.int64)
        tmp5 = tmp3 != tmp4
        tmp6 = tl.full([1, 1], 0, tl.int64)
        tmp7 = tl.where(tmp5, tmp3, tmp6)
        tmp8 = r0_1
        tmp9 = tmp7 == tmp8
        tmp10 = tl.full([1, 1], -1.0, tl.float32)
        tmp11 = tl.full([1, 1], 0.0, tl.float32)
        tmp12 = tl.where(tmp9, tmp10, tmp11)
        tmp15 = tmp14.to(tl.float32)
        tmp16 = tl.full([1, 1], 1.0, tl.float32)
        tmp17 = (tmp16 / tmp15)
        tmp18 = tl.where(tmp5, tmp17, tmp11)
        tmp19 = tmp12 * tmp18
        tmp20 = tl.broadcast_to(tmp19, [XBLOCK, R0_BLOCK])
        tmp22 = _tmp21 + tmp20
        _tmp21 = tl.where(r0_mask & xmask, tmp22, _tmp21)
        tmp24 = tmp23.to(tl.float32)
        tmp25 = tl.broadcast_to(tmp24, [XBLOCK, R0_BLOCK])

        _tmp26_max_next, _tmp26_sum_next = triton_helpers.online_softmax_combine(
            _tmp26_max, _tmp26_sum, tmp25, False
        )

        _tmp26_max = tl.where(r0_mask & xmask, _tmp26_max_next, _tmp26_max)
        _tmp26_sum = tl.where(r0_mask & xmask, _tmp26_sum_next, _tmp26_sum)
    tmp21 = tl.sum(_tmp21, 1)[:, None]

    tmp26, tmp27 = triton_helpers.online_softmax_reduce(
        _tmp26_max, _tmp26_sum, 1, False)
    tmp26 = tmp26[:, None]
    tmp27 = tmp27[:, None]
    tl.store(out_ptr1 + (x0), tmp26, xmask)
    tl.store(out_ptr2 + (x0), tmp27, xmask)
    tmp41 = tl.load(in_ptr1 + (0))
    tmp42 = tl.broadcast_to(tmp41, [1, 1])
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp48 = tl.load(in_ptr2 + (r0_1 + 8192*x0), r0_mask & xmask, eviction_policy='evict_first', other=0.0).to(tl.float32)
        tmp28 = 1 + x0
        tmp29 = tl.full([1, 1], 64, tl.int64)
        tmp30 = tmp28 < tmp29
        tmp31 = tl.load(in_ptr0 + (tl.broadcast_to(1 + x0, [XBLOCK, R0_BLOCK])), r0_mask & tmp30 & xmask, eviction_policy='evict_last', other=-100)
        tmp32 = tl.full([1, 1], -100, tl.int64)
        tmp33 = tmp31 != tmp32
        tmp34 = tl.full([1, 1], 0, tl.int64)
        tmp35 = tl.where(tmp33, tmp31, tmp34)
        tmp36 = r0_1
        tmp37 = tmp35 == tmp36
        tmp38 = tl.full([1, 1], -1.0, tl.float32)
        tmp39 = tl.full([1, 1], 0.0, tl.float32)
        tmp40 = tl.where(tmp37, tmp38, tmp39)
        tmp43 = tmp42.to(tl.float32)
        tmp44 = tl.full([1, 1], 1.0, tl.float32)
        tmp45 = (tmp44 / tmp43)
        tmp46 = tl.where(tmp33, tmp45, tmp39)
        tmp47 = tmp40 * tmp46
        tmp49 = tmp48.to(tl.float32)
        tmp50 = tmp49 - tmp26
        tmp51 = tl_math.log(tmp27)
        tmp52 = tmp50 - tmp51
        tmp53 = libdevice.exp(tmp52)
        tmp54 = tmp53 * tmp21
        tmp55 = tmp47 - tmp54
        tmp56 = tmp55.to(tl.float32)
        tl.store(out_ptr4 + (r0_1 + 8192*x0), tmp56, r0_mask & xmask)
''', device_str='cuda')


# kernel path: /tmp/ind/zx/czx2ynqwa4jzddpmlebssvvsthf4sag4jisoumf3xo6j3v5payd7.py
# Topologically Sorted Source Nodes: [constant_pad_nd, slice_12, view_38, nll_loss_forward, _unsafe_view_19, _to_copy_18, view_37, _log_softmax], Original ATen: [aten.constant_pad_nd, aten.slice, aten.view, aten.nll_loss_forward, aten._unsafe_view, aten._to_copy, aten.sub, aten._log_softmax]
# Source node to ATen node mapping:
#   _log_softmax => log, sub_3
#   _to_copy_18 => convert_element_type_60
#   _unsafe_view_19 => view_57
#   constant_pad_nd => constant_pad_nd
#   nll_loss_forward => convert_element_type_61, div_4, full_default_1, full_default_2, gather, ne, ne_1, neg_6, squeeze, sum_5, unsqueeze_19, where_1, where_2
#   slice_12 => slice_9
#   view_37 => view_58
#   view_38 => view_59
# Graph fragment:
#   %arg1_1 : Tensor "i64[1, 64][64, 1]cuda:0" = PlaceHolder[target=arg1_1]
#   %mm_14 : Tensor "bf16[64, 8192][8192, 1]cuda:0" = PlaceHolder[target=mm_14]
#   %getitem : Tensor "f32[64, 1][1, 64]cuda:0" = PlaceHolder[target=getitem]
#   %getitem_1 : Tensor "f32[64, 1][1, 64]cuda:0" = PlaceHolder[target=getitem_1]
#   %sum_5 : Tensor "f32[][]cuda:0" = PlaceHolder[target=sum_5]
#   %sum_4 : Tensor "i64[][]cuda:0" = PlaceHolder[target=sum_4]
#   %constant_pad_nd : Tensor "i64[1, 65][65, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.constant_pad_nd.default](args = (%arg1_1, [0, 1], -100.0), kwargs = {})
#   %slice_9 : Tensor "i64[1, 64][65, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice.Tensor](args = (%constant_pad_nd, 1, 1, 9223372036854775807), kwargs = {})
#   %view_59 : Tensor "i64[64][1]cuda:0"[num_users=5] = call_function[target=torch.ops.aten.reshape.default](args = (%slice_9, [-1]), kwargs = {})
#   %ne_1 : Tensor "b8[64][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.ne.Scalar](args = (%view_59, -100), kwargs = {})
#   %view_57 : Tensor "bf16[1, 64, 8192][524288, 8192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_14, [1, 64, 8192]), kwargs = {})
#   %convert_element_type_60 : Tensor "f32[1, 64, 8192][524288, 8192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%view_57, torch.float32), kwargs = {})
#   %view_58 : Tensor "f32[64, 8192][8192, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.reshape.default](args = (%convert_element_type_60, [-1, 8192]), kwargs = {})
#   %sub_tensor : Tensor "f32[64, 8192][8192, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.sub.Tensor](args = (%view_58, %getitem), kwargs = {})
#   %log : Tensor "f32[64, 1][1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.log.default](args = (%getitem_1,), kwargs = {})
#   %sub_3 : Tensor "f32[64, 8192][8192, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.sub.Tensor](args = (%sub_tensor, %log), kwargs = {})
#   %ne : Tensor "b8[64][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.ne.Scalar](args = (%view_59, -100), kwargs = {})
#   %full_default_1 : Tensor "i64[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], 0), kwargs = {dtype: torch.int64, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %where_1 : Tensor "i64[64][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.where.self](args = (%ne, %view_59, %full_default_1), kwargs = {})
#   %unsqueeze_19 : Tensor "i64[64, 1][1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%where_1, 1), kwargs = {})
#   %gather : Tensor "f32[64, 1][1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.gather.default](args = (%sub_3, 1, %unsqueeze_19), kwargs = {})
#   %squeeze : Tensor "f32[64][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.squeeze.dim](args = (%gather, 1), kwargs = {})
#   %neg_6 : Tensor "f32[64][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.neg.default](args = (%squeeze,), kwargs = {})
#   %full_default_2 : Tensor "f32[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], 0.0), kwargs = {dtype: torch.float32, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %where_2 : Tensor "f32[64][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.where.self](args = (%ne_1, %neg_6, %full_default_2), kwargs = {})
#   %sum_5 : Tensor "f32[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.default](args = (%where_2,), kwargs = {})
#   %convert_element_type_61 : Tensor "f32[][]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%sum_4, torch.float32), kwargs = {})
#   %div_4 : Tensor "f32[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.div.Tensor](args = (%sum_5, %convert_element_type_61), kwargs = {})
#   return %sum_5,%div_4
triton_per_fused__log_softmax__to_copy__unsafe_view_constant_pad_nd_nll_loss_forward_slice_sub_view_14 = async_compile.triton('triton_per_fused__log_softmax__to_copy__unsafe_view_constant_pad_nd_nll_loss_forward_slice_sub_view_14', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 1, 'r0_': 64},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*fp32', 'in_ptr0': '*i64', 'in_ptr1': '*bf16', 'in_ptr2': '*fp32', 'in_ptr3': '*fp32', 'in_ptr4': '*i64', 'xnumel': 'constexpr', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {'xnumel': 1}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (7,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused__log_softmax__to_copy__unsafe_view_constant_pad_nd_nll_loss_forward_slice_sub_view_14', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 4, 'num_store': 1, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'r0_': 1024}}
)
@triton.jit
def triton_per_fused__log_softmax__to_copy__unsafe_view_constant_pad_nd_nll_loss_forward_slice_sub_view_14(in_out_ptr0, in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 1
    r0_numel = 64
    R0_BLOCK: tl.constexpr = 64
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = tl.full([XBLOCK], True, tl.int1)[:, None]
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_0 = r0_index
    tmp15 = tl.load(in_ptr2 + (r0_0), None)
    tmp17 = tl.load(in_ptr3 + (r0_0), None)
    tmp26 = tl.load(in_ptr4 + (0))
    tmp27 = tl.broadcast_to(tmp26, [1, 1])
    tmp0 = 1 + r0_0
    tmp1 = tl.full([1, 1], 64, tl.int64)
    tmp2 = tmp0 < tmp1
    tmp3 = tl.load(in_ptr0 + (tl.broadcast_to(1 + r0_0, [XBLOCK, R0_BLOCK])), tmp2, other=-100)
    tmp4 = tl.full([1, 1], -100, tl.int64)
    tmp5 = tmp3 != tmp4
    tmp6 = tl.full([1, 1], 0, tl.int64)
    tmp7 = tl.where(tmp5, tmp3, tmp6)
    tmp8 = tl.full([1, 1], 8192, tl.int32)
    tmp9 = tmp7 + tmp8
    tmp10 = tmp7 < 0
    tmp11 = tl.where(tmp10, tmp9, tmp7)
    tl.device_assert((0 <= tmp11) & (tmp11 < 8192), "index out of bounds: 0 <= tmp11 < 8192")
    tmp13 = tl.load(in_ptr1 + (tmp11 + 8192*r0_0), None, eviction_policy='evict_last').to(tl.float32)
    tmp14 = tmp13.to(tl.float32)
    tmp16 = tmp14 - tmp15
    tmp18 = tl_math.log(tmp17)
    tmp19 = tmp16 - tmp18
    tmp20 = -tmp19
    tmp21 = tl.full([1, 1], 0.0, tl.float32)
    tmp22 = tl.where(tmp5, tmp20, tmp21)
    tmp23 = tl.broadcast_to(tmp22, [XBLOCK, R0_BLOCK])
    tmp25 = tl.sum(tmp23, 1)[:, None].to(tl.float32)
    tmp28 = tmp27.to(tl.float32)
    tmp29 = (tmp25 / tmp28)
    tl.debug_barrier()
    tl.store(in_out_ptr0 + (tl.full([1, 1], 0, tl.int32).broadcast_to(XBLOCK, 1)), tmp29, None)
''', device_str='cuda')


# kernel path: /tmp/ind/tg/ctgryk72mrri7leypdwhvaiozwty3mk755vh5bj5wyv7fgwslvu2.py
# Topologically Sorted Source Nodes: [_unsafe_view_18, add_16, _to_copy_16, pow_5, mean_4, add_17, rsqrt_4, view_41, mul_24, _to_copy_20, mul_27, mul_26, sum_3, mul_28, pow_6, mul_29, expand_17, div, pow_7, mul_30, mul_31, add_18, _to_copy_21], Original ATen: [aten._unsafe_view, aten.add, aten._to_copy, aten.pow, aten.mean, aten.rsqrt, aten.view, aten.mul, aten.sum, aten.expand, aten.div]
# Source node to ATen node mapping:
#   _to_copy_16 => convert_element_type_56
#   _to_copy_20 => convert_element_type_67
#   _to_copy_21 => convert_element_type_68
#   _unsafe_view_18 => view_55
#   add_16 => add_18
#   add_17 => add_19
#   add_18 => add_20
#   div => div_6
#   expand_17 => expand_18
#   mean_4 => mean_4
#   mul_24 => mul_26
#   mul_26 => mul_28
#   mul_27 => mul_29
#   mul_28 => mul_30
#   mul_29 => mul_31
#   mul_30 => mul_32
#   mul_31 => mul_33
#   pow_5 => pow_5
#   pow_6 => pow_6
#   pow_7 => pow_7
#   rsqrt_4 => rsqrt_4
#   sum_3 => sum_9
#   view_41 => view_62
# Graph fragment:
#   %mm_16 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_16]
#   %arg21_1 : Tensor "bf16[128][1]cuda:0" = PlaceHolder[target=arg21_1]
#   %add_15 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0" = PlaceHolder[target=add_15]
#   %mm_13 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_13]
#   %buf45 : Tensor "f32[1, 64, 1][64, 1, 64]cuda:0" = PlaceHolder[target=buf45]
#   %sum_9 : Tensor "f32[1, 64, 1][64, 1, 64]cuda:0" = PlaceHolder[target=sum_9]
#   %view_55 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_13, [1, 64, 128]), kwargs = {})
#   %add_18 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_15, %view_55), kwargs = {})
#   %convert_element_type_56 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_18, torch.float32), kwargs = {})
#   %pow_5 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%convert_element_type_56, 2), kwargs = {})
#   %mean_4 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mean.dim](args = (%pow_5, [-1], True), kwargs = {})
#   %add_19 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mean_4, 1e-06), kwargs = {})
#   %rsqrt_4 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_19,), kwargs = {})
#   %view_62 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_16, [1, 64, 128]), kwargs = {})
#   %mul_26 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%view_62, %arg21_1), kwargs = {})
#   %convert_element_type_67 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_26, torch.float32), kwargs = {})
#   %mul_29 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_67, %rsqrt_4), kwargs = {})
#   %mul_28 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_67, %convert_element_type_56), kwargs = {})
#   %sum_9 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%mul_28, [2], True), kwargs = {})
#   %mul_30 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Scalar](args = (%sum_9, -0.5), kwargs = {})
#   %pow_6 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%rsqrt_4, 3), kwargs = {})
#   %mul_31 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_30, %pow_6), kwargs = {})
#   %expand_18 : Tensor "f32[1, 64, 128][64, 1, 0]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.expand.default](args = (%mul_31, [1, 64, 128]), kwargs = {})
#   %div_6 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.div.Scalar](args = (%expand_18, 128), kwargs = {})
#   %pow_7 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%convert_element_type_56, 1.0), kwargs = {})
#   %mul_32 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Scalar](args = (%pow_7, 2.0), kwargs = {})
#   %mul_33 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%div_6, %mul_32), kwargs = {})
#   %add_20 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_29, %mul_33), kwargs = {})
#   %convert_element_type_68 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_20, torch.bfloat16), kwargs = {})
#   return %sum_9,%convert_element_type_68
triton_per_fused__to_copy__unsafe_view_add_div_expand_mean_mul_pow_rsqrt_sum_view_15 = async_compile.triton('triton_per_fused__to_copy__unsafe_view_add_div_expand_mean_mul_pow_rsqrt_sum_view_15', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 64, 'r0_': 128},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', 'in_ptr3': '*bf16', 'in_ptr4': '*fp32', 'out_ptr1': '*bf16', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]], (7,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused__to_copy__unsafe_view_add_div_expand_mean_mul_pow_rsqrt_sum_view_15', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 5, 'num_store': 1, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 256, 'r0_': 82176}}
)
@triton.jit
def triton_per_fused__to_copy__unsafe_view_add_div_expand_mean_mul_pow_rsqrt_sum_view_15(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, out_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 64
    r0_numel = 128
    R0_BLOCK: tl.constexpr = 128
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (r0_1), None, eviction_policy='evict_last').to(tl.float32)
    tmp4 = tl.load(in_ptr2 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp5 = tl.load(in_ptr3 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp13 = tl.load(in_ptr4 + (x0), xmask, eviction_policy='evict_last')
    tmp2 = tmp0 * tmp1
    tmp3 = tmp2.to(tl.float32)
    tmp6 = tmp4 + tmp5
    tmp7 = tmp6.to(tl.float32)
    tmp8 = tmp3 * tmp7
    tmp9 = tl.broadcast_to(tmp8, [XBLOCK, R0_BLOCK])
    tmp11 = tl.where(xmask, tmp9, 0)
    tmp12 = tl.sum(tmp11, 1)[:, None].to(tl.float32)
    tmp14 = tl.full([1, 1], 128.0, tl.float32)
    tmp15 = (tmp13 / tmp14)
    tmp16 = tl.full([1, 1], 1e-06, tl.float32)
    tmp17 = tmp15 + tmp16
    tmp18 = libdevice.rsqrt(tmp17)
    tmp19 = tmp3 * tmp18
    tmp20 = tl.full([1, 1], -0.5, tl.float32)
    tmp21 = tmp12 * tmp20
    tmp22 = tmp18 * tmp18
    tmp23 = tmp22 * tmp18
    tmp24 = tmp21 * tmp23
    tmp25 = tl.full([1, 1], 0.0078125, tl.float32)
    tmp26 = tmp24 * tmp25
    tmp27 = tl.full([1, 1], 2.0, tl.float32)
    tmp28 = tmp7 * tmp27
    tmp29 = tmp26 * tmp28
    tmp30 = tmp19 + tmp29
    tmp31 = tmp30.to(tl.float32)
    tl.store(out_ptr1 + (r0_1 + 128*x0), tmp31, xmask)
''', device_str='cuda')


# kernel path: /tmp/ind/iv/civ42jxk7sqeaxzwr4cu7bxwagyu6r54437qcindjtt4blti66xb.py
# Topologically Sorted Source Nodes: [_unsafe_view_16, silu_1, _unsafe_view_17, view_44, mul_32, mul_33, silu_backward], Original ATen: [aten._unsafe_view, aten.silu, aten.view, aten.mul, aten.silu_backward]
# Source node to ATen node mapping:
#   _unsafe_view_16 => view_51
#   _unsafe_view_17 => view_53
#   mul_32 => mul_34
#   mul_33 => mul_35
#   silu_1 => add_17, convert_element_type_50, convert_element_type_51, div_3, exp_3, neg_5
#   silu_backward => add_21, add_22, convert_element_type_77, convert_element_type_78, convert_element_type_79, exp_6, mul_36, mul_37, mul_38, mul_39, neg_7, reciprocal, sub_5
#   view_44 => view_65
# Graph fragment:
#   %mm_18 : Tensor "bf16[64, 352][352, 1]cuda:0" = PlaceHolder[target=mm_18]
#   %mm_11 : Tensor "bf16[64, 352][352, 1]cuda:0" = PlaceHolder[target=mm_11]
#   %mm_12 : Tensor "bf16[64, 352][352, 1]cuda:0" = PlaceHolder[target=mm_12]
#   %view_51 : Tensor "bf16[1, 64, 352][22528, 352, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_11, [1, 64, 352]), kwargs = {})
#   %convert_element_type_50 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%view_51, torch.float32), kwargs = {})
#   %neg_5 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.neg.default](args = (%convert_element_type_50,), kwargs = {})
#   %exp_3 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.exp.default](args = (%neg_5,), kwargs = {})
#   %add_17 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%exp_3, 1), kwargs = {})
#   %div_3 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.div.Tensor](args = (%convert_element_type_50, %add_17), kwargs = {})
#   %convert_element_type_51 : Tensor "bf16[1, 64, 352][22528, 352, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%div_3, torch.bfloat16), kwargs = {})
#   %view_53 : Tensor "bf16[1, 64, 352][22528, 352, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_12, [1, 64, 352]), kwargs = {})
#   %view_65 : Tensor "bf16[1, 64, 352][22528, 352, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_18, [1, 64, 352]), kwargs = {})
#   %mul_34 : Tensor "bf16[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%view_65, %convert_element_type_51), kwargs = {})
#   %mul_35 : Tensor "bf16[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%view_65, %view_53), kwargs = {})
#   %convert_element_type_77 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_35, torch.float32), kwargs = {})
#   %convert_element_type_78 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%view_51, torch.float32), kwargs = {})
#   %neg_7 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.neg.default](args = (%convert_element_type_78,), kwargs = {})
#   %exp_6 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.exp.default](args = (%neg_7,), kwargs = {})
#   %add_21 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%exp_6, 1), kwargs = {})
#   %reciprocal : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reciprocal.default](args = (%add_21,), kwargs = {})
#   %mul_36 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.mul.Tensor](args = (%reciprocal, 1), kwargs = {})
#   %mul_37 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_77, %mul_36), kwargs = {})
#   %sub_5 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (1, %mul_36), kwargs = {})
#   %mul_38 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_78, %sub_5), kwargs = {})
#   %add_22 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_38, 1), kwargs = {})
#   %mul_39 : Tensor "f32[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_37, %add_22), kwargs = {})
#   %convert_element_type_79 : Tensor "bf16[1, 64, 352][22528, 352, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_39, torch.bfloat16), kwargs = {})
#   return %mul_34,%convert_element_type_79
triton_poi_fused__unsafe_view_mul_silu_silu_backward_view_16 = async_compile.triton('triton_poi_fused__unsafe_view_mul_silu_silu_backward_view_16', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 32768}, 
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*bf16', 'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'out_ptr0': '*bf16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused__unsafe_view_mul_silu_silu_backward_view_16', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 3, 'num_store': 2, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 315392}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused__unsafe_view_mul_silu_silu_backward_view_16(in_out_ptr0, in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 22528
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (x0), xmask).to(tl.float32)
    tmp10 = tl.load(in_out_ptr0 + (x0), xmask).to(tl.float32)
    tmp2 = tmp1.to(tl.float32)
    tmp3 = -tmp2
    tmp4 = libdevice.exp(tmp3)
    tmp5 = tl.full([1], 1.0, tl.float32)
    tmp6 = tmp4 + tmp5
    tmp7 = (tmp2 / tmp6)
    tmp8 = tmp7.to(tl.float32)
    tmp9 = tmp0 * tmp8
    tmp11 = tmp0 * tmp10
    tmp12 = tmp11.to(tl.float32)
    tmp13 = tl.full([1], 1, tl.int32)
    tmp14 = (tmp13 / tmp6)
    tmp15 = tmp14 * tmp5
    tmp16 = tmp12 * tmp15
    tmp17 = tmp5 - tmp15
    tmp18 = tmp2 * tmp17
    tmp19 = tmp18 + tmp5
    tmp20 = tmp16 * tmp19
    tmp21 = tmp20.to(tl.float32)
    tl.store(out_ptr0 + (x0), tmp9, xmask)
    tl.store(in_out_ptr0 + (x0), tmp21, xmask)
''', device_str='cuda')


# kernel path: /tmp/ind/cf/ccfpd55zrlu5lnmjavoaczmyg5e44h4mzhfrknpqautptpntgc5f.py
# Topologically Sorted Source Nodes: [_to_copy_14, pow_4, mean_3, add_15, rsqrt_3, view_46, view_48, add_19, mul_34, _to_copy_22, mul_37, mul_36, sum_5, mul_38, pow_8, mul_39, expand_18, div_1, pow_9, mul_40, mul_41, add_20, _to_copy_23, add_21], Original ATen: [aten._to_copy, aten.pow, aten.mean, aten.add, aten.rsqrt, aten.view, aten.mul, aten.sum, aten.expand, aten.div]
# Source node to ATen node mapping:
#   _to_copy_14 => convert_element_type_46
#   _to_copy_22 => convert_element_type_84
#   _to_copy_23 => convert_element_type_85
#   add_15 => add_16
#   add_19 => add_23
#   add_20 => add_24
#   add_21 => add_25
#   div_1 => div_7
#   expand_18 => expand_19
#   mean_3 => mean_3
#   mul_34 => mul_40
#   mul_36 => mul_42
#   mul_37 => mul_43
#   mul_38 => mul_44
#   mul_39 => mul_45
#   mul_40 => mul_46
#   mul_41 => mul_47
#   pow_4 => pow_4
#   pow_8 => pow_8
#   pow_9 => pow_9
#   rsqrt_3 => rsqrt_3
#   sum_5 => sum_11
#   view_46 => view_67
#   view_48 => view_69
# Graph fragment:
#   %mm_20 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_20]
#   %mm_22 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_22]
#   %arg20_1 : Tensor "bf16[128][1]cuda:0" = PlaceHolder[target=arg20_1]
#   %add_15 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0" = PlaceHolder[target=add_15]
#   %convert_element_type_68 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0" = PlaceHolder[target=convert_element_type_68]
#   %buf39 : Tensor "f32[1, 64, 1][64, 1, 64]cuda:0" = PlaceHolder[target=buf39]
#   %sum_11 : Tensor "f32[1, 64, 1][64, 1, 64]cuda:0" = PlaceHolder[target=sum_11]
#   %convert_element_type_46 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_15, torch.float32), kwargs = {})
#   %pow_4 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%convert_element_type_46, 2), kwargs = {})
#   %mean_3 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mean.dim](args = (%pow_4, [-1], True), kwargs = {})
#   %add_16 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mean_3, 1e-06), kwargs = {})
#   %rsqrt_3 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_16,), kwargs = {})
#   %view_67 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_20, [1, 64, 128]), kwargs = {})
#   %view_69 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_22, [1, 64, 128]), kwargs = {})
#   %add_23 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%view_67, %view_69), kwargs = {})
#   %mul_40 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%add_23, %arg20_1), kwargs = {})
#   %convert_element_type_84 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_40, torch.float32), kwargs = {})
#   %mul_43 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_84, %rsqrt_3), kwargs = {})
#   %mul_42 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_84, %convert_element_type_46), kwargs = {})
#   %sum_11 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%mul_42, [2], True), kwargs = {})
#   %mul_44 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Scalar](args = (%sum_11, -0.5), kwargs = {})
#   %pow_8 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%rsqrt_3, 3), kwargs = {})
#   %mul_45 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_44, %pow_8), kwargs = {})
#   %expand_19 : Tensor "f32[1, 64, 128][64, 1, 0]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.expand.default](args = (%mul_45, [1, 64, 128]), kwargs = {})
#   %div_7 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.div.Scalar](args = (%expand_19, 128), kwargs = {})
#   %pow_9 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%convert_element_type_46, 1.0), kwargs = {})
#   %mul_46 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Scalar](args = (%pow_9, 2.0), kwargs = {})
#   %mul_47 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%div_7, %mul_46), kwargs = {})
#   %add_24 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_43, %mul_47), kwargs = {})
#   %convert_element_type_85 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_24, torch.bfloat16), kwargs = {})
#   %add_25 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%convert_element_type_68, %convert_element_type_85), kwargs = {})
#   return %sum_11,%add_25
triton_per_fused__to_copy_add_div_expand_mean_mul_pow_rsqrt_sum_view_17 = async_compile.triton('triton_per_fused__to_copy_add_div_expand_mean_mul_pow_rsqrt_sum_view_17', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 64, 'r0_': 128},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', 'in_ptr3': '*bf16', 'in_ptr4': '*bf16', 'in_ptr5': '*fp32', 'out_ptr1': '*bf16', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]], (7,): [['tt.divisibility', 16]], (8,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused__to_copy_add_div_expand_mean_mul_pow_rsqrt_sum_view_17', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 6, 'num_store': 1, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 256, 'r0_': 98560}}
)
@triton.jit
def triton_per_fused__to_copy_add_div_expand_mean_mul_pow_rsqrt_sum_view_17(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, out_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 64
    r0_numel = 128
    R0_BLOCK: tl.constexpr = 128
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp3 = tl.load(in_ptr2 + (r0_1), None, eviction_policy='evict_last').to(tl.float32)
    tmp6 = tl.load(in_ptr3 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp13 = tl.load(in_ptr4 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp14 = tl.load(in_ptr5 + (x0), xmask, eviction_policy='evict_last')
    tmp2 = tmp0 + tmp1
    tmp4 = tmp2 * tmp3
    tmp5 = tmp4.to(tl.float32)
    tmp7 = tmp6.to(tl.float32)
    tmp8 = tmp5 * tmp7
    tmp9 = tl.broadcast_to(tmp8, [XBLOCK, R0_BLOCK])
    tmp11 = tl.where(xmask, tmp9, 0)
    tmp12 = tl.sum(tmp11, 1)[:, None].to(tl.float32)
    tmp15 = tl.full([1, 1], 128.0, tl.float32)
    tmp16 = (tmp14 / tmp15)
    tmp17 = tl.full([1, 1], 1e-06, tl.float32)
    tmp18 = tmp16 + tmp17
    tmp19 = libdevice.rsqrt(tmp18)
    tmp20 = tmp5 * tmp19
    tmp21 = tl.full([1, 1], -0.5, tl.float32)
    tmp22 = tmp12 * tmp21
    tmp23 = tmp19 * tmp19
    tmp24 = tmp23 * tmp19
    tmp25 = tmp22 * tmp24
    tmp26 = tl.full([1, 1], 0.0078125, tl.float32)
    tmp27 = tmp25 * tmp26
    tmp28 = tl.full([1, 1], 2.0, tl.float32)
    tmp29 = tmp7 * tmp28
    tmp30 = tmp27 * tmp29
    tmp31 = tmp20 + tmp30
    tmp32 = tmp31.to(tl.float32)
    tmp33 = tmp13 + tmp32
    tl.store(out_ptr1 + (r0_1 + 128*x0), tmp33, xmask)
''', device_str='cuda')


# kernel path: /tmp/ind/sr/csrpjnom2rh74rzbvehqhlr5bfczyce2yuozhsrxzsapwwvjaoct.py
# Topologically Sorted Source Nodes: [view_54, view_59, sum_6], Original ATen: [aten.view, aten.sum]
# Source node to ATen node mapping:
#   sum_6 => sum_13
#   view_54 => view_75
#   view_59 => view_80
# Graph fragment:
#   %bmm_5 : Tensor "bf16[2, 64, 64][4096, 64, 1]cuda:0" = PlaceHolder[target=bmm_5]
#   %view_75 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%bmm_5, [1, 2, 64, 64]), kwargs = {})
#   %view_80 : Tensor "bf16[1, 1, 2, 64, 64][8192, 8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%view_75, [1, 1, 2, 64, 64]), kwargs = {})
#   %sum_13 : Tensor "bf16[1, 1, 1, 64, 64][4096, 4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%view_80, [2], True), kwargs = {})
#   return %sum_13
triton_poi_fused_sum_view_18 = async_compile.triton('triton_poi_fused_sum_view_18', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 4096}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'out_ptr0': '*bf16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_sum_view_18', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 32768}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_sum_view_18(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 4096
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)[:]
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), None).to(tl.float32)
    tmp1 = tl.load(in_ptr0 + (4096 + x0), None).to(tl.float32)
    tmp2 = tmp0 + tmp1
    tl.store(out_ptr0 + (x0), tmp2, None)
''', device_str='cuda')


# kernel path: /tmp/ind/zy/czys3iedm37nhur3uvqlinoou7qi5rboek7cufmhnttielugpmlh.py
# Topologically Sorted Source Nodes: [arange_4, add_2, unsqueeze_10, unsqueeze_11, unsqueeze_12, arange_3, add_1, unsqueeze_7, unsqueeze_8, unsqueeze_9, le, expand, scalar_tensor, where, _unsafe_view_13, mul_18, add_13, _to_copy_12, _softmax_1, _softmax_backward_data, view_55, _to_copy_24, _to_copy_25, mul_42], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten.le, aten.expand, aten.scalar_tensor, aten.where, aten._unsafe_view, aten.mul, aten._to_copy, aten.sub, aten.exp, aten._softmax, aten._softmax_backward_data, aten.view]
# Source node to ATen node mapping:
#   _softmax_1 => div_2
#   _softmax_backward_data => fma, mul_48, neg_8, sum_12
#   _to_copy_12 => convert_element_type_40
#   _to_copy_24 => convert_element_type_94
#   _to_copy_25 => convert_element_type_95
#   _unsafe_view_13 => view_43
#   add_1 => add_1
#   add_13 => add_14
#   add_2 => add_2
#   arange_3 => iota_1
#   arange_4 => iota_2
#   expand => expand
#   le => le
#   mul_18 => mul_18
#   mul_42 => mul_49
#   scalar_tensor => full_default
#   unsqueeze_10 => unsqueeze_4
#   unsqueeze_11 => unsqueeze_5
#   unsqueeze_12 => unsqueeze_6
#   unsqueeze_7 => unsqueeze_1
#   unsqueeze_8 => unsqueeze_2
#   unsqueeze_9 => unsqueeze_3
#   view_55 => view_76
#   where => where
# Graph fragment:
#   %bmm_6 : Tensor "bf16[2, 64, 64][4096, 64, 1]cuda:0" = PlaceHolder[target=bmm_6]
#   %bmm_3 : Tensor "bf16[2, 64, 64][4096, 64, 1]cuda:0" = PlaceHolder[target=bmm_3]
#   %arg0_1 : Tensor "bf16[][]cuda:0" = PlaceHolder[target=arg0_1]
#   %getitem_2 : Tensor "f32[1, 2, 64, 1][128, 64, 1, 128]cuda:0" = PlaceHolder[target=getitem_2]
#   %getitem_3 : Tensor "f32[1, 2, 64, 1][128, 64, 1, 128]cuda:0" = PlaceHolder[target=getitem_3]
#   %mul_48 : Tensor "f32[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0" = PlaceHolder[target=mul_48]
#   %sum_12 : Tensor "f32[1, 2, 64, 1][128, 64, 1, 128]cuda:0" = PlaceHolder[target=sum_12]
#   %iota_2 : Tensor "i64[64][1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.iota.default](args = (64,), kwargs = {start: 0, step: 1, dtype: torch.int64, device: cuda:0, requires_grad: False})
#   %add_2 : Tensor "i64[64][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%iota_2, 0), kwargs = {})
#   %unsqueeze_4 : Tensor "i64[1, 64][64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%add_2, 0), kwargs = {})
#   %unsqueeze_5 : Tensor "i64[1, 1, 64][64, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%unsqueeze_4, 1), kwargs = {})
#   %unsqueeze_6 : Tensor "i64[1, 1, 1, 64][64, 64, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%unsqueeze_5, 2), kwargs = {})
#   %iota_1 : Tensor "i64[64][1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.iota.default](args = (64,), kwargs = {start: 0, step: 1, dtype: torch.int64, device: cuda:0, requires_grad: False})
#   %add_1 : Tensor "i64[64][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%iota_1, 0), kwargs = {})
#   %unsqueeze_1 : Tensor "i64[1, 64][64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%add_1, 0), kwargs = {})
#   %unsqueeze_2 : Tensor "i64[1, 1, 64][64, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%unsqueeze_1, 1), kwargs = {})
#   %unsqueeze_3 : Tensor "i64[1, 1, 64, 1][64, 64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%unsqueeze_2, 3), kwargs = {})
#   %le : Tensor "b8[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.le.Tensor](args = (%unsqueeze_6, %unsqueeze_3), kwargs = {})
#   %expand : Tensor "b8[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.expand.default](args = (%le, [1, -1, 64, 64]), kwargs = {})
#   %full_default : Tensor "bf16[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], -3.3895313892515355e+38), kwargs = {dtype: torch.bfloat16, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %where : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.where.self](args = (%expand, %arg0_1, %full_default), kwargs = {})
#   %view_43 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%bmm_3, [1, 2, 64, 64]), kwargs = {})
#   %mul_18 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%view_43, 0.125), kwargs = {})
#   %add_14 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_18, %where), kwargs = {})
#   %convert_element_type_40 : Tensor "f32[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_14, torch.float32), kwargs = {})
#   %sub_tensor_1 : Tensor "f32[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%convert_element_type_40, %getitem_2), kwargs = {})
#   %exp_default_1 : Tensor "f32[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.exp.default](args = (%sub_tensor_1,), kwargs = {})
#   %div_2 : Tensor "f32[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.div.Tensor](args = (%exp_default_1, %getitem_3), kwargs = {})
#   %neg_8 : Tensor "f32[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.neg.default](args = (%div_2,), kwargs = {})
#   %view_76 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%bmm_6, [1, 2, 64, 64]), kwargs = {})
#   %convert_element_type_94 : Tensor "f32[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%view_76, torch.float32), kwargs = {})
#   %mul_48 : Tensor "f32[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_94, %div_2), kwargs = {})
#   %sum_12 : Tensor "f32[1, 2, 64, 1][128, 64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%mul_48, [-1], True), kwargs = {})
#   %fma : Tensor "f32[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.fma.default](args = (%neg_8, %sum_12, %mul_48), kwargs = {})
#   %convert_element_type_95 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%fma, torch.bfloat16), kwargs = {})
#   %mul_49 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_95, 0.125), kwargs = {})
#   return %mul_48,%sum_12,%mul_49
triton_per_fused__softmax__softmax_backward_data__to_copy__unsafe_view_add_arange_exp_expand_le_mul_scalar_tensor_sub_unsqueeze_view_where_19 = async_compile.triton('triton_per_fused__softmax__softmax_backward_data__to_copy__unsafe_view_add_arange_exp_expand_le_mul_scalar_tensor_sub_unsqueeze_view_where_19', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 128, 'r0_': 64},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*bf16', 'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'in_ptr2': '*fp32', 'in_ptr3': '*fp32', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused__softmax__softmax_backward_data__to_copy__unsafe_view_add_arange_exp_expand_le_mul_scalar_tensor_sub_unsqueeze_view_where_19', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 5, 'num_store': 1, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 1024, 'r0_': 65536}}
)
@triton.jit
def triton_per_fused__softmax__softmax_backward_data__to_copy__unsafe_view_add_arange_exp_expand_le_mul_scalar_tensor_sub_unsqueeze_view_where_19(in_out_ptr0, in_ptr0, in_ptr1, in_ptr2, in_ptr3, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 128
    r0_numel = 64
    R0_BLOCK: tl.constexpr = 64
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_2 = r0_index
    x3 = xindex
    x0 = (xindex % 64)
    tmp0 = tl.load(in_ptr0 + (r0_2 + 64*x3), xmask, other=0.0).to(tl.float32)
    tmp2 = tl.load(in_out_ptr0 + (r0_2 + 64*x3), xmask, other=0.0).to(tl.float32)
    tmp8 = tl.load(in_ptr1 + (0)).to(tl.float32)
    tmp9 = tl.broadcast_to(tmp8, [1, 1])
    tmp14 = tl.load(in_ptr2 + (x3), xmask, eviction_policy='evict_last')
    tmp17 = tl.load(in_ptr3 + (x3), xmask, eviction_policy='evict_last')
    tmp1 = tmp0.to(tl.float32)
    tmp3 = tl.full([1, 1], 0.125, tl.float32)
    tmp4 = tmp2 * tmp3
    tmp5 = r0_2
    tmp6 = x0
    tmp7 = tmp5 <= tmp6
    tmp10 = tl.full([1, 1], -3.3895313892515355e+38, tl.float32)
    tmp11 = tl.where(tmp7, tmp9, tmp10)
    tmp12 = tmp4 + tmp11
    tmp13 = tmp12.to(tl.float32)
    tmp15 = tmp13 - tmp14
    tmp16 = libdevice.exp(tmp15)
    tmp18 = (tmp16 / tmp17)
    tmp19 = tmp1 * tmp18
    tmp20 = tl.broadcast_to(tmp19, [XBLOCK, R0_BLOCK])
    tmp22 = tl.where(xmask, tmp20, 0)
    tmp23 = tl.sum(tmp22, 1)[:, None].to(tl.float32)
    tmp24 = -tmp18
    tmp25 = tl.fma(tmp24, tmp23, tmp19)
    tmp26 = tmp25.to(tl.float32)
    tmp27 = tmp26 * tmp3
    tl.store(in_out_ptr0 + (r0_2 + 64*x3), tmp27, xmask)
''', device_str='cuda')


# kernel path: /tmp/ind/iq/ciqfhnmhyb6qmaonayhi3gaf3rmm3ovsplabr3jkx5rceosdilkj.py
# Topologically Sorted Source Nodes: [bmm, transpose, cat_1, cos, mul, _to_copy_2, sin, mul_1, _to_copy_3, unsqueeze_20, unsqueeze_21, slice_backward, view_57, transpose_16, view_60, sum_7, squeeze_1, mul_43, slice_13, neg_4, slice_backward_1, slice_14, add_22, mul_44, add_23, transpose_18, view_64, view_65], Original ATen: [aten.bmm, aten.transpose, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.sin, aten.unsqueeze, aten.slice_backward, aten.view, aten.sum, aten.squeeze, aten.slice, aten.neg, aten.add]
# Source node to ATen node mapping:
#   _to_copy_2 => convert_element_type_2
#   _to_copy_3 => convert_element_type_3
#   add_22 => add_26
#   add_23 => add_27
#   bmm => unsqueeze_default
#   cat_1 => clone_1, expand_4, unsqueeze_10, view_3
#   cos => cos
#   mul => mul
#   mul_1 => mul_1
#   mul_43 => mul_50
#   mul_44 => mul_51
#   neg_4 => neg_9
#   sin => sin
#   slice_13 => slice_10
#   slice_14 => slice_11
#   slice_backward => full_default_7
#   slice_backward_1 => full_default_8
#   squeeze_1 => squeeze_2
#   sum_7 => sum_14
#   transpose => permute
#   transpose_16 => permute_51
#   transpose_18 => permute_57
#   unsqueeze_20 => unsqueeze_15
#   unsqueeze_21 => unsqueeze_16
#   view_57 => view_78
#   view_60 => view_81
#   view_64 => view_85
#   view_65 => view_86
# Graph fragment:
#   %bmm_7 : Tensor "bf16[2, 64, 64][4096, 64, 1]cuda:0" = PlaceHolder[target=bmm_7]
#   %mm_default : Tensor "f32[32, 64][64, 1]cuda:0" = PlaceHolder[target=mm_default]
#   %add_27 : Tensor "bf16[1, 1, 64, 64][4096, 4096, 1, 64]cuda:0" = PlaceHolder[target=add_27]
#   %unsqueeze_default : Tensor "f32[1, 32, 64][2048, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%mm_default, 0), kwargs = {})
#   %permute : Tensor "f32[1, 64, 32][2048, 1, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%unsqueeze_default, [0, 2, 1]), kwargs = {})
#   %unsqueeze_10 : Tensor "f32[1, 64, 1, 32][2048, 1, 2048, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%permute, 2), kwargs = {})
#   %expand_4 : Tensor "f32[1, 64, 2, 32][2048, 1, 0, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.expand.default](args = (%unsqueeze_10, [1, 64, 2, 32]), kwargs = {})
#   %clone_1 : Tensor "f32[1, 64, 2, 32][4096, 64, 32, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.clone.default](args = (%expand_4,), kwargs = {memory_format: torch.contiguous_format})
#   %view_3 : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.reshape.default](args = (%clone_1, [1, 64, 64]), kwargs = {})
#   %cos : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.cos.default](args = (%view_3,), kwargs = {})
#   %mul : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%cos, 1.0), kwargs = {})
#   %convert_element_type_2 : Tensor "bf16[1, 64, 64][4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul, torch.bfloat16), kwargs = {})
#   %sin : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sin.default](args = (%view_3,), kwargs = {})
#   %mul_1 : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%sin, 1.0), kwargs = {})
#   %convert_element_type_3 : Tensor "bf16[1, 64, 64][4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_1, torch.bfloat16), kwargs = {})
#   %unsqueeze_15 : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%convert_element_type_2, 1), kwargs = {})
#   %unsqueeze_16 : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%convert_element_type_3, 1), kwargs = {})
#   %full_default_7 : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([1, 1, 64, 64], 0), kwargs = {dtype: torch.bfloat16, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %view_78 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%bmm_7, [1, 2, 64, 64]), kwargs = {})
#   %permute_51 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 1, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_78, [0, 1, 3, 2]), kwargs = {})
#   %view_81 : Tensor "bf16[1, 1, 2, 64, 64][8192, 8192, 4096, 1, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%permute_51, [1, 1, 2, 64, 64]), kwargs = {})
#   %sum_14 : Tensor "bf16[1, 1, 1, 64, 64][4096, 4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%view_81, [2], True), kwargs = {})
#   %squeeze_2 : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.squeeze.dim](args = (%sum_14, 2), kwargs = {})
#   %mul_50 : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.mul.Tensor](args = (%squeeze_2, %unsqueeze_16), kwargs = {})
#   %slice_10 : Tensor "bf16[1, 1, 64, 32][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice.Tensor](args = (%mul_50, 3, 0, 32), kwargs = {})
#   %neg_9 : Tensor "bf16[1, 1, 64, 32][2048, 2048, 32, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.neg.default](args = (%slice_10,), kwargs = {})
#   %slice_scatter_default : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice_scatter.default](args = (%full_default_7, %neg_9, 3, 32, 9223372036854775807), kwargs = {})
#   %full_default_8 : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([1, 1, 64, 64], 0), kwargs = {dtype: torch.bfloat16, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %slice_11 : Tensor "bf16[1, 1, 64, 32][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice.Tensor](args = (%mul_50, 3, 32, 64), kwargs = {})
#   %slice_scatter_default_1 : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice_scatter.default](args = (%full_default_8, %slice_11, 3, 0, 32), kwargs = {})
#   %add_26 : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%slice_scatter_default, %slice_scatter_default_1), kwargs = {})
#   %mul_51 : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%squeeze_2, %unsqueeze_15), kwargs = {})
#   %add_27 : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_26, %mul_51), kwargs = {})
#   %permute_57 : Tensor "bf16[1, 64, 1, 64][4096, 64, 4096, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%add_27, [0, 2, 1, 3]), kwargs = {})
#   %view_85 : Tensor "bf16[1, 64, 64][4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%permute_57, [1, 64, 64]), kwargs = {})
#   %view_86 : Tensor "bf16[64, 64][64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.reshape.default](args = (%view_85, [64, 64]), kwargs = {})
#   return %add_27,%view_86
triton_poi_fused__to_copy_add_bmm_cat_cos_mul_neg_sin_slice_slice_backward_squeeze_sum_transpose_unsqueeze_view_20 = async_compile.triton('triton_poi_fused__to_copy_add_bmm_cat_cos_mul_neg_sin_slice_slice_backward_squeeze_sum_transpose_unsqueeze_view_20', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'y': 64, 'x': 64}, tile_hint=TileHint.DEFAULT,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'in_ptr1': '*fp32', 'out_ptr1': '*bf16', 'ynumel': 'i32', 'xnumel': 'i32', 'YBLOCK': 'constexpr', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid2D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused__to_copy_add_bmm_cat_cos_mul_neg_sin_slice_slice_backward_squeeze_sum_transpose_unsqueeze_view_20', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 9, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'y': 49152, 'x': 16384}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused__to_copy_add_bmm_cat_cos_mul_neg_sin_slice_slice_backward_squeeze_sum_transpose_unsqueeze_view_20(in_ptr0, in_ptr1, out_ptr1, ynumel, xnumel, YBLOCK : tl.constexpr, XBLOCK : tl.constexpr):
    ynumel = 64
    xnumel = 64
    yoffset = tl.program_id(1) * YBLOCK
    yindex = yoffset + tl.arange(0, YBLOCK)[:, None]
    ymask = yindex < ynumel
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[None, :]
    xmask = xindex < xnumel
    x1 = xindex
    y0 = yindex
    tmp31 = tl.load(in_ptr0 + (y0 + 64*x1), xmask & ymask).to(tl.float32)
    tmp32 = tl.load(in_ptr0 + (4096 + y0 + 64*x1), xmask & ymask).to(tl.float32)
    tmp34 = tl.load(in_ptr1 + (y0 + 64*((x1 % 32))), xmask & ymask)
    tmp0 = x1
    tmp1 = tl.full([1, 1], 32, tl.int64)
    tmp2 = tmp0 >= tmp1
    tmp3 = tl.load(in_ptr0 + ((-2048) + y0 + 64*x1), tmp2 & xmask & ymask, other=0.0).to(tl.float32)
    tmp4 = tl.load(in_ptr0 + (2048 + y0 + 64*x1), tmp2 & xmask & ymask, other=0.0).to(tl.float32)
    tmp5 = tmp3 + tmp4
    tmp6 = tl.load(in_ptr1 + (y0 + 64*((x1 % 32))), tmp2 & xmask & ymask, other=0.0)
    tmp7 = tl_math.sin(tmp6)
    tmp8 = tl.full([1, 1], 1.0, tl.float32)
    tmp9 = tmp7 * tmp8
    tmp10 = tmp9.to(tl.float32)
    tmp11 = tmp5 * tmp10
    tmp12 = -tmp11
    tmp13 = tl.full(tmp12.shape, 0.0, tmp12.dtype)
    tmp14 = tl.where(tmp2, tmp12, tmp13)
    tmp15 = tl.full([1, 1], 0.0, tl.float32)
    tmp16 = tl.where(tmp2, tmp14, tmp15)
    tmp17 = tmp0 < tmp1
    tmp18 = tl.load(in_ptr0 + (2048 + y0 + 64*x1), tmp17 & xmask & ymask, other=0.0).to(tl.float32)
    tmp19 = tl.load(in_ptr0 + (6144 + y0 + 64*x1), tmp17 & xmask & ymask, other=0.0).to(tl.float32)
    tmp20 = tmp18 + tmp19
    tmp21 = tl.load(in_ptr1 + (y0 + 64*((x1 % 32))), tmp17 & xmask & ymask, other=0.0)
    tmp22 = tl_math.sin(tmp21)
    tmp23 = tl.full([1, 1], 1.0, tl.float32)
    tmp24 = tmp22 * tmp23
    tmp25 = tmp24.to(tl.float32)
    tmp26 = tmp20 * tmp25
    tmp27 = tl.full(tmp26.shape, 0.0, tmp26.dtype)
    tmp28 = tl.where(tmp17, tmp26, tmp27)
    tmp29 = tl.where(tmp17, tmp28, tmp15)
    tmp30 = tmp16 + tmp29
    tmp33 = tmp31 + tmp32
    tmp35 = tl_math.cos(tmp34)
    tmp36 = tl.full([1, 1], 1.0, tl.float32)
    tmp37 = tmp35 * tmp36
    tmp38 = tmp37.to(tl.float32)
    tmp39 = tmp33 * tmp38
    tmp40 = tmp30 + tmp39
    tl.store(out_ptr1 + (x1 + 64*y0), tmp40, xmask & ymask)
''', device_str='cuda')


# kernel path: /tmp/ind/2e/c2ezfajp47wycv2nrk54n2rpgkg75jxq2ym2bkfx2bf3gd62kcmx.py
# Topologically Sorted Source Nodes: [bmm, transpose, cat_1, cos, mul, _to_copy_2, sin, mul_1, _to_copy_3, unsqueeze_20, unsqueeze_21, slice_backward_2, view_58, mul_45, slice_15, neg_5, slice_backward_3, slice_16, add_24, mul_46, add_25, transpose_19, clone_2], Original ATen: [aten.bmm, aten.transpose, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.sin, aten.unsqueeze, aten.slice_backward, aten.view, aten.slice, aten.neg, aten.add, aten.clone]
# Source node to ATen node mapping:
#   _to_copy_2 => convert_element_type_2
#   _to_copy_3 => convert_element_type_3
#   add_24 => add_28
#   add_25 => add_29
#   bmm => unsqueeze_default
#   cat_1 => clone_1, expand_4, unsqueeze_10, view_3
#   clone_2 => clone_5
#   cos => cos
#   mul => mul
#   mul_1 => mul_1
#   mul_45 => mul_52
#   mul_46 => mul_53
#   neg_5 => neg_10
#   sin => sin
#   slice_15 => slice_12
#   slice_16 => slice_13
#   slice_backward_2 => full_default_9
#   slice_backward_3 => full_default_10
#   transpose => permute
#   transpose_19 => permute_62
#   unsqueeze_20 => unsqueeze_15
#   unsqueeze_21 => unsqueeze_16
#   view_58 => view_79
# Graph fragment:
#   %bmm_8 : Tensor "bf16[2, 64, 64][4096, 64, 1]cuda:0" = PlaceHolder[target=bmm_8]
#   %mm_default : Tensor "f32[32, 64][64, 1]cuda:0" = PlaceHolder[target=mm_default]
#   %unsqueeze_default : Tensor "f32[1, 32, 64][2048, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%mm_default, 0), kwargs = {})
#   %permute : Tensor "f32[1, 64, 32][2048, 1, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%unsqueeze_default, [0, 2, 1]), kwargs = {})
#   %unsqueeze_10 : Tensor "f32[1, 64, 1, 32][2048, 1, 2048, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%permute, 2), kwargs = {})
#   %expand_4 : Tensor "f32[1, 64, 2, 32][2048, 1, 0, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.expand.default](args = (%unsqueeze_10, [1, 64, 2, 32]), kwargs = {})
#   %clone_1 : Tensor "f32[1, 64, 2, 32][4096, 64, 32, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.clone.default](args = (%expand_4,), kwargs = {memory_format: torch.contiguous_format})
#   %view_3 : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.reshape.default](args = (%clone_1, [1, 64, 64]), kwargs = {})
#   %cos : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.cos.default](args = (%view_3,), kwargs = {})
#   %mul : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%cos, 1.0), kwargs = {})
#   %convert_element_type_2 : Tensor "bf16[1, 64, 64][4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul, torch.bfloat16), kwargs = {})
#   %sin : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sin.default](args = (%view_3,), kwargs = {})
#   %mul_1 : Tensor "f32[1, 64, 64][4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%sin, 1.0), kwargs = {})
#   %convert_element_type_3 : Tensor "bf16[1, 64, 64][4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_1, torch.bfloat16), kwargs = {})
#   %unsqueeze_15 : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%convert_element_type_2, 1), kwargs = {})
#   %unsqueeze_16 : Tensor "bf16[1, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%convert_element_type_3, 1), kwargs = {})
#   %full_default_9 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([1, 2, 64, 64], 0), kwargs = {dtype: torch.bfloat16, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %view_79 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.reshape.default](args = (%bmm_8, [1, 2, 64, 64]), kwargs = {})
#   %mul_52 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.mul.Tensor](args = (%view_79, %unsqueeze_16), kwargs = {})
#   %slice_12 : Tensor "bf16[1, 2, 64, 32][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice.Tensor](args = (%mul_52, 3, 0, 32), kwargs = {})
#   %neg_10 : Tensor "bf16[1, 2, 64, 32][4096, 2048, 32, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.neg.default](args = (%slice_12,), kwargs = {})
#   %slice_scatter_default_2 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice_scatter.default](args = (%full_default_9, %neg_10, 3, 32, 9223372036854775807), kwargs = {})
#   %full_default_10 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([1, 2, 64, 64], 0), kwargs = {dtype: torch.bfloat16, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %slice_13 : Tensor "bf16[1, 2, 64, 32][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice.Tensor](args = (%mul_52, 3, 32, 64), kwargs = {})
#   %slice_scatter_default_3 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice_scatter.default](args = (%full_default_10, %slice_13, 3, 0, 32), kwargs = {})
#   %add_28 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%slice_scatter_default_2, %slice_scatter_default_3), kwargs = {})
#   %mul_53 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%view_79, %unsqueeze_15), kwargs = {})
#   %add_29 : Tensor "bf16[1, 2, 64, 64][8192, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_28, %mul_53), kwargs = {})
#   %permute_62 : Tensor "bf16[1, 64, 2, 64][8192, 64, 4096, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%add_29, [0, 2, 1, 3]), kwargs = {})
#   %clone_5 : Tensor "bf16[1, 64, 2, 64][8192, 128, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.clone.default](args = (%permute_62,), kwargs = {memory_format: torch.contiguous_format})
#   return %clone_5
triton_poi_fused__to_copy_add_bmm_cat_clone_cos_mul_neg_sin_slice_slice_backward_transpose_unsqueeze_view_21 = async_compile.triton('triton_poi_fused__to_copy_add_bmm_cat_clone_cos_mul_neg_sin_slice_slice_backward_transpose_unsqueeze_view_21', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'y': 128, 'x': 64}, tile_hint=TileHint.DEFAULT,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'in_ptr1': '*fp32', 'out_ptr0': '*bf16', 'ynumel': 'i32', 'xnumel': 'i32', 'YBLOCK': 'constexpr', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid2D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused__to_copy_add_bmm_cat_clone_cos_mul_neg_sin_slice_slice_backward_transpose_unsqueeze_view_21', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 6, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'y': 8192, 'x': 81920}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused__to_copy_add_bmm_cat_clone_cos_mul_neg_sin_slice_slice_backward_transpose_unsqueeze_view_21(in_ptr0, in_ptr1, out_ptr0, ynumel, xnumel, YBLOCK : tl.constexpr, XBLOCK : tl.constexpr):
    ynumel = 128
    xnumel = 64
    yoffset = tl.program_id(1) * YBLOCK
    yindex = yoffset + tl.arange(0, YBLOCK)[:, None]
    ymask = yindex < ynumel
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[None, :]
    xmask = xindex < xnumel
    x2 = xindex
    y3 = yindex
    y0 = (yindex % 64)
    y1 = yindex // 64
    tmp27 = tl.load(in_ptr0 + (x2 + 64*y3), xmask & ymask, eviction_policy='evict_last').to(tl.float32)
    tmp28 = tl.load(in_ptr1 + (y0 + 64*((x2 % 32))), xmask & ymask, eviction_policy='evict_last')
    tmp0 = x2
    tmp1 = tl.full([1, 1], 32, tl.int64)
    tmp2 = tmp0 >= tmp1
    tmp3 = tl.load(in_ptr0 + ((-32) + x2 + 64*y3), tmp2 & xmask & ymask, eviction_policy='evict_last', other=0.0).to(tl.float32)
    tmp4 = tl.load(in_ptr1 + (y0 + 64*((x2 % 32))), tmp2 & xmask & ymask, eviction_policy='evict_last', other=0.0)
    tmp5 = tl_math.sin(tmp4)
    tmp6 = tl.full([1, 1], 1.0, tl.float32)
    tmp7 = tmp5 * tmp6
    tmp8 = tmp7.to(tl.float32)
    tmp9 = tmp3 * tmp8
    tmp10 = -tmp9
    tmp11 = tl.full(tmp10.shape, 0.0, tmp10.dtype)
    tmp12 = tl.where(tmp2, tmp10, tmp11)
    tmp13 = tl.full([1, 1], 0.0, tl.float32)
    tmp14 = tl.where(tmp2, tmp12, tmp13)
    tmp15 = tmp0 < tmp1
    tmp16 = tl.load(in_ptr0 + (32 + x2 + 64*y3), tmp15 & xmask & ymask, eviction_policy='evict_last', other=0.0).to(tl.float32)
    tmp17 = tl.load(in_ptr1 + (y0 + 64*((x2 % 32))), tmp15 & xmask & ymask, eviction_policy='evict_last', other=0.0)
    tmp18 = tl_math.sin(tmp17)
    tmp19 = tl.full([1, 1], 1.0, tl.float32)
    tmp20 = tmp18 * tmp19
    tmp21 = tmp20.to(tl.float32)
    tmp22 = tmp16 * tmp21
    tmp23 = tl.full(tmp22.shape, 0.0, tmp22.dtype)
    tmp24 = tl.where(tmp15, tmp22, tmp23)
    tmp25 = tl.where(tmp15, tmp24, tmp13)
    tmp26 = tmp14 + tmp25
    tmp29 = tl_math.cos(tmp28)
    tmp30 = tl.full([1, 1], 1.0, tl.float32)
    tmp31 = tmp29 * tmp30
    tmp32 = tmp31.to(tl.float32)
    tmp33 = tmp27 * tmp32
    tmp34 = tmp26 + tmp33
    tl.store(out_ptr0 + (x2 + 64*y1 + 128*y0), tmp34, xmask & ymask)
''', device_str='cuda')


# kernel path: /tmp/ind/xp/cxplsch6mqva3y6t5obvz2fipwt4koiewhmwvnsgczosfscvnor4.py
# Topologically Sorted Source Nodes: [embedding, _unsafe_view_6, add_7, _unsafe_view_9, add_9, _to_copy_10, pow_3, mean_2, add_10, rsqrt_2, view_63, view_66, add_26, view_68, add_27, mul_47, _to_copy_26, mul_50, mul_49, sum_9, mul_51, pow_10, mul_52, expand_19, div_2, pow_11, mul_53, mul_54, add_28, _to_copy_27, add_29], Original ATen: [aten.embedding, aten._unsafe_view, aten.add, aten._to_copy, aten.pow, aten.mean, aten.rsqrt, aten.view, aten.mul, aten.sum, aten.expand, aten.div]
# Source node to ATen node mapping:
#   _to_copy_10 => convert_element_type_30
#   _to_copy_26 => convert_element_type_112
#   _to_copy_27 => convert_element_type_113
#   _unsafe_view_6 => view_23
#   _unsafe_view_9 => view_29
#   add_10 => add_11
#   add_26 => add_30
#   add_27 => add_31
#   add_28 => add_32
#   add_29 => add_33
#   add_7 => add_7
#   add_9 => add_10
#   div_2 => div_8
#   embedding => embedding
#   expand_19 => expand_20
#   mean_2 => mean_2
#   mul_47 => mul_54
#   mul_49 => mul_56
#   mul_50 => mul_57
#   mul_51 => mul_58
#   mul_52 => mul_59
#   mul_53 => mul_60
#   mul_54 => mul_61
#   pow_10 => pow_10
#   pow_11 => pow_11
#   pow_3 => pow_3
#   rsqrt_2 => rsqrt_2
#   sum_9 => sum_16
#   view_63 => view_84
#   view_66 => view_87
#   view_68 => view_90
# Graph fragment:
#   %mm_26 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_26]
#   %mm_28 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_28]
#   %mm_30 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_30]
#   %arg19_1 : Tensor "bf16[128][1]cuda:0" = PlaceHolder[target=arg19_1]
#   %arg1_1 : Tensor "i64[1, 64][64, 1]cuda:0" = PlaceHolder[target=arg1_1]
#   %arg2_1 : Tensor "bf16[8192, 128][128, 1]cuda:0" = PlaceHolder[target=arg2_1]
#   %mm_3 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_3]
#   %mm_6 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_6]
#   %buf23 : Tensor "f32[1, 64, 1][64, 1, 64]cuda:0" = PlaceHolder[target=buf23]
#   %sum_16 : Tensor "f32[1, 64, 1][64, 1, 64]cuda:0" = PlaceHolder[target=sum_16]
#   %add_25 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0" = PlaceHolder[target=add_25]
#   %add_32 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0" = PlaceHolder[target=add_32]
#   %embedding : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.embedding.default](args = (%arg2_1, %arg1_1), kwargs = {})
#   %view_23 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_3, [1, 64, 128]), kwargs = {})
#   %add_7 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%embedding, %view_23), kwargs = {})
#   %view_29 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_6, [1, 64, 128]), kwargs = {})
#   %add_10 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_7, %view_29), kwargs = {})
#   %convert_element_type_30 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_10, torch.float32), kwargs = {})
#   %pow_3 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%convert_element_type_30, 2), kwargs = {})
#   %mean_2 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mean.dim](args = (%pow_3, [-1], True), kwargs = {})
#   %add_11 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mean_2, 1e-06), kwargs = {})
#   %rsqrt_2 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_11,), kwargs = {})
#   %view_84 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_26, [1, 64, 128]), kwargs = {})
#   %view_87 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_28, [1, 64, 128]), kwargs = {})
#   %add_30 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%view_84, %view_87), kwargs = {})
#   %view_90 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_30, [1, 64, 128]), kwargs = {})
#   %add_31 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_30, %view_90), kwargs = {})
#   %mul_54 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%add_31, %arg19_1), kwargs = {})
#   %convert_element_type_112 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_54, torch.float32), kwargs = {})
#   %mul_57 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_112, %rsqrt_2), kwargs = {})
#   %mul_56 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_112, %convert_element_type_30), kwargs = {})
#   %sum_16 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%mul_56, [2], True), kwargs = {})
#   %mul_58 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Scalar](args = (%sum_16, -0.5), kwargs = {})
#   %pow_10 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%rsqrt_2, 3), kwargs = {})
#   %mul_59 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_58, %pow_10), kwargs = {})
#   %expand_20 : Tensor "f32[1, 64, 128][64, 1, 0]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.expand.default](args = (%mul_59, [1, 64, 128]), kwargs = {})
#   %div_8 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.div.Scalar](args = (%expand_20, 128), kwargs = {})
#   %pow_11 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%convert_element_type_30, 1.0), kwargs = {})
#   %mul_60 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Scalar](args = (%pow_11, 2.0), kwargs = {})
#   %mul_61 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%div_8, %mul_60), kwargs = {})
#   %add_32 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_57, %mul_61), kwargs = {})
#   %convert_element_type_113 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_32, torch.bfloat16), kwargs = {})
#   %add_33 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_25, %convert_element_type_113), kwargs = {})
#   return %sum_16,%add_32,%add_33
triton_per_fused__to_copy__unsafe_view_add_div_embedding_expand_mean_mul_pow_rsqrt_sum_view_22 = async_compile.triton('triton_per_fused__to_copy__unsafe_view_add_div_embedding_expand_mean_mul_pow_rsqrt_sum_view_22', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 64, 'r0_': 128},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', 'in_ptr3': '*bf16', 'in_ptr4': '*i64', 'in_ptr5': '*bf16', 'in_ptr6': '*bf16', 'in_ptr7': '*bf16', 'in_ptr8': '*fp32', 'in_ptr9': '*bf16', 'out_ptr2': '*bf16', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]], (7,): [['tt.divisibility', 16]], (8,): [['tt.divisibility', 16]], (9,): [['tt.divisibility', 16]], (10,): [['tt.divisibility', 16]], (11,): [['tt.divisibility', 16]], (12,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused__to_copy__unsafe_view_add_div_embedding_expand_mean_mul_pow_rsqrt_sum_view_22', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 9, 'num_store': 1, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 768, 'r0_': 131328}}
)
@triton.jit
def triton_per_fused__to_copy__unsafe_view_add_div_embedding_expand_mean_mul_pow_rsqrt_sum_view_22(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, in_ptr6, in_ptr7, in_ptr8, in_ptr9, out_ptr2, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 64
    r0_numel = 128
    R0_BLOCK: tl.constexpr = 128
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp3 = tl.load(in_ptr2 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp5 = tl.load(in_ptr3 + (r0_1), None, eviction_policy='evict_last').to(tl.float32)
    tmp8 = tl.load(in_ptr4 + (x0), xmask, eviction_policy='evict_last')
    tmp15 = tl.load(in_ptr6 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp17 = tl.load(in_ptr7 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp25 = tl.load(in_ptr8 + (x0), xmask, eviction_policy='evict_last')
    tmp43 = tl.load(in_ptr9 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp2 = tmp0 + tmp1
    tmp4 = tmp2 + tmp3
    tmp6 = tmp4 * tmp5
    tmp7 = tmp6.to(tl.float32)
    tmp9 = tl.full([1, 1], 8192, tl.int32)
    tmp10 = tmp8 + tmp9
    tmp11 = tmp8 < 0
    tmp12 = tl.where(tmp11, tmp10, tmp8)
    tl.device_assert(((0 <= tmp12) & (tmp12 < 8192)) | ~(xmask), "index out of bounds: 0 <= tmp12 < 8192")
    tmp14 = tl.load(in_ptr5 + (r0_1 + 128*tmp12), xmask, other=0.0).to(tl.float32)
    tmp16 = tmp14 + tmp15
    tmp18 = tmp16 + tmp17
    tmp19 = tmp18.to(tl.float32)
    tmp20 = tmp7 * tmp19
    tmp21 = tl.broadcast_to(tmp20, [XBLOCK, R0_BLOCK])
    tmp23 = tl.where(xmask, tmp21, 0)
    tmp24 = tl.sum(tmp23, 1)[:, None].to(tl.float32)
    tmp26 = tl.full([1, 1], 128.0, tl.float32)
    tmp27 = (tmp25 / tmp26)
    tmp28 = tl.full([1, 1], 1e-06, tl.float32)
    tmp29 = tmp27 + tmp28
    tmp30 = libdevice.rsqrt(tmp29)
    tmp31 = tmp7 * tmp30
    tmp32 = tl.full([1, 1], -0.5, tl.float32)
    tmp33 = tmp24 * tmp32
    tmp34 = tmp30 * tmp30
    tmp35 = tmp34 * tmp30
    tmp36 = tmp33 * tmp35
    tmp37 = tl.full([1, 1], 0.0078125, tl.float32)
    tmp38 = tmp36 * tmp37
    tmp39 = tl.full([1, 1], 2.0, tl.float32)
    tmp40 = tmp19 * tmp39
    tmp41 = tmp38 * tmp40
    tmp42 = tmp31 + tmp41
    tmp44 = tmp42.to(tl.float32)
    tmp45 = tmp43 + tmp44
    tl.store(out_ptr2 + (r0_1 + 128*x0), tmp45, xmask)
''', device_str='cuda')


# kernel path: /tmp/ind/l2/cl2emv427y7psetowyvgvwesrq4erhbcccekelz74eb4p6zpdsks.py
# Topologically Sorted Source Nodes: [embedding, _unsafe_view_6, add_7, _to_copy_8, pow_2, mean_1, add_8, rsqrt_1, view_73, view_75, add_30, mul_57, _to_copy_28, mul_60, mul_59, sum_11, mul_61, pow_12, mul_62, expand_20, div_3, pow_13, mul_63, mul_64, add_31, _to_copy_29, add_32], Original ATen: [aten.embedding, aten._unsafe_view, aten.add, aten._to_copy, aten.pow, aten.mean, aten.rsqrt, aten.view, aten.mul, aten.sum, aten.expand, aten.div]
# Source node to ATen node mapping:
#   _to_copy_28 => convert_element_type_129
#   _to_copy_29 => convert_element_type_130
#   _to_copy_8 => convert_element_type_20
#   _unsafe_view_6 => view_23
#   add_30 => add_36
#   add_31 => add_37
#   add_32 => add_38
#   add_7 => add_7
#   add_8 => add_8
#   div_3 => div_9
#   embedding => embedding
#   expand_20 => expand_21
#   mean_1 => mean_1
#   mul_57 => mul_68
#   mul_59 => mul_70
#   mul_60 => mul_71
#   mul_61 => mul_72
#   mul_62 => mul_73
#   mul_63 => mul_74
#   mul_64 => mul_75
#   pow_12 => pow_12
#   pow_13 => pow_13
#   pow_2 => pow_2
#   rsqrt_1 => rsqrt_1
#   sum_11 => sum_18
#   view_73 => view_95
#   view_75 => view_97
# Graph fragment:
#   %mm_34 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_34]
#   %mm_36 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_36]
#   %arg11_1 : Tensor "bf16[128][1]cuda:0" = PlaceHolder[target=arg11_1]
#   %arg1_1 : Tensor "i64[1, 64][64, 1]cuda:0" = PlaceHolder[target=arg1_1]
#   %arg2_1 : Tensor "bf16[8192, 128][128, 1]cuda:0" = PlaceHolder[target=arg2_1]
#   %mm_3 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_3]
#   %buf17 : Tensor "f32[1, 64, 1][64, 1, 64]cuda:0" = PlaceHolder[target=buf17]
#   %sum_18 : Tensor "f32[1, 64, 1][64, 1, 64]cuda:0" = PlaceHolder[target=sum_18]
#   %add_33 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0" = PlaceHolder[target=add_33]
#   %convert_element_type_130 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0" = PlaceHolder[target=convert_element_type_130]
#   %embedding : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.embedding.default](args = (%arg2_1, %arg1_1), kwargs = {})
#   %view_23 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_3, [1, 64, 128]), kwargs = {})
#   %add_7 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%embedding, %view_23), kwargs = {})
#   %convert_element_type_20 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_7, torch.float32), kwargs = {})
#   %pow_2 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%convert_element_type_20, 2), kwargs = {})
#   %mean_1 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mean.dim](args = (%pow_2, [-1], True), kwargs = {})
#   %add_8 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mean_1, 1e-06), kwargs = {})
#   %rsqrt_1 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_8,), kwargs = {})
#   %view_95 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_34, [1, 64, 128]), kwargs = {})
#   %view_97 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_36, [1, 64, 128]), kwargs = {})
#   %add_36 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%view_95, %view_97), kwargs = {})
#   %mul_68 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%add_36, %arg11_1), kwargs = {})
#   %convert_element_type_129 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_68, torch.float32), kwargs = {})
#   %mul_71 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_129, %rsqrt_1), kwargs = {})
#   %mul_70 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_129, %convert_element_type_20), kwargs = {})
#   %sum_18 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%mul_70, [2], True), kwargs = {})
#   %mul_72 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Scalar](args = (%sum_18, -0.5), kwargs = {})
#   %pow_12 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%rsqrt_1, 3), kwargs = {})
#   %mul_73 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_72, %pow_12), kwargs = {})
#   %expand_21 : Tensor "f32[1, 64, 128][64, 1, 0]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.expand.default](args = (%mul_73, [1, 64, 128]), kwargs = {})
#   %div_9 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.div.Scalar](args = (%expand_21, 128), kwargs = {})
#   %pow_13 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%convert_element_type_20, 1.0), kwargs = {})
#   %mul_74 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Scalar](args = (%pow_13, 2.0), kwargs = {})
#   %mul_75 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%div_9, %mul_74), kwargs = {})
#   %add_37 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_71, %mul_75), kwargs = {})
#   %convert_element_type_130 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_37, torch.bfloat16), kwargs = {})
#   %add_38 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_33, %convert_element_type_130), kwargs = {})
#   return %sum_18,%convert_element_type_130,%add_38
triton_per_fused__to_copy__unsafe_view_add_div_embedding_expand_mean_mul_pow_rsqrt_sum_view_23 = async_compile.triton('triton_per_fused__to_copy__unsafe_view_add_div_embedding_expand_mean_mul_pow_rsqrt_sum_view_23', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 64, 'r0_': 128},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*bf16', 'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', 'in_ptr3': '*i64', 'in_ptr4': '*bf16', 'in_ptr5': '*bf16', 'in_ptr6': '*fp32', 'in_ptr7': '*bf16', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]], (7,): [['tt.divisibility', 16]], (8,): [['tt.divisibility', 16]], (9,): [['tt.divisibility', 16]], (10,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused__to_copy__unsafe_view_add_div_embedding_expand_mean_mul_pow_rsqrt_sum_view_23', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 7, 'num_store': 1, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 768, 'r0_': 98560}}
)
@triton.jit
def triton_per_fused__to_copy__unsafe_view_add_div_embedding_expand_mean_mul_pow_rsqrt_sum_view_23(in_out_ptr0, in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, in_ptr6, in_ptr7, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 64
    r0_numel = 128
    R0_BLOCK: tl.constexpr = 128
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp3 = tl.load(in_ptr2 + (r0_1), None, eviction_policy='evict_last').to(tl.float32)
    tmp6 = tl.load(in_ptr3 + (x0), xmask, eviction_policy='evict_last')
    tmp13 = tl.load(in_ptr5 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp21 = tl.load(in_ptr6 + (x0), xmask, eviction_policy='evict_last')
    tmp40 = tl.load(in_ptr7 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp2 = tmp0 + tmp1
    tmp4 = tmp2 * tmp3
    tmp5 = tmp4.to(tl.float32)
    tmp7 = tl.full([1, 1], 8192, tl.int32)
    tmp8 = tmp6 + tmp7
    tmp9 = tmp6 < 0
    tmp10 = tl.where(tmp9, tmp8, tmp6)
    tl.device_assert(((0 <= tmp10) & (tmp10 < 8192)) | ~(xmask), "index out of bounds: 0 <= tmp10 < 8192")
    tmp12 = tl.load(in_ptr4 + (r0_1 + 128*tmp10), xmask, other=0.0).to(tl.float32)
    tmp14 = tmp12 + tmp13
    tmp15 = tmp14.to(tl.float32)
    tmp16 = tmp5 * tmp15
    tmp17 = tl.broadcast_to(tmp16, [XBLOCK, R0_BLOCK])
    tmp19 = tl.where(xmask, tmp17, 0)
    tmp20 = tl.sum(tmp19, 1)[:, None].to(tl.float32)
    tmp22 = tl.full([1, 1], 128.0, tl.float32)
    tmp23 = (tmp21 / tmp22)
    tmp24 = tl.full([1, 1], 1e-06, tl.float32)
    tmp25 = tmp23 + tmp24
    tmp26 = libdevice.rsqrt(tmp25)
    tmp27 = tmp5 * tmp26
    tmp28 = tl.full([1, 1], -0.5, tl.float32)
    tmp29 = tmp20 * tmp28
    tmp30 = tmp26 * tmp26
    tmp31 = tmp30 * tmp26
    tmp32 = tmp29 * tmp31
    tmp33 = tl.full([1, 1], 0.0078125, tl.float32)
    tmp34 = tmp32 * tmp33
    tmp35 = tl.full([1, 1], 2.0, tl.float32)
    tmp36 = tmp15 * tmp35
    tmp37 = tmp34 * tmp36
    tmp38 = tmp27 + tmp37
    tmp39 = tmp38.to(tl.float32)
    tmp41 = tmp40 + tmp39
    tl.store(in_out_ptr0 + (r0_1 + 128*x0), tmp41, xmask)
''', device_str='cuda')


# kernel path: /tmp/ind/lf/clfzzoq22ubcx6bxf3zde4hyk42s5basp5ncbpeuwp4nqdtzgwr6.py
# Topologically Sorted Source Nodes: [embedding_dense_backward], Original ATen: [aten.embedding_dense_backward]
# Source node to ATen node mapping:
#   embedding_dense_backward => full_default_16
# Graph fragment:
#   %full_default_16 : Tensor "f32[8192, 128][128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([8192, 128], 0), kwargs = {dtype: torch.float32, layout: torch.strided, device: cuda:0, pin_memory: False})
#   return %index_put
triton_poi_fused_embedding_dense_backward_24 = async_compile.triton('triton_poi_fused_embedding_dense_backward_24', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 1048576}, 
    filename=__file__,
    triton_meta={'signature': {'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_embedding_dense_backward_24', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 0, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 8388608}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_embedding_dense_backward_24(out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 1048576
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)[:]
    x0 = xindex
    tmp0 = tl.full([1], 0.0, tl.float32)
    tl.store(out_ptr0 + (x0), tmp0, None)
''', device_str='cuda')


# kernel path: /tmp/ind/6b/c6bz3ve2mhftw5rc37224w4u3xx3ls26r7cj2un7jdtmup5llvhg.py
# Topologically Sorted Source Nodes: [embedding, _to_copy_4, pow_1, mean, add_3, rsqrt, embedding_dense_backward, view_90, view_93, add_37, view_95, add_38, mul_70, _to_copy_32, mul_73, mul_72, sum_15, mul_74, pow_14, mul_75, expand_21, div_4, pow_15, mul_76, mul_77, add_39, _to_copy_33, add_40], Original ATen: [aten.embedding, aten._to_copy, aten.pow, aten.mean, aten.add, aten.rsqrt, aten.embedding_dense_backward, aten.view, aten.mul, aten.sum, aten.expand, aten.div]
# Source node to ATen node mapping:
#   _to_copy_32 => convert_element_type_157
#   _to_copy_33 => convert_element_type_158
#   _to_copy_4 => convert_element_type_4
#   add_3 => add_3
#   add_37 => add_43
#   add_38 => add_44
#   add_39 => add_45
#   add_40 => add_46
#   div_4 => div_10
#   embedding => embedding
#   embedding_dense_backward => convert_element_type_159, eq, full_default_15, full_default_16, index_put, unsqueeze_21, where_5
#   expand_21 => expand_22
#   mean => mean
#   mul_70 => mul_82
#   mul_72 => mul_84
#   mul_73 => mul_85
#   mul_74 => mul_86
#   mul_75 => mul_87
#   mul_76 => mul_88
#   mul_77 => mul_89
#   pow_1 => pow_1
#   pow_14 => pow_14
#   pow_15 => pow_15
#   rsqrt => rsqrt
#   sum_15 => sum_23
#   view_90 => view_112
#   view_93 => view_115
#   view_95 => view_118
# Graph fragment:
#   %mm_40 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_40]
#   %mm_42 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_42]
#   %mm_44 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_44]
#   %arg10_1 : Tensor "bf16[128][1]cuda:0" = PlaceHolder[target=arg10_1]
#   %arg1_1 : Tensor "i64[1, 64][64, 1]cuda:0" = PlaceHolder[target=arg1_1]
#   %arg2_1 : Tensor "bf16[8192, 128][128, 1]cuda:0" = PlaceHolder[target=arg2_1]
#   %buf0 : Tensor "f32[1, 64, 1][64, 1, 64]cuda:0" = PlaceHolder[target=buf0]
#   %sum_23 : Tensor "f32[1, 64, 1][64, 1, 64]cuda:0" = PlaceHolder[target=sum_23]
#   %add_38 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0" = PlaceHolder[target=add_38]
#   %convert_element_type_158 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0" = PlaceHolder[target=convert_element_type_158]
#   %index_put : Tensor "f32[8192, 128][128, 1]cuda:0" = PlaceHolder[target=index_put]
#   %embedding : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.embedding.default](args = (%arg2_1, %arg1_1), kwargs = {})
#   %convert_element_type_4 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%embedding, torch.float32), kwargs = {})
#   %pow_1 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%convert_element_type_4, 2), kwargs = {})
#   %mean : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mean.dim](args = (%pow_1, [-1], True), kwargs = {})
#   %add_3 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mean, 1e-06), kwargs = {})
#   %rsqrt : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_3,), kwargs = {})
#   %full_default_16 : Tensor "f32[8192, 128][128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([8192, 128], 0), kwargs = {dtype: torch.float32, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %eq : Tensor "b8[1, 64][64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.eq.Scalar](args = (%arg1_1, -1), kwargs = {})
#   %unsqueeze_21 : Tensor "b8[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%eq, -1), kwargs = {})
#   %full_default_15 : Tensor "f32[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], 0.0), kwargs = {dtype: torch.float32, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %view_112 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_40, [1, 64, 128]), kwargs = {})
#   %view_115 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_42, [1, 64, 128]), kwargs = {})
#   %add_43 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%view_112, %view_115), kwargs = {})
#   %view_118 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_44, [1, 64, 128]), kwargs = {})
#   %add_44 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_43, %view_118), kwargs = {})
#   %mul_82 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%add_44, %arg10_1), kwargs = {})
#   %convert_element_type_157 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_82, torch.float32), kwargs = {})
#   %mul_85 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_157, %rsqrt), kwargs = {})
#   %mul_84 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_157, %convert_element_type_4), kwargs = {})
#   %sum_23 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%mul_84, [2], True), kwargs = {})
#   %mul_86 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Scalar](args = (%sum_23, -0.5), kwargs = {})
#   %pow_14 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%rsqrt, 3), kwargs = {})
#   %mul_87 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_86, %pow_14), kwargs = {})
#   %expand_22 : Tensor "f32[1, 64, 128][64, 1, 0]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.expand.default](args = (%mul_87, [1, 64, 128]), kwargs = {})
#   %div_10 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.div.Scalar](args = (%expand_22, 128), kwargs = {})
#   %pow_15 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%convert_element_type_4, 1.0), kwargs = {})
#   %mul_88 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Scalar](args = (%pow_15, 2.0), kwargs = {})
#   %mul_89 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%div_10, %mul_88), kwargs = {})
#   %add_45 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_85, %mul_89), kwargs = {})
#   %convert_element_type_158 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_45, torch.bfloat16), kwargs = {})
#   %add_46 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_38, %convert_element_type_158), kwargs = {})
#   %convert_element_type_159 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_46, torch.float32), kwargs = {})
#   %where_5 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.where.self](args = (%unsqueeze_21, %full_default_15, %convert_element_type_159), kwargs = {})
#   %index_put : Tensor "f32[8192, 128][128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.index_put_.default](args = (%full_default_16, [%arg1_1], %where_5, True), kwargs = {})
#   return %sum_23,%convert_element_type_158,%buf109
triton_per_fused__to_copy_add_div_embedding_embedding_dense_backward_expand_mean_mul_pow_rsqrt_sum_view_25 = async_compile.triton('triton_per_fused__to_copy_add_div_embedding_embedding_dense_backward_expand_mean_mul_pow_rsqrt_sum_view_25', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 64, 'r0_': 128},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', 'in_ptr3': '*bf16', 'in_ptr4': '*i64', 'in_ptr5': '*bf16', 'in_ptr6': '*fp32', 'in_ptr7': '*bf16', 'out_ptr2': '*fp32', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]], (7,): [['tt.divisibility', 16]], (8,): [['tt.divisibility', 16]], (9,): [['tt.divisibility', 16]], (10,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused__to_copy_add_div_embedding_embedding_dense_backward_expand_mean_mul_pow_rsqrt_sum_view_25', 'mutated_arg_names': ['out_ptr2'], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': True, 'num_load': 7, 'num_store': 1, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 768, 'r0_': 65792}}
)
@triton.jit
def triton_per_fused__to_copy_add_div_embedding_embedding_dense_backward_expand_mean_mul_pow_rsqrt_sum_view_25(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, in_ptr6, in_ptr7, out_ptr2, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 64
    r0_numel = 128
    R0_BLOCK: tl.constexpr = 128
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp3 = tl.load(in_ptr2 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp5 = tl.load(in_ptr3 + (r0_1), None, eviction_policy='evict_last').to(tl.float32)
    tmp8 = tl.load(in_ptr4 + (x0), xmask, eviction_policy='evict_last')
    tmp21 = tl.load(in_ptr6 + (x0), xmask, eviction_policy='evict_last')
    tmp42 = tl.load(in_ptr7 + (r0_1 + 128*x0), xmask, other=0.0).to(tl.float32)
    tmp2 = tmp0 + tmp1
    tmp4 = tmp2 + tmp3
    tmp6 = tmp4 * tmp5
    tmp7 = tmp6.to(tl.float32)
    tmp9 = tl.full([1, 1], 8192, tl.int32)
    tmp10 = tmp8 + tmp9
    tmp11 = tmp8 < 0
    tmp12 = tl.where(tmp11, tmp10, tmp8)
    tl.device_assert(((0 <= tmp12) & (tmp12 < 8192)) | ~(xmask), "index out of bounds: 0 <= tmp12 < 8192")
    tmp14 = tl.load(in_ptr5 + (r0_1 + 128*tmp12), xmask, other=0.0).to(tl.float32)
    tmp15 = tmp14.to(tl.float32)
    tmp16 = tmp7 * tmp15
    tmp17 = tl.broadcast_to(tmp16, [XBLOCK, R0_BLOCK])
    tmp19 = tl.where(xmask, tmp17, 0)
    tmp20 = tl.sum(tmp19, 1)[:, None].to(tl.float32)
    tmp22 = tl.full([1, 1], 128.0, tl.float32)
    tmp23 = (tmp21 / tmp22)
    tmp24 = tl.full([1, 1], 1e-06, tl.float32)
    tmp25 = tmp23 + tmp24
    tmp26 = libdevice.rsqrt(tmp25)
    tmp27 = tmp7 * tmp26
    tmp28 = tl.full([1, 1], -0.5, tl.float32)
    tmp29 = tmp20 * tmp28
    tmp30 = tmp26 * tmp26
    tmp31 = tmp30 * tmp26
    tmp32 = tmp29 * tmp31
    tmp33 = tl.full([1, 1], 0.0078125, tl.float32)
    tmp34 = tmp32 * tmp33
    tmp35 = tl.full([1, 1], 2.0, tl.float32)
    tmp36 = tmp15 * tmp35
    tmp37 = tmp34 * tmp36
    tmp38 = tmp27 + tmp37
    tmp39 = tmp38.to(tl.float32)
    tmp40 = tl.full([1, 1], -1, tl.int64)
    tmp41 = tmp8 == tmp40
    tmp43 = tmp42 + tmp39
    tmp44 = tmp43.to(tl.float32)
    tmp45 = tl.full([1, 1], 0.0, tl.float32)
    tmp46 = tl.where(tmp41, tmp45, tmp44)
    tl.atomic_add(out_ptr2 + (tl.broadcast_to(r0_1 + 128*tmp12, [XBLOCK, R0_BLOCK])), tmp46, xmask, sem='relaxed')
''', device_str='cuda')


# kernel path: /tmp/ind/jg/cjghg2qxle7csbfz6p3zzrrf7wknkkrgz6473zuhiw7k7ssbg2s2.py
# Topologically Sorted Source Nodes: [embedding_dense_backward], Original ATen: [aten.embedding_dense_backward]
# Source node to ATen node mapping:
#   embedding_dense_backward => convert_element_type_160
# Graph fragment:
#   %buf109 : Tensor "f32[8192, 128][128, 1]cuda:0" = PlaceHolder[target=buf109]
#   %convert_element_type_160 : Tensor "bf16[8192, 128][128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%index_put, torch.bfloat16), kwargs = {})
#   return %convert_element_type_160
triton_poi_fused_embedding_dense_backward_26 = async_compile.triton('triton_poi_fused_embedding_dense_backward_26', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 1048576}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*bf16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_embedding_dense_backward_26', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 1, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 4194304}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_embedding_dense_backward_26(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 1048576
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)[:]
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), None)
    tmp1 = tmp0.to(tl.float32)
    tl.store(out_ptr0 + (x0), tmp1, None)
''', device_str='cuda')


# kernel path: /tmp/ind/fd/cfdes747io5ynllsiapqocobcvngp7yvgfjxc5zwc5odwjadh35m.py
# Topologically Sorted Source Nodes: [embedding, _to_copy_4, pow_1, mean, add_3, rsqrt, mul_2, _to_copy_5, _unsafe_view_6, add_7, _to_copy_8, pow_2, mean_1, add_8, rsqrt_1, mul_9, _to_copy_9, view_73, view_75, add_30, view_90, view_93, add_37, view_95, add_38, mul_71, sum_14, mul_58, sum_10], Original ATen: [aten.embedding, aten._to_copy, aten.pow, aten.mean, aten.add, aten.rsqrt, aten.mul, aten._unsafe_view, aten.view, aten.sum]
# Source node to ATen node mapping:
#   _to_copy_4 => convert_element_type_4
#   _to_copy_5 => convert_element_type_5
#   _to_copy_8 => convert_element_type_20
#   _to_copy_9 => convert_element_type_21
#   _unsafe_view_6 => view_23
#   add_3 => add_3
#   add_30 => add_36
#   add_37 => add_43
#   add_38 => add_44
#   add_7 => add_7
#   add_8 => add_8
#   embedding => embedding
#   mean => mean
#   mean_1 => mean_1
#   mul_2 => mul_2
#   mul_58 => mul_69
#   mul_71 => mul_83
#   mul_9 => mul_9
#   pow_1 => pow_1
#   pow_2 => pow_2
#   rsqrt => rsqrt
#   rsqrt_1 => rsqrt_1
#   sum_10 => sum_17
#   sum_14 => sum_22
#   view_73 => view_95
#   view_75 => view_97
#   view_90 => view_112
#   view_93 => view_115
#   view_95 => view_118
# Graph fragment:
#   %mm_40 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_40]
#   %mm_42 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_42]
#   %mm_44 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_44]
#   %arg1_1 : Tensor "i64[1, 64][64, 1]cuda:0" = PlaceHolder[target=arg1_1]
#   %arg2_1 : Tensor "bf16[8192, 128][128, 1]cuda:0" = PlaceHolder[target=arg2_1]
#   %buf0 : Tensor "f32[1, 64, 1][64, 1, 64]cuda:0" = PlaceHolder[target=buf0]
#   %mm_34 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_34]
#   %mm_36 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_36]
#   %mm_3 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_3]
#   %buf17 : Tensor "f32[1, 64, 1][64, 1, 64]cuda:0" = PlaceHolder[target=buf17]
#   %embedding : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.embedding.default](args = (%arg2_1, %arg1_1), kwargs = {})
#   %convert_element_type_4 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%embedding, torch.float32), kwargs = {})
#   %pow_1 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%convert_element_type_4, 2), kwargs = {})
#   %mean : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mean.dim](args = (%pow_1, [-1], True), kwargs = {})
#   %add_3 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mean, 1e-06), kwargs = {})
#   %rsqrt : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_3,), kwargs = {})
#   %mul_2 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_4, %rsqrt), kwargs = {})
#   %convert_element_type_5 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_2, torch.bfloat16), kwargs = {})
#   %view_23 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_3, [1, 64, 128]), kwargs = {})
#   %add_7 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%embedding, %view_23), kwargs = {})
#   %convert_element_type_20 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_7, torch.float32), kwargs = {})
#   %pow_2 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%convert_element_type_20, 2), kwargs = {})
#   %mean_1 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mean.dim](args = (%pow_2, [-1], True), kwargs = {})
#   %add_8 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mean_1, 1e-06), kwargs = {})
#   %rsqrt_1 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_8,), kwargs = {})
#   %mul_9 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_20, %rsqrt_1), kwargs = {})
#   %convert_element_type_21 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_9, torch.bfloat16), kwargs = {})
#   %view_95 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_34, [1, 64, 128]), kwargs = {})
#   %view_97 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_36, [1, 64, 128]), kwargs = {})
#   %add_36 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%view_95, %view_97), kwargs = {})
#   %view_112 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_40, [1, 64, 128]), kwargs = {})
#   %view_115 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_42, [1, 64, 128]), kwargs = {})
#   %add_43 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%view_112, %view_115), kwargs = {})
#   %view_118 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_44, [1, 64, 128]), kwargs = {})
#   %add_44 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_43, %view_118), kwargs = {})
#   %mul_83 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%add_44, %convert_element_type_5), kwargs = {})
#   %sum_22 : Tensor "bf16[1, 1, 128][128, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%mul_83, [0, 1], True), kwargs = {})
#   %mul_69 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%add_36, %convert_element_type_21), kwargs = {})
#   %sum_17 : Tensor "bf16[1, 1, 128][128, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%mul_69, [0, 1], True), kwargs = {})
#   return %sum_22,%sum_17
triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_sum_view_27 = async_compile.triton('triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_sum_view_27', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 128, 'r0_': 64},
    reduction_hint=ReductionHint.OUTER,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', 'in_ptr3': '*i64', 'in_ptr4': '*bf16', 'in_ptr5': '*fp32', 'in_ptr6': '*bf16', 'in_ptr7': '*bf16', 'in_ptr8': '*bf16', 'in_ptr9': '*fp32', 'out_ptr0': '*bf16', 'out_ptr1': '*bf16', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]], (7,): [['tt.divisibility', 16]], (8,): [['tt.divisibility', 16]], (9,): [['tt.divisibility', 16]], (10,): [['tt.divisibility', 16]], (11,): [['tt.divisibility', 16]], (12,): [['tt.divisibility', 16]], (13,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_sum_view_27', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 9, 'num_store': 2, 'num_reduction': 2, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 99328, 'r0_': 1024}}
)
@triton.jit
def triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_sum_view_27(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, in_ptr6, in_ptr7, in_ptr8, in_ptr9, out_ptr0, out_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 128
    r0_numel = 64
    R0_BLOCK: tl.constexpr = 64
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0 + 128*r0_1), xmask, other=0.0).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (x0 + 128*r0_1), xmask, other=0.0).to(tl.float32)
    tmp3 = tl.load(in_ptr2 + (x0 + 128*r0_1), xmask, other=0.0).to(tl.float32)
    tmp5 = tl.load(in_ptr3 + (r0_1), None, eviction_policy='evict_last')
    tmp13 = tl.load(in_ptr5 + (r0_1), None, eviction_policy='evict_last')
    tmp26 = tl.load(in_ptr6 + (x0 + 128*r0_1), xmask, other=0.0).to(tl.float32)
    tmp27 = tl.load(in_ptr7 + (x0 + 128*r0_1), xmask, other=0.0).to(tl.float32)
    tmp29 = tl.load(in_ptr8 + (x0 + 128*r0_1), xmask, other=0.0).to(tl.float32)
    tmp32 = tl.load(in_ptr9 + (r0_1), None, eviction_policy='evict_last')
    tmp2 = tmp0 + tmp1
    tmp4 = tmp2 + tmp3
    tmp6 = tl.full([1, 1], 8192, tl.int32)
    tmp7 = tmp5 + tmp6
    tmp8 = tmp5 < 0
    tmp9 = tl.where(tmp8, tmp7, tmp5)
    tl.device_assert((0 <= tmp9) & (tmp9 < 8192), "index out of bounds: 0 <= tmp9 < 8192")
    tmp11 = tl.load(in_ptr4 + (x0 + 128*tmp9), xmask).to(tl.float32)
    tmp12 = tmp11.to(tl.float32)
    tmp14 = tl.full([1, 1], 128.0, tl.float32)
    tmp15 = (tmp13 / tmp14)
    tmp16 = tl.full([1, 1], 1e-06, tl.float32)
    tmp17 = tmp15 + tmp16
    tmp18 = libdevice.rsqrt(tmp17)
    tmp19 = tmp12 * tmp18
    tmp20 = tmp19.to(tl.float32)
    tmp21 = tmp4 * tmp20
    tmp22 = tl.broadcast_to(tmp21, [XBLOCK, R0_BLOCK])
    tmp24 = tl.where(xmask, tmp22, 0)
    tmp25 = tl.sum(tmp24, 1)[:, None].to(tl.float32)
    tmp28 = tmp26 + tmp27
    tmp30 = tmp11 + tmp29
    tmp31 = tmp30.to(tl.float32)
    tmp33 = (tmp32 / tmp14)
    tmp34 = tmp33 + tmp16
    tmp35 = libdevice.rsqrt(tmp34)
    tmp36 = tmp31 * tmp35
    tmp37 = tmp36.to(tl.float32)
    tmp38 = tmp28 * tmp37
    tmp39 = tl.broadcast_to(tmp38, [XBLOCK, R0_BLOCK])
    tmp41 = tl.where(xmask, tmp39, 0)
    tmp42 = tl.sum(tmp41, 1)[:, None].to(tl.float32)
    tl.store(out_ptr0 + (x0), tmp25, xmask)
    tl.store(out_ptr1 + (x0), tmp42, xmask)
''', device_str='cuda')


# kernel path: /tmp/ind/ve/cveyz3mhtfedxovg5drkyxinbng6e2fj6jmkiendkd766osez6su.py
# Topologically Sorted Source Nodes: [view_63, view_66, add_26, view_68, add_27, mul_48, sum_8], Original ATen: [aten.view, aten.add, aten.mul, aten.sum]
# Source node to ATen node mapping:
#   add_26 => add_30
#   add_27 => add_31
#   mul_48 => mul_55
#   sum_8 => sum_15
#   view_63 => view_84
#   view_66 => view_87
#   view_68 => view_90
# Graph fragment:
#   %mm_26 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_26]
#   %mm_28 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_28]
#   %mm_30 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_30]
#   %convert_element_type_31 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0" = PlaceHolder[target=convert_element_type_31]
#   %view_84 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_26, [1, 64, 128]), kwargs = {})
#   %view_87 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_28, [1, 64, 128]), kwargs = {})
#   %add_30 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%view_84, %view_87), kwargs = {})
#   %view_90 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_30, [1, 64, 128]), kwargs = {})
#   %add_31 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_30, %view_90), kwargs = {})
#   %mul_55 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%add_31, %convert_element_type_31), kwargs = {})
#   %sum_15 : Tensor "bf16[1, 1, 128][128, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%mul_55, [0, 1], True), kwargs = {})
#   return %sum_15
triton_per_fused_add_mul_sum_view_28 = async_compile.triton('triton_per_fused_add_mul_sum_view_28', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 128, 'r0_': 64},
    reduction_hint=ReductionHint.OUTER,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', 'in_ptr3': '*bf16', 'out_ptr0': '*bf16', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused_add_mul_sum_view_28', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 4, 'num_store': 1, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 66048, 'r0_': 0}}
)
@triton.jit
def triton_per_fused_add_mul_sum_view_28(in_ptr0, in_ptr1, in_ptr2, in_ptr3, out_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 128
    r0_numel = 64
    R0_BLOCK: tl.constexpr = 64
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0 + 128*r0_1), xmask, other=0.0).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (x0 + 128*r0_1), xmask, other=0.0).to(tl.float32)
    tmp3 = tl.load(in_ptr2 + (x0 + 128*r0_1), xmask, other=0.0).to(tl.float32)
    tmp5 = tl.load(in_ptr3 + (x0 + 128*r0_1), xmask, other=0.0).to(tl.float32)
    tmp2 = tmp0 + tmp1
    tmp4 = tmp2 + tmp3
    tmp6 = tmp4 * tmp5
    tmp7 = tl.broadcast_to(tmp6, [XBLOCK, R0_BLOCK])
    tmp9 = tl.where(xmask, tmp7, 0)
    tmp10 = tl.sum(tmp9, 1)[:, None].to(tl.float32)
    tl.store(out_ptr0 + (x0), tmp10, xmask)
''', device_str='cuda')


# kernel path: /tmp/ind/w6/cw6rqwqqfzqrhsssjq4wgf2a2y7keznfdz6pzkbg6fjnrx3mchya.py
# Topologically Sorted Source Nodes: [_to_copy_14, pow_4, mean_3, add_15, rsqrt_3, mul_19, _to_copy_15, _unsafe_view_18, add_16, _to_copy_16, pow_5, mean_4, add_17, rsqrt_4, mul_22, _to_copy_17, view_41, view_46, view_48, add_19, mul_35, sum_4, mul_25, sum_2], Original ATen: [aten._to_copy, aten.pow, aten.mean, aten.add, aten.rsqrt, aten.mul, aten._unsafe_view, aten.view, aten.sum]
# Source node to ATen node mapping:
#   _to_copy_14 => convert_element_type_46
#   _to_copy_15 => convert_element_type_47
#   _to_copy_16 => convert_element_type_56
#   _to_copy_17 => convert_element_type_57
#   _unsafe_view_18 => view_55
#   add_15 => add_16
#   add_16 => add_18
#   add_17 => add_19
#   add_19 => add_23
#   mean_3 => mean_3
#   mean_4 => mean_4
#   mul_19 => mul_19
#   mul_22 => mul_22
#   mul_25 => mul_27
#   mul_35 => mul_41
#   pow_4 => pow_4
#   pow_5 => pow_5
#   rsqrt_3 => rsqrt_3
#   rsqrt_4 => rsqrt_4
#   sum_2 => sum_8
#   sum_4 => sum_10
#   view_41 => view_62
#   view_46 => view_67
#   view_48 => view_69
# Graph fragment:
#   %mm_20 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_20]
#   %mm_22 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_22]
#   %add_15 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0" = PlaceHolder[target=add_15]
#   %buf39 : Tensor "f32[1, 64, 1][64, 1, 64]cuda:0" = PlaceHolder[target=buf39]
#   %mm_16 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_16]
#   %mm_13 : Tensor "bf16[64, 128][128, 1]cuda:0" = PlaceHolder[target=mm_13]
#   %buf45 : Tensor "f32[1, 64, 1][64, 1, 64]cuda:0" = PlaceHolder[target=buf45]
#   %convert_element_type_46 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_15, torch.float32), kwargs = {})
#   %pow_4 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%convert_element_type_46, 2), kwargs = {})
#   %mean_3 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mean.dim](args = (%pow_4, [-1], True), kwargs = {})
#   %add_16 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mean_3, 1e-06), kwargs = {})
#   %rsqrt_3 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_16,), kwargs = {})
#   %mul_19 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_46, %rsqrt_3), kwargs = {})
#   %convert_element_type_47 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_19, torch.bfloat16), kwargs = {})
#   %view_55 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_13, [1, 64, 128]), kwargs = {})
#   %add_18 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_15, %view_55), kwargs = {})
#   %convert_element_type_56 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_18, torch.float32), kwargs = {})
#   %pow_5 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%convert_element_type_56, 2), kwargs = {})
#   %mean_4 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mean.dim](args = (%pow_5, [-1], True), kwargs = {})
#   %add_19 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mean_4, 1e-06), kwargs = {})
#   %rsqrt_4 : Tensor "f32[1, 64, 1][64, 1, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_19,), kwargs = {})
#   %mul_22 : Tensor "f32[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_56, %rsqrt_4), kwargs = {})
#   %convert_element_type_57 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_22, torch.bfloat16), kwargs = {})
#   %view_62 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_16, [1, 64, 128]), kwargs = {})
#   %view_67 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_20, [1, 64, 128]), kwargs = {})
#   %view_69 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%mm_22, [1, 64, 128]), kwargs = {})
#   %add_23 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%view_67, %view_69), kwargs = {})
#   %mul_41 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%add_23, %convert_element_type_47), kwargs = {})
#   %sum_10 : Tensor "bf16[1, 1, 128][128, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%mul_41, [0, 1], True), kwargs = {})
#   %mul_27 : Tensor "bf16[1, 64, 128][8192, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%view_62, %convert_element_type_57), kwargs = {})
#   %sum_8 : Tensor "bf16[1, 1, 128][128, 128, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%mul_27, [0, 1], True), kwargs = {})
#   return %sum_10,%sum_8
triton_per_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_sum_view_29 = async_compile.triton('triton_per_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_sum_view_29', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 128, 'r0_': 64},
    reduction_hint=ReductionHint.OUTER,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', 'in_ptr3': '*fp32', 'in_ptr4': '*bf16', 'in_ptr5': '*bf16', 'in_ptr6': '*fp32', 'out_ptr0': '*bf16', 'out_ptr1': '*bf16', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]], (7,): [['tt.divisibility', 16]], (8,): [['tt.divisibility', 16]], (9,): [['tt.divisibility', 16]], (10,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_sum_view_29', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 7, 'num_store': 2, 'num_reduction': 2, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 82944, 'r0_': 512}}
)
@triton.jit
def triton_per_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_sum_view_29(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, in_ptr6, out_ptr0, out_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 128
    r0_numel = 64
    R0_BLOCK: tl.constexpr = 64
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0 + 128*r0_1), xmask, other=0.0).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (x0 + 128*r0_1), xmask, other=0.0).to(tl.float32)
    tmp3 = tl.load(in_ptr2 + (x0 + 128*r0_1), xmask, other=0.0).to(tl.float32)
    tmp5 = tl.load(in_ptr3 + (r0_1), None, eviction_policy='evict_last')
    tmp18 = tl.load(in_ptr4 + (x0 + 128*r0_1), xmask, other=0.0).to(tl.float32)
    tmp19 = tl.load(in_ptr5 + (x0 + 128*r0_1), xmask, other=0.0).to(tl.float32)
    tmp22 = tl.load(in_ptr6 + (r0_1), None, eviction_policy='evict_last')
    tmp2 = tmp0 + tmp1
    tmp4 = tmp3.to(tl.float32)
    tmp6 = tl.full([1, 1], 128.0, tl.float32)
    tmp7 = (tmp5 / tmp6)
    tmp8 = tl.full([1, 1], 1e-06, tl.float32)
    tmp9 = tmp7 + tmp8
    tmp10 = libdevice.rsqrt(tmp9)
    tmp11 = tmp4 * tmp10
    tmp12 = tmp11.to(tl.float32)
    tmp13 = tmp2 * tmp12
    tmp14 = tl.broadcast_to(tmp13, [XBLOCK, R0_BLOCK])
    tmp16 = tl.where(xmask, tmp14, 0)
    tmp17 = tl.sum(tmp16, 1)[:, None].to(tl.float32)
    tmp20 = tmp3 + tmp19
    tmp21 = tmp20.to(tl.float32)
    tmp23 = (tmp22 / tmp6)
    tmp24 = tmp23 + tmp8
    tmp25 = libdevice.rsqrt(tmp24)
    tmp26 = tmp21 * tmp25
    tmp27 = tmp26.to(tl.float32)
    tmp28 = tmp18 * tmp27
    tmp29 = tl.broadcast_to(tmp28, [XBLOCK, R0_BLOCK])
    tmp31 = tl.where(xmask, tmp29, 0)
    tmp32 = tl.sum(tmp31, 1)[:, None].to(tl.float32)
    tl.store(out_ptr0 + (x0), tmp17, xmask)
    tl.store(out_ptr1 + (x0), tmp32, xmask)
''', device_str='cuda')


async_compile.wait(globals())
del async_compile

class Runner:
    def __init__(self, partitions):
        self.partitions = partitions

    def recursively_apply_fns(self, fns):
        new_callables = []
        for fn, c in zip(fns, self.partitions):
            new_callables.append(fn(c))
        self.partitions = new_callables

    def call(self, args):
        arg0_1, arg1_1, arg2_1, arg3_1, arg4_1, arg5_1, arg6_1, arg7_1, arg8_1, arg9_1, arg10_1, arg11_1, arg12_1, arg13_1, arg14_1, arg15_1, arg16_1, arg17_1, arg18_1, arg19_1, arg20_1, arg21_1, arg22_1, arg23_1, arg24_1 = args
        args.clear()
        assert_size_stride(arg0_1, (), ())
        assert_size_stride(arg1_1, (1, 64), (64, 1))
        assert_size_stride(arg2_1, (8192, 128), (128, 1))
        assert_size_stride(arg3_1, (128, 128), (128, 1))
        assert_size_stride(arg4_1, (64, 128), (128, 1))
        assert_size_stride(arg5_1, (64, 128), (128, 1))
        assert_size_stride(arg6_1, (128, 128), (128, 1))
        assert_size_stride(arg7_1, (352, 128), (128, 1))
        assert_size_stride(arg8_1, (352, 128), (128, 1))
        assert_size_stride(arg9_1, (128, 352), (352, 1))
        assert_size_stride(arg10_1, (128, ), (1, ))
        assert_size_stride(arg11_1, (128, ), (1, ))
        assert_size_stride(arg12_1, (128, 128), (128, 1))
        assert_size_stride(arg13_1, (64, 128), (128, 1))
        assert_size_stride(arg14_1, (64, 128), (128, 1))
        assert_size_stride(arg15_1, (128, 128), (128, 1))
        assert_size_stride(arg16_1, (352, 128), (128, 1))
        assert_size_stride(arg17_1, (352, 128), (128, 1))
        assert_size_stride(arg18_1, (128, 352), (352, 1))
        assert_size_stride(arg19_1, (128, ), (1, ))
        assert_size_stride(arg20_1, (128, ), (1, ))
        assert_size_stride(arg21_1, (128, ), (1, ))
        assert_size_stride(arg22_1, (8192, 128), (128, 1))
        assert_size_stride(arg23_1, (32, ), (1, ))
        assert_size_stride(arg24_1, (32, ), (1, ))
        with torch.cuda._DeviceGuard(0):
            torch.cuda.set_device(0)
            buf0 = empty_strided_cuda((1, 64, 1), (64, 1, 64), torch.float32)
            buf1 = empty_strided_cuda((1, 64, 128), (8192, 128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [embedding, _to_copy_4, pow_1, mean, add_3, rsqrt, mul_2, _to_copy_5, mul_3], Original ATen: [aten.embedding, aten._to_copy, aten.pow, aten.mean, aten.add, aten.rsqrt, aten.mul]
            stream0 = get_raw_stream(0)
            triton_red_fused__to_copy_add_embedding_mean_mul_pow_rsqrt_0.run(arg1_1, arg2_1, arg10_1, buf0, buf1, 64, 128, stream=stream0)
            buf2 = empty_strided_cuda((64, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [embedding, _to_copy_4, pow_1, mean, add_3, rsqrt, mul_2, _to_copy_5, mul_3, view_2, t, mm], Original ATen: [aten.embedding, aten._to_copy, aten.pow, aten.mean, aten.add, aten.rsqrt, aten.mul, aten.view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf1, (64, 128), (128, 1), 0), reinterpret_tensor(arg3_1, (128, 128), (1, 128), 0), out=buf2)
            buf3 = empty_strided_cuda((1, 32, 1), (32, 1, 1), torch.float32)
            # Topologically Sorted Source Nodes: [unsqueeze_13, unsqueeze_14, expand_1, _to_copy], Original ATen: [aten.unsqueeze, aten.expand, aten._to_copy]
            stream0 = get_raw_stream(0)
            triton_poi_fused__to_copy_expand_unsqueeze_1.run(arg23_1, buf3, 32, stream=stream0)
            del arg23_1
            buf4 = empty_strided_cuda((1, 1, 64), (64, 64, 1), torch.float32)
            # Topologically Sorted Source Nodes: [arange, add, unsqueeze, unsqueeze_15, _to_copy_1], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten._to_copy]
            stream0 = get_raw_stream(0)
            triton_poi_fused__to_copy_add_arange_unsqueeze_2.run(buf4, 64, stream=stream0)
            buf5 = empty_strided_cuda((32, 64), (64, 1), torch.float32)
            # Topologically Sorted Source Nodes: [unsqueeze_13, unsqueeze_14, expand_1, _to_copy, bmm, arange, add, unsqueeze, unsqueeze_15, _to_copy_1], Original ATen: [aten.unsqueeze, aten.expand, aten._to_copy, aten.bmm, aten.arange, aten.add]
            extern_kernels.mm(reinterpret_tensor(buf3, (32, 1), (1, 0), 0), reinterpret_tensor(buf4, (1, 64), (0, 1), 0), out=buf5)
            del buf3
            buf6 = empty_strided_cuda((1, 2, 64, 64), (8192, 4096, 64, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_unsafe_view_1, view_3, transpose_1, bmm, transpose, cat_1, cos, mul, _to_copy_2, unsqueeze_16, mul_4, slice_5, neg, slice_4, cat_2, sin, mul_1, _to_copy_3, unsqueeze_17, mul_5, add_4], Original ATen: [aten._unsafe_view, aten.view, aten.transpose, aten.bmm, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.unsqueeze, aten.slice, aten.neg, aten.sin, aten.add]
            stream0 = get_raw_stream(0)
            triton_poi_fused__to_copy__unsafe_view_add_bmm_cat_cos_mul_neg_sin_slice_transpose_unsqueeze_view_3.run(buf2, buf5, buf6, 64, 128, stream=stream0)
            buf7 = empty_strided_cuda((64, 64), (64, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [view_4, t_1, mm_1], Original ATen: [aten.view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf1, (64, 128), (128, 1), 0), reinterpret_tensor(arg4_1, (128, 64), (1, 128), 0), out=buf7)
            buf8 = empty_strided_cuda((1, 1, 64, 64), (4096, 1, 64, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [bmm, transpose, cat_1, cos, mul, _to_copy_2, unsqueeze_16, sin, mul_1, _to_copy_3, unsqueeze_17, _unsafe_view_2, view_5, transpose_2, mul_6, slice_7, neg_1, slice_6, cat_3, mul_7, add_5], Original ATen: [aten.bmm, aten.transpose, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.unsqueeze, aten.sin, aten._unsafe_view, aten.view, aten.slice, aten.neg, aten.add]
            stream0 = get_raw_stream(0)
            triton_poi_fused__to_copy__unsafe_view_add_bmm_cat_cos_mul_neg_sin_slice_transpose_unsqueeze_view_4.run(buf7, buf5, buf8, 64, 64, stream=stream0)
            buf9 = reinterpret_tensor(buf2, (2, 64, 64), (4096, 64, 1), 0); del buf2  # reuse
            # Topologically Sorted Source Nodes: [_unsafe_view_1, view_3, transpose_1, bmm, transpose, cat_1, cos, mul, _to_copy_2, unsqueeze_16, mul_4, slice_5, neg, slice_4, cat_2, sin, mul_1, _to_copy_3, unsqueeze_17, mul_5, add_4, view_10, _unsafe_view_2, view_5, transpose_2, mul_6, slice_7, neg_1, slice_6, cat_3, mul_7, add_5, unsqueeze_18, expand_4, view_8, transpose_4, view_11, bmm_1], Original ATen: [aten._unsafe_view, aten.view, aten.transpose, aten.bmm, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.unsqueeze, aten.slice, aten.neg, aten.sin, aten.add, aten.expand]
            extern_kernels.bmm(reinterpret_tensor(buf6, (2, 64, 64), (4096, 64, 1), 0), reinterpret_tensor(buf8, (2, 64, 64), (0, 1, 64), 0), out=buf9)
            buf10 = empty_strided_cuda((1, 2, 64, 1), (128, 64, 1, 128), torch.float32)
            buf11 = empty_strided_cuda((1, 2, 64, 1), (128, 64, 1, 128), torch.float32)
            buf12 = empty_strided_cuda((1, 2, 64, 64), (8192, 4096, 64, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_unsafe_view_4, mul_8, arange_4, add_2, unsqueeze_10, unsqueeze_11, unsqueeze_12, arange_3, add_1, unsqueeze_7, unsqueeze_8, unsqueeze_9, le, expand, scalar_tensor, where, add_6, _to_copy_6, _softmax, _to_copy_7], Original ATen: [aten._unsafe_view, aten.mul, aten.arange, aten.add, aten.unsqueeze, aten.le, aten.expand, aten.scalar_tensor, aten.where, aten._to_copy, prims.prepare_softmax_online, aten.sub, aten.exp, aten._softmax]
            stream0 = get_raw_stream(0)
            triton_per_fused__softmax__to_copy__unsafe_view_add_arange_exp_expand_le_mul_prepare_softmax_online_scalar_tensor_sub_unsqueeze_where_5.run(buf9, arg0_1, buf10, buf11, buf12, 128, 64, stream=stream0)
            buf13 = buf7; del buf7  # reuse
            # Topologically Sorted Source Nodes: [view_6, t_2, mm_2], Original ATen: [aten.view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf1, (64, 128), (128, 1), 0), reinterpret_tensor(arg5_1, (128, 64), (1, 128), 0), out=buf13)
            buf14 = empty_strided_cuda((2, 64, 64), (4096, 64, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_unsafe_view_4, mul_8, arange_4, add_2, unsqueeze_10, unsqueeze_11, unsqueeze_12, arange_3, add_1, unsqueeze_7, unsqueeze_8, unsqueeze_9, le, expand, scalar_tensor, where, add_6, _to_copy_6, _softmax, _to_copy_7, view_12, _unsafe_view_3, view_7, transpose_3, unsqueeze_19, expand_5, view_9, view_13, bmm_2], Original ATen: [aten._unsafe_view, aten.mul, aten.arange, aten.add, aten.unsqueeze, aten.le, aten.expand, aten.scalar_tensor, aten.where, aten._to_copy, aten.sub, aten.exp, aten._softmax, aten.view, aten.transpose, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf12, (2, 64, 64), (4096, 64, 1), 0), reinterpret_tensor(buf13, (2, 64, 64), (0, 64, 1), 0), out=buf14)
            buf15 = empty_strided_cuda((64, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_unsafe_view_5, transpose_5, clone, view_14, view_15], Original ATen: [aten._unsafe_view, aten.transpose, aten.clone, aten.view]
            stream0 = get_raw_stream(0)
            triton_poi_fused__unsafe_view_clone_transpose_view_6.run(buf14, buf15, 8192, stream=stream0)
            buf16 = reinterpret_tensor(buf14, (64, 128), (128, 1), 0); del buf14  # reuse
            # Topologically Sorted Source Nodes: [t_3, mm_3], Original ATen: [aten.t, aten.mm]
            extern_kernels.mm(buf15, reinterpret_tensor(arg6_1, (128, 128), (1, 128), 0), out=buf16)
            buf17 = reinterpret_tensor(buf4, (1, 64, 1), (64, 1, 64), 0); del buf4  # reuse
            buf18 = empty_strided_cuda((1, 64, 128), (8192, 128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [embedding, _unsafe_view_6, add_7, _to_copy_8, pow_2, mean_1, add_8, rsqrt_1, mul_9, _to_copy_9, mul_10], Original ATen: [aten.embedding, aten._unsafe_view, aten.add, aten._to_copy, aten.pow, aten.mean, aten.rsqrt, aten.mul]
            stream0 = get_raw_stream(0)
            triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_7.run(arg1_1, arg2_1, buf16, arg11_1, buf17, buf18, 64, 128, stream=stream0)
            buf19 = empty_strided_cuda((64, 352), (352, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [view_16, t_4, mm_4], Original ATen: [aten.view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf18, (64, 128), (128, 1), 0), reinterpret_tensor(arg7_1, (128, 352), (1, 128), 0), out=buf19)
            buf20 = empty_strided_cuda((64, 352), (352, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [view_17, t_5, mm_5], Original ATen: [aten.view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf18, (64, 128), (128, 1), 0), reinterpret_tensor(arg8_1, (128, 352), (1, 128), 0), out=buf20)
            buf21 = empty_strided_cuda((1, 64, 352), (22528, 352, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_unsafe_view_7, silu, _unsafe_view_8, mul_11], Original ATen: [aten._unsafe_view, aten.silu, aten.mul]
            stream0 = get_raw_stream(0)
            triton_poi_fused__unsafe_view_mul_silu_8.run(buf19, buf20, buf21, 22528, stream=stream0)
            buf22 = empty_strided_cuda((64, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_unsafe_view_7, silu, _unsafe_view_8, mul_11, view_18, t_6, mm_6], Original ATen: [aten._unsafe_view, aten.silu, aten.mul, aten.view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf21, (64, 352), (352, 1), 0), reinterpret_tensor(arg9_1, (352, 128), (1, 352), 0), out=buf22)
            buf23 = empty_strided_cuda((1, 64, 1), (64, 1, 64), torch.float32)
            buf24 = empty_strided_cuda((1, 64, 128), (8192, 128, 1), torch.bfloat16)
            buf25 = empty_strided_cuda((1, 64, 128), (8192, 128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [embedding, _unsafe_view_6, add_7, _unsafe_view_9, add_9, _to_copy_10, pow_3, mean_2, add_10, rsqrt_2, mul_12, _to_copy_11, mul_13], Original ATen: [aten.embedding, aten._unsafe_view, aten.add, aten._to_copy, aten.pow, aten.mean, aten.rsqrt, aten.mul]
            stream0 = get_raw_stream(0)
            triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_9.run(arg1_1, arg2_1, buf16, buf22, arg19_1, buf23, buf24, buf25, 64, 128, stream=stream0)
            buf26 = empty_strided_cuda((64, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [mul_13, view_19, t_7, mm_7], Original ATen: [aten.mul, aten.view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf25, (64, 128), (128, 1), 0), reinterpret_tensor(arg12_1, (128, 128), (1, 128), 0), out=buf26)
            buf27 = empty_strided_cuda((1, 2, 64, 64), (8192, 4096, 64, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [bmm, transpose, cat_1, cos, mul, _to_copy_2, sin, mul_1, _to_copy_3, _unsafe_view_10, view_20, transpose_6, unsqueeze_20, mul_14, slice_9, neg_2, slice_8, cat_4, unsqueeze_21, mul_15, add_11], Original ATen: [aten.bmm, aten.transpose, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.sin, aten._unsafe_view, aten.view, aten.unsqueeze, aten.slice, aten.neg, aten.add]
            stream0 = get_raw_stream(0)
            triton_poi_fused__to_copy__unsafe_view_add_bmm_cat_cos_mul_neg_sin_slice_transpose_unsqueeze_view_3.run(buf26, buf5, buf27, 64, 128, stream=stream0)
            buf28 = empty_strided_cuda((64, 64), (64, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [view_21, t_8, mm_8], Original ATen: [aten.view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf25, (64, 128), (128, 1), 0), reinterpret_tensor(arg13_1, (128, 64), (1, 128), 0), out=buf28)
            buf29 = empty_strided_cuda((1, 1, 64, 64), (4096, 1, 64, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [bmm, transpose, cat_1, cos, mul, _to_copy_2, sin, mul_1, _to_copy_3, unsqueeze_20, unsqueeze_21, _unsafe_view_11, view_22, transpose_7, mul_16, slice_11, neg_3, slice_10, cat_5, mul_17, add_12], Original ATen: [aten.bmm, aten.transpose, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.sin, aten.unsqueeze, aten._unsafe_view, aten.view, aten.slice, aten.neg, aten.add]
            stream0 = get_raw_stream(0)
            triton_poi_fused__to_copy__unsafe_view_add_bmm_cat_cos_mul_neg_sin_slice_transpose_unsqueeze_view_4.run(buf28, buf5, buf29, 64, 64, stream=stream0)
            buf30 = reinterpret_tensor(buf26, (2, 64, 64), (4096, 64, 1), 0); del buf26  # reuse
            # Topologically Sorted Source Nodes: [bmm, transpose, cat_1, cos, mul, _to_copy_2, sin, mul_1, _to_copy_3, _unsafe_view_10, view_20, transpose_6, unsqueeze_20, mul_14, slice_9, neg_2, slice_8, cat_4, unsqueeze_21, mul_15, add_11, view_27, _unsafe_view_11, view_22, transpose_7, mul_16, slice_11, neg_3, slice_10, cat_5, mul_17, add_12, unsqueeze_22, expand_10, view_25, transpose_9, view_28, bmm_3], Original ATen: [aten.bmm, aten.transpose, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.sin, aten._unsafe_view, aten.view, aten.unsqueeze, aten.slice, aten.neg, aten.add, aten.expand]
            extern_kernels.bmm(reinterpret_tensor(buf27, (2, 64, 64), (4096, 64, 1), 0), reinterpret_tensor(buf29, (2, 64, 64), (0, 1, 64), 0), out=buf30)
            buf31 = empty_strided_cuda((1, 2, 64, 1), (128, 64, 1, 128), torch.float32)
            buf32 = empty_strided_cuda((1, 2, 64, 1), (128, 64, 1, 128), torch.float32)
            buf33 = empty_strided_cuda((1, 2, 64, 64), (8192, 4096, 64, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [arange_4, add_2, unsqueeze_10, unsqueeze_11, unsqueeze_12, arange_3, add_1, unsqueeze_7, unsqueeze_8, unsqueeze_9, le, expand, scalar_tensor, where, _unsafe_view_13, mul_18, add_13, _to_copy_12, _softmax_1, _to_copy_13], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten.le, aten.expand, aten.scalar_tensor, aten.where, aten._unsafe_view, aten.mul, aten._to_copy, prims.prepare_softmax_online, aten.sub, aten.exp, aten._softmax]
            stream0 = get_raw_stream(0)
            triton_per_fused__softmax__to_copy__unsafe_view_add_arange_exp_expand_le_mul_prepare_softmax_online_scalar_tensor_sub_unsqueeze_where_5.run(buf30, arg0_1, buf31, buf32, buf33, 128, 64, stream=stream0)
            buf34 = buf28; del buf28  # reuse
            # Topologically Sorted Source Nodes: [view_23, t_9, mm_9], Original ATen: [aten.view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf25, (64, 128), (128, 1), 0), reinterpret_tensor(arg14_1, (128, 64), (1, 128), 0), out=buf34)
            buf35 = empty_strided_cuda((2, 64, 64), (4096, 64, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [arange_4, add_2, unsqueeze_10, unsqueeze_11, unsqueeze_12, arange_3, add_1, unsqueeze_7, unsqueeze_8, unsqueeze_9, le, expand, scalar_tensor, where, _unsafe_view_13, mul_18, add_13, _to_copy_12, _softmax_1, _to_copy_13, view_29, _unsafe_view_12, view_24, transpose_8, unsqueeze_23, expand_11, view_26, view_30, bmm_4], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten.le, aten.expand, aten.scalar_tensor, aten.where, aten._unsafe_view, aten.mul, aten._to_copy, aten.sub, aten.exp, aten._softmax, aten.view, aten.transpose, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf33, (2, 64, 64), (4096, 64, 1), 0), reinterpret_tensor(buf34, (2, 64, 64), (0, 64, 1), 0), out=buf35)
            buf36 = empty_strided_cuda((64, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_unsafe_view_14, transpose_10, clone_1, view_31, view_32], Original ATen: [aten._unsafe_view, aten.transpose, aten.clone, aten.view]
            stream0 = get_raw_stream(0)
            triton_poi_fused__unsafe_view_clone_transpose_view_6.run(buf35, buf36, 8192, stream=stream0)
            buf37 = reinterpret_tensor(buf35, (64, 128), (128, 1), 0); del buf35  # reuse
            # Topologically Sorted Source Nodes: [t_10, mm_10], Original ATen: [aten.t, aten.mm]
            extern_kernels.mm(buf36, reinterpret_tensor(arg15_1, (128, 128), (1, 128), 0), out=buf37)
            buf38 = reinterpret_tensor(buf37, (1, 64, 128), (8192, 128, 1), 0); del buf37  # reuse
            buf39 = empty_strided_cuda((1, 64, 1), (64, 1, 64), torch.float32)
            buf40 = empty_strided_cuda((1, 64, 128), (8192, 128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [embedding, _unsafe_view_6, add_7, _unsafe_view_9, add_9, _unsafe_view_15, add_14, _to_copy_14, pow_4, mean_3, add_15, rsqrt_3, mul_19, _to_copy_15, mul_20], Original ATen: [aten.embedding, aten._unsafe_view, aten.add, aten._to_copy, aten.pow, aten.mean, aten.rsqrt, aten.mul]
            stream0 = get_raw_stream(0)
            triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_10.run(buf38, arg1_1, arg2_1, buf16, buf22, arg20_1, buf39, buf40, 64, 128, stream=stream0)
            buf41 = empty_strided_cuda((64, 352), (352, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_to_copy_14, pow_4, mean_3, add_15, rsqrt_3, mul_19, _to_copy_15, mul_20, view_33, t_11, mm_11], Original ATen: [aten._to_copy, aten.pow, aten.mean, aten.add, aten.rsqrt, aten.mul, aten.view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf40, (64, 128), (128, 1), 0), reinterpret_tensor(arg16_1, (128, 352), (1, 128), 0), out=buf41)
            buf42 = empty_strided_cuda((64, 352), (352, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [view_34, t_12, mm_12], Original ATen: [aten.view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf40, (64, 128), (128, 1), 0), reinterpret_tensor(arg17_1, (128, 352), (1, 128), 0), out=buf42)
            buf43 = empty_strided_cuda((1, 64, 352), (22528, 352, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_unsafe_view_16, silu_1, _unsafe_view_17, mul_21], Original ATen: [aten._unsafe_view, aten.silu, aten.mul]
            stream0 = get_raw_stream(0)
            triton_poi_fused__unsafe_view_mul_silu_8.run(buf41, buf42, buf43, 22528, stream=stream0)
            buf44 = empty_strided_cuda((64, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_unsafe_view_16, silu_1, _unsafe_view_17, mul_21, view_35, t_13, mm_13], Original ATen: [aten._unsafe_view, aten.silu, aten.mul, aten.view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf43, (64, 352), (352, 1), 0), reinterpret_tensor(arg18_1, (352, 128), (1, 352), 0), out=buf44)
            buf45 = empty_strided_cuda((1, 64, 1), (64, 1, 64), torch.float32)
            buf46 = empty_strided_cuda((1, 64, 128), (8192, 128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_unsafe_view_18, add_16, _to_copy_16, pow_5, mean_4, add_17, rsqrt_4, mul_22, _to_copy_17, mul_23], Original ATen: [aten._unsafe_view, aten.add, aten._to_copy, aten.pow, aten.mean, aten.rsqrt, aten.mul]
            stream0 = get_raw_stream(0)
            triton_per_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_11.run(buf38, buf44, arg21_1, buf45, buf46, 64, 128, stream=stream0)
            buf47 = empty_strided_cuda((64, 8192), (8192, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_unsafe_view_18, add_16, _to_copy_16, pow_5, mean_4, add_17, rsqrt_4, mul_22, _to_copy_17, mul_23, view_36, t_14, mm_14], Original ATen: [aten._unsafe_view, aten.add, aten._to_copy, aten.pow, aten.mean, aten.rsqrt, aten.mul, aten.view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf46, (64, 128), (128, 1), 0), reinterpret_tensor(arg22_1, (128, 8192), (1, 128), 0), out=buf47)
            buf51 = empty_strided_cuda((), (), torch.int64)
            # Topologically Sorted Source Nodes: [constant_pad_nd, slice_12, view_38, nll_loss_forward], Original ATen: [aten.constant_pad_nd, aten.slice, aten.view, aten.nll_loss_forward]
            stream0 = get_raw_stream(0)
            triton_per_fused_constant_pad_nd_nll_loss_forward_slice_view_12.run(arg1_1, buf51, 1, 64, stream=stream0)
            buf48 = empty_strided_cuda((64, 1), (1, 64), torch.float32)
            buf49 = empty_strided_cuda((64, 1), (1, 64), torch.float32)
            buf54 = empty_strided_cuda((64, 8192), (8192, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [constant_pad_nd, slice_12, view_38, _unsafe_view_19, _to_copy_18, view_37, _log_softmax, nll_loss_forward, _log_softmax_backward_data, nll_loss_backward, expand_16, view_39, _to_copy_19, view_40], Original ATen: [aten.constant_pad_nd, aten.slice, aten.view, aten._unsafe_view, aten._to_copy, prims.prepare_softmax_online, aten.sub, aten._log_softmax, aten.nll_loss_forward, aten._log_softmax_backward_data, aten.nll_loss_backward, aten.expand, aten.arange, aten.eq, aten.scalar_tensor, aten.where]
            stream0 = get_raw_stream(0)
            triton_red_fused__log_softmax__log_softmax_backward_data__to_copy__unsafe_view_arange_constant_pad_nd_eq_expand_nll_loss_backward_nll_loss_forward_prepare_softmax_online_scalar_tensor_slice_sub_view_where_13.run(arg1_1, buf51, buf47, buf48, buf49, buf54, 64, 8192, stream=stream0)
            buf50 = empty_strided_cuda((), (), torch.float32)
            buf131 = buf50; del buf50  # reuse
            # Topologically Sorted Source Nodes: [constant_pad_nd, slice_12, view_38, nll_loss_forward, _unsafe_view_19, _to_copy_18, view_37, _log_softmax], Original ATen: [aten.constant_pad_nd, aten.slice, aten.view, aten.nll_loss_forward, aten._unsafe_view, aten._to_copy, aten.sub, aten._log_softmax]
            stream0 = get_raw_stream(0)
            triton_per_fused__log_softmax__to_copy__unsafe_view_constant_pad_nd_nll_loss_forward_slice_sub_view_14.run(buf131, arg1_1, buf47, buf48, buf49, buf51, 1, 64, stream=stream0)
            del buf47
            del buf48
            del buf49
            del buf51
            buf55 = empty_strided_cuda((64, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [t_14, t_17, mm_16], Original ATen: [aten.t, aten.mm]
            extern_kernels.mm(buf54, arg22_1, out=buf55)
            del arg22_1
            buf57 = empty_strided_cuda((1, 64, 128), (8192, 128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_unsafe_view_18, add_16, _to_copy_16, pow_5, mean_4, add_17, rsqrt_4, view_41, mul_24, _to_copy_20, mul_27, mul_26, sum_3, mul_28, pow_6, mul_29, expand_17, div, pow_7, mul_30, mul_31, add_18, _to_copy_21], Original ATen: [aten._unsafe_view, aten.add, aten._to_copy, aten.pow, aten.mean, aten.rsqrt, aten.view, aten.mul, aten.sum, aten.expand, aten.div]
            stream0 = get_raw_stream(0)
            triton_per_fused__to_copy__unsafe_view_add_div_expand_mean_mul_pow_rsqrt_sum_view_15.run(buf55, arg21_1, buf38, buf44, buf45, buf57, 64, 128, stream=stream0)
            del arg21_1
            buf58 = empty_strided_cuda((64, 352), (352, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [t_13, view_43, t_21, mm_18], Original ATen: [aten.t, aten.view, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf57, (64, 128), (128, 1), 0), arg18_1, out=buf58)
            del arg18_1
            buf59 = empty_strided_cuda((1, 64, 352), (22528, 352, 1), torch.bfloat16)
            buf61 = reinterpret_tensor(buf42, (1, 64, 352), (22528, 352, 1), 0); del buf42  # reuse
            # Topologically Sorted Source Nodes: [_unsafe_view_16, silu_1, _unsafe_view_17, view_44, mul_32, mul_33, silu_backward], Original ATen: [aten._unsafe_view, aten.silu, aten.view, aten.mul, aten.silu_backward]
            stream0 = get_raw_stream(0)
            triton_poi_fused__unsafe_view_mul_silu_silu_backward_view_16.run(buf61, buf58, buf41, buf59, 22528, stream=stream0)
            buf60 = empty_strided_cuda((64, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_unsafe_view_16, silu_1, t_12, view_44, mul_32, view_45, t_25, mm_20], Original ATen: [aten._unsafe_view, aten.silu, aten.t, aten.view, aten.mul, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf59, (64, 352), (352, 1), 0), arg17_1, out=buf60)
            del arg17_1
            buf62 = empty_strided_cuda((64, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [t_11, _unsafe_view_16, _unsafe_view_17, view_44, mul_33, silu_backward, view_47, t_29, mm_22], Original ATen: [aten.t, aten._unsafe_view, aten.view, aten.mul, aten.silu_backward, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf61, (64, 352), (352, 1), 0), arg16_1, out=buf62)
            del arg16_1
            buf64 = empty_strided_cuda((1, 64, 128), (8192, 128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_to_copy_14, pow_4, mean_3, add_15, rsqrt_3, view_46, view_48, add_19, mul_34, _to_copy_22, mul_37, mul_36, sum_5, mul_38, pow_8, mul_39, expand_18, div_1, pow_9, mul_40, mul_41, add_20, _to_copy_23, add_21], Original ATen: [aten._to_copy, aten.pow, aten.mean, aten.add, aten.rsqrt, aten.view, aten.mul, aten.sum, aten.expand, aten.div]
            stream0 = get_raw_stream(0)
            triton_per_fused__to_copy_add_div_expand_mean_mul_pow_rsqrt_sum_view_17.run(buf60, buf62, arg20_1, buf38, buf57, buf39, buf64, 64, 128, stream=stream0)
            del arg20_1
            buf65 = empty_strided_cuda((64, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [t_10, view_50, t_33, mm_24], Original ATen: [aten.t, aten.view, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf64, (64, 128), (128, 1), 0), arg15_1, out=buf65)
            del arg15_1
            buf66 = empty_strided_cuda((2, 64, 64), (4096, 64, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [arange_4, add_2, unsqueeze_10, unsqueeze_11, unsqueeze_12, arange_3, add_1, unsqueeze_7, unsqueeze_8, unsqueeze_9, le, expand, scalar_tensor, where, _unsafe_view_13, mul_18, add_13, _to_copy_12, _softmax_1, _to_copy_13, view_29, transpose_12, view_51, view_52, transpose_11, view_53, bmm_5], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten.le, aten.expand, aten.scalar_tensor, aten.where, aten._unsafe_view, aten.mul, aten._to_copy, aten.sub, aten.exp, aten._softmax, aten.view, aten.transpose, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf33, (2, 64, 64), (4096, 1, 64), 0), reinterpret_tensor(buf65, (2, 64, 64), (64, 128, 1), 0), out=buf66)
            buf67 = empty_strided_cuda((1, 1, 1, 64, 64), (4096, 1, 4096, 64, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [view_54, view_59, sum_6], Original ATen: [aten.view, aten.sum]
            stream0 = get_raw_stream(0)
            triton_poi_fused_sum_view_18.run(buf66, buf67, 4096, stream=stream0)
            buf68 = reinterpret_tensor(buf66, (64, 128), (128, 1), 0); del buf66  # reuse
            # Topologically Sorted Source Nodes: [t_9, view_54, view_59, sum_6, squeeze, transpose_17, view_61, view_62, t_37, mm_26], Original ATen: [aten.t, aten.view, aten.sum, aten.squeeze, aten.transpose, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf67, (64, 64), (64, 1), 0), arg14_1, out=buf68)
            del arg14_1
            buf69 = reinterpret_tensor(buf33, (2, 64, 64), (4096, 64, 1), 0); del buf33  # reuse
            # Topologically Sorted Source Nodes: [_unsafe_view_12, view_24, transpose_8, unsqueeze_23, expand_11, view_26, view_30, view_51, view_52, transpose_11, view_53, transpose_13, bmm_6], Original ATen: [aten._unsafe_view, aten.view, aten.transpose, aten.unsqueeze, aten.expand, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf65, (2, 64, 64), (64, 128, 1), 0), reinterpret_tensor(buf34, (2, 64, 64), (0, 1, 64), 0), out=buf69)
            buf72 = reinterpret_tensor(buf30, (1, 2, 64, 64), (8192, 4096, 64, 1), 0); del buf30  # reuse
            # Topologically Sorted Source Nodes: [arange_4, add_2, unsqueeze_10, unsqueeze_11, unsqueeze_12, arange_3, add_1, unsqueeze_7, unsqueeze_8, unsqueeze_9, le, expand, scalar_tensor, where, _unsafe_view_13, mul_18, add_13, _to_copy_12, _softmax_1, _softmax_backward_data, view_55, _to_copy_24, _to_copy_25, mul_42], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten.le, aten.expand, aten.scalar_tensor, aten.where, aten._unsafe_view, aten.mul, aten._to_copy, aten.sub, aten.exp, aten._softmax, aten._softmax_backward_data, aten.view]
            stream0 = get_raw_stream(0)
            triton_per_fused__softmax__softmax_backward_data__to_copy__unsafe_view_add_arange_exp_expand_le_mul_scalar_tensor_sub_unsqueeze_view_where_19.run(buf72, buf69, arg0_1, buf31, buf32, 128, 64, stream=stream0)
            del buf31
            del buf32
            buf73 = buf69; del buf69  # reuse
            # Topologically Sorted Source Nodes: [bmm, transpose, cat_1, cos, mul, _to_copy_2, sin, mul_1, _to_copy_3, arange_4, add_2, unsqueeze_10, unsqueeze_11, unsqueeze_12, arange_3, add_1, unsqueeze_7, unsqueeze_8, unsqueeze_9, le, expand, scalar_tensor, where, _unsafe_view_10, view_20, transpose_6, unsqueeze_20, mul_14, slice_9, neg_2, slice_8, cat_4, unsqueeze_21, mul_15, add_11, view_27, _unsafe_view_13, mul_18, add_13, _to_copy_12, _softmax_1, transpose_14, _softmax_backward_data, _to_copy_25, mul_42, view_56, bmm_7], Original ATen: [aten.bmm, aten.transpose, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.sin, aten.arange, aten.add, aten.unsqueeze, aten.le, aten.expand, aten.scalar_tensor, aten.where, aten._unsafe_view, aten.view, aten.slice, aten.neg, aten.sub, aten.exp, aten._softmax, aten._softmax_backward_data]
            extern_kernels.bmm(reinterpret_tensor(buf27, (2, 64, 64), (4096, 1, 64), 0), reinterpret_tensor(buf72, (2, 64, 64), (4096, 64, 1), 0), out=buf73)
            buf75 = buf34; del buf34  # reuse
            # Topologically Sorted Source Nodes: [bmm, transpose, cat_1, cos, mul, _to_copy_2, sin, mul_1, _to_copy_3, unsqueeze_20, unsqueeze_21, slice_backward, view_57, transpose_16, view_60, sum_7, squeeze_1, mul_43, slice_13, neg_4, slice_backward_1, slice_14, add_22, mul_44, add_23, transpose_18, view_64, view_65], Original ATen: [aten.bmm, aten.transpose, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.sin, aten.unsqueeze, aten.slice_backward, aten.view, aten.sum, aten.squeeze, aten.slice, aten.neg, aten.add]
            stream0 = get_raw_stream(0)
            triton_poi_fused__to_copy_add_bmm_cat_cos_mul_neg_sin_slice_slice_backward_squeeze_sum_transpose_unsqueeze_view_20.run(buf73, buf5, buf75, 64, 64, stream=stream0)
            buf76 = reinterpret_tensor(buf73, (64, 128), (128, 1), 0); del buf73  # reuse
            # Topologically Sorted Source Nodes: [t_8, t_41, mm_28], Original ATen: [aten.t, aten.mm]
            extern_kernels.mm(buf75, arg13_1, out=buf76)
            del arg13_1
            buf77 = reinterpret_tensor(buf27, (2, 64, 64), (4096, 64, 1), 0); del buf27  # reuse
            # Topologically Sorted Source Nodes: [bmm, transpose, cat_1, cos, mul, _to_copy_2, sin, mul_1, _to_copy_3, arange_4, add_2, unsqueeze_10, unsqueeze_11, unsqueeze_12, arange_3, add_1, unsqueeze_7, unsqueeze_8, unsqueeze_9, le, expand, scalar_tensor, where, unsqueeze_20, unsqueeze_21, _unsafe_view_11, view_22, transpose_7, mul_16, slice_11, neg_3, slice_10, cat_5, mul_17, add_12, unsqueeze_22, expand_10, view_25, transpose_9, view_28, _unsafe_view_13, mul_18, add_13, _to_copy_12, _softmax_1, _softmax_backward_data, _to_copy_25, mul_42, view_56, transpose_15, bmm_8], Original ATen: [aten.bmm, aten.transpose, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.sin, aten.arange, aten.add, aten.unsqueeze, aten.le, aten.expand, aten.scalar_tensor, aten.where, aten._unsafe_view, aten.view, aten.slice, aten.neg, aten.sub, aten.exp, aten._softmax, aten._softmax_backward_data]
            extern_kernels.bmm(reinterpret_tensor(buf72, (2, 64, 64), (4096, 64, 1), 0), reinterpret_tensor(buf29, (2, 64, 64), (0, 64, 1), 0), out=buf77)
            buf78 = reinterpret_tensor(buf72, (1, 64, 2, 64), (8192, 128, 64, 1), 0); del buf72  # reuse
            # Topologically Sorted Source Nodes: [bmm, transpose, cat_1, cos, mul, _to_copy_2, sin, mul_1, _to_copy_3, unsqueeze_20, unsqueeze_21, slice_backward_2, view_58, mul_45, slice_15, neg_5, slice_backward_3, slice_16, add_24, mul_46, add_25, transpose_19, clone_2], Original ATen: [aten.bmm, aten.transpose, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.sin, aten.unsqueeze, aten.slice_backward, aten.view, aten.slice, aten.neg, aten.add, aten.clone]
            stream0 = get_raw_stream(0)
            triton_poi_fused__to_copy_add_bmm_cat_clone_cos_mul_neg_sin_slice_slice_backward_transpose_unsqueeze_view_21.run(buf77, buf5, buf78, 128, 64, stream=stream0)
            buf79 = reinterpret_tensor(buf77, (64, 128), (128, 1), 0); del buf77  # reuse
            # Topologically Sorted Source Nodes: [bmm, transpose, cat_1, cos, mul, _to_copy_2, sin, mul_1, _to_copy_3, t_7, unsqueeze_20, unsqueeze_21, slice_backward_2, view_58, mul_45, slice_15, neg_5, slice_backward_3, slice_16, add_24, mul_46, add_25, transpose_19, clone_2, _unsafe_view_20, view_67, t_45, mm_30], Original ATen: [aten.bmm, aten.transpose, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.sin, aten.t, aten.unsqueeze, aten.slice_backward, aten.view, aten.slice, aten.neg, aten.add, aten.clone, aten._unsafe_view, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf78, (64, 128), (128, 1), 0), arg12_1, out=buf79)
            del arg12_1
            buf82 = reinterpret_tensor(buf65, (1, 64, 128), (8192, 128, 1), 0); del buf65  # reuse
            # Topologically Sorted Source Nodes: [embedding, _unsafe_view_6, add_7, _unsafe_view_9, add_9, _to_copy_10, pow_3, mean_2, add_10, rsqrt_2, view_63, view_66, add_26, view_68, add_27, mul_47, _to_copy_26, mul_50, mul_49, sum_9, mul_51, pow_10, mul_52, expand_19, div_2, pow_11, mul_53, mul_54, add_28, _to_copy_27, add_29], Original ATen: [aten.embedding, aten._unsafe_view, aten.add, aten._to_copy, aten.pow, aten.mean, aten.rsqrt, aten.view, aten.mul, aten.sum, aten.expand, aten.div]
            stream0 = get_raw_stream(0)
            triton_per_fused__to_copy__unsafe_view_add_div_embedding_expand_mean_mul_pow_rsqrt_sum_view_22.run(buf68, buf76, buf79, arg19_1, arg1_1, arg2_1, buf16, buf22, buf23, buf64, buf82, 64, 128, stream=stream0)
            del arg19_1
            del buf23
            buf83 = buf58; del buf58  # reuse
            # Topologically Sorted Source Nodes: [t_6, _to_copy_27, add_29, view_70, t_49, mm_32], Original ATen: [aten.t, aten._to_copy, aten.add, aten.view, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf82, (64, 128), (128, 1), 0), arg9_1, out=buf83)
            del arg9_1
            buf84 = reinterpret_tensor(buf41, (1, 64, 352), (22528, 352, 1), 0); del buf41  # reuse
            buf86 = reinterpret_tensor(buf20, (1, 64, 352), (22528, 352, 1), 0); del buf20  # reuse
            # Topologically Sorted Source Nodes: [_unsafe_view_7, silu, _unsafe_view_8, view_71, mul_55, mul_56, silu_backward_1], Original ATen: [aten._unsafe_view, aten.silu, aten.view, aten.mul, aten.silu_backward]
            stream0 = get_raw_stream(0)
            triton_poi_fused__unsafe_view_mul_silu_silu_backward_view_16.run(buf86, buf83, buf19, buf84, 22528, stream=stream0)
            del buf19
            del buf83
            buf85 = buf22; del buf22  # reuse
            # Topologically Sorted Source Nodes: [_unsafe_view_7, silu, t_5, view_71, mul_55, view_72, t_53, mm_34], Original ATen: [aten._unsafe_view, aten.silu, aten.t, aten.view, aten.mul, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf84, (64, 352), (352, 1), 0), arg8_1, out=buf85)
            del arg8_1
            buf87 = empty_strided_cuda((64, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [t_4, _unsafe_view_7, _unsafe_view_8, view_71, mul_56, silu_backward_1, view_74, t_57, mm_36], Original ATen: [aten.t, aten._unsafe_view, aten.view, aten.mul, aten.silu_backward, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf86, (64, 352), (352, 1), 0), arg7_1, out=buf87)
            del arg7_1
            buf89 = empty_strided_cuda((1, 64, 128), (8192, 128, 1), torch.bfloat16)
            buf90 = buf89; del buf89  # reuse
            # Topologically Sorted Source Nodes: [embedding, _unsafe_view_6, add_7, _to_copy_8, pow_2, mean_1, add_8, rsqrt_1, view_73, view_75, add_30, mul_57, _to_copy_28, mul_60, mul_59, sum_11, mul_61, pow_12, mul_62, expand_20, div_3, pow_13, mul_63, mul_64, add_31, _to_copy_29, add_32], Original ATen: [aten.embedding, aten._unsafe_view, aten.add, aten._to_copy, aten.pow, aten.mean, aten.rsqrt, aten.view, aten.mul, aten.sum, aten.expand, aten.div]
            stream0 = get_raw_stream(0)
            triton_per_fused__to_copy__unsafe_view_add_div_embedding_expand_mean_mul_pow_rsqrt_sum_view_23.run(buf90, buf85, buf87, arg11_1, arg1_1, arg2_1, buf16, buf17, buf82, 64, 128, stream=stream0)
            del arg11_1
            buf91 = empty_strided_cuda((64, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [t_3, add_32, view_77, t_61, mm_38], Original ATen: [aten.t, aten.add, aten.view, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf90, (64, 128), (128, 1), 0), arg6_1, out=buf91)
            del arg6_1
            buf92 = empty_strided_cuda((2, 64, 64), (4096, 64, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_unsafe_view_4, mul_8, arange_4, add_2, unsqueeze_10, unsqueeze_11, unsqueeze_12, arange_3, add_1, unsqueeze_7, unsqueeze_8, unsqueeze_9, le, expand, scalar_tensor, where, add_6, _to_copy_6, _softmax, _to_copy_7, view_12, transpose_21, view_78, view_79, transpose_20, view_80, bmm_9], Original ATen: [aten._unsafe_view, aten.mul, aten.arange, aten.add, aten.unsqueeze, aten.le, aten.expand, aten.scalar_tensor, aten.where, aten._to_copy, aten.sub, aten.exp, aten._softmax, aten.view, aten.transpose, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf12, (2, 64, 64), (4096, 1, 64), 0), reinterpret_tensor(buf91, (2, 64, 64), (64, 128, 1), 0), out=buf92)
            buf93 = reinterpret_tensor(buf29, (1, 1, 1, 64, 64), (4096, 1, 4096, 64, 1), 0); del buf29  # reuse
            # Topologically Sorted Source Nodes: [view_81, view_86, sum_12], Original ATen: [aten.view, aten.sum]
            stream0 = get_raw_stream(0)
            triton_poi_fused_sum_view_18.run(buf92, buf93, 4096, stream=stream0)
            buf94 = reinterpret_tensor(buf92, (64, 128), (128, 1), 0); del buf92  # reuse
            # Topologically Sorted Source Nodes: [t_2, view_81, view_86, sum_12, squeeze_2, transpose_26, view_88, view_89, t_65, mm_40], Original ATen: [aten.t, aten.view, aten.sum, aten.squeeze, aten.transpose, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf93, (64, 64), (64, 1), 0), arg5_1, out=buf94)
            del arg5_1
            buf95 = reinterpret_tensor(buf12, (2, 64, 64), (4096, 64, 1), 0); del buf12  # reuse
            # Topologically Sorted Source Nodes: [_unsafe_view_3, view_7, transpose_3, unsqueeze_19, expand_5, view_9, view_13, view_78, view_79, transpose_20, view_80, transpose_22, bmm_10], Original ATen: [aten._unsafe_view, aten.view, aten.transpose, aten.unsqueeze, aten.expand, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf91, (2, 64, 64), (64, 128, 1), 0), reinterpret_tensor(buf13, (2, 64, 64), (0, 1, 64), 0), out=buf95)
            del buf91
            buf98 = reinterpret_tensor(buf9, (1, 2, 64, 64), (8192, 4096, 64, 1), 0); del buf9  # reuse
            # Topologically Sorted Source Nodes: [_unsafe_view_4, mul_8, arange_4, add_2, unsqueeze_10, unsqueeze_11, unsqueeze_12, arange_3, add_1, unsqueeze_7, unsqueeze_8, unsqueeze_9, le, expand, scalar_tensor, where, add_6, _to_copy_6, _softmax, _softmax_backward_data_1, view_82, _to_copy_30, _to_copy_31, mul_65], Original ATen: [aten._unsafe_view, aten.mul, aten.arange, aten.add, aten.unsqueeze, aten.le, aten.expand, aten.scalar_tensor, aten.where, aten._to_copy, aten.sub, aten.exp, aten._softmax, aten._softmax_backward_data, aten.view]
            stream0 = get_raw_stream(0)
            triton_per_fused__softmax__softmax_backward_data__to_copy__unsafe_view_add_arange_exp_expand_le_mul_scalar_tensor_sub_unsqueeze_view_where_19.run(buf98, buf95, arg0_1, buf10, buf11, 128, 64, stream=stream0)
            del arg0_1
            del buf10
            del buf11
            buf99 = buf95; del buf95  # reuse
            # Topologically Sorted Source Nodes: [_unsafe_view_1, view_3, transpose_1, bmm, transpose, cat_1, cos, mul, _to_copy_2, unsqueeze_16, mul_4, slice_5, neg, slice_4, cat_2, sin, mul_1, _to_copy_3, unsqueeze_17, mul_5, add_4, view_10, _unsafe_view_4, mul_8, arange_4, add_2, unsqueeze_10, unsqueeze_11, unsqueeze_12, arange_3, add_1, unsqueeze_7, unsqueeze_8, unsqueeze_9, le, expand, scalar_tensor, where, add_6, _to_copy_6, _softmax, transpose_23, _softmax_backward_data_1, _to_copy_31, mul_65, view_83, bmm_11], Original ATen: [aten._unsafe_view, aten.view, aten.transpose, aten.bmm, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.unsqueeze, aten.slice, aten.neg, aten.sin, aten.add, aten.arange, aten.le, aten.expand, aten.scalar_tensor, aten.where, aten.sub, aten.exp, aten._softmax, aten._softmax_backward_data]
            extern_kernels.bmm(reinterpret_tensor(buf6, (2, 64, 64), (4096, 1, 64), 0), reinterpret_tensor(buf98, (2, 64, 64), (4096, 64, 1), 0), out=buf99)
            buf101 = buf13; del buf13  # reuse
            # Topologically Sorted Source Nodes: [bmm, transpose, cat_1, cos, mul, _to_copy_2, unsqueeze_16, sin, mul_1, _to_copy_3, unsqueeze_17, slice_backward_4, view_84, transpose_25, view_87, sum_13, squeeze_3, mul_66, slice_17, neg_6, slice_backward_5, slice_18, add_33, mul_67, add_34, transpose_27, view_91, view_92], Original ATen: [aten.bmm, aten.transpose, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.unsqueeze, aten.sin, aten.slice_backward, aten.view, aten.sum, aten.squeeze, aten.slice, aten.neg, aten.add]
            stream0 = get_raw_stream(0)
            triton_poi_fused__to_copy_add_bmm_cat_cos_mul_neg_sin_slice_slice_backward_squeeze_sum_transpose_unsqueeze_view_20.run(buf99, buf5, buf101, 64, 64, stream=stream0)
            buf102 = reinterpret_tensor(buf99, (64, 128), (128, 1), 0); del buf99  # reuse
            # Topologically Sorted Source Nodes: [t_1, t_69, mm_42], Original ATen: [aten.t, aten.mm]
            extern_kernels.mm(buf101, arg4_1, out=buf102)
            del arg4_1
            buf103 = reinterpret_tensor(buf6, (2, 64, 64), (4096, 64, 1), 0); del buf6  # reuse
            # Topologically Sorted Source Nodes: [bmm, transpose, cat_1, cos, mul, _to_copy_2, unsqueeze_16, sin, mul_1, _to_copy_3, unsqueeze_17, _unsafe_view_2, view_5, transpose_2, mul_6, slice_7, neg_1, slice_6, cat_3, mul_7, add_5, unsqueeze_18, expand_4, view_8, transpose_4, view_11, _unsafe_view_4, mul_8, arange_4, add_2, unsqueeze_10, unsqueeze_11, unsqueeze_12, arange_3, add_1, unsqueeze_7, unsqueeze_8, unsqueeze_9, le, expand, scalar_tensor, where, add_6, _to_copy_6, _softmax, _softmax_backward_data_1, _to_copy_31, mul_65, view_83, transpose_24, bmm_12], Original ATen: [aten.bmm, aten.transpose, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.unsqueeze, aten.sin, aten._unsafe_view, aten.view, aten.slice, aten.neg, aten.add, aten.expand, aten.arange, aten.le, aten.scalar_tensor, aten.where, aten.sub, aten.exp, aten._softmax, aten._softmax_backward_data]
            extern_kernels.bmm(reinterpret_tensor(buf98, (2, 64, 64), (4096, 64, 1), 0), reinterpret_tensor(buf8, (2, 64, 64), (0, 64, 1), 0), out=buf103)
            del buf8
            buf104 = reinterpret_tensor(buf98, (1, 64, 2, 64), (8192, 128, 64, 1), 0); del buf98  # reuse
            # Topologically Sorted Source Nodes: [bmm, transpose, cat_1, cos, mul, _to_copy_2, unsqueeze_16, sin, mul_1, _to_copy_3, unsqueeze_17, slice_backward_6, view_85, mul_68, slice_19, neg_7, slice_backward_7, slice_20, add_35, mul_69, add_36, transpose_28, clone_3], Original ATen: [aten.bmm, aten.transpose, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.unsqueeze, aten.sin, aten.slice_backward, aten.view, aten.slice, aten.neg, aten.add, aten.clone]
            stream0 = get_raw_stream(0)
            triton_poi_fused__to_copy_add_bmm_cat_clone_cos_mul_neg_sin_slice_slice_backward_transpose_unsqueeze_view_21.run(buf103, buf5, buf104, 128, 64, stream=stream0)
            del buf5
            buf105 = reinterpret_tensor(buf103, (64, 128), (128, 1), 0); del buf103  # reuse
            # Topologically Sorted Source Nodes: [t, bmm, transpose, cat_1, cos, mul, _to_copy_2, unsqueeze_16, sin, mul_1, _to_copy_3, unsqueeze_17, slice_backward_6, view_85, mul_68, slice_19, neg_7, slice_backward_7, slice_20, add_35, mul_69, add_36, transpose_28, clone_3, _unsafe_view_21, view_94, t_73, mm_44], Original ATen: [aten.t, aten.bmm, aten.transpose, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.unsqueeze, aten.sin, aten.slice_backward, aten.view, aten.slice, aten.neg, aten.add, aten.clone, aten._unsafe_view, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf104, (64, 128), (128, 1), 0), arg3_1, out=buf105)
            del arg3_1
            buf108 = empty_strided_cuda((8192, 128), (128, 1), torch.float32)
            # Topologically Sorted Source Nodes: [embedding_dense_backward], Original ATen: [aten.embedding_dense_backward]
            stream0 = get_raw_stream(0)
            triton_poi_fused_embedding_dense_backward_24.run(buf108, 1048576, stream=stream0)
            # Topologically Sorted Source Nodes: [embedding, _to_copy_4, pow_1, mean, add_3, rsqrt, embedding_dense_backward, view_90, view_93, add_37, view_95, add_38, mul_70, _to_copy_32, mul_73, mul_72, sum_15, mul_74, pow_14, mul_75, expand_21, div_4, pow_15, mul_76, mul_77, add_39, _to_copy_33, add_40], Original ATen: [aten.embedding, aten._to_copy, aten.pow, aten.mean, aten.add, aten.rsqrt, aten.embedding_dense_backward, aten.view, aten.mul, aten.sum, aten.expand, aten.div]
            stream0 = get_raw_stream(0)
            triton_per_fused__to_copy_add_div_embedding_embedding_dense_backward_expand_mean_mul_pow_rsqrt_sum_view_25.run(buf94, buf102, buf105, arg10_1, arg1_1, arg2_1, buf0, buf90, buf108, 64, 128, stream=stream0)
            del arg10_1
            buf110 = empty_strided_cuda((8192, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [embedding_dense_backward], Original ATen: [aten.embedding_dense_backward]
            stream0 = get_raw_stream(0)
            triton_poi_fused_embedding_dense_backward_26.run(buf108, buf110, 1048576, stream=stream0)
            del buf108
            buf111 = empty_strided_cuda((128, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [embedding, _to_copy_4, pow_1, mean, add_3, rsqrt, mul_2, _to_copy_5, mul_3, view_2, bmm, transpose, cat_1, cos, mul, _to_copy_2, unsqueeze_16, sin, mul_1, _to_copy_3, unsqueeze_17, slice_backward_6, view_85, mul_68, slice_19, neg_7, slice_backward_7, slice_20, add_35, mul_69, add_36, transpose_28, clone_3, _unsafe_view_21, view_94, t_71, mm_43], Original ATen: [aten.embedding, aten._to_copy, aten.pow, aten.mean, aten.add, aten.rsqrt, aten.mul, aten.view, aten.bmm, aten.transpose, aten.cat, aten.cos, aten.unsqueeze, aten.sin, aten.slice_backward, aten.slice, aten.neg, aten.clone, aten._unsafe_view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf104, (128, 64), (1, 128), 0), reinterpret_tensor(buf1, (64, 128), (128, 1), 0), out=buf111)
            buf112 = reinterpret_tensor(buf104, (64, 128), (128, 1), 0); del buf104  # reuse
            # Topologically Sorted Source Nodes: [view_4, t_67, mm_41], Original ATen: [aten.view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf101, (64, 64), (1, 64), 0), reinterpret_tensor(buf1, (64, 128), (128, 1), 0), out=buf112)
            del buf101
            buf113 = empty_strided_cuda((64, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [view_6, view_81, view_86, sum_12, squeeze_2, transpose_26, view_88, view_89, t_63, mm_39], Original ATen: [aten.view, aten.sum, aten.squeeze, aten.transpose, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf93, (64, 64), (1, 64), 0), reinterpret_tensor(buf1, (64, 128), (128, 1), 0), out=buf113)
            del buf1
            del buf93
            buf114 = empty_strided_cuda((128, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [add_32, view_77, t_59, mm_37], Original ATen: [aten.add, aten.view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf90, (128, 64), (1, 128), 0), buf15, out=buf114)
            del buf15
            del buf90
            buf115 = empty_strided_cuda((352, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [view_16, _unsafe_view_7, _unsafe_view_8, view_71, mul_56, silu_backward_1, view_74, t_55, mm_35], Original ATen: [aten.view, aten._unsafe_view, aten.mul, aten.silu_backward, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf86, (352, 64), (1, 352), 0), reinterpret_tensor(buf18, (64, 128), (128, 1), 0), out=buf115)
            del buf86
            buf116 = empty_strided_cuda((352, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_unsafe_view_7, silu, view_17, view_71, mul_55, view_72, t_51, mm_33], Original ATen: [aten._unsafe_view, aten.silu, aten.view, aten.mul, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf84, (352, 64), (1, 352), 0), reinterpret_tensor(buf18, (64, 128), (128, 1), 0), out=buf116)
            del buf18
            del buf84
            buf117 = empty_strided_cuda((128, 352), (352, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_unsafe_view_7, silu, _unsafe_view_8, mul_11, view_18, _to_copy_27, add_29, view_70, t_47, mm_31], Original ATen: [aten._unsafe_view, aten.silu, aten.mul, aten.view, aten._to_copy, aten.add, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf82, (128, 64), (1, 128), 0), reinterpret_tensor(buf21, (64, 352), (352, 1), 0), out=buf117)
            del buf21
            del buf82
            buf118 = empty_strided_cuda((1, 1, 128), (128, 128, 1), torch.bfloat16)
            buf119 = empty_strided_cuda((1, 1, 128), (128, 128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [embedding, _to_copy_4, pow_1, mean, add_3, rsqrt, mul_2, _to_copy_5, _unsafe_view_6, add_7, _to_copy_8, pow_2, mean_1, add_8, rsqrt_1, mul_9, _to_copy_9, view_73, view_75, add_30, view_90, view_93, add_37, view_95, add_38, mul_71, sum_14, mul_58, sum_10], Original ATen: [aten.embedding, aten._to_copy, aten.pow, aten.mean, aten.add, aten.rsqrt, aten.mul, aten._unsafe_view, aten.view, aten.sum]
            stream0 = get_raw_stream(0)
            triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_sum_view_27.run(buf94, buf102, buf105, arg1_1, arg2_1, buf0, buf85, buf87, buf16, buf17, buf118, buf119, 128, 64, stream=stream0)
            del arg1_1
            del arg2_1
            del buf0
            del buf102
            del buf105
            del buf16
            del buf17
            del buf85
            del buf87
            buf120 = empty_strided_cuda((128, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [bmm, transpose, cat_1, cos, mul, _to_copy_2, sin, mul_1, _to_copy_3, mul_13, view_19, unsqueeze_20, unsqueeze_21, slice_backward_2, view_58, mul_45, slice_15, neg_5, slice_backward_3, slice_16, add_24, mul_46, add_25, transpose_19, clone_2, _unsafe_view_20, view_67, t_43, mm_29], Original ATen: [aten.bmm, aten.transpose, aten.cat, aten.cos, aten.mul, aten._to_copy, aten.sin, aten.view, aten.unsqueeze, aten.slice_backward, aten.slice, aten.neg, aten.add, aten.clone, aten._unsafe_view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf78, (128, 64), (1, 128), 0), reinterpret_tensor(buf25, (64, 128), (128, 1), 0), out=buf120)
            buf121 = reinterpret_tensor(buf78, (64, 128), (128, 1), 0); del buf78  # reuse
            # Topologically Sorted Source Nodes: [view_21, t_39, mm_27], Original ATen: [aten.view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf75, (64, 64), (1, 64), 0), reinterpret_tensor(buf25, (64, 128), (128, 1), 0), out=buf121)
            del buf75
            buf122 = buf94; del buf94  # reuse
            # Topologically Sorted Source Nodes: [view_23, view_54, view_59, sum_6, squeeze, transpose_17, view_61, view_62, t_35, mm_25], Original ATen: [aten.view, aten.sum, aten.squeeze, aten.transpose, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf67, (64, 64), (1, 64), 0), reinterpret_tensor(buf25, (64, 128), (128, 1), 0), out=buf122)
            del buf25
            del buf67
            buf123 = empty_strided_cuda((128, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [view_50, t_31, mm_23], Original ATen: [aten.view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf64, (128, 64), (1, 128), 0), buf36, out=buf123)
            del buf36
            del buf64
            buf124 = empty_strided_cuda((352, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_to_copy_14, pow_4, mean_3, add_15, rsqrt_3, mul_19, _to_copy_15, mul_20, view_33, _unsafe_view_16, _unsafe_view_17, view_44, mul_33, silu_backward, view_47, t_27, mm_21], Original ATen: [aten._to_copy, aten.pow, aten.mean, aten.add, aten.rsqrt, aten.mul, aten.view, aten._unsafe_view, aten.silu_backward, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf61, (352, 64), (1, 352), 0), reinterpret_tensor(buf40, (64, 128), (128, 1), 0), out=buf124)
            del buf61
            buf125 = empty_strided_cuda((352, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_unsafe_view_16, silu_1, view_34, view_44, mul_32, view_45, t_23, mm_19], Original ATen: [aten._unsafe_view, aten.silu, aten.view, aten.mul, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf59, (352, 64), (1, 352), 0), reinterpret_tensor(buf40, (64, 128), (128, 1), 0), out=buf125)
            del buf40
            del buf59
            buf126 = empty_strided_cuda((128, 352), (352, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_unsafe_view_16, silu_1, _unsafe_view_17, mul_21, view_35, view_43, t_19, mm_17], Original ATen: [aten._unsafe_view, aten.silu, aten.mul, aten.view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf57, (128, 64), (1, 128), 0), reinterpret_tensor(buf43, (64, 352), (352, 1), 0), out=buf126)
            del buf43
            del buf57
            buf127 = empty_strided_cuda((1, 1, 128), (128, 128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [view_63, view_66, add_26, view_68, add_27, mul_48, sum_8], Original ATen: [aten.view, aten.add, aten.mul, aten.sum]
            stream0 = get_raw_stream(0)
            triton_per_fused_add_mul_sum_view_28.run(buf68, buf76, buf79, buf24, buf127, 128, 64, stream=stream0)
            del buf24
            del buf68
            del buf76
            del buf79
            buf128 = empty_strided_cuda((1, 1, 128), (128, 128, 1), torch.bfloat16)
            buf129 = empty_strided_cuda((1, 1, 128), (128, 128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_to_copy_14, pow_4, mean_3, add_15, rsqrt_3, mul_19, _to_copy_15, _unsafe_view_18, add_16, _to_copy_16, pow_5, mean_4, add_17, rsqrt_4, mul_22, _to_copy_17, view_41, view_46, view_48, add_19, mul_35, sum_4, mul_25, sum_2], Original ATen: [aten._to_copy, aten.pow, aten.mean, aten.add, aten.rsqrt, aten.mul, aten._unsafe_view, aten.view, aten.sum]
            stream0 = get_raw_stream(0)
            triton_per_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_sum_view_29.run(buf60, buf62, buf38, buf39, buf55, buf44, buf45, buf128, buf129, 128, 64, stream=stream0)
            del buf38
            del buf39
            del buf44
            del buf45
            del buf55
            del buf60
            del buf62
            buf130 = empty_strided_cuda((8192, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [_unsafe_view_18, add_16, _to_copy_16, pow_5, mean_4, add_17, rsqrt_4, mul_22, _to_copy_17, mul_23, view_36, t_15, mm_15], Original ATen: [aten._unsafe_view, aten.add, aten._to_copy, aten.pow, aten.mean, aten.rsqrt, aten.mul, aten.view, aten.t, aten.mm]
            extern_kernels.mm(reinterpret_tensor(buf54, (8192, 64), (1, 8192), 0), reinterpret_tensor(buf46, (64, 128), (128, 1), 0), out=buf130)
            del buf46
            del buf54
        return (buf131, buf110, buf111, buf112, buf113, buf114, buf115, buf116, buf117, reinterpret_tensor(buf118, (128, ), (1, ), 0), reinterpret_tensor(buf119, (128, ), (1, ), 0), buf120, buf121, buf122, buf123, buf124, buf125, buf126, reinterpret_tensor(buf127, (128, ), (1, ), 0), reinterpret_tensor(buf128, (128, ), (1, ), 0), reinterpret_tensor(buf129, (128, ), (1, ), 0), buf130, )

runner = Runner(partitions=[])
call = runner.call
recursively_apply_fns = runner.recursively_apply_fns


def get_args():
    from torch._dynamo.testing import rand_strided
    arg0_1 = rand_strided((), (), device='cuda:0', dtype=torch.bfloat16)
    arg1_1 = rand_strided((1, 64), (64, 1), device='cuda:0', dtype=torch.int64)
    arg2_1 = rand_strided((8192, 128), (128, 1), device='cuda:0', dtype=torch.bfloat16)
    arg3_1 = rand_strided((128, 128), (128, 1), device='cuda:0', dtype=torch.bfloat16)
    arg4_1 = rand_strided((64, 128), (128, 1), device='cuda:0', dtype=torch.bfloat16)
    arg5_1 = rand_strided((64, 128), (128, 1), device='cuda:0', dtype=torch.bfloat16)
    arg6_1 = rand_strided((128, 128), (128, 1), device='cuda:0', dtype=torch.bfloat16)
    arg7_1 = rand_strided((352, 128), (128, 1), device='cuda:0', dtype=torch.bfloat16)
    arg8_1 = rand_strided((352, 128), (128, 1), device='cuda:0', dtype=torch.bfloat16)
    arg9_1 = rand_strided((128, 352), (352, 1), device='cuda:0', dtype=torch.bfloat16)
    arg10_1 = rand_strided((128, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg11_1 = rand_strided((128, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg12_1 = rand_strided((128, 128), (128, 1), device='cuda:0', dtype=torch.bfloat16)
    arg13_1 = rand_strided((64, 128), (128, 1), device='cuda:0', dtype=torch.bfloat16)
    arg14_1 = rand_strided((64, 128), (128, 1), device='cuda:0', dtype=torch.bfloat16)
    arg15_1 = rand_strided((128, 128), (128, 1), device='cuda:0', dtype=torch.bfloat16)
    arg16_1 = rand_strided((352, 128), (128, 1), device='cuda:0', dtype=torch.bfloat16)
    arg17_1 = rand_strided((352, 128), (128, 1), device='cuda:0', dtype=torch.bfloat16)
    arg18_1 = rand_strided((128, 352), (352, 1), device='cuda:0', dtype=torch.bfloat16)
    arg19_1 = rand_strided((128, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg20_1 = rand_strided((128, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg21_1 = rand_strided((128, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg22_1 = rand_strided((8192, 128), (128, 1), device='cuda:0', dtype=torch.bfloat16)
    arg23_1 = rand_strided((32, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg24_1 = rand_strided((32, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    return [arg0_1, arg1_1, arg2_1, arg3_1, arg4_1, arg5_1, arg6_1, arg7_1, arg8_1, arg9_1, arg10_1, arg11_1, arg12_1, arg13_1, arg14_1, arg15_1, arg16_1, arg17_1, arg18_1, arg19_1, arg20_1, arg21_1, arg22_1, arg23_1, arg24_1]


def benchmark_compiled_module(args, times=10, repeat=10):
    from torch._inductor.utils import print_performance
    fn = lambda: call(list(args))
    return print_performance(fn, times=times, repeat=repeat)


if __name__ == "__main__":
    from torch._inductor.wrapper_benchmark import compiled_module_main
    args = get_args()
    compiled_module_main('None', lambda times, repeat: benchmark_compiled_module(args, times=times, repeat=repeat))
