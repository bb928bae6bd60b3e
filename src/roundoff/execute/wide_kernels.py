"""Evaluations of ops whose kernels reject the dtype the emulation holds values in.

The fp64 oracle runs every op in float64 and the emulator in fp32 containers, but some kernels take only
narrow dtypes: ``aten._grouped_mm`` (transformers' MoE experts; CPU: fp32/bf16/fp16), the CUDA fused
attention kernels (flash/cuDNN: fp16/bf16; efficient: no fp64), ``aten._scaled_mm`` (fp8 operands),
oneDNN's LSTM layer ``aten.mkldnn_rnn_layer`` and its backward (CPU ``nn.LSTM`` in bf16/fp16: no fp64).
Each gets an explicit decomposition into ops every dtype has (matmuls, softmax), evaluated in the
dtype of its operands. Numeric contract: the decomposition computes the op's mathematical definition
in the operands' dtype (fp64: one fp64 rounding per elementary op; the fused kernels' online-softmax
order and fp32 accumulators are not reproduced: they are "accumulate, round once" ops). Attention
with dropout (random numbers drawn inside the kernel) has no such evaluation: `NoWideKernelError`.

`call(target, args, kwargs)` runs `target` for the emulation: in fp64 the decomposition where one
exists (the attention kernels in fp32 too); otherwise the kernel, falling back to the decomposition when the kernel rejects the dtype;
an op with neither raises `NoWideKernelError` naming the op and a workaround.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch.fx.node import map_aggregate

from roundoff.capture.uninitialised import UNINITIALISED

_aten = torch.ops.aten


class NoWideKernelError(ValueError):
    """An op that has no kernel for the dtype roundoff evaluates it in (fp64 for the oracle) and no
    decomposition roundoff knows: names the op and what to do instead."""

    def __init__(self, op: Any, dtype: torch.dtype, why: str, workaround: str) -> None:
        name = str(dtype).removeprefix("torch.")
        super().__init__(f"op {op} cannot be evaluated in {name}: {why}; {workaround}")
        self.op = op


# (not "check against a policy instead": every check runs the fp64 oracle, its screen too; trial 89)
_WORKAROUND = ("capture the model with a plain implementation of this op (no fused or quantized kernels; for a "
               "transformers model's attention, attn_implementation=\"eager\"): every check runs the fp64 oracle")


def _float_dtype(args: Any) -> torch.dtype | None:
    found: list[torch.dtype] = []
    map_aggregate(
        args, lambda a: found.append(a.dtype) if isinstance(a, torch.Tensor) and a.is_floating_point() else None
    )
    return torch.float64 if torch.float64 in found else (found[0] if found else None)


# -- grouped matmul ---------------------------------------------------------------------------------
def grouped_mm(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor | None = None,
               bias: torch.Tensor | None = None, out_dtype: torch.dtype | None = None) -> torch.Tensor:
    """``aten._grouped_mm`` as a loop of matmuls in the operands' dtype (torch's definition):

    2d x 3d: rows of `a` grouped by `offs` (group g: rows offs[g-1]:offs[g]) times ``b[g]``;
    3d x 2d: ``a[g]`` times the columns offs[g-1]:offs[g] of `b`; 2d x 2d: ``a[:, K_g] @ b[K_g, :]`` per
    group of the contraction dimension, stacked; 3d x 3d: a batched matmul. Rows/columns past
    ``offs[-1]`` (uninitialized in torch's kernel) are 0. `out_dtype` is ignored (the value stays in
    the operands' dtype; the plan rounds it); `bias` is added per group.
    """
    dt = torch.promote_types(a.dtype, b.dtype)
    a, b = a.to(dt), b.to(dt)
    bounds = [0, *offs.tolist()] if offs is not None else None
    if a.dim() == 3 and b.dim() == 3:
        out = torch.bmm(a, b)
        return out + bias.to(dt).unsqueeze(1) if bias is not None else out
    if bounds is None:
        raise ValueError(f"_grouped_mm of a {a.dim()}d and a {b.dim()}d operand needs offs")
    groups = list(zip(bounds[:-1], bounds[1:]))
    if a.dim() == 2 and b.dim() == 3:
        out = a.new_zeros(a.shape[0], b.shape[-1])
        for g, (s, e) in enumerate(groups):
            out[s:e] = a[s:e] @ b[g] + (bias[g].to(dt) if bias is not None else 0)
        return out
    if a.dim() == 3 and b.dim() == 2:
        out = a.new_zeros(a.shape[1], b.shape[-1])
        for g, (s, e) in enumerate(groups):
            out[:, s:e] = a[g] @ b[:, s:e] + (bias[g, s:e].to(dt) if bias is not None else 0)
        return out
    out = a.new_zeros(len(groups), a.shape[0], b.shape[-1])  # 2d x 2d: groups along K
    for g, (s, e) in enumerate(groups):
        out[g] = a[:, s:e] @ b[s:e] + (bias[g].to(dt) if bias is not None else 0)
    return out


# -- scaled (fp8) matmul ----------------------------------------------------------------------------
def scaled_mm(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
              bias: torch.Tensor | None = None, scale_result: torch.Tensor | None = None,
              out_dtype: torch.dtype | None = None, use_fast_accum: bool = False) -> torch.Tensor:
    """``aten._scaled_mm``: ``(a * scale_a) @ (b * scale_b) + bias`` in the widest float dtype among the
    operands (fp32 at least; tensor-wise scales are scalars, row-wise ones ``[M, 1]`` and ``[1, N]``).
    Block-wise (MX, e8m0) scales are refused. `out_dtype` is left to the plan's rounding."""
    if scale_a.numel() not in (1, a.shape[0]) or scale_b.numel() not in (1, b.shape[1]):
        raise NoWideKernelError(_aten._scaled_mm.default, torch.float64,
                                "block-wise scales have no decomposition in roundoff", _WORKAROUND)
    dt = torch.float64 if torch.float64 in (a.dtype, b.dtype, scale_a.dtype, scale_b.dtype) else torch.float32
    out = (a.to(dt) * scale_a.to(dt).reshape(-1, 1)) @ (b.to(dt) * scale_b.to(dt).reshape(1, -1))
    out = out + bias.to(dt) if bias is not None else out
    return out * scale_result.to(dt) if scale_result is not None else out


# -- fused attention --------------------------------------------------------------------------------
def _no_dropout(op: Any, dropout_p: float, dtype: torch.dtype) -> None:
    if dropout_p:
        raise NoWideKernelError(
            op, dtype, f"attention dropout (p={dropout_p}) draws its random numbers inside the kernel",
            "set the attention dropout to 0 (config.attention_dropout=0.0) or check the model in eval mode")


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None, is_causal: bool,
              scale: float | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(softmax(q k^T * scale + bias) v, logsumexp)`` in `q`'s dtype; causal is top-left aligned
    (torch's ``is_causal``); grouped-query heads are repeated; default scale ``1/sqrt(E)``."""
    if k.shape[-3] != q.shape[-3]:  # GQA: each key/value head serves q_heads/kv_heads query heads
        reps = q.shape[-3] // k.shape[-3]
        k, v = k.repeat_interleave(reps, -3), v.repeat_interleave(reps, -3)
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ k.transpose(-1, -2)) * scale
    if is_causal:
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~keep, -math.inf)
    if bias is not None:
        scores = scores.masked_fill(~bias, -math.inf) if bias.dtype == torch.bool else scores + bias.to(scores.dtype)
    lse = torch.logsumexp(scores, -1)
    return torch.softmax(scores, -1) @ v, lse


