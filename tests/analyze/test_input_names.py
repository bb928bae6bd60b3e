"""Trial 102: a DiT step's timesteps, cast to bf16 before the sinusoidal embedding (903 -> 904), were named
"input `arg1_1`" in check's finding; the user's parameter is `t`. Oracle: the function's own signature, and
torch's bf16 cast of the timesteps (not exact), which the cosine amplifies."""

from __future__ import annotations

import torch

from roundoff.analyze import check
from roundoff.capture import capture

_FREQS = torch.linspace(0.05, 1.0, 16)


def embed(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    return (x * torch.cos(t.to(torch.bfloat16).float()[:, None] * _FREQS)).sum()


def test_a_finding_names_an_input_by_its_parameter_name() -> None:
    t = torch.tensor([17.0, 903.0])
    assert float(t.bfloat16().float()[1]) != 903.0  # the cast loses the timestep
    x = torch.randn(2, 16, generator=torch.Generator().manual_seed(0)).bfloat16()
    program = capture(embed, x, t)
    assert program.input_names == ("x", "t")
    said = " ".join(check(program, (x, t), "eager", against="oracle", nodes="all").explanations)
    assert "input `t`, read in bfloat16" in said and "arg1_1" not in said, said
