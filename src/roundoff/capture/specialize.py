"""Check across graph breaks: pin the values eager computed where a graph cannot compute them itself.

roundoff traces the user's function once on the real example inputs (make_fx, real tensors), so
code that torch.compile runs with a graph break (``.item()``, ``if x.sum() > 0:``, ``x[x > 0]``,
``nonzero``, ``.tolist()``) runs as eager runs it and the graph holds what eager computed there:

- a Python value read from a tensor (``.item()``, a branch) is baked into the ops that use it by the
  tracer itself; `roundoff.capture.sources.SourceRecorder` records where;
- a data-dependent shape is made static here: a boolean mask used as an index becomes eager's
  ``nonzero`` indices (the same elements, in the same order, and the same accumulation into zeros in
  the backward), and a ``nonzero``/``unique``/``masked_select`` result becomes eager's result (an op
  whose shape integer operands alone decide, a CTC loss, stays an op: `retrace.SHAPE_FROM_INTEGERS`);
- a random draw (dropout's ``bernoulli_``, ``randn``) becomes eager's draw, so that every emulated
  run, the oracle and the real eager replay of the graph see one and the same sample;
- a selection (``topk``, ``sort``, ``argmax``, ``argmin``) whose indices a value pinned above is computed
  from becomes eager's choice, its values taken from the scores at those indices: the pinned value holds
  eager's choice, and a run that chose otherwise upstream of it would mix two choices (trial 65: a
  Qwen3-MoE's expert loop, ``torch.where(expert_mask[e])`` pinned, gave expert 0 the fp64 router's weight
  of expert 6, and eager's step failed against that hybrid oracle at 79x).

Each becomes a `Specialization` on the Program: reports say the check crossed a graph break there,
and the program refuses other inputs (`Program.check_inputs`).
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import get_proxy_slot
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from roundoff.capture.program import NODE_MODULE, NODE_SOURCE, Specialization, SpecializationKind
from roundoff.capture.retrace import SHAPE_FROM_INTEGERS
from roundoff.capture.sources import VALUE_READ, reads_tensor_data

aten = torch.ops.aten

# Ops taking a list of indices, where a boolean index means "the elements where the mask is true".
_INDEXING = {
    aten.index.Tensor,
    aten._unsafe_index.Tensor,
    aten.index_put.default,
    aten.index_put_.default,
    aten._unsafe_index_put.default,
    aten._index_put_impl_.default,
}


# Random ops whose output is the draw itself (tensor arguments give only shape, dtype or the
# distribution's parameters), so pinning the draw keeps every value that flows from the data. Other
# ops tagged random (fused attention or dropout kernels with a dropout probability) are left alone.
_DRAWS = frozenset({
    "bernoulli", "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal",
    "uniform", "exponential", "cauchy", "log_normal", "geometric", "random", "multinomial", "poisson",
    "binomial", "_standard_gamma", "_sample_dirichlet",
})


def _is_draw(func: Any) -> bool:
    if not isinstance(func, torch._ops.OpOverload):
        return False
    name = func._schema.name.split("::")[-1].rstrip("_")
    return torch.Tag.nondeterministic_seeded in func.tags and name in _DRAWS


#: How a selection held at eager's choice is described (`Specialization.detail`: ``topk = eager's choice ...``).
EAGERS_CHOICE = "= eager's choice (a graph break below reads it)"
#: Selections pinned to eager's choice where a pinned value is computed from it (module doc).
_CHOOSING = frozenset({aten.topk.default, aten.sort.default, aten.sort.stable, aten.argmax.default,
                       aten.argmin.default})
#: Those that also return values: the scores at their indices, ``gather(scores, dim, indices)``.
_WITH_VALUES = frozenset({aten.topk.default, aten.sort.default, aten.sort.stable})


def _is_mask(t: Any) -> bool:
    return isinstance(t, torch.Tensor) and t.dtype in (torch.bool, torch.uint8)


class EagerValues(TorchDispatchMode):
    """While tracing in real mode (entered inside make_fx, so that it sees each aten op before the
    tracer records it), keep a copy of the values the graph will hold as constants: each random
    op's and data-dependent-shape op's outputs, and each boolean index mask, by the node that
    produced them."""

    def __init__(self, tracer: Any) -> None:
        super().__init__()
        self._tracer = tracer
        self.outputs: dict[torch.fx.Node, torch.Tensor] = {}
        self.masks: dict[torch.fx.Node, torch.Tensor] = {}
        self.selects: set[torch.fx.Node | None] = set()  # masked_select(x, mask), same shapes
        self.choices: dict[torch.fx.Node, torch.Tensor] = {}  # a selection's node -> eager's indices

    def _record_mask(self, idx: Any) -> None:
        node = self._node(idx) if _is_mask(idx) else None
        if node is not None and node not in self.masks:
            self.masks[node] = idx.detach().clone()

    def _node(self, t: torch.Tensor) -> torch.fx.Node | None:
        slot = get_proxy_slot(t, self._tracer, None)
        return None if slot is None else slot.proxy.node  # type: ignore[attr-defined]

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        if func in _INDEXING and len(args) > 1:
            for idx in args[1]:
                self._record_mask(idx)
        select = func is aten.masked_select.default and args[0].shape == args[1].shape
        if select:
            self._record_mask(args[1])
        out = func(*args, **kwargs)
        if func in _CHOOSING:
            indices = out[-1] if isinstance(out, (tuple, list)) else out
            node = self._node(indices)
            op_node = node.args[0] if node is not None and node.target is operator.getitem else node
            if op_node is not None:
                self.choices[op_node] = indices.detach().clone()
        if select:
            self.selects.add(self._node(out))
        elif _is_draw(func) or (
            torch.Tag.dynamic_output_shape in func.tags and func not in _INDEXING and func not in SHAPE_FROM_INTEGERS
        ):
            for t in tree_leaves(out):
                node = self._node(t) if isinstance(t, torch.Tensor) else None
                if node is not None:
                    self.outputs[node] = t.detach().clone()
        return out


def _constant(
    gm: torch.fx.GraphModule, name: str, value: torch.Tensor, like: torch.fx.Node
) -> torch.fx.Node:
    setattr(gm, name, value)
    node = gm.graph.create_node("get_attr", name)
    node.meta["val"] = like.meta.get("val") if "val" in like.meta else None
    node.meta[NODE_SOURCE] = like.meta.get(NODE_SOURCE)
    node.meta[NODE_MODULE] = like.meta.get(NODE_MODULE)
    return node


def pin_eager_values(gm: torch.fx.GraphModule, values: EagerValues) -> list[Specialization]:
    """Rewrite `gm` in place to hold the recorded values (see the module docstring); return one
    Specialization per data read the recorder did not see, then one per op whose output was pinned
    and per boolean mask, in graph order. An op's shape read into Python (``x[m].numel()``) counts
    even where the graph no longer uses the op."""
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    reads = [
        Specialization(
            SpecializationKind.ITEM, node.meta.get(NODE_SOURCE), f"{_op_name(node)} reads tensor data"
        )
        for node in gm.graph.nodes
        if node.op == "call_function"
        and reads_tensor_data(node.target)
        and not node.meta.pop(VALUE_READ, False)
    ]
    made: dict[torch.fx.Node, Specialization] = {}
    for node, value in values.outputs.items():
        op_node = node.args[0] if node.target is operator.getitem else node
        if op_node not in made:
            kind = SpecializationKind.RANDOM if _is_draw(op_node.target) else SpecializationKind.SHAPE
            made[op_node] = Specialization(kind, node.meta.get(NODE_SOURCE), _op_detail(node, value))
    for mask_node, mask in values.masks.items():
        selected = int(mask.count_nonzero())
        made[mask_node] = Specialization(
            SpecializationKind.SHAPE,
            mask_node.meta.get(NODE_SOURCE),
            f"boolean mask indexing selects {selected} of {mask.numel()} elements",
        )
    pinned = {(n.args[0] if n.target is operator.getitem else n) for n in values.outputs} | set(values.masks)
    for node in _upstream_choices(pinned, values.choices):
        made[node] = Specialization(SpecializationKind.SHAPE, node.meta.get(NODE_SOURCE),
                                    f"{_op_name(node)} {EAGERS_CHOICE}")
    gm.graph.eliminate_dead_code()  # outputs nobody reads (unique's counts when not asked for)
    live = {n for n in gm.graph.nodes}
    outputs = [(n, v) for n, v in values.outputs.items() if n in live and n.users]
    for k, (node, value) in enumerate(sorted(outputs, key=lambda kv: order[kv[0]])):
        _pin_output(gm, k, node, value)
    for node in values.selects:  # x.masked_select(mask) is x[mask]: the same elements, in order
        if node in live:
            node.target, node.args = aten.index.Tensor, (node.args[0], [node.args[1]])
    masks = [(n, m) for n, m in values.masks.items() if n in live]
    for k, (mask_node, mask) in enumerate(sorted(masks, key=lambda kv: order[kv[0]])):
        _pin_mask(gm, k, mask_node, mask)
    chosen = [n for n in made if n in values.choices and n in live]
    for k, node in enumerate(sorted(chosen, key=order.__getitem__)):
        _pin_choice(gm, k, node, values.choices[node])
    return reads + [made[n] for n in sorted(made, key=order.__getitem__)]


def _upstream_choices(pinned: set[torch.fx.Node], choices: dict[torch.fx.Node, torch.Tensor]) -> list[torch.fx.Node]:
    """The recorded selections some node in `pinned` is computed from."""
    seen: set[torch.fx.Node] = set()
    todo = list(pinned)
    while todo:
        for p in todo.pop().all_input_nodes:
            if p not in seen:
                seen.add(p)
                todo.append(p)
    return [n for n in choices if n in seen]


def _pin_choice(gm: torch.fx.GraphModule, k: int, node: torch.fx.Node, indices: torch.Tensor) -> None:
    """Replace selection `node`'s indices by eager's, and its values (topk, sort) by the scores it
    reads gathered at them, so that every run takes eager's choice with its own scores."""
    with gm.graph.inserting_before(node):
        const = _constant(gm, f"eager_choice{k}", indices, node)
    const.meta["val"] = _fake_like(node, indices) if not isinstance(node.meta.get("val"), (tuple, list)) else (
        node.meta["val"][-1])
    if node.target not in _WITH_VALUES:  # argmax / argmin: the indices alone
        node.replace_all_uses_with(const)
        _erase_unused(gm, node)
        return
    dim = node.args[2] if node.target is aten.topk.default and len(node.args) > 2 else node.kwargs.get(
        "dim", node.args[1] if node.target is aten.sort.default and len(node.args) > 1 else -1)
    for item in list(node.users):
        if item.target is not operator.getitem:
            continue
        if item.args[1] == 1:
            item.replace_all_uses_with(const)
        else:
            with gm.graph.inserting_before(item):
                gathered = gm.graph.call_function(aten.gather.default, (node.args[0], dim, const))
            gathered.meta.update({k: v for k, v in item.meta.items() if k in ("val", NODE_SOURCE, NODE_MODULE, "stack_trace")})
            item.replace_all_uses_with(gathered)
        gm.graph.erase_node(item)
    if not node.users:
        gm.graph.erase_node(node)


