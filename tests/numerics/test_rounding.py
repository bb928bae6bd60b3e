"""round_to against torch's own casts (exhaustive where possible) and an exact rational oracle."""

from __future__ import annotations

import math
import struct

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from roundoff.numerics import FORMATS, RoundingMode, get_format, round_to, rounding
from roundoff.numerics.compile_after import CompileAfter

from ._oracle import round_exact

TORCH_FORMATS = [
    n for n, f in FORMATS.items() if f.torch_dtype is not None and f.mantissa_bits < 23
]
FP8 = [n for n in TORCH_FORMATS if n.startswith("fp8")]
MODES = list(RoundingMode)
HAS_CC = __import__("shutil").which("cc") is not None  # torch.compile on CPU needs a C++ compiler


def same(got: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """Elementwise bit equality, any NaN equal to any NaN (payloads aside)."""
    ib = torch.int32 if got.dtype == torch.float32 else torch.int64
    return (got.view(ib) == ref.view(ib)) | (torch.isnan(got) & torch.isnan(ref))


def first_mismatch(x: torch.Tensor, got: torch.Tensor, ref: torch.Tensor, fmt: str) -> str:
    ok = same(got, ref)
    if bool(ok.all()):
        return ""
    k = int((~ok).nonzero()[0])
    ib = torch.int32 if x.dtype == torch.float32 else torch.int64
    bits = int(x.view(ib)[k])
    return (
        f"{int((~ok).sum())} mismatches; first: x={x[k].item()!r} bits={bits:#x} torch={ref[k].item()!r} "
        f"ours={got[k].item()!r}. repro: round_to(torch.tensor([{bits}], dtype={ib}).view({x.dtype}), {fmt!r})"
    )


@pytest.mark.parametrize("fmt", ["bf16", "fp16"])
def test_every_fp32_bit_pattern_matches_torch_cast(fmt: str) -> None:
    """All 2**32 fp32 patterns, 2**22 at a time, bit for bit against x.to(dtype).to(fp32).

    Both kernels: the eager one (bf16: integer carry trick; fp16: float magic-constant trick) and the
    compiled integer kernel (``fused=True``), where torch.compile works here.
    """
    dt = FORMATS[fmt].torch_dtype
    chunk = 1 << 22
    offsets = torch.arange(chunk, dtype=torch.int32)
    kernels = [False, True] if HAS_CC else [False]
    for start in range(-(1 << 31), 1 << 31, chunk):
        x = (offsets + start).view(torch.float32)
        ref = x.to(dt).to(torch.float32)
        for fused in kernels:
            got = round_to(x, fmt, fused=fused)
            if not torch.equal(got.view(torch.int32), ref.view(torch.int32)):
                msg = first_mismatch(x, got, ref, fmt)
                assert not msg, f"fused={fused}: {msg}"


def _all_patterns(dtype: torch.dtype) -> torch.Tensor:
    n = 1 << (8 * dtype.itemsize)
    ib = {1: torch.uint8, 2: torch.int16}[dtype.itemsize]
    return torch.arange(n, dtype=torch.int32).to(ib).view(dtype).to(torch.float32)


@pytest.mark.parametrize("source", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("fmt", FP8)
def test_every_16bit_pattern_into_fp8_matches_torch_cast(source: torch.dtype, fmt: str) -> None:
    x = _all_patterns(source)
    got = round_to(x, fmt)
    ref = x.to(FORMATS[fmt].torch_dtype).to(torch.float32)
    msg = first_mismatch(x, got, ref, fmt)
    assert not msg, msg


@pytest.mark.parametrize("fp8", FP8)
@pytest.mark.parametrize("fmt", TORCH_FORMATS)
def test_every_fp8_pattern_round_trips_and_matches_torch(fp8: str, fmt: str) -> None:
    """All 256 values of an fp8 format, rounded to every torch format: torch's cast, and idempotent."""
    x = _all_patterns(FORMATS[fp8].torch_dtype)
    got = round_to(x, fmt)
    msg = first_mismatch(x, got, x.to(FORMATS[fmt].torch_dtype).to(torch.float32), fmt)
    assert not msg, msg
    if fmt == fp8:
        assert bool(same(got, x).all()), f"round_to is not the identity on {fp8} values"


def _oracle_tensor(x: torch.Tensor, fmt: str, mode: RoundingMode) -> torch.Tensor:
    vals = [round_exact(v, FORMATS[fmt], mode.value) for v in x.tolist()]
    return torch.tensor(vals, dtype=x.dtype)


def _f64(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def _f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


FMT_NAMES = [n for n in FORMATS if n not in ("fp64",)]


@settings(max_examples=60, deadline=None)
@given(
    bits=st.lists(st.integers(0, (1 << 64) - 1), min_size=1, max_size=40),
    fmt=st.sampled_from(FMT_NAMES),
    mode=st.sampled_from(MODES),
)
def test_fp64_bit_patterns_match_exact_oracle(
    bits: list[int], fmt: str, mode: RoundingMode
) -> None:
    x = torch.tensor([_f64(b) for b in bits], dtype=torch.float64)
    x = (
        x * torch.tensor(2.0) ** torch.randint(-1100, 0, x.shape, dtype=torch.float64)
        if bits[0] % 3 == 0
        else x
    )
    msg = first_mismatch(x, round_to(x, fmt, mode), _oracle_tensor(x, fmt, mode), fmt)
    assert not msg, f"{mode}: {msg}"


@settings(max_examples=60, deadline=None)
@given(
    bits=st.lists(st.integers(0, (1 << 32) - 1), min_size=1, max_size=40),
    fmt=st.sampled_from([n for n in FMT_NAMES if n != "fp32"]),
    mode=st.sampled_from(MODES),
)
def test_fp32_bit_patterns_match_exact_oracle_in_every_mode(
    bits: list[int], fmt: str, mode: RoundingMode
) -> None:
    x = torch.tensor([_f32(b) for b in bits], dtype=torch.float32)
    msg = first_mismatch(x, round_to(x, fmt, mode), _oracle_tensor(x, fmt, mode), fmt)
    assert not msg, f"{mode}: {msg}"


def _adversarial(fmt: str) -> list[float]:
    """Ties, double-rounding traps, subnormal edges, max finite +- half an ulp, zeros, inf, NaN."""
    f = FORMATS[fmt]
    m, ulp1 = f.mantissa_bits, 2.0**-f.mantissa_bits
    half_sub = f.min_subnormal / 2
    top_ulp = math.ldexp(1.0, f.max_exponent - m)
    vals = [
        1 + ulp1 / 2,
        1 + 3 * ulp1 / 2,  # ties to even: down, up
        1 + ulp1 / 2 + 2.0**-40,
        1 + ulp1 / 2 - 2.0**-40,  # just off a tie
        1 + ulp1 / 2 + 2.0**-30,  # fp64 -> fp32 -> fmt turns this into a tie (double rounding trap)
        1 + ulp1 + ulp1 / 2 - 2.0**-30,  # the trap from below
        half_sub,
        3 * half_sub,
        half_sub * (1 + 2.0**-30),
        half_sub * (1 - 2.0**-30),
        f.min_subnormal,
        f.min_normal,
        f.min_normal - half_sub,
        f.min_normal - f.min_subnormal,
        f.min_normal - half_sub * (1 + 2.0**-30),
        f.min_subnormal * 0.25,
        f.max_finite,
        f.max_finite + top_ulp / 2,
        f.max_finite + top_ulp / 2 * (1 - 2.0**-30),
        f.max_finite + top_ulp / 2 * (1 + 2.0**-30),
        f.max_finite + top_ulp,
        f.max_finite * 4,
        0.0,
        -0.0,
        math.inf,
        -math.inf,
        math.nan,
        5e-324,
        1.7976931348623157e308,
        2.0**-1022,
    ]
    return [v for v in vals if not (isinstance(v, float) and math.isinf(v) and v == 0)] + [
        -v for v in vals
    ]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", FMT_NAMES)
def test_fp64_adversarial_cases_match_exact_oracle(fmt: str, mode: RoundingMode) -> None:
    x = torch.tensor(_adversarial(fmt), dtype=torch.float64)
    msg = first_mismatch(x, round_to(x, fmt, mode), _oracle_tensor(x, fmt, mode), fmt)
    assert not msg, f"{mode}: {msg}"


@pytest.mark.parametrize("fmt", [n for n in TORCH_FORMATS])
def test_torch_fp64_casts_round_through_fp32_and_torch_compatible_matches(fmt: str) -> None:
    """torch's fp64 -> narrow cast rounds twice (via fp32); the default here rounds once."""
    f = FORMATS[fmt]
    ulp1 = 2.0**-f.mantissa_bits
    trap = torch.tensor([1 + ulp1 / 2 + 2.0**-30, -(1 + ulp1 / 2 + 2.0**-30)], dtype=torch.float64)
    torch_cast = trap.to(f.torch_dtype).to(torch.float64)
    correct = _oracle_tensor(trap, fmt, RoundingMode.NEAREST_EVEN)
    assert torch_cast.tolist() == [1.0, -1.0], (
        f"torch no longer double-rounds {fmt}: {torch_cast.tolist()}"
    )
    assert round_to(trap, fmt).tolist() == correct.tolist() == [1 + ulp1, -(1 + ulp1)]
    assert round_to(trap, fmt, torch_compatible=True).tolist() == torch_cast.tolist()
    x = torch.tensor(_adversarial(fmt), dtype=torch.float64)
    msg = first_mismatch(
        x, round_to(x, fmt, torch_compatible=True), x.to(f.torch_dtype).to(torch.float64), fmt
    )
    assert not msg, msg


@settings(max_examples=40, deadline=None)
@given(
    bits=st.lists(st.integers(0, (1 << 64) - 1), min_size=1, max_size=64),
    fmt=st.sampled_from(TORCH_FORMATS),
)
def test_fp64_torch_compatible_matches_torch_cast(bits: list[int], fmt: str) -> None:
    x = (
        torch.tensor([_f64(b) for b in bits], dtype=torch.float64) * 2.0**-900
        if bits[0] % 2
        else torch.tensor([_f64(b) for b in bits], dtype=torch.float64)
    )
    ref = x.to(FORMATS[fmt].torch_dtype).to(torch.float64)
    msg = first_mismatch(x, round_to(x, fmt, torch_compatible=True), ref, fmt)
    assert not msg, msg


def test_fp64_to_fp32_matches_torch_cast_on_random_patterns() -> None:
    g = torch.Generator().manual_seed(5)
    bits = torch.randint(-(2**63), 2**63 - 1, (1 << 18,), dtype=torch.int64, generator=g)
    x = torch.cat([bits.view(torch.float64), bits.view(torch.float64) * 2.0**-1000])
    msg = first_mismatch(x, round_to(x, "fp32"), x.to(torch.float32).to(torch.float64), "fp32")
    assert not msg, msg


def test_shapes_noncontiguous_empty_and_identity() -> None:
    x = torch.randn(3, 200000).t()  # non-contiguous, larger than one CPU chunk
    assert torch.equal(round_to(x, "bf16"), x.to(torch.bfloat16).float())
    assert round_to(x, "bf16").shape == x.shape
    assert round_to(torch.empty(0, 3), "fp16").shape == (0, 3)
    assert round_to(x, "fp32") is x
    assert round_to(x, get_format(torch.bfloat16)).dtype == torch.float32


def test_tf32_default_is_nearest_ties_away() -> None:
    """cvt.rna.tf32.f32: a tie (bit 12 set, bits 0..11 zero) goes away from zero, even if that is odd."""
    x = torch.tensor([1 + 2.0**-11, -(1 + 2.0**-11), 1 + 2.0**-10 + 2.0**-11], dtype=torch.float32)
    assert round_to(x, "tf32").tolist() == [1 + 2.0**-10, -(1 + 2.0**-10), 1 + 2.0**-9]
    assert round_to(x, "tf32", RoundingMode.NEAREST_EVEN).tolist() == [1.0, -1.0, 1 + 2.0**-9]


@pytest.mark.parametrize(
    ("x", "fmt", "err", "words"),
    [
        (torch.arange(3), "bf16", TypeError, "fp32 or fp64"),
        (torch.ones(2, dtype=torch.bool), "bf16", TypeError, "torch.bool"),
        (torch.ones(2, dtype=torch.complex64), "fp16", TypeError, "complex64"),
        (torch.ones(2, dtype=torch.bfloat16), "fp8_e5m2", TypeError, "bfloat16"),
        (torch.ones(2), "bf17", ValueError, "known formats: fp64"),
        (torch.ones(2), "fp64", ValueError, "narrower"),
        ([1.0, 2.0], "bf16", TypeError, "torch.Tensor"),
        (torch.ones(2), 3, TypeError, "format name"),
    ],
)
def test_bad_input_is_rejected_with_a_clear_message(
    x: object, fmt: object, err: type, words: str
) -> None:
    with pytest.raises(err, match=words):
        round_to(x, fmt)  # type: ignore[arg-type]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("fmt", TORCH_FORMATS)
def test_cuda_matches_torch_cast(fmt: str) -> None:
    g = torch.Generator().manual_seed(3)
    x = (
        torch.randint(-(2**31), 2**31 - 1, (1 << 22,), dtype=torch.int32, generator=g)
        .view(torch.float32)
        .cuda()
    )
    ref = x.to(FORMATS[fmt].torch_dtype).to(torch.float32)
    msg = first_mismatch(x.cpu(), round_to(x, fmt).cpu(), ref.cpu(), fmt)
    assert not msg, msg


@pytest.mark.skipif(not HAS_CC, reason="torch.compile on CPU needs a C++ compiler")
def test_fused_kernel_matches_torch_cast() -> None:
    """round_to(..., fused=True) (torch.compile of the same kernel, no data-dependent branches)."""
    g = torch.Generator().manual_seed(9)
    for n in (777, 1 << 20):  # two lengths: one compiled graph, dynamic in the length
        x = torch.randint(-(2**31), 2**31 - 1, (n,), dtype=torch.int32, generator=g).view(
            torch.float32
        )
        msg = first_mismatch(
            x, round_to(x, "fp16", fused=True), x.to(torch.float16).float(), "fp16"
        )
        assert not msg, f"fused: {msg}"


def _random_floats(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-(2**31), 2**31 - 1, (n,), dtype=torch.int32, generator=g).view(
        torch.float32
    )


@pytest.mark.skipif(not HAS_CC, reason="torch.compile on CPU needs a C++ compiler")
def test_auto_uses_compiled_kernel_only_for_large_tensors_and_never_recompiles_per_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """fused=None: compiled from FUSED_MIN_NUMEL elements on (probed once), eager below; dynamic length."""
    torch._dynamo.reset()
    monkeypatch.setattr(rounding, "_FUSED_FAILED", {})  # a fresh probe record, whatever ran before
    monkeypatch.setattr(rounding, "_FUSED_OK", set())
    # on the host, compiled once the eager kernel has rounded FUSED_MIN_NUMEL of the variant's elements
    monkeypatch.setattr(rounding, "COMPILE_AFTER", CompileAfter(rounding.FUSED_MIN_NUMEL))
    key = "cpu/round_float32_to_fp8_e5m2_nearest_even"
    small = _random_floats(rounding.FUSED_MIN_NUMEL - 1, 4)
    msg = first_mismatch(
        small, round_to(small, "fp8_e5m2"), small.to(torch.float8_e5m2).float(), "fp8_e5m2"
    )
    assert not msg, msg
    assert key not in rounding.fused_status(), "a small tensor must not trigger a compile"
    before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    for i, n in enumerate((rounding.FUSED_MIN_NUMEL, rounding.FUSED_MIN_NUMEL + 777, 3 << 20, 5 << 18)):
        x = _random_floats(n, n)
        msg = first_mismatch(
            x, round_to(x, "fp8_e5m2"), x.to(torch.float8_e5m2).float(), "fp8_e5m2"
        )
        assert not msg, f"n={n}: {msg}"
        assert (key in rounding.fused_status()) == (i > 0), (i, rounding.fused_status())
    assert rounding.fused_status().get(key) == "ok", rounding.fused_status()
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"] - before
    assert graphs == 1, (
        f"{graphs} graphs compiled for 3 lengths; repro: round_to(x, 'fp8_e5m2') at 3 sizes >= 2**20"
    )


def test_auto_falls_back_to_eager_and_records_why_when_compiling_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: object) -> object:
        raise RuntimeError("no C++ compiler (simulated)")

    monkeypatch.setattr(rounding, "_compiled", broken)
    monkeypatch.setattr(rounding, "_FUSED_FAILED", {})
    monkeypatch.setattr(rounding, "_FUSED_OK", set())
    monkeypatch.setattr(rounding, "COMPILE_AFTER", CompileAfter(0))
    x = _random_floats(rounding.FUSED_MIN_NUMEL, 5)
    msg = first_mismatch(x, round_to(x, "fp16"), x.to(torch.float16).float(), "fp16")
    assert not msg, msg
    assert "simulated" in rounding.fused_status()["cpu/round_float32_to_fp16_nearest_even"]
    with pytest.raises(RuntimeError, match="simulated"):
        round_to(x, "fp16", fused=True)  # forcing the compiled kernel does not hide its failure


@pytest.mark.parametrize("fmt", TORCH_FORMATS)
def test_eager_fp64_sources_match_exact_oracle_on_random_patterns(fmt: str) -> None:
    """The eager fast paths on fp64 inputs (no torch cast rounds fp64 once): exact rational oracle."""
    g = torch.Generator().manual_seed(11)
    bits = torch.randint(-(2**63), 2**63 - 1, (1000,), dtype=torch.int64, generator=g).view(
        torch.float64
    )
    scaled = torch.randn(1000, dtype=torch.float64, generator=g) * torch.exp2(
        torch.randint(-30, 20, (1000,), generator=g).double()
    )
    traps = torch.tensor(
        [1 + 2.0**-11 + 2.0**-40, 1 + 2.0**-11 - 2.0**-40, 2.0**-25 + 2.0**-60, 65520 - 2.0**-30]
    )
    x = torch.cat([bits, scaled, traps.double(), -traps.double()])
    got = round_to(x, fmt, fused=False)
    for k in range(x.numel()):
        want = round_exact(x[k].item(), get_format(fmt), "nearest_even")
        assert same(got[k : k + 1], torch.tensor([want], dtype=torch.float64)).all(), (
            f"x={x[k].item()!r} ours={got[k].item()!r} exact={want!r}; repro: round_to(torch.tensor([{x[k].item()!r}], "
            f"dtype=torch.float64), {fmt!r}, fused=False)"
        )
