"""Enforcing the negation decision: a sign-flip policy on CUDA rewrites ``aten.neg`` to ``x * -1.0``.

Triton lowers ``-x`` to ``0.0 - x`` (``roundoff.policy.Negation``), so plain ``torch.compile`` on
CUDA gives ``-(+0.0) = +0.0``. Oracle: real eager (``-(+0.0) = -0.0``), compared by bit pattern.
"""

from __future__ import annotations

import pytest
import torch
import torch._dynamo
from torch.fx.experimental.proxy_tensor import make_fx

import roundoff
from roundoff.compiler import inductor_settings
from roundoff.compiler.rewrite import sign_flip_negations
from roundoff.numerics import bits_differ
from roundoff.policy import get_policy


def _graph2(x0: torch.Tensor, x1: torch.Tensor) -> torch.Tensor:
    return -torch.where(x0 > x1 - x1, x0, x1 - x1)


def _inputs(device: str) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(2)
    return tuple((torch.randn(4096, generator=g) * 4).to(torch.bfloat16).to(device) for _ in range(2))


def test_rewrite_replaces_float_negations_only_and_keeps_bits() -> None:
    def fn(x0: torch.Tensor, x1: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return _graph2(x0, x1), -k

    xs = (*_inputs("cpu"), torch.arange(-3, 3))
    gm = make_fx(fn, tracing_mode="fake")(*xs)
    assert sign_flip_negations(gm) == 1  # the integer negation stays
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert torch.ops.aten.mul.Tensor in targets and targets.count(torch.ops.aten.neg.default) == 1
    got, want = gm(*xs), fn(*xs)
    assert bits_differ(got[0], want[0]) == 0 and torch.equal(got[1], want[1])
    assert bool(got[0][got[0] == 0].signbit().all()) and int((got[0] == 0).sum()) > 0  # -0.0 kept


def test_subtract_from_zero_on_cpu_is_reported_unenforced() -> None:
    notes = inductor_settings(get_policy("inductor-gpu"), "cpu").unenforced
    assert any("negation=subtract_from_zero" in u for u in notes), notes
    assert not any("negation" in u for u in inductor_settings(get_policy("inductor-gpu"), "cuda").unenforced)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (Triton's unary minus)")
def test_cuda_eager_policy_keeps_the_sign_of_zero() -> None:
    xs = _inputs("cuda")
    want = _graph2(*xs)
    torch._dynamo.reset()
    plain = torch.compile(_graph2)(*xs)
    assert bits_differ(plain, want) > 0, "plain Triton -x equals eager here: test tells nothing"
    torch._dynamo.reset()
    got = roundoff.compile(_graph2, policy="eager")(*xs)
    assert bits_differ(got, want) == 0, "repro: roundoff.compile(graph 2, policy='eager') on CUDA vs eager"
