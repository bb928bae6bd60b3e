"""fma against the C library's fmaf: 10**7 random triples, adversarial cases, double-rounding witnesses."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from roundoff.numerics import fma

from ._oracle import fmaf, fmaf_shim


def _check(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    a, b, c = (np.ascontiguousarray(v, dtype=np.float32) for v in np.broadcast_arrays(a, b, c))
    ref = fmaf(a, b, c)
    got = fma(torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c)).numpy()
    ok = (got.view(np.int32) == ref.view(np.int32)) | (np.isnan(got) & np.isnan(ref))
    if not ok.all():
        k = int(np.flatnonzero(~ok)[0])
        trip = ", ".join(f"float.fromhex({float(v[k]).hex()!r})" for v in (a, b, c))
        raise AssertionError(
            f"{int((~ok).sum())} mismatches; first: fmaf={ref[k]!r} ours={got[k]!r}. "
            f"repro: fma(*[torch.tensor([v], dtype=torch.float32) for v in ({trip})])"
        )


def _random_triples(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Thirds: random bit patterns; products near -c (cancellation); overlapping exponents (halfway-rich)."""
    k = n // 3
    bits = rng.integers(0, 2**32, size=(3, k), dtype=np.uint64).astype(np.uint32).view(np.float32)
    a1, b1 = rng.standard_normal((2, k), dtype=np.float32)
    c1 = (-(a1.astype(np.float64) * b1) * (1 + rng.standard_normal(k) * 2.0**-20)).astype(np.float32)
    a2 = rng.integers(1 << 23, 1 << 24, size=n - 2 * k).astype(np.float32) * np.float32(2.0**-23)
    b2 = rng.integers(1 << 23, 1 << 24, size=n - 2 * k).astype(np.float32) * np.float32(2.0**-23)
    c2 = (rng.integers(-(1 << 24), 1 << 24, size=n - 2 * k) * 2.0 ** rng.integers(-60, -20, n - 2 * k)).astype(np.float32)
    return (np.concatenate([bits[0], a1, a2]), np.concatenate([bits[1], b1, b2]), np.concatenate([bits[2], c1, c2]))


def test_ten_million_random_triples_match_fmaf() -> None:
    if fmaf_shim() is None:
        pytest.skip("no C compiler for the array fmaf shim; the per-element tests below still run")
    rng = np.random.default_rng(2026)
    for _ in range(5):
        _check(*_random_triples(rng, 2_000_000))


def test_random_triples_per_element_fmaf() -> None:
    """Same distribution, 30000 triples, fmaf called element by element through ctypes (no compiler)."""
    import ctypes
    import ctypes.util

    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.fmaf.restype = ctypes.c_float
    libm.fmaf.argtypes = [ctypes.c_float] * 3
    a, b, c = _random_triples(np.random.default_rng(7), 30_000)
    ref = np.array([libm.fmaf(x, y, z) for x, y, z in zip(a.tolist(), b.tolist(), c.tolist())], dtype=np.float32)
    got = fma(torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c)).numpy()
    assert ((got.view(np.int32) == ref.view(np.int32)) | (np.isnan(got) & np.isnan(ref))).all()


F32_MAX = float(np.finfo(np.float32).max)
TINY = 2.0**-149
ADVERSARIAL = [
    (1 + 2.0**-12, 1 + 2.0**-12, -(1 + 2.0**-11)),  # cancels to exactly 2**-24
    (3.0, 1 / 3, -1.0),  # fl(1/3)*3 - 1: the product's rounding error only
    (1 + 2.0**-23, 1 - 2.0**-23, -1.0),  # -2**-46
    (0.1, 10.0, -1.0), (1.5, 2.0, -3.0), (-1.5, 2.0, 3.0),  # exact zero: +0.0 in RNE
    (-0.0, 1.0, 0.0), (-0.0, 1.0, -0.0), (0.0, -1.0, -0.0),
    (1.0, 1.0, 2.0**-24), (1.0, 1.0, -(2.0**-25)), (1.0, 1 + 2.0**-23, 2.0**-24),  # halfway cases
    (1 + 2.0**-12, 1 + 2.0**-12, 2.0**-80), (1 + 2.0**-12, 1 + 2.0**-12, -(2.0**-80)),
    (F32_MAX, 2.0, -F32_MAX), (F32_MAX, 1.0, F32_MAX), (F32_MAX, 1 + 2.0**-23, 0.0),  # overflow
    (-F32_MAX, 2.0, F32_MAX), (2.0**64, 2.0**64, 0.0),
    (2.0**-75, 2.0**-75, 0.0), (2.0**-75, 2.0**-74, 0.0), (3 * 2.0**-76, 2.0**-74, 0.0),  # underflow
    (2.0**-70, 2.0**-70, TINY), (2.0**-126, 0.5, 0.0), (2.0**-126, 1 - 2.0**-24, 0.0),
    (2.0**-126, 2.0**-24, -TINY), (TINY, TINY, -0.0), (-TINY, TINY, 0.0),
    (math.inf, 0.0, 1.0), (math.inf, 1.0, -math.inf), (math.inf, 2.0, math.inf),
    (1.0, 1.0, math.nan), (math.nan, 0.0, 0.0), (-math.inf, -1.0, 5.0), (1e30, 1e30, -math.inf),
]


