"""torch's own type-promotion kind for an aten op, read from the Python references.

torch records an op's ``ELEMENTWISE_TYPE_PROMOTION_KIND`` only inside the decorators of its Python
reference / decomposition (``elementwise_type_promotion_wrapper``, ``pw_cast_for_opmath``): the kind
is an attribute of the wrapper object, captured in the closure of the wrapped function, which
``functools.wraps`` chains hide in turn. This module walks those closures (bounded) and returns the
kind, so roundoff never retypes it. None means torch records no kind for the op.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND

_MAX_NODES = 64  # closure objects visited per function: refs nest 3-5 wrappers deep


def _children(obj: Any) -> Iterator[Any]:
    wrapped = getattr(obj, "__wrapped__", None)
    if wrapped is not None:
        yield wrapped
    if isinstance(obj, functools.partial):
        yield obj.func
        yield from obj.keywords.values()
    closure = getattr(obj, "__closure__", None) or ()
    for cell in closure:
        try:
            yield cell.cell_contents
        except ValueError:  # empty cell
            continue


def kind_of_function(fn: Callable[..., Any]) -> ELEMENTWISE_TYPE_PROMOTION_KIND | None:
    """The promotion kind recorded by the wrappers around `fn`, or None if there is none.

    Walks ``__wrapped__``, ``functools.partial`` and closure cells breadth first; stops at torch
    ops (``OpOverload``: a reference calling a prim) so it never reads another op's kind.
    """
    queue: list[Any] = [fn]
    seen: set[int] = set()
    while queue and len(seen) < _MAX_NODES:
        obj = queue.pop(0)
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, ELEMENTWISE_TYPE_PROMOTION_KIND):
            return obj
        kind = getattr(obj, "type_promotion_kind", None)
        if isinstance(kind, ELEMENTWISE_TYPE_PROMOTION_KIND):
            return kind
        if isinstance(obj, (torch._ops.OpOverload, torch._ops.OpOverloadPacket, type)):
            continue
        if callable(obj):
            queue.extend(_children(obj))
    return None


@functools.cache
def _decomposition_sources() -> tuple[dict[Any, Callable[..., Any]], ...]:
    from torch._decomp import decomposition_table
    from torch._inductor.decomposition import select_decomp_table

    return (dict(decomposition_table), dict(select_decomp_table()))


def _ref_by_name(base: str) -> Callable[..., Any] | None:
    import torch._refs
    import torch._refs.nn.functional
    import torch._refs.special

    for module in (torch._refs, torch._refs.nn.functional, torch._refs.special):
        fn = getattr(module, base, None)
        if callable(fn) and not isinstance(fn, type):
            return fn
    return None


@functools.cache
def promotion_kind(op: torch._ops.OpOverload) -> ELEMENTWISE_TYPE_PROMOTION_KIND | None:
    """torch's ``ELEMENTWISE_TYPE_PROMOTION_KIND`` for an aten overload, or None if unrecorded.

    Looks at the overload's own decomposition first (a packet registration covers its overloads),
    then at the ``torch._refs`` function of the packet's name. Sibling overloads are not consulted:
    they can differ (``div.Tensor`` is INT_TO_FLOAT, ``div.Tensor_mode`` is not). Only aten ops have kinds (prims do no promotion).
    """
    if op.namespace != "aten":
        return None
    for table in _decomposition_sources():
        fn = table.get(op)
        if fn is not None and (kind := kind_of_function(fn)) is not None:
            return kind
    packet = op.overloadpacket
    name = packet.__name__
    ref = _ref_by_name(name[:-1] if name.endswith("_") and not name.endswith("__") else name)
    return kind_of_function(ref) if ref is not None else None
