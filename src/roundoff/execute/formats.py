"""Dtype <-> format-name helpers shared by the emulator and the analysis layer."""

from __future__ import annotations

import torch

#: Format name (as ``roundoff.numerics`` spells it) of every floating dtype the emulator handles.
FORMAT_OF_DTYPE: dict[torch.dtype, str] = {
    torch.float64: "fp64",
    torch.float32: "fp32",
    torch.bfloat16: "bf16",
    torch.float16: "fp16",
    torch.float8_e4m3fn: "fp8_e4m3fn",
    torch.float8_e5m2: "fp8_e5m2",
}

#: Dtypes whose values the emulator holds in an fp32 container (exactly representable there).
NARROW = frozenset({torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.float8_e5m2})


def format_name(dtype: torch.dtype) -> str:
    """The numerics format name of a floating dtype; ValueError naming the dtype otherwise."""
    try:
        return FORMAT_OF_DTYPE[dtype]
    except KeyError:
        known = ", ".join(str(d) for d in FORMAT_OF_DTYPE)
        raise ValueError(f"dtype {dtype} has no roundoff format; known: {known}") from None


def is_float(x: object) -> bool:
    """True for a floating-point tensor."""
    return isinstance(x, torch.Tensor) and x.is_floating_point()


def container_dtype(dtype: torch.dtype | None) -> torch.dtype | None:
    """The dtype a value of `dtype` is held in while emulating: fp32 for narrow formats."""
    if dtype is None or not dtype.is_floating_point:
        return dtype
    return torch.float32 if dtype in NARROW else dtype
