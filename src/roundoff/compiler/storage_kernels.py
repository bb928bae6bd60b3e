"""Eager kernels that sum in 16 bits, which a compiled program cannot be made to reproduce.

A policy that models eager (``eager``, ``eager-cpu``) computes some ops in their 16-bit storage dtype
(``compute = "storage"``: `roundoff.execute.native_kernels.NATIVE_STORAGE`): eager CPU's LayerNorm
backward sums the weight and bias gradients in bf16/fp16, its embedding backward each row's gradient,
its 16-bit log-softmax and losses compute in 16 bits inside. Inductor decomposes these ops into fp32
parts and rounds once, and no setting turns that off, so ``roundoff.compile(fn, policy="eager")``
computes them otherwise than eager does: closer to fp64 (trial 78: a bf16 GPT-NeoX step's LayerNorm weight
and bias gradients differed from eager's in 41-49 of 64 elements, about half eager's error, without a word)
or further (trial 84: a bf16 Swin's cross-entropy, its parts each rounded to bf16 as eager rounds an op, 4x
eager's error).
`storage_kernel_items` names those a compiled graph calls, for a `RoundoffEnforcementWarning`.
"""

from __future__ import annotations

import torch
import torch.fx

from roundoff.policy.decide import override_for
from roundoff.policy.model import ComputePrecision, Policy

#: torch function (as Dynamo's graph calls it) -> (the aten ops its eager kernels sum in storage, what they do)
_KERNELS: dict[str, tuple[tuple[str, ...], str]] = {
    "layer_norm": (("aten.native_layer_norm_backward",), "its backward sums the weight and bias gradients"),
    "embedding": (("aten.embedding_dense_backward",), "its backward sums each row's gradient"),
    "batch_norm": (("aten.native_batch_norm", "aten._native_batch_norm_legit", "aten.native_batch_norm_backward"),
                   "it rounds the batch statistics, and its backward sums the gradients,"),
    "max_pool2d": (("aten.max_pool2d_with_indices_backward",), "its backward adds overlapping windows' gradients"),
    "log_softmax": (("aten._log_softmax",), "it computes"),  # (forward kernels from here on)
    "cross_entropy": (("aten._log_softmax", "aten.nll_loss_forward"), "its log-softmax and sum compute"),
    "mse_loss": (("aten.mse_loss",), "it squares and sums"),
    "smooth_l1_loss": (("aten.smooth_l1_loss",), "it computes"),
    "huber_loss": (("aten.huber_loss",), "it computes"),
}


#: A measured case beside the kernels it was measured on (trial 92: an Olmo2's embedding warning cited the Swin's
#: cross-entropy, where its gradient was equal to eager's).
_EXAMPLES = {name: " (a bf16 Swin's cross-entropy: 4x eager's error)" for name in ("cross_entropy", "log_softmax")}


def _in_storage(policy: Policy, op: str) -> bool:
    """Whether `policy` computes aten packet `op` (its default overload) in its storage dtype."""
    return override_for(policy, f"{op}.default").compute is ComputePrecision.STORAGE


def storage_kernel_items(policy: Policy, gm: torch.fx.GraphModule) -> list[str]:
    """One line per torch function of Dynamo's graph `gm` whose eager kernel `policy` computes in its 16-bit
    storage dtype (module doc), called on a bf16/fp16 value: the compiled program computes it in fp32."""
    found: dict[str, str] = {}
    for n in gm.graph.nodes:
        name = getattr(n.target, "__name__", None) if n.op == "call_function" else None
        if name not in _KERNELS or name in found:
            continue
        ops, what = _KERNELS[name]
        wide = n.kwargs.get("dtype")  # (``log_softmax(x, dim, dtype=torch.float32)``: eager computes in that dtype)
        if isinstance(wide, torch.dtype) and wide not in (torch.float16, torch.bfloat16):
            continue
        values = [v for a in n.all_input_nodes if isinstance(v := a.meta.get("example_value"), torch.Tensor)]
        narrow = {v.dtype for v in values if v.dtype in (torch.float16, torch.bfloat16)}
        out = n.meta.get("example_value")  # differentiated (a backward kernel matters only then): not under no_grad
        differentiated = isinstance(out, torch.Tensor) and out.requires_grad
        if narrow and any(_in_storage(policy, op) and (differentiated or "backward" not in op) for op in ops):
            found[name] = (f"eager's {name} ({', '.join(sorted(str(d).removeprefix('torch.') for d in narrow))}): {what} "
                           "in that dtype itself, which Inductor computes from parts, each rounded as the policy "
                           "rounds an op, so the compiled values differ from eager's, closer to fp64 or further"
                           f"{_EXAMPLES.get(name, '')}; `roundoff check -p {policy.name}` emulates eager's kernel")
    return list(found.values())
