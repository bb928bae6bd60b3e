"""Dtype helpers for planning: format names, opmath types, short names for traces.

Exact data only: which torch dtypes are floating formats roundoff knows, which of them compute in
fp32 "opmath" (``at::toOpMathType``: bf16, fp16, fp8 -> fp32), and their printed short names.
"""

from __future__ import annotations

import torch

from roundoff.policy.formats import format_dtype, format_of_dtype, known_formats

#: Formats whose arithmetic torch does in fp32 (``at::opmath_type``).
LOW_PRECISION = frozenset({torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.float8_e5m2})

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
    if name not in known_formats():
        known = ", ".join(known_formats())
        raise ValueError(
            f"policy field {field}={name!r} is not a known format; use one of: {known}"
        )
    return format_dtype(name)


def format_of(dtype: torch.dtype) -> str:
    """The format name of a floating dtype (``torch.bfloat16`` -> ``"bf16"``)."""
    name = format_of_dtype(dtype)
    if name is None:
        known = ", ".join(known_formats())
        raise ValueError(f"dtype {dtype} is not a floating format roundoff plans; known: {known}")
    return name


def opmath(dtype: torch.dtype) -> torch.dtype:
    """fp32 for bf16/fp16/fp8 (torch's opmath type), else `dtype` itself."""
    return torch.float32 if dtype in LOW_PRECISION else dtype


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
