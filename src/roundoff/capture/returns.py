"""Name a captured function's tuple outputs after its ``return`` statement: ``return p, m, v`` names
them ``p``, ``m``, ``v`` instead of ``out0``, ``out1``, ``out2``."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

import torch

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def return_names(fn: Callable[..., Any], count: int | None) -> list[str | None]:
    """Per element of a returned tuple or list of `count` values (None: one value returned as it is),
    the variable (``x``) or attribute (``self.x``) every ``return`` of `fn` (a module: its ``forward``)
    writes there, else None: where the element is another expression, the returns disagree, the name
    repeats, or the source is not readable (a lambda, a builtin, code typed at a prompt)."""
    single, count = count is None, count or 1
    target = fn.forward if isinstance(fn, torch.nn.Module) else inspect.unwrap(fn)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(target)))
    except (OSError, TypeError, SyntaxError):
        return [None] * count
    func = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if func is None or func.name != getattr(target, "__name__", None):
        return [None] * count
    names: list[str | None] | None = None
    for ret in _returns(func.body):
        if ret.value is None:
            continue
        elts = [ret.value] if single else getattr(ret.value, "elts", None)
        if elts is None or len(elts) != count or single and isinstance(ret.value, (ast.Tuple, ast.List)):
            continue  # another shape of return (an early exit): says nothing of these elements
        these = [_dotted(e) for e in elts]
        names = these if names is None else [a if a == b else None for a, b in zip(names, these)]
    if names is None:
        return [None] * count
    return [n if n is not None and names.count(n) == 1 else None for n in names]


def _dotted(e: ast.expr) -> str | None:
    """``x`` or ``a.b.x`` where `e` is a name or a chain of attributes of one, else None."""
    if isinstance(e, ast.Name):
        return e.id
    base = _dotted(e.value) if isinstance(e, ast.Attribute) else None
    return f"{base}.{e.attr}" if base is not None else None  # type: ignore[union-attr]


def _returns(body: list[ast.stmt]) -> Iterator[ast.Return]:
    """The ``return`` statements of a function body, not those of functions or classes defined in it."""
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return):
            yield node
        elif not isinstance(node, _SCOPES):
            todo.extend(ast.iter_child_nodes(node))
