"""ddmin and prefix search against brute force over small change spaces."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from roundoff.blame.search import ddmin, prefix_search

# A monotone "fixes" predicate: some clause (a set of required items) is contained in the subset.
clauses_st = st.lists(
    st.frozensets(st.integers(0, 11), min_size=1, max_size=4), min_size=1, max_size=4
)


def _pred(clauses: list[frozenset[int]], calls: list[tuple[int, ...]]):
    def fixes(subset: tuple[int, ...]) -> bool:
        calls.append(subset)
        return any(c <= set(subset) for c in clauses)

    return fixes


@settings(max_examples=300, deadline=None)
@given(clauses=clauses_st, n=st.integers(1, 12))
def test_ddmin_result_fixes_and_is_one_minimal(clauses: list[frozenset[int]], n: int) -> None:
    items = list(range(n))
    calls: list[tuple[int, ...]] = []
    fixes = _pred(clauses, calls)
    out = ddmin(items, fixes)
    repro = f"ddmin(range({n}), clauses={sorted(map(sorted, clauses))})"
    all_fix = any(c <= set(items) for c in clauses)
    assert out.all_fix == all_fix, repro
    assert out.evaluations == len(set(map(frozenset, calls))), repro  # distinct subsets only
    if not all_fix:
        assert out.changes is None, repro
        return
    found = set(out.changes)
    assert any(c <= found for c in clauses), repro
    for x in found:  # brute-force 1-minimality: dropping any one change breaks the fix
        assert not any(c <= found - {x} for c in clauses), f"{repro}: {x} removable from {found}"
    assert list(out.changes) == sorted(out.changes), repro  # order kept


@settings(max_examples=200, deadline=None)
@given(clauses=clauses_st, n=st.integers(1, 12))
def test_prefix_search_finds_shortest_fixing_prefix(clauses: list[frozenset[int]], n: int) -> None:
    items = list(range(n))

    def ok(s: tuple[int, ...] | list[int]) -> bool:
        return any(c <= set(s) for c in clauses)

    brute = next((k for k in range(n + 1) if ok(items[:k])), None)
    for bisect in (True, False):
        out = prefix_search(items, ok, bisect=bisect)
        repro = f"prefix_search(range({n}), clauses={sorted(map(sorted, clauses))}, bisect={bisect})"
        if brute is None:
            assert out.changes is None, repro
        else:
            assert out.changes == tuple(items[:brute]), repro  # monotone: bisect is exact too


def test_ddmin_when_nothing_needed_or_nothing_helps() -> None:
    assert ddmin([1, 2, 3], lambda s: True).changes == ()
    out = ddmin([1, 2, 3], lambda s: False)
    assert out.changes is None and not out.all_fix


def test_ddmin_beats_prefix_on_scattered_culprits() -> None:
    """Two culprits far apart: the best prefix must include everything between them."""
    items = list(range(40))
    need = {2, 37}
    dd = ddmin(items, lambda s: need <= set(s))
    pre = prefix_search(items, lambda s: need <= set(s))
    assert set(dd.changes) == need
    assert len(pre.changes) == 38
    # ddmin's cost is logarithmic-ish in the number of candidates here, not linear
    assert dd.evaluations < len(items), dd.evaluations


def test_subsets_are_exhaustively_checked_on_tiny_space() -> None:
    # All 2^4 monotone-closure predicates from single clauses: ddmin returns exactly the clause.
    for r in range(1, 5):
        for clause in itertools.combinations(range(4), r):
            out = ddmin(list(range(4)), lambda s, c=set(clause): c <= set(s))
            assert set(out.changes) == set(clause), clause
