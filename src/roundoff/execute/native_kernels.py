"""Which ops the emulation runs as torch's own kernel on their 16-bit operands, and when.

Numeric contract: where every float operand is held in the 16-bit dtype the result is rounded to, an op
of `NATIVE_KERNELS` under fp32 compute, or of `NATIVE_STORAGE` under STORAGE compute
(`accumulates_in_storage`), is evaluated by torch's kernel in that dtype: bit for bit what eager runs
(and Inductor's extern kernels), its summation order and any rounding it does inside included, instead
of one rounding of an fp32 result (`roundoff.execute.node_numerics`, step 3).
"""

from __future__ import annotations

import torch
import torch.fx

from roundoff.capture.program import NODE_ID
from roundoff.execute.formats import HELD_NARROW
from roundoff.plan.model import NodeDecision, Plan
from roundoff.policy.model import FusionModel

_aten = torch.ops.aten
#: Ops whose fp32-compute emulation is torch's own kernel run on the 16-bit operands, where every float
#: operand is held in the dtype the result is rounded to: what eager and Inductor (an extern kernel) run.
#: Their libraries accumulate in fp32 and round once, in their own order: CPU oneDNN's fp16 convolution
#: backward differs from an fp32 convolution rounded once in half of its elements (trial 65).
#: Eager CPU's 16-bit GroupNorm computes its statistics in fp32 and normalizes in its own order: an fp32
#: ``native_group_norm`` rounded once differs from it in 2 of 16384 fp16 elements (trial 80: a UNet's
#: GroupNorm, the difference carried through its attention into most gradient elements); its backward
#: likewise (bf16: the input gradient). Inductor decomposes both: under its policies they are no node.
NATIVE_KERNELS = (_aten.mm.default, _aten.bmm.default, _aten.addmm.default, _aten.convolution.default,
                  _aten.convolution_backward.default, _aten.native_group_norm.default,
                  _aten.native_group_norm_backward.default)
#: torch's CPU scaled-dot-product attention (flash attention), forward and backward: what eager runs and
#: Inductor calls as a fallback on CPU. On bf16/fp16 it rounds the unnormalized attention weights to that dtype
#: before the V product and orders its sums in blocks (measured, torch 2.13: its output 2.28e-4 off fp64,
#: fp32 rounded once 1.92e-4; its gradients 1.5x fp32's; trial 79: an OPT step's weight gradients 2-11x), so
#: where its 16-bit results are rounded it runs as it is, its fp32 logsumexp beside them (`attention_native`).
NATIVE_ATTENTION = (_aten._scaled_dot_product_flash_attention_for_cpu.default,
                    _aten._scaled_dot_product_flash_attention_for_cpu_backward.default)
#: Ops whose eager kernel accumulates in the storage dtype itself: under STORAGE compute they run
#: that kernel (bit for bit what eager returns), not one rounding of an fp32 result.
#: ``index_put(accumulate=True)`` adds into the bf16/fp16 destination one element at a time, rounding
#: every sum, on CPU (a loop) and on CUDA (atomic adds) (trial 49: an MoE's ``w1[idx]`` gradient over
#: 4096 tokens, 14% off fp64); on CPU ``scatter_add`` sums in fp32 and rounds once, as the fp32 path does.
#: Eager CPU's 16-bit BatchNorm (16-bit weights, training) rounds the batch's mean and 1/std to the input's
#: dtype and normalizes with the rounded values (trial 65: emulated eager's conv gradients 1.3-1.5x
#: optimistic on a bf16 CNN); its running statistics, updated in place, are copies in the emulation.
#: Its backward (its own order of operations) is run as it is too.
BATCH_NORMS = (_aten.native_batch_norm.default, _aten._native_batch_norm_legit.default,
               _aten._native_batch_norm_legit_functional.default)
#: Eager's 16-bit ``mse_loss``, ``smooth_l1_loss`` and ``huber_loss`` (CPU and CUDA) compute each element's
#: loss in the 16-bit dtype, a rounding per operation (``diff * diff`` on ``c10::Half``), and reduce that
#: 16-bit tensor: an fp16 squared difference past 65504 is inf before the mean (trial 72: eager's fp16
#: ``mse_loss`` is inf where one rounding of the fp32 op is 1e4); their backward kernels likewise.
LOSSES = (_aten.mse_loss.default, _aten.smooth_l1_loss.default, _aten.huber_loss.default,
          _aten.mse_loss_backward.default, _aten.smooth_l1_loss_backward.default, _aten.huber_loss_backward.default)
