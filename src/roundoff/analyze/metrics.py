"""Per-node error metrics of one value against a reference value: a thin adapter over `roundoff.numerics`.

`measure(actual, reference, dtype)` is ``roundoff.numerics.compare(actual, reference, fmt)`` (the one
implementation of ULPs, bits, abs/rel error, SQNR and NaN/Inf counts; see its contract) with the
result under the field names the report layer reads (`Metrics`). `fmt` is the format of `dtype`, the
value's storage dtype (fp32 for dtypes roundoff has no format for), fed through numerics'
`ErrorAccumulator` in chunks of `numerics.metrics.elements_per_update` elements (counts and maxima exact; sums in fp64 per chunk).
In short:

- ULPs by ordinal distance in `fmt` after rounding both sides to it (RNE); -0.0 == 0.0.
- Elements where either side is NaN or inf are left out of the ULP/abs/rel/SQNR figures and counted
  separately; a non-finite element that differs between the sides counts as a mismatch.
- bits of error ``log2(1 + ulps)``; SQNR in dB (inf when the error is 0).
- Scale-aware figures (what ranks and judges a node; ULPs do not, since values near zero make
  ULP counts huge for tiny errors): `rmse` over finite elements, `norm_rel` the normwise relative
  error ``||a - r||_2 / ||r||_2`` (from the SQNR), `excess` the node's error over what its format
  can do and `new_nonfinite` the elements NaN/inf where the reference is finite (both filled in by
  `roundoff.analyze.verdict`; see there).

Fast path: when `actual` and `reference` are equal element for element (``torch.equal``, which is
never true when a NaN is present, even for one tensor compared with itself), the metrics are those of an exact match (zero error, inf
counted on both sides) without an elementwise pass; `compare` gives the same figures there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import torch

from roundoff.numerics import FORMATS, Format, get_format, round_to
from roundoff.numerics.chunks import combined_norm, slices
from roundoff.numerics.metrics import (
    ErrorAccumulator,
    ErrorStats,
    PendingStats,
    elements_per_update,
    launch_finite_many,
    read_together,
)


def _ulp_format(dtype: torch.dtype) -> Format:
    """The format ULPs are counted in: `dtype`'s own, fp32's for a dtype without one (integers, bool)."""
    try:
        return get_format(dtype)
    except ValueError:
        return FORMATS["fp32"]


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
    rmse: float = 0.0
    excess: float | None = field(default=None, compare=False)
    new_nonfinite: int = field(default=0, compare=False)

    @property
    def nonfinite(self) -> int:
        return self.nan + self.inf

    @property
    def norm_rel(self) -> float:
        """Normwise relative error ``||a - r||_2 / ||r||_2`` over finite elements (0: no error;
        inf: the reference is all zeros and the value is not)."""
        if self.sqnr_db == math.inf:
            return 0.0
        return math.inf if self.sqnr_db == -math.inf else 10.0 ** (-self.sqnr_db / 20.0)

    @property
    def exact(self) -> bool:
        """True when every element matches (same bits in the format; same NaN/inf placement)."""
        return self.mismatch_fraction == 0.0 and self.max_abs == 0.0

    def to_dict(self) -> dict[str, float | int | str | None]:
        d = {**asdict(self), "norm_rel": self.norm_rel}
        return {k: (v if not isinstance(v, float) or math.isfinite(v) else str(v)) for k, v in d.items() if v is not None}


def from_stats(s: ErrorStats) -> Metrics:
    """`Metrics` under analyze's field names from numerics' `ErrorStats`."""
    return Metrics(
        numel=s.count, max_ulp=float(s.max_ulp), mean_ulp=s.mean_ulp, max_bits=s.max_bits, mean_bits=s.mean_bits,
        max_abs=s.max_abs, max_rel=s.max_rel, mismatch_fraction=s.mismatch_fraction, sqnr_db=s.sqnr_db,
        nan=s.nan_actual, inf=s.inf_actual, ref_nan=s.nan_reference, ref_inf=s.inf_reference, rmse=s.rmse,
    )


def exact_metrics(value: torch.Tensor, infinities: int | None = None) -> Metrics:
    """Metrics of `value` against itself (no NaN in it): zero error, its infinities on both sides
    (counted, or `infinities` where the caller knows them)."""
    n = value.numel()
    inf = infinities if infinities is not None else int(torch.count_nonzero(value.isinf())) if n else 0
    return Metrics(n, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, math.inf, 0, inf, 0, inf)


def norm_rels(values: Sequence[torch.Tensor], reference: torch.Tensor) -> list[float]:
    """``Metrics.norm_rel`` of each of `values` against `reference` alone (no ULP figures): ``||v - r||_2
    / ||r||_2`` over the elements finite on both sides, in fp64; 0.0 without error, inf when the
    reference is all zeros there and the value is not. One host read where every element is finite."""
    found = norm_rels_from(norm_figures(values, reference).tolist())
    if found is not None:
        return found
    ref = reference.double().reshape(-1)
    errs, scales = [], []  # (a NaN/inf element makes its norm NaN/inf)
    for v in values:
        d = v.double().reshape(-1) - ref
        finite = d.isfinite()
        errs.append(float(torch.linalg.vector_norm(d[finite])))
        scales.append(float(torch.linalg.vector_norm(ref[finite])))
    return _ratios(errs, scales)


def rounding_norm_rel(reference: torch.Tensor, fmt: Format) -> float:
    """``norm_rels((round_to(reference, fmt),), reference)[0]``: the normwise relative error of `fmt`'s own
    rounding of `reference`. Host tensors past one slice (`chunks.slices`) by `rounding_norms`; else exactly
    `norm_rels`."""
    if len(list(slices(reference))) == 1:
        return norm_rels((round_to(reference, fmt),), reference)[0]
    err, scale = rounding_norms(reference, fmt)
    return _ratios([err], [scale])[0]


def rounding_norms(reference: torch.Tensor, fmt: Format) -> tuple[float, float]:
    """(``||round_to(reference, fmt) - reference||_2``, ``||reference||_2``) in fp64 over the elements finite on
    both sides; host tensors rounded a slice at a time (one slice's copies, not the tensor's), the slices'
    norms combined."""
    errs, scales = [], []
    for (part,) in slices(reference):
        ref = part.double().reshape(-1)  # (bf16/fp16 values exactly: round_to takes fp32/fp64)
        d = round_to(ref, fmt) - ref  # (out of place: round_to may return its fp64 input)
        finite = d.isfinite()  # (as `norm_rels`: elements finite on both sides)
        everywhere = bool(finite.all())
        errs.append(float(torch.linalg.vector_norm(d if everywhere else d[finite])))
        scales.append(float(torch.linalg.vector_norm(ref if everywhere else ref[finite])))
    return combined_norm(errs), combined_norm(scales)


def norm_figures(values: Sequence[torch.Tensor], reference: torch.Tensor) -> torch.Tensor:
    """`norm_rels`' norms, not read: each value's distance from `reference`, then the reference's (fp64).
    One fp64 temporary of the values' size at a time (a value's copy, its difference taken in place); on
    the host past one slice (`chunks.slices`), of a slice's size, the slices' norms combined."""
    parts = list(slices(*values, reference))
    figures = [_norm_figures(p[:-1], p[-1]) for p in parts]
    return figures[0] if len(figures) == 1 else torch.stack(figures).square().sum(0).sqrt()


def _norm_figures(values: Sequence[torch.Tensor], reference: torch.Tensor) -> torch.Tensor:
    ref = reference.double().reshape(-1)
    norms = [torch.linalg.vector_norm(v.to(torch.float64, copy=True).reshape(-1).sub_(ref)) for v in values]
    return torch.stack([*norms, torch.linalg.vector_norm(ref)])


def norm_rels_from(figures: Sequence[float]) -> list[float] | None:
    """`norm_rels` from `norm_figures` read; None where some element was NaN/inf (`norm_rels` masks)."""
    if not all(math.isfinite(f) for f in figures):
        return None
    return _ratios(list(figures[:-1]), [figures[-1]] * (len(figures) - 1))


def _ratios(errs: Sequence[float], scales: Sequence[float]) -> list[float]:
    return [0.0 if err == 0.0 else err / scale if scale else math.inf for err, scale in zip(errs, scales)]


def measure_each(
    actuals: Sequence[torch.Tensor], reference: torch.Tensor, dtype: torch.dtype, rounded: torch.Tensor | None = None,
    pair: tuple[int, int] | None = None,
) -> tuple[Metrics, ...]:
    """``measure(a, reference, dtype)`` for each of `actuals`, the reference converted and rounded once per chunk.

    Same figures as `measure` (counts/maxima exact, sums to fp64 summation order); an actual equal to
    the reference element for element gets `exact_metrics` without a pass. `rounded`: the reference
    already rounded to `dtype`'s format (any float dtype holding those values), so it is not rounded again.
    `pair` = (i, j): one more result, ``measure(actuals[i], actuals[j], dtype)``, from the same pass
    where it can share it (one chunk, every element finite), else by a pass of its own.
    """
    for a in actuals:
        _check_tensors(a, reference)
    fmt = _ulp_format(dtype)
    out: list[Metrics | None] = [
        exact_metrics(a) if a.dtype == reference.dtype and torch.equal(a, reference) else None for a in actuals
    ]
    todo = [i for i, m in enumerate(out) if m is None]
    paired = None
    if todo:
        flat = [actuals[i].detach().reshape(-1) for i in todo]
        r = reference.detach().reshape(-1)
        accs = [ErrorAccumulator(fmt) for _ in todo]
        step = elements_per_update(flat, r, fmt)  # bounds the pass's temporaries (see there)
        held = None
        if rounded is not None and fmt.torch_dtype is not None:
            held = rounded.detach().reshape(-1).to(fmt.torch_dtype)  # exact: the values are in the format
        shared = None
        if pair is not None and step >= r.numel() and pair[0] in todo and pair[1] in todo:
            shared = (todo.index(pair[0]), todo.index(pair[1]), ErrorAccumulator(fmt))
        for i in range(0, max(r.numel(), 1), step):
            if ErrorAccumulator.update_each(accs, [a[i : i + step] for a in flat], r[i : i + step],
                                            None if held is None else held[i : i + step], shared):
                paired = from_stats(shared[2].result())  # type: ignore[index]
        for i, acc in zip(todo, accs):
            out[i] = from_stats(acc.result())
    measured = tuple(m for m in out if m is not None)
    if pair is None:
        return measured
    return (*measured, paired if paired is not None else measure(actuals[pair[0]], actuals[pair[1]], dtype))


def _check_tensors(actual: torch.Tensor, reference: torch.Tensor) -> None:
    if not isinstance(actual, torch.Tensor) or not isinstance(reference, torch.Tensor):
        raise TypeError(
            f"measure() compares two tensors, got {type(actual).__name__} and {type(reference).__name__}"
        )
    if actual.shape != reference.shape:
        raise ValueError(
            f"cannot compare shapes {tuple(actual.shape)} and {tuple(reference.shape)}; pass tensors of one shape"
        )


def measure_many(
    triples: Sequence[tuple[torch.Tensor, torch.Tensor, torch.dtype]], extra: Sequence[torch.Tensor] = (),
) -> tuple[list[Metrics], list[float]]:
    """``measure(actual, reference, dtype)`` for each triple: the all-finite ones from one host read for
    all, every pass launched first (`launch_many`), the others by `measure` one by one; and the
    elements of `extra` (device scalars/vectors) from the same read. The same figures as `measure`
    (counts and maxima exactly, sums to fp64 summation order)."""
    pending = launch_many(triples)
    tensors = pending.tensors()
    values = read_together([*tensors, *(t.reshape(-1) for t in extra)])
    return pending.finish(values[: len(tensors)]), [v for t in values[len(tensors):] for v in t]


@dataclass
class PendingMetrics:
    """`measure_many`'s passes launched, not read: read `tensors()` (1-D each), then `finish` with them."""

    triples: Sequence[tuple[torch.Tensor, torch.Tensor, torch.dtype]]
    stats: PendingStats

    def tensors(self) -> list[torch.Tensor]:
        return self.stats.tensors()

    def finish(self, read: Sequence[Sequence[float]]) -> list[Metrics]:
        """Each triple's `Metrics` (a triple with a NaN/inf element measured now, by `measure`)."""
        found = self.stats.finish(read)
        return [from_stats(s) if s is not None else measure(a, r, dtype) for s, (a, r, dtype) in zip(found, self.triples)]


