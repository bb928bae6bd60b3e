"""Per-node error metrics of one value against a reference value.

`measure(actual, reference, dtype)` compares an emulated value (held in an fp32/fp64 container)
with a reference (the fp64 oracle, or another run) in the value's storage format `dtype`:

- ULPs are counted by ordinal distance in `dtype` between `actual` and the reference rounded (RNE)
  to `dtype`; 0 ULPs means correctly rounded. -0.0 and 0.0 are the same ordinal. Elements where
  either side is NaN are left out of the ULP/abs/rel/SQNR figures and counted separately, and so
  are infinities, which also count as mismatches when the two sides differ.
- bits of error: ``log2(1 + ulps)`` (Herbie's measure), as max and mean.
- SQNR in dB of the reference power over the error power (inf when the error is 0).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch

from roundoff.execute.formats import NARROW

_INT_VIEW = {
    torch.float64: torch.int64,
    torch.float32: torch.int32,
    torch.bfloat16: torch.int16,
    torch.float16: torch.int16,
    torch.float8_e4m3fn: torch.int8,
    torch.float8_e5m2: torch.int8,
}


@dataclass(frozen=True)
class Metrics:
    """Error of one value against a reference (see module docstring); counts are element counts."""

    numel: int
    max_ulp: float
    mean_ulp: float
    max_bits: float
    mean_bits: float
    max_abs: float
    max_rel: float
    mismatch_fraction: float
    sqnr_db: float
    nan: int
    inf: int
    ref_nan: int
    ref_inf: int

    @property
    def nonfinite(self) -> int:
        return self.nan + self.inf

    def to_dict(self) -> dict[str, float | int]:
        return {k: (v if not isinstance(v, float) or math.isfinite(v) else str(v)) for k, v in asdict(self).items()}


def _ordinal(x: torch.Tensor) -> torch.Tensor:
    """Monotone integer image of the bit patterns of `x` (a float tensor), -0.0 == 0.0, as int64."""
    bits = x.view(_INT_VIEW[x.dtype]).to(torch.int64)
    width = x.element_size() * 8
    magnitude = bits & ((1 << (width - 1)) - 1)
    return torch.where(bits < 0, -magnitude, magnitude)


def measure(actual: torch.Tensor, reference: torch.Tensor, dtype: torch.dtype) -> Metrics:
    """Metrics of `actual` against `reference`, both float tensors of one shape, in format `dtype`."""
    if actual.shape != reference.shape:
        raise ValueError(f"cannot compare shapes {tuple(actual.shape)} and {tuple(reference.shape)}")
    a = actual.detach().reshape(-1)
    r = reference.detach().reshape(-1)
    fmt = dtype if dtype in _INT_VIEW else torch.float32
    a_f, r_f = a.to(fmt), r.to(fmt)  # a is exact in fmt (already rounded); r rounds RNE
    if fmt in NARROW:
        from roundoff.numerics import round_to
        from roundoff.execute.formats import format_name

        r_f = round_to(r.to(torch.float64), format_name(fmt)).to(fmt)
    nan_a, nan_r = a.isnan(), r.isnan()
    inf_a, inf_r = a.isinf(), r.isinf()
    finite = ~(nan_a | nan_r | inf_a | inf_r)
    ulp = (_ordinal(a_f) - _ordinal(r_f)).abs().to(torch.float64)[finite]
    differs = (ulp > 0).sum().item() + (inf_a ^ inf_r).sum().item() + (nan_a ^ nan_r).sum().item()
    ad, rd = a.to(torch.float64)[finite], r.to(torch.float64)[finite]
    err = (ad - rd).abs()
    n = a.numel()
    if err.numel():
        rel = err / rd.abs()
        rel = rel[rd != 0]
        noise = float((err * err).sum())
        signal = float((rd * rd).sum())
        sqnr = math.inf if noise == 0 else (10 * math.log10(signal / noise) if signal > 0 else -math.inf)
        bits = torch.log2(1 + ulp)
        stats = dict(
            max_ulp=float(ulp.max()), mean_ulp=float(ulp.mean()), max_bits=float(bits.max()),
            mean_bits=float(bits.mean()), max_abs=float(err.max()),
            max_rel=float(rel.max()) if rel.numel() else 0.0, sqnr_db=sqnr,
        )
    else:
        stats = dict(max_ulp=0.0, mean_ulp=0.0, max_bits=0.0, mean_bits=0.0, max_abs=0.0, max_rel=0.0, sqnr_db=math.inf)
    return Metrics(
        numel=n, mismatch_fraction=differs / max(n, 1), nan=int(nan_a.sum()), inf=int(inf_a.sum()),
        ref_nan=int(nan_r.sum()), ref_inf=int(inf_r.sum()), **stats,
    )
