"""Node values shared between the runs of different change sets.

Under a plan, a node's emulated value is a function of its own decision and the values of the
nodes it reads (`execute.PlanNumerics` reads a producer's decision for its storage format, and an FMA
site reads its multiply's operands: producers too). So two plans give a node the same value when the
node and every node upstream of it have the same decisions in both. `ValueCache.keys` numbers each
node of a plan by exactly that (its id, op, decision and its operands' numbers, interned: a Merkle
numbering of the graph), and the cache maps a number to the value some earlier run computed for it.
A change set then runs only the nodes whose number no earlier run has seen: the base plan's values
cover everything upstream of the changed nodes (what blame always reused), and the values of
earlier change sets cover what a search re-visits (ddmin's complements share most of their nodes
with the halves it tried before).

A decision's kernel `group` number and `source` are left out of the number: the emulation never
reads them (kernel boundaries reach it as `rounded_inputs`), and a fusion change elsewhere renumbers
every group. The base run's values stay; others are dropped least recently used first beyond a
budget in bytes.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

import torch
import torch.fx

from roundoff.capture.program import node_id
from roundoff.plan.model import NodeDecision, Plan

#: The decision fields the emulation reads: all but the kernel number and the source line.
_NUMERIC_FIELDS = tuple(f.name for f in dataclasses.fields(NodeDecision) if f.name not in ("group", "source"))


def _numeric(d: NodeDecision | None) -> Hashable:
    return None if d is None else tuple(getattr(d, f) for f in _NUMERIC_FIELDS)


def value_bytes(value: Any) -> int:
    """Bytes held by the tensors in `value` (a tensor or nested tuples/lists of them)."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (tuple, list)):
        return sum(value_bytes(v) for v in value)
    return 0


class ValueCache:
    """Values of nodes by their Merkle number (see the module docstring)."""

    def __init__(self, budget_bytes: int = 0) -> None:
        self.budget_bytes = budget_bytes
        self._numbers: dict[tuple, int] = {}
        self._values: dict[int, Any] = {}
        self._pinned: set[int] = set()
        self._lru: OrderedDict[int, int] = OrderedDict()  # number -> bytes, oldest first
        self._bytes = 0

    def keys(self, plan: Plan) -> dict[torch.fx.Node, int]:
        """Every node of `plan.program` but the output: its number (equal numbers, equal values)."""
        out: dict[torch.fx.Node, int] = {}
        for n in plan.program.nodes():
            if n.op == "output":
                continue
            nid = node_id(n)
            sig = (nid, n.op, n.target, _numeric(plan.decisions.get(nid)),
                   tuple(out[p] for p in n.all_input_nodes))
            out[n] = self._numbers.setdefault(sig, len(self._numbers))
        return out

    def env(self, keys: dict[torch.fx.Node, int]) -> dict[torch.fx.Node, Any]:
        """An ``initial_env`` holding every node of `keys` whose value is cached."""
        env = {}
        for n, k in keys.items():
            if k in self._values:
                env[n] = self._values[k]
                if k in self._lru:
                    self._lru.move_to_end(k)
        return env

    def store(self, key: int, value: Any, *, pinned: bool = False) -> None:
        """Keep `value` for `key`; `pinned` values are never dropped (the base run's)."""
        if key in self._values:
            return
        if pinned:
            self._values[key] = value
            self._pinned.add(key)
            return
        size = value_bytes(value)
        if size > self.budget_bytes:
            return
        self._values[key] = value
        self._lru[key] = size
        self._bytes += size
        while self._bytes > self.budget_bytes:
            old, old_size = self._lru.popitem(last=False)
            del self._values[old]
            self._bytes -= old_size

    def __contains__(self, key: int) -> bool:
        return key in self._values
