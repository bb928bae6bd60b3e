"""Bit-pattern equality (`roundoff.numerics.bits`) against integer bit patterns decided by hand.

The oracle works on the raw integers only: two patterns are the same when equal, or when both
encode NaN (exponent all ones, mantissa not zero: decided from the bits, not by torch's isnan).
"""

from __future__ import annotations

import pytest
import torch

from roundoff.numerics import bits_differ, same_bits, same_bits_mask
from roundoff.numerics.chunks import SLICE_ELEMENTS

# (float dtype, int view, exponent mask, mantissa mask)
_LAYOUTS = {
    torch.float32: (torch.int32, 0x7F800000, 0x007FFFFF),
    torch.bfloat16: (torch.int16, 0x7F80, 0x007F),
    torch.float16: (torch.int16, 0x7C00, 0x03FF),
    torch.float64: (torch.int64, 0x7FF0000000000000, 0x000FFFFFFFFFFFFF),
}


def _is_nan_pattern(bits: torch.Tensor, exp: int, man: int) -> torch.Tensor:
    return ((bits & exp) == exp) & ((bits & man) != 0)


@pytest.mark.parametrize("dtype", list(_LAYOUTS), ids=str)
def test_random_patterns_against_integer_oracle(dtype: torch.dtype) -> None:
    ints, exp, man = _LAYOUTS[dtype]
    g = torch.Generator().manual_seed(7)
    width = torch.iinfo(ints).bits
    a = torch.randint(-(2**31), 2**31 - 1, (1 << 14,), generator=g, dtype=torch.int64)
    a = (a << (width - 32)) if width > 32 else a.to(torch.int32) >> (32 - width)
    a = a.to(ints)
    b = a.clone()
    # a third of b: another pattern; a third: the same value with the sign bit flipped (±0.0 too)
    b[::3] = torch.flip(a, (0,))[::3]
    sign = torch.tensor(1, dtype=torch.int64).bitwise_left_shift(width - 1).to(ints)
    b[1::3] ^= sign
    a[:4] = torch.tensor([0, 0, exp | 1, exp | man], dtype=torch.int64).to(ints)  # +0, +0, NaN, NaN
    b[:4] = torch.cat([sign.reshape(1), torch.zeros(1, dtype=ints),
                       torch.tensor([exp | (man >> 1) + 1], dtype=torch.int64).to(ints), sign.reshape(1) | exp | 3])  # fmt: skip
    want = (a == b) | (_is_nan_pattern(a, exp, man) & _is_nan_pattern(b, exp, man))
    got = same_bits_mask(a.view(dtype), b.view(dtype))
    assert torch.equal(got, want), f"repro: same_bits_mask on random {dtype} patterns, seed 7"
    assert got[:4].tolist() == [False, True, True, True]  # -0.0 vs +0.0 differ; NaN payloads agree
    assert bits_differ(a.view(dtype), b.view(dtype)) == int((~want).sum()) > 0


@pytest.mark.parametrize("layout", ["flat", "transposed"])
def test_count_over_slices_of_a_large_tensor_against_integer_oracle(layout: str) -> None:
    """Host tensors past `chunks.SLICE_ELEMENTS` are counted a slice at a time (contiguous: flat ranges;
    else along the longest dimension): the count is the whole mask's, decided from the integers."""
    ints, exp, man = _LAYOUTS[torch.bfloat16]
    g = torch.Generator().manual_seed(11)
    n = 3 * SLICE_ELEMENTS + 7 * 64
    a = torch.randint(-(2**15), 2**15 - 1, (n,), generator=g, dtype=torch.int32).to(ints)
    b = torch.where(torch.rand(n, generator=g) < 0.3, a ^ 1, a)
    b[::1001] = exp | 5  # NaNs, some facing NaNs in `a`
    a[::3003] = exp | man
    if layout == "transposed":
        a, b = a.reshape(-1, 64).t(), b.reshape(-1, 64).t()
        assert not a.is_contiguous()
    want = (a == b) | (_is_nan_pattern(a, exp, man) & _is_nan_pattern(b, exp, man))
    assert 0 < bits_differ(a.view(torch.bfloat16), b.view(torch.bfloat16)) == int((~want).sum()) < n


def test_signed_zero_and_nan_against_equality_operator() -> None:
    a = torch.tensor([0.0, float("nan"), 1.0, -float("inf")])
    b = torch.tensor([-0.0, float("nan"), 1.0, -float("inf")])
    assert bool((a == b)[0]) and not bool((a == b)[1])  # what `==` says, and why it is not used
    assert same_bits_mask(a, b).tolist() == [False, True, True, True]
    assert not same_bits(a, b) and same_bits(a[1:], b[1:])


def test_mismatched_inputs_are_errors() -> None:
    with pytest.raises(ValueError, match="one dtype and shape"):
        same_bits(torch.zeros(2), torch.zeros(2, dtype=torch.float64))
    with pytest.raises(ValueError, match="one dtype and shape"):
        same_bits(torch.zeros(2), torch.zeros(3))
