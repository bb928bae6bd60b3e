"""Map graph nodes to the user's source line while make_fx traces.

make_fx's own ``record_stack_traces`` keeps only frames of functions named ``forward`` (and its filter
changed between torch releases), so a plain function gets no source at all. Instead a
``TorchFunctionMode`` sees every torch call the user's code makes, finds the user's frame on the Python
stack, and labels every aten node that call appended to the graph being traced. Backward nodes are
labelled by autograd pre-hooks with the source of the forward call that created their ``grad_fn``.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import get_proxy_mode
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

from roundoff.capture.program import NODE_SOURCE

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_ROUNDOFF_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_ZOO_DIR = _ROUNDOFF_DIR + "zoo" + os.sep


def is_user_file(filename: str) -> bool:
    """Whether a frame in `filename` is user code: not torch, not roundoff's machinery (the zoo counts as
    user code, since its workloads are written as a user would write them)."""
    path = os.path.abspath(filename)
    if path.startswith(_TORCH_DIR):
        return False
    if path.startswith(_ROUNDOFF_DIR):
        return path.startswith(_ZOO_DIR)
    return not filename.startswith("<frozen")


def _format(filename: str, lineno: int | None) -> str:
    return f"{os.path.basename(filename)}:{lineno}"


def user_frame_source(frame: types.FrameType | None) -> str | None:
    """``"file.py:LINE"`` of the innermost user frame at or above `frame`."""
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):
            return _format(frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return None


def traceback_source(tb: types.TracebackType | None) -> str | None:
    """``"file.py:LINE"`` of the innermost user frame of an exception's traceback."""
    found: str | None = None
    while tb is not None:
        if is_user_file(tb.tb_frame.f_code.co_filename):
            found = _format(tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    return found


def _current_graph() -> torch.fx.Graph:
    mode = get_proxy_mode()
    if mode is None:
        raise RuntimeError("roundoff source recording used outside make_fx tracing")
    return mode.tracer.graph


def label_new_nodes(graph: torch.fx.Graph, start: int, key: str, value: Any) -> None:
    """Set ``meta[key] = value`` on nodes appended to `graph` after it held `start` nodes, unless set."""
    count = len(graph.nodes) - start
    for node in reversed(graph.nodes):
        if count <= 0:
            break
        count -= 1
        node.meta.setdefault(key, value)


class SourceRecorder(TorchFunctionMode):
    """Labels each traced aten node with ``meta[NODE_SOURCE]`` of the user call that made it.

    Only the outermost torch call is seen (torch-function modes are off inside their handler), so a
    library function such as ``F.softmax`` labels all its aten nodes with the user's line. Output
    ``grad_fn``s of every call are remembered so `backward_sources` can label backward nodes.
    """

    def __init__(self) -> None:
        super().__init__()
        self._grad_fn_sources: dict[int, tuple[Any, str | None]] = {}

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        source = user_frame_source(sys._getframe(1))
        graph = _current_graph()
        start = len(graph.nodes)
        out = func(*args, **(kwargs or {}))
        label_new_nodes(graph, start, NODE_SOURCE, source)
        if torch.is_grad_enabled():
            self._remember_grad_fns(out, source)
        return out

    def _remember_grad_fns(self, out: Any, source: str | None) -> None:
        stack = [t.grad_fn for t in tree_leaves(out) if isinstance(t, torch.Tensor) and t.grad_fn]
        while stack:
            fn = stack.pop()
            if fn is None or id(fn) in self._grad_fn_sources:
                continue
            self._grad_fn_sources[id(fn)] = (fn, source)
            stack.extend(next_fn for next_fn, _ in fn.next_functions)

    @contextmanager
    def backward_sources(self) -> Iterator[None]:
        """While active, backward nodes get the source of the forward call whose grad_fn made them.

        Nodes the engine makes between two grad_fns (gradient accumulation of a value used twice) get
        the source of the grad_fn that ran just before; nodes before the first grad_fn get None.
        """
        graph = _current_graph()
        state: dict[str, Any] = {"start": len(graph.nodes), "source": None}

        def flush_then(source: str | None) -> None:
            label_new_nodes(graph, state["start"], NODE_SOURCE, state["source"])
            state["start"] = len(graph.nodes)
            state["source"] = source

        handles = []
        for fn, source in self._grad_fn_sources.values():
            if hasattr(fn, "register_prehook"):
                handles.append(fn.register_prehook(lambda grads, s=source: flush_then(s)))
        try:
            yield
        finally:
            flush_then(None)
            for handle in handles:
                handle.remove()
