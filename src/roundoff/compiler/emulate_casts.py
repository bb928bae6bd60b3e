"""Make Inductor's ``emulate_precision_casts`` keep eager's roundings on CPU under torch 2.9.

Under ``emulate_precision_casts`` Inductor wraps each low-precision pointwise op in a downcast/upcast
pair, ``to_dtype(to_dtype(out, bf16, use_compute_types=False), bf16)``, so that each result is
rounded (RNE) to bf16/fp16 as eager rounds it, and a cast the user wrote (``x.to(bf16).to(fp32)``)
rounds as in eager. torch 2.9's Inductor breaks this three times (torch 2.13 fixes all three):

1. ``CppVecOverrides.to_dtype`` spells the keyword ``use_compute_dtypes``, so codegen of every
   vectorized C++ kernel with such a pair raises ``TypeError`` (``unexpected keyword argument
   'use_compute_types'``) and the compile fails (``BackendCompilerFailed``).
2. Both C++ ``to_dtype`` overrides put the inverse of every fp32 -> bf16/fp16 conversion into the
   kernel's CSE cache (pytorch#115260's trick), so the upcast reads the unrounded fp32 value and the
   rounding disappears: scalar C++ kernels compiled with the flag equal those compiled without it.
   torch 2.13 skips the cache under the flag or ``use_compute_types=False`` (pytorch#185337).
3. The joint-graph pass ``pointless_convert`` fuses every float cast chain ``convert(convert(x,
   d1), d2)`` into ``convert(x, d2)``, so a user's fp32 -> bf16 -> fp32 round trip vanishes.
   torch 2.13 keeps the chain under the flag unless ``x -> d1`` is lossless.

`emulated_casts_kept` applies 2.13's rules for one compilation: the two ``to_dtype`` overrides are
replaced by wrappers that accept ``use_compute_types`` and, where 2.13 skips the cache, call the
original with the kernel's ``cache_dtype_convert`` made a no-op (the generated conversion
expressions are the original's); ``pointless_convert``'s pattern entry gets a handler that leaves
a lossy first conversion in place. Each repair is detected by feature (a parameter name, whether
the code reads ``emulate_precision_casts``), never by version, and skipped where torch has it.
Inductor's FX graph cache and AOTAutograd's cache are off while any repair is active (their keys
do not see it, so a cached kernel of either kind could otherwise be served to the other).
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import torch

_LOCK = threading.RLock()
_FLAG = "emulate_precision_casts"
_MARK = "_roundoff_emulated_casts"


def _reads_flag(fn: Callable[..., Any]) -> bool:
    return getattr(fn, _MARK, False) or _FLAG in fn.__code__.co_names


def _overrides() -> tuple[type, type]:
    from torch._inductor.codegen import cpp

    return cpp.CppOverrides, cpp.CppVecOverrides


def _to_dtype_is_fixed(fn: Callable[..., Any]) -> bool:
    return "use_compute_types" in inspect.signature(fn).parameters and _reads_flag(fn)


def _convert_entries() -> list[Any]:
    """The joint-graph pattern entries whose handler is ``pointless_convert`` and ignores the flag."""
    from torch._inductor.fx_passes import joint_graph

    handler = getattr(joint_graph, "pointless_convert", None)
    if handler is None or _reads_flag(handler):
        return []
    key = ("call_function", torch.ops.prims.convert_element_type.default)
    return [e for e in joint_graph.patterns.patterns.get(key, []) if e.handler is handler]


def emulated_casts_need_fix() -> dict[str, bool]:
    """Which of the module docstring's repairs the installed Inductor needs, by name:
    ``"to_dtype"`` (items 1 and 2) and ``"cast_chains"`` (item 3). All False on torch 2.13."""
    return {
        "to_dtype": not all(_to_dtype_is_fixed(cls.to_dtype) for cls in _overrides()),
        "cast_chains": bool(_convert_entries()),
    }


def _flag_on() -> bool:
    from torch._inductor import config

    return bool(getattr(config, _FLAG, False))


def _wrap_to_dtype(original: Callable[..., Any]) -> Callable[..., Any]:
    def to_dtype(
        x: Any, dtype: Any, src_dtype: Any = None, use_compute_types: bool = True, **_: Any
    ) -> Any:
        from torch._inductor.virtualized import V

        if use_compute_types and not _flag_on():
            return original(x, dtype, src_dtype)
        kernel = V.kernel
        kernel.cache_dtype_convert = lambda *args, **kwargs: None
        try:
            return original(x, dtype, src_dtype)
        finally:
            del kernel.cache_dtype_convert

    setattr(to_dtype, _MARK, True)
    return to_dtype


def _lossless(src: torch.dtype, dst: torch.dtype) -> bool:
    """Every `src` value is exactly representable in `dst` (both floating point)."""
    if src == dst:
        return True
    if not (src.is_floating_point and dst.is_floating_point):
        return False
    s, d = torch.finfo(src), torch.finfo(dst)
    return d.eps <= s.eps and d.max >= s.max and d.tiny <= s.tiny


def _wrap_convert(original: Callable[..., Any]) -> Callable[..., Any]:
    def pointless_convert(match: Any, arg: Any, dtype1: torch.dtype, dtype2: torch.dtype) -> Any:
        val = arg.meta.get("val", None) if hasattr(arg, "meta") else None
        if _flag_on() and isinstance(val, torch.Tensor) and not _lossless(val.dtype, dtype1):
            return None  # the first conversion rounds: keep the chain, as eager computes it
        return original(match, arg, dtype1, dtype2)

    setattr(pointless_convert, _MARK, True)
    return pointless_convert


@contextmanager
def emulated_casts_kept() -> Iterator[None]:
    """While active, Inductor keeps ``emulate_precision_casts`` roundings as torch 2.13 does.

    Process-wide for its duration (serialised by a lock); wrap one compilation with it, not a run.
    A no-op where the installed Inductor needs no repair.
    """
    need = emulated_casts_need_fix()
    if not any(need.values()):
        yield
        return
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    with _LOCK, ExitStack() as stack:
        stack.enter_context(inductor_config.patch({"fx_graph_cache": False}))
        if hasattr(functorch_config, "enable_autograd_cache"):
            stack.enter_context(functorch_config.patch({"enable_autograd_cache": False}))
        if need["to_dtype"]:
            for cls in _overrides():
                original = cls.__dict__["to_dtype"]
                stack.callback(setattr, cls, "to_dtype", original)
                cls.to_dtype = staticmethod(_wrap_to_dtype(original.__func__))
        for entry in _convert_entries():
            stack.callback(setattr, entry, "handler", entry.handler)
            entry.handler = _wrap_convert(entry.handler)
        yield
