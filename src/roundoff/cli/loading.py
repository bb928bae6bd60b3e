"""Turning a command-line TARGET into a callable and its example inputs, with one-line errors.

TARGET is ``SCRIPT:FUNCTION`` (a ``.py`` file imported by path) or ``zoo:NAME`` (a built-in
workload). Inputs come from ``--inputs SCRIPT:FACTORY``, by default from ``FUNCTION_inputs`` in the
same script, or from the workload's ``make_inputs()``. Every problem a user can fix raises
`UsageError` with a message that says what was passed, what is accepted and what to do; the CLI
prints it and exits 2.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch


class UsageError(ValueError):
    """A problem with what the user passed on the command line; the message says how to fix it."""


@dataclass(frozen=True)
class Loaded:
    """A resolved TARGET: the callable, its example inputs, and a label for reports."""

    label: str
    fn: Callable[..., Any]
    inputs: tuple[torch.Tensor, ...]
    backward: bool = False


def split_ref(ref: str, what: str) -> tuple[str, str]:
    """Split ``"path/to/script.py:NAME"`` at its last colon; UsageError if either side is empty."""
    head, sep, tail = ref.rpartition(":")
    if not sep or not head or not tail:
        raise UsageError(
            f"{what} {ref!r} is not of the form SCRIPT:NAME (e.g. model.py:forward) or zoo:NAME"
        )
    return head, tail


_MODULE_CACHE: dict[Path, ModuleType] = {}


def import_script(path_text: str) -> ModuleType:
    """Import a ``.py`` file by path (its folder first on sys.path while it runs), cached."""
    path = Path(path_text).expanduser()
    if path.suffix != ".py":
        raise UsageError(f"script {path_text!r} is not a .py file; pass SCRIPT.py:FUNCTION")
    if not path.is_file():
        raise UsageError(f"script {path_text!r} does not exist (looked in {Path.cwd()})")
    path = path.resolve()
    if path in _MODULE_CACHE:
        return _MODULE_CACHE[path]
    name = f"roundoff_user_{abs(hash(path)):x}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {path_text!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # a user script may raise anything, SystemExit included
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise UsageError(
            f"script {path_text!r} failed to import: {_describe(exc, path)}; fix the script "
            "(or run it with python to see the full traceback)"
        ) from exc
    finally:
        if sys.path and sys.path[0] == str(path.parent):
            sys.path.pop(0)
    _MODULE_CACHE[path] = module
    return module


def _describe(exc: BaseException, path: Path | None = None) -> str:
    """``"ZeroDivisionError: division by zero (model.py:3)"``: the exception, its line in `path`."""
    where = ""
    if path is not None:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
        if frames:
            where = f" ({path.name}:{frames[-1].lineno})"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}{where}"


def get_callable(module: ModuleType, name: str, script: str, role: str) -> Callable[..., Any]:
    """`module.name`, which must be callable; UsageError listing what the script does define."""
    obj = getattr(module, name, None)
    if obj is None:
        found = sorted(
            k
            for k, v in vars(module).items()
            if callable(v)
            and not k.startswith("_")
            and getattr(v, "__module__", None) == module.__name__
        )
        raise UsageError(
            f"{role} {name!r} not found in {script!r}; it defines: {', '.join(found) or 'nothing'}"
        )
    if not callable(obj):
        raise UsageError(f"{role} {name!r} in {script!r} is a {type(obj).__name__}, not a function")
    return obj


def as_input_tuple(value: Any, where: str) -> tuple[torch.Tensor, ...]:
    """A factory's result as a tuple of tensors; a lone tensor is wrapped, anything else refused."""
    if isinstance(value, torch.Tensor):
        return (value,)
    if not isinstance(value, (tuple, list)) or not value:
        raise UsageError(
            f"{where} returned {type(value).__name__}; it must return a non-empty tuple of tensors"
        )
    bad = [
        f"#{i}: {type(v).__name__}" for i, v in enumerate(value) if not isinstance(v, torch.Tensor)
    ]
    if bad:
        raise UsageError(
            f"{where} returned non-tensor inputs ({', '.join(bad)}); return tensors only"
        )
    return tuple(value)


