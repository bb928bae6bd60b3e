"""`verdict.nonfinite_counts` on host tensors past one slice (`numerics.chunks`), against masks of the
whole tensors with torch's own fp64 -> fp32 cast (one correctly rounded conversion) as the format's
overflow."""

from __future__ import annotations

import pytest
import torch

from roundoff.analyze.verdict import nonfinite_counts
from roundoff.numerics.chunks import SLICE_ELEMENTS


@pytest.mark.parametrize("layout", ["flat", "transposed"])
def test_new_and_forced_counts_over_slices_against_whole_masks(layout: str) -> None:
    g = torch.Generator().manual_seed(3)
    n = 96 * (SLICE_ELEMENTS // 32 + 5)
    fp64 = torch.randn(n, generator=g, dtype=torch.float64)
    fp64[::777] = 1e39  # beyond fp32: +inf in any fp32 run (the format's overflow, not a new one)
    fp64[5::4099] = float("nan")  # NaN in fp64 too: not counted
    value = fp64.float()
    value[3::1013] = float("inf")  # inf where fp64 is finite and within fp32: new
    value[7::2027] = float("nan")
    if layout == "transposed":
        fp64, value = fp64.reshape(-1, 96).t(), value.reshape(-1, 96).t()
        assert not value.is_contiguous()
    lost = ~value.isfinite() & fp64.isfinite()
    forced = value.isinf() & fp64.isfinite() & (fp64.float() == value)
    want = (int((lost & ~forced).sum()), int(forced.sum()))
    assert want[0] > 0 and want[1] > 0
    assert nonfinite_counts(value, fp64) == want
