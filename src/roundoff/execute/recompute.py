"""Which long-lived values a streaming `Lockstep` drops, where it drops them, and what it keeps.

A forward+backward graph reads most forward values again in the backward, hundreds of nodes later;
a streaming run keeps each of them alive across that gap, on every side (the fp64 oracle's at 4x the
bytes of the bf16 values it shadows). `RecomputePlan` drops such a value once its *near* uses (within
`window` nodes of its definition) have run and has the Lockstep recompute it, from its operands, when
a far use reads it (activation checkpointing); a recomputed value is kept while another use is near.

Recomputation cascades through operands that are gone too, so some long-lived values are kept as
checkpoints: walking the graph in order, a value is kept when recomputing it (with everything it
would have to recompute) would cost more than `budget` of the whole graph's estimated cost, or would
recompute more than `MAX_DEPTH` nodes. Costs are flop estimates from the capture's shapes (2mnk for
a matmul, one per output element otherwise).

Numeric contract: none of its own. A recomputed value is the same side's ``evaluate`` of the same node
on the same operand values, so it equals the dropped one bit for bit wherever the op is
deterministic (every CPU op; on CUDA, ops using atomics, such as ``index_add``, may differ in the
last bit). Nodes that draw random numbers or write into an operand, and every node whose
recomputation would need one, are never dropped.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import torch
import torch.fx

from roundoff.execute.formats import is_float

#: Most nodes one recomputation may evaluate (recomputation is iterative; this bounds its latency).
MAX_DEPTH = 256
#: The `budget` a run takes by default, by the inputs' device. On CPU the fp64 oracle's working set is
#: what a check's memory is made of: at 1/8 the screen of a 256-wide transformers Llama step peaks at
#: 3.3x eager's memory, at 1/32 at 4.4x, for 1.2x the time; programs of small tensors (under
#: `min_numel`) are not affected (bench/results/check-memory-cpu-session31.md). On CUDA a check is within
#: its memory target at 1/32 and a recomputation adds launches to every replay of a captured graph.
DEFAULT_BUDGETS: Mapping[str, float] = MappingProxyType({"cpu": 1 / 8, "cuda": 1 / 32})
_aten = torch.ops.aten
_MATMULS = (_aten.mm.default, _aten.bmm.default, _aten.addmm.default, _aten.baddbmm.default)


def default_budget(device: torch.device | None) -> float:
    """`DEFAULT_BUDGETS` for `device` (CPU where unknown; CUDA's for any other accelerator)."""
    return DEFAULT_BUDGETS["cpu" if device is None or device.type == "cpu" else "cuda"]


@dataclass(frozen=True)
class RecomputePlan:
    """Where a streaming Lockstep drops and keeps the recompute sides' values.

    - `drop_after[u]`: values whose recompute sides' values are dropped once node `u` has run (`u` may be
      the value itself); a far use recomputes it.
    - `extend[v] = i`: a value some recomputation reads after `v`'s last use (a checkpoint, a random
      draw): its recompute sides' values live until node `i` has run, while the other sides' values
      are released at its last use as usual.
    - `readers[v]`: indices of the nodes reading `v`, ascending; a recomputed value is kept while a
      reader comes within `window` nodes, and made again for a later one.
    """

    drop_after: Mapping[torch.fx.Node, tuple[torch.fx.Node, ...]]
    extend: Mapping[torch.fx.Node, int]
    readers: Mapping[torch.fx.Node, tuple[int, ...]]
    order: Mapping[torch.fx.Node, int]
    window: int

    def needed_soon(self, v: torch.fx.Node, now: int) -> bool:
        """Whether a node after `now` and within `window` of it reads `v`."""
        uses = self.readers.get(v, ())
        i = bisect.bisect_right(uses, now)
        return i < len(uses) and uses[i] <= now + self.window

    @property
    def dropped(self) -> frozenset[torch.fx.Node]:
        return frozenset(v for vs in self.drop_after.values() for v in vs)


def _numel(val: object) -> int:
    """Elements of a node's value (0 where its size is symbolic and unknown)."""
    if isinstance(val, torch.Tensor):
        try:
            return int(val.numel())
        except (TypeError, ValueError, RuntimeError):  # an unbacked symbolic size
            return 0
    if isinstance(val, (tuple, list)):
        return sum(_numel(v) for v in val)
    return 0


def _is_float_value(val: object) -> bool:
    """A float tensor, or a tuple holding one (a multi-output node's value)."""
    return is_float(val) or (isinstance(val, (tuple, list)) and any(is_float(v) for v in val))


def _mutates(node: torch.fx.Node) -> bool:
    """An op that writes into an operand (evaluating it twice would write twice)."""
    schema = getattr(node.target, "_schema", None)
    return schema is not None and schema.is_mutable


def is_view(node: torch.fx.Node) -> bool:
    """`node` returns an alias of an operand (view, permute, expand, slice, ...): free to make again."""
    schema = getattr(node.target, "_schema", None)
    return schema is not None and any(r.alias_info is not None for r in schema.returns)


def node_cost(node: torch.fx.Node) -> float:
    """Estimated flops of evaluating `node` (at least 1; a view costs 1)."""
    if node.op == "call_function" and is_view(node):
        return 1.0
    out = _numel(node.meta.get("val"))
    if node.target in _MATMULS:
        shapes = [a.meta.get("val") for a in node.all_input_nodes]
        mats = [s for s in shapes if isinstance(s, torch.Tensor) and s.dim() >= 2]
        if mats:
            return max(1.0, 2.0 * out * mats[-1].shape[-2])  # 2 * (outputs) * (reduced length)
    return max(1.0, float(out))


def plan_recompute(
    nodes: list[torch.fx.Node],
    last_uses: Mapping[torch.fx.Node, Iterable[torch.fx.Node]],
    extra_reads: Mapping[torch.fx.Node, Iterable[torch.fx.Node]],
    is_random: Callable[[torch.fx.Node], bool],
    budget: float,
    window: int | None = None,
    min_numel: int = 0,
) -> RecomputePlan:
    """The drop points for `nodes` (graph order) of an Interpreter whose `user_to_last_uses` is `last_uses`.

    `extra_reads[u]`: nodes that `u` reads beyond its arguments (an FMA site reads its multiply's
    operands). `budget`: the most one recomputation may cost, as a fraction of the graph's total cost.
    `window`: uses at most this many nodes after the definition are near (default: 1/16 of the graph,
    at least 32 nodes). Values of fewer than `min_numel` elements are never dropped (recomputing
    them would cost more time than their bytes are worth).
    """
    order = {n: i for i, n in enumerate(nodes)}
    window = window if window is not None else max(32, len(nodes) // 16)
    last_use: dict[torch.fx.Node, int] = {}
    for user, used in last_uses.items():
        for n in used:
            last_use[n] = order[user]
    readers: dict[torch.fx.Node, list[int]] = {n: [order[u] for u in n.users if u in order] for n in nodes}
    for user, used in extra_reads.items():
        for n in used:
            readers.setdefault(n, []).append(order[user])
    limit = budget * sum(node_cost(n) for n in nodes)
    # recomputable: every ancestor is a graph input or a deterministic call (no random draw), so a
    # recomputation never needs a value that cannot be made again.
    recomputable: dict[torch.fx.Node, bool] = {}
    # What recomputing a node at a far use evaluates: itself and every operand that is gone by then,
    # transitively (each node once); None: more than MAX_DEPTH nodes. A kept value adds nothing.
    redo: dict[torch.fx.Node, frozenset[torch.fx.Node] | None] = {}
    drop_after: dict[torch.fx.Node, list[torch.fx.Node]] = {}
    kept: set[torch.fx.Node] = set()
    for n in nodes:
        ins = list(dict.fromkeys([*n.all_input_nodes, *extra_reads.get(n, ())]))
        if n.op in ("placeholder", "get_attr"):
            recomputable[n], redo[n] = True, frozenset((n,))  # reloaded from the raw input
        elif n.op == "call_function" and not is_random(n) and not _mutates(n):
            recomputable[n] = all(recomputable.get(p, False) for p in ins)
            parts = [redo.get(p, frozenset()) for p in ins]
            redo[n] = None if any(r is None for r in parts) else frozenset((n,)).union(*parts)  # type: ignore[arg-type]
            if redo[n] is not None and len(redo[n]) > MAX_DEPTH:
                redo[n] = None
        else:
            recomputable[n], redo[n] = False, frozenset()
            continue
        long_lived = n in last_use and last_use[n] - order[n] > window
        if not long_lived:
            continue  # freed at its last use: a far recomputation makes it again
        far = [i for i in readers.get(n, ()) if i - order[n] > window]
        val = n.meta.get("val")
        droppable = recomputable[n] and _is_float_value(val) and _numel(val) >= min_numel and far
        todo = redo[n]
        too_costly = todo is None or math.fsum(node_cost(p) for p in todo) > limit
        if not droppable or (n.op == "call_function" and too_costly):
            redo[n] = frozenset()  # kept (a checkpoint): alive while far uses read it
            kept.add(n)
            continue
        near = [i for i in readers.get(n, ()) if i - order[n] <= window]
        drop_after.setdefault(nodes[max(near)] if near else n, []).append(n)
    dropped = {v for vs in drop_after.values() for v in vs}
    return RecomputePlan(
        drop_after={u: tuple(vs) for u, vs in drop_after.items()},
        extend=_extensions(nodes, order, last_use, dropped, kept, recomputable, extra_reads),
        readers={n: tuple(sorted(r)) for n, r in readers.items() if r}, order=order, window=window,
    )


def _extensions(
    nodes: list[torch.fx.Node], order: Mapping[torch.fx.Node, int], last_use: Mapping[torch.fx.Node, int],
    dropped: set[torch.fx.Node], kept: set[torch.fx.Node], recomputable: Mapping[torch.fx.Node, bool],
    extra_reads: Mapping[torch.fx.Node, Iterable[torch.fx.Node]],
) -> dict[torch.fx.Node, int]:
    """{kept value: the last node at which some recomputation may read it}, where that is after its
    last use. Walking users before producers, `need[n]` is the latest time a recomputation may read
    `n`; a dropped value, or a freed short-lived one that can be made again, is recomputed then, so
    its operands are needed as late; a `kept` value (a checkpoint) or one that cannot be made again (a
    random draw) stays alive instead."""
    need = {n: last_use.get(n, order[n]) for n in nodes}
    extend: dict[torch.fx.Node, int] = {}
    for n in reversed(nodes):
        if n.op in ("placeholder", "get_attr"):
            continue  # reloaded from the raw input
        late = need[n] > last_use.get(n, order[n])
        if n in dropped or (late and n not in kept and recomputable.get(n, False)):
            for p in (*n.all_input_nodes, *extra_reads.get(n, ())):
                need[p] = max(need[p], need[n])
        elif late:
            extend[n] = need[n]
    return extend