def load_script_target(target: str, inputs_ref: str | None, backward: bool) -> Loaded:
    """Resolve ``SCRIPT:FUNCTION`` and its inputs (``--inputs`` or ``FUNCTION_inputs``)."""
    script, fn_name = split_ref(target, "target")
    fn = get_callable(import_script(script), fn_name, script, "function")
    if inputs_ref is None:
        in_script, factory_name = script, f"{fn_name}_inputs"
        module = import_script(script)
        if getattr(module, factory_name, None) is None:
            raise UsageError(
                f"no inputs for {fn_name!r}: define {factory_name}() in {script!r} returning a "
                "tuple "
                f"of tensors, or pass --inputs SCRIPT:FACTORY"
            )
    else:
        in_script, factory_name = split_ref(inputs_ref, "--inputs")
    factory = get_callable(import_script(in_script), factory_name, in_script, "input factory")
    where = f"{in_script}:{factory_name}()"
    try:
        raw = factory()
    except Exception as exc:
        raise UsageError(f"{where} raised {_describe(exc, Path(in_script).resolve())}") from exc
    return Loaded(f"{script}:{fn_name}", fn, as_input_tuple(raw, where), backward)


def load_zoo_target(name: str, backward: bool) -> Loaded:
    """Resolve ``zoo:NAME`` through `roundoff.zoo` (seed 0, CPU, the workload's own dtype)."""
    from roundoff import zoo

    known = [w.name for w in zoo.list_workloads()]
    if name not in known:
        raise UsageError(f"unknown workload zoo:{name}; known: {', '.join(known)}")
    workload = zoo.get_workload(name)
    inputs = as_input_tuple(workload.make_inputs(), f"zoo:{name} make_inputs()")
    return Loaded(f"zoo:{name}", workload.build(), inputs, backward or workload.backward)


def load_target(target: str, inputs_ref: str | None = None, backward: bool = False) -> Loaded:
    """Resolve TARGET (``zoo:NAME`` or ``SCRIPT:FUNCTION``); check it runs eagerly on its inputs."""
    if target.startswith("zoo:"):
        if inputs_ref is not None:
            raise UsageError(
                "--inputs is for SCRIPT:FUNCTION targets; zoo workloads bring their own"
            )
        loaded = load_zoo_target(target[4:], backward)
    else:
        loaded = load_script_target(target, inputs_ref, backward)
    preflight(loaded)
    return loaded


def preflight(loaded: Loaded) -> None:
    """Run the target once in eager PyTorch; refuse failures and programs with nothing to check.

    A program is checkable when at least one output is a floating-point tensor (integer-only and
    boolean-only programs have no rounding for roundoff to examine).
    """
    try:
        with torch.no_grad():
            out = loaded.fn(*loaded.inputs)
    except Exception as exc:
        shapes = ", ".join(
            f"{tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}" for t in loaded.inputs
        )
        raise UsageError(
            f"{loaded.label} fails on its inputs [{shapes}]: {_describe(exc)}; make the input "
            "factory return tensors of the shapes and dtypes the function expects"
        ) from exc
    outs = tuple(out.values()) if isinstance(out, dict) else out
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    tensors = [t for t in outs if isinstance(t, torch.Tensor)]
    if not tensors:
        raise UsageError(
            f"{loaded.label} returned {type(out).__name__}, no tensors; "
            "return the tensor(s) to check"
        )
    if not any(t.is_floating_point() for t in tensors):
        ints = all(not t.is_floating_point() for t in loaded.inputs)
        kind = "integer-only program" if ints else "no floating-point outputs"
        dtypes = ", ".join(sorted({str(t.dtype).removeprefix("torch.") for t in tensors}))
        raise UsageError(
            f"{loaded.label}: {kind} (outputs are {dtypes}); roundoff checks floating-point "
            "rounding, so return at least one float tensor (bf16/fp16/fp32/...)"
        )
