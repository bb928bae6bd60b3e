"""`GraphCache`: what a graph and a plan's decisions determine (a schedule, per-node tables), computed once.

Keyed by the graph module (weakly: the entries go with it) and by the identity of the objects that
determine the value (the graph, a plan's `decisions`); each entry holds those objects, so an id cannot be
reused by another object while the entry lives. Per graph module only the latest `size` entries are
kept: blame makes a plan per candidate change set.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

import torch.fx

T = TypeVar("T")


class GraphCache(Generic[T]):
    """``get(gm, held, build, extra)``: `build()`'s value for `gm` and the objects `held`, cached."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._store: weakref.WeakKeyDictionary[torch.fx.GraphModule, dict[tuple, tuple[tuple, T]]] = (
            weakref.WeakKeyDictionary())

    def get(self, gm: torch.fx.GraphModule, held: tuple[Any, ...], build: Callable[[], T],
            extra: tuple[Hashable, ...] = ()) -> T:
        """The value built for `gm`, the identities of `held` (the graph, decisions, ...) and `extra`
        (plain hashable settings); `build()` runs on a miss."""
        key = (len(gm.graph.nodes), *(id(h) for h in held), *extra)
        cache = self._store.setdefault(gm, {})
        hit = cache.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], held)):
            return hit[1]
        value = build()
        if len(cache) >= self.size:
            del cache[next(iter(cache))]
        cache[key] = (held, value)
        return value

    def __len__(self) -> int:
        """Entries held, over every graph module."""
        return sum(len(entries) for entries in self._store.values())

    def clear(self) -> None:
        self._store.clear()
