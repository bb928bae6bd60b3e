"""Turning a command-line TARGET into a callable and its example inputs, with one-line errors.

TARGET is ``SCRIPT:FUNCTION`` (a ``.py`` file imported by path) or ``zoo:NAME`` (a built-in
workload). Inputs come from ``--inputs SCRIPT:FACTORY``, by default from ``FUNCTION_inputs`` in the
same script, or from the workload's ``make_inputs()``. Every problem a user can fix raises
`UsageError` with a message that says what was passed, what is accepted and what to do; the CLI
prints it and exits 2. User code (the script's import, the factory, the function while it is
captured) runs with stdout sent to stderr, so that its prints never mix with a report on stdout;
whatever it raises, ``sys.exit()`` included, is a `UsageError` naming its file and line.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import importlib.util
import logging
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from roundoff.capture import capture
from roundoff.capture.inputs import signature_mismatch
from roundoff.capture.program import Program
from roundoff.cli.errors import describe, is_user_error, user_frame


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
        if what == "--inputs":
            raise UsageError(
                f"--inputs {ref!r} is not of the form SCRIPT:FACTORY (e.g. "
                "model.py:make_inputs, a function returning a tuple of tensors)"
            )
        raise UsageError(
            f"{what} {ref!r} is not of the form SCRIPT:NAME (e.g. model.py:forward) or zoo:NAME"
            + (f"; did you mean {meant}?" if (meant := _meant_target(ref)) else "")
        )
    return head, tail


def _meant_target(ref: str) -> str | None:
    """``'model.py:loss'`` for ``model.loss`` or ``model.py.loss`` where that script exists (trial 82: a
    module-style name, the form `python -m` and imports use); for a script alone, its likely targets."""
    if ref.endswith(".py") and Path(ref).is_file():  # the script alone: the function it names is missing
        names = _target_functions(ref)
        if len(names) > 1:  # (trial 103 was offered the first of several)
            return f"'{ref}:NAME' with NAME one of {', '.join(names)} (each has a NAME_inputs factory)"
        return f"'{ref}:{names[0]}'" if names else None
    stem, dot, name = ref.rpartition(".")
    if not dot or not stem or not name.isidentifier():
        return None
    scripts = [stem] if stem.endswith(".py") else [f"{stem}.py", f"{stem.replace('.', '/')}.py"]
    return next((f"'{script}:{name}'" for script in scripts if Path(script).is_file()), None)


def _target_functions(script: str) -> list[str]:
    """The public functions `script` defines at its top level that have a ``NAME_inputs`` factory beside it (up
    to 6), else the first public one (read, not run: trial 83's ``check mistakes.py`` was offered
    ``mistakes.py:py``; trial 94's SimCLR a helper before its ``loss``); none where it defines none."""
    try:
        tree = ast.parse(Path(script).read_text(), filename=script)
    except (OSError, SyntaxError, ValueError):
        return []
    defined = [d.name for d in tree.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))]
    names = [n for n in defined if not n.startswith("_") and not n.endswith("_inputs")]
    paired = [n for n in names if f"{n}_inputs" in defined]
    return paired[:6] if paired else names[:1]


def article(word: str) -> str:
    """`word` with its indefinite article: ``an int``, ``a float``."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


_MODULE_CACHE: dict[Path, ModuleType] = {}


# torch logs a traceback (logging.ERROR) when a fake-tensor kernel fails on the user's shapes,
# before capture turns the error into one line: quiet while the CLI captures.
_TRACER_LOGGERS = ("torch._subclasses.fake_tensor",)


@contextlib.contextmanager
def user_code() -> Iterator[None]:
    """Run the user's code with its prints (stdout) sent to stderr."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


