"""``-x`` under the two `Negation` decisions, against real Inductor (CPU here; CUDA where present).

The graph is random graph 2 of bench/gpu_validation.py, ``-where(x0 > x1 - x1, x0, x1 - x1)``:
every element that selects ``x1 - x1`` negates ``+0.0``. Eager and Inductor's C++ backend give
``-0.0`` there (sign flip); Inductor's Triton code gives ``+0.0`` (Triton lowers unary minus to
``0.0 - x``). Compared by bit pattern, so the sign of zero counts.
"""

from __future__ import annotations

import functools

import pytest
import torch
import torch._dynamo

from roundoff.capture import capture
from roundoff.execute import run_plan
from roundoff.numerics import bits_differ
from roundoff.plan import plan
from roundoff.policy import Negation


def _graph2(x0: torch.Tensor, x1: torch.Tensor) -> torch.Tensor:
    return -torch.where(x0 > x1 - x1, x0, x1 - x1)


@functools.cache
def _inputs(device: str = "cpu") -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(2)
    return tuple((torch.randn(4096, generator=g) * 4).to(torch.bfloat16).to(device) for _ in range(2))


def _emulated(preset: str, xs: tuple[torch.Tensor, ...]) -> torch.Tensor:
    p = plan(capture(_graph2, *xs), preset)
    (neg,) = [d for d in p.decisions.values() if d.op == "aten.neg.default"]
    assert neg.negation is (Negation.SUBTRACT_FROM_ZERO if preset == "inductor-gpu" else Negation.SIGN_FLIP)
    return run_plan(p, xs)[0]


def test_inductor_cpu_emulation_equals_real_inductor_with_the_sign_of_zero() -> None:
    xs = _inputs()
    torch._dynamo.reset()
    real = torch.compile(_graph2, dynamic=False, fullgraph=True)(*xs)
    zeros = real == 0
    assert 0 < int(zeros.sum()) and bool(real[zeros].signbit().all()), "CPU Inductor's -(+0.0) is not -0.0"
    emu = _emulated("inductor-cpu", xs)
    assert bits_differ(emu, real) == 0, "repro: run_plan(plan(capture(graph 2), 'inductor-cpu')) vs torch.compile"
    assert bits_differ(emu, _graph2(*xs)) == 0  # and eager


def test_inductor_gpu_emulation_subtracts_from_zero() -> None:
    """Oracle: the graph written with Triton's semantics by hand, ``0.0 - w`` in fp32, one rounding."""
    xs = _inputs()
    x0, x1 = (x.float() for x in xs)
    w = torch.where(x0 > x1 - x1, x0, x1 - x1)
    want = (torch.zeros_like(w) - w).to(torch.bfloat16)
    emu = _emulated("inductor-gpu", xs)
    assert bits_differ(emu, want) == 0, "repro: run_plan(plan(capture(graph 2), 'inductor-gpu'))"
    flipped = bits_differ(emu, _graph2(*xs))
    assert flipped == int((w == 0).sum()) > 0  # exactly the +0.0 results differ from eager


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (Triton's unary minus)")
def test_cuda_inductor_gpu_emulation_equals_real_inductor_with_the_sign_of_zero() -> None:
    xs = _inputs("cuda")
    torch._dynamo.reset()
    real = torch.compile(_graph2, dynamic=False, fullgraph=True)(*xs)
    emu = _emulated("inductor-gpu", xs)
    assert bits_differ(emu, real) == 0, "repro: graph 2 on CUDA, inductor-gpu vs torch.compile"
    assert bits_differ(_graph2(*xs), real) > 0, "Triton's -x equals eager's here: test tells nothing"
