"""The named presets: one literal table, loaded through the TOML schema and validated at import.

Each entry says how one real system computes a program whose tensors are stored in bf16/fp16/fp8
(see ``roundoff.policy.model`` for the enums and ``roundoff.plan.model`` for the value model).
Modelling decisions that the sources leave open are written next to the entry, with the reason.

- eager: ATen computes every pointwise op in ``at::opmath_type`` (fp32 for bf16/fp16/fp8) and
  rounds each result; composite kernels (_softmax, native_layer_norm, ...) compute in fp32 and
  round once; the few ATen runs as several tensor ops (``logsumexp``: amax, sub, exp, sum, log, add),
  each rounded, are decomposed into those ops (the ``eager`` set; on CPU also bf16 ``x ** 3`` and
  ``x ** -2``, which ATen computes in BFloat16 arithmetic: the ``eager-cpu`` set). Python scalars (and wrapped 0-dim CPU tensors) per op,
  measured bit for bit against eager CPU bf16/fp16 in torch 2.13 (tests/execute/test_eager_fidelity):
  TensorIterator casts a CPU scalar to the common dtype (``TensorIteratorBase::compute_types``,
  ``cast_common_dtype_to_outputs``/``is_cpu_scalar`` path), so add/sub/rsub (also their ``alpha``),
  pow (scalar base or exponent), fmod and remainder see it rounded to bf16/fp16: ROUND_TO_STORAGE
  overrides. mul and div (``BinaryOpsKernel.cpp``: ``iter.original_scalar_value<opmath_t>``),
  addcmul/addcdiv (``value.to<opmath_t>()``) and lerp's scalar weight keep it unrounded: the
  policy default. clamp, where, maximum/minimum only compare or select, where rounding is monotone
  and the result is rounded anyway: either choice gives the same bits (measured).
- eager-cuda: as eager, but ``opmath_gpu_kernel_with_scalars`` (``Loops.cuh``) reads every CPU
  scalar as ``opmath_t`` unrounded, add/sub included: no scalar overrides.
- inductor-gpu / inductor-cpu: Inductor decomposes, fuses pointwise chains and keeps fused
  intermediates in fp32 (``codegen_upcast_to_fp32``), so per-op and user casts inside a kernel
  vanish: FUSION_BOUNDARY. A 16-bit mean/var/var_mean is lowered as an fp32 reduction and a fused
  cast, so its consumers read it unrounded (``roundoff.capture.reduction_lowerings``). Triton/ptxas contracts ``a*b + c`` (even a multi-use product: the
  ``tmp4 - tmp4`` of pytorch FMA thread); the C++ backend is built with ``-ffp-contract=off``.
  The C++ backend also stores a multi-use value whose fused computation calls exp/log/sigmoid/tanh
  (Inductor's CPU realize-on-reuse heuristic), which its other loop nests then read rounded:
  inductor-cpu's fusion is POINTWISE_CPP (``roundoff.plan.fusion``; measured, torch 2.13).
  Division: Triton lowers fp32 ``a / b`` to PTX ``div.full.f32`` (a multiply by ``MUFU.RCP(b)``),
  so inductor-gpu computes it as RECIPROCAL_MULTIPLY (measured on an H200, torch 2.11 / Triton 3.6:
  bench/results/gpu_div_contraction.txt); Inductor C++ ``/`` is IEEE.
  Negation: Inductor writes ``-x`` in both backends, but Triton's frontend lowers a float unary
  minus to ``0.0 - x`` (``semantic.minus``), so ``-(+0.0)`` is ``+0.0`` on the GPU:
  inductor-gpu is SUBTRACT_FROM_ZERO (measured on an H200, torch 2.11 / Triton 3.6: random graph 2
  of bench/gpu_validation.py, ``-where(x0 > x1 - x1, x0, x1 - x1)``); the C++ backend's ``neg()``
  flips the sign bit (SIGN_FLIP, measured on CPU with torch 2.13). inductor-emulate keeps
  SIGN_FLIP: its fidelity is measured against CPU Inductor; on the GPU it would be
  SUBTRACT_FROM_ZERO too (``emulate_precision_casts`` does not touch negation).
  Matmul adds: Inductor's CPU post-grad pattern ``addmm`` computes a 2-D ``mm(a, b) + x`` as one
  ``addmm(x, a, b)``, one rounding (``MatmulAdd.ADDMM``; measured on CPU, torch 2.13). On a GPU the pattern
  is skipped when every user of the add is pointwise (``should_prefer_unfused_addmm``); inductor-gpu keeps
  SEPARATE until that is measured (``bench/gpu/session29_addmm.py``). inductor-emulate is measured on CPU:
  ADDMM.
- inductor-emulate: ``emulate_precision_casts=True`` rounds after every op inside the fused kernel
  and turns Triton FP fusion off. It leaves Triton's division alone (``div_rn`` needs the separate
  ``eager_numerics.division_rounding`` flag): RECIPROCAL_MULTIPLY, with no FMA since fusion is off.
  Every other preset divides IEEE (nothing measured says otherwise). This is the flag as torch 2.13
  implements it. On torch 2.9 Inductor's C++ backend fails to compile vectorized kernels under it,
  drops its roundings in scalar kernels (they equal inductor-cpu) and fuses user round-trip casts
  away; ``roundoff.compile`` repairs all three (``roundoff.compiler.emulate_casts``), so the preset
  describes what roundoff.compile enforces on either torch, not plain 2.9 Inductor.
- xla-*: torch_xla turns a Python scalar into an XLA constant of the *tensor's* element type
  (``GetIrValueForScalar(value, element_type)``), so it is rounded to bf16 before the opmath
  upcast: ROUND_TO_STORAGE (reasoned from torch_xla's lowering, not measured here: torch_xla 2.9
  needs torch 2.9 exactly). XLA applies no ATen decompositions of Inductor's kind.
- xla-neuron: the backend-specific ``use_opmathtype_for_compute`` (CPU || NEURON) proposed by
  ysiraichi in the revert thread and never merged. On Neuron, mul keeps its fp32 opmath (the
  Neuron team's reason for the revert: their compiler "expects mixed-precision accumulation"
  and saw Llama 3.1 70B / Mixtral 8x22B accuracy failures without the f32 converts); the
  Neuron compiler fuses and keeps those fp32 values through the fused region, which we model as
  FUSION_BOUNDARY. FMA: no source says Neuron contracts; NEVER.
- thunder-*: Thunder wraps every elementwise op (and reductions: ``ltorch.sum`` of bf16 converts
  to f32, ``prims.sum``, converts back) in ``convert_element_type`` to fp32 and back, but maps
  matmul/linear/conv/sdpa straight to prims with operands as stored: those classes are STORAGE
  (operands in the storage dtype even inside an nvFuser region; accumulation per
  ``matmul_accumulate``). nvFuser drops redundant cast chains inside a fusion (FUSION_BOUNDARY)
  and compiles with nvrtc, whose default is ``--fmad=true``: WITHIN_FUSION. Thunder's own
  decompositions into prims keep fp32 intermediates within a fusion, which the fused class-level
  model already gives, so no Inductor decompositions are applied. Python scalars join the fp32
  computation unrounded (Thunder's number type promotion).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from roundoff.policy.model import Policy
from roundoff.policy.serialize import policy_from_dict

_OPMATH_ALL = {
    "pointwise_arithmetic": "opmath",
    "pointwise_transcendental": "opmath",
    "reduction": "opmath",
    "matmul": "opmath",
    "convolution": "opmath",
    "attention": "opmath",
    "normalization": "opmath",
}
_THUNDER = {**_OPMATH_ALL, "matmul": "storage", "convolution": "storage", "attention": "storage"}
_NATIVE_BF16_MUL = {"aten.mul": {"compute": "storage"}}
_ROUNDED_SCALAR = {"scalars": "round_to_storage"}
_EAGER_CPU_SCALARS = {
    op: _ROUNDED_SCALAR
    for op in ("aten.add", "aten.sub", "aten.rsub", "aten.pow", "aten.fmod", "aten.remainder")
}
#: Eager CPU's ``embedding_dense_backward`` sums each row's gradients in the storage dtype, one by
#: one (``EmbeddingBackward`` on CPU: ``index_add_`` into the bf16/fp16 weight gradient; CUDA
#: accumulates in fp32), and so does ``index_put(accumulate=True)``, the gradient of ``w[idx]``
#: (``index_add`` and ``scatter_add`` sum in fp32 and round once): measured bit for bit in
#: tests/execute/test_eager_fidelity. On CUDA eager's and Inductor's index_put add atomically into
#: the 16-bit buffer as well (bench/results/h200-session16/index-put-cuda.txt).
_INDEX_PUT_STORAGE = {op: {"compute": "storage"} for op in ("aten.index_put", "aten._unsafe_index_put")}
#: Eager CPU's 16-bit ``index_add`` is its own kernel (a 1-D result summed one term at a time), and so is a bf16
#: one under Inductor, whose decomposition falls back to it (`roundoff.execute.native_kernels.NATIVE_STORAGE`).
_INDEX_ADD_STORAGE = {"aten.index_add": {"compute": "storage"}}
#: Eager CPU's BatchNorm in training with 16-bit weights normalizes with its mean and 1/std rounded to
#: 16 bits (``batch_norm_cpu_kernel``'s reduced-float path; float32 weights keep them float32); it and its
#: backward run as eager's kernels: measured bit for bit in tests/execute/test_eager_fidelity.
_BATCH_NORM_STORAGE = {op: {"compute": "storage"} for op in (
    "aten.native_batch_norm", "aten._native_batch_norm_legit", "aten._native_batch_norm_legit_functional",
    "aten.native_batch_norm_backward")}
#: Eager CPU's 16-bit ``_log_softmax``, ``nll_loss_forward`` and overlapping max-pool backward (windows sharing an
#: input add into it in 16 bits) are their own kernels too (6% of a log-softmax's elements an ulp or two off one
#: rounding of the fp32 op; tests/execute/test_eager_fidelity).
#: Eager's 16-bit regression losses compute each element's loss in 16 bits before reducing (CPU and CUDA;
#: `roundoff.execute.native_kernels.LOSSES`; tests/execute/test_eager_fidelity).
_LOSS_STORAGE = {f"aten.{op}": {"compute": "storage"} for op in (
    "mse_loss", "smooth_l1_loss", "huber_loss", "mse_loss_backward", "smooth_l1_loss_backward", "huber_loss_backward")}
_EAGER_CPU = {**_EAGER_CPU_SCALARS, "aten.embedding_dense_backward": {"compute": "storage"}, **_INDEX_PUT_STORAGE,
              **_INDEX_ADD_STORAGE,
              "aten.native_layer_norm_backward": {"compute": "storage"}, **_BATCH_NORM_STORAGE,
              "aten._log_softmax": {"compute": "storage"}, "aten.nll_loss_forward": {"compute": "storage"},
              "aten.max_pool2d_with_indices_backward": {"compute": "storage"}, **_LOSS_STORAGE}
#: Eager CUDA adds into a 16-bit index_put destination atomically, and computes its regression losses in 16 bits.
_EAGER_CUDA = {**_INDEX_PUT_STORAGE, **_LOSS_STORAGE}
_XLA_2_9_SOURCE = (
    "PyTorch/XLA r2.8-r2.9: elementwise lowerings use use_opmathtype_for_compute(); the revert of "
    "pytorch/xla#9663 kept it for mul in r2.9 (fixes #9699)"
)

PRESET_TABLE: tuple[Mapping[str, Any], ...] = (
    {
        "name": "eager",
        "description": "Eager PyTorch on CPU: every op upcast to fp32 opmath and rounded after each op",
        "source": "PyTorch ATen at::opmath_type / TensorIterator kernels (torch 2.9-2.13); CPU "
                  "scalars cast to the common dtype except mul/div (BinaryOpsKernel.cpp)",
        "compute": _OPMATH_ALL, "rounding": "every_op", "fusion": "none", "fma": "never",
        "scalars": "opmath_unrounded", "op_overrides": _EAGER_CPU, "decompositions": ["eager-cpu"],
    },
    {
        "name": "eager-cuda",
        "description": "Eager PyTorch on CUDA: as eager, every Python scalar unrounded in fp32",
        "source": "PyTorch ATen/native/cuda/Loops.cuh opmath_gpu_kernel_with_scalars "
                  "(torch 2.9-2.13)",
        "compute": _OPMATH_ALL, "rounding": "every_op", "fusion": "none", "fma": "never",
        "scalars": "opmath_unrounded", "op_overrides": _EAGER_CUDA, "decompositions": ["eager"],
    },
    {
        "name": "inductor-gpu",
        "description": "torch.compile on GPU: fused fp32 intermediates, ptxas contracts FMAs",
        "source": "torch 2.11 Inductor/Triton 3.6 defaults (emulate_precision_casts=False); "
                  "pytorch FMA issue, pytorch#122179",
        "compute": _OPMATH_ALL, "rounding": "fusion_boundary", "fusion": "pointwise_triton",
        "fma": "within_fusion", "scalars": "opmath_unrounded", "decompositions": ["inductor"],
        "division": "reciprocal_multiply", "negation": "subtract_from_zero",
        "op_overrides": {**_INDEX_PUT_STORAGE, **_INDEX_ADD_STORAGE},  # its Triton atomic_add adds into the bf16/fp16 buffer
    },
    {
        "name": "inductor-cpu",
        "description": "torch.compile on CPU: fused fp32 intermediates, no FMA contraction",
        "source": "torch 2.13 Inductor C++ backend, -ffp-contract=off "
                  "(TORCHINDUCTOR_CPP_ENABLE_FLOATING_POINT_CONTRACT_FLAG unset)",
        "compute": _OPMATH_ALL, "rounding": "fusion_boundary", "fusion": "pointwise_cpp",
        "fma": "never", "scalars": "opmath_unrounded", "decompositions": ["inductor"],
        "matmul_add": "addmm",
        # its index_put(accumulate=True) atomically adds into a bf16/fp16 buffer too, as eager does
        "op_overrides": {**_INDEX_PUT_STORAGE, **_INDEX_ADD_STORAGE},
    },
    {
        "name": "inductor-emulate",
        "description": "torch.compile with emulate_precision_casts: eager rounding inside kernels",
        "source": "torch._inductor.config.emulate_precision_casts=True (also disables Triton "
                  "FP fusion)",
        "compute": _OPMATH_ALL, "rounding": "every_op", "fusion": "pointwise", "fma": "never",
        "scalars": "opmath_unrounded", "decompositions": ["inductor"],
        "division": "reciprocal_multiply", "matmul_add": "addmm",
    },
    {
        "name": "xla-2.9",
        "description": "PyTorch/XLA 2.8-2.9: elementwise ops (mul included) in f32, converted back",
        "source": _XLA_2_9_SOURCE + "; allow_excess_precision=false",
        "compute": _OPMATH_ALL, "rounding": "every_op", "fusion": "pointwise", "fma": "never",
        "scalars": "round_to_storage",
    },
    {
        "name": "xla-2.10",
        "description": "PyTorch/XLA 2.10+: as 2.9 but bf16 mul computed natively in bf16",
        "source": "pytorch/xla master/r2.10: pytorch/xla#9663 removed use_opmathtype_for_compute "
                  "from mul (the revert restored it only on r2.9)",
        "compute": _OPMATH_ALL, "rounding": "every_op", "fusion": "pointwise", "fma": "never",
        "scalars": "round_to_storage", "op_overrides": _NATIVE_BF16_MUL,
    },
    {
        "name": "xla-neuron",
        "description": "Never-merged PyTorch/XLA proposal: opmath mul on Neuron, f32 kept in fusions",
        "source": "pytorch/xla revert thread of #9663 (ysiraichi: use_opmathtype_for_compute "
                  "only for CPU || NEURON; not merged), #9699",
        "compute": _OPMATH_ALL, "rounding": "fusion_boundary", "fusion": "pointwise",
        "fma": "never", "scalars": "round_to_storage",
    },
    {
        "name": "xla-excess-precision",
        "description": "PyTorch/XLA 2.10 with XLA dropping narrowing converts inside fusions",
        "source": "XLA --xla_allow_excess_precision (default true) over pytorch/xla r2.10 lowering",
        "compute": _OPMATH_ALL, "rounding": "fusion_boundary", "fusion": "pointwise",
        "fma": "never", "scalars": "round_to_storage", "op_overrides": _NATIVE_BF16_MUL,
    },
    {
        "name": "thunder-nvfuser",
        "description": "Thunder + nvFuser: elementwise upcast to f32, matmul/conv/sdpa as stored",
        "source": "Lightning-AI/lightning-thunder#318, #207 (matmul/linear in nvFuser); "
                  "thunder/clang elementwise wrappers; nvrtc default --fmad=true",
        "compute": _THUNDER, "rounding": "fusion_boundary", "fusion": "pointwise",
        "fma": "within_fusion", "scalars": "opmath_unrounded",
    },
    {
        "name": "thunder-autocast",
        "description": "Thunder + nvFuser under autocast: matmul/linear/sdpa inputs downcast to bf16",
        "source": "Lightning-AI/lightning-thunder autocast transform (auto-downcast of linear, "
                  "matmul, sdpa inputs; IvanYashchuk in the #318/#207 thread)",
        "compute": _THUNDER, "rounding": "fusion_boundary", "fusion": "pointwise",
        "fma": "within_fusion", "scalars": "opmath_unrounded", "matmul_input": "bf16",
    },
    {
        "name": "fp32",
        "description": "Reference: every floating tensor promoted to fp32, rounded after each op",
        "source": "roundoff reference run (eager PyTorch semantics in fp32)",
        "compute": _OPMATH_ALL, "rounding": "every_op", "fusion": "none", "fma": "never",
        "storage": "fp32",
    },
    {
        "name": "fp64",
        "description": "Oracle: every floating tensor promoted to fp64, fp64 accumulation",
        "source": "roundoff fp64 oracle (eager PyTorch semantics in fp64)",
        "compute": _OPMATH_ALL, "rounding": "every_op", "fusion": "none", "fma": "never",
        "storage": "fp64", "matmul_accumulate": "fp64", "reduction_accumulate": "fp64",
    },
)  # fmt: skip


def _load(table: tuple[Mapping[str, Any], ...]) -> Mapping[str, Policy]:
    presets: dict[str, Policy] = {}
    for entry in table:
        policy = policy_from_dict(entry)
        if policy.name in presets:
            raise ValueError(f"preset table: {policy.name!r} appears twice; keep one entry")
        presets[policy.name] = policy
    return MappingProxyType(presets)


PRESETS: Mapping[str, Policy] = _load(PRESET_TABLE)
