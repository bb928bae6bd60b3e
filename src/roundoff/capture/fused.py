"""Keep the fused kernels eager runs when make_fx would decompose them (torch 2.9).

Some aten ops have both a backend kernel (CPU, CUDA) and a ``CompositeImplicitAutograd``
decomposition; ``silu_backward`` is one (``math_silu_backward``). Eager autograd runs the backend
kernel: on bf16/fp16 it computes in fp32 and rounds once. torch 2.9's make_fx (``proxy_call``) applies
the decomposition to every such op regardless, so a captured backward computed
``grad * (sig * (1 + x * (1 - sig)))`` in bf16 with a rounding after each op, and about half of a zoo
block's ``grad_x`` differed from eager by one bf16 ulp. torch 2.13 asks first whether autograd would
have decomposed (``proxy_tensor.autograd_would_have_decomposed``: only where the tensor's device has
no backend kernel); the shim below applies the same rule on torches that lack it.

Detected by feature, not version: the shim is active only where ``autograd_would_have_decomposed``
is missing, only inside `eager_kernels_kept`, and only for ``OpOverload.decompose`` calls made with
make_fx's proxy mode innermost (FakeTensor's own use of ``decompose``, for shape propagation of ops
without a meta kernel, is left alone).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
import torch._ops
from torch.fx.experimental import proxy_tensor
from torch.utils._python_dispatch import _get_current_dispatch_mode
from torch.utils._pytree import tree_leaves

_LOCK = threading.RLock()


def tracer_decomposes_fused_kernels() -> bool:
    """True where make_fx decomposes ops eager runs as one backend kernel (torch 2.9)."""
    return not hasattr(proxy_tensor, "autograd_would_have_decomposed")


def has_backend_kernel(op: torch._ops.OpOverload, args: Sequence[Any]) -> bool:
    """Whether eager dispatch on the first tensor argument's device reaches a backend kernel of `op`
    (so autograd would not have used its CompositeImplicitAutograd decomposition); the rule of
    torch 2.13's ``autograd_would_have_decomposed``, negated."""
    for a in tree_leaves(list(args)):
        if isinstance(a, torch.Tensor):
            key = torch._C._parse_dispatch_key(torch._C._dispatch_key_for_device(a.device.type))
            return key is not None and torch._C._dispatch_has_kernel_for_dispatch_key(
                op.name(), key
            )
    return False


@contextmanager
def eager_kernels_kept() -> Iterator[None]:
    """While active, make_fx records an op with a backend kernel as itself, as eager would run it.

    A no-op where torch already does so. Otherwise ``OpOverload.decompose`` is wrapped for the
    duration (process-wide, serialised by a lock): called under make_fx's proxy mode for an op that
    has a backend kernel on its argument's device, it answers ``NotImplemented``, which is make_fx's
    own signal to record the op as one node. Values are unchanged by tracing; only which aten ops
    the graph holds changes, and with it the rounding points a graph run reproduces.
    """
    if not tracer_decomposes_fused_kernels():
        yield
        return
    with _LOCK:
        original = torch._ops.OpOverload.decompose

        def decompose(self: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
            mode = _get_current_dispatch_mode()
            if isinstance(mode, proxy_tensor.ProxyTorchDispatchMode) and has_backend_kernel(
                self, (args, kwargs)
            ):
                return NotImplemented
            return original(self, *args, **kwargs)

        torch._ops.OpOverload.decompose = decompose  # type: ignore[method-assign]
        try:
            yield
        finally:
            torch._ops.OpOverload.decompose = original  # type: ignore[method-assign]
