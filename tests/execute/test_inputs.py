"""Bad inputs to an emulated run are refused with one line naming the input."""

from __future__ import annotations

import pytest
import torch

from roundoff.analyze import check
from roundoff.capture import CaptureError, capture
from roundoff.execute import run_oracle, run_plan
from roundoff.plan import plan


def _double(x: torch.Tensor) -> torch.Tensor:
    return x * 2


def test_meta_device_input_is_refused_by_name() -> None:
    meta = torch.empty(4, 8, device="meta")
    with pytest.raises(CaptureError, match=r"example input 0 is on the meta device, which holds no values"):
        check(_double, [meta], "eager")  # capture refuses it first
    program = capture(_double, torch.randn(4, 8))
    for run in (lambda: run_plan(plan(program, "eager"), [meta]), lambda: run_oracle(program, [meta])):
        with pytest.raises(ValueError, match="on the meta device"):
            run()
