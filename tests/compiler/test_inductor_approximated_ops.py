"""``TranscendentalImpl("inductor")`` also owns the IEEE ops Inductor's Triton lowering
approximates (fp32 division is ``div.full.f32`` on CUDA): it evaluates them with Inductor's own
kernel, which on CPU is IEEE division (bit-identical to eager) and on CUDA is the kernel the fused
graph uses. (Lives here, beside the GPU validation it serves; the module is
roundoff.execute.transcendental.)"""

from __future__ import annotations

import pytest
import torch

from roundoff.execute import TranscendentalImpl
from roundoff.execute.transcendental import INDUCTOR_APPROXIMATED
from roundoff.ops.classes import OpClass

aten = torch.ops.aten


def _fp32_patterns(n: int, seed: int) -> torch.Tensor:
    """Random fp32 bit patterns (all exponents: subnormals, inf, NaN) plus named specials."""
    g = torch.Generator().manual_seed(seed)
    bits = torch.randint(-(2**31), 2**31, (n,), generator=g, dtype=torch.int64).to(torch.int32)
    special = torch.tensor(
        [0.0, -0.0, 1.0, -1.0, 2.0, 3.0, float("inf"), -float("inf"), float("nan"), 1e-45, 3.4e38],
        dtype=torch.float32,
    )
    return torch.cat([bits.view(torch.float32), special])


def test_handles_transcendentals_in_both_modes_and_division_only_in_inductor_mode() -> None:
    eager, inductor = TranscendentalImpl("eager"), TranscendentalImpl("inductor")
    arith = OpClass.POINTWISE_ARITHMETIC
    assert eager.handles(aten.exp.default, OpClass.POINTWISE_TRANSCENDENTAL)
    assert inductor.handles(aten.exp.default, OpClass.POINTWISE_TRANSCENDENTAL)
    for op in (aten.div.Tensor, aten.reciprocal.default):
        assert op in INDUCTOR_APPROXIMATED
        assert inductor.handles(op, arith) and not eager.handles(op, arith), f"repro: handles({op})"
    assert not inductor.handles(aten.mul.Tensor, arith)


@pytest.mark.parametrize(("op", "arity"), [(aten.div.Tensor, 2), (aten.reciprocal.default, 1)])
def test_inductor_division_on_cpu_is_ieee(op: torch._ops.OpOverload, arity: int) -> None:
    """On CPU Inductor's C++ division is IEEE: routing it through Inductor changes no bit (oracle:
    eager torch, and fp64 division rounded once to fp32, exact for one division)."""
    args = tuple(_fp32_patterns(1 << 14, seed) for seed in range(arity))
    got = TranscendentalImpl("inductor")(op, args, {})
    want = op(*args)
    a64 = [a.double() for a in args]
    cr = (a64[0] / a64[1] if arity == 2 else 1 / a64[0]).float()
    for name, ref in (("eager", want), ("fp64 rounded once", cr)):
        same = (got.view(torch.int32) == ref.view(torch.int32)) | (got.isnan() & ref.isnan())
        bad = (~same).nonzero().flatten()[:3].tolist()
        assert not bad, (
            f"repro: TranscendentalImpl('inductor')({op}) on CPU vs {name} differs at {bad}: "
            f"args {[a[bad].tolist() for a in args]}"
        )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (Triton's div.full.f32)")
def test_inductor_division_on_cuda_is_the_fused_graphs_kernel() -> None:
    """Oracle: real torch.compile of ``a / b`` on CUDA under the same (default) config."""
    g = torch.Generator().manual_seed(0)
    a, b = (torch.randn(1 << 20, generator=g).cuda() for _ in range(2))
    got = TranscendentalImpl("inductor")(aten.div.Tensor, (a, b), {})
    torch._dynamo.reset()
    real = torch.compile(lambda x, y: x / y)(a, b)
    assert torch.equal(got.view(torch.int32), real.view(torch.int32)), "repro: CUDA div via impl"
