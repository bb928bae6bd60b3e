"""One fused pass for the all-finite metric figures of k actuals against one reference (torch.compile).

`row_stats(actuals, r, f)` returns a (k, 9) fp64 tensor, per actual the row of `_metric_rows.finite_stats`:
[max |a-r|, max |a-r|/|r| (r != 0), sum r^2, sum (a-r)^2, sum ulps, sum log2(1+ulps), max ulps,
count ulps != 0, count (r == 0 and a != r)], written only with elementwise ops and full reductions so
Inductor fuses it into one loop that reads each input once (no temporaries in memory).

Numeric contract (the same as the eager path's, see `roundoff.numerics.metrics`):
- ULPs: each side rounded to `f` with the format's own conversion (`_kernels.kernel`, bit-exact to
  `round_to`; fp64 sources rounded once, no double rounding), then ordinals compared in int64. The
  rounded value is exact in fp32 (f has at most fp32's precision and range), so its ordinal is read
  from fp32 bits (8-bit-exponent formats: the sign-magnitude fp32 ordinal shifted right by the dropped
  mantissa bits, exact since those bits are 0) or from the format's own torch dtype (fp16).
- Differences, |r|, squares in fp64: exact for fp32/bf16/fp16 inputs, so maxima equal the eager
  path's bit for bit; sums differ only by fp64 summation order. The bit sum takes one log2 per row
  of `_ROW` elements (`_bits_sum`: exact exponents plus the log2 of a product of mantissas), which
  agrees with the elementwise sum to the same order; log2 per element was over half the kernel's time.
- Reductions run in two stages (rows of `_ROW` elements, then over rows; `_grids`), which Inductor
  vectorises on CPU and spreads over blocks on CUDA.
- Counts use integer arithmetic on bit patterns (``min(bits(|x|), 1)`` is 1 iff x != 0, for x >= 0
  and -0.0 alike), not boolean reductions, which Inductor's CPU code runs several times slower.
- NaN/inf inputs make the row's max |a-r| NaN/inf; the caller then discards the row (masked path).

`fused_rows` runs the compiled kernel for inputs of at least `FUSED_MIN_NUMEL` elements (on the host once
`COMPILE_AFTER` says the variant has earned its compilation): one graph per
(k, dtypes, format), dynamic in the length, compiled on first use (seconds) and checked against the
eager figures on that first call; a failure or disagreement is recorded (`fused_status`) and the
caller's eager path is used from then on.
"""

from __future__ import annotations

import functools
import math
import types
from collections.abc import Callable, Sequence

import torch

from roundoff.numerics._kernels import SOURCES, RoundingMode, kernel
from roundoff.numerics.compile_after import CompileAfter
from roundoff.numerics.formats import Format

#: Inputs of at least this many elements take the compiled kernel. Below it, compile latency and the
#: per-call guard cost outweigh the gain; the zoo's programs and the test suite stay below it.
FUSED_MIN_NUMEL = 1 << 17

#: On the host a variant is compiled once the eager path has covered this many elements (per actual) of
#: it in the process: about 16 s of eager figures on a 2-core CPU, where compiling costs 8 s with
#: Inductor's cache warm and about a minute cold (`roundoff.numerics.compile_after`).
COMPILE_AFTER = CompileAfter(1 << 29)

#: Formats the kernel computes ordinals for (fp32-exact, with an 8-bit exponent or a torch dtype).
FUSED_FORMATS = ("fp32", "tf32", "bf16", "fp16")

_WIDE = (torch.float32, torch.float64)

#: variant name -> why the compiled kernel is not used for it (a failed compile or probe).
_FAILED: dict[str, str] = {}
_OK: set[str] = set()


def _ordinals(x: torch.Tensor, f: Format) -> torch.Tensor:
    """int64 ordinals in `f` of `x` rounded to `f` with f's own conversion (finite `x`)."""
    if x.dtype not in _WIDE:
        x = x.to(torch.float32)  # bf16/fp16 values are exact in fp32
    src = SOURCES[x.dtype]
    if f.mantissa_bits < src.frac or f.exponent_bits < src.exp_bits:
        x = kernel(x, src, f, RoundingMode(f.rounding), branchless=True)
    v = x.to(torch.float32)  # exact: representable in f
    if f.exponent_bits == 8:
        bits, width, shift = v.view(torch.int32), 32, 23 - f.mantissa_bits
    else:
        assert f.torch_dtype is not None and f.bits == 16
        bits, width, shift = v.to(f.torch_dtype).view(torch.int16).to(torch.int32), 16, 0
    sign = torch.bitwise_right_shift(bits, 31)  # 0 or -1 (int16 patterns sign-extended)
    mag = torch.bitwise_and(bits, (1 << (width - 1)) - 1)
    ords = torch.bitwise_xor(mag, sign) - sign  # -mag where the sign bit is set
    return torch.bitwise_right_shift(ords, shift).to(torch.int64)


