"""A run replayed as one CUDA graph: the same kernels, launched without Python in between.

`CudaGraphed(fn, inputs)` runs `fn` once to warm up (on a side stream, as ``torch.cuda.graph``
requires), captures a second run, and then on each call copies the new inputs into the captured
ones, replays the graph and returns clones of its outputs (or, with ``clone_outputs=False``, the
graph's own, valid until the next replay). The values are those of running `fn`
(the same kernels on the same data; cuBLAS is asked for the same algorithms), so a replay changes
what a run costs, not what it computes: an emulated run on a GPU is dominated by the launches of
its many small kernels and the Python between them, which a replay removes.

Constraints (a capture that breaks one raises, and the caller runs `fn` plainly instead): `fn` must
not synchronise with the host (no ``.item()``, ``.tolist()``, data-dependent shapes) nor copy from
pageable host memory; its inputs are the tensors of the first call's shapes, dtypes and devices.
The graph's memory pool holds the run's peak for as long as the object lives. A random op draws
anew at each replay (the runs of one replay share a draw, as the interpreter's sides do).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import torch
from torch.utils._pytree import tree_map

__all__ = ["CudaGraphed", "captured_once"]

T = TypeVar("T")


class CudaGraphed:
    """`fn` captured on `inputs` (CUDA tensors; other arguments are baked in): call it with
    arguments of the same signature to replay (module doc)."""

    def __init__(self, fn: Callable[..., Any], inputs: Sequence[Any], clone_outputs: bool = True) -> None:
        """`clone_outputs=False`: a call returns the graph's own output tensors, which the next replay
        overwrites (for a caller that is done with them by then: no copy of every output per call)."""
        self._clone = clone_outputs
        self._static = [x.detach().clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.no_grad():
            fn(*self._static)  # warm-up: lazy initialisation, cuBLAS handles and workspaces
        torch.cuda.current_stream().wait_stream(side)
        self._graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(self._graph):
            self._out = fn(*self._static)

    def __call__(self, *inputs: Any) -> Any:
        if len(inputs) != len(self._static):
            raise ValueError(f"captured with {len(self._static)} inputs, called with {len(inputs)}")
        for static, x in zip(self._static, inputs):
            if isinstance(static, torch.Tensor) and x is not static:
                static.copy_(x)
        self._graph.replay()
        if not self._clone:
            return self._out
        return tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, self._out)


#: Per owner (a program's graph module): (key, the captured run, or None where its capture failed).
_HELD: weakref.WeakKeyDictionary[Any, tuple[tuple, Any]] = weakref.WeakKeyDictionary()


def captured_once(owner: Any, key: tuple, capture: Callable[[], T]) -> T:
    """The captured run `capture()` made for `owner` under `key`, made on the first call: one per owner
    whatever the key (a graph's pool holds its run's peak memory: a check's screen and its every-node
    run of one program never hold two), the previous one released before the next is captured. A
    capture that raises `RuntimeError` (a host read in the run) is remembered: later calls with that
    key raise at once instead of capturing again."""
    held = _HELD.get(owner)
    if held is None or held[0] != key:
        held = None  # (no reference left to the previous run while the next is captured)
        _HELD.pop(owner, None)
        try:
            held = (key, capture())
        except RuntimeError:
            _HELD[owner] = (key, None)
            raise
        _HELD[owner] = held
    if held[1] is None:
        raise RuntimeError("this run could not be captured as a CUDA graph (an earlier attempt failed)")
    return held[1]
