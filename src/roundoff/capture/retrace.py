"""Re-trace a captured graph (to decompose or functionalize it) while keeping stable ids and sources.

Each node of the old graph is run by an ``fx.Interpreter`` under make_fx; the aten nodes that one old
node's ``run_node`` appends to the new graph are labelled with that old node (the same node-counting
trick as `roundoff.capture.sources`, independent of which meta keys a torch release copies).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import torch.fx
from torch._guards import TracingContext, tracing
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

from roundoff.capture.errors import CaptureError
from roundoff.capture.program import MADE_FROM, NODE_ID, NODE_MODULE, NODE_SOURCE
from roundoff.capture.sources import _current_graph, label_new_nodes

ORIGIN = "roundoff_origin"  # transient: the old node a new node was made from

#: Data-dependent-shape ops whose shape follows from integer operands alone (a CTC loss's lengths, a
#: bincount's largest index) and whose values are computed from float ones. The capture keeps them as
#: ops (`roundoff.capture.specialize`): every run computes them from its own operands; a graph holding
#: one is re-traced on its real example inputs, since fake tensors cannot give its shape.
SHAPE_FROM_INTEGERS = frozenset({
    torch.ops.aten._ctc_loss.default, torch.ops.aten._ctc_loss.Tensor, torch.ops.aten.bincount.default})

# What tracing user code can raise: torch's data-dependence, unsupported-operator and shape errors
# are RuntimeError/ValueError/TypeError subclasses; user code adds the other common kinds.
TRACER_ERRORS: tuple[type[Exception], ...] = (
    RuntimeError,
    TypeError,
    ValueError,
    NotImplementedError,
    AttributeError,
    IndexError,
    KeyError,
    AssertionError,
)


class _OriginInterpreter(torch.fx.Interpreter):
    def run_node(self, n: torch.fx.Node) -> Any:
        graph = _current_graph()
        start = len(graph.nodes)
        out = super().run_node(n)
        label_new_nodes(graph, start, ORIGIN, n)
        return out

    def call_function(self, target: Any, args: Any, kwargs: Any) -> Any:
        # A decomposition may return other strides than the op it replaces (e.g. CPU attention), so an
        # old ``view`` can become invalid; ``reshape`` is the same view where one exists, else a copy:
        # the values are identical either way.
        if target is torch.ops.aten.view.default:
            target = torch.ops.aten.reshape.default
        return super().call_function(target, args, kwargs)


def trace_fake(
    f: Callable[..., Any], inputs: Sequence[torch.Tensor], table: Mapping[Any, Any] | None = None
) -> torch.fx.GraphModule:
    """make_fx with fake tensors (so data-dependent control flow fails instead of being baked in)."""
    return make_fx(f, decomposition_table=table, tracing_mode="fake", _allow_non_fake_inputs=True)(
        *inputs
    )


def trace_real(
    f: Callable[..., Any], inputs: Sequence[torch.Tensor], table: Mapping[Any, Any] | None = None
) -> torch.fx.GraphModule:
    """make_fx on the real inputs: `f` runs once as eager runs it, and a tensor value read into
    Python (``.item()``, a branch, a data-dependent shape) is the value eager computed
    (`roundoff.capture.specialize` records and pins each). Every node's ``meta["val"]`` is fake.

    The tracing context only lends make_fx one fake mode for those ``meta["val"]``: without it make_fx
    builds a new FakeTensorMode for every node, which made a 2-layer Llama capture 7x slower."""
    with tracing(TracingContext(FakeTensorMode(allow_fallback_kernels=True))):
        return make_fx(f, decomposition_table=table, tracing_mode="real", _error_on_data_dependent_ops=False)(*inputs)


def retrace(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[torch.Tensor],
    *,
    decomposition_table: Mapping[Any, Any] | None = None,
    functionalize: bool = False,
) -> torch.fx.GraphModule:
    """Re-trace `gm`; every new node gets ``meta[ORIGIN]`` = the old node it came from (placeholders and
    the output node pair up by position). Nodes no old node made (functionalization's trailing
    ``copy_`` into mutated inputs) have no ORIGIN."""
    interp = _OriginInterpreter(gm)
    f: Callable[..., Any] = interp.run
    if functionalize:
        f = torch.func.functionalize(f, remove="mutations")
    shaped_by_data = any(n.op == "call_function" and n.target in SHAPE_FROM_INTEGERS for n in gm.graph.nodes)
    new = (trace_real if shaped_by_data else trace_fake)(f, example_inputs, decomposition_table)
    old_ph = [n for n in gm.graph.nodes if n.op == "placeholder"]
    new_ph = [n for n in new.graph.nodes if n.op == "placeholder"]
    for old, fresh in zip(old_ph, new_ph):
        fresh.meta[ORIGIN] = old
    new.graph.output_node().meta[ORIGIN] = gm.graph.output_node()
    _pair_constants(gm, new)
    return new


def _pair_constants(old: torch.fx.GraphModule, new: torch.fx.GraphModule) -> None:
    """A constant tensor (get_attr) is created lazily by its consumer, so it would be labelled with
    the consumer; pair it instead with the old get_attr nodes holding the same tensor object, in graph
    order (the same constant may be fetched several times)."""
    by_tensor: dict[int, list[torch.fx.Node]] = {}
    for n in old.graph.nodes:
        if n.op == "get_attr":
            by_tensor.setdefault(id(getattr(old, str(n.target), None)), []).append(n)
    used: dict[int, int] = {}
    for n in new.graph.nodes:
        if n.op != "get_attr":
            continue
        key = id(getattr(new, str(n.target), None))
        matches = by_tensor.get(key)
        if matches:
            n.meta[ORIGIN] = matches[min(used.get(key, 0), len(matches) - 1)]
            used[key] = used.get(key, 0) + 1
    _keep_constant_names(new)


def _keep_constant_names(new: torch.fx.GraphModule) -> None:
    """Give each re-traced constant the attribute name its origin had (``mask``, ``eager_random0``
    instead of the tracer's fresh ``_tensor_constant<k>``), where its fetches agree on one name."""
    wanted: dict[str, set[str]] = {}
    for n in new.graph.nodes:
        if n.op == "get_attr" and ORIGIN in n.meta:
            wanted.setdefault(str(n.target), set()).add(str(n.meta[ORIGIN].target))
    renames = {t: names.pop() for t, names in wanted.items() if len(names) == 1}
    if len(set(renames.values())) != len(renames):
        return
    values = {t: getattr(new, t) for t in renames}
    for t in renames:
        delattr(new, t)
    for t, name in renames.items():
        setattr(new, name, values[t])
    for n in new.graph.nodes:
        if n.op == "get_attr" and str(n.target) in renames:
            n.target = renames[str(n.target)]


def copy_sources_from_origin(gm: torch.fx.GraphModule) -> None:
    """Give each new node its origin's source line and drop the ORIGIN label."""
    for n in gm.graph.nodes:
        origin = n.meta.pop(ORIGIN, None)
        n.meta[NODE_SOURCE] = origin.meta.get(NODE_SOURCE) if origin is not None else None
        n.meta[NODE_MODULE] = origin.meta.get(NODE_MODULE) if origin is not None else None


def assign_rewritten_ids(gm: torch.fx.GraphModule) -> None:
    """Stable ids after a rewrite: a node that is the only node made from old node ``n7`` and has
    n7's target keeps ``"n7"``; otherwise the nodes made from n7 get ``"n7.0"``, ``"n7.1"``, ... in graph
    order, all with n7's source. Nodes without an origin (not expected) get ``"x0"``, ``"x1"``, ..."""
    groups: dict[str, list[torch.fx.Node]] = {}
    origins: dict[str, torch.fx.Node] = {}
    orphans = 0
    for n in gm.graph.nodes:
        origin = n.meta.pop(ORIGIN, None)
        if origin is None:
            n.meta[NODE_ID] = f"x{orphans}"
            n.meta[NODE_SOURCE] = n.meta[NODE_MODULE] = None
            orphans += 1
            continue
        old_id = origin.meta[NODE_ID]
        groups.setdefault(old_id, []).append(n)
        origins[old_id] = origin
        n.meta[NODE_SOURCE] = origin.meta.get(NODE_SOURCE)
        n.meta[NODE_MODULE] = origin.meta.get(NODE_MODULE)
    for old_id, nodes in groups.items():
        origin = origins[old_id]
        if (
            len(nodes) == 1
            and (nodes[0].op, nodes[0].target) == (origin.op, origin.target)
            or len(nodes) == 1
            and nodes[0].op in ("placeholder", "output")
        ):
            nodes[0].meta[NODE_ID] = old_id
        else:
            made_from = getattr(getattr(origin.target, "overloadpacket", origin.target), "__name__", str(origin.target))
            for k, n in enumerate(nodes):
                n.meta[NODE_ID] = f"{old_id}.{k}"
                n.meta[MADE_FROM] = made_from


def _inductor_table() -> Mapping[Any, Any]:
    # (max-pool's decomposition needs ``torch._inductor.lowering`` imported: `roundoff.capture.rewrite.decompose`)
    from torch._inductor.decomposition import select_decomp_table

    return select_decomp_table()


def _core_aten_table() -> Mapping[Any, Any]:
    from torch._decomp import core_aten_decompositions

    return core_aten_decompositions()


def _eager_logsumexp(self: torch.Tensor, dim: Any, keepdim: bool = False) -> torch.Tensor:
    """``logsumexp`` as ATen's ``logsumexp_out_impl`` computes it: tensor ops in the input's dtype,
    each rounded (torch's reference decomposition computes in fp32 and rounds once)."""
    if not self.is_floating_point():
        self = self.to(torch.get_default_dtype())
    dims = [dim] if isinstance(dim, int) else list(dim)
    if self.numel() == 0:
        return torch.sum(torch.exp(self), dims, keepdim).log()
    maxes = torch.amax(self, dims, keepdim=True)
    maxes = torch.masked_fill(maxes, maxes.abs() == float("inf"), 0)
    squeezed = maxes if keepdim else torch.squeeze(maxes, dims)
    return torch.sum(torch.exp(self - maxes), dims, keepdim).log().add(squeezed)


def _eager_table() -> Mapping[Any, Any]:
    """The ops eager ATen runs as several tensor ops, each rounded to the input's dtype, that tracing
    keeps whole: ``logsumexp`` (`_eager_logsumexp`; measured bit for bit against eager fp16 on CPU,
    trial 57)."""
    return {torch.ops.aten.logsumexp.default: _eager_logsumexp}


def _bf16_steps(dtype: Any, exponent: Any) -> bool:
    """Whether CPU ATen computes ``x ** exponent`` of `dtype` in BFloat16 arithmetic (`_eager_cpu_pow`)."""
    return dtype == torch.bfloat16 and not isinstance(exponent, bool) and exponent in (3, -2)


def _eager_cpu_pow(x: torch.Tensor, exponent: Any) -> Any:
    """bf16 ``x ** 3`` and ``x ** -2`` as CPU ATen computes them: ``pow_tensor_scalar_optimized_kernel``
    runs in BFloat16 arithmetic, ``(x * x) * x`` and ``1 / (x * x)``, each product rounded to bf16 (fp16
    runs that kernel in float: one rounding, as every other exponent does). Measured bit for bit against
    eager on CPU, torch 2.13 (trial 70: 3569 and 4206 of 16384 elements off one rounding; the same ``pow(y, 3)``
    is rsqrt's derivative, so every hand-written bf16 RMSNorm's backward)."""
    if not _bf16_steps(x.dtype, exponent):
        return NotImplemented
    square = torch.mul(x, x)
    return torch.mul(square, x) if exponent == 3 else torch.reciprocal(square)


def _decomposes_pow(node: torch.fx.Node) -> bool:
    """Whether `_eager_cpu_pow` rewrites FX `node` (a bf16 ``pow`` by 3 or -2): elsewhere no retrace is needed."""
    val = node.args[0].meta.get("val") if node.args and isinstance(node.args[0], torch.fx.Node) else None
    exponent = node.args[1] if len(node.args) > 1 else None
    return _bf16_steps(getattr(val, "dtype", None), exponent)


#: {op: whether a table's decomposition rewrites this node of it}, for ops a table decomposes only in some
#: cases: `capture.decompose` retraces only a program with a node some table rewrites
REWRITES_ONLY: Mapping[Any, Callable[[torch.fx.Node], bool]] = {torch.ops.aten.pow.Tensor_Scalar: _decomposes_pow}


def _eager_cpu_table() -> Mapping[Any, Any]:
    """`_eager_table` and the ops CPU ATen runs in BFloat16 arithmetic, rounded per step (`_eager_cpu_pow`)."""
    return {**_eager_table(), torch.ops.aten.pow.Tensor_Scalar: _eager_cpu_pow}


DECOMPOSITION_SETS: Mapping[str, Callable[[], Mapping[Any, Any]]] = {
    "inductor": _inductor_table,
    "core_aten": _core_aten_table,
    "eager": _eager_table,
    "eager-cpu": _eager_cpu_table,
}
"""Decomposition tables by name: ``"inductor"`` is the table Inductor applies before lowering
(``torch._inductor.decomposition.select_decomp_table()``; `roundoff.capture.rewrite.decompose` adds
Inductor's lowerings of 16-bit means and variances to it for a program without a backward); ``"core_aten"`` is
``torch._decomp.core_aten_decompositions()``; ``"eager"`` the ops eager runs as rounded steps (`_eager_table`),
``"eager-cpu"`` those of eager on CPU (`_eager_cpu_table`).
Values are zero-argument factories (building a table
imports Inductor, which is slow, so it happens only when asked)."""


def decomposition_table(names: Sequence[str]) -> dict[Any, Any]:
    """The union of the named tables (a later name wins where two decompose the same op)."""
    if isinstance(names, str):
        raise TypeError(
            f"names must be a sequence of table names, got the string {names!r}; wrap it: [{names!r}]"
        )
    table: dict[Any, Any] = {}
    for name in names:
        if name not in DECOMPOSITION_SETS:
            raise CaptureError(
                f"unknown decomposition set {name!r}; known: {', '.join(sorted(DECOMPOSITION_SETS))}",
                construct="unknown decomposition set",
            )
        table.update(DECOMPOSITION_SETS[name]())
    return table
