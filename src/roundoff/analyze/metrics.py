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
    """Monotone integer image of the bit patterns of `x` (a float tensor), -0.0 == 0.0.

    int32 for formats up to 16 bits wide (differences fit), int64 otherwise.
    """
    wide = torch.int64 if x.element_size() >= 4 else torch.int32
    bits = x.view(_INT_VIEW[x.dtype]).to(wide)
    magnitude = bits & ((1 << (x.element_size() * 8 - 1)) - 1)
    return torch.where(bits < 0, -magnitude, magnitude)


def _in_format(a: torch.Tensor, r: torch.Tensor, fmt: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """`a` (already holding values of `fmt`) and `r` rounded RNE to `fmt`, both as `fmt` tensors."""
    if fmt in NARROW:
        from roundoff.execute.formats import format_name
        from roundoff.numerics import round_to

        r_f = round_to(r if r.dtype in (torch.float32, torch.float64) else r.double(), format_name(fmt)).to(fmt)
    else:
        r_f = r.to(fmt)
    return a.to(fmt), r_f


def _summary(ulp: torch.Tensor, err: torch.Tensor, rd: torch.Tensor, n_finite: int) -> dict[str, float]:
    if not n_finite:
        return dict(max_ulp=0.0, mean_ulp=0.0, max_bits=0.0, mean_bits=0.0, max_abs=0.0, max_rel=0.0, sqnr_db=math.inf)
    rel = torch.where(rd != 0, err / rd.abs(), 0.0)
    noise, signal = float(err.square().sum()), float(rd.square().sum())
    sqnr = math.inf if noise == 0 else (10 * math.log10(signal / noise) if signal > 0 else -math.inf)
    max_ulp = float(ulp.max())
    return dict(
        max_ulp=max_ulp, mean_ulp=float(ulp.sum(dtype=torch.float64)) / n_finite, max_bits=math.log2(1 + max_ulp),
        mean_bits=float(torch.log2(1 + ulp.to(torch.float32)).sum(dtype=torch.float64)) / n_finite,
        max_abs=float(err.max()), max_rel=float(rel.max()), sqnr_db=sqnr,
    )


def measure(actual: torch.Tensor, reference: torch.Tensor, dtype: torch.dtype) -> Metrics:
    """Metrics of `actual` against `reference`, both float tensors of one shape, in format `dtype`."""
    if actual.shape != reference.shape:
        raise ValueError(f"cannot compare shapes {tuple(actual.shape)} and {tuple(reference.shape)}")
    a = actual.detach().reshape(-1)
    r = reference.detach().reshape(-1)
    n = a.numel()
    a_f, r_f = _in_format(a, r, dtype if dtype in _INT_VIEW else torch.float32)
    if bool(a.isfinite().all()) and bool(r.isfinite().all()):  # fast path: no masking
        ulp = (_ordinal(a_f) - _ordinal(r_f)).abs()
        rd = r.to(torch.float64)
        err = (a.to(torch.float64) - rd).abs()
        return Metrics(numel=n, mismatch_fraction=int(torch.count_nonzero(ulp)) / max(n, 1), nan=0, inf=0,
                       ref_nan=0, ref_inf=0, **_summary(ulp, err, rd, n))
    nan_a, nan_r, inf_a, inf_r = a.isnan(), r.isnan(), a.isinf(), r.isinf()
    finite = ~(nan_a | nan_r | inf_a | inf_r)
    # Non-finite positions are masked with where() (boolean indexing is slow on large tensors).
    ulp = torch.where(finite, (_ordinal(a_f) - _ordinal(r_f)).abs(), 0)
    rd = torch.where(finite, r.to(torch.float64), 0.0)
    err = (torch.where(finite, a.to(torch.float64), 0.0) - rd).abs()
    differs = int(torch.count_nonzero(ulp)) + int((inf_a ^ inf_r).sum()) + int((nan_a ^ nan_r).sum())
    return Metrics(
        numel=n, mismatch_fraction=differs / max(n, 1), nan=int(nan_a.sum()), inf=int(inf_a.sum()),
        ref_nan=int(nan_r.sum()), ref_inf=int(inf_r.sum()), **_summary(ulp, err, rd, int(finite.sum())),
    )
