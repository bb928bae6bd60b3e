"""`measure` against independent oracles: nextafter stepping for ULPs, fp64 formulas for the rest."""

from __future__ import annotations

import math

import pytest
import torch

from roundoff.analyze import measure


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