@pytest.mark.parametrize(("a", "b", "c"), ADVERSARIAL)
def test_adversarial_cases_match_fmaf(a: float, b: float, c: float) -> None:
    _check(np.array([a, -a]), np.array([b, b]), np.array([c, -c]))


def test_fp64_then_round_is_wrong_where_fma_is_right() -> None:
    """(1+2**-12)**2 + 2**-80: fp64 drops 2**-80 and leaves an fp32 tie that RNE sends down."""
    a = b = np.float32(1 + 2.0**-12)
    c = np.float32(2.0**-80)
    naive = np.float32(np.float64(a) * np.float64(b) + np.float64(c))
    ref = fmaf(np.array([a]), np.array([b]), np.array([c]))[0]
    ours = fma(torch.tensor([a]), torch.tensor([b]), torch.tensor([c])).item()
    assert ref == 1 + 2.0**-11 + 2.0**-23 and naive == 1 + 2.0**-11, (ref, naive)
    assert ours == ref
    # And on random products that are fp32 ties, nudged by a tiny c, the naive way fails often; fma never.
    rng = np.random.default_rng(11)
    a2, b2 = (1 + rng.integers(0, 1 << 12, (2, 100_000)) * 2.0**-12).astype(np.float32)
    c2 = (rng.choice([-1.0, 1.0], 100_000) * 2.0 ** rng.integers(-90, -60, 100_000)).astype(np.float32)
    ref2 = fmaf(a2, b2, c2)
    naive2 = (a2.astype(np.float64) * b2 + c2).astype(np.float32)
    ok = lambda v: (v.view(np.int32) == ref2.view(np.int32)) | (np.isnan(v) & np.isnan(ref2))
    assert (~ok(naive2)).sum() > 10_000, int((~ok(naive2)).sum())
    assert ok(fma(*(torch.from_numpy(v) for v in (a2, b2, c2))).numpy()).all()


def test_bf16_fp16_operands_scalars_and_broadcasting() -> None:
    rng = np.random.default_rng(3)
    for dt in (torch.bfloat16, torch.float16):
        a = torch.from_numpy(rng.standard_normal((4, 1), dtype=np.float32)).to(dt)
        b = torch.from_numpy(rng.standard_normal((1, 5), dtype=np.float32)).to(dt)
        got = fma(a, b, 0.1)
        assert got.dtype == torch.float32 and got.shape == (4, 5)
        ref = fmaf(a.float().numpy(), b.float().numpy(), np.float32(0.1))
        assert np.array_equal(got.numpy().view(np.int32), ref.view(np.int32))
    assert fma(2.0, 3.0, 1.0).item() == 7.0


def test_chunked_broadcast_matches_fmaf() -> None:
    """Above `CHUNK` elements the result is computed chunk by chunk: same bits as fmaf, broadcasting kept."""
    from roundoff.numerics.fma import CHUNK

    rng = np.random.default_rng(11)
    a = torch.from_numpy(rng.standard_normal((1024, 1), dtype=np.float32)).to(torch.bfloat16)
    b = torch.from_numpy(rng.standard_normal((1, 700), dtype=np.float32))
    c = torch.from_numpy(rng.standard_normal((1024, 700), dtype=np.float32)).t().contiguous().t()  # strided
    assert a.shape[0] * b.shape[1] > CHUNK
    got = fma(a, b, c)
    ref = fmaf(a.float().expand(1024, 700).numpy(), b.expand(1024, 700).numpy(), c.contiguous().numpy())
    assert got.shape == (1024, 700)
    assert np.array_equal(got.numpy().view(np.int32), ref.view(np.int32)), "repro: fma(a, b, c) with seed 11"
    got = fma(a, b, 0.1)  # a Python-number addend, broadcast over the chunks
    ref = fmaf(a.float().expand(1024, 700).numpy(), b.expand(1024, 700).numpy(), np.float32(0.1))
    assert np.array_equal(got.numpy().view(np.int32), ref.view(np.int32)), "repro: fma(a, b, 0.1) with seed 11"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ((torch.ones(2, dtype=torch.int32), 1.0, 1.0), "int32"),
        ((torch.ones(2, dtype=torch.float64), 1.0, 1.0), "float64"),
        ((1.0, "2", 1.0), "str"),
        ((1.0, 1.0, True), "bool"),
    ],
)
def test_bad_operands_are_rejected(args: tuple, words: str) -> None:
    with pytest.raises(TypeError, match=words):
        fma(*args)


def test_operands_of_shapes_that_do_not_broadcast_are_named() -> None:
    with pytest.raises(ValueError, match=r"do not broadcast to one shape: a \[3\], b \[4\]"):
        fma(torch.ones(3), torch.ones(4), 1.0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_fmaf() -> None:
    a, b, c = _random_triples(np.random.default_rng(5), 1_000_000)
    got = fma(*(torch.from_numpy(v).cuda() for v in (a, b, c))).cpu().numpy()
    ref = fmaf(a, b, c)
    assert ((got.view(np.int32) == ref.view(np.int32)) | (np.isnan(got) & np.isnan(ref))).all()