def launch_many(triples: Sequence[tuple[torch.Tensor, torch.Tensor, torch.dtype]]) -> PendingMetrics:
    """`measure_many`'s passes launched for every triple, nothing read (capturable in a CUDA graph)."""
    for a, r, _ in triples:
        _check_tensors(a, r)
    return PendingMetrics(triples, launch_finite_many([(a, r, _ulp_format(dtype)) for a, r, dtype in triples]))


def rounding_error(reference: torch.Tensor, dtype: torch.dtype) -> Metrics:
    """``measure(round_to(reference, f), reference, dtype)``, f `dtype`'s format: the format's own rounding of
    `reference`, rounded a chunk at a time where `measure` chunks (one chunk's copy, not the tensor's); the
    same figures."""
    fmt, ulps = get_format(dtype), _ulp_format(dtype)
    r = reference.detach().reshape(-1)
    step = elements_per_update((r,), r, ulps)
    if r.numel() <= step:
        return measure(round_to(reference, fmt), reference, dtype)
    acc, same = ErrorAccumulator(ulps), True
    for i in range(0, r.numel(), step):
        part = r[i : i + step]
        rounded = round_to(part, fmt)
        same = same and torch.equal(rounded, part)
        acc.update(rounded, part)
    return exact_metrics(reference) if same else from_stats(acc.result())


def measure(actual: torch.Tensor, reference: torch.Tensor, dtype: torch.dtype) -> Metrics:
    """Metrics of `actual` against `reference`, both float tensors of one shape, ULPs in `dtype`'s format."""
    _check_tensors(actual, reference)
    fmt = _ulp_format(dtype)
    if actual.dtype == reference.dtype and torch.equal(actual, reference):
        return exact_metrics(actual)
    a, r = actual.detach().reshape(-1), reference.detach().reshape(-1)
    acc = ErrorAccumulator(fmt)
    step = elements_per_update((a,), r, fmt)
    for i in range(0, max(a.numel(), 1), step):
        acc.update(a[i : i + step], r[i : i + step])
    return from_stats(acc.result())
