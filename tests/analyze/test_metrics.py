"""`measure` against independent oracles: nextafter stepping for ULPs, fp64 formulas for the rest."""

from __future__ import annotations

import math

import pytest
import torch

from roundoff.analyze import measure
from roundoff.analyze.metrics import Metrics


def _steps(x: torch.Tensor, k: int, dtype: torch.dtype) -> torch.Tensor:
    """x moved k representable values of `dtype` up (torch.nextafter, computed in `dtype`)."""
    y = x.to(dtype)
    for _ in range(k):
        y = torch.nextafter(y, torch.full_like(y, math.inf))
    return y


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_ulps_are_nextafter_steps(dtype: torch.dtype) -> None:
    ref = torch.tensor([1.0, -3.5, 1e-3, -0.0, 2.0**-20]).to(dtype).double()
    for k in (0, 1, 3, 17):
        act = _steps(ref, k, dtype).to(torch.float32)
        m = measure(act, ref, dtype)
        assert m.max_ulp == k and m.mean_ulp == k, f"repro: measure(_steps(ref, {k}, {dtype}), ref, {dtype})"
        assert m.max_bits == pytest.approx(math.log2(1 + k))
        assert m.mismatch_fraction == (1.0 if k else 0.0)


def test_signed_zero_is_no_error_and_crossing_zero_counts_both_sides() -> None:
    m = measure(torch.tensor([-0.0]), torch.tensor([0.0], dtype=torch.float64), torch.float32)
    assert m.max_ulp == 0 and m.mismatch_fraction == 0
    tiny = torch.nextafter(torch.tensor([0.0]), torch.tensor([1.0]))  # smallest fp32 subnormal
    m = measure(-tiny, tiny.double(), torch.float32)
    assert m.max_ulp == 2  # -min_sub -> 0 -> +min_sub


def test_reference_is_rounded_to_the_format_first() -> None:
    ref = torch.tensor([1.0 + 2.0**-10], dtype=torch.float64)  # not a bf16 value; RNE gives 1.0
    m = measure(torch.tensor([1.0]), ref, torch.bfloat16)
    assert m.max_ulp == 0 and m.max_abs == pytest.approx(2.0**-10)


def test_abs_rel_sqnr_and_nonfinite_counts() -> None:
    ref = torch.tensor([1.0, 2.0, -4.0, 8.0, 1.0, 3.0], dtype=torch.float64)
    act = torch.tensor([1.0, 2.5, -4.0, 8.0, math.nan, math.inf])
    m = measure(act, ref, torch.float32)
    d = (act[:4].double() - ref[:4])
    assert m.max_abs == float(d.abs().max()) and m.max_rel == pytest.approx(0.25)
    assert m.sqnr_db == pytest.approx(10 * math.log10(float((ref[:4] ** 2).sum() / (d**2).sum())))
    assert (m.nan, m.inf, m.ref_nan, m.ref_inf) == (1, 1, 0, 0)
    assert m.mismatch_fraction == pytest.approx(3 / 6)
    assert all(isinstance(v, (int, float, str)) for v in m.to_dict().values())


def test_shape_mismatch_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="cannot compare shapes"):
        measure(torch.zeros(3), torch.zeros(4, dtype=torch.float64), torch.float32)


