"""Every preset of `roundoff policies` is usable as `check`'s reference (``against=``)."""

from __future__ import annotations

import pytest
import torch

from roundoff.analyze import check
from roundoff.capture import capture
from roundoff.policy.registry import list_policies

POLICIES = tuple(p.name for p in list_policies())


def _f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(torch.softmax(x @ w, -1) * x - 0.5).sum(-1)


@pytest.fixture(scope="module")
def program_and_inputs() -> tuple:
    torch.manual_seed(0)
    x = torch.randn(8, 16, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(16, 16, dtype=torch.bfloat16, requires_grad=True)
    return capture(_f, x, w, backward=True), [x.detach(), w.detach()]


@pytest.mark.parametrize("policy", ["eager", "inductor-gpu"])
@pytest.mark.parametrize("against", POLICIES)
def test_every_preset_as_reference(program_and_inputs: tuple, policy: str, against: str) -> None:
    program, inputs = program_and_inputs
    res = check(program, inputs, policy, against=against, local=False)
    assert len(res.outputs) == 3
    if against == policy:  # a policy against itself: the reference is the same run, bit for bit
        assert all(o.vs_reference is not None and o.vs_reference.max_abs == 0 for o in res.outputs)
