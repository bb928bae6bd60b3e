"""Format names a policy may mention, checked against roundoff.numerics when it is present."""

from __future__ import annotations

import torch

# The numerics layer owns formats; until its registry is importable, these names stand in.
_LOCAL_FORMATS: tuple[str, ...] = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8_e4m3fn", "fp8_e5m2")
_TORCH_DTYPES: dict[str, torch.dtype] = {
    "fp64": torch.float64,
    "fp32": torch.float32,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "fp8_e4m3fn": torch.float8_e4m3fn,
    "fp8_e5m2": torch.float8_e5m2,
}


def known_formats() -> tuple[str, ...]:
    """Format names accepted in a policy (``roundoff.numerics`` formats where it can tell)."""
    try:
        from roundoff.numerics import get_format
    except ImportError:
        return _LOCAL_FORMATS
    known = []
    for name in _LOCAL_FORMATS:
        try:
            get_format(name)
        except (ValueError, KeyError, TypeError):
            continue
        known.append(name)
    return tuple(known) or _LOCAL_FORMATS


def format_dtype(name: str) -> torch.dtype:
    """torch dtype that stores format `name` (tf32 is stored as fp32)."""
    return _TORCH_DTYPES.get(name, torch.float32)


def format_of_dtype(dtype: torch.dtype) -> str | None:
    """Format name of a floating torch dtype, or None for dtypes roundoff has no format for."""
    for name, candidate in _TORCH_DTYPES.items():
        if candidate == dtype:
            return name
    return None
