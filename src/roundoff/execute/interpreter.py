"""`Lockstep`: one ``torch.fx.Interpreter`` pass that evaluates a graph under several numerics at once.

Each environment entry is a tuple with one value per *side* (e.g. the emulated policy, the fp64
oracle, a reference policy). Values are freed as soon as their last user has run (the
Interpreter's own garbage collection, with lifetimes extended for FMA sites, which read the
multiply's operands), so a graph of thousands of nodes needs about as much memory as one eager
run per side. `on_node(node, values, lockstep)` sees every node's values while its operands are
still alive: that is where streaming statistics and local error are computed. With ``keep=True``
nothing is freed and `env` can seed a later partial run (``run(..., initial_env=...)``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch
import torch.fx

from roundoff.capture.program import NODE_ID, Program


class Numerics(Protocol):
    """One side of a lockstep run (`PlanNumerics`, `OracleNumerics`)."""

    def load_input(self, node: torch.fx.Node, value: Any) -> Any: ...
    def evaluate(self, node: torch.fx.Node, read: Callable[[torch.fx.Node], Any], fresh: bool = False) -> Any: ...
    def finish_output(self, node: torch.fx.Node, value: Any) -> Any: ...


OnNode = Callable[[torch.fx.Node, tuple, "Lockstep"], None]


def is_random(node: torch.fx.Node) -> bool:
    """A node that samples random numbers (torch's ``nondeterministic_seeded`` tag: bernoulli, rand...).

    Lockstep draws it once, on the first side, and gives every other side that sample (converted
    like an input): runs that drew separately would differ by the draw, not by their numerics.
    """
    return node.op == "call_function" and torch.Tag.nondeterministic_seeded in getattr(node.target, "tags", ())


def _load(side: Numerics, node: torch.fx.Node, value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return type(value)(_load(side, node, v) for v in value)
    return side.load_input(node, value)


class Lockstep(torch.fx.Interpreter):
    """Runs `program`'s graph once per side, node by node, all sides in step."""

    def __init__(
        self,
        program: Program,
        sides: Sequence[Numerics],
        on_node: OnNode | None = None,
        keep: bool = False,
    ) -> None:
        super().__init__(program.graph_module, garbage_collect_values=not keep)
        self.program = program
        self.sides = tuple(sides)
        self.on_node = on_node
        self.name = f"roundoff:{program.name}"
        if not keep:
            self._extend_fma_lifetimes()

    def _extend_fma_lifetimes(self) -> None:
        """Keep a contracted multiply's operands alive until its FMA node has run."""
        by_id = {n.meta.get(NODE_ID): n for n in self.graph.nodes}
        order = {n: i for i, n in enumerate(self.graph.nodes)}
        extra: dict[torch.fx.Node, set[torch.fx.Node]] = {}
        for side in self.sides:
            plan = getattr(side, "plan", None)
            for d in plan.decisions.values() if plan is not None else ():
                if d.fma is not None and d.fma.contracted and d.node_id in by_id and d.fma.mul_id in by_id:
                    extra.setdefault(by_id[d.node_id], set()).update(by_id[d.fma.mul_id].all_input_nodes)
        if not extra:
            return
        last: dict[torch.fx.Node, torch.fx.Node] = {}
        for user, used in self.user_to_last_uses.items():
            for n in used:
                last[n] = user
        for user, deps in extra.items():
            for n in deps:
                if order[last.get(n, n)] < order[user]:
                    last[n] = user
        self.user_to_last_uses = {}
        for n, user in last.items():
            self.user_to_last_uses.setdefault(user, []).append(n)

    def run_inputs(self, inputs: Sequence[Any], initial_env: dict | None = None) -> tuple:
        """Run on flat `inputs`; returns one output tuple per side."""
        return self.run(*inputs, initial_env=initial_env, enable_io_processing=False)

    def run_node(self, n: torch.fx.Node) -> Any:
        with self._set_current_node(n):
            vals = self._values(n)
        if self.on_node is not None:
            self.on_node(n, vals, self)
        return vals

    def _values(self, n: torch.fx.Node) -> tuple:
        if n.op == "placeholder":
            raw = next(self.args_iter)
            return tuple(s.load_input(n, raw) for s in self.sides)
        if n.op == "get_attr":
            raw = self.fetch_attr(n.target)
            return tuple(s.load_input(n, raw) for s in self.sides)
        if n.op == "call_function":
            if is_random(n):  # one draw, shared: every side must see the same sample
                value = self.sides[0].evaluate(n, self.reader(0))
                return (value,) + tuple(_load(s, n, value) for s in self.sides[1:])
            return tuple(s.evaluate(n, self.reader(i)) for i, s in enumerate(self.sides))
        if n.op == "output":
            return tuple(
                torch.fx.node.map_arg(n.args[0], lambda p, i=i, s=s: s.finish_output(p, self.env[p][i]))
                for i, s in enumerate(self.sides)
            )
        raise ValueError(f"node {n.format_node()}: op kind {n.op!r} is not supported by roundoff's emulator")

    def reader(self, side: int) -> Callable[[torch.fx.Node], Any]:
        """A function reading side `side`'s current value of a producer node."""
        env = self.env
        return lambda p: env[p][side]
