"""Program: a captured aten-level FX graph whose nodes carry stable ids and source lines.

Node metadata contract (other layers rely on these keys):
- ``node.meta["roundoff_id"]``: stable id (``"n0"``, ``"n1"``, ...; a node made by rewriting node
  ``n7`` gets ``"n7.0"``, ``"n7.1"``, ...). Placeholders and the output node have ids too.
- ``node.meta["roundoff_source"]``: ``"file.py:LINE"`` of the user's code that made the node, or None.
- ``node.meta["val"]``: a (fake) tensor with the node's shape and dtype, or a tuple of them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import torch
import torch.fx

NODE_ID = "roundoff_id"
NODE_SOURCE = "roundoff_source"
#: The dotted path of the innermost nn.Module whose call made the node (``features.3.conv.4``), from the outermost
#: module the captured code called; None outside any module. Where every op of a model is made in one line
#: (``self.features(x)`` of an ``nn.Sequential``), it says which layer (trial 98: a MobileNet)
NODE_MODULE = "roundoff_module"
#: On the nodes a decomposition made of one captured node (``n7.0``, ``n7.1``, ...): that node's op name.
MADE_FROM = "roundoff_made_from"


def node_id(node: torch.fx.Node) -> str:
    """The stable roundoff id of `node`."""
    return node.meta[NODE_ID]


def base_id(nid: str) -> str:
    """The captured node a planned node was made from (``n7.1`` and ``n7@k2`` -> ``n7``)."""
    return nid.split("@")[0].split(".")[0]


def value_holders(graph: torch.fx.Graph) -> dict[str, str]:
    """{id of the node holding a decomposed node's value: that node's id}: where a plan's decomposition
    replaced captured node ``n7`` by ``n7.0``, ``n7.1``, ..., the last of them (``n7.3``, a 16-bit mean's
    cast after its fp32 sum and division). An override of ``n7`` applies there: it is ``n7``'s value."""
    ids = [str(n.meta.get(NODE_ID)) for n in graph.nodes if n.op != "output" and NODE_ID in n.meta]
    present = set(ids)
    last = {base_id(i): i for i in ids if "." in i and base_id(i) not in present}
    return {holder: base for base, holder in last.items()}


_aten = torch.ops.aten
#: Ops whose result depends on their tensor operand's shape, dtype and device only, not its values:
#: the backward's ``ones_like(loss)`` does not make every gradient depend on the loss's value.
SHAPE_ONLY = frozenset({
    _aten.ones_like.default, _aten.zeros_like.default, _aten.empty_like.default, _aten.full_like.default,
    _aten.new_ones.default, _aten.new_zeros.default, _aten.new_empty.default, _aten.new_full.default,
    _aten.sym_size.int, _aten.sym_numel.default,
})


def value_inputs(node: torch.fx.Node) -> list[torch.fx.Node]:
    """The nodes whose *values* `node` reads (`all_input_nodes`, none for a `SHAPE_ONLY` op)."""
    return [] if node.target in SHAPE_ONLY else node.all_input_nodes


def multi_output_parent(node: torch.fx.Node) -> torch.fx.Node | None:
    """The op node whose result `node` is one of (``getitem(op, i)`` of a multi-output op), else None."""
    if node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node) and isinstance(node.args[1], int):
        parent = node.args[0]
        return parent if parent.op == "call_function" else None
    return None


def output_op_name(node: torch.fx.Node) -> str:
    """The op's short name for reports; one result of a multi-output op as ``op[i]``
    (``native_layer_norm_backward[1]``), not ``getitem``."""
    parent = multi_output_parent(node)
    target = parent.target if parent is not None else node.target
    name = str(getattr(target, "_opname", None) or getattr(target, "__name__", None) or target)
    return f"{name}[{node.args[1]}]" if parent is not None else name


def node_source(node: torch.fx.Node) -> str | None:
    """``"file.py:LINE"`` of the user code that produced `node`, if known."""
    return node.meta.get(NODE_SOURCE)


def node_module(node: torch.fx.Node) -> str | None:
    """The dotted path of the module whose call produced `node` (`NODE_MODULE`), if known."""
    return node.meta.get(NODE_MODULE)


