"""Error metrics between an actual and a reference tensor: ULPs by ordinal, bits, abs/rel, SQNR.

Contract:
- ULPs and bits of error are counted as `roundoff.numerics.ulps` defines them: in a format `fmt`
  (default: the actual tensor's dtype format), both sides first rounded to it by its own conversion
  (nearest-even; ties away for tf32), as differences of ordinals; bits = ``log2(1 + ulps)``.
- NaN/Inf are never folded into a metric. An element is "finite" when both sides are finite; every
  metric except the NaN/Inf counts is taken over finite elements only. Elements with the same
  non-finite value on both sides (NaN and NaN, or the same inf) match; any other non-finite element is
  a `nonfinite_mismatch` and counts as a mismatch.
- A value that is not NaN as given but rounds to NaN in `fmt` (overflow in a format whose overflow
  is NaN: fp8_e4m3fn where the installed torch's cast does that, as torch < 2.13 does, and the
  fnuz formats) is NaN on its side: counted in `nan_actual` / `nan_reference`, excluded from every
  other metric, a non-finite mismatch unless the other side is NaN too. Every path (all-finite,
  masked, indexed) sees the element so (`_format_nan` runs first), so they agree on every torch.
- Absolute error |a - r| and relative error |a - r| / |r| are computed in fp64 on the *unrounded* values;
  relative error is taken where r != 0 (elements with r == 0 and a != 0 are counted in `zero_reference`).
- SQNR = 10 log10(sum r^2 / sum (a - r)^2) dB over finite elements: +inf when there is no error;
  `rmse` = sqrt(sum (a - r)^2 / finite) over the same elements (0 when none is finite).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from roundoff.numerics import _metric_kernel
from roundoff.numerics._metric_rows import (
    finite_stats,
    masked_disagreement,
    masked_eager,
    unread_stats,
)
from roundoff.numerics.formats import Format, Overflow, format_of_dtype, get_format
from roundoff.numerics.ulps import _check_pair, _rounded, bits_of_error, ordinal, ulp_distance

__all__ = ["ErrorAccumulator", "ErrorStats", "bits_of_error", "compare", "elements_per_update", "ordinal", "ulp_distance"]


def elements_per_update(actuals: Sequence[torch.Tensor], reference: torch.Tensor, fmt: Format | str | torch.dtype) -> int:
    """How many elements of each actual a caller should pass per `update_each` to bound temporaries.

    The eager path holds a few fp64 copies of a chunk per actual, so on the host it gets 2**18 elements
    in all (2 MiB of fp64 per copy: a check's or observe's peak is its values, not a chunk's
    temporaries), and at least the compiled single pass's threshold where that pass applies (it makes
    no temporaries). On CUDA, where the compiled pass applies, 2**27 in all: every chunk costs a launch
    and a host sync, and a 134M-element attention matrix in 2**22-element chunks costs more in syncs
    than in arithmetic; else 2**22.
    """
    k = max(1, len(actuals))
    host = (1 << 18) // k
    if not reference.is_cuda and reference.numel() <= host:
        return max(1, host)  # (one chunk whatever applies: the every-node check's small nodes ask nothing more)
    fused = _metric_kernel.applies(actuals, reference, get_format(fmt))
    if reference.is_cuda:
        return max(1, (1 << 27 if fused else 1 << 22) // k)
    return max(_metric_kernel.FUSED_MIN_NUMEL if fused else 1, host)

def _format_nan(t: torch.Tensor, f: Format) -> torch.Tensor:
    """`t` with NaN where a non-NaN value rounds to NaN in `f` (see the module docstring), as fp32/fp64;
    `t` itself, not copied, where no element does (always, for formats that overflow to inf or
    saturate, and for a tensor already of `f`'s dtype)."""
    if f.overflow is not Overflow.NAN or t.dtype == f.torch_dtype or not t.numel():
        return t
    w = t if t.dtype in (torch.float32, torch.float64) else t.to(torch.float32)
    if not bool((w.abs() > f.max_finite).any()):  # only a value beyond max finite can round to NaN
        return t
    becomes_nan = torch.isnan(_rounded(w, f)) & ~torch.isnan(w)
    return w.masked_fill(becomes_nan, math.nan) if bool(becomes_nan.any()) else t


def _flat(t: torch.Tensor) -> torch.Tensor:
    """`t` detached, as one dimension (itself where it already is)."""
    return t if t.dim() == 1 and not t.requires_grad else t.detach().reshape(-1)


@dataclass(frozen=True)
class ErrorStats:
    """Error of `actual` against `reference` (see the module docstring for every definition)."""

    fmt: str
    count: int
    finite: int
    mismatches: int
    max_ulp: int
    mean_ulp: float
    max_bits: float
    mean_bits: float
    max_abs: float
    max_rel: float
    sqnr_db: float
    nan_actual: int
    nan_reference: int
    inf_actual: int
    inf_reference: int
    nonfinite_mismatches: int
    zero_reference: int
    rmse: float = 0.0

    @property
    def mismatch_fraction(self) -> float:
        return self.mismatches / self.count if self.count else 0.0

    @property
    def exact(self) -> bool:
        return self.mismatches == 0


class ErrorAccumulator:
    """Streaming `compare`: feed chunks with `update`, read `result()`; keeps only running sums/maxima.

    Sums (mean ulp/bits, SQNR) are fp64 partial sums per chunk, so a chunked result equals the
    one-shot result up to fp64 summation order; counts and maxima are exact.
    """

    def __init__(self, fmt: Format | str | torch.dtype | None = None) -> None:
        self._fmt = None if fmt is None else get_format(fmt)
        self._n = {k: 0 for k in ("count", "finite", "mismatches", "max_ulp", "nan_a", "nan_r", "inf_a",
                                  "inf_r", "nonfinite", "zero_ref")}
        self._s = {k: 0.0 for k in ("ulp", "bits", "max_abs", "max_rel", "sig", "noise")}

    def update(self, actual: torch.Tensor, reference: torch.Tensor) -> ErrorAccumulator:
        """Add one chunk. All-finite chunks take `_update_finite` (no masks); others the masked path.

        Both paths give the same counts and maxima bit for bit; sums agree up to fp64 summation order.
        """
        _check_pair(actual, reference)
        if self._fmt is None:
            self._fmt = format_of_dtype(actual.dtype)
        a, r = actual.detach().reshape(-1), reference.detach().reshape(-1)
        a, r = _format_nan(a, self._fmt), _format_nan(r, self._fmt)
        if a.numel() and self._update_finite(a, r):
            return self
        return self._update_masked(a, r)

    def _update_finite(self, a: torch.Tensor, r: torch.Tensor) -> bool:
        """Fast path (see `finite_stats`): False, adding nothing, if any element of either side is non-finite."""
        f = self._fmt if self._fmt is not None else format_of_dtype(a.dtype)
        rows = finite_stats((_format_nan(a, f),), _format_nan(r, f), f)
        if rows is None:
            return False
        self._add_finite(rows[0], a.numel(), a.numel())
        return True

    def _add_finite(self, row: list[float], count: int, finite: int) -> None:
        max_abs, max_rel, sig, noise, ulp_sum, bits_sum, max_ulp, mism, zero_ref = row
        n, s = self._n, self._s
        n["count"] += count
        n["finite"] += finite
        n["mismatches"] += int(mism)
        n["zero_ref"] += int(zero_ref)
        n["max_ulp"] = max(n["max_ulp"], int(max_ulp))
        s["ulp"] += ulp_sum
        s["bits"] += bits_sum
        s["max_abs"] = max(s["max_abs"], max_abs)
        s["max_rel"] = max(s["max_rel"], max_rel)
        s["sig"] += sig
        s["noise"] += noise

    @staticmethod
    def update_each(
        accumulators: Sequence[ErrorAccumulator], actuals: Sequence[torch.Tensor], reference: torch.Tensor,
        rounded: torch.Tensor | None = None, pair: tuple[int, int, ErrorAccumulator] | None = None,
    ) -> bool:
        """``acc.update(actual, reference)`` for each pair, sharing the reference's conversion and
        rounding (one host sync when everything is finite). Accumulators must share one format.
        `rounded`: the reference already rounded to that format, in the format's own dtype (saves
        rounding it again; the figures are the same). `pair` = (i, j, acc): also
        ``acc.update(actuals[i], actuals[j])`` from the same pass where every element is finite and
        the eager pass runs; returns whether it did (if not, the caller updates `acc` itself)."""
        if len(accumulators) != len(actuals) or not actuals:
            raise ValueError(f"update_each needs one accumulator per actual, got {len(accumulators)} and {len(actuals)}")
        for a in actuals:
            _check_pair(a, reference)
        fmts = {acc._fmt for acc in accumulators}
        if len(fmts) != 1 or None in fmts:
            raise ValueError(f"update_each needs accumulators of one explicit format, got {sorted(map(str, fmts))}")
        f = accumulators[0]._fmt
        assert f is not None
        r = _format_nan(_flat(reference), f)
        flat = tuple(_format_nan(_flat(a), f) for a in actuals)
        if rounded is not None and (rounded.dtype != f.torch_dtype or rounded.numel() != r.numel()):
            raise ValueError(f"update_each: rounded must be the reference rounded to {f.name} in its dtype "
                             f"{f.torch_dtype}, got {rounded.dtype} of {rounded.numel()} elements")
        held = None if rounded is None else rounded.reshape(-1)
        rows = finite_stats(flat, r, f, held, None if pair is None else pair[:2]) if r.numel() else None
        for i, acc in enumerate(accumulators):
            if rows is None:
                acc._update_masked(flat[i], r)
            else:
                acc._add_finite(rows[i], r.numel(), r.numel())
        if pair is None or rows is None or len(rows) == len(actuals):
            return False
        pair[2]._add_finite(rows[-1], r.numel(), r.numel())
        return True

    def _update_masked(self, a: torch.Tensor, r: torch.Tensor) -> ErrorAccumulator:
        """Chunks with NaN/inf: counted, then every metric over the elements finite on both sides,
        computed unmasked with the other elements set to 0 on both sides (0 vs 0 adds nothing to any
        figure); large inputs in one compiled pass (`_metric_kernel.masked_row_stats`). Falls back to
        boolean indexing only if the fp64 difference of two finite values overflows."""
        if self._fmt is None:
            self._fmt = format_of_dtype(a.dtype)
        f = self._fmt
        a, r = _format_nan(a, f), _format_nan(r, f)
        fused = None
        if a.numel() and _metric_kernel.compiled_now((a,), r, f, masked=True):
            fused = _metric_kernel.fused_rows((a,), r, f, lambda got: masked_disagreement(got, a, r, f), masked=True)
        if fused is not None:
            row, counts = fused[0][:9], [int(c) for c in fused[0][9:]]
        else:
            counts, rows = masked_eager(a, r, f, finite_stats)
            row = rows[0] if rows is not None else [math.nan]
        if not math.isfinite(row[0]):
            return self._update_indexed(a, r)
        n = self._n
        self._add_finite(row, a.numel(), counts[0])
        for k, v in zip(("nan_a", "nan_r", "inf_a", "inf_r", "nonfinite"), counts[1:]):
            n[k] += v
        n["mismatches"] += counts[5]
        return self

    def _update_indexed(self, actual: torch.Tensor, reference: torch.Tensor) -> ErrorAccumulator:
        """General path: NaN/inf counted, every metric over the elements finite on both sides."""
        if self._fmt is None:
            self._fmt = format_of_dtype(actual.dtype)
        a = _format_nan(actual, self._fmt).to(torch.float64)
        r = _format_nan(reference, self._fmt).to(torch.float64)
        fin = torch.isfinite(a) & torch.isfinite(r)
        na, nr, ia, ir = torch.isnan(a), torch.isnan(r), torch.isinf(a), torch.isinf(r)
        same_nonfinite = (na & nr) | (ia & ir & (a == r))
        nonfinite_mismatch = ~fin & ~same_nonfinite
        ulps = ulp_distance(a[fin], r[fin], self._fmt)
        err = (a[fin] - r[fin]).abs()
        rf = r[fin]
        nz = rf != 0
        n, s = self._n, self._s
        counts = torch.stack([
            fin.sum(), (ulps > 0).sum() + nonfinite_mismatch.sum(), na.sum(), nr.sum(), ia.sum(), ir.sum(),
            nonfinite_mismatch.sum(), ((rf == 0) & (err != 0)).sum(),
            ulps.max() if ulps.numel() else torch.zeros((), dtype=torch.int64, device=a.device),
        ]).tolist()
        sums = torch.stack([
            ulps.sum().to(torch.float64), bits_of_error(ulps).sum(),
            err.max() if err.numel() else torch.zeros((), dtype=torch.float64, device=a.device),
            (err[nz] / rf[nz].abs()).max() if bool(nz.any()) else torch.zeros((), dtype=torch.float64, device=a.device),
            (rf * rf).sum(), (err * err).sum(),
        ]).tolist()
        n["count"] += a.numel()
        for k, v in zip(("finite", "mismatches", "nan_a", "nan_r", "inf_a", "inf_r", "nonfinite", "zero_ref"), counts):
            n[k] += int(v)
        n["max_ulp"] = max(n["max_ulp"], int(counts[-1]))
        s["ulp"] += sums[0]
        s["bits"] += sums[1]
        s["max_abs"] = max(s["max_abs"], sums[2])
        s["max_rel"] = max(s["max_rel"], sums[3])
        s["sig"] += sums[4]
        s["noise"] += sums[5]
        return self

    def result(self) -> ErrorStats:
        n, s = self._n, self._s
        return _stats(self._fmt.name if self._fmt else "fp32", n["count"], n["finite"], n["mismatches"], n["max_ulp"],
                      s["ulp"], s["bits"], s["max_abs"], s["max_rel"], s["sig"], s["noise"], n["nan_a"], n["nan_r"],
                      n["inf_a"], n["inf_r"], n["nonfinite"], n["zero_ref"])

    @staticmethod
    def of_row(row: Sequence[float], count: int, fmt: Format) -> ErrorStats:
        """``ErrorAccumulator(fmt)`` given one all-finite row of `count` elements (`finite_stats`'), its
        `result()`: the same figures without an accumulator (a per-node decision reads thousands)."""
        max_abs, max_rel, sig, noise, ulp_sum, bits_sum, max_ulp, mism, zero_ref = row
        return _stats(fmt.name, count, count, int(mism), int(max_ulp), 0.0 + ulp_sum, 0.0 + bits_sum,
                      max(0.0, max_abs), max(0.0, max_rel), 0.0 + sig, 0.0 + noise, 0, 0, 0, 0, 0, int(zero_ref))


def _stats(fmt: str, count: int, fin: int, mismatches: int, max_ulp: int, ulp: float, bits: float, max_abs: float,
           max_rel: float, sig: float, noise: float, nan_a: int, nan_r: int, inf_a: int, inf_r: int, nonfinite: int,
           zero_ref: int) -> ErrorStats:
    """`ErrorStats` from an accumulator's counts and sums (the definitions: module docstring)."""
    if noise == 0:
        sqnr = math.inf
    elif sig == 0:
        sqnr = -math.inf
    else:
        sqnr = 10 * math.log10(sig / noise)
    return ErrorStats(
        fmt=fmt, count=count, finite=fin, mismatches=mismatches, max_ulp=max_ulp, mean_ulp=ulp / fin if fin else 0.0,
        max_bits=math.log2(1 + max_ulp), mean_bits=bits / fin if fin else 0.0, max_abs=max_abs, max_rel=max_rel,
        sqnr_db=sqnr, nan_actual=nan_a, nan_reference=nan_r, inf_actual=inf_a, inf_reference=inf_r,
        nonfinite_mismatches=nonfinite, zero_reference=zero_ref, rmse=math.sqrt(noise / fin) if fin else 0.0,
    )


@dataclass
class PendingStats:
    """Metric passes launched, not read (`launch_finite_many`): `tensors()` to read (each 1-D), then
    `finish` with them read: per pair, `compare`'s `ErrorStats`, or None (see `launch_finite_many`)."""

    pairs: Sequence[tuple[torch.Tensor, torch.Tensor, Format]]
    rows: list[tuple[int, torch.Tensor | list[list[float]]]]

    def tensors(self) -> list[torch.Tensor]:
        return [rows.reshape(-1) for _, rows in self.rows if isinstance(rows, torch.Tensor)]

    def finish(self, read: Sequence[Sequence[float]]) -> list[ErrorStats | None]:
        out: list[ErrorStats | None] = [None] * len(self.pairs)
        values = iter(read)
        for i, rows in self.rows:
            row = list(next(values)) if isinstance(rows, torch.Tensor) else rows[0]
            if math.isfinite(row[0]):
                n = self.pairs[i][1].numel()
                out[i] = ErrorAccumulator.of_row(row, n, get_format(self.pairs[i][2]))
        return out


def launch_finite_many(pairs: Sequence[tuple[torch.Tensor, torch.Tensor, Format]]) -> PendingStats:
    """``compare(a, r, f)`` of each pair whose elements are all finite, every pass launched and none
    read, so that one host read serves them all (on CUDA: one sync, not one per pair; the passes queue
    behind work already running). Its result is None for a pair with a NaN/inf element, with more
    elements than one `update` takes (`elements_per_update`), or in a format whose rounding makes NaN
    (fp8 e4m3fn): `compare` those. Figures as `compare`'s: counts and maxima exact, sums to fp64
    summation order."""
    rows: list[tuple[int, torch.Tensor | list[list[float]]]] = []
    for i, (a, r, f) in enumerate(pairs):
        _check_pair(a, r)
        a1, r1 = _flat(a), _flat(r)
        if not r1.numel() or f.overflow is Overflow.NAN or r1.numel() > elements_per_update((a1,), r1, f):
            continue
        rows.append((i, unread_stats((a1,), r1, f)))
    return PendingStats(pairs, rows)


def read_together(tensors: Sequence[torch.Tensor]) -> list[list[float]]:
    """Each 1-D tensor's elements as floats, from one host read per device."""
    by_device: dict[torch.device, list[int]] = {}
    for k, t in enumerate(tensors):
        by_device.setdefault(t.device, []).append(k)
    out: list[list[float]] = [[] for _ in tensors]
    for ks in by_device.values():
        flat = torch.cat([tensors[k].to(torch.float64) for k in ks]).tolist()
        at = 0
        for k in ks:
            out[k], at = flat[at : at + tensors[k].numel()], at + tensors[k].numel()
    return out


def compare(
    actual: torch.Tensor, reference: torch.Tensor, fmt: Format | str | torch.dtype | None = None
) -> ErrorStats:
    """One-shot `ErrorStats` of `actual` against `reference`, ULPs in `fmt` (default: actual's format)."""
    return ErrorAccumulator(fmt).update(actual, reference).result()
