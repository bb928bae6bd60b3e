"""The lowered plan compiled on CUDA (Triton) equals the interpreted emulation on CUDA bit for bit.

Triton would contract fp32 ``a*b + c`` and approximate ``/`` and flush subnormals; `compile_lowered`
pins ``emulate_precision_casts`` (no FP fusion), ``division_rounding`` and ``disable_ftz``. The
oracle is the interpreted emulation (``run_plan``, eager CUDA kernels, one rounding per op) on the
same inputs; the graphs are pointwise arithmetic (no transcendentals, whose kernels differ by design).
Skipped without CUDA. A few small compiles (~1 min on an H200 host).
"""

from __future__ import annotations

import pytest
import torch

from roundoff.capture import capture
from roundoff.execute import run_plan
from roundoff.lower import compile_lowered, lower
from roundoff.lower.primitives import fma_fp64, round_bits
from roundoff.numerics import fma, round_to
from roundoff.plan import plan
from roundoff.zoo import get_workload

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def _assert_bits(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    same = (_bits(got) == _bits(want)) | (got.isnan() & want.isnan())
    assert bool(same.all()), f"{int((~same).sum())} of {want.numel()} elements differ: {what}"


def _pointwise(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """Mul-adds (FMA sites), a division, a sqrt, a subtraction that cancels: what Triton would change."""
    t = a * b + c
    u = t / d - c * 0.3
    return torch.sqrt(u * u + 1e-3) * a - b * d


def _inputs(n: int = 4096, dtype: torch.dtype = torch.bfloat16) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(n, generator=g) * torch.exp2(torch.randint(-20, 20, (n,), generator=g).float()) for _ in range(4)]
    xs[3] = xs[3].abs() + 1e-3  # a divisor away from 0
    return tuple(x.to(dtype).cuda() for x in xs)


@pytest.mark.parametrize("policy", ["eager", "inductor-gpu"])
def test_compiled_pointwise_plan_equals_interpreted_on_cuda(policy: str) -> None:
    xs = _inputs()
    p = plan(capture(_pointwise, *xs), policy)
    gm = lower(p, xs)
    got = compile_lowered(gm, xs)(*xs)
    want = run_plan(p, xs)
    for g, w in zip(got, want):
        _assert_bits(g, w, f"compile_lowered(lower(plan(_pointwise, {policy!r}))) on CUDA vs run_plan on CUDA")


def test_compiled_zoo_fma_sites_equal_interpreted_on_cuda() -> None:
    w = get_workload("fma-cancel-vector")
    xs = tuple(x.detach().cuda() for x in w.make_inputs())
    p = plan(capture(w.build(), *xs), "inductor-gpu")
    gm = lower(p, xs)
    assert any(n.target is torch.ops.roundoff.fma.default for n in gm.graph.nodes), "no FMA site to keep"
    got = compile_lowered(gm, xs)(*xs)
    want = run_plan(p, xs, transcendentals="inductor")
    for g, r in zip(got, want):
        _assert_bits(g, r, "compile_lowered(lower(plan(zoo:fma-cancel-vector, 'inductor-gpu'))) on CUDA")


def test_expanded_primitives_compiled_on_cuda_equal_numerics() -> None:
    """round_to (integer bit kernel) and fma (fp64 round-to-odd) compiled by Triton, on every kind of
    fp32 value (subnormals, ties, overflow, inf, NaN), equal roundoff.numerics run eagerly."""
    g = torch.Generator().manual_seed(1)
    bits = torch.randint(-(2**31), 2**31 - 1, (1 << 16,), generator=g, dtype=torch.int64).to(torch.int32)
    x = bits.view(torch.float32).cuda()
    for fmt in ("bf16", "fp16", "fp8_e4m3fn", "fp8_e5m2"):
        got = torch.compile(lambda t, f=fmt: round_bits(t, f))(x)
        _assert_bits(got, round_to(x, fmt), f"round_bits(x, {fmt!r}) compiled on CUDA vs round_to")
    a, b, c = (torch.randn(1 << 14, generator=g).mul(torch.exp2(torch.randint(-70, 70, (1 << 14,), generator=g).float()))
               .cuda() for _ in range(3))
    c = torch.where(torch.arange(c.numel(), device=c.device) % 2 == 0, -a * b, c)  # cancellation
    with torch._inductor.config.patch({"emulate_precision_casts": True, "eager_numerics.division_rounding": True}):
        got = torch.compile(fma_fp64)(a, b, c)
    _assert_bits(got, fma(a, b, c), "fma_fp64 compiled on CUDA vs numerics.fma")
