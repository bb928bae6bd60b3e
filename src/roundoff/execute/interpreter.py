"""`Lockstep`: one ``torch.fx.Interpreter`` pass that evaluates a graph under several numerics at once.

Each environment entry is a tuple with one value per *side* (e.g. the emulated policy, the fp64
oracle, a reference policy). Values are freed as soon as their last user has run (the
Interpreter's own garbage collection, with lifetimes extended for FMA sites, which read the
multiply's operands), so a graph of thousands of nodes needs about as much memory as one eager
run per side. `on_node(node, values, lockstep)` sees every node's values while its operands are
still alive: that is where streaming statistics and local error are computed; it may return a
replacement tuple to store (e.g. one tensor shared by two sides whose values are equal). With
``recompute=(i, ...)``, those sides' long-lived values (of at least `recompute_min_numel` elements)
are dropped and recomputed when a far use reads them (`roundoff.execute.recompute`, checkpoints within
`recompute_budget` of the graph's cost, by default `recompute.default_budget` of the inputs' device): a
forward+backward graph then holds about one segment of forward activations per side, not all of them.
An observer that substitutes a node's values (`on_node` returning a replacement) and lets a recompute
side drop them says so with `pin`: a recomputation then takes the substituted value, never the side's
own evaluation of that node.
With ``keep=True`` nothing is freed and `env` can seed a later partial run (``run(..., initial_env=...)``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import torch
import torch.fx

from roundoff.capture.program import NODE_ID, Program
from roundoff.execute.devices import inputs_device, on_device, relocation
from roundoff.execute.recompute import RecomputePlan, default_budget, plan_recompute
from roundoff.plan.cache import GraphCache


class Numerics(Protocol):
    """One side of a lockstep run (`PlanNumerics`, `OracleNumerics`)."""

    relocate: tuple[torch.device, torch.device] | None  # set by `Lockstep.run_inputs` (`relocation`)

    def load_input(self, node: torch.fx.Node, value: Any) -> Any: ...
    def evaluate(self, node: torch.fx.Node, read: Callable[[torch.fx.Node], Any], fresh: bool = False) -> Any: ...
    def finish_output(self, node: torch.fx.Node, value: Any) -> Any: ...


#: {graph module: {(graph, its length, sides' decisions ids, recompute sides, budget, min numel): (decisions,
#: schedule)}} (`Lockstep._schedule`).
_SCHEDULES: GraphCache[tuple] = GraphCache()

OnNode = Callable[[torch.fx.Node, tuple, "Lockstep"], "tuple | None"]
#: The placeholder for a value `Lockstep` dropped and will recompute (`recompute=`).
DROPPED = object()
#: The placeholder an `on_node` observer returns for a value it has consumed and no later node reads
#: but the output node (an output it judged as it was made): the run neither holds nor recomputes it,
#: and the output tuple carries the placeholder in its place.
RELEASED = object()


def chained(*observers: OnNode | None) -> OnNode:
    """One `on_node` calling each of `observers` in turn, each seeing the values the previous returned."""
    present = [o for o in observers if o is not None]

    def on_node(node: torch.fx.Node, vals: tuple, ls: Lockstep) -> tuple | None:
        replaced = None
        for observe in present:
            got = observe(node, vals, ls)
            if got is not None:
                vals = replaced = got
        return replaced

    return on_node


def is_random(node: torch.fx.Node) -> bool:
    """A node that samples random numbers (torch's ``nondeterministic_seeded`` tag: bernoulli, rand...).

    Lockstep draws it once, on the first side, and gives every other side that sample (converted
    like an input): runs that drew separately would differ by the draw, not by their numerics.
    An op tagged for an optional dropout (the fused attention kernels) draws nothing when its
    ``dropout_p`` is 0: each side then computes it (the oracle in fp64), like any deterministic op.
    """
    if node.op != "call_function" or torch.Tag.nondeterministic_seeded not in getattr(node.target, "tags", ()):
        return False
    p = _argument(node, "dropout_p")
    return not (isinstance(p, (int, float)) and p == 0)


def _argument(node: torch.fx.Node, name: str) -> Any:
    """The value of `node`'s schema argument `name` (positional, keyword or default); None if it has none."""
    schema = getattr(node.target, "_schema", None)
    for i, arg in enumerate(schema.arguments if schema is not None else ()):
        if arg.name == name:
            if i < len(node.args) and not arg.kwarg_only:
                return node.args[i]
            return node.kwargs.get(name, arg.default_value if arg.has_default_value() else None)
    return None


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
        recompute: Sequence[int] = (),
        recompute_budget: float | None = None,
        recompute_min_numel: int = 1 << 14,
    ) -> None:
        super().__init__(program.graph_module, garbage_collect_values=not keep)
        self.program = program
        self.sides = tuple(sides)
        self.on_node = on_node
        self.name = f"roundoff:{program.name}"
        self.recompute_sides = frozenset(recompute) if not keep else frozenset()
        self.recomputed = 0  # nodes evaluated again for far uses (`recompute`)
        self._now = 0  # index of the node being run
        self._recompute: RecomputePlan | None = None
        # recomputed values per side, for the current step and while a use is near
        self._cache: dict[int, dict[torch.fx.Node, Any]] = {i: {} for i in self.recompute_sides}
        self._raw: dict[torch.fx.Node, Any] = {}  # graph inputs as given, to reload dropped ones
        self._device: torch.device | None = None  # where the inputs are; constants follow them
        self._reads: dict[torch.fx.Node, tuple[torch.fx.Node, ...]] = {}  # operands + FMA operands
        self._release_after: dict[torch.fx.Node, list[torch.fx.Node]] = {}
        self._pinned: dict[torch.fx.Node, Mapping[int, Callable[[], Any]]] = {}  # `pin`
        if self.recompute_sides and not self.recompute_sides <= set(range(len(self.sides))):
            raise ValueError(f"recompute={tuple(recompute)}: there are only {len(self.sides)} sides")
        # scheduled by the first run, where the inputs' device is known (`default_budget`)
        self._unscheduled = None if keep else (recompute_budget, recompute_min_numel)

    def _schedule(self, budget: float, min_numel: int) -> None:
        """Lifetimes (FMA extensions) and the recomputation plan: a pure function of the graph, the sides'
        decisions and the parameters, so computed once per such key and shared (read-only) by later runs."""
        plans = tuple(getattr(s, "plan", None) for s in self.sides)
        held = (self.graph, *(None if p is None else p.decisions for p in plans))  # their ids key the entry

        def build() -> tuple:
            extra = self._extend_folded_lifetimes()
            if self.recompute_sides:
                rp = plan_recompute(
                    list(self.graph.nodes), self.user_to_last_uses, extra, is_random, budget, min_numel=min_numel)
                if rp.drop_after:  # else nothing to do per node
                    self._recompute = rp
                    self._reads = {
                        n: tuple(dict.fromkeys([*n.all_input_nodes, *extra.get(n, ())])) for n in self.graph.nodes}
                    self._release_after = self._apply_extensions(rp)
            return self.user_to_last_uses, self._recompute, self._reads, self._release_after

        schedule = _SCHEDULES.get(self.module, held, build, (self.recompute_sides, budget, min_numel))
        self.user_to_last_uses, self._recompute, self._reads, self._release_after = schedule

    def _apply_extensions(self, plan: RecomputePlan) -> dict[torch.fx.Node, list[torch.fx.Node]]:
        """Move each extended value's deletion to its extension; returns {old last user: values whose
        other sides are released there}."""
        nodes = list(self.graph.nodes)
        release: dict[torch.fx.Node, list[torch.fx.Node]] = {}
        for user in list(self.user_to_last_uses):
            keep = []
            for v in self.user_to_last_uses[user]:
                if v in plan.extend:
                    release.setdefault(user, []).append(v)
                    self.user_to_last_uses.setdefault(nodes[plan.extend[v]], []).append(v)
                else:
                    keep.append(v)
            self.user_to_last_uses[user] = keep
        return release

    def _extend_folded_lifetimes(self) -> dict[torch.fx.Node, set[torch.fx.Node]]:
        """Keep a contracted multiply's operands alive until its FMA node has run, and a matmul's until the
        add computed in its GEMM has (``NodeDecision.gemm``); returns {such node: the operands it reads
        beyond its own arguments}."""
        by_id = {n.meta.get(NODE_ID): n for n in self.graph.nodes}
        order = {n: i for i, n in enumerate(self.graph.nodes)}
        extra: dict[torch.fx.Node, set[torch.fx.Node]] = {}
        for side in self.sides:
            plan = getattr(side, "plan", None)
            for d in plan.decisions.values() if plan is not None else ():
                folded = d.fma.mul_id if d.fma is not None and d.fma.contracted else d.gemm
                if folded is not None and d.node_id in by_id and folded in by_id:
                    extra.setdefault(by_id[d.node_id], set()).update(by_id[folded].all_input_nodes)
        if not extra:
            return extra
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
        return extra

    def pin(self, node: torch.fx.Node, values: Mapping[int, Callable[[], Any]]) -> None:
        """Side i's value of `node` is ``values[i]()`` for each side given, when a recomputation reads it after
        the run dropped it: an observer's substitution survives recomputation (the other sides recompute
        their own). Each function is called per read: it may convert a held tensor rather than hold a copy."""
        self._pinned[node] = values

    def run_inputs(self, inputs: Sequence[Any], initial_env: dict | None = None) -> tuple:
        """Run on flat `inputs`; returns one output tuple per side."""
        self._device = inputs_device(inputs)
        if self._unscheduled is not None:
            budget, min_numel = self._unscheduled
            self._schedule(default_budget(self._device) if budget is None else budget, min_numel)
            self._unscheduled = None
        relocate = relocation(self.graph, self._device)
        for side in self.sides:
            side.relocate = relocate
        return self.run(*inputs, initial_env=initial_env, enable_io_processing=False)

    def constant(self, n: torch.fx.Node) -> Any:
        """The tensor constant a ``get_attr`` node fetches, on the inputs' device (`inputs_device`)."""
        return on_device(self.fetch_attr(n.target), self._device)

    def run_node(self, n: torch.fx.Node) -> Any:
        if self._recompute is not None:
            self._now = self._recompute.order[n]
        with self._set_current_node(n):
            vals = self._values(n)
        if self.on_node is not None:
            replaced = self.on_node(n, vals, self)
            vals = replaced if replaced is not None else vals
        if self._recompute is not None:
            vals = self._drop_and_evict(n, vals)
        return vals

    def _drop_and_evict(self, n: torch.fx.Node, vals: tuple) -> tuple:
        """Drop the recompute sides' values whose near uses end at `n`, release the other sides' values
        of extended ones read for the last time, and free recomputed values no near use reads."""
        sides, plan = self.recompute_sides, self._recompute
        for drops, gone in ((plan.drop_after, sides), (self._release_after, set(range(len(vals))) - sides)):
            for v in drops.get(n, ()):
                e = vals if v is n else self.env[v]
                e = tuple(DROPPED if i in gone and x is not RELEASED else x for i, x in enumerate(e))
                if v is n:
                    vals = e
                else:
                    self.env[v] = e
        for cache in self._cache.values():
            for v in [v for v in cache if not plan.needed_soon(v, self._now)]:
                del cache[v]
        return vals

    def _values(self, n: torch.fx.Node) -> tuple:
        if n.op == "placeholder":
            raw = next(self.args_iter)
            if self._recompute is not None:
                self._raw[n] = raw
            return tuple(s.load_input(n, raw) for s in self.sides)
        if n.op == "get_attr":
            raw = self.constant(n)
            return tuple(s.load_input(n, raw) for s in self.sides)
        if n.op == "call_function":
            if is_random(n):  # one draw, shared: every side must see the same sample
                value = self.sides[0].evaluate(n, self.reader(0))
                return (value,) + tuple(_load(s, n, value) for s in self.sides[1:])
            return tuple(s.evaluate(n, self.reader(i)) for i, s in enumerate(self.sides))
        if n.op == "output":
            return tuple(
                torch.fx.node.map_arg(n.args[0], lambda p, i=i, s=s: s.finish_output(p, self.reader(i)(p)))
                for i, s in enumerate(self.sides)
            )
        raise ValueError(f"node {n.format_node()}: op kind {n.op!r} is not supported by roundoff's emulator")

    def reader(self, side: int) -> Callable[[torch.fx.Node], Any]:
        """A function reading side `side`'s current value of a producer node (recomputed if dropped)."""
        env = self.env
        if side not in self.recompute_sides:
            return lambda p: env[p][side]

        def read(p: torch.fx.Node) -> Any:
            v = env[p][side] if p in env else DROPPED
            return self._recomputed(side, p) if v is DROPPED else v

        return read

    def _recomputed(self, side: int, target: torch.fx.Node) -> Any:
        """Side `side`'s value of `target`, evaluated again from its operands (operands that are
        gone too are made again first, in graph order, each freed once read for the last time unless a
        use is near); cached for the current step, and longer while a use is near."""
        numerics, env, cache, plan = self.sides[side], self.env, self._cache[side], self._recompute

        def available(p: torch.fx.Node) -> bool:
            return p in cache or (p in env and env[p][side] is not DROPPED)

        def pinned(p: torch.fx.Node) -> bool:
            return side in self._pinned.get(p, ())

        todo: set[torch.fx.Node] = set()
        stack = [target]
        while stack:
            p = stack.pop()
            if p not in todo and not available(p):
                todo.add(p)
                if not pinned(p):  # a pinned value reads nothing
                    stack.extend(self._reads[p])
        if not todo:
            return cache[target] if target in cache else env[target][side]
        seq = sorted(todo, key=plan.order.__getitem__)
        reads = Counter(q for p in seq for q in self._reads[p] if q in todo)
        local: dict[torch.fx.Node, Any] = {}

        def read(q: torch.fx.Node) -> Any:
            return local[q] if q in local else cache[q] if q in cache else env[q][side]

        for p in seq:
            if pinned(p):
                local[p] = self._pinned[p][side]()
            elif p.op == "placeholder":
                local[p] = numerics.load_input(p, self._raw[p])
            elif p.op == "get_attr":
                local[p] = numerics.load_input(p, self.constant(p))
            elif p.op == "call_function" and not is_random(p):
                local[p] = numerics.evaluate(p, read)
            else:  # `plan_recompute` never drops a value whose recomputation needs one of these
                raise RuntimeError(f"roundoff: cannot recompute node {p.format_node()} (internal error)")
            self.recomputed += 1
            for q in self._reads[p]:
                if q in local and q is not target:
                    reads[q] -= 1
                    if reads[q] == 0:
                        value = local.pop(q)
                        if plan.needed_soon(q, self._now):
                            cache[q] = value
        cache[target] = local.pop(target)
        return cache[target]
