"""Format records: derived constants against torch.finfo and ml_dtypes.finfo; lookup errors."""

from __future__ import annotations

import struct

import ml_dtypes
import pytest
import torch

from roundoff.numerics import (
    FORMATS,
    Overflow,
    format_of_dtype,
    get_format,
    is_low_precision,
    opmath_dtype,
)

ML = {"bf16": ml_dtypes.bfloat16, "fp8_e4m3fn": ml_dtypes.float8_e4m3fn, "fp8_e5m2": ml_dtypes.float8_e5m2,
      "fp8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz, "fp8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz}


@pytest.mark.parametrize("name", [n for n, f in FORMATS.items() if f.torch_dtype is not None])
def test_constants_match_torch_finfo(name: str) -> None:
    f = FORMATS[name]
    fi = torch.finfo(f.torch_dtype)
    got = (f.max_finite, f.min_normal, f.min_subnormal, f.bits)
    ints = {8: torch.uint8, 16: torch.int16, 32: torch.int32, 64: torch.int64}
    tiniest = torch.tensor([1], dtype=ints[f.bits]).view(f.torch_dtype).item()  # bit pattern 0...01
    assert got == (fi.max, fi.smallest_normal, tiniest, fi.bits), f"repro: get_format({name!r})"
    if name == "fp8_e5m2fnuz":  # torch 2.13's finfo says 0.125 for a 2-bit mantissa; ml_dtypes says 0.25
        assert (f.eps, fi.eps) == (0.25, 0.125), "torch fixed finfo(float8_e5m2fnuz).eps: drop this branch"
    else:
        assert f.eps == fi.eps


@pytest.mark.parametrize("name", list(ML))
def test_constants_and_encodings_match_ml_dtypes(name: str) -> None:
    f, fi = FORMATS[name], ml_dtypes.finfo(ML[name])
    assert (f.max_finite, f.min_normal, f.min_subnormal, f.eps) == (float(fi.max), float(fi.smallest_normal),
                                                                    float(fi.smallest_subnormal), float(fi.eps))
    vals = torch.arange(1 << f.bits, dtype=torch.int32).to(torch.uint8 if f.bits == 8 else torch.int16)
    as_float = vals.view(f.torch_dtype).float()
    assert bool(torch.isinf(as_float).any()) == f.has_inf
    assert int(torch.isnan(as_float).sum()) == {"fp8_e4m3fn": 2, "fp8_e4m3fnuz": 1, "fp8_e5m2fnuz": 1}.get(name, (
        2 * ((1 << f.mantissa_bits) - 1)))


def test_tf32_is_fp32_range_with_ten_mantissa_bits() -> None:
    tf32 = FORMATS["tf32"]
    top = struct.unpack("<f", struct.pack("<I", 0x7F7FE000))[0]  # fp32 pattern with only the top 10 mantissa bits
    assert (tf32.max_finite, tf32.min_normal, tf32.eps, tf32.torch_dtype) == (top, 2.0**-126, 2.0**-10, None)
    assert tf32.min_subnormal == 2.0**-136 and tf32.rounding == "nearest_away"


def test_e4m3fn_overflow_is_what_this_torch_does() -> None:
    torch_bits = int(torch.tensor([1e6]).to(torch.float8_e4m3fn).view(torch.uint8))
    expected = Overflow.SATURATE if torch_bits == 0x7E else Overflow.NAN
    assert FORMATS["fp8_e4m3fn"].overflow is expected


def test_lookup_by_name_dtype_and_record() -> None:
    assert get_format("bf16") is FORMATS["bf16"] is get_format(torch.bfloat16) is get_format(FORMATS["bf16"])
    assert format_of_dtype(torch.float8_e5m2).name == "fp8_e5m2"
    with pytest.raises(ValueError, match=r"unknown format name 'fp8'.*known formats: fp64, fp32, tf32, bf16"):
        get_format("fp8")
    with pytest.raises(ValueError, match="torch.int32 has no roundoff format"):
        format_of_dtype(torch.int32)
    with pytest.raises(TypeError, match="Format, a format name or a torch dtype"):
        get_format(16)  # type: ignore[arg-type]


_DTYPES = [f.torch_dtype for f in FORMATS.values() if f.torch_dtype is not None] + [torch.int32, torch.bool]


@pytest.mark.parametrize("dtype", _DTYPES, ids=str)
def test_opmath_dtype_is_torchs_computation_dtype(dtype: torch.dtype) -> None:
    """Oracle: torch's prims table (bf16/fp16 -> fp32); fp8 is absent there, ATen's toOpMathType has it -> fp32."""
    from torch._prims_common import get_computation_dtype

    want = torch.float32 if "float8" in str(dtype) else get_computation_dtype(dtype)
    assert opmath_dtype(dtype) == want, f"repro: opmath_dtype({dtype}) = {opmath_dtype(dtype)}, torch: {want}"
    assert is_low_precision(dtype) == (want != dtype), f"repro: is_low_precision({dtype})"
    if dtype.is_floating_point:
        assert get_format(dtype).storage_dtype == dtype, f"repro: get_format({dtype}).storage_dtype"