def _nonzero(x: torch.Tensor) -> torch.Tensor:
    """1 where fp64 `x` (>= 0 or ±0.0 after abs) is nonzero, else 0 (int64, no comparison)."""
    return x.view(torch.int64).clamp(max=1)


#: Elements per row of the two-stage reductions. A row's product of mantissas in [sqrt(1/2), sqrt(2))
#: lies in [2**-512, 2**512] (`_bits_sum`), inside fp64's normal range.
_ROW = 1024

#: Row fields of `row_stats` that are maxima (the others are sums or counts).
_MAX_FIELDS = (True, True, False, False, False, False, True, False, False)


def _grids(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """1-D `x` (at least `_ROW` elements) as its ``n // _ROW`` full rows and one last row: its last
    `_ROW` elements, set to 0 where they overlap the full rows (a 0 on both sides adds nothing)."""
    n = x.shape[0]
    m = n // _ROW
    last = x[n - _ROW :]
    keep = torch.arange(_ROW, device=x.device) >= m * _ROW - (n - _ROW)
    return x[: m * _ROW].view(m, _ROW), torch.where(keep, last, torch.zeros((), dtype=x.dtype, device=x.device))


def _bits_sum(ud: torch.Tensor) -> torch.Tensor:
    """sum log2(1 + u) over the (m, _ROW) fp64 integers `ud` (< 2**53), with one log2 per row.

    ``1 + u = 2**e * c`` exactly, c in [sqrt(1/2), sqrt(2)) (from the bits; c > sqrt(2) halved, e + 1),
    so the sum is ``sum e`` (exact) plus ``sum over rows of log2(prod c)``. Each product rounds once per
    factor that is not a power of two (the factors of u = 0 or 2**j - 1 are exactly 1 and multiply
    exactly); relative error per rounding 2**-53 is an absolute error of at most 1.6e-16 in the log,
    while each such element adds at least log2(3) to the sum: the result agrees with the elementwise
    sum to fp64 summation-order accuracy.
    """
    v = (ud + 1.0).view(torch.int64)
    e = torch.bitwise_right_shift(v, 52) - 1023
    c = torch.bitwise_or(torch.bitwise_and(v, (1 << 52) - 1), 1023 << 52).view(torch.float64)
    big = c > math.sqrt(2.0)
    c = torch.where(big, c * 0.5, c)
    e = e + big.to(torch.int64)
    return e.sum(-1).sum().to(torch.float64) + torch.log2(c.prod(-1)).sum()


def _grid_rows(actuals: Sequence[torch.Tensor], r: torch.Tensor, f: Format) -> torch.Tensor:
    """(k, 9) rows (see `row_stats`) over 2-D grids of equal shape, reduced along rows, then over them."""
    r64 = r.to(torch.float64)
    absr = r64.abs()
    ref_zero = 1 - _nonzero(absr)
    r_ords = _ordinals(r, f)
    sig = torch.sum(r64 * r64, -1).sum()
    rows = []
    for a in actuals:
        ulps = (_ordinals(a, f) - r_ords).abs()
        err = (a.to(torch.float64) - r64).abs()
        rel = torch.where(ref_zero == 0, err / absr, 0.0)
        ud = ulps.to(torch.float64)
        rows.append(torch.stack([
            err.amax(-1).amax(), rel.amax(-1).amax(), sig, torch.sum(err * err, -1).sum(), ud.sum(-1).sum(),
            _bits_sum(ud), ud.amax(-1).amax(), ulps.clamp(max=1).sum(-1).sum().to(torch.float64),
            (_nonzero(err) * ref_zero).sum(-1).sum().to(torch.float64),
        ]))
    return torch.stack(rows)


def row_stats(actuals: Sequence[torch.Tensor], r: torch.Tensor, f: Format) -> torch.Tensor:
    """(k, 9) fp64 rows of `finite_stats` for 1-D `actuals` against 1-D `r` of at least `_ROW`
    elements (see module doc): two-stage reductions over `_ROW`-element rows (`_grids`)."""
    if r.shape[0] < _ROW:
        raise ValueError(f"row_stats needs at least {_ROW} elements, got {r.shape[0]}; use the eager path")
    grids = [_grids(t) for t in (*actuals, r)]
    full = _grid_rows([g[0] for g in grids[:-1]], grids[-1][0], f)
    last = _grid_rows([g[1] for g in grids[:-1]], grids[-1][1], f)
    is_max = torch.tensor(_MAX_FIELDS, device=full.device)
    return torch.where(is_max, torch.maximum(full, last), full + last)


def _classes(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """int64 indicators (0/1) of NaN and of inf in `x`, and its sign bit (integer ops on the bits)."""
    src = SOURCES[torch.float64 if x.dtype == torch.float64 else torch.float32]
    bits = (x if x.dtype in _WIDE else x.to(torch.float32)).view(src.int_dtype).to(torch.int64)
    mag = torch.bitwise_and(bits, src.abs_mask)
    nan = (mag - src.inf).clamp(0, 1)  # magnitude above inf's pattern
    nonfinite = (mag - src.inf + 1).clamp(0, 1)
    return nan, nonfinite - nan, torch.bitwise_right_shift(bits, 63).neg()


def masked_row_stats(a: torch.Tensor, r: torch.Tensor, f: Format) -> torch.Tensor:
    """(1, 15) fp64: `row_stats` over the elements finite on both sides (the others zeroed on both
    sides, which adds nothing to any figure), then the counts [finite, NaN in a, NaN in r, inf in a,
    inf in r, non-finite mismatches] of `metrics.ErrorAccumulator._update_masked`."""
    nan_a, inf_a, sign_a = _classes(a)
    nan_r, inf_r, sign_r = _classes(r)
    fin = (1 - nan_a - inf_a) * (1 - nan_r - inf_r)
    same = nan_a * nan_r + inf_a * inf_r * (1 - torch.bitwise_xor(sign_a, sign_r))  # NaN & NaN, or one inf
    mismatch = (1 - fin) * (1 - same)
    keep = fin == 1
    row = row_stats((torch.where(keep, a, 0.0),), torch.where(keep, r, 0.0), f)
    counts = torch.stack([t.sum() for t in (fin, nan_a, nan_r, inf_a, inf_r, mismatch)]).to(torch.float64)
    return torch.cat([row, counts.unsqueeze(0)], 1)


def _variant(k: int, dtypes: tuple[torch.dtype, ...], f: Format) -> str:
    names = "_".join(str(d).removeprefix("torch.") for d in dtypes)
    kind = "masked" if k == 0 else f"rows_{k}"
    return f"metric_{kind}_{names}_in_{f.name}"


@functools.cache
def _compiled(k: int, dtypes: tuple[torch.dtype, ...], f: Format) -> Callable[..., torch.Tensor]:
    """k actuals and the reference -> `row_stats`; k == 0: one actual and the reference -> `masked_row_stats`."""
    def rows(*tensors: torch.Tensor) -> torch.Tensor:
        if k == 0:
            return masked_row_stats(tensors[0], tensors[1], f)
        return row_stats(tensors[:-1], tensors[-1], f)

    # One code object per variant: Dynamo keeps a few graphs per code object, so variants sharing one
    # would evict each other (see rounding._compiled).
    name = _variant(k, dtypes, f)
    code = rows.__code__.replace(co_name=name)
    fn = types.FunctionType(code, rows.__globals__, name, rows.__defaults__, rows.__closure__)
    return torch.compile(fn)


def _eligible(actuals: Sequence[torch.Tensor], r: torch.Tensor, f: Format, masked: bool) -> str | None:
    """The variant the compiled kernel would run for these inputs, None where it cannot (small, another
    format or dtype, inside a compiled region, or the variant failed)."""
    k = 0 if masked else len(actuals)
    name = _variant(k, tuple(t.dtype for t in (*actuals, r)), f)
    ok = (
        r.numel() >= FUSED_MIN_NUMEL
        and f.name in FUSED_FORMATS
        and not torch.compiler.is_compiling()
        and all(t.dtype in (*_WIDE, torch.bfloat16, torch.float16) for t in (*actuals, r))
        and name not in _FAILED
    )
    return name if ok else None


def applies(actuals: Sequence[torch.Tensor], r: torch.Tensor, f: Format, masked: bool = False) -> bool:
    """Whether `fused_rows` would run the compiled kernel for these inputs (on the host only once the
    eager path has covered `COMPILE_AFTER`'s elements of their variant)."""
    name = _eligible(actuals, r, f, masked)
    return name is not None and COMPILE_AFTER.due(name, r)


def compiled_now(actuals: Sequence[torch.Tensor], r: torch.Tensor, f: Format, masked: bool = False) -> bool:
    """`applies`, for the caller about to compute these figures: where the variant is not yet due on the host,
    the eager pass it is about to make is counted toward compiling it (`COMPILE_AFTER`)."""
    name = _eligible(actuals, r, f, masked)
    if name is None:
        return False
    if COMPILE_AFTER.due(name, r):
        return True
    COMPILE_AFTER.count(name, r.numel() * max(1, len(actuals)))
    return False


def fused_rows(
    actuals: Sequence[torch.Tensor], r: torch.Tensor, f: Format, check: Callable[[list[list[float]]], str | None],
    masked: bool = False,
) -> list[list[float]] | None:
    """`row_stats` (`masked`: `masked_row_stats` of one actual) compiled, as lists; None where the
    compiled kernel is not used (see module doc).

    `check` is called with the rows of a variant's first call and returns why they are wrong (None if
    they are right); a compile error or a wrong probe disables that variant for the process. Rows whose
    max |a-r| is NaN/inf are returned unchecked (the caller does not use them).
    """
    k = 0 if masked else len(actuals)
    name = _variant(k, tuple(t.dtype for t in (*actuals, r)), f)
    got = _run(k, actuals, r, f)
    if got is None:
        return None
    rows = got.tolist()
    if name not in _OK and all(math.isfinite(row[0]) for row in rows):
        why = check(rows)
        if why is not None:
            _FAILED[name] = why
            return None
        _OK.add(name)
    return rows


def unread_rows(actuals: Sequence[torch.Tensor], r: torch.Tensor, f: Format) -> torch.Tensor | None:
    """`row_stats` by the compiled kernel as a device tensor, not read, where a variant `fused_rows`
    has already checked against the eager figures applies; else None (the caller reads another way).
    A compile failure at a length not met before (a recompilation) disables the variant, as in `fused_rows`."""
    if not applies(actuals, r, f) or _variant(len(actuals), tuple(t.dtype for t in (*actuals, r)), f) not in _OK:
        return None
    return _run(len(actuals), actuals, r, f)


def _run(k: int, actuals: Sequence[torch.Tensor], r: torch.Tensor, f: Format) -> torch.Tensor | None:
    """The compiled variant's rows (`k` actuals; 0: masked), not read; None where its compilation or call
    fails, which disables the variant for the process with the reason kept (eager is used)."""
    dtypes = tuple(t.dtype for t in (*actuals, r))
    tensors = [t.contiguous() for t in (*actuals, r)]
    for t in tensors:
        torch._dynamo.maybe_mark_dynamic(t, 0)  # one graph for all lengths
    try:
        return _compiled(k, dtypes, f)(*tensors)
    except Exception as e:  # noqa: BLE001 - any compiler failure means "use eager"; the reason is kept
        name = _variant(k, dtypes, f)
        _OK.discard(name)
        _FAILED[name] = f"{type(e).__name__}: {str(e).strip()[:300]}"
        return None


#: Row fields of `row_stats` that are sums (compared to a relative tolerance, the rest exactly).
_SUM_FIELDS = (2, 3, 4, 5)


def rows_disagree(got: list[list[float]], want: list[list[float]] | None) -> str | None:
    """Why compiled rows `got` differ from eager rows `want` (None: equal counts and maxima, sums to
    1e-9 relative; `want` None means the eager path saw NaN/inf, so `got` must not be finite)."""
    if want is None:
        return None if not all(math.isfinite(row[0]) for row in got) else "finite rows where eager saw NaN/inf"
    for i, (g, w) in enumerate(zip(got, want)):
        for j, (x, y) in enumerate(zip(g, w)):
            ok = math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-300) if j in _SUM_FIELDS else x == y
            if not ok:
                return f"compiled metric kernel disagreed with the eager path on its first call (row {i}, field {j}: {x} vs {y})"
    return None


def fused_status() -> dict[str, str]:
    """Compiled metric variants used so far: name -> "ok" or why it is not used."""
    return {**{n: "ok" for n in sorted(_OK)}, **dict(sorted(_FAILED.items()))}
