"""Find the parameters, buffers and tensors a capture target reaches without taking them as arguments.

A function that closes over a model (``lin = nn.Linear(...); def f(x): return lin(x)``) reads the
model's parameters from a closure cell, a global, a bound ``self`` or a ``functools.partial``. They
become graph inputs like an ``nn.Module`` target's state, named by their access path:

- a closure or global variable, then the attribute path: ``lin.weight``,
  ``model.layers.0.mlp.up_proj.weight``; an element of a list, tuple or dict: ``layers.1.weight``,
  ``heads.q.weight``;
- for an ``nn.Module`` target or a bound method of a module (``model.forward``): the module's own
  qualified names (``layers.0.mlp.up_proj.weight``), as ``named_parameters()`` gives them; for a
  bound method of another object (``trainer.step``): its attribute path (``model.lm_head.weight``);
- a ``functools.partial``'s bound arguments: ``partial.args.0``, ``partial.kw.name``.

Search order: a bound method's object, then closure cells, defaults, and the globals the code (and
its nested code) names, in that order; functions found on the way are searched the same way (a
helper's globals and closure). A tensor reachable by several paths takes the first path found. A
path that is already taken, by an argument name or by another tensor (a global ``w`` and a helper's
closure ``w``), gets a suffix: ``w@2``. Inputs are every parameter (all of them first) and buffer of
every module found, every free ``nn.Parameter`` and every free leaf tensor that requires grad (research
code keeps its parameters so: ``params = {"w": torch.randn(..., requires_grad=True)}``); other tensors
(closed-over constants) are only named (`TargetState.constant_names`): tracing keeps them as constants. Containers are searched
`_MAX_DEPTH` levels and `_MAX_ITEMS` entries deep.
"""

from __future__ import annotations

import functools
import itertools
import re
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from roundoff.capture.sources import is_user_file

_MAX_DEPTH = 4  # containers and plain objects are searched this many levels deep
_MAX_ITEMS = 1024  # and this many entries of each list, tuple or dict (a dataset is no model)


@dataclass
class TargetState:
    """What a target reads besides its arguments: state tensors to feed as inputs (parameters, then
    buffers, each with its name and whether it is a buffer) and names of closed-over constants."""

    state: list[tuple[str, torch.Tensor, bool]] = field(default_factory=list)
    constant_names: dict[int, str] = field(default_factory=dict)
    modules: list[torch.nn.Module] = field(default_factory=list)  # each module found, in search order
    _seen: set[int] = field(default_factory=set)
    _names: set[str] = field(default_factory=set)

    def _unique(self, name: str) -> str:
        candidate, k = name, 1
        while candidate in self._names:
            k += 1
            candidate = f"{name}@{k}"
        self._names.add(candidate)
        return candidate

    def add_module(self, prefix: str, module: torch.nn.Module) -> None:
        if all(m is not module for m in self.modules):
            self.modules.append(module)
        dot = f"{prefix}." if prefix else ""
        for qual, p in module.named_parameters():
            self.add_tensor(dot + qual, p, buffer=False)
        for qual, b in module.named_buffers():
            self.add_tensor(dot + qual, b, buffer=True)

    def add_tensor(self, name: str, t: torch.Tensor, buffer: bool) -> None:
        if id(t) in self._seen:
            return
        self._seen.add(id(t))
        self.state.append((self._unique(name), t, buffer))

    def add_constant(self, name: str, t: torch.Tensor) -> None:
        self.constant_names.setdefault(id(t), name)


def target_state(fn: Callable[..., Any], reserved: tuple[str, ...] = ()) -> TargetState:
    """Parameters and buffers `fn` reaches (an ``nn.Module``'s own first), named as described above;
    names never repeat one in `reserved` (the argument names)."""
    found = TargetState()
    found._names.update(reserved)
    visited: set[int] = set()
    if isinstance(fn, torch.nn.Module):
        found.add_module("", fn)
        _walk_function(type(fn).forward, found, visited)
    else:
        _walk_callable(fn, "", found, visited)
    params = [s for s in found.state if not s[2]]
    found.state = params + [s for s in found.state if s[2]]
    return found


def _walk_callable(fn: Any, name: str, found: TargetState, visited: set[int]) -> None:
    if id(fn) in visited:
        return
    visited.add(id(fn))
    if isinstance(fn, functools.partial):
        for i, a in enumerate(fn.args):
            _walk_value(f"partial.args.{i}", a, found, visited, 0)
        for k, v in fn.keywords.items():
            _walk_value(f"partial.kw.{k}", v, found, visited, 0)
        _walk_callable(fn.func, name, found, visited)
    elif isinstance(fn, types.MethodType):
        owner = fn.__self__
        if isinstance(owner, torch.nn.Module):
            found.add_module("", owner)
        elif not isinstance(owner, types.ModuleType):
            _walk_attributes("", owner, found, visited, 0)
        _walk_function(fn.__func__, found, visited)
    elif isinstance(fn, types.FunctionType):
        _walk_function(fn, found, visited)
    elif isinstance(fn, torch.nn.Module):
        found.add_module(name, fn)
    elif not isinstance(fn, (type, types.BuiltinFunctionType)) and hasattr(fn, "__dict__"):
        _walk_attributes(name, fn, found, visited, 0)  # a callable object: its attributes
        call = getattr(type(fn), "__call__", None)
        if isinstance(call, types.FunctionType):
            _walk_function(call, found, visited)


