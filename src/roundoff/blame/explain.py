"""Plain-words explanations of blame's changes: the op, its source line, what to change and why."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.fx

from roundoff.analyze.naming import located
from roundoff.analyze.origin_sentences import loss_overflow_words
from roundoff.blame.changes import Change, ChangeKind, compile_placeable
from roundoff.capture.program import (
    Program,
    multi_output_parent,
    node_id,
    node_module,
    node_source,
    output_op_name,
    value_holders,
)
from roundoff.numerics import is_low_precision
from roundoff.ops import short_name
from roundoff.ops.classes import OpClass
from roundoff.plan.model import Plan
from roundoff.policy.model import FusionModel

_DTYPE_NAMES = {
    torch.bfloat16: "bf16",
    torch.float16: "fp16",
    torch.float32: "fp32",
    torch.float64: "fp64",
    torch.float8_e4m3fn: "fp8_e4m3fn",
    torch.float8_e5m2: "fp8_e5m2",
}


def _dt(dtype: torch.dtype | None) -> str:
    return _DTYPE_NAMES.get(dtype, str(dtype)) if dtype is not None else "?"




_SYMBOLS = {"mul": "*", "add": "+", "sub": "-", "div": "/"}


def _name(a: object, program: Program | None, depth: int) -> str:
    if not isinstance(a, torch.fx.Node):
        return repr(a)
    if a.op == "placeholder" and program is not None:
        return program.input_name(a)
    if depth > 0 and a.op == "call_function" and short_name(a.target) in _SYMBOLS:
        return expression(a, program, depth - 1)
    return a.name


def expression(n: torch.fx.Node, program: Program | None = None, depth: int = 1) -> str:
    """A short expression for a node: ``x*scale`` for ``mul(x, scale)``, operands expanded `depth` deep."""
    sym = _SYMBOLS.get(short_name(n.target))
    names = [_name(a, program, depth) for a in n.args[:2]]
    if sym and len(names) == 2:
        sep = f" {sym} " if sym in "+-" else sym
        return f"{names[0]}{sep}{names[1]}"
    return f"{short_name(n.target)}({', '.join(names)})"


def _users(n: torch.fx.Node, plan: Plan, narrow_only: bool = False) -> str:
    """The ops that compute with `n`'s value, looking through the views, copies and casts between (an
    `unsqueeze` before the `cos` that needs the bits); `narrow_only`: those whose result is stored in 16 bits
    or fewer ("the output" where none is)."""
    users: list[torch.fx.Node] = []
    todo, seen = list(n.users), set()
    while todo:
        u = todo.pop(0)
        if u in seen or u.op != "call_function":
            continue
        seen.add(u)
        d = plan.decisions.get(node_id(u))
        if d is not None and d.op_class in (OpClass.DATA_MOVEMENT, OpClass.CAST) and u.users:
            todo.extend(u.users)
        elif not narrow_only or d is None or is_low_precision(d.storage_dtype):
            users.append(u)
    return ", ".join(f"`{short_name(u.target)}` ({node_id(u)})" for u in users[:4]) + (", ..." if len(users) > 4 else "") or "the output"


def explain(change: Change, program: Program, plan: Plan, makes_nonfinite: bool = False,
            places: Callable[[Change], bool] | None = None) -> str:
    """One sentence: "`sub` at model.py:12: <what to change> — <why it matters>"; `makes_nonfinite`: the node
    makes NaN/inf from finite operands under the policy (an upcast then removes an overflow). `places`:
    `compile_placeable(program.captured(), plan)`, where the caller explains several changes (built once)."""
    n = program.node(change.node_id)
    d = plan.decisions[change.node_id]
    where = f"`{short_name(n.target)}` ({change.node_id}) at {change.source or 'unknown source'}"
    storage, compute = _dt(d.storage_dtype), _dt(d.compute_dtype)
    if change.kind is ChangeKind.NO_FMA:
        assert d.fma is not None
        mul = program.node(d.fma.mul_id)
        return (
            f"{where}: do not contract `{expression(mul, program)}` into an FMA here — the FMA keeps the "
            f"product unrounded on one side only, so `{expression(n, program)}` becomes the rounding error "
            f"of the product instead of what the other operand cancels against"
        )
    if change.kind is ChangeKind.NO_DOWNCAST:
        return (
            f"{where}: read the operands as stored ({storage}) instead of rounding them to "
            f"{d.input_format} first (the autocast downcast) — the reference multiplies the stored "
            f"values, and {d.input_format} keeps fewer significand bits than {storage}"
        )
    if change.kind is ChangeKind.UPCAST:
        held = storage if d.storage_dtype is not None else compute  # a multi-output op: its results' dtype
        if makes_nonfinite:
            inside = loss_overflow_words(n, plan)
            return f"{where}: compute in fp32 (opmath) instead of {compute} — " + (inside or (
                f"computed in {held}, it makes NaN/inf from finite operands: a value it computes passes {held}'s "
                "largest finite value, which fp32 holds"))
        return (
            f"{where}: compute in fp32 (opmath) instead of {compute} — computing in {held} "
            f"rounds the operands and the result to {held}'s precision, which the reference does not"
        )
    if change.kind is ChangeKind.ROUND:
        why = (
            f"{where}: round the result to {storage} as it is produced, as eager does — kept in "
            f"{compute} inside the fused kernel, it feeds {_users(n, plan)} a value eager never sees"
        )
        if plan.policy.fusion in (FusionModel.POINTWISE_CPP, FusionModel.POINTWISE_TRITON):  # (trial 75)
            why += (f"; the code already makes it {storage}: torch.compile rounds it inside a kernel only under "
                    "torch._inductor.config.emulate_precision_casts = True" + (
                        " (roundoff.compile with the fixed policy rounds it either way)"
                        if (places or compile_placeable(program.captured(), plan))(change)
                        else " (a step of a decomposition, which roundoff.compile cannot place: set that flag)"))
        if any(short_name(u.target) == "eq" for u in n.users):
            why += (
                f"; `eq` then compares the unrounded value with a copy rounded to {storage} "
                "elsewhere (e.g. `x == amax(x)` in amax's backward finds no maximum and divides by "
                "a zero count: NaN)"
            )
        return why
    if change.kind is ChangeKind.SCALAR_FP32:
        scalars = [a for a in n.args if isinstance(a, float)]
        what = f"the Python scalar {scalars[0]:g}" if scalars else "its Python scalar"
        return (
            f"{where}: use {what} unrounded in fp32 (e.g. `x.float() + eps`) — this op rounds it to "
            f"{d.scalar_format} first, which {'cannot hold it: it becomes 0' if scalars and _rounds_to_zero(scalars[0], d.scalar_format) else 'loses its low bits'}"
        )
    users = _users(n, plan)
    base = value_holders(program.graph).get(change.node_id)
    if base is not None:  # the cast that ends a decomposition (a 16-bit mean's): name the op the user wrote
        op = short_name(program.captured().node(base).target)
        where = (f"`{op}` ({base}; its value is {change.node_id}, the {storage} cast that ends its decomposition) "
                 f"at {change.source or 'unknown source'}")
    narrow = _users(n, plan, narrow_only=True)
    code = (f"compute it in fp32 and cast what {narrow} compute{'s' if narrow.count('`') == 2 else ''} from it back "
            f"to {storage} (`.to({d.storage_dtype})`), which is what roundoff.compile does with this policy"
            + ("" if (places or compile_placeable(program.captured(), plan))(change) else
               " where it can place it (not at this step of a decomposition: blame --placeable leaves such out)")
            + "; carrying fp32 further changes other roundings") if narrow != "the output" or users == narrow else (
        f"compute it in fp32 and hand it to {users} as it is: they compute and keep fp32 already, and casting "
        "their result back to 16 bits would round it")  # (trial 75: an fp32 Adam state `v`, made inf so)
    return (
        f"{where}: keep the result in {compute} for its consumers — rounding it to {storage} "
        f"here loses what its consumer(s) {users} need to stay close to the fp64 result (low bits, or the whole "
        f"value where it is beyond {storage}'s range). In code: {code}"
    )


def _rounds_to_zero(value: float, fmt: str) -> bool:
    from roundoff.numerics import round_to

    return value != 0 and float(round_to(torch.tensor([value], dtype=torch.float64), fmt)[0]) == 0.0


def describe_node(program: Program, nid: str) -> str:
    """``sub at model.py:12`` for reports."""
    n = program.node(nid)  # (one result of a multi-output op as check's table names it: `var_mean[0]`, trial 100)
    name = output_op_name(n) if multi_output_parent(n) is not None else short_name(n.target)
    return f"{name} ({node_id(n)})" + located(node_source(n), node_module(n))
