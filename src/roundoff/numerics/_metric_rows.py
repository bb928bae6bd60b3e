"""One pass of error figures over a chunk: the rows `ErrorAccumulator` adds (see `roundoff.numerics.metrics`).

`finite_stats(actuals, r, f)` gives per actual the row [max_abs, max_rel, sum r^2, sum err^2, sum ulps,
sum bits, max_ulp, mismatches, zero_ref] against one flat reference where every element is finite
(eager, or the compiled `_metric_kernel` pass for large inputs: the same figures); `masked_eager` the
NaN/inf counts and those rows over the elements finite on both sides. The definitions are the
module docstring of `roundoff.numerics.metrics`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from roundoff.numerics import _metric_kernel
from roundoff.numerics.formats import Format
from roundoff.numerics.ulps import _TORCH_RNE, _fast_ordinal

_LUT_SIZE = 4096
_SMALL = 1 << 16  # elements below which a pass's cost is its calls, not its arithmetic


_LUTS: dict[torch.device, tuple[torch.Tensor, torch.Tensor]] = {}


def _lut(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """(0, 1, ..., `_LUT_SIZE` - 1) and log2(1 + each), fp64 on `device`: made once per device."""
    if device in _LUTS:
        return _LUTS[device]
    values = torch.arange(_LUT_SIZE, dtype=torch.float64, device=device)
    lut = (values, torch.log2(1 + values))
    if type(values) is torch.Tensor and not torch.compiler.is_compiling():  # not a fake/traced tensor
        _LUTS[device] = lut
    return lut


def _ulp_sums(ulps: torch.Tensor) -> list[torch.Tensor]:
    """Per row of `ulps` (k, n; overwritten): [sum ulps, sum log2(1 + ulps), max ulps, count of ulps != 0], fp64.

    Large inputs whose ulps are all below `_LUT_SIZE` (the common case) are histogrammed (one
    `bincount`) and the sums taken as counts @ values: ulp sums exact, bit sums equal to the
    elementwise sum up to fp64 summation order. Otherwise (and below `_SMALL` elements, where the
    histogram's dozen calls cost more than the arithmetic) the elementwise formulas.
    """
    k, n = ulps.shape
    if ulps.numel() <= _SMALL:  # the elementwise formulas in the fewest calls
        wide = ulps.to(torch.float64)
        sums = [wide.sum(1), None, wide.amax(1), torch.count_nonzero(ulps, dim=1).to(torch.float64)]
        sums[1] = wide.add_(1.0).log2_().sum(1)  # in place, last: no second fp64 copy
        return sums  # type: ignore[return-value]
    umax = ulps.amax(1)
    if not _capturing(ulps) and int(umax.max()) < _LUT_SIZE:  # (a read, and bincount's: not in a CUDA graph)
        off = (torch.arange(k, dtype=ulps.dtype, device=ulps.device) * _LUT_SIZE).unsqueeze(1)
        counts = torch.bincount(ulps.add_(off).reshape(-1), minlength=k * _LUT_SIZE).view(k, _LUT_SIZE)
        counts = counts.to(torch.float64)
        values, bits = _lut(ulps.device)
        return [counts @ values, counts @ bits, umax.to(torch.float64), n - counts[:, 0]]
    bits = ulps.to(torch.float64).add_(1.0).log2_().sum(1)
    return [ulps.sum(1).to(torch.float64), bits, umax.to(torch.float64), (ulps != 0).sum(1).to(torch.float64)]


def _capturing(t: torch.Tensor) -> bool:
    """Whether `t`'s work is being captured into a CUDA graph (no host read may happen)."""
    return t.is_cuda and torch.cuda.is_current_stream_capturing()


def finite_stats(
    actuals: Sequence[torch.Tensor], r: torch.Tensor, f: Format, rounded: torch.Tensor | None = None,
    pair: tuple[int, int] | None = None,
) -> list[list[float]] | None:
    """`eager_finite_stats`, by one compiled fused pass (`_metric_kernel`) for large inputs where it applies.

    Same figures either way: counts and maxima bit for bit, sums to fp64 summation order (and log2
    within an ulp per term); the first call of each compiled variant is checked against the eager path.
    The `pair` row is the eager pass's only (the compiled pass returns one row per actual).
    """
    if _metric_kernel.compiled_now(actuals, r, f):
        def probe(got: list[list[float]]) -> str | None:
            return _metric_kernel.rows_disagree(got, eager_finite_stats(actuals, r, f))

        rows = _metric_kernel.fused_rows(actuals, r, f, probe)
        if rows is not None:
            return rows if all(math.isfinite(row[0]) for row in rows) else None
    return eager_finite_stats(actuals, r, f, rounded, pair)


def _stacked(actuals: Sequence[torch.Tensor]) -> torch.Tensor:
    """The actuals as rows of one tensor (k, n): in their dtype where they share one, else bf16/fp16
    widened to fp32 (exactly)."""
    dtypes = {t.dtype for t in actuals}
    a = actuals[0].unsqueeze(0) if len(actuals) == 1 else torch.stack(
        actuals if len(dtypes) == 1 else [t.to(torch.float32) if t.dtype in _TORCH_RNE else t for t in actuals])
    return a


def _rows(err: torch.Tensor, r64: torch.Tensor, ulps: torch.Tensor, own_reference: bool = False) -> torch.Tensor:
    """The (k, 9) figures of `eager_finite_stats` from |a - r| (k, n; overwritten), the reference in
    fp64 (n,), or one per row (k, n; overwritten where `own_reference`), and the ULP distances (k, n;
    overwritten)."""
    zero = r64 == 0
    k = err.shape[0]
    signal = torch.dot(r64, r64).expand(k) if r64.dim() == 1 else torch.linalg.vecdot(r64, r64)
    absr = r64.abs_() if own_reference else r64.abs()
    if r64.is_cuda or bool(zero.any()):  # rel = err / |r| where r != 0, err / inf = 0 elsewhere (no sync on CUDA)
        absr.masked_fill_(zero, math.inf)
        zero_ref = ((err != 0) & zero).sum(1).to(torch.float64)
    else:  # (the common case, in fewer calls)
        zero_ref = torch.zeros(k, dtype=torch.float64, device=err.device)
    red = [err.amax(1), signal, torch.linalg.vecdot(err, err), zero_ref]
    red.insert(1, err.div_(absr).amax(1))  # in place, last (err is not read after): no third fp64 copy
    red[4:4] = _ulp_sums(ulps)
    return torch.stack(red, 1)


def unread_stats(actuals: Sequence[torch.Tensor], r: torch.Tensor, f: Format) -> torch.Tensor | list[list[float]]:
    """The rows of `finite_stats` (NaN/inf rows included: a row whose max |a - r| is not finite needs
    the masked path) without reading them where that can be helped: a device tensor from the compiled
    kernel or the eager pass (one host sync in the eager pass only above `_SMALL` elements); read
    lists on a compiled variant's first call, which is checked against the eager figures."""
    if _metric_kernel.compiled_now(actuals, r, f):
        rows = _metric_kernel.unread_rows(actuals, r, f)
        if rows is not None:
            return rows
        read = finite_stats(actuals, r, f)  # the first call of a variant: compiled and checked, or eager
        if read is not None:
            return read
    return _eager_rows(actuals, r, f)


def eager_finite_stats(
    actuals: Sequence[torch.Tensor], r: torch.Tensor, f: Format, rounded: torch.Tensor | None = None,
    pair: tuple[int, int] | None = None,
) -> list[list[float]] | None:
    """Per actual: [max_abs, max_rel, sum r^2, sum err^2, sum ulps, sum bits, max_ulp, mismatches, zero_ref]
    against the flat reference `r`, without boolean indexing and with one host sync; None when some
    element of any side is non-finite (nothing is then measured).

    The difference is taken in fp64 (exact for fp32/bf16/fp16 inputs; fp64 inputs round once, as on the
    masked path). A row's max |a - r| is NaN/inf exactly when some element of that actual or of `r` is
    NaN/inf (or the fp64 difference of two finite values overflows): then the caller takes the masked
    path. ULPs: each side rounded to `f` (RNE), ordinals compared; the reference is rounded once, or
    not at all where the caller passes it `rounded` (``round_to(r, f)`` in `f`'s own dtype).
    `pair` = (i, j) appends one row: actual i against actual j as its reference, the same figures as a
    pass of its own, from this pass's conversions and ordinals.
    """
    return _finite_rows(_eager_rows(actuals, r, f, rounded, pair))


def _eager_rows(
    actuals: Sequence[torch.Tensor], r: torch.Tensor, f: Format, rounded: torch.Tensor | None = None,
    pair: tuple[int, int] | None = None,
) -> torch.Tensor:
    """`eager_finite_stats`' rows as an fp64 tensor (k or k + 1, 9), not read."""
    r64 = r.to(torch.float64)
    a = _stacked(actuals)
    # Temporaries are freed as soon as their reductions are taken: peak ~ a + one fp64 copy per row.
    ords = _fast_ordinal(a if a.dtype == f.torch_dtype or a.dtype not in _TORCH_RNE else a.to(torch.float32), f)
    a64 = a.to(torch.float64, copy=True)  # copy: an fp64 `a` is the caller's tensor
    del a
    extra = None
    if pair is not None and a64.shape[1] <= _SMALL:  # one more row, its own reference: one set of calls
        (i, j), (k, n) = pair, a64.shape
        ref_ords = _fast_ordinal(rounded if rounded is not None else r, f).expand(k, n)
        ulps = torch.cat([ords, ords[i : i + 1]]).sub_(torch.cat([ref_ords, ords[j : j + 1]])).abs_()
        refs = torch.cat([r64.expand(k, n), a64[j : j + 1]])
        err = torch.cat([a64, a64[i : i + 1]]).sub_(refs).abs_()
        del a64, ords  # before the figures' temporaries: peak ~ four (k + 1, n) copies
        return _rows(err, refs, ulps, own_reference=True)
    if pair is not None:  # large: the pair's row by a pass of its own (no per-row copies of the reference)
        i, j = pair
        ref = a64[j].clone()
        extra = _rows((a64[i] - ref).abs_().unsqueeze(0), ref, (ords[i] - ords[j]).abs_().unsqueeze(0))
    ulps = ords.sub_(_fast_ordinal(rounded if rounded is not None else r, f)).abs_()
    rows = _rows(a64.sub_(r64).abs_(), r64, ulps)
    del a64, ulps, r64
    return rows if extra is None else torch.cat([rows, extra])


def _finite_rows(rows: torch.Tensor) -> list[list[float]] | None:
    """`rows` as lists (one host read), or None where a row's max |a - r| is NaN/inf."""
    stats = rows.tolist()
    return stats if all(math.isfinite(row[0]) for row in stats) else None


def masked_eager(
    a: torch.Tensor, r: torch.Tensor, f: Format, stats: Callable[..., list[list[float]] | None]
) -> tuple[list[int], list[list[float]] | None]:
    """Counts [finite, NaN in a, NaN in r, inf in a, inf in r, non-finite mismatches] and `stats` of
    the two sides with every element that is not finite on both sides set to 0 (see `_update_masked`)."""
    fa, fr = torch.isfinite(a), torch.isfinite(r)
    fin = fa & fr
    na, nr = torch.isnan(a), torch.isnan(r)
    ia, ir = ~fa & ~na, ~fr & ~nr
    nonfinite_mismatch = ~fin & ~((na & nr) | (ia & ir & (a == r)))
    counts = torch.stack([fin.sum(), na.sum(), nr.sum(), ia.sum(), ir.sum(), nonfinite_mismatch.sum()]).tolist()
    del fa, fr, na, nr, ia, ir, nonfinite_mismatch
    rows = stats((torch.where(fin, a, 0.0),), torch.where(fin, r, 0.0), f) if a.numel() else None
    return counts, rows


def masked_disagreement(got: list[list[float]], a: torch.Tensor, r: torch.Tensor, f: Format) -> str | None:
    """Why the compiled masked row `got` differs from the eager masked figures (None: they agree)."""
    counts, rows = masked_eager(a, r, f, eager_finite_stats)
    if [int(c) for c in got[0][9:]] != counts:
        return f"compiled masked metric kernel counted {got[0][9:]}, eager {counts}, on its first call"
    return _metric_kernel.rows_disagree([got[0][:9]], rows)


