"""Devices of an emulated run: the inputs decide; a graph's constants and factory ops follow them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.fx


def inputs_device(inputs: Sequence[Any]) -> torch.device | None:
    """The device of the inputs: that of the first floating-point tensor input (else of the first tensor);
    None without tensor inputs. A graph's tensor constants are moved there (they were captured on
    whatever device the model built them, typically CPU, e.g. transformers' empty KV-cache tensors)."""
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    floats = [x for x in tensors if x.is_floating_point()]
    return (floats or tensors)[0].device if tensors else None


def relocation(graph: torch.fx.Graph, device: torch.device | None) -> tuple[torch.device, torch.device] | None:
    """``(captured, run)`` devices when the graph was traced on another device than its inputs are on
    now (e.g. captured on CPU, run on CUDA): factory ops (``scalar_tensor``, ``full``, ``arange``...)
    carry the captured device as a ``device=`` argument, which `relocated` rewrites. None otherwise."""
    vals = [n.meta.get("val") for n in graph.nodes if n.op == "placeholder"]
    captured = inputs_device([v for v in vals if isinstance(v, torch.Tensor)])
    return (captured, device) if captured is not None and device is not None and captured != device else None


def relocated(kwargs: dict, relocate: tuple[torch.device, torch.device] | None) -> dict:
    """`kwargs` with a ``device=`` equal to the captured device replaced by the run device."""
    if relocate is None or kwargs.get("device") is None or torch.device(kwargs["device"]) != relocate[0]:
        return kwargs
    return {**kwargs, "device": relocate[1]}


def on_device(value: Any, device: torch.device | None) -> Any:
    """`value` moved to `device` when it is a tensor elsewhere (an exact copy); else unchanged."""
    if isinstance(value, torch.Tensor) and device is not None and value.device != device:
        return value.to(device)
    return value
