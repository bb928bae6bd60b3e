"""Metrics against hand-derivable oracles: sorted value tables, nextafter steps, numpy sums."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from roundoff.numerics import (
    FORMATS,
    ErrorAccumulator,
    ErrorStats,
    bits_of_error,
    compare,
    ordinal,
    round_to,
    ulp_distance,
)
from roundoff.numerics.compile_after import CompileAfter


@pytest.mark.parametrize("fmt", [n for n, f in FORMATS.items() if f.torch_dtype is not None and f.bits <= 16])
def test_ordinal_is_the_rank_among_all_values(fmt: str) -> None:
    """Every value of the format, sorted: consecutive values have consecutive ordinals, ±0 share one."""
    f = FORMATS[fmt]
    ib = {8: torch.uint8, 16: torch.int16}[f.bits]
    vals = torch.arange(1 << f.bits, dtype=torch.int32).to(ib).view(f.torch_dtype).to(torch.float64)
    vals = vals[torch.isfinite(vals)]
    ranks = torch.unique(vals)  # sorted; -0.0 and 0.0 are one value
    ords = ordinal(ranks, fmt)
    assert torch.equal(ords - ords[0], torch.arange(ranks.numel())), f"repro: ordinal(<all {fmt} values>, {fmt!r})"
    assert int(ordinal(torch.tensor([-0.0, 0.0]), fmt).abs().sum()) == 0


def test_nextafter_steps_are_k_ulps_across_zero_and_binades() -> None:
    starts = torch.tensor([1.0, 2.0**-126, -(2.0**-148), -1.0, 3.0e38, -2.0**-149, 0.0, 2.0 - 2.0**-23])
    for k in (1, 2, 7, 64):
        y = starts.clone()
        for _ in range(k):
            y = torch.nextafter(y, torch.tensor(math.inf))
        d = ulp_distance(y, starts)
        assert d.tolist() == [k] * len(starts), f"k={k}: {d.tolist()} repro: ulp_distance(<{k} nextafter steps>, {starts.tolist()})"
    assert bits_of_error(1) == 1.0 and bits_of_error(3) == 2.0 and bits_of_error(0) == 0.0


def test_correctly_rounded_results_are_zero_ulps_from_an_exact_reference() -> None:
    ref = torch.randn(10000, dtype=torch.float64)
    for fmt in ("bf16", "fp16", "fp8_e4m3fn", "fp32"):
        s = compare(round_to(ref, fmt).float(), ref, fmt)
        assert s.mismatches == 0 and s.max_ulp == 0 and s.exact, (fmt, s)
        assert s.max_abs > 0  # the rounding error is still reported in absolute terms


def test_compare_counts_ulps_abs_rel_and_sqnr_like_numpy() -> None:
    rng = np.random.default_rng(0)
    ref = rng.standard_normal(5000).astype(np.float32)
    act = ref.copy()
    idx = rng.choice(5000, 37, replace=False)
    act[idx] = np.nextafter(act[idx], np.float32(np.inf))
    act[idx[:5]] = np.nextafter(act[idx[:5]], np.float32(np.inf))  # 5 elements two ulps away
    s = compare(torch.from_numpy(act), torch.from_numpy(ref))
    err = np.abs(act.astype(np.float64) - ref)
    assert (s.count, s.finite, s.mismatches, s.max_ulp) == (5000, 5000, 37, 2)
    assert s.mean_ulp == pytest.approx(42 / 5000) and s.mismatch_fraction == pytest.approx(37 / 5000)
    assert s.mean_bits == pytest.approx((32 + 5 * math.log2(3)) / 5000)
    assert s.max_abs == err.max() and s.max_rel == pytest.approx((err / np.abs(ref)).max(), rel=1e-15)
    sqnr = 10 * np.log10((ref.astype(np.float64) ** 2).sum() / (err**2).sum())
    assert s.sqnr_db == pytest.approx(sqnr, rel=1e-12)


def test_nan_and_inf_are_counted_never_folded_into_metrics() -> None:
    nan, inf = math.nan, math.inf
    act = torch.tensor([nan, nan, inf, inf, 1.0, -inf, 0.0, 5.0])
    ref = torch.tensor([nan, 1.0, inf, -inf, 1.0, -inf, 0.0, nan], dtype=torch.float64)
    s = compare(act, ref)
    assert (s.nan_actual, s.nan_reference, s.inf_actual, s.inf_reference) == (2, 2, 3, 3)
    assert s.nonfinite_mismatches == 3 and s.mismatches == 3 and s.finite == 2
    assert s.max_ulp == 0 and s.max_abs == 0.0 and s.sqnr_db == math.inf
    assert not any(isinstance(v, float) and math.isnan(v) for v in vars(s).values())
    assert ulp_distance(act, ref).tolist() == [0, -1, 0, ulp_distance(torch.tensor([inf]), torch.tensor([-inf])).item(), 0, 0, 0, -1]


def test_streaming_accumulator_equals_one_shot() -> None:
    g = torch.Generator().manual_seed(1)
    ref = torch.randn(100_000, dtype=torch.float64, generator=g)
    act = round_to(ref, "bf16").float() + torch.randn(100_000, generator=g) * 1e-3
    act[::997] = math.nan
    act[5] = math.inf
    one = compare(act, ref, "bf16")
    acc = ErrorAccumulator("bf16")
    for a, r in zip(act.split(7777), ref.split(7777)):
        acc.update(a, r)
    many = acc.result()
    exact_fields = ("count", "finite", "mismatches", "max_ulp", "max_abs", "max_rel", "nan_actual",
                    "nonfinite_mismatches", "inf_actual", "zero_reference", "max_bits")
    for k in exact_fields:
        assert getattr(many, k) == getattr(one, k), k
    for k in ("mean_ulp", "mean_bits", "sqnr_db"):
        assert getattr(many, k) == pytest.approx(getattr(one, k), rel=1e-12), k


def test_bad_inputs() -> None:
    with pytest.raises(TypeError, match="int64"):
        compare(torch.arange(3), torch.zeros(3))
    with pytest.raises(ValueError, match="shapes differ"):
        compare(torch.zeros(3), torch.zeros(4))
    with pytest.raises(ValueError, match="known formats"):
        compare(torch.zeros(3), torch.zeros(3), "fp12")


@pytest.mark.parametrize("fmt", ["bf16", "fp16", "fp32", "tf32", "fp8_e5m2", "fp8_e4m3fn"])
@pytest.mark.parametrize("ref_dtype", [torch.float64, torch.float32])
def test_all_finite_fast_path_equals_masked_path(fmt: str, ref_dtype: torch.dtype) -> None:
    """The unmasked path (all finite) gives the masked path's figures: counts/maxima exact, sums to fp64 order."""
    g = torch.Generator().manual_seed(7)
    n = 20_000
    scale = torch.exp2(torch.randint(-140, 120, (n,), generator=g).double())  # subnormal .. near-overflow in fp32
    ref = (torch.randn(n, dtype=torch.float64, generator=g) * scale).to(ref_dtype)
    act = (ref.double() * (1 + torch.randn(n, dtype=torch.float64, generator=g) * 1e-3)).float()
    ref[::101], act[::103] = 0.0, -0.0
    act[::211] = ref[::211].float()
    fast_acc, slow_acc = ErrorAccumulator(fmt), ErrorAccumulator(fmt)
    dt = FORMATS[fmt].torch_dtype
    # Oracle for "some finite value rounds to NaN in fmt": torch's own cast (fp8_e4m3fn overflows to NaN
    # before torch 2.13, saturates in 2.13); such data is not all-finite in fmt, so the fast path defers.
    overflows_to_nan = dt is not None and bool(torch.isnan(act.to(dt)).any() | torch.isnan(ref.float().to(dt)).any())
    took_fast = fast_acc._update_finite(act, ref)
    assert took_fast != overflows_to_nan, f"repro: fast path took={took_fast}, NaN in {fmt}={overflows_to_nan} ({ref_dtype})"
    if not took_fast:
        fast_acc.update(act, ref)
    _assert_same_stats(fast_acc.result(), slow_acc._update_indexed(act, ref).result(), f"finite {fmt} {ref_dtype}")
    act[::89], ref[::97], act[::113], ref[5::113] = math.nan, math.nan, math.inf, -math.inf
    masked, indexed = ErrorAccumulator(fmt)._update_masked(act, ref), ErrorAccumulator(fmt)._update_indexed(act, ref)
    _assert_same_stats(masked.result(), indexed.result(), f"NaN/inf {fmt} {ref_dtype}")


