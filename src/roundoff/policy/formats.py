"""Format names a policy may mention: the numerics layer's registry, or a local stand-in.

``roundoff.numerics`` owns formats (``FORMATS``, ``get_format``); the local table below is used
only if that layer cannot be imported (it keeps the policy layer usable on its own).
"""

from __future__ import annotations

import torch

_LOCAL_DTYPES: dict[str, torch.dtype | None] = {
    "fp64": torch.float64,
    "fp32": torch.float32,
    "tf32": None,  # a matmul input format stored in fp32
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "fp8_e4m3fn": torch.float8_e4m3fn,
    "fp8_e5m2": torch.float8_e5m2,
}


def _registry() -> dict[str, torch.dtype | None]:
    try:
        from roundoff.numerics import FORMATS, get_format
    except ImportError:
        return _LOCAL_DTYPES
    return {name: get_format(name).torch_dtype for name in FORMATS}


def known_formats() -> tuple[str, ...]:
    """Format names accepted in a policy, in the numerics layer's order."""
    return tuple(_registry())


def format_dtype(name: str) -> torch.dtype:
    """torch dtype that stores format `name` (formats without one, i.e. tf32, are stored as fp32)."""
    dtype = _registry().get(name)
    return dtype if dtype is not None else torch.float32


def format_of_dtype(dtype: torch.dtype) -> str | None:
    """Format name of a floating torch dtype, or None for dtypes roundoff has no format for."""
    return next((name for name, d in _registry().items() if d == dtype), None)
