"""classify(target) -> OpInfo: the op class of any FX node target.

Order of evidence, first match wins:
1. Python builtins: ``operator.getitem`` moves data; ``operator``/``math`` arithmetic and
   ``torch.sym_*`` act on symbolic sizes (OTHER).
2. The literal tables of ``roundoff.ops.table`` by base name (what torch does not record); a
   comparison/selection name whose overload torch tags as a reduction (``max.dim``) is a REDUCTION.
3. torch's own metadata on the overload: ``Tag.reduction`` -> REDUCTION (torch 2.9, which lacks
   that tag: the overloads torch 2.13 tags, ``table.REDUCTION_OVERLOADS``), ``Tag.pointwise`` ->
   POINTWISE_ARITHMETIC, ``is_view`` / ``Tag.view_copy`` -> DATA_MOVEMENT,
   ``Tag.nondeterministic_seeded`` -> RANDOM; for prims, the kind of meta function
   (elementwise / reduction).
4. Anything else is UNMODELED, never guessed.
The promotion kind always comes from torch (``roundoff.ops.promotion``), never from a table.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable
from typing import Any

import torch

from roundoff.ops.classes import OpClass, OpInfo
from roundoff.ops.promotion import promotion_kind
from roundoff.ops.table import BASE_NAME_CLASS, REDUCTION_OVERLOADS

_SYMBOLIC_BUILTINS: frozenset[Any] = frozenset(
    {
        operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
        operator.mod, operator.pow, operator.neg, operator.pos, operator.abs,
        operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge,
        operator.and_, operator.or_, operator.xor, operator.not_, operator.invert,
        math.ceil, math.floor, math.trunc, math.sqrt,
    }
)  # fmt: skip


def base_name(packet_name: str) -> str:
    """``"add_"`` -> ``"add"`` (in-place variant); dunder names such as ``"__and__"`` unchanged."""
    if packet_name.endswith("_") and not packet_name.endswith("__"):
        return packet_name[:-1]
    return packet_name


def short_name(target: Any) -> str:
    """The op's short name for messages: ``aten.sub.Tensor`` -> ``"sub"``, getitem -> ``"getitem"``."""
    name = getattr(target, "_opname", None) or getattr(target, "__name__", None) or str(target)
    return str(name)


def op_name(target: Any) -> str:
    """A stable printable name: ``"aten.mul.Tensor"``, ``"aten.mul"``, ``"operator.getitem"``."""
    if isinstance(target, torch._ops.OpOverload):
        return f"{target.namespace}.{target._opname}.{target._overloadname}"
    if isinstance(target, torch._ops.OpOverloadPacket):
        namespace = target._qualified_op_name.split("::")[0]
        return f"{namespace}.{target.__name__}"
    module = getattr(target, "__module__", None) or type(target).__module__
    qualname = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    if module == "_operator":
        module = "operator"
    return f"{module}.{qualname}" if qualname else repr(target)


_REDUCTION_TAG = getattr(torch.Tag, "reduction", None)  # torch >= 2.10


def is_reduction(op: torch._ops.OpOverload) -> bool:
    """torch's ``Tag.reduction`` on `op`; on a torch without that tag, `table.REDUCTION_OVERLOADS`."""
    if _REDUCTION_TAG is not None:
        return _REDUCTION_TAG in op.tags
    return op.namespace == "aten" and f"{op._opname}.{op._overloadname}" in REDUCTION_OVERLOADS


def _class_from_tags(op: torch._ops.OpOverload) -> OpClass | None:
    tags = set(op.tags)
    if is_reduction(op):
        return OpClass.REDUCTION
    if torch.Tag.pointwise in tags:
        return OpClass.POINTWISE_ARITHMETIC
    if op.is_view or torch.Tag.view_copy in tags:
        return OpClass.DATA_MOVEMENT
    if torch.Tag.nondeterministic_seeded in tags:
        return OpClass.RANDOM
    return None


def _class_from_sibling_tags(op: torch._ops.OpOverload) -> OpClass | None:
    """For an untagged overload (often an ``.out`` variant): the class its tagged siblings agree on.

    None when no sibling is tagged or they disagree (``max.other`` pointwise, ``max.dim`` reduction).
    """
    packet = op.overloadpacket
    found = {_class_from_tags(getattr(packet, name)) for name in packet.overloads()} - {None}
    return found.pop() if len(found) == 1 else None


def _class_from_prim_meta(op: torch._ops.OpOverload) -> OpClass | None:
    meta = getattr(op, "prim_meta_impl", None)
    func = meta.func if isinstance(meta, functools.partial) else meta
    name = getattr(func, "__name__", "")
    if name == "_prim_elementwise_meta":
        return OpClass.POINTWISE_ARITHMETIC
    if name in {"_reduction_meta", "_var_reduction_meta"}:
        return OpClass.REDUCTION
    return None


@functools.cache
def _classify_overload(op: torch._ops.OpOverload) -> OpInfo:
    name = op_name(op)
    base = base_name(op._opname)
    op_class = BASE_NAME_CLASS.get(base)
    if op_class is OpClass.COMPARISON_SELECT and is_reduction(op):
        op_class = OpClass.REDUCTION  # max.dim / min.dim reduce like amax; max.other selects
    if op_class is None:
        op_class = _class_from_tags(op)
    if op_class is None:
        op_class = _class_from_sibling_tags(op)
    if op_class is None and op.namespace == "prims":
        op_class = _class_from_prim_meta(op)
    return OpInfo(name, op_class or OpClass.UNMODELED, promotion_kind(op))


def _classify_packet(packet: torch._ops.OpOverloadPacket) -> OpInfo:
    """A packet takes its ``default`` overload's class (or its first overload's)."""
    overloads = packet.overloads()
    chosen = "default" if "default" in overloads else (overloads[0] if overloads else None)
    if chosen is None:
        return OpInfo(op_name(packet), OpClass.UNMODELED)
    info = _classify_overload(getattr(packet, chosen))
    return OpInfo(op_name(packet), info.op_class, info.promotion)


def classify(target: Any) -> OpInfo:
    """The op class and torch promotion kind of an FX node target.

    Accepts an ``OpOverload``, an ``OpOverloadPacket``, or a Python callable (``operator.getitem``,
    symbolic-int arithmetic). Unknown targets give ``OpClass.UNMODELED``; a target that is not
    callable at all (e.g. an FX op string such as ``"placeholder"``) is a TypeError.
    """
    if isinstance(target, torch._ops.OpOverload):
        return _classify_overload(target)
    if isinstance(target, torch._ops.OpOverloadPacket):
        return _classify_packet(target)
    if not callable(target):
        raise TypeError(
            f"classify() takes an FX call_function target (an aten OpOverload, OpOverloadPacket or "
            f"Python callable), got {type(target).__name__} {target!r}; for placeholder/output "
            "nodes there is no op to classify"
        )
    return _classify_callable(target)


def _classify_callable(target: Callable[..., Any]) -> OpInfo:
    name = op_name(target)
    if target is operator.getitem:
        return OpInfo(name, OpClass.DATA_MOVEMENT)
    try:
        symbolic = target in _SYMBOLIC_BUILTINS
    except TypeError:  # unhashable callable
        symbolic = False
    torch_sym = (getattr(target, "__module__", "") or "").startswith("torch") and getattr(
        target, "__name__", ""
    ).startswith("sym_")
    if symbolic or torch_sym:
        return OpInfo(name, OpClass.OTHER)
    return OpInfo(name, OpClass.UNMODELED)
