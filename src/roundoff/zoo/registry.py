"""The workload record and the name -> workload registry (addressed as ``zoo:NAME`` by the CLI)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch


class InputFactory(Protocol):
    def __call__(
        self, seed: int = 0, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
    ) -> tuple[torch.Tensor, ...]: ...


class ProgramFactory(Protocol):
    def __call__(
        self, seed: int = 0, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
    ) -> Callable[..., Any]: ...


@dataclass(frozen=True)
class Workload:
    """A named program with deterministic inputs.

    `build(seed, device, dtype)` returns the callable (a plain function, or an ``nn.Module`` whose
    parameters are initialised from `seed`); `make_inputs(seed, device, dtype)` returns its example
    inputs, with ``requires_grad`` set on the inputs the backward differentiates. `dtype=None` means
    `default_dtype`. `backward` is whether the workload is about its gradient by default.
    `source` names the report or thread the workload reproduces.
    """

    name: str
    description: str
    source: str
    factory: ProgramFactory
    inputs: InputFactory
    default_dtype: torch.dtype
    backward: bool = False

    def build(
        self, seed: int = 0, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
    ) -> Callable[..., Any]:
        """The callable (function or nn.Module) under study."""
        return self.factory(seed=seed, device=device, dtype=dtype or self.default_dtype)

    def make_inputs(
        self, seed: int = 0, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
    ) -> tuple[torch.Tensor, ...]:
        """Deterministic example inputs for `seed` on `device` in `dtype` (default `default_dtype`)."""
        return self.inputs(seed=seed, device=device, dtype=dtype or self.default_dtype)


class UnknownWorkloadError(KeyError):
    """No workload by that name; ``str()`` is the plain message (KeyError would quote it)."""

    def __str__(self) -> str:
        return str(self.args[0])


_REGISTRY: dict[str, Workload] = {}


def register(workload: Workload) -> Workload:
    """Add `workload` under its name; a second workload with the same name is a ValueError."""
    if workload.name in _REGISTRY:
        raise ValueError(f"workload {workload.name!r} is already registered")
    _REGISTRY[workload.name] = workload
    return workload


def get_workload(name: str) -> Workload:
    """The workload called `name` (a leading ``zoo:`` is accepted); UnknownWorkloadError (a KeyError) listing
    the known names."""
    if not isinstance(name, str):
        raise TypeError(f"workload name must be a str, got {type(name).__name__}")
    key = name.removeprefix("zoo:")
    if key not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY))
        raise UnknownWorkloadError(f"no workload {name!r} in the zoo; known: {known}")
    return _REGISTRY[key]


def list_workloads() -> tuple[Workload, ...]:
    """All workloads, sorted by name."""
    return tuple(_REGISTRY[k] for k in sorted(_REGISTRY))