def attention_backward(grad: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                       bias: torch.Tensor | None, is_causal: bool, scale: float | None) -> tuple:
    """Gradients of `attention` (q, k, v, and the float bias or None), by autograd through it (also
    inside ``torch.inference_mode``, where check runs: its tensors are copied out of it first)."""
    with torch.inference_mode(False), torch.enable_grad():
        leaves = [_grad_leaf(t) for t in (q, k, v)]
        fb = _grad_leaf(bias.to(q.dtype)) if bias is not None and bias.is_floating_point() else None
        out, _ = attention(*leaves, fb if fb is not None else bias, is_causal, scale)
        want = leaves + ([fb] if fb is not None else [])
        grads = torch.autograd.grad(out, want, grad.to(out.dtype), allow_unused=True)
    return (*grads[:3], grads[3] if fb is not None else None)


def _grad_leaf(t: torch.Tensor) -> torch.Tensor:
    """`t` as a new autograd leaf (an inference tensor cannot be one: it is copied)."""
    return (t.clone() if t.is_inference() else t.detach()).requires_grad_()


def _empty(q: torch.Tensor, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    return torch.empty(0, dtype=dtype, device=q.device)


def flash_forward(q, k, v, dropout_p=0.0, is_causal=False, return_debug_mask=False, *, scale=None):  # noqa: ANN001, ANN201
    """``_scaled_dot_product_flash_attention``: (out, lse, cum_seq_q, cum_seq_k, max_q, max_k, rng, unused, debug)."""
    _no_dropout(_aten._scaled_dot_product_flash_attention.default, dropout_p, q.dtype)
    out, lse = attention(q, k, v, None, is_causal, scale)
    e = _empty(q)
    return out, lse, e, e, q.shape[-2], k.shape[-2], e, e, _empty(q, q.dtype)


def flash_backward(grad, q, k, v, out, lse, cum_q, cum_k, max_q, max_k, dropout_p, is_causal,  # noqa: ANN001, ANN201
                   seed, offset, *, scale=None):
    _no_dropout(_aten._scaled_dot_product_flash_attention_backward.default, dropout_p, q.dtype)
    return attention_backward(grad, q, k, v, None, is_causal, scale)[:3]


def efficient_forward(q, k, v, bias, compute_lse, dropout_p=0.0, is_causal=False, *, scale=None):  # noqa: ANN001, ANN201
    """``_scaled_dot_product_efficient_attention``: (out, lse, philox_seed, philox_offset); lse padded to a
    multiple of 32 rows as the CUDA kernel's (padding 0 here; the kernel's is unspecified)."""
    _no_dropout(_aten._scaled_dot_product_efficient_attention.default, dropout_p, q.dtype)
    out, lse = attention(q, k, v, bias, is_causal, scale)
    lse = torch.nn.functional.pad(lse, (0, -lse.shape[-1] % 32)) if compute_lse else _empty(q, q.dtype)
    return out, lse, _empty(q), _empty(q)


def efficient_backward(grad, q, k, v, bias, out, lse, seed, offset, dropout_p, mask, is_causal=False,  # noqa: ANN001, ANN201
                       *, scale=None):
    _no_dropout(_aten._scaled_dot_product_efficient_attention_backward.default, dropout_p, q.dtype)
    gq, gk, gv, gb = attention_backward(grad, q, k, v, bias, is_causal, scale)
    return tuple(g if m else None for g, m in zip((gq, gk, gv, gb), mask))


def cudnn_forward(q, k, v, bias, compute_lse, dropout_p=0.0, is_causal=False, return_debug_mask=False,  # noqa: ANN001, ANN201
                  *, scale=None):
    """``_scaled_dot_product_cudnn_attention``: the flash outputs, logsumexp ``[B, H, L, 1]``."""
    _no_dropout(_aten._scaled_dot_product_cudnn_attention.default, dropout_p, q.dtype)
    out, lse = attention(q, k, v, bias, is_causal, scale)
    e = _empty(q)
    return out, lse.unsqueeze(-1), e, e, q.shape[-2], k.shape[-2], e, e, _empty(q, q.dtype)


def cudnn_backward(grad, q, k, v, out, lse, seed, offset, bias, cum_q, cum_k, max_q, max_k, dropout_p,  # noqa: ANN001, ANN201
                   is_causal, *, scale=None):
    _no_dropout(_aten._scaled_dot_product_cudnn_attention_backward.default, dropout_p, q.dtype)
    return attention_backward(grad, q, k, v, bias if bias is not None and bias.numel() else None,
                              is_causal, scale)[:3]


# -- oneDNN's LSTM layer (torch's CPU nn.LSTM in bf16/fp16 runs it) ---------------------------------------
def lstm_layer(x, w_ih, w_hh, b_ih, b_hh, hx, cx, reverse, batch_sizes, mode, hidden_size, num_layers,  # noqa: ANN001, ANN201
               has_biases, bidirectional, batch_first, train):
    """``aten.mkldnn_rnn_layer``: one LSTM layer and direction by nn.LSTM's definition, step by step over
    the time-major input ``(T, B, I)`` (gates i, f, g, o of ``x W_ih^T + b_ih + h W_hh^T + b_hh``; ``c =
    f c + i g``, ``h = o tanh(c)``), backwards in time where `reverse`; (output, h, c, an empty workspace)."""
    if mode != 2 or list(batch_sizes):  # (only LSTM, unpacked, reaches this kernel)
        raise NoWideKernelError(_aten.mkldnn_rnn_layer.default, x.dtype, f"mode {mode} or packed sequences",
                                _WORKAROUND)
    h, c, outs = hx, cx, [None] * x.shape[0]
    for t in reversed(range(x.shape[0])) if reverse else range(x.shape[0]):
        gates = x[t] @ w_ih.t() + h @ w_hh.t()
        if has_biases:
            gates = gates + b_ih + b_hh
        i, f, g, o = gates.chunk(4, -1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        outs[t] = h
    return torch.stack(outs), h, c, torch.empty(0, dtype=torch.uint8, device=x.device)


def lstm_layer_backward(x, w_ih, w_hh, b_ih, b_hh, hx, cx, output, hy, cy, grad_output, grad_hy, grad_cy,  # noqa: ANN001, ANN201
                        reverse, mode, hidden_size, num_layers, has_biases, train, bidirectional, batch_sizes,
                        batch_first, workspace):
    """``aten.mkldnn_rnn_layer_backward``: the gradients of `lstm_layer` (input, w_ih, w_hh, b_ih, b_hh, hx,
    cx) by autograd through it; an absent incoming gradient is zero."""
    with torch.inference_mode(False), torch.enable_grad():
        leaves = [_grad_leaf(t) for t in (x, w_ih, w_hh, b_ih, b_hh, hx, cx)]
        outs = lstm_layer(*leaves, reverse, batch_sizes, mode, hidden_size, num_layers, has_biases, bidirectional,
                          batch_first, train)[:3]
        pairs = [(o, g) for o, g in zip(outs, (grad_output, grad_hy, grad_cy)) if g is not None]
        grads = torch.autograd.grad([o for o, _ in pairs], leaves, [g.to(o.dtype) for o, g in pairs],
                                    allow_unused=True)
    return tuple(torch.zeros_like(t) if g is None else g for g, t in zip(grads, leaves))


#: Decompositions by op, each in the dtype of its operands (see the module docstring).
DECOMPOSITIONS: dict[Any, Callable[..., Any]] = {
    _aten._grouped_mm.default: grouped_mm,
    _aten._scaled_mm.default: scaled_mm,
    _aten._scaled_dot_product_flash_attention.default: flash_forward,
    _aten._scaled_dot_product_flash_attention_backward.default: flash_backward,
    _aten._scaled_dot_product_efficient_attention.default: efficient_forward,
    _aten._scaled_dot_product_efficient_attention_backward.default: efficient_backward,
    _aten._scaled_dot_product_cudnn_attention.default: cudnn_forward,
    _aten._scaled_dot_product_cudnn_attention_backward.default: cudnn_backward,
    _aten.mkldnn_rnn_layer.default: lstm_layer,
    _aten.mkldnn_rnn_layer_backward.default: lstm_layer_backward,
}


#: The CUDA fused attention kernels: decomposed in fp32 too (the emulator's container dtype), so the
#: emulation is "accumulate in fp32, round once" whatever fp32 paths a build's kernels have (on the H200,
#: torch 2.11, a bf16 Llama's loss through cuDNN attention emulated with cuDNN's own fp32 path was 0.5%
#: away from both real eager and the oracle).
_ATTENTION = frozenset(k for k in DECOMPOSITIONS if "attention" in str(k))


_CONVERT = torch.ops.prims.convert_element_type.default


def _rejects_dtype(exc: RuntimeError) -> bool:
    text = str(exc).lower()
    return any(w in text for w in ("double", "float64", "dtype", "float8", "only support", "scaling configuration",
                                   "expected mat_a", "not implemented for", "float tensor", "32-bit", "16-bit"))


def _convert_element_type(a: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``prims.convert_element_type``'s own aten implementation (an ``empty_like`` and a ``copy_``),
    without the prim's Python dispatch (~0.2 ms a call, many times the kernel at model sizes)."""
    return torch.empty_like(a, device=a.device, dtype=dtype).copy_(a)


def _overloads(names: frozenset[str]) -> frozenset[Any]:
    packets = [getattr(torch.ops.aten, n) for n in names if hasattr(torch.ops.aten, n)]
    return frozenset(getattr(p, o) for p in packets for o in p.overloads())


#: `roundoff.capture.uninitialised.UNINITIALISED`'s overloads: every run fills what they allocate with NaN
_UNINITIALISED = _overloads(UNINITIALISED)


def call(target: Any, args: tuple, kwargs: dict) -> Any:
    """`target(*args, **kwargs)`, with the decompositions above where the kernel cannot take the dtype
    (fp64 always decomposes, so the oracle does not depend on which kernels a build has); memory an
    ``empty`` allocates is filled with NaN, the same in every run (torch's deterministic mode does so)."""
    if target in _UNINITIALISED:
        out = target(*args, **kwargs)
        return out.fill_(math.nan) if isinstance(out, torch.Tensor) and out.is_floating_point() else out
    if target is _CONVERT and not kwargs and len(args) == 2 and isinstance(args[0], torch.Tensor):
        return _convert_element_type(*args)
    decomposition = DECOMPOSITIONS.get(target)
    if decomposition is not None:
        dtype = _float_dtype((args, kwargs))
        if dtype == torch.float64 or (dtype == torch.float32 and target in _ATTENTION):
            return decomposition(*args, **kwargs)
    try:
        if target is _aten.mkldnn_rnn_layer.default:  # its workspace, which its backward reads, only in grad mode
            with torch.inference_mode(False), torch.enable_grad():
                return target(*args, **kwargs)
        return target(*args, **kwargs)
    except RuntimeError as exc:
        dtype = _float_dtype((args, kwargs))
        if dtype is None or not _rejects_dtype(exc):
            raise
        if decomposition is not None:
            return decomposition(*args, **kwargs)
        first = (str(exc).strip().splitlines() or [""])[0][:160]
        raise NoWideKernelError(target, dtype, f"its kernel refuses it ({first})", _WORKAROUND) from None