def _code_names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_names(const)


def _walk_function(fn: types.FunctionType, found: TargetState, visited: set[int]) -> None:
    """Closure cells, then defaults, then the globals the code (and its nested code) names."""
    visited.add(id(fn))
    if not is_user_file(fn.__code__.co_filename):
        return
    for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        _walk_value(var, value, found, visited, 0)
    for i, d in enumerate(fn.__defaults__ or ()):
        _walk_value(f"default{i}", d, found, visited, 0)
    names = dict.fromkeys(_code_names(fn.__code__))
    for var in names:
        if var not in fn.__globals__:
            continue
        value = fn.__globals__[var]
        if isinstance(value, types.ModuleType):
            _walk_python_module(var, value, names, found, visited)
        else:
            _walk_value(var, value, found, visited, 0)


def _walk_python_module(
    var: str, mod: types.ModuleType, names: dict[str, None], found: TargetState, visited: set[int]
) -> None:
    """A user's own Python module used as a namespace (``import models; models.net(x)``)."""
    path = getattr(mod, "__file__", None)
    if not path or not is_user_file(path):
        return
    for attr in names:
        if attr in vars(mod):
            _walk_value(f"{var}.{attr}", vars(mod)[attr], found, visited, 0)


def _walk_value(name: str, value: Any, found: TargetState, visited: set[int], depth: int) -> None:
    if isinstance(value, torch.nn.Module):
        found.add_module(name, value)
    elif isinstance(value, torch.nn.Parameter) or (
            isinstance(value, torch.Tensor) and value.is_leaf and value.requires_grad):  # research code's
        found.add_tensor(name, value, buffer=False)  # parameters, plain tensors in a dict (trial 83)
    elif isinstance(value, torch.Tensor):
        found.add_constant(name, value)
    elif isinstance(value, (types.FunctionType, types.MethodType, functools.partial)):
        _walk_callable(value, name, found, visited)
    elif depth >= _MAX_DEPTH or id(value) in visited:
        return
    elif isinstance(value, (list, tuple)):
        visited.add(id(value))
        for i, v in enumerate(value[:_MAX_ITEMS]):
            _walk_value(f"{name}.{i}", v, found, visited, depth + 1)
    elif isinstance(value, dict):
        visited.add(id(value))
        for k, v in itertools.islice(value.items(), _MAX_ITEMS):
            if isinstance(k, (str, int)):
                _walk_value(f"{name}.{k}", v, found, visited, depth + 1)
    elif _is_user_object(value):
        _walk_attributes(name, value, found, visited, depth)


def _is_user_object(value: Any) -> bool:
    cls = type(value)
    module = getattr(cls, "__module__", "") or ""
    return hasattr(value, "__dict__") and not isinstance(value, type) and not module.startswith(
        ("torch", "builtins", "numpy", "typing", "collections", "functools", "types")
    )


def _walk_attributes(
    name: str, obj: Any, found: TargetState, visited: set[int], depth: int
) -> None:
    if id(obj) in visited:
        return
    visited.add(id(obj))
    dot = f"{name}." if name else ""
    for attr, v in list(vars(obj).items()):
        _walk_value(dot + attr, v, found, visited, depth + 1)


def name_constants(gm: torch.fx.GraphModule, names: dict[int, str]) -> None:
    """Rename the tracer's ``_tensor_constant<k>`` attributes that hold a closed-over tensor after the
    variable holding it (``mask``, ``rope.cos``; dots become ``_``); other constants keep theirs."""
    taken = {n.target for n in gm.graph.nodes if n.op == "get_attr"}
    renamed: dict[str, str] = {}
    for n in gm.graph.nodes:
        if n.op != "get_attr" or not str(n.target).startswith("_tensor_constant"):
            continue
        if n.target not in renamed:
            value = getattr(gm, str(n.target), None)
            name = names.get(id(value))
            if name is None:
                continue
            base = re.sub(r"\W", "_", name)
            fresh, k = base, 1
            while fresh in taken or hasattr(gm, fresh):
                k += 1
                fresh = f"{base}_{k}"
            taken.add(fresh)
            setattr(gm, fresh, value)
            renamed[str(n.target)] = fresh
        n.target = renamed[str(n.target)]
    for old in renamed:
        delattr(gm, old)
