"""blame's verdict before any change equals check's against the oracle: one output verdict
(`roundoff.analyze.verdict.oracle_output_passes`) decides both.

Oracle: `check`'s own result on the same program, policy and inputs."""

from __future__ import annotations

import pytest
import torch

from roundoff.analyze import check
from roundoff.blame import blame
from roundoff.capture import capture
from roundoff.zoo import get_workload
from tests.analyze.planted import PLANTED


def _sdpa_bf16(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    p = torch.softmax(q.float() @ k.float().transpose(-1, -2) * 0.25, dim=-1)
    return (p @ v.float()).bfloat16()


def _sdpa_inputs() -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(1, 2, 8, 16, generator=g).bfloat16().requires_grad_() for _ in range(3))


def _cases():
    w = get_workload("softmax-backward")
    yield "zoo-softmax-backward", w.build(), w.make_inputs(), True, "inductor-gpu"
    p = next(p for p in PLANTED if p.name == "variance-by-moments")
    yield p.name, p.fn, p.inputs(), p.backward, p.policy
    # Falcon's pattern: bf16 attention whose math decomposition runs fp32 bmms on bf16-rounded operands.
    yield "sdpa-bf16-autocast", _sdpa_bf16, _sdpa_inputs(), True, "thunder-autocast"


@pytest.mark.parametrize("case", list(_cases()), ids=lambda c: c[0])
def test_blame_before_equals_check_verdict(case):
    name, fn, inputs, backward, policy = case
    program = capture(fn, *inputs, backward=backward, name=name)
    verdict = check(program, inputs, policy, "oracle")
    result = blame(program, policy, inputs, against="oracle", repro=False)
    assert result.ok_before == (not verdict.diverges)