class SpecializationKind(Enum):
    """Where a captured graph holds a value eager computed at capture instead of computing it."""

    ITEM = "item"  # a tensor read as a Python value (.item(), float(t), .tolist(), .numpy())
    BRANCH = "branch"  # bool(tensor): an if/while/assert on tensor data took eager's branch
    SHAPE = "data-dependent shape"  # nonzero, boolean-mask indexing, unique: eager's indices
    RANDOM = "random"  # a random draw (dropout, randn): eager's draw


@dataclass(frozen=True)
class Specialization:
    """One graph break roundoff checks across: at `source` (``"file.py:LINE"``), the graph holds the
    value eager computed during the capture run (`detail` says which); every emulated run, the fp64
    oracle included, uses that value there. All kinds but `RANDOM` depend on the capture inputs."""

    kind: SpecializationKind
    source: str | None
    detail: str

    @property
    def depends_on_inputs(self) -> bool:
        return self.kind is not SpecializationKind.RANDOM

    def describe(self) -> str:
        """One line for reports."""
        where = self.source or "an unknown line"
        what = "draw" if self.kind is SpecializationKind.RANDOM else "value"
        return (
            f"checked across a graph break at {where} ({self.kind.value}: {self.detail}): "
            f"the emulated runs use the {what} eager computed there"
        )


