"""What blame says no placement decides (trial 88, a NeRF): a 16-bit factory an amplified error comes from
(its bf16 ``linspace`` depths under the positional encoding's ``cos``: blame said only "not a placement
decision" where the code's ``dtype=`` was the cause), and the transcendental kernels a bitwise fix of an
Inductor policy rests on."""

from __future__ import annotations

import math

import torch

from roundoff.analyze import check
from roundoff.blame import BlameStatus, blame
from roundoff.capture import capture

BF16 = torch.bfloat16


def _encoded(depths: torch.dtype):
    def encoded(o: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        t = torch.linspace(2.0, 6.0, 32, dtype=depths)
        return torch.cos(256 * math.pi * (o[:, None] + d[:, None] * t[None, :]))
    return encoded


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return (-4 + 0.1 * torch.randn(64, generator=g)).to(BF16), (1 + 0.1 * torch.randn(64, generator=g)).to(BF16)


def test_no_fix_names_the_factory_and_the_code_change_works() -> None:
    program = capture(_encoded(BF16), *_inputs())
    (nid,) = [n.meta["roundoff_id"] for n in program.nodes() if "linspace" in str(n.target)]
    found = blame(program, "eager", _inputs(), against="oracle", repro=False)
    assert found.status is BlameStatus.NO_FIX, found
    (note,) = [n for n in found.notes if "upstream of an amplified error" in n]
    assert f"linspace ({nid}) at test_beyond_placement.py:" in note and "made in bfloat16 by the code itself" in note, note
    # the advice, applied: depths made in fp32 (the rest still bf16 under eager) bring the check to a pass
    assert check(_encoded(BF16), _inputs(), "eager", against="oracle").diverges
    fixed = check(_encoded(torch.float32), _inputs(), "eager", against="oracle")
    assert not fixed.diverges, fixed.explanations


def _phase(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(x * 1000.0)


def test_a_bitwise_fix_of_an_inductor_policy_says_what_it_rests_on(tmp_path, monkeypatch) -> None:
    """Trial 88: blame's bitwise fix of a NeRF under inductor-cpu, bit for bit emulated with eager's sin/cos,
    was an ulp off eager's loss under roundoff.compile: Inductor's own sin differs from eager's. Oracle:
    real torch.compile of the same sin."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    x = torch.randn(4096, generator=torch.Generator().manual_seed(0)).to(BF16)
    found = blame(capture(_phase, x), "inductor-cpu", (x,), against="eager", rule="bitwise", repro=False)
    assert found.status is BlameStatus.FIXED, found
    (note,) = [n for n in found.notes if n.startswith("bit for bit as emulated")]
    assert "`sin`" in note and "Inductor's own implementations" in note, note
    wide = (x.float() * 1000.0)
    torch._dynamo.reset()
    assert not torch.equal(torch.compile(torch.sin)(wide), torch.sin(wide))  # the real kernel differs
