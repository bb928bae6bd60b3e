"""A graph captured on one device runs on another: constants and factory ``device=`` follow the inputs."""

from __future__ import annotations

import torch

from roundoff.capture import capture
from roundoff.execute.devices import inputs_device, on_device, relocated, relocation


def _with_factory(x: torch.Tensor) -> torch.Tensor:
    return torch.where(x > 0, x, torch.zeros((), device=x.device))


def test_relocation_maps_the_captured_device_to_the_inputs_device() -> None:
    program = capture(_with_factory, torch.randn(4))
    cuda = torch.device("cuda")  # a device object only: nothing runs there
    assert relocation(program.graph, torch.device("cpu")) is None
    relocate = relocation(program.graph, cuda)
    assert relocate == (torch.device("cpu"), cuda)
    factory = next(n for n in program.graph.nodes if n.kwargs.get("device") is not None)
    assert relocated(dict(factory.kwargs), relocate)["device"] == cuda
    assert relocated({"device": torch.device("meta")}, relocate) == {"device": torch.device("meta")}


def test_inputs_device_prefers_float_inputs() -> None:
    ids, x = torch.zeros(2, dtype=torch.int64), torch.zeros(2)
    assert inputs_device([ids, x]) == x.device and inputs_device([]) is None
    assert on_device(3, torch.device("cpu")) == 3 and on_device(x, None) is x
