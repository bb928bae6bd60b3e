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
from torch.fx.experimental.proxy_tensor import disable_proxy_modes_tracing, get_proxy_mode
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

from roundoff.capture.errors import BACKWARD_INSIDE, CaptureError
from roundoff.capture.program import NODE_MODULE, NODE_SOURCE, Specialization, SpecializationKind

VALUE_READ = "roundoff_value_read"  # transient: a node whose Python value a Specialization records

# Tensor methods that hand tensor data to Python: the traced graph keeps eager's value from here on.
_VALUE_READS = {
    "item": SpecializationKind.ITEM,
    "tolist": SpecializationKind.ITEM,
    "numpy": SpecializationKind.ITEM,
    "__array__": SpecializationKind.ITEM,
    "__float__": SpecializationKind.ITEM,
    "__int__": SpecializationKind.ITEM,
    "__index__": SpecializationKind.ITEM,
    "__complex__": SpecializationKind.ITEM,
    "__bool__": SpecializationKind.BRANCH,
    "is_nonzero": SpecializationKind.BRANCH,
    "__contains__": SpecializationKind.BRANCH,
}

#: The functions nn.RNN, nn.GRU and nn.LSTM call, by the module that calls them: torch.compile runs these
#: modules eagerly (Dynamo graph-breaks on them unless ``torch._dynamo.config.allow_rnn``, torch 2.9-2.13).
RNN_FUNCTIONS = {getattr(torch._C._VariableFunctions, name): module for name, module in (
    ("lstm", "nn.LSTM"), ("gru", "nn.GRU"), ("rnn_tanh", "nn.RNN"), ("rnn_relu", "nn.RNN"))}

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_ROUNDOFF_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# The zoo and the corpus are written as a user writes model code: their frames are user code.
_USER_LIKE_DIRS = tuple(_ROUNDOFF_DIR + d + os.sep for d in ("zoo", "corpus"))


def is_user_file(filename: str) -> bool:
    """Whether a frame in `filename` is user code: not torch, not roundoff's machinery (the zoo and the
    corpus count as user code, since they are written as a user would write them)."""
    path = os.path.abspath(filename)
    if path.startswith(_TORCH_DIR):
        return False
    if path.startswith(_ROUNDOFF_DIR):
        return path.startswith(_USER_LIKE_DIRS)
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


def tracing_graph() -> torch.fx.Graph | None:
    """The graph make_fx is appending to, or None where no make_fx proxy mode is active (inside an
    ``autograd.Function``'s own bookkeeping, a custom op's Python kernel, ...)."""
    mode = get_proxy_mode()
    return None if mode is None else mode.tracer.graph


def _current_graph() -> torch.fx.Graph:
    graph = tracing_graph()
    if graph is None:
        raise RuntimeError("roundoff re-tracing used outside make_fx tracing")
    return graph


def label_new_nodes(graph: torch.fx.Graph, start: int, key: str, value: Any) -> list[torch.fx.Node]:
    """Set ``meta[key] = value`` on nodes appended to `graph` after it held `start` nodes, unless set;
    return those nodes, newest first."""
    count = len(graph.nodes) - start
    new: list[torch.fx.Node] = []
    for node in reversed(graph.nodes):
        if count <= 0:
            break
        count -= 1
        node.meta.setdefault(key, value)
        new.append(node)
    return new


def _one_hot(tensor: torch.Tensor, num_classes: int = -1) -> torch.Tensor:
    """``F.one_hot`` traced as torch.compile traces it (its decomposition: a comparison with ``arange``), where
    `num_classes` is given: eager's implementation reads the classes' minimum and maximum into Python only to
    check them, which the trace would take for a graph break (trial 108: an MoE's load-balancing loss). The
    check is made here, outside the trace, with eager's message."""
    if num_classes < 0:
        return torch.nn.functional.one_hot(tensor, num_classes)
    with disable_proxy_modes_tracing():
        if tensor.numel() and not bool((tensor >= 0).all()):
            raise RuntimeError("Class values must be non-negative.")
        if tensor.numel() and not bool((tensor < num_classes).all()):
            raise RuntimeError("Class values must be smaller than num_classes.")
    return (tensor.unsqueeze(-1) == torch.arange(num_classes, dtype=tensor.dtype, device=tensor.device)).to(torch.int64)


def reads_tensor_data(target: Any) -> bool:
    """Whether an aten op hands a tensor's value to Python (``_local_scalar_dense``, ``equal``)."""
    return isinstance(target, torch._ops.OpOverload) and torch.Tag.data_dependent_output in target.tags


def _summary(value: Any) -> str:
    if isinstance(value, (bool, int, float, complex)):
        return repr(value)
    if isinstance(value, list):
        return f"a list of {len(value)}"
    shape = getattr(value, "shape", None)
    return f"an array of shape {tuple(shape)}" if shape is not None else type(value).__name__