def _fp8_ordinals(t: torch.Tensor, dt: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """(ordinal, isnan) of fp32 `t` cast to fp8 dtype `dt` by torch: sign-magnitude bits read directly."""
    bits = t.to(dt).view(torch.uint8).to(torch.int64)
    mag = bits & 0x7F
    return torch.where(bits >= 0x80, -mag, mag), torch.isnan(t.to(dt).float())


@pytest.mark.parametrize("fmt", ["fp8_e4m3fn", "fp8_e4m3fnuz"])
def test_values_rounding_to_nan_count_as_nan_on_every_path(fmt: str) -> None:
    """Around max finite: whatever torch's own cast does with overflow (NaN or saturate) decides each
    element, and every path (update, masked, indexed, update_each) reports the same oracle figures."""
    f, g = FORMATS[fmt], torch.Generator().manual_seed(11)
    n = 20_000
    ref = (torch.rand(n, generator=g) * 2 - 1) * f.max_finite * 1.2  # fp32, a sixth beyond max finite
    act = ref * (1 + (torch.rand(n, generator=g) - 0.5) * 0.1)
    ref[::37] = math.nan
    oa, na = _fp8_ordinals(act, f.torch_dtype)
    orr, nr = _fp8_ordinals(ref, f.torch_dtype)
    fin = ~na & ~nr
    want = {
        "count": n, "finite": int(fin.sum()), "nan_actual": int(na.sum()), "nan_reference": int(nr.sum()),
        "nonfinite_mismatches": int((na ^ nr).sum()),
        "mismatches": int(((oa != orr) & fin).sum() + (na ^ nr).sum()),
        "max_ulp": int((oa - orr).abs()[fin].max()),
        "max_abs": float((act.double() - ref.double()).abs()[fin].max()),
    }
    acc = ErrorAccumulator(fmt)
    ErrorAccumulator.update_each([acc], [act], ref)
    paths = {
        "update": ErrorAccumulator(fmt).update(act, ref).result(),
        "masked": ErrorAccumulator(fmt)._update_masked(act, ref).result(),
        "indexed": ErrorAccumulator(fmt)._update_indexed(act, ref).result(),
        "update_each": acc.result(),
    }
    for path, got in paths.items():
        figures = {k: getattr(got, k) for k in want}
        assert figures == want, f"{path}: {figures} != oracle {want}; repro: compare(act, ref, {fmt!r}), rand*1.2*max"


def _assert_same_stats(fast: ErrorStats, slow: ErrorStats, what: str) -> None:
    """Counts and maxima identical; sums to fp64 summation order."""
    for k, v in vars(slow).items():
        if k in ("mean_ulp", "mean_bits", "sqnr_db", "rmse"):
            assert getattr(fast, k) == pytest.approx(v, rel=1e-12), f"{k} repro: fast vs indexed path, {what}"
        else:
            assert getattr(fast, k) == v, f"{k}: {getattr(fast, k)} != {v} repro: fast vs indexed path, {what}"
    assert slow.mismatches > 0 and slow.zero_reference > 0  # the data exercises the figures compared


def test_fast_path_defers_on_nonfinite() -> None:
    for bad in (math.nan, math.inf, -math.inf):
        act, ref = torch.ones(8), torch.ones(8, dtype=torch.float64)
        act[3] = bad
        assert not ErrorAccumulator("bf16")._update_finite(act, ref), f"repro: _update_finite(act[3]={bad})"
        assert not ErrorAccumulator("bf16")._update_finite(ref.float(), act.double()), f"repro: ref[3]={bad}"


@pytest.mark.parametrize("fmt", ["bf16", "fp16", "fp32"])
def test_torch_cast_from_fp32_rounds_like_round_to(fmt: str) -> None:
    """The fast path's shortcut (torch's fp32 -> bf16/fp16 cast) equals `round_to` on random fp32 bit patterns."""
    from roundoff.numerics.ulps import _fast_ordinal

    g = torch.Generator().manual_seed(3)
    x = torch.randint(-(2**31), 2**31 - 1, (200_000,), generator=g, dtype=torch.int64).to(torch.int32).view(torch.float32)
    x = x[x.isfinite()]
    f = FORMATS[fmt]
    want = ordinal(round_to(x.double(), fmt), fmt)
    got = _fast_ordinal(x, f)
    assert torch.equal(got.to(torch.int64), want), f"repro: _fast_ordinal(<random fp32 bits seed 3>, {fmt!r})"


def _adversarial_pair(n: int, ref_dtype: torch.dtype, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """fp32 actuals from random bit patterns (subnormals .. near max) and a reference near them, with
    -0.0, zeros, sign flips and far-off values (huge ulp distances), ties and subnormal edges."""
    g = torch.Generator().manual_seed(seed)
    bits = torch.randint(-(2**31), 2**31 - 1, (n,), generator=g, dtype=torch.int64).to(torch.int32)
    bits = torch.where(bits.view(torch.float32).isfinite(), bits, torch.zeros_like(bits))
    act = bits.view(torch.float32).clone()
    ref = act.double() * (1 + torch.randn(n, dtype=torch.float64, generator=g) * 2.0**-6)
    ref[::7] = act[::7].double() + 2.0**-9 * act[::7].double()  # bf16 ties of bf16-valued actuals' neighbours
    ref[1::13] = -ref[1::13]  # sign flips: ulp distances up to ~2**32 in fp32
    ref[2::17] = 0.0
    act[3::19] = -0.0
    ref = ref.clamp(-3.0e38, 3.0e38)  # finite in fp32 too
    act[4::23] = ref[4::23].float()
    ref[5::29] = 2.0**-149 * torch.randint(0, 4, (ref[5::29].numel(),), generator=g).double()  # fp32 subnormals
    act[6::31] = act[6::31] * 2.0**-120
    assert bool(act.isfinite().all()) and bool(ref.to(ref_dtype).isfinite().all())
    return act, ref.to(ref_dtype)


def _with_nonfinite(act: torch.Tensor, ref: torch.Tensor) -> None:
    nan, inf = math.nan, math.inf
    act[::89], ref[::97], act[::113], ref[5::113], act[9::127], ref[9::127] = nan, nan, inf, -inf, -inf, -inf
    act[10::131], ref[10::131] = inf, inf
    act[11::137], ref[11::137] = nan, nan


@pytest.mark.parametrize("fmt", ["bf16", "fp16", "fp32", "tf32"])
def test_fused_kernel_rows_equal_indexed_path_uncompiled(fmt: str) -> None:
    """`_metric_kernel.row_stats` / `masked_row_stats` (the compiled path's code, run eagerly here) give
    the indexed path's figures: k = 3 actuals against an fp64 reference, then NaN/inf with one actual."""
    from roundoff.numerics import _metric_kernel as mk

    f = FORMATS[fmt]
    acts, ref = [], None
    for seed in (11, 12, 13):
        a, ref = _adversarial_pair(20_000, torch.float64, 11)  # one reference, three perturbed actuals
        acts.append(a if seed == 11 else torch.nextafter(a, torch.tensor(math.inf)) if seed == 12 else a * (1 + 2.0**-10))
    assert ref is not None
    rows = mk.row_stats(acts, ref, f).tolist()
    for i, a in enumerate(acts):
        fast = ErrorAccumulator(fmt)
        fast._add_finite(rows[i], a.numel(), a.numel())
        _assert_same_stats(fast.result(), ErrorAccumulator(fmt)._update_indexed(a, ref).result(), f"row_stats {fmt} actual {i}")
    act, ref = acts[0].clone(), ref.clone()
    _with_nonfinite(act, ref)
    row = mk.masked_row_stats(act, ref, f).tolist()[0]
    fast = ErrorAccumulator(fmt)
    fast._add_finite(row[:9], act.numel(), int(row[9]))
    for k, v in zip(("nan_a", "nan_r", "inf_a", "inf_r", "nonfinite"), row[10:]):
        fast._n[k] += int(v)
    fast._n["mismatches"] += int(row[14])
    _assert_same_stats(fast.result(), ErrorAccumulator(fmt)._update_indexed(act, ref).result(), f"masked_row_stats {fmt}")


def test_compiled_masked_kernel_equals_indexed_path_on_large_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one compiled variant the suite builds: NaN/inf, -0.0, subnormals, huge ulps, >= FUSED_MIN_NUMEL."""
    from roundoff.numerics import _metric_kernel as mk

    monkeypatch.setattr(mk, "COMPILE_AFTER", CompileAfter(0))  # compiled at once, as on CUDA
    act, ref = _adversarial_pair(mk.FUSED_MIN_NUMEL + 123, torch.float64, 5)
    _with_nonfinite(act, ref)
    assert mk.applies((act,), ref, FORMATS["bf16"], masked=True)
    got = ErrorAccumulator("bf16")._update_masked(act, ref).result()
    status = mk.fused_status().get("metric_masked_float32_float64_in_bf16")
    assert status == "ok", f"compiled path not taken: {status} repro: ErrorAccumulator('bf16')._update_masked(<adversarial n=2**17+123>)"
    want = ErrorAccumulator("bf16")._update_indexed(act, ref).result()
    _assert_same_stats(got, want, "compiled masked kernel, bf16, fp32 vs fp64, n=2**17+123")
    assert want.max_ulp > 2**14 and want.nonfinite_mismatches > 0 and want.inf_reference > 0


def test_compiled_kernel_failure_falls_back_to_eager(monkeypatch: pytest.MonkeyPatch) -> None:
    """A compile error disables the variant (reason kept) and the eager figures are returned."""
    from roundoff.numerics import _metric_kernel as mk

    def broken(*_: object) -> object:
        raise RuntimeError("simulated compiler failure")

    monkeypatch.setattr(mk, "_compiled", broken)
    monkeypatch.setattr(mk, "_FAILED", {})
    monkeypatch.setattr(mk, "COMPILE_AFTER", CompileAfter(0))
    act, ref = _adversarial_pair(mk.FUSED_MIN_NUMEL, torch.float64, 6)
    got = compare(act, ref, "fp16")
    assert "simulated compiler failure" in mk.fused_status()["metric_rows_1_float32_float64_in_fp16"]
    assert not mk.applies((act,), ref, FORMATS["fp16"])
    _assert_same_stats(got, ErrorAccumulator("fp16")._update_indexed(act, ref).result(), "fallback after compile error")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("fmt", ["bf16", "fp32"])
def test_cuda_compiled_kernels_equal_cpu_indexed_path(fmt: str) -> None:
    """On CUDA (Triton), the compiled all-finite (k=2) and masked variants give the CPU indexed path's figures."""
    from roundoff.numerics import _metric_kernel as mk

    act, ref = _adversarial_pair(mk.FUSED_MIN_NUMEL + 5, torch.float64, 21)
    act2 = act * (1 + 2.0**-12)
    accs = [ErrorAccumulator(fmt), ErrorAccumulator(fmt)]
    ErrorAccumulator.update_each(accs, [act.cuda(), act2.cuda()], ref.cuda())
    for acc, a in zip(accs, (act, act2)):
        _assert_same_stats(acc.result(), ErrorAccumulator(fmt)._update_indexed(a, ref).result(), f"cuda rows_2 {fmt}")
    _with_nonfinite(act, ref)
    got = ErrorAccumulator(fmt)._update_masked(act.cuda(), ref.cuda()).result()
    _assert_same_stats(got, ErrorAccumulator(fmt)._update_indexed(act, ref).result(), f"cuda masked {fmt}")
    status = mk.fused_status()
    assert all(status.get(f"metric_{v}_in_{fmt}") == "ok" for v in ("rows_2_float32_float32_float64", "masked_float32_float64")), status


def test_compiled_kernel_disagreeing_on_first_call_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """A variant whose first (probe) rows differ from the eager path's is disabled with the field named."""
    from roundoff.numerics import _metric_kernel as mk

    def off_by_one_ulp(k: int, dtypes: tuple[torch.dtype, ...], f: object) -> object:
        return lambda *t: mk.row_stats(t[:-1], t[-1], f) + torch.tensor([0, 0, 0, 0, 0, 0, 1.0, 0, 0], dtype=torch.float64)

    monkeypatch.setattr(mk, "_compiled", off_by_one_ulp)
    monkeypatch.setattr(mk, "_FAILED", {})
    monkeypatch.setattr(mk, "_OK", set())
    monkeypatch.setattr(mk, "COMPILE_AFTER", CompileAfter(0))
    act, ref = _adversarial_pair(mk.FUSED_MIN_NUMEL, torch.float64, 8)
    got = compare(act, ref, "bf16")
    assert "field 6" in mk.fused_status()["metric_rows_1_float32_float64_in_bf16"], mk.fused_status()
    _assert_same_stats(got, ErrorAccumulator("bf16")._update_indexed(act, ref).result(), "fallback after a wrong probe")


@pytest.mark.parametrize("fmt", ["fp64", "bf16"])
def test_measuring_an_fp64_value_leaves_it_unchanged(fmt: str) -> None:
    """The fp64 difference was taken in place: an fp64 `actual` (the fp64 policy's value) became |a - r|."""
    torch.manual_seed(0)
    actual = torch.randn(64, dtype=torch.float64)
    reference = actual + 2.0**-30
    before = actual.clone()
    stats = compare(actual, reference, fmt)
    assert torch.equal(actual, before)
    assert stats.max_abs == pytest.approx(2.0**-30, rel=1e-6)


def test_stats_of_one_row_equal_the_accumulators() -> None:
    """`ErrorAccumulator.of_row` (the deferred check's thousands of rows) against the accumulator fed
    the same row: every figure equal, on rows `finite_stats` computed from random values."""
    from roundoff.numerics._metric_rows import finite_stats
    from roundoff.numerics.formats import get_format

    g = torch.Generator().manual_seed(5)
    for name, n in (("bf16", 1000), ("fp16", 17), ("fp32", 300)):
        f = get_format(name)
        r = torch.randn(n, dtype=torch.float64, generator=g)
        r[::7] = 0.0
        actuals = [(r * (1 + 1e-2 * torch.randn(n, dtype=torch.float64, generator=g))).float(), r.float(), r.clone()]
        for row in finite_stats(actuals, r, f):
            acc = ErrorAccumulator(f)
            acc._add_finite(row, n, n)
            assert ErrorAccumulator.of_row(row, n, f) == acc.result()


def test_a_compile_failure_of_a_checked_variant_leaves_its_rows_to_eager(monkeypatch: pytest.MonkeyPatch) -> None:
    """`unread_rows` of a variant already checked whose compiled call fails (a recompilation for a new
    length): the reason is kept, the variant disabled, and None returned (the caller's eager path)."""
    from roundoff.numerics import _metric_kernel as mk

    def broken(*_: object) -> object:
        raise RuntimeError("simulated recompilation failure")

    r = torch.randn(mk.FUSED_MIN_NUMEL, dtype=torch.float64)
    a, f = r.float(), FORMATS["bf16"]
    name = mk._variant(1, (a.dtype, r.dtype), f)
    monkeypatch.setattr(mk, "_compiled", lambda *key: broken)
    monkeypatch.setattr(mk, "_OK", {name})
    monkeypatch.setattr(mk, "_FAILED", {})
    monkeypatch.setattr(mk, "COMPILE_AFTER", CompileAfter(0))
    assert mk.unread_rows([a], r, f) is None
    assert not mk.applies([a], r, f)
    assert "simulated recompilation failure" in mk.fused_status()[name]


def test_on_the_host_a_variant_is_compiled_only_once_its_eager_figures_have_earned_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Trial 105: every CLI call is a new process, and compiling a metric variant cost a bf16 KAN's first check
    71 s (5 s eager). On the host the compiled pass runs only once the eager one has covered `COMPILE_AFTER`'s
    elements of that variant; the figures are the indexed path's either way."""
    from roundoff.numerics import _metric_kernel as mk

    compiled: list[str] = []

    def spy(k: int, dtypes: tuple[torch.dtype, ...], f: object) -> object:
        compiled.append(mk._variant(k, dtypes, f))  # the compiled code's function, run eagerly (no compile cost)
        return lambda *t: mk.row_stats(t[:-1], t[-1], f)

    monkeypatch.setattr(mk, "_compiled", spy)
    monkeypatch.setattr(mk, "_FAILED", {})
    monkeypatch.setattr(mk, "_OK", set())
    act, ref = _adversarial_pair(mk.FUSED_MIN_NUMEL, torch.float64, 9)
    monkeypatch.setattr(mk, "COMPILE_AFTER", CompileAfter(2 * act.numel()))
    want = ErrorAccumulator("bf16")._update_indexed(act, ref).result()
    for call in range(3):
        _assert_same_stats(compare(act, ref, "bf16"), want, f"call {call}")
        assert compiled == ([] if call < 2 else ["metric_rows_1_float32_float64_in_bf16"]), (call, compiled)
    assert not CompileAfter(1 << 29).due(compiled[0], ref)  # as by default: a fresh process does not compile
