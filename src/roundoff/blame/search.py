"""Searches over change sets: Zeller's ddmin, and the prefix search Polygraphy's `debug precision` does.

Both take the candidate changes and a predicate `fixes(subset) -> bool` ("the program run with
these changes is within tolerance of the reference") and count how many distinct subsets they had
to evaluate; a subset asked for twice is answered from a memo and not counted again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


class _Memo(Generic[T]):
    """Memoised predicate over subsets, given as sorted index tuples into `items`."""

    def __init__(self, items: Sequence[T], fixes: Callable[[tuple[T, ...]], bool]) -> None:
        self._items = tuple(items)
        self._fixes = fixes
        self._seen: dict[tuple[int, ...], bool] = {}
        self.evaluations = 0

    def __call__(self, idx: Sequence[int]) -> bool:
        key = tuple(sorted(idx))
        if key not in self._seen:
            self.evaluations += 1
            self._seen[key] = bool(self._fixes(tuple(self._items[i] for i in key)))
        return self._seen[key]


@dataclass(frozen=True)
class SearchOutcome(Generic[T]):
    """What a search found: the change set (None when even all changes don't fix), and its cost."""

    changes: tuple[T, ...] | None
    evaluations: int
    all_fix: bool
    none_fix: bool


def _split(items: list[T], n: int) -> list[list[T]]:
    size, extra = divmod(len(items), n)
    out: list[list[T]] = []
    start = 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(items[start:end])
        start = end
    return [c for c in out if c]


def ddmin(items: Sequence[T], fixes: Callable[[tuple[T, ...]], bool]) -> SearchOutcome[T]:
    """Zeller & Hildebrandt's ddmin: a 1-minimal subset of `items` for which `fixes` holds.

    1-minimal: removing any single item from the result makes `fixes` false. Preconditions are
    checked and reported in the outcome, not raised: when `fixes(())` already holds the answer is
    the empty set; when `fixes(items)` does not hold, `changes` is None. Item order is kept.
    """
    test = _Memo(items, fixes)
    everything = list(range(len(items)))
    if test([]):
        return SearchOutcome((), test.evaluations, all_fix=test(everything), none_fix=True)
    if not test(everything):
        return SearchOutcome(None, test.evaluations, all_fix=False, none_fix=False)
    current, n = everything, 2
    while len(current) >= 2:
        chunks = _split(current, n)
        reduced = next((c for c in chunks if test(c)), None)
        if reduced is not None:
            current, n = reduced, 2
            continue
        complements = ([i for i in current if i not in set(c)] for c in chunks)
        reduced = next((c for c in complements if test(c)), None)
        if reduced is not None:
            current, n = reduced, max(n - 1, 2)
            continue
        if n >= len(current):
            break  # every single-item removal was tried: 1-minimal
        n = min(2 * n, len(current))
    return SearchOutcome(
        tuple(items[i] for i in current), test.evaluations, all_fix=True, none_fix=False
    )


def prefix_search(
    items: Sequence[T], fixes: Callable[[tuple[T, ...]], bool], *, bisect: bool = True
) -> SearchOutcome[T]:
    """The shortest prefix ``items[:k]`` that fixes, as Polygraphy's `debug precision` looks for it.

    `bisect=True` binary-searches k assuming monotonicity (what Polygraphy does: mark the first k
    layers high precision, bisect k); `bisect=False` scans k = 0, 1, 2, ... and so finds the truly
    shortest fixing prefix whatever the predicate does (the best answer a prefix can give).
    """
    test = _Memo(items, fixes)
    if not test(range(len(items))):
        return SearchOutcome(None, test.evaluations, all_fix=False, none_fix=test([]))
    if bisect:
        lo, hi = -1, len(items)  # invariant: items[:hi] fixes, items[:lo] does not (lo >= 0)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if test(range(mid)):
                hi = mid
            else:
                lo = mid
        k = hi
    else:
        k = next(k for k in range(len(items) + 1) if test(range(k)))
    return SearchOutcome(tuple(items[:k]), test.evaluations, all_fix=True, none_fix=k == 0)
