"""Validate and name a capture's inputs: user arguments, module parameters and buffers, cotangents."""

from __future__ import annotations

import dis
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from roundoff.capture.closure import target_state
from roundoff.capture.errors import BACKWARD_INSIDE, CaptureError


@dataclass(frozen=True)
class CaptureInputs:
    """The flat graph inputs of a capture, in graph order: user arguments, then the state the target
    reads (an ``nn.Module``'s or a closed-over model's parameters then buffers, named as
    `roundoff.capture.closure` describes), then cotangents (only with ``backward`` and given
    cotangents). `wants_grad[i]` says whether the gradient w.r.t. input i is a graph output.

    `tensors` are what the program is fed (state detached; buffers copied before the capture run,
    which may update them); `trace_tensors` are what tracing is fed: the state tensors themselves, so
    that the user's code reading them reads graph inputs."""

    tensors: tuple[torch.Tensor, ...]
    trace_tensors: tuple[torch.Tensor, ...]
    names: tuple[str, ...]
    wants_grad: tuple[bool, ...]
    num_user: int
    num_state: int  # parameters + buffers
    num_buffers: int  # the last ones of the state
    num_cotangents: int
    constant_names: dict[int, str]  # id of a closed-over non-state tensor -> its variable path
    #: the floating-point inputs that require grad (user arguments, parameters), with `backward` or not
    trainable: tuple[str, ...] = ()


def definition_source(fn: Callable[..., Any]) -> str | None:
    """``"file.py:LINE"`` where `fn` (or a module's forward) is defined, if Python knows."""
    target = fn.forward if isinstance(fn, torch.nn.Module) else fn
    try:
        filename = inspect.getsourcefile(target)  # type: ignore[arg-type]
        _, line = inspect.getsourcelines(target)  # type: ignore[arg-type]
    except (TypeError, OSError):
        return None
    return f"{filename.rsplit('/', 1)[-1]}:{line}" if filename else None


def _backward_call_line(fn: Callable[..., Any]) -> str | None:
    """``"file.py:LINE"`` of a ``.backward`` that `fn`'s own body (a module's forward) names, e.g.
    ``loss.backward()``, else None: read from its bytecode, so calls in functions it calls are not seen."""
    target = fn.forward if isinstance(fn, torch.nn.Module) else inspect.unwrap(fn)
    code = getattr(target, "__code__", None)
    if code is None:
        return None
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval == "backward" and ins.positions:
            return f"{code.co_filename.rsplit('/', 1)[-1]}:{ins.positions.lineno}"
    return None


def _argument_names(fn: Callable[..., Any], count: int) -> list[str]:
    target = fn.forward if isinstance(fn, torch.nn.Module) else fn
    try:
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        params = []
    names: list[str] = []
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and len(names) < count:
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            break
    names += [f"arg{i}" for i in range(len(names), count)]
    return names


def _is_float(t: torch.Tensor) -> bool:
    return t.is_floating_point()


def signature_mismatch(fn: Callable[..., Any], inputs: Sequence[Any]) -> tuple[inspect.Signature, str] | None:
    """(signature, why) where `fn` (a module: its ``forward``) cannot take `inputs` as positional arguments;
    None where it can, or has no signature to read (a builtin: tracing will say)."""
    try:
        signature = inspect.signature(fn.forward if isinstance(fn, torch.nn.Module) else fn)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*inputs)
    except TypeError as exc:
        return signature, str(exc)
    return None