#: Eager CPU's 16-bit ``_log_softmax`` differs from one rounding of the fp32 op in 6% of its elements (by an
#: ulp or two: its kernel's own order of operations), and its ``nll_loss_forward`` sums in its own order; an
#: overlapping max pool's backward adds the gradients of the windows sharing an input into it in 16 bits.
#: Eager CPU's 16-bit ``index_add`` sums into its result one term at a time for some shapes (a 1-D result; a
#: 3-D one along its middle dimension) and in fp32, rounded once, for others (a 2-D one; measured, torch 2.13,
#: tests/execute/test_eager_fidelity); its own kernel is run, whatever the shape (trial 92: a GAT's
#: 1-D softmax denominators, emulated as one fp32 sum, put eager's gradients 50x closer to fp64 than they are).
NATIVE_STORAGE = (_aten.embedding_dense_backward.default, _aten.index_put.default, _aten._unsafe_index_put.default,
                  _aten.index_add.default,
                  _aten.native_layer_norm_backward.default, *BATCH_NORMS, _aten.native_batch_norm_backward.default,
                  _aten._log_softmax.default, _aten.nll_loss_forward.default,
                  _aten.max_pool2d_with_indices_backward.default, *LOSSES)
#: Ops run as eager runs them on their operands as held, whatever the plan's compute dtype: oneDNN's LSTM
#: layer, which CPU nn.LSTM runs in bf16/fp16 (a fused kernel roundoff does not model op by op; trial 89:
#: emulated from fp32 operands, a bf16 ASR model's LSTM gradients were 0.71-0.96x real eager's error).
NATIVE_AS_HELD = (_aten.mkldnn_rnn_layer.default, _aten.mkldnn_rnn_layer_backward.default)
#: The multi-output ops among them (their results' ``getitem`` nodes are judged by the op's own error).
SUMS_IN_STORAGE = frozenset(t for t in NATIVE_STORAGE if len(t._schema.returns) > 1)
#: Ops whose eager kernel computes in 16 bits inside, element values or sums, where a policy's
#: decomposition computes their pieces in fp32: eager can overflow where those pieces do not (trial 72:
#: inductor-cpu's fp16 ``mse_loss``; `roundoff.analyze.check` runs real eager where a program has one).
SIXTEEN_BIT_INSIDE = frozenset((*LOSSES, _aten.native_layer_norm_backward.default))


def storage_of(node: torch.fx.Node) -> torch.dtype | tuple | None:
    """The program's dtype of `node`'s value (a tuple for multi-output nodes), from meta["val"]."""
    val = node.meta.get("val")
    if isinstance(val, (tuple, list)):
        return tuple(v.dtype if isinstance(v, torch.Tensor) else None for v in val)
    return val.dtype if isinstance(val, torch.Tensor) else None


def accumulates_in_storage(node: torch.fx.Node, d: NodeDecision) -> bool:
    """Whether `node` runs a `NATIVE_STORAGE` kernel in its 16-bit storage dtype under decision `d`,
    summing its terms into that dtype one at a time (a rounding per addition): STORAGE compute, and a
    rounded result in that dtype (of a multi-output op, every float output in it: their ``getitem``
    nodes round them, to values already held in it)."""
    if node.target not in NATIVE_STORAGE or d.compute_dtype not in HELD_NARROW:
        return False
    if d.storage_dtype is not None:
        return d.rounds_result and d.storage_dtype == d.compute_dtype
    outs = storage_of(node)
    return isinstance(outs, tuple) and all(o in (None, d.compute_dtype) for o in outs) and any(outs)


def one_narrow(storage: torch.dtype | tuple | None) -> torch.dtype | None:
    """The bf16/fp16 dtype a value (every float output of a multi-output op) is stored in, else None."""
    dtypes = set(storage) - {None} if isinstance(storage, tuple) else {storage}
    return next(iter(dtypes)) if len(dtypes) == 1 and dtypes <= set(HELD_NARROW) else None


def rounds_results(node: torch.fx.Node, d: NodeDecision, plan: Plan) -> bool:
    """Whether `node`'s result is rounded to its storage: by `d`, or for a multi-output op by the decision
    of every ``getitem`` that reads it."""
    if d.rounds_result:
        return True
    items = [plan.decisions.get(u.meta.get(NODE_ID, "")) for u in node.users]
    return isinstance(storage_of(node), tuple) and bool(items) and all(i is not None and i.rounds_result for i in items)


def attention_native(node: torch.fx.Node, d: NodeDecision, plan: Plan) -> bool:
    """Whether `node`, a `NATIVE_ATTENTION` op under fp32 compute, runs as torch's kernel: under a policy of a
    CPU run (a GPU policy's Triton model leaves it to its own kernels), where its results are one 16-bit dtype
    and fp32 (the logsumexp) and every ``getitem`` that reads a 16-bit one rounds it."""
    outs = storage_of(node)
    if (node.target not in NATIVE_ATTENTION or plan.policy.fusion is FusionModel.POINTWISE_TRITON
            or d.compute_dtype != torch.float32 or d.input_format or not isinstance(outs, tuple)):
        return False
    narrow = {o for o in outs if o is not None and o != torch.float32}
    if len(narrow) != 1 or not narrow <= set(HELD_NARROW):
        return False
    items = [(u, plan.decisions.get(u.meta.get(NODE_ID, ""))) for u in node.users]
    return bool(items) and all(i is not None and (i.rounds_result or outs[u.args[1]] == torch.float32)
                               for u, i in items if isinstance(u.args[1], int) and u.args[1] < len(outs))