@contextlib.contextmanager
def _quiet_tracer_logs() -> Iterator[None]:
    loggers = [logging.getLogger(name) for name in _TRACER_LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def import_script(path_text: str) -> ModuleType:
    """Import a ``.py`` file by path (its folder first on sys.path while it runs), cached."""
    path = Path(path_text).expanduser()
    if path.suffix != ".py":
        if ".py:" in path_text:  # SCRIPT.py:FUNCTION:MORE (the target is split at its last colon)
            raise UsageError(f"target {path_text}:... has more than one ':' after the script "
                             f"{path_text[:path_text.index('.py:') + 3]!r}; pass SCRIPT.py:FUNCTION")
        raise UsageError(f"script {path_text!r} is not a .py file; pass SCRIPT.py:FUNCTION")
    if path.is_dir():  # (trial 65: a folder named x.py was said not to exist)
        raise UsageError(f"script {path_text!r} is a folder, not a file; pass SCRIPT.py:FUNCTION")
    if not path.is_file():
        where = "" if path.is_absolute() else f" (looked in {Path.cwd()})"  # (a relative path's folder)
        raise UsageError(f"script {path_text!r} does not exist{where}")
    path = path.resolve()
    if path in _MODULE_CACHE:
        return _MODULE_CACHE[path]
    name = f"roundoff_user_{abs(hash(path)):x}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {path_text!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    # registered, as importlib's recipe does: Dynamo imports a function's module by name when it inlines the
    # function (observe's torch.compile of the user's step: "No module named 'roundoff_user_...'")
    sys.modules[name] = module
    sys.path.insert(0, str(path.parent))
    bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no __pycache__ left there
    try:
        with user_code():
            spec.loader.exec_module(module)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a user script may raise anything, SystemExit included
        sys.modules.pop(name, None)
        raise UsageError(
            f"script {path_text!r} failed to import: it {describe(exc)}; fix the script "
            "(or run it with python to see the full traceback)"
        ) from exc
    finally:
        sys.dont_write_bytecode = bytecode
        if sys.path and sys.path[0] == str(path.parent):
            sys.path.pop(0)
    _MODULE_CACHE[path] = module
    return module


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
        close = difflib.get_close_matches(name, found, n=1)
        raise UsageError(
            f"{role} {name!r} not found in {script!r}; {f'did you mean {close[0]!r}? ' if close else ''}"
            f"it defines: {', '.join(found) or 'nothing'}"
        )
    if not callable(obj):
        raise UsageError(f"{role} {name!r} in {script!r} is {article(type(obj).__name__)}, "
                         "not a function")
    if isinstance(obj, type) and role == "function":  # (trial 76: "Net() cannot take the 1 tensor(s)")
        kind = "an nn.Module class" if issubclass(obj, torch.nn.Module) else "a class"
        raise UsageError(f"{name!r} in {script!r} is {kind}, not an instance or a function: make one in the "
                         f"script (e.g. `model = {name}()`) and pass SCRIPT:model, or a function that calls it")
    if isinstance(obj, torch.nn.Module) and type(obj).forward is torch.nn.Module.forward:
        raise UsageError(f"{name!r} in {script!r} is {article(type(obj).__name__)} module that defines no forward(); "
                         "define forward, or pass a function that computes with it")
    return obj


def as_input_tuple(value: Any, where: str) -> tuple[torch.Tensor, ...]:
    """A factory's result as a tuple of tensors; a lone tensor is wrapped, anything else refused."""
    if isinstance(value, torch.Tensor):
        return (value,)
    if not isinstance(value, (tuple, list)) or not value:
        what = f"an empty {type(value).__name__}" if isinstance(value, (tuple, list)) else type(value).__name__
        raise UsageError(f"{where} returned {what}; it must return a non-empty tuple of tensors (or one tensor)")
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
    if inputs_ref is not None:
        split_ref(inputs_ref, "--inputs")  # the option's form is checked before any script runs
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
        with user_code():
            raw = factory()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit too: user code never decides the exit status
        raise UsageError(f"{where} {describe(exc)}; fix the factory") from exc
    inputs = as_input_tuple(raw, where)
    _check_arity(fn, inputs, f"{script}:{fn_name}", where)
    return Loaded(f"{script}:{fn_name}", fn, inputs, backward)


def _check_arity(fn: Callable[..., Any], inputs: tuple, label: str, where: str) -> None:
    """Refuse inputs the function's signature cannot take (too few or too many), before tracing."""
    if (mismatch := signature_mismatch(fn, inputs)) is not None:
        raise UsageError(
            f"{label}{mismatch[0]} cannot take the {len(inputs)} tensor(s) {where} returned ({mismatch[1]}); "
            "return one tensor per positional parameter"
        )


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
    """Resolve TARGET (``zoo:NAME`` or ``SCRIPT:FUNCTION``) and its inputs; nothing runs the
    function yet (`capture_target` does, once)."""
    if target.startswith("zoo:"):
        if inputs_ref is not None:
            raise UsageError(
                "--inputs is for SCRIPT:FUNCTION targets; zoo workloads bring their own"
            )
        return load_zoo_target(target[4:], backward)
    return load_script_target(target, inputs_ref, backward)


def capture_target(loaded: Loaded) -> Program:
    """Capture `loaded` (the one time the CLI runs the user's function); refuse a program with
    nothing to check.

    An exception from the user's code, ``sys.exit()`` included, becomes a `UsageError` naming the
    file and line; one from roundoff itself propagates (an internal error). A program is checkable
    when at least one output is a floating-point tensor.
    """
    try:
        with user_code(), _quiet_tracer_logs():
            program = capture(loaded.fn, *loaded.inputs, backward=loaded.backward)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        if is_user_error(exc) or (isinstance(exc, Exception) and user_frame(exc) is None):
            raise
        shapes = ", ".join(
            f"{tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}" for t in loaded.inputs
        )
        raise UsageError(
            f"{loaded.label} {describe(exc)} on its inputs [{shapes}]; fix the function or make "
            "the input factory return what it expects"
        ) from exc
    dtypes = _output_dtypes(program)
    if not any(d.is_floating_point for d in dtypes):
        names = ", ".join(sorted({str(d).removeprefix("torch.") for d in dtypes}))
        raise UsageError(
            f"{loaded.label}: no floating-point outputs (outputs are {names}); roundoff checks "
            "floating-point rounding, so return at least one float tensor (bf16/fp16/fp32/...)"
        )
    return program


def _output_dtypes(program: Program) -> list[torch.dtype]:
    """The dtypes of the program's outputs, from the output node's tensor metadata."""
    vals = [a.meta.get("val") for a in program.output_args() if isinstance(a, torch.fx.Node)]
    return [v.dtype for v in vals if isinstance(v, torch.Tensor)]
