"""blame's fix that brings the outputs within the limit without changing a cause check named says so
(trial 83: a research GroupNorm's `mean` kept in fp32, "fixed", while the cancellation a line later,
which check named, stayed 196x fp16's rounding; nothing in blame's output said it).

Oracle: `check` of the fixed policy against fp64 with every node examined: the node the note names
still loses more than the limit itself; a fix that changes the cause's line has no such note.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from roundoff.analyze import check
from roundoff.analyze.verdict import EXCESS_LIMIT
from roundoff.blame import BlameStatus, blame
from roundoff.capture import capture

_CONV = (torch.randn(32, 32, 3, 3, generator=torch.Generator().manual_seed(0)) / math.sqrt(9 * 32)).half()


def _group_norm(x: torch.Tensor) -> torch.Tensor:
    xg = x.view(2, 8, -1)
    mu = xg.mean(-1, keepdim=True)
    var = (xg * xg).mean(-1, keepdim=True) - mu ** 2  # cancels: features near 6
    return ((xg - mu) / torch.sqrt(var + 1e-5)).view(x.shape)


def _block(x: torch.Tensor) -> torch.Tensor:
    return x + F.conv2d(F.silu(_group_norm(x)), _CONV, padding=1)


def _x() -> torch.Tensor:
    return (torch.randn(2, 32, 8, 8, generator=torch.Generator().manual_seed(1)) * 0.5 + 6.0).half()


def test_a_fix_that_leaves_a_named_cause_says_so_and_check_of_the_fix_still_flags_it():
    program = capture(_block, _x())
    found = blame(program, "eager", against="oracle")
    assert found.status is BlameStatus.FIXED
    named = [n for n in found.notes if n.startswith("check names ") and "the fix does not change it" in n]
    assert len(named) == 1, found.notes
    after = check(program, program.example_inputs, found.fixed_policy, against="oracle", nodes="all")
    assert not after.diverges
    left = next(r for r in after.nodes if f"({r.node_id})" in named[0])
    assert left.op == "sub" and left.own_excess > EXCESS_LIMIT


def test_a_fix_that_changes_the_causes_line_has_no_such_note():
    program = capture(_group_norm, _x())
    found = blame(program, "eager", against="oracle")
    assert found.status is BlameStatus.FIXED
    lines = {program.node(c.node_id).meta.get("roundoff_source") for c in found.changes}
    assert any(s and s.endswith(":27") for s in lines)  # the variance's line
    assert not [n for n in found.notes if "the fix does not change it" in n]


def _timestep_embedding(t: torch.Tensor) -> torch.Tensor:
    freqs = torch.exp(-math.log(10000) * torch.arange(16, dtype=torch.bfloat16) / 16)
    args = t[:, None].to(torch.bfloat16) * freqs[None]  # bf16 phases near 1000: sin/cos amplify their rounding
    return torch.cat([torch.cos(args), torch.sin(args)], -1)


def test_a_cause_that_reads_a_value_the_fix_keeps_wider_is_not_said_to_be_left():
    """Trial 110: a diffusion model's bf16 timestep embedding. check names `sin` and `cos` (their own error,
    from the bf16 phases they read, ~200x bf16's rounding); blame keeps the phases in fp32 and said the fix
    "does not change" sin and cos. Oracle: check of the fixed policy with every node examined, where both
    are within the limit."""
    t = torch.tensor([3, 250, 917, 999])
    program = capture(_timestep_embedding, t)
    before = check(program, (t,), "eager", against="oracle")
    trig = [r for r in before.nodes if r.op in ("sin", "cos")]
    assert {r.node_id for r in trig} <= set(before.culprits) and all(r.own_excess > EXCESS_LIMIT for r in trig)
    found = blame(program, "eager", against="oracle")
    assert found.status is BlameStatus.FIXED
    after = check(program, (t,), found.fixed_policy, against="oracle", nodes="all")
    assert all(r.own_excess <= EXCESS_LIMIT for r in after.nodes if r.op in ("sin", "cos"))
    assert not [n for n in found.notes if "the fix does not change it" in n], found.notes
