"""The op sets roundoff promises to classify, enumerated from torch itself."""

from __future__ import annotations

import functools

import torch


def _overloads(namespace: torch._ops._OpNamespace) -> list[torch._ops.OpOverload]:
    found: list[torch._ops.OpOverload] = []
    for attr in dir(namespace):
        try:
            packet = getattr(namespace, attr)
        except (AttributeError, RuntimeError):
            continue
        if isinstance(packet, torch._ops.OpOverloadPacket):
            found.extend(getattr(packet, name) for name in packet.overloads())
    return found


@functools.cache
def core_aten_ops() -> frozenset[torch._ops.OpOverload]:
    """Every aten overload tagged ``torch.Tag.core`` (the core ATen opset)."""
    return frozenset(op for op in _overloads(torch.ops.aten) if torch.Tag.core in op.tags)


@functools.cache
def inductor_decomposition_ops() -> frozenset[torch._ops.OpOverload]:
    """aten/prims overloads that Inductor's decomposition table (``select_decomp_table``) keys."""
    from torch._inductor.decomposition import select_decomp_table

    return frozenset(
        op
        for op in select_decomp_table()
        if isinstance(op, torch._ops.OpOverload) and op.namespace in ("aten", "prims")
    )


@functools.cache
def prims_ops() -> frozenset[torch._ops.OpOverload]:
    """Every ``torch.ops.prims`` overload (decompositions may emit them)."""
    return frozenset(_overloads(torch.ops.prims))
