"""Split-bf16 matmuls of the cheaper checking reference, against fp64 matmuls (the oracle)."""

from __future__ import annotations

import pytest
import torch

import roundoff
from roundoff.compiler import Fp64Reference, split_matmul
from roundoff.compiler.split_matmul import split_bf16
from roundoff.zoo import get_workload


def _wide(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """fp64 values with exponents spread over +-40 binades (inside bf16's normal range)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64) * torch.exp2(
        torch.randint(-40, 41, shape, generator=g).double()
    )


def test_three_pieces_hold_x_to_2_pow_minus_23() -> None:
    x = _wide((100_000,), 0)
    pieces = split_bf16(x)
    assert all(p.dtype == torch.bfloat16 for p in pieces)
    total = sum(p.double() for p in pieces)  # exact: the pieces span < 53 bits
    assert ((x - total).abs() <= 2.0**-23 * x.abs()).all(), "repro: split_bf16 of wide fp64 values"


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("b_exact", [False, True])
def test_split_matmul_is_within_its_bound_of_fp64(batched: bool, b_exact: bool, device: str) -> None:
    k = 512
    lead = (3,) if batched else ()
    a = torch.randn(*lead, 64, k, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    b = torch.randn(*lead, k, 48, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    a, b = a.to(device), b.to(device)
    if b_exact:
        b = b.to(torch.bfloat16).double()
    got = split_matmul.split_matmul(a, b, None, [b.to(torch.bfloat16)] if b_exact else None)
    ref = a @ b
    bound = (8 + k + 6) * 2.0**-24 * (a.abs() @ b.abs())
    err = (got - ref).abs()
    assert (err <= bound).all(), f"repro: split_matmul {device} batched={batched} b_exact={b_exact}"
    # and far more accurate than bf16 rounding of the result would be
    assert (err / ref.abs().clamp_min(1e-30)).median() < 1e-5


def test_exact_operands_take_one_product(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = split_matmul._product_fp32
    monkeypatch.setattr(
        split_matmul, "_product_fp32", lambda *a: calls.append(1) or original(*a)
    )
    torch.manual_seed(0)
    lin = torch.nn.Linear(32, 8, bias=True).to(torch.bfloat16)
    x = torch.randn(4, 32).to(torch.bfloat16)
    got = Fp64Reference(lin, cache=False, split_matmul=True)((x,), {})
    # bf16 x and W: one GEMM of exact products, accumulated in fp32 over 32 terms
    ref = torch.nn.functional.linear(x.double(), lin.weight.double(), lin.bias.double())
    bound = 32 * 2.0**-24 * (x.double().abs() @ lin.weight.double().abs().T) + 2.0**-53 * ref.abs()
    assert len(calls) == 1
    assert ((got - ref).abs() <= bound).all(), "repro: split reference of a bf16 Linear"


@pytest.mark.parametrize("cache", [False, True])
def test_split_reference_of_the_llama_block_matches_fp64_to_1e_5(cache: bool) -> None:
    work = get_workload("llama-block")
    module = work.build()
    (x,) = work.make_inputs()
    exact = Fp64Reference(module, cache=cache)((x,), {})
    split = Fp64Reference(module, cache=cache, split_matmul=True)((x,), {})
    rel = ((split - exact).abs().max() / exact.abs().max()).item()
    assert 0 < rel < 1e-5, f"repro: llama-block split-matmul reference, cache={cache}: {rel:.3g}"


def test_split_reference_keeps_the_verdicts() -> None:
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 64).to(torch.bfloat16)
    verdicts = []
    for ref in ("eager", "split-matmul"):
        m = roundoff.compile(lin, policy="eager", check="warn", check_reference=ref)
        checker = m._roundoff.checker
        checker.compiled = lambda t: lin(t) * (1 + 2**-7)  # one bf16 ulp off: the fp64 run decides
        with pytest.warns(roundoff.compiler.RoundoffDivergenceWarning):
            m(torch.randn(16, 64, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16))
        ((_, (check,)),) = checker.history
        verdicts.append(check)
    assert verdicts[0].passed == verdicts[1].passed
    assert verdicts[1].rmse_compiled == pytest.approx(verdicts[0].rmse_compiled, rel=1e-5)
    assert verdicts[1].rmse_eager == pytest.approx(verdicts[0].rmse_eager, rel=1e-5)


def test_an_operand_written_in_place_is_split_again() -> None:
    from roundoff.compiler.split_matmul import SplitMatmulMode

    a = torch.randn(8, 16, dtype=torch.float64)
    w = torch.randn(16, 4, dtype=torch.float64)
    with SplitMatmulMode({}):
        first = a @ w
        a.mul_(2.0)
        second = a @ w  # same storage and geometry, new contents
    assert torch.equal(second, first * 2), "repro: SplitMatmulMode reuse after a.mul_(2)"


def test_split_reference_cannot_be_compiled() -> None:
    with pytest.raises(ValueError, match="split_matmul"):
        Fp64Reference(torch.nn.Linear(2, 2), compile=True, split_matmul=True)


def test_split_reference_refuses_an_fp32_program() -> None:
    lin = torch.nn.Linear(4, 4)  # fp32: the split's ~1e-5 could not judge it
    with pytest.raises(ValueError, match=r"split-matmul.*float32.*'eager'"):
        Fp64Reference(lin, cache=False, split_matmul=True)((torch.randn(2, 4),), {})


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_auto_reference_splits_only_a_low_precision_program_on_cuda(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 64).to(dtype)
    x = torch.randn(8, 64).to(dtype)
    exact = Fp64Reference(lin, cache=False)
    auto = Fp64Reference(lin, cache=False, split_matmul="auto")
    # CPU: plain fp64 whatever the dtype, bit for bit
    assert not auto.split_for((x,), {})
    assert torch.equal(auto((x,), {}), exact((x,), {}))
    if torch.cuda.is_available():
        lin_cuda = lin.cuda()
        auto_cuda = Fp64Reference(lin_cuda, cache=False, split_matmul="auto")
        assert auto_cuda.split_for((x.cuda(),), {}) == (dtype == torch.bfloat16)
