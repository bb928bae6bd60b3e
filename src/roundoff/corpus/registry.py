"""The corpus record (`Entry`), a built target (`Target`) and the three target forms.

A *form* is how a user hands roundoff a model: `module` (an ``nn.Module`` whose
``forward(*tensors)`` returns the loss: its parameters are named graph inputs), `closure` (a plain
function that closes over the model, the README's ``model.py:forward`` pattern) and `ids` (a
function of integer token ids only: the parameters are its only floating-point values). All three
compute the same loss from the same model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

import torch

FORMS = ("module", "closure", "ids")


class Family(Enum):
    HUGGINGFACE = "huggingface"  # PyTorch's benchmarks/dynamo/huggingface_models_list.txt
    HANDWRITTEN = "handwritten"  # research-style code written here, not transformers


class CorpusUnavailable(RuntimeError):
    """The entry cannot be built here (say, the installed transformers lacks its class)."""


@dataclass(frozen=True)
class Target:
    """A built corpus entry in one form.

    `fn(*inputs)` returns the scalar loss (bf16 or fp32, whatever the model's own loss is);
    ``fn(*inputs).backward()`` is one training step without the optimizer. `model` is the
    underlying ``nn.Module`` in training mode (every dropout probability 0), so gradients land on
    its parameters.
    """

    name: str
    form: str
    fn: Callable[..., torch.Tensor]
    inputs: tuple[torch.Tensor, ...]
    input_names: tuple[str, ...]
    model: torch.nn.Module

    def step(self) -> torch.Tensor:
        """One eager forward+backward (gradients accumulate into the parameters' ``.grad``)."""
        loss = self.fn(*self.inputs)
        loss.backward()
        return loss


@dataclass(frozen=True)
class Entry:
    """One corpus model: `build_model(seed)` -> the model; `make_inputs(model, seed)` -> named
    tensors (the keyword arguments of its call); `loss(model, **inputs)` -> the scalar loss.
    `ids_inputs` names the inputs the `ids` form derives from ``input_ids`` (empty: no `ids` form).
    `broken` says why the model's own eager bf16 training step fails here (empty: it runs)."""

    name: str
    family: Family
    source: str
    build_model: Callable[[int], torch.nn.Module]
    make_inputs: Callable[[torch.nn.Module, int], Mapping[str, torch.Tensor]]
    loss: Callable[..., torch.Tensor]
    ids_inputs: tuple[str, ...] = ()
    note: str = ""
    broken: str = ""

    @property
    def forms(self) -> tuple[str, ...]:
        return FORMS if self.ids_inputs else FORMS[:2]

    def build(self, form: str = "module", seed: int = 0, device: str = "cpu") -> Target:
        """The entry as `form`, its parameters from `seed`, on `device`, in training mode."""
        if form not in self.forms:
            raise ValueError(f"{self.name} has no {form!r} form; it has {', '.join(self.forms)}")
        model = self.build_model(seed).to(device).train()
        named = {k: v.to(device) for k, v in self.make_inputs(model, seed).items()}
        if form == "module":
            return Target(self.name, form, _LossModule(model, self.loss, tuple(named)),
                          tuple(named.values()), tuple(named), model)
        if form == "closure":
            return Target(self.name, form, _closure(model, self.loss, tuple(named)),
                          tuple(named.values()), tuple(named), model)
        return Target(self.name, form, _ids_closure(model, self.loss, self.ids_inputs),
                      (named["input_ids"],), ("input_ids",), model)


class _LossModule(torch.nn.Module):
    """``forward(*tensors)`` -> the wrapped model's loss; the tensors are its keyword inputs."""

    def __init__(self, model: torch.nn.Module, loss: Callable[..., torch.Tensor],
                 names: tuple[str, ...]) -> None:
        super().__init__()
        self.model = model
        self._loss = loss
        self._names = names

    def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
        return self._loss(self.model, **dict(zip(self._names, tensors)))


def _closure(model: torch.nn.Module, loss: Callable[..., torch.Tensor],
             names: tuple[str, ...]) -> Callable[..., torch.Tensor]:
    def forward(*tensors: torch.Tensor) -> torch.Tensor:
        return loss(model, **dict(zip(names, tensors)))

    return forward


def _ids_closure(model: torch.nn.Module, loss: Callable[..., torch.Tensor],
                 derived: tuple[str, ...]) -> Callable[[torch.Tensor], torch.Tensor]:
    """A function of the token ids alone; each name in `derived` is fed the same ids (a language
    model's labels are its inputs: the model shifts them itself)."""

    def forward(input_ids: torch.Tensor) -> torch.Tensor:
        return loss(model, input_ids=input_ids, **{k: input_ids for k in derived})

    return forward


def model_loss(model: torch.nn.Module, **inputs: Any) -> torch.Tensor:
    """A transformers model's own loss (``outputs.loss``, what PyTorch's harness backpropagates)."""
    return model(**inputs).loss