def _adversarial(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """bf16-valued fp32 `actual` near an fp64 `reference`, with NaN, ±inf, zeros and exact elements."""
    from roundoff.numerics import round_to

    g = torch.Generator().manual_seed(seed)
    ref = torch.randn(4096, generator=g, dtype=torch.float64) * 10.0 ** torch.randint(-5, 5, (4096,), generator=g)
    act = round_to(ref.float() * (1 + 1e-3 * torch.randn(4096, generator=g)), "bf16")
    ref[:4] = torch.tensor([math.nan, math.inf, 0.0, -math.inf], dtype=torch.float64)
    act[2:8] = torch.tensor([math.nan, -math.inf, math.inf, 0.0, -0.0, math.nan])
    return act, ref


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_measure_is_numerics_compare_field_for_field(seed: int, dtype: torch.dtype) -> None:
    from roundoff.numerics import compare, format_of_dtype

    act, ref = _adversarial(seed)
    m, s = measure(act, ref, dtype), compare(act, ref, format_of_dtype(dtype).name)
    got = (m.numel, m.max_ulp, m.mean_ulp, m.max_bits, m.mean_bits, m.max_abs, m.max_rel, m.mismatch_fraction,
           m.sqnr_db, m.nan, m.inf, m.ref_nan, m.ref_inf)
    want = (s.count, s.max_ulp, s.mean_ulp, s.max_bits, s.mean_bits, s.max_abs, s.max_rel, s.mismatch_fraction,
            s.sqnr_db, s.nan_actual, s.inf_actual, s.nan_reference, s.inf_reference)
    assert got == want, f"repro: measure(*_adversarial({seed}), {dtype}) vs numerics.compare"


@pytest.mark.parametrize("seed", [0, 1])
def test_equal_fast_path_matches_compare(seed: int) -> None:
    from roundoff.numerics import compare

    act, _ = _adversarial(seed)
    act = act.nan_to_num(nan=1.0, posinf=math.inf, neginf=-math.inf)  # equal tensors have no NaN
    m, s = measure(act, act.clone(), torch.bfloat16), compare(act, act.clone(), "bf16")
    assert (m.max_ulp, m.max_abs, m.mismatch_fraction, m.sqnr_db, m.inf, m.ref_inf, m.nan) == (
        s.max_ulp, s.max_abs, s.mismatch_fraction, s.sqnr_db, s.inf_actual, s.inf_reference, s.nan_actual
    ), f"repro: measure(x, x.clone()) for _adversarial({seed}) without NaN"
    nan = torch.tensor([1.0, math.nan])
    assert measure(nan, nan, torch.float32).nan == 1, "repro: measure(t, t) with a NaN must not take the fast path"


def test_chunked_measure_matches_compare(monkeypatch: pytest.MonkeyPatch) -> None:
    """With chunks of 1000 (several updates), counts and maxima are exact and sums agree to fp64 rounding."""
    from roundoff.analyze import metrics
    from roundoff.numerics import compare

    act, ref = _adversarial(3)
    monkeypatch.setattr(metrics, "elements_per_update", lambda actuals, r, fmt: 1000)
    m, s = measure(act, ref, torch.bfloat16), compare(act, ref, "bf16")
    assert (m.numel, m.max_ulp, m.max_abs, m.max_rel, m.mismatch_fraction, m.nan, m.inf, m.ref_nan, m.ref_inf) == (
        s.count, s.max_ulp, s.max_abs, s.max_rel, s.mismatch_fraction, s.nan_actual, s.inf_actual,
        s.nan_reference, s.inf_reference,
    ), "repro: measure(*_adversarial(3), bf16) with CHUNK=1000"
    assert m.mean_ulp == pytest.approx(s.mean_ulp, rel=1e-12) and m.mean_bits == pytest.approx(s.mean_bits, rel=1e-12)
    assert m.sqnr_db == pytest.approx(s.sqnr_db, rel=1e-12)


@pytest.mark.parametrize("chunk", [1 << 22, 1000])
def test_measure_each_matches_measure_per_actual(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """One shared-reference pass gives each actual's `measure` figures (finite and non-finite chunks, chunked)."""
    from roundoff.analyze import metrics

    monkeypatch.setattr(metrics, "elements_per_update", lambda actuals, r, fmt: max(1, chunk // len(actuals)))
    act, ref = _adversarial(4)
    finite_act = act.nan_to_num(nan=0.5, posinf=2.0, neginf=-2.0)
    fin_ref = ref.nan_to_num(nan=0.25, posinf=3.0, neginf=-3.0)
    for r, actuals in ((fin_ref, [finite_act, finite_act * 1.001, fin_ref.clone()]), (ref, [act, finite_act])):
        got = metrics.measure_each(actuals, r, torch.bfloat16)
        for i, (a, m) in enumerate(zip(actuals, got)):
            want = metrics.measure(a, r, torch.bfloat16)
            for k, v in vars(want).items():
                close = v == pytest.approx(getattr(m, k), rel=1e-12) if k in ("mean_ulp", "mean_bits", "sqnr_db") else None
                assert close if close is not None else getattr(m, k) == v, (
                    f"{k}: {getattr(m, k)} != {v} repro: measure_each(actuals[{i}]) CHUNK={chunk}"
                )


def _assert_same_figures(got: Metrics, want: Metrics, what: str) -> None:
    for k, v in vars(want).items():
        close = v == pytest.approx(getattr(got, k), rel=1e-12) if k in ("mean_ulp", "mean_bits", "sqnr_db", "rmse") else None
        assert close if close is not None else getattr(got, k) == v, f"{k}: {getattr(got, k)} != {v} repro: {what}"


@pytest.mark.parametrize("chunk", [1 << 22, 1000])
def test_measure_each_with_a_rounded_reference_and_a_pair_matches_measure(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """The reference passed already rounded gives the same figures; the pair (i, j) is ``measure(actuals[i],
    actuals[j])`` whether it shares the pass (one chunk, all finite) or not (chunked, or NaN/inf present)."""
    from roundoff.analyze import metrics
    from roundoff.numerics import round_to

    monkeypatch.setattr(metrics, "elements_per_update", lambda actuals, r, fmt: max(1, chunk // len(actuals)))
    act, ref = _adversarial(5)
    finite_act = act.nan_to_num(nan=0.5, posinf=2.0, neginf=-2.0)
    fin_ref = ref.nan_to_num(nan=0.25, posinf=3.0, neginf=-3.0)
    for r, actuals in ((fin_ref, [finite_act.bfloat16(), (finite_act * 1.001).bfloat16(), finite_act * 0.999]),
                       (ref, [act, finite_act])):
        apart: list[int] = []
        with monkeypatch.context() as patched:
            patched.setattr(metrics, "measure", lambda *args, calls=apart: calls.append(1) or measure(*args))
            got = metrics.measure_each(actuals, r, torch.bfloat16, round_to(r, "bf16"), pair=(1, 0))
        assert len(got) == len(actuals) + 1
        assert bool(apart) == (chunk == 1000 or r is ref), "the pair shares a single all-finite pass, and only that one"
        for i, a in enumerate(actuals):
            _assert_same_figures(got[i], metrics.measure(a, r, torch.bfloat16), f"measure_each(actuals[{i}]) CHUNK={chunk}")
        _assert_same_figures(got[-1], metrics.measure(actuals[1], actuals[0], torch.bfloat16), f"pair CHUNK={chunk}")


def test_measure_many_matches_measure_with_one_read_for_the_finite_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Finite pairs (small: eager pass; large: the compiled pass, probed on its first call) come from one
    host read; a pair with NaN/inf goes through `measure` (as may fp8). Every figure is `measure`'s."""
    from roundoff.analyze import metrics
    from roundoff.numerics import _metric_kernel
    from roundoff.numerics.compile_after import CompileAfter

    monkeypatch.setattr(_metric_kernel, "COMPILE_AFTER", CompileAfter(0))  # the compiled pass at once, as on CUDA
    act, ref = _adversarial(6)
    fin_act, fin_ref = act.nan_to_num(nan=0.5, posinf=2.0, neginf=-2.0), ref.nan_to_num(nan=0.25, posinf=3.0, neginf=-3.0)
    big = torch.randn(1 << 17, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    triples = [(fin_act, fin_ref, torch.bfloat16), (act, ref, torch.bfloat16), (big.float(), big, torch.float32),
               (big.bfloat16(), big, torch.bfloat16), (big.float(), big, torch.float32),
               (fin_act.to(torch.float8_e4m3fn).float(), fin_ref, torch.float8_e4m3fn), (fin_ref, fin_ref, torch.float32)]
    apart: list[torch.Tensor] = []
    monkeypatch.setattr(metrics, "measure", lambda *args, calls=apart: calls.append(args[0]) or measure(*args))
    got, read = metrics.measure_many(triples, extra=(torch.tensor([3, 4]), torch.tensor(0.5, dtype=torch.float64)))
    assert read == [3.0, 4.0, 0.5]  # read in the same read, in order
    assert apart and apart[0] is act and all(a is not t[0] for a in apart for t in triples[2:5]), \
        "the NaN/inf pair is measured apart, the finite fp32/bf16 pairs in the batch"
    for i, ((a, r, dtype), m) in enumerate(zip(triples, got)):
        _assert_same_figures(m, measure(a, r, dtype), f"measure_many triple {i}")
