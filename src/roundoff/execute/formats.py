"""The emulator's container dtype: the one dtype question specific to executing a plan.

Formats and opmath come from ``roundoff.numerics`` (``get_format``, ``is_low_precision``,
``opmath_dtype``); here only the rule for what a value is held in while emulating.
"""

from __future__ import annotations

import torch

from roundoff.numerics import opmath_dtype


def is_float(x: object) -> bool:
    """True for a floating-point tensor."""
    return isinstance(x, torch.Tensor) and x.is_floating_point()


HELD_NARROW = (torch.bfloat16, torch.float16)
"""Formats whose rounded values are held in their own dtype: torch's fp32 -> bf16/fp16 casts round to
nearest even with IEEE subnormals and overflow to inf, i.e. they are ``round_to`` (tested on all 2**32
fp32 patterns), and widening back to fp32 is exact."""


def container_dtype(dtype: torch.dtype | None) -> torch.dtype | None:
    """The dtype a value of `dtype` is held in while emulating: fp32 for low-precision formats
    (bf16, fp16, fp8: every value is exact in fp32), the dtype itself otherwise (None passes)."""
    if dtype is None or not dtype.is_floating_point:
        return dtype
    return opmath_dtype(dtype)
