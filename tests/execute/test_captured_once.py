"""`execute.graphed.captured_once`: one captured run per owner (a graph's pool holds its run's peak
memory), released before the next is made; a failed capture is remembered, not retried."""

from __future__ import annotations

import gc
import weakref

import pytest

from roundoff.execute.graphed import captured_once


class _Owner:
    """A program's graph module stands here: any object a weak reference can hold."""


class _Run:
    """A captured run stands here: its lifetime is what the test watches."""


def test_one_captured_run_per_owner_and_the_previous_released_before_the_next() -> None:
    owner, made = _Owner(), []

    def capture() -> _Run:
        made.append(_Run())
        return made[-1]

    first = captured_once(owner, ("screen",), capture)
    assert captured_once(owner, ("screen",), capture) is first and len(made) == 1  # reused, not captured again
    alive = weakref.ref(first)
    del first
    made.clear()
    seen_alive = []
    second = captured_once(owner, ("every node",), lambda: seen_alive.append(alive() is not None) or _Run())
    gc.collect()
    assert seen_alive == [False], "the previous run must be released before the next capture"
    assert captured_once(owner, ("every node",), capture) is second and made == []


def test_a_failed_capture_is_remembered_not_retried() -> None:
    owner, calls = _Owner(), []

    def fails() -> _Run:
        calls.append(1)
        raise RuntimeError("operation not permitted when stream is capturing")

    for _ in range(3):
        with pytest.raises(RuntimeError):
            captured_once(owner, ("k",), fails)
    assert calls == [1]
    assert isinstance(captured_once(owner, ("other key",), _Run), _Run)  # another key captures anew
