"""Exact rounding of fp32/fp64 tensors to any `Format`, returned in the source dtype (fake quantization).

Contract of `round_to(x, fmt, mode)`:
- `x` is an fp32 or fp64 tensor (CPU or CUDA); the result has x's dtype, shape and device, and every
  element is exactly representable in `fmt`.
- Finite values are rounded once, from their exact value, with `mode`. Subnormals of `fmt` are produced
  (gradual underflow, no flush to zero); subnormal inputs are honoured (no DAZ).
- Overflow (rounded magnitude beyond max finite, or an inf input): for the nearest modes the format's
  `Overflow` (inf / ±max finite / NaN); for TOWARD_ZERO and TO_ODD a finite input gives ±max finite
  (IEEE directed rounding); an inf input gives inf where the format has one, else what its `Overflow` says.
- NaN stays NaN: a quiet NaN whose sign and payload are unspecified (they differ between the eager and
  compiled kernels and between devices, as torch's own casts' do). -0.0 stays -0.0, except in ``fnuz`` formats,
  which have no -0.0: any result of magnitude zero is +0.0 (as torch's casts do).
- fp64 sources: the default is the correctly rounded result. torch's own fp64 -> bf16/fp16/fp8 casts
  (CPU, torch 2.13) go through fp32 first, i.e. round twice; ``torch_compatible=True`` reproduces that
  (round to fp32 with RNE, then to `fmt`). fp64 -> fp32 is a single rounding either way.
- tf32 (no torch dtype): the default mode is the format's own conversion, round to nearest with ties
  away from zero, which is what CUDA's ``__float_to_tf32`` / PTX ``cvt.rna.tf32.f32`` and CUTLASS's
  default ``round_half_ulp_truncate`` do. Tensor cores fed raw fp32 read only the top 10 mantissa bits
  (truncation, PyTorch's numerical-accuracy notes); pass ``mode=RoundingMode.TOWARD_ZERO`` for that.

Implementation: `_kernels.kernel` works on the tensor's int32/int64 view (torch ops only, so CUDA
works; see `round_magnitude` for the bit trick), with an exact float path for the target's subnormal
range. The eager path uses the cheaper `_eager` kernels where they apply (nearest-even to bf16, fp16,
fp8_e5m2, saturating fp8_e4m3fn: a few in-place passes) and `kernel` elsewhere; CPU tensors go in
cache-sized chunks; fp64 -> fp32 to nearest even is torch's own conversion (IEEE, one rounding). The compiled path runs `kernel` through `torch.compile` (one fused loop / Triton
kernel per format, mode and dtype, dynamic in the length; compiled on first use, which costs seconds,
then close to memory bandwidth). ``fused=None`` picks the compiled path for large tensors only, and on
the host only once the process has rounded enough of them to earn the compilation (`COMPILE_AFTER`).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable

import torch

from roundoff.numerics._eager import (
    bf16_applies,
    bf16_nearest_even,
    magic_applies,
    magic_nearest_even,
)
from roundoff.numerics._kernels import SOURCES, RoundingMode, Source, kernel
from roundoff.numerics.compile_after import CompileAfter
from roundoff.numerics.formats import Format, get_format

__all__ = ["FUSED_MIN_NUMEL", "RoundingMode", "fused_status", "round_to"]


def _check_input(x: object, fmt: Format) -> Source:
    if not isinstance(x, torch.Tensor):
        raise TypeError(
            f"round_to expects a torch.Tensor, got {type(x).__name__}; wrap it: torch.tensor(...)"
        )
    if x.dtype not in SOURCES:
        raise TypeError(
            f"round_to accepts fp32 or fp64 tensors, got dtype {x.dtype}; "
            "cast floating inputs with x.float() first (integer, bool and complex tensors are not rounded)"
        )
    src = SOURCES[x.dtype]
    if fmt.mantissa_bits > src.frac or fmt.exponent_bits > src.exp_bits:
        raise ValueError(
            f"cannot round a {x.dtype} tensor to {fmt.name}: the source is narrower than the target; "
            f"use an fp64 tensor (x.double()) for {fmt.name}"
        )
    return src


#: CPU tensors are rounded in chunks of this many elements, so temporaries stay in cache and are reused.
_CHUNK = 1 << 18

#: With ``fused=None`` the compiled kernel is used from this many elements on (below it, compile
#: latency and per-call guard overhead outweigh the gain; the executor rounds many small tensors).
FUSED_MIN_NUMEL = 1 << 20

#: On the host a variant is compiled once the eager kernel has rounded this many of its elements in the
#: process (a few seconds of eager rounding; compiling costs 3-8 s with Inductor's cache warm, far more
#: cold: `roundoff.numerics.compile_after`).
COMPILE_AFTER = CompileAfter(1 << 31)

#: (device type, variant) -> why the compiled kernel is not used there; filled by failed probes.
_FUSED_FAILED: dict[tuple[str, str], str] = {}
#: device types on which a compiled kernel ran and matched the eager kernel.
_FUSED_OK: set[tuple[str, str]] = set()


def _variant_name(src_dtype: torch.dtype, fmt: Format, mode: RoundingMode) -> str:
    return f"round_{str(src_dtype).removeprefix('torch.')}_to_{fmt.name}_{mode.value}"


@functools.cache
def _compiled(
    src_dtype: torch.dtype, fmt: Format, mode: RoundingMode
) -> Callable[[torch.Tensor], torch.Tensor]:
    src = SOURCES[src_dtype]

    def rounded(x: torch.Tensor) -> torch.Tensor:
        return kernel(x, src, fmt, mode, branchless=True)

    # Dynamo keeps its compiled graphs on the code object, at most a few per object (recompile limit):
    # one code object per (dtype, format, mode) stops variants from evicting each other into eager.
    name = _variant_name(src_dtype, fmt, mode)
    code = rounded.__code__.replace(co_name=name)
    variant = types.FunctionType(
        code, rounded.__globals__, name, rounded.__defaults__, rounded.__closure__
    )
    # Not dynamic=True: torch 2.11 then turns the kernel's integer constants into symbols and fails on
    # `1 << shift`. The length is marked dynamic per call instead (`_fused`), constants stay static.
    return torch.compile(variant)


def _fused(x: torch.Tensor, src: Source, fmt: Format, mode: RoundingMode) -> torch.Tensor:
    flat = x.reshape(-1)
    torch._dynamo.maybe_mark_dynamic(
        flat, 0
    )  # one graph for all lengths: a new size does not recompile
    return _compiled(src.dtype, fmt, mode)(flat).view(x.shape)


def _auto_fused(
    x: torch.Tensor, src: Source, fmt: Format, mode: RoundingMode
) -> torch.Tensor | None:
    """The compiled kernel's result, or None where it failed (reason recorded, see `fused_status`).

    The first call per (device type, variant) is the probe: it compiles, and its result is checked
    bit for bit against the eager kernel on the first 4096 elements before it is trusted.
    """
    key = (x.device.type, _variant_name(src.dtype, fmt, mode))
    if key in _FUSED_FAILED or (x.device.type, "*") in _FUSED_FAILED:
        return None
    try:
        y = _fused(x, src, fmt, mode)
    except Exception as e:  # noqa: BLE001 - any compiler failure means "use eager"; the reason is kept
        _FUSED_FAILED[key] = f"{type(e).__name__}: {str(e).strip()[:300]}"
        return None
    if key not in _FUSED_OK:
        ref = _eager(x.reshape(-1)[:4096], src, fmt, mode)
        got = y.reshape(-1)[:4096]
        same = (got.view(src.int_dtype) == ref.view(src.int_dtype)) | (
            torch.isnan(got) & torch.isnan(ref)
        )
        if not bool(same.all()):
            _FUSED_FAILED[key] = "compiled kernel disagreed with the eager kernel on the probe call"
            return None
        _FUSED_OK.add(key)
    return y


def fused_status() -> dict[str, str]:
    """Where ``fused=None`` uses the compiled kernel: "device/variant" -> "ok" or why it does not."""
    status = {f"{d}/{v}": "ok" for d, v in sorted(_FUSED_OK)}
    status.update({f"{d}/{v}": why for (d, v), why in sorted(_FUSED_FAILED.items())})
    return status


def _eager_chunk(
    x: torch.Tensor,
    src: Source,
    fmt: Format,
    mode: RoundingMode,
    out: torch.Tensor,
    scratch: torch.Tensor | None,
) -> None:
    if scratch is not None and bf16_applies(src, fmt, mode):
        bf16_nearest_even(x, out, scratch)
    elif scratch is not None and magic_applies(src, fmt, mode):
        magic_nearest_even(x, src, fmt, out, scratch)
    else:
        kernel(x, src, fmt, mode, out=out)


def _eager(x: torch.Tensor, src: Source, fmt: Format, mode: RoundingMode) -> torch.Tensor:
    fast = bf16_applies(src, fmt, mode) or magic_applies(src, fmt, mode)
    out = torch.empty_like(x)
    if x.is_cuda or x.numel() <= _CHUNK:
        scratch = torch.empty(x.shape, dtype=src.int_dtype, device=x.device) if fast else None
        _eager_chunk(x, src, fmt, mode, out, scratch)
        return out
    flat, flat_out = x.reshape(-1), out.view(-1)
    buf = torch.empty(_CHUNK, dtype=src.int_dtype) if fast else None
    for start in range(0, flat.numel(), _CHUNK):
        stop = min(start + _CHUNK, flat.numel())
        scratch = None if buf is None else buf[: stop - start]
        _eager_chunk(flat[start:stop], src, fmt, mode, flat_out[start:stop], scratch)
    return out


def _apply(
    x: torch.Tensor, src: Source, fmt: Format, mode: RoundingMode, fused: bool | None
) -> torch.Tensor:
    if fused:
        return _fused(x, src, fmt, mode)
    # Inside a region torch.compile is tracing, the eager kernel is traced and fused with the rest.
    if fused is None and x.numel() >= FUSED_MIN_NUMEL and not torch.compiler.is_compiling():
        variant = _variant_name(src.dtype, fmt, mode)
        if COMPILE_AFTER.due(variant, x):
            y = _auto_fused(x, src, fmt, mode)
            if y is not None:
                return y
        else:
            COMPILE_AFTER.count(variant, x.numel())
    return _eager(x, src, fmt, mode)


def round_to(
    x: torch.Tensor,
    fmt: Format | str | torch.dtype,
    mode: RoundingMode | None = None,
    *,
    torch_compatible: bool = False,
    fused: bool | None = None,
) -> torch.Tensor:
    """Round every element of fp32/fp64 `x` to `fmt` with `mode`; result in x's dtype (see module doc).

    `mode` defaults to the format's own conversion: NEAREST_EVEN, except tf32 (NEAREST_AWAY).
    `torch_compatible` (fp64 sources only) rounds through fp32 first, as torch's fp64 casts do.
    `fused`: None (default) runs the torch.compile'd kernel for tensors of at least `FUSED_MIN_NUMEL`
    elements where compiling works on x's device (probed on first use; see `fused_status`) and, on the
    host, once `COMPILE_AFTER`'s elements of the variant were rounded eagerly in the process; else the
    eager kernels; True forces the compiled kernel (errors propagate), False the eager kernels. All
    give the same bits.
    Raises TypeError for non-tensors and non fp32/fp64 dtypes, ValueError when x's format is narrower
    than `fmt` or the format name is unknown.
    """
    f = get_format(fmt)
    src = _check_input(x, f)
    mode = RoundingMode(f.rounding) if mode is None else RoundingMode(mode)
    if f.mantissa_bits == src.frac or x.numel() == 0:
        return x  # already representable: returned as is, not copied
    x = x.contiguous()
    if src.dtype == torch.float64 and f.name == "fp32" and mode is RoundingMode.NEAREST_EVEN:
        return x.to(torch.float32).to(torch.float64)  # the IEEE conversion: RNE, subnormals and overflow included
    if torch_compatible and src.dtype == torch.float64 and f.mantissa_bits < 23:
        x32 = _apply(x, src, get_format("fp32"), RoundingMode.NEAREST_EVEN, fused).to(torch.float32)
        return round_to(x32, f, mode, fused=fused).to(torch.float64)
    return _apply(x, src, f, mode, fused)