def _same_bits(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return False
    if a.dtype != b.dtype or a.shape != b.shape or a.device != b.device:
        return False
    if a.data_ptr() == b.data_ptr() and a.stride() == b.stride():
        return True  # the same memory (a parameter fed from the example inputs)
    raw_a = a.detach().reshape(-1).contiguous().view(torch.uint8)
    return torch.equal(raw_a, b.detach().reshape(-1).contiguous().view(torch.uint8))


@dataclass
class Program:
    """An aten FX graph captured from a user's callable.

    `graph_module` takes the flattened tensor inputs in order (`input_names`) and returns a flat tuple
    of tensors: the forward outputs first (`num_forward_outputs` of them), then, when `backward`, one
    gradient per input that requires grad (`grad_input_names`, same order).

    `specializations` lists the graph breaks (``.item()``, ``if tensor:``, boolean masks, random
    draws) where the graph holds the value eager computed on `example_inputs`; a program with an
    input-dependent one runs only on those inputs (`check_inputs`).
    """

    graph_module: torch.fx.GraphModule
    example_inputs: tuple[torch.Tensor, ...]
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    num_forward_outputs: int
    backward: bool = False
    grad_input_names: tuple[str, ...] = ()
    name: str = "program"
    specializations: tuple[Specialization, ...] = ()
    #: (module, source line) of the modules torch.compile runs eagerly, not compiled (nn.RNN, nn.GRU,
    #: nn.LSTM: Dynamo graph-breaks on them unless ``torch._dynamo.config.allow_rnn``); roundoff captures and
    #: plans their ops as any others', so a compiler policy models them compiled (`sources.RNN_FUNCTIONS`)
    dynamo_fallbacks: tuple[tuple[str, str | None], ...] = ()
    # the example inputs' in-place version counters at capture (a parameter changed since then no
    # longer holds the values a specialized graph was captured with)
    example_versions: tuple[int, ...] = field(default=(), repr=False, compare=False)
    #: how many leading inputs are the callable's own arguments (the rest: a module's parameters and
    #: buffers, taken from `example_inputs` where a caller passes only the arguments); None: unknown
    #: (any prefix of the inputs is accepted)
    user_inputs: int | None = None
    #: the floating-point inputs that require grad (`capture`'s, with `backward` or not): a check without
    #: a backward notes a loss of them it did not differentiate (`analyze.output_verdicts.scope_notes`)
    trainable: tuple[str, ...] = ()
    #: the graph as `capture` made it, where a plan has rewritten this one (decompositions, CSE,
    #: rematerialised copies: `rewritten`); None where this is that graph
    as_captured: torch.fx.GraphModule | None = field(default=None, repr=False, compare=False)
    # id -> node, rebuilt when a lookup misses or finds a node no longer in the graph under that id
    _by_id: dict[str, torch.fx.Node] = field(default_factory=dict, init=False, repr=False, compare=False)
    #: what the layers above derive from this program and keep with it, by key (the planner's rounds of
    #: fusion and splitting, `plan.planner._split_rounds`); a rewritten program starts empty
    derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def graph(self) -> torch.fx.Graph:
        return self.graph_module.graph

    def rewritten(self, gm: torch.fx.GraphModule) -> Program:
        """This program with graph `gm`, a rewrite of this one (the same inputs, outputs and node ids)."""
        captured = self.graph_module if self.as_captured is None else self.as_captured
        return dataclasses.replace(self, graph_module=gm, as_captured=captured)

    def captured(self) -> Program:
        """This program with the graph `capture` made (itself where no plan has rewritten it)."""
        return self if self.as_captured is None else dataclasses.replace(self, graph_module=self.as_captured,
                                                                        as_captured=None)

    def nodes(self) -> Iterator[torch.fx.Node]:
        return iter(self.graph.nodes)

    def output_args(self) -> tuple[Any, ...]:
        """The output node's arguments, one per program output (a node, or a constant)."""
        out = next(n for n in self.graph.nodes if n.op == "output")
        return tuple(out.args[0]) if isinstance(out.args[0], (tuple, list)) else (out.args[0],)

    def output_labels(self) -> list[str]:
        """The name of each program output (`output_names`; ``output<i>`` where it has none)."""
        n = len(self.output_args())
        return [self.output_names[i] if i < len(self.output_names) else f"output{i}" for i in range(n)]

    def input_name(self, node: torch.fx.Node) -> str:
        """The user's name of a placeholder `node` (`input_names`, by position: ``t``, not ``arg1_1``); its graph
        name for any other node."""
        if node.op == "placeholder":
            i = [n for n in self.graph.nodes if n.op == "placeholder"].index(node)
            if i < len(self.input_names):
                return self.input_names[i]
        return node.name

    def node(self, roundoff_id: str) -> torch.fx.Node:
        """The node with stable id `roundoff_id` (the first in graph order); KeyError naming the id if absent."""
        n = self._by_id.get(roundoff_id)
        if n is None or n._erased or n.graph is not self.graph or n.meta.get(NODE_ID) != roundoff_id:
            self._by_id.clear()
            for m in self.graph.nodes:
                self._by_id.setdefault(m.meta.get(NODE_ID), m)
            n = self._by_id.get(roundoff_id)
        if n is None:
            raise KeyError(f"no node with id {roundoff_id!r} in program {self.name!r}")
        return n

    def check_inputs(self, inputs: Sequence[Any]) -> None:
        """ValueError if the program was specialized to its capture inputs (an ``.item()``, a branch
        or a data-dependent shape) and `inputs` differ from them in any bit; a no-op otherwise."""
        pinned = [s for s in self.specializations if s.depends_on_inputs]
        if not pinned:
            return
        first = pinned[0]
        where = f"{first.source or 'an unknown line'} ({first.kind.value}: {first.detail})"
        for name, ex, version in zip(self.input_names, self.example_inputs, self.example_versions):
            if isinstance(ex, torch.Tensor) and ex._version != version:
                raise ValueError(
                    f"input {name!r} of program {self.name!r} was changed in place since the "
                    f"capture, and the program holds eager's value from its capture run at a graph "
                    f"break at {where}; capture again"
                )
        for name, x, ex in zip(self.input_names, inputs, self.example_inputs):
            if not _same_bits(x, ex):
                raise ValueError(
                    f"program {self.name!r} holds eager's value from its capture run at a graph "
                    f"break at {where}, so it runs only on its capture inputs, and input {name!r} "
                    "differs; capture again with these inputs"
                )


def graph_fingerprint(program: Program) -> str:
    """12 hex digits of sha256 over the captured graph's node ids with their op targets: equal for
    two captures of one program, different where node ids would name other ops."""
    lines = [f"{n.meta.get(NODE_ID)}={n.op}:{n.target}" for n in program.graph.nodes]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:12]