def collect_inputs(
    fn: Callable[..., Any],
    example_inputs: Sequence[Any],
    backward: bool,
    cotangents: Sequence[torch.Tensor] | torch.Tensor | None,
) -> CaptureInputs:
    """Check the example inputs (tensors only) and lay out graph inputs."""
    if not callable(fn):
        raise CaptureError(
            f"got {type(fn).__name__}; pass a function or torch.nn.Module",
            construct="capture target is not callable",
        )
    for i, x in enumerate(example_inputs):
        if isinstance(x, (list, tuple)) and x and all(isinstance(t, torch.Tensor) for t in x):
            raise CaptureError(  # (trial 59: the message showed the tensors' values, cut mid-number)
                f"example input {i} is a {type(x).__name__} of {len(x)} tensor(s); pass the tensors themselves as "
                "inputs: capture(fn, *xs)",
                construct="non-tensor example input",
            )
        if not isinstance(x, torch.Tensor):
            raise CaptureError(
                f"example input {i} is {type(x).__name__} ({x!r:.60}); every example input must be a "
                "torch.Tensor (wrap Python numbers with torch.tensor(...), or close over them in fn)",
                construct="non-tensor example input",
            )
        if x.is_meta:
            raise CaptureError(
                f"example input {i} is on the meta device, which holds no values; roundoff runs the "
                "program once on its example inputs: pass CPU or CUDA tensors",
                construct="meta-device example input",
            )
    if (mismatch := signature_mismatch(fn, example_inputs)) is not None:  # before tracing, which located it
        signature, why = mismatch                                          # at `<string>:1` (trial 63)
        raise CaptureError(
            f"{getattr(fn, '__name__', type(fn).__name__)}{signature} cannot take the {len(example_inputs)} example "
            f"input(s) given ({why}); pass one tensor per positional parameter",
            construct="wrong number of example inputs",
        )
    user = [x.detach() for x in example_inputs]
    names = _argument_names(fn, len(user))
    wants = [bool(backward and x.requires_grad and _is_float(x)) for x in example_inputs]
    found = target_state(fn, reserved=tuple(names))
    state = [t for _, t, _ in found.state]
    for qual, t, buffer in found.state:
        names.append(qual)
        wants.append(bool(backward and not buffer and t.requires_grad and _is_float(t)))
    if backward and not any(wants):
        if (line := _backward_call_line(fn)) is not None:  # the cause of both: said first (trial 49)
            raise CaptureError(BACKWARD_INSIDE, construct="backward inside the function", source=line)
        raise CaptureError(
            "backward=True but no floating-point input requires grad; call .requires_grad_() on the "
            "inputs to differentiate (parameters of the modules it uses count automatically, where the modules "
            "exist before the call: a module built inside the function, or on its first call, is found only "
            "after it; build it at import time. A tensor it closes over counts where it requires grad and "
            "is a leaf: one computed from others, `w.half()` of a `w` that requires grad, is a constant: make "
            "it a leaf, `w.detach().half().requires_grad_()`, or pass it as an argument)",
            construct="nothing to differentiate",
        )
    trainable = tuple(n for n, t, buffer in zip(names, (*example_inputs, *state), (False,) * len(user) + tuple(
        b for _, _, b in found.state)) if t.requires_grad and _is_float(t) and not buffer)
    cots = _cotangent_list(cotangents, backward)
    names += [f"cotangent{i}" for i in range(len(cots))]
    wants += [False] * len(cots)
    fed = [t.detach().clone() if buffer else t.detach() for _, t, buffer in found.state]
    return CaptureInputs(
        tensors=tuple(user + fed + cots),
        trace_tensors=tuple(user + state + cots),
        names=tuple(names),
        wants_grad=tuple(wants),
        num_user=len(user),
        num_state=len(state),
        num_buffers=sum(buffer for _, _, buffer in found.state),
        num_cotangents=len(cots),
        constant_names=found.constant_names,
        trainable=trainable,
    )


def _cotangent_list(
    cotangents: Sequence[torch.Tensor] | torch.Tensor | None, backward: bool
) -> list[torch.Tensor]:
    if cotangents is None:
        return []
    if not backward:
        raise CaptureError(
            "cotangents were given with backward=False; pass backward=True or drop cotangents",
            construct="cotangents without backward",
        )
    cots = [cotangents] if isinstance(cotangents, torch.Tensor) else list(cotangents)
    for i, c in enumerate(cots):
        if not isinstance(c, torch.Tensor):
            raise CaptureError(
                f"cotangent {i} is {type(c).__name__}; pass one tensor per floating-point output",
                construct="non-tensor cotangent",
            )
    return [c.detach() for c in cots]