class ModulePaths:
    """The dotted path of the innermost nn.Module being called (``features.3.conv.4``), while active: global
    forward hooks keep the stack of modules called. The outermost module is the root (no name); every module
    below it is named by its path in the root's tree (``named_modules``: a layer called through a slice of
    a ModuleList, ``self.layers[:n]``, still ``model.layers.1``), a root nn.Sequential's layers as
    ``Sequential.0``; a module outside that tree (one made on the fly) adds nothing to its caller's path."""

    def __init__(self) -> None:
        self._stack: list[tuple[torch.nn.Module, str]] = []
        self._names: dict[int, dict[int, str]] = {}  # root id -> {module id: its path in the root's tree}
        self._handles: list[Any] = []

    @property
    def current(self) -> str | None:
        return (self._stack[-1][1] or None) if self._stack else None

    def _push(self, module: torch.nn.Module, args: Any) -> None:
        if not self._stack:
            self._stack.append((module, ""))
            if id(module) not in self._names:
                prefix = f"{type(module).__name__}." if isinstance(module, torch.nn.Sequential) else ""
                self._names[id(module)] = {id(m): prefix + name if name[:1].isdigit() else name
                                           for name, m in module.named_modules() if name}
            return
        names = self._names[id(self._stack[0][0])]
        self._stack.append((module, names.get(id(module), self._stack[-1][1])))

    def _pop(self, module: torch.nn.Module, args: Any, out: Any) -> None:
        if self._stack and self._stack[-1][0] is module:
            self._stack.pop()

    def __enter__(self) -> ModulePaths:
        from torch.nn.modules.module import (
            register_module_forward_hook,
            register_module_forward_pre_hook,
        )

        self._handles = [register_module_forward_pre_hook(self._push),
                         register_module_forward_hook(self._pop, always_call=True)]
        return self

    def __exit__(self, *exc: Any) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles, self._stack, self._names = [], [], {}


class SourceRecorder(TorchFunctionMode):
    """Labels each traced aten node with ``meta[NODE_SOURCE]`` of the user call that made it, and
    ``meta[NODE_MODULE]`` with the module being called (`ModulePaths`).

    Only the outermost torch call is seen (torch-function modes are off inside their handler), so a
    library function such as ``F.softmax`` labels all its aten nodes with the user's line. Output
    ``grad_fn``s of every call are remembered so `backward_sources` can label backward nodes.
    """

    def __init__(self) -> None:
        super().__init__()
        self._grad_fn_sources: dict[int, tuple[Any, str | None, str | None]] = {}
        self.value_reads: list[Specialization] = []
        self.dynamo_fallbacks: list[tuple[str, str | None]] = []  # (module, source): `RNN_FUNCTIONS` calls
        self.modules = ModulePaths()

    def __enter__(self) -> SourceRecorder:
        self.modules.__enter__()
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        try:
            super().__exit__(*exc)
        finally:
            self.modules.__exit__(*exc)

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        graph = tracing_graph()
        if graph is None:
            return func(*args, **(kwargs or {}))
        source = user_frame_source(sys._getframe(1))
        if func is torch.Tensor.backward or func is torch.autograd.backward:
            raise CaptureError(
                BACKWARD_INSIDE,
                construct="backward inside the function",
                source=source,
            )
        if func is torch.autograd.grad and not torch.is_grad_enabled():  # captured without its backward
            raise CaptureError(
                "the function computes gradients (torch.autograd.grad), which needs the program captured "
                "with its backward: pass `--backward` (`backward=True` in the library); to check the "
                "gradients of a loss, return the loss and let roundoff differentiate it",
                construct="gradients inside the function",
                source=source,
            )
        start = len(graph.nodes)
        out = (_one_hot if func is torch.nn.functional.one_hot else func)(*args, **(kwargs or {}))
        new = label_new_nodes(graph, start, NODE_SOURCE, source)
        for n in new:  # (the same nodes: one walk of the graph's tail per call)
            n.meta.setdefault(NODE_MODULE, self.modules.current)
        self._note_value_read(func, out, source, new)
        if (module := RNN_FUNCTIONS.get(func)) is not None and (module, source) not in self.dynamo_fallbacks:
            self.dynamo_fallbacks.append((module, source))
        if torch.is_grad_enabled():
            self._remember_grad_fns(out, source, self.modules.current)
        return out

    def _note_value_read(
        self, func: Any, out: Any, source: str | None, new: list[torch.fx.Node]
    ) -> None:
        """Record a Specialization where the call handed tensor data to Python."""
        name = getattr(func, "__name__", "")
        kind = _VALUE_READS.get(name)
        reads = [n for n in new if n.op == "call_function" and reads_tensor_data(n.target)]
        if kind is None and not reads:
            return
        for n in reads:
            n.meta[VALUE_READ] = True
        if kind is SpecializationKind.BRANCH:
            detail = f"bool(tensor) is {out!r}"
        else:
            detail = f"{name or getattr(func, '__qualname__', 'a call')} = {_summary(out)}"
        self.value_reads.append(Specialization(kind or SpecializationKind.ITEM, source, detail))

    def _remember_grad_fns(self, out: Any, source: str | None, module: str | None) -> None:
        stack = [t.grad_fn for t in tree_leaves(out) if isinstance(t, torch.Tensor) and t.grad_fn]
        while stack:
            fn = stack.pop()
            if fn is None or id(fn) in self._grad_fn_sources:
                continue
            self._grad_fn_sources[id(fn)] = (fn, source, module)
            stack.extend(next_fn for next_fn, _ in fn.next_functions)

    @contextmanager
    def backward_sources(self) -> Iterator[None]:
        """While active, backward nodes get the source of the forward call whose grad_fn made them.

        Nodes the engine makes between two grad_fns (gradient accumulation of a value used twice) get
        the source of the grad_fn that ran just before; nodes before the first grad_fn get None.
        """
        graph = _current_graph()
        state: dict[str, Any] = {"start": len(graph.nodes), "source": None, "module": None}

        def flush_then(source: str | None, module: str | None) -> None:
            label_new_nodes(graph, state["start"], NODE_SOURCE, state["source"])
            label_new_nodes(graph, state["start"], NODE_MODULE, state["module"])
            state.update(start=len(graph.nodes), source=source, module=module)

        handles = []
        for fn, source, module in self._grad_fn_sources.values():
            if hasattr(fn, "register_prehook"):
                handles.append(fn.register_prehook(lambda grads, s=source, m=module: flush_then(s, m)))
        try:
            yield
        finally:
            flush_then(None, None)
            for handle in handles:
                handle.remove()
