"""Dtype helpers for planning: policy format names (with the field in errors), short trace names.

Formats, their dtypes and opmath types come from ``roundoff.numerics`` (``FORMATS``, ``get_format``,
``opmath_dtype``); this module only adds the planner's error wording and the printed short names.
"""

from __future__ import annotations

import torch

from roundoff.numerics import FORMATS

_SHORT = {
    torch.float64: "f64",
    torch.float32: "f32",
    torch.bfloat16: "bf16",
    torch.float16: "f16",
    torch.float8_e4m3fn: "f8e4m3",
    torch.float8_e5m2: "f8e5m2",
    torch.bool: "b8",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.int8: "i8",
    torch.uint8: "u8",
}


def dtype_of_format(name: str, field: str) -> torch.dtype:
    """The torch dtype a format name is held in (tf32: fp32); ValueError naming `field` otherwise."""
    if name not in FORMATS:
        raise ValueError(
            f"policy field {field}={name!r} is not a known format; use one of: {', '.join(FORMATS)}"
        )
    return FORMATS[name].storage_dtype


def wider(a: torch.dtype, b: torch.dtype) -> torch.dtype:
    """The float dtype with more significand bits of `a` and `b` (fp64 > fp32 > fp16 > bf16 > fp8)."""
    return a if torch.finfo(a).eps <= torch.finfo(b).eps else b


def is_float(dtype: torch.dtype | None) -> bool:
    return dtype is not None and dtype.is_floating_point


def short(dtype: torch.dtype | None) -> str:
    """Thunder-style short dtype name (``bf16``, ``f32``)."""
    if dtype is None:
        return "?"
    return _SHORT.get(dtype, str(dtype).removeprefix("torch."))
