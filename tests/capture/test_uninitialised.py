"""Programs that allocate memory without initialising it (``torch.empty``): refused where they compute with
it, captured where they write it first, and run the same way every time."""

from __future__ import annotations

import pytest
import torch

from roundoff.capture import CaptureError, capture
from roundoff.execute import run_plan
from roundoff.plan import plan


def reads_garbage(x: torch.Tensor) -> torch.Tensor:
    buf = torch.empty(4, dtype=x.dtype)
    return x + buf


def fills_then_reads(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    k = a.new_empty(*a.shape[:-1], 16)  # DeepseekV3's key states: written slice by slice, then read
    k[..., :8].copy_(a)
    k[..., 8:].copy_(b)
    return k * 2


def half_filled(a: torch.Tensor) -> torch.Tensor:
    k = a.new_empty(*a.shape[:-1], 16)
    k[..., :8].copy_(a)  # the other half stays unwritten
    return k * 2


def test_a_program_computing_with_uninitialised_memory_is_refused_at_its_line() -> None:
    """Trial 62: ``x + torch.empty(4)`` checked "ok" once and "diverges" the next run. Oracle: torch's
    semantics (``empty`` is uninitialised; the sum is undefined)."""
    x = torch.randn(4).half()
    with pytest.raises(CaptureError, match=r"uninitialised memory read at test_uninitialised.py:\d+: `add` reads "
                                           r"memory `empty` left uninitialised \(allocated at test_uninitialised.py"):
        capture(reads_garbage, x)


def test_memory_written_before_it_is_read_is_captured_and_emulated_as_eager_computes_it() -> None:
    a, b = torch.randn(2, 4, 8).bfloat16(), torch.randn(2, 4, 8).bfloat16()
    program = capture(fills_then_reads, a, b)
    (out,) = run_plan(plan(program, "eager"), (a, b))
    assert torch.equal(out, fills_then_reads(a, b))  # oracle: eager's own run


def test_memory_left_unwritten_is_nan_in_every_run() -> None:
    """What a partly written allocation leaves is NaN in every run (torch's deterministic mode fills it so),
    not whatever the allocator's memory held; the written half is eager's."""
    a = torch.randn(2, 4, 8).bfloat16()
    program = capture(half_filled, a)
    runs = [run_plan(plan(program, policy), (a,))[0] for policy in ("eager", "inductor-cpu", "fp64")]
    for out in runs:
        assert out[..., 8:].isnan().all()
        assert torch.equal(out[..., :8].to(a.dtype), a * 2)
