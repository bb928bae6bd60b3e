"""Lower a plan once to an FX graph in which every precision decision is an explicit op.

`lower(plan)` traces the emulator itself (``roundoff.execute``'s `PlanNumerics`, the one
implementation of a plan's semantics) with ``make_fx`` on the program's example inputs, with the two
primitives recorded as custom ops (``roundoff.lower.primitives``). The result is a plain aten graph:

- every rounding point is ``torch.ops.roundoff.round_to(x, fmt)`` (the emulator's fp32 -> bf16/fp16
  casts, which are exactly `round_to`, are written as `round_to` followed by an exact cast);
- every contracted FMA site is ``torch.ops.roundoff.fma(a, b, c)``;
- upcasts and downcasts are explicit ``aten._to_copy`` calls (copies that cannot change a value, a
  same-dtype copy or a rounded value's narrow-then-fp32 round trip, are dropped); a value kept in
  fp32 is one that no `round_to` touches; a Python scalar rounded first appears as its rounded
  constant;
- matmuls and reductions are the emulator's own kernels (fp32 accumulation, one rounding; mm/bmm on
  operands held in their bf16/fp16 storage dtype run in that dtype, as eager does);
- each node's ``meta["roundoff"]`` is a `LoweredFrom`: the plan node it computes, its kernel (fusion
  group) and kernel kind, i.e. the kernel boundaries.

Executed (``gm(*inputs)`` or ``torch.fx.Interpreter``), the graph gives the emulator's outputs bit
for bit (tested). It is specialised to the inputs' shapes, dtypes and devices; a program with random
ops draws anew on each call. Transcendentals are eager's kernels (``run_plan``'s default).
`lower_oracle(program)` lowers the fp64 oracle the same way (no rounding anywhere).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import get_proxy_mode, make_fx

import roundoff.execute.node_numerics as node_numerics
import roundoff.numerics as numerics
from roundoff.capture.program import NODE_ID, Program
from roundoff.execute import Lockstep, OracleNumerics, complete_inputs, plan_numerics
from roundoff.execute.node_numerics import stride_free
from roundoff.lower.primitives import fma_op, round_op
from roundoff.numerics import format_of_dtype, get_format, is_low_precision
from roundoff.plan.model import Plan

__all__ = ["LoweredFrom", "Probe", "lower", "lower_oracle", "lower_sides"]

_aten = torch.ops.aten
META = "roundoff"
_ROUND = torch.ops.roundoff.round_to.default


@dataclass(frozen=True)
class LoweredFrom:
    """Where a lowered node comes from: plan node `node_id` (`op`), computed in kernel `kernel`
    (the plan's fusion group, None where the policy does not fuse) of kind `kernel_kind`."""

    node_id: str
    op: str
    kernel: int | None = None
    kernel_kind: str | None = None


@contextlib.contextmanager
def _primitives_as_ops() -> Iterator[None]:
    """While tracing, `numerics.round_to` / `numerics.fma` (as the emulator calls them) record the
    custom ops instead of being traced into their bit operations. Patched where the emulator can
    read them: on ``roundoff.numerics`` and on ``roundoff.execute.node_numerics`` if it imported them.
    Not thread-safe: lower one plan at a time."""
    round_to, fma = numerics.round_to, numerics.fma

    def traced_round(x: torch.Tensor, fmt: Any, mode: Any = None, *, torch_compatible: bool = False,
                     fused: bool | None = None) -> torch.Tensor:
        if mode is None and not torch_compatible and isinstance(x, torch.Tensor):
            return round_op(x, get_format(fmt).name)
        return round_to(x, fmt, mode, torch_compatible=torch_compatible, fused=fused)

    def traced_fma(a: Any, b: Any, c: Any) -> torch.Tensor:
        if all(isinstance(t, torch.Tensor) and t.dtype == torch.float32 for t in (a, b, c)):
            return fma_op(a, b, c)
        return fma(a, b, c)

    patches = [(m, name, new) for m in (numerics, node_numerics)
               for name, old, new in (("round_to", round_to, traced_round), ("fma", fma, traced_fma))
               if getattr(m, name, None) is old]
    for m, name, new in patches:
        setattr(m, name, new)
    try:
        yield
    finally:
        for m, name, _ in patches:
            setattr(m, name, round_to if name == "round_to" else fma)


def _origins(plan: Plan | None, program: Program) -> dict[torch.fx.Node, LoweredFrom]:
    kinds = {g.id: g.kind for g in plan.groups} if plan is not None else {}
    out = {}
    for n in program.nodes():
        nid = n.meta.get(NODE_ID)
        if nid is None:
            continue
        d = plan.decisions.get(nid) if plan is not None else None
        group = d.group if d is not None else None
        op = str(n.target) if n.op == "call_function" else n.op
        out[n] = LoweredFrom(nid, op, group, kinds.get(group))
    return out


def _views_as_reshapes(graph: torch.fx.Graph) -> None:
    """``aten.view`` becomes ``aten.reshape`` (`roundoff.execute.node_numerics.stride_free`): a view
    traced on one layout is impossible where a dropped copy or a primitive's result has another (the
    transposed sum of a user's ``x.transpose(1, 2) + y`` before ``.reshape``); in this functional graph
    reshape gives the same values."""
    for n in graph.nodes:
        if n.op == "call_function" and n.target is _aten.view.default:
            n.target = stride_free(n.target)


#: ``probe(node, values)`` -> tensors computed from one node's values on every side (traced into the
#: lowered graph and returned, stacked, as its last output; see `lower_sides`).
Probe = Callable[[torch.fx.Node, tuple], Sequence[torch.Tensor]]


def _trace(
    program: Program, side: Any, inputs: tuple, plan: Plan | None, sides: Sequence[Any] | None = None,
    probe: Probe | None = None,
) -> torch.fx.GraphModule:
    origins = _origins(plan, program)
    probes: list[torch.Tensor] = []

    def tag(n: torch.fx.Node, vals: tuple, _ls: Lockstep) -> None:
        """Annotate the nodes traced since the previous plan node (appended at the graph's end)."""
        mode = get_proxy_mode()
        if probe is not None:
            probes.extend(t.reshape(()).to(torch.float64) for t in probe(n, vals))
        if mode is None or n not in origins:
            return None
        for new in reversed(mode.tracer.graph.nodes):
            if META in new.meta or new.meta.get("_roundoff_seen"):
                break
            if new.op == "placeholder":
                new.meta["_roundoff_seen"] = True
            else:
                new.meta[META] = origins[n]
        return None

    def run(*xs: Any) -> tuple:
        if sides is None:
            (out,) = Lockstep(program, [side], on_node=tag).run_inputs(xs)
            return tuple(out)
        probes.clear()
        outs = Lockstep(program, sides, on_node=tag).run_inputs(xs)
        stacked = torch.stack(probes) if probes else torch.zeros(0, dtype=torch.float64)
        return (*(tuple(o) for o in outs), stacked)

    with _primitives_as_ops():
        gm = make_fx(run, tracing_mode="real")(*inputs)
    for node in gm.graph.nodes:
        node.meta.pop("_roundoff_seen", None)
    _explicit_roundings(gm.graph)
    _drop_exact_copies(gm.graph)
    _views_as_reshapes(gm.graph)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    type(gm).__name__ = type(gm).__qualname__ = "LoweredPlan" if plan is not None else "LoweredOracle"  # (its own
    return gm  # class, one per GraphModule: make_fx named it after whatever it traced, `<lambda>`: trial 83)


def _narrowing_cast(n: torch.fx.Node) -> torch.dtype | None:
    """The target dtype of an fp32 -> bf16/fp16/fp8 ``_to_copy`` (a rounding), else None."""
    if n.op != "call_function" or n.target is not _aten._to_copy.default or set(n.kwargs) - {"dtype"}:
        return None
    src = n.args[0].meta.get("val") if isinstance(n.args[0], torch.fx.Node) else None
    dt = n.kwargs.get("dtype")
    if isinstance(src, torch.Tensor) and src.dtype == torch.float32 and is_low_precision(dt):
        return dt
    return None


def _explicit_roundings(graph: torch.fx.Graph) -> None:
    """Write each rounding cast ``x.to(bf16)`` as ``round_to(x, "bf16").to(bf16)`` (the cast is then
    exact): torch's fp32 -> narrow casts are RNE with IEEE subnormals and overflow, i.e. `round_to`."""
    for n in list(graph.nodes):
        dt = _narrowing_cast(n)
        if dt is None:
            continue
        fmt = format_of_dtype(dt).name
        if n.args[0].target is _ROUND and n.args[0].args[1] == fmt:
            continue  # rounded already: the cast is exact
        with graph.inserting_before(n):
            r = graph.call_function(_ROUND, (n.args[0], fmt))
        r.meta = dict(n.meta)
        r.meta["val"] = n.args[0].meta["val"]
        n.replace_input_with(n.args[0], r)



def _same_dtype_copy(n: torch.fx.Node) -> torch.fx.Node | None:
    """The operand of a ``_to_copy`` that changes nothing (same dtype, no other argument), else None."""
    if n.op != "call_function" or n.target is not _aten._to_copy.default or set(n.kwargs) != {"dtype"}:
        return None
    src = n.args[0]
    val = src.meta.get("val") if isinstance(src, torch.fx.Node) else None
    return src if isinstance(val, torch.Tensor) and val.dtype == n.kwargs["dtype"] else None


def _exact_round_trip(n: torch.fx.Node) -> torch.fx.Node | None:
    """For ``round_to(r, f).to(narrow).to(fp32)``: the fp32 ``round_to`` result (the pair is exact)."""
    if n.op != "call_function" or n.target is not _aten._to_copy.default or n.kwargs != {"dtype": torch.float32}:
        return None
    narrow = n.args[0]
    if not isinstance(narrow, torch.fx.Node) or _narrowing_cast(narrow) is None:
        return None
    r = narrow.args[0]
    return r if r.target is _ROUND and r.args[1] == format_of_dtype(narrow.kwargs["dtype"]).name else None


def _drop_exact_copies(graph: torch.fx.Graph) -> None:
    """Remove copies that cannot change a value: same-dtype ``_to_copy`` and a rounded value's
    narrow-then-fp32 round trip (the emulator's bookkeeping; the values are bit for bit the same)."""
    for n in list(graph.nodes):
        keep = _same_dtype_copy(n) or _exact_round_trip(n)
        if keep is not None:
            n.replace_all_uses_with(keep)
            graph.erase_node(n)


def lower(plan: Plan, inputs: Sequence[Any] = ()) -> torch.fx.GraphModule:
    """`plan` as an FX graph of aten ops plus ``roundoff::round_to`` / ``roundoff::fma`` (module doc).

    `inputs` (a prefix is completed from the capture's example inputs, as ``run_plan`` does) fix
    shapes and values of the trace; the graph takes the program's flat inputs.
    """
    inputs = complete_inputs(plan.program, inputs)
    return _trace(plan.program, plan_numerics(plan), inputs, plan)


def lower_oracle(program: Program, inputs: Sequence[Any] = ()) -> torch.fx.GraphModule:
    """The fp64 oracle of `program` (``run_oracle``'s semantics) as an FX graph: no rounding."""
    return _trace(program, OracleNumerics(), complete_inputs(program, inputs), None)


def lower_sides(
    plan: Plan, sides: Sequence[Any], inputs: Sequence[Any] = (), probe: Probe | None = None
) -> torch.fx.GraphModule:
    """Several runs of `plan`'s program (`sides`: ``PlanNumerics`` / ``OracleNumerics`` over one
    graph, as ``Lockstep`` takes them) lowered into one graph, in step. It returns one output tuple per
    side and, last, an fp64 vector: every tensor ``probe(node, values)`` returns for a node (its
    values on every side, in order), a scalar each, in graph order (empty without `probe`).
    The probes are computed where the values are, so reading them is one transfer at the end."""
    return _trace(plan.program, None, complete_inputs(plan.program, inputs), plan, sides, probe)
