"""`blame(..., trim=False)` (`--by-values`) fixes the outputs `check(..., by_values=True)` fails (trial 87: blame
said "nothing to fix" of a U-Net step whose gradients check --by-values failed at 25-40x their reference)."""

from __future__ import annotations

import torch

from roundoff.analyze import check
from roundoff.blame import blame
from roundoff.capture import capture
from tests.analyze.planted import lost_increments


def test_blame_by_values_fixes_what_check_by_values_fails() -> None:
    x = (torch.rand(4096, generator=torch.Generator().manual_seed(0)) + 1.0).to(torch.bfloat16)
    exact = x.double() * 1.0009765625 ** 40
    rounded = float((exact.bfloat16().double() - exact).norm())
    assert float((lost_increments(x).double() - exact).norm()) > 16 * rounded  # by hand: real eager is over
    program = capture(lost_increments, x)
    assert not check(program, (x,), "eager", against="oracle", nodes="all").diverges  # the path rule passes it
    found = blame(program, "eager", against="oracle", trim=False, repro=False)
    assert found.status.value == "fixed" and found.changes, found.notes
    fixed = check(program, (x,), found.fixed_policy, against="oracle", nodes="all", by_values=True)
    assert not fixed.diverges
    # the fix by hand: the products kept in fp32, rounded to bf16 once at the end
    kept = x.float()
    for _ in range(40):
        kept = kept * 1.0009765625
    assert float((kept.bfloat16().double() - exact).norm()) <= 16 * rounded