def _pin_output(gm: torch.fx.GraphModule, k: int, node: torch.fx.Node, value: torch.Tensor) -> None:
    """Replace `node` (a random draw or a data-dependent-shape op's output) by eager's value."""
    op = node.args[0].target if node.target is operator.getitem else node.target
    with gm.graph.inserting_before(node):
        const = _constant(gm, f"eager_{'random' if _is_draw(op) else 'value'}{k}", value, node)
        if isinstance(node.target, torch._ops.OpOverload) and node.target._schema.is_mutable:
            # a copy, so that the in-place ops that followed the draw do not write into it
            const = gm.graph.call_function(aten.clone.default, (const,))
            const.meta["val"] = node.meta.get("val")
            const.meta[NODE_SOURCE] = node.meta.get(NODE_SOURCE)
            const.meta[NODE_MODULE] = node.meta.get(NODE_MODULE)
    node.replace_all_uses_with(const)
    _erase_unused(gm, node)


def _pin_mask(
    gm: torch.fx.GraphModule, k: int, mask_node: torch.fx.Node, mask: torch.Tensor
) -> None:
    """Replace `mask_node` where an indexing op uses it by eager's nonzero indices of the mask."""
    users = [u for u in mask_node.users if u.op == "call_function" and u.target in _INDEXING]
    columns = mask.nonzero(as_tuple=True)
    for user in users:
        indices = list(user.args[1])
        pos = indices.index(mask_node)
        with gm.graph.inserting_before(user):
            consts = [
                _constant(gm, f"eager_mask{k}_dim{d}", col, mask_node) for d, col in enumerate(columns)
            ]
        for c, col in zip(consts, columns):
            c.meta["val"] = _fake_like(mask_node, col)
        user.args = (user.args[0], indices[:pos] + consts + indices[pos + 1 :], *user.args[2:])


def _erase_unused(gm: torch.fx.GraphModule, node: torch.fx.Node) -> None:
    """Erase a pinned node (random ops count as impure, so dead-code elimination keeps them), and
    the multi-output op it was a ``getitem`` of once none of its outputs is used."""
    if node.users:
        return
    parent = node.args[0] if node.target is operator.getitem else None
    gm.graph.erase_node(node)
    if isinstance(parent, torch.fx.Node) and not parent.users:
        gm.graph.erase_node(parent)


def _fake_like(node: torch.fx.Node, value: torch.Tensor) -> Any:
    val = node.meta.get("val")
    mode = getattr(val, "fake_mode", None)
    if mode is None:
        return None
    return mode.from_tensor(value)


def _op_name(node: torch.fx.Node) -> str:
    if node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node):
        return f"{_op_name(node.args[0])}[{node.args[1]}]"
    return str(node.target).replace("aten.", "").split(".")[0]


def _op_detail(node: torch.fx.Node, value: torch.Tensor) -> str:
    return f"{_op_name(node)} -> {str(value.dtype).removeprefix('torch.')}{list(value.shape)}"
