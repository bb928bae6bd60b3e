"""Exact rounding of fp32/fp64 tensors to any `Format`, returned in the source dtype (fake quantization).

Contract of `round_to(x, fmt, mode)`:
- `x` is an fp32 or fp64 tensor (CPU or CUDA); the result has x's dtype, shape and device, and every
  element is exactly representable in `fmt`.
- Finite values are rounded once, from their exact value, with `mode`. Subnormals of `fmt` are produced
  (gradual underflow, no flush to zero); subnormal inputs are honoured (no DAZ).
- Overflow (rounded magnitude beyond max finite, or an inf input): for the nearest modes the format's
  `Overflow` (inf / ±max finite / NaN); for TOWARD_ZERO and TO_ODD a finite input gives ±max finite
  (IEEE directed rounding); an inf input gives inf where the format has one, else what its `Overflow` says.
- NaN stays NaN (canonical quiet NaN, payload not kept). -0.0 stays -0.0, except in ``fnuz`` formats,
  which have no -0.0: any result of magnitude zero is +0.0 (as torch's casts do).
- fp64 sources: the default is the correctly rounded result. torch's own fp64 -> bf16/fp16/fp8 casts
  (CPU, torch 2.13) go through fp32 first, i.e. round twice; ``torch_compatible=True`` reproduces that
  (round to fp32 with RNE, then to `fmt`). fp64 -> fp32 is a single rounding either way.
- tf32 (no torch dtype): the default mode is the format's own conversion, round to nearest with ties
  away from zero, which is what CUDA's ``__float_to_tf32`` / PTX ``cvt.rna.tf32.f32`` and CUTLASS's
  default ``round_half_ulp_truncate`` do. Tensor cores fed raw fp32 read only the top 10 mantissa bits
  (truncation, PyTorch's numerical-accuracy notes); pass ``mode=RoundingMode.TOWARD_ZERO`` for that.

Implementation (`_kernels`): integer arithmetic on the tensor's int32/int64 view (torch ops only, so
CUDA works), see `round_magnitude` for the bit trick; values in the target's subnormal range take an
exact float path (scale by a power of two into integers, round, scale back). Eager by default: CPU
tensors are processed in cache-sized chunks. ``fused=True`` runs the same kernel through
`torch.compile` (one fused loop / Triton kernel per format, mode and dtype; compiled on first use,
which costs seconds, then close to memory bandwidth).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable

import torch

from roundoff.numerics._kernels import SOURCES, RoundingMode, Source, kernel
from roundoff.numerics.formats import Format, get_format

__all__ = ["RoundingMode", "round_to"]


def _check_input(x: object, fmt: Format) -> Source:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"round_to expects a torch.Tensor, got {type(x).__name__}; wrap it: torch.tensor(...)")
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


@functools.cache
def _compiled(src_dtype: torch.dtype, fmt: Format, mode: RoundingMode) -> Callable[[torch.Tensor], torch.Tensor]:
    src = SOURCES[src_dtype]

    def rounded(x: torch.Tensor) -> torch.Tensor:
        return kernel(x, src, fmt, mode, branchless=True)

    # Dynamo keeps its compiled graphs on the code object, at most a few per object (recompile limit):
    # one code object per (dtype, format, mode) stops variants from evicting each other into eager.
    name = f"round_{str(src_dtype).removeprefix('torch.')}_to_{fmt.name}_{mode.value}"
    code = rounded.__code__.replace(co_name=name)
    variant = types.FunctionType(code, rounded.__globals__, name, rounded.__defaults__, rounded.__closure__)
    # Not dynamic=True: torch 2.11 then turns the kernel's integer constants into symbols and fails on
    # `1 << shift`. The length is marked dynamic per call instead (`_apply`), constants stay static.
    return torch.compile(variant)


def _apply(x: torch.Tensor, src: Source, fmt: Format, mode: RoundingMode, fused: bool) -> torch.Tensor:
    if fused:
        flat = x.reshape(-1)
        torch._dynamo.maybe_mark_dynamic(flat, 0)
        return _compiled(src.dtype, fmt, mode)(flat).view(x.shape)
    if x.is_cuda or x.numel() <= _CHUNK:
        return kernel(x, src, fmt, mode)
    flat = x.reshape(-1)
    out = torch.empty_like(flat)
    for start in range(0, flat.numel(), _CHUNK):
        kernel(flat[start : start + _CHUNK], src, fmt, mode, out=out[start : start + _CHUNK])
    return out.view(x.shape)


def round_to(
    x: torch.Tensor,
    fmt: Format | str | torch.dtype,
    mode: RoundingMode | None = None,
    *,
    torch_compatible: bool = False,
    fused: bool = False,
) -> torch.Tensor:
    """Round every element of fp32/fp64 `x` to `fmt` with `mode`; result in x's dtype (see module doc).

    `mode` defaults to the format's own conversion: NEAREST_EVEN, except tf32 (NEAREST_AWAY).
    `torch_compatible` (fp64 sources only) rounds through fp32 first, as torch's fp64 casts do.
    `fused` compiles the kernel with torch.compile (same results; faster on large tensors, slow first call).
    Raises TypeError for non-tensors and non fp32/fp64 dtypes, ValueError when x's format is narrower
    than `fmt` or the format name is unknown.
    """
    f = get_format(fmt)
    src = _check_input(x, f)
    mode = RoundingMode(f.rounding) if mode is None else RoundingMode(mode)
    if f.mantissa_bits == src.frac or x.numel() == 0:
        return x  # already representable: returned as is, not copied
    x = x.contiguous()
    if torch_compatible and src.dtype == torch.float64 and f.mantissa_bits < 23:
        x32 = _apply(x, src, get_format("fp32"), RoundingMode.NEAREST_EVEN, fused).to(torch.float32)
        return round_to(x32, f, mode, fused=fused).to(torch.float64)
    return _apply(x, src, f, mode, fused)
