"""Floating-point formats: one frozen record per format, every constant derived from the bit layout.

A format is (exponent bits E, explicit mantissa bits M, special-value encoding, overflow behaviour of
a round-to-nearest conversion). The bias is ``2**(E-1) - 1`` for IEEE-like and ``fn`` encodings and
``2**(E-1)`` for ``fnuz`` encodings; everything else (max finite, smallest normal/subnormal, eps) follows.

Encodings (`Encoding`):
- ``IEEE``: all-ones exponent is inf (mantissa 0) or NaN; signed zeros (fp64, fp32, tf32, bf16, fp16, fp8_e5m2).
- ``FN`` ("finite"): no inf; only the all-ones exponent-and-mantissa pattern is NaN, so the top binade
  has one value fewer (fp8_e4m3fn: max 448).
- ``FNUZ`` ("finite, no negative zero"): no inf, no -0.0; the pattern ``1000...0`` is the only NaN.

Overflow (`Overflow`) is what a round-to-nearest conversion does with a value beyond max finite
(including inf): ``INF`` (IEEE), ``SATURATE`` (clamp to ±max finite), ``NAN``. For fp8_e4m3fn torch
changed behaviour between releases (older: NaN, 2.13: saturate, inf included), so that record's overflow
is read from the installed torch's own cast once at import (`_torch_e4m3fn_overflow`).

Opmath (`is_low_precision`, `opmath_dtype`): torch computes on bf16, fp16 and every fp8 dtype (fnuz
included) in fp32 and rounds the result back (``at::toOpMathType``); every other dtype computes in itself.
This module is the one dtype <-> format table of roundoff: the other layers read it from here.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import torch

__all__ = [
    "FORMATS",
    "Encoding",
    "Format",
    "Overflow",
    "format_of_dtype",
    "get_format",
    "is_low_precision",
    "opmath_dtype",
]


class Encoding(enum.Enum):
    """How inf, NaN and zeros are encoded (see module docstring)."""

    IEEE = "ieee"
    FN = "fn"
    FNUZ = "fnuz"


class Overflow(enum.Enum):
    """Result of a round-to-nearest conversion whose rounded magnitude exceeds max finite."""

    INF = "inf"
    SATURATE = "saturate"
    NAN = "nan"


@dataclass(frozen=True)
class Format:
    """A binary floating-point format described by its bit layout; all constants are derived.

    `rounding` is the conversion the hardware/torch applies when converting to this format
    ("nearest_even" for all but tf32, whose NVIDIA conversion rounds to nearest, ties away).
    """

    name: str
    exponent_bits: int
    mantissa_bits: int
    encoding: Encoding
    overflow: Overflow
    torch_dtype: torch.dtype | None
    rounding: str = "nearest_even"

    @property
    def bits(self) -> int:
        """Storage width in bits (tf32: 19 significant bits, stored in 32)."""
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def storage_dtype(self) -> torch.dtype:
        """The torch dtype a tensor of this format is held in: `torch_dtype`, fp32 for tf32."""
        return self.torch_dtype if self.torch_dtype is not None else torch.float32

    @property
    def bias(self) -> int:
        return 2 ** (self.exponent_bits - 1) - (0 if self.encoding is Encoding.FNUZ else 1)

    @property
    def has_inf(self) -> bool:
        return self.encoding is Encoding.IEEE

    @property
    def has_negative_zero(self) -> bool:
        return self.encoding is not Encoding.FNUZ

    @property
    def max_exponent(self) -> int:
        """Unbiased exponent of the largest finite binade."""
        top = 2**self.exponent_bits - 1  # all-ones biased exponent
        return (top - 1 if self.encoding is Encoding.IEEE else top) - self.bias

    @property
    def min_exponent(self) -> int:
        """Unbiased exponent of the smallest normal binade."""
        return 1 - self.bias

    @property
    def max_finite(self) -> float:
        """Largest finite value: the FN encoding gives up the all-ones mantissa of the top binade."""
        lost = 2 if self.encoding is Encoding.FN else 1
        return math.ldexp(2 ** (self.mantissa_bits + 1) - lost, self.max_exponent - self.mantissa_bits)

    @property
    def min_normal(self) -> float:
        return math.ldexp(1.0, self.min_exponent)

    @property
    def min_subnormal(self) -> float:
        return math.ldexp(1.0, self.min_exponent - self.mantissa_bits)

    @property
    def eps(self) -> float:
        """Distance from 1.0 to the next larger value: 2**-mantissa_bits."""
        return math.ldexp(1.0, -self.mantissa_bits)

    @property
    def nan_encoding(self) -> str:
        """NaN bit patterns in words: what `Encoding` implies for this layout."""
        if self.encoding is Encoding.IEEE:
            return "exponent all ones, mantissa nonzero"
        if self.encoding is Encoding.FN:
            return "exponent and mantissa all ones (0x7f/0xff)"
        return f"sign bit only (0x{1 << (self.bits - 1):x})"

    def __str__(self) -> str:
        return self.name


def _torch_e4m3fn_overflow() -> Overflow:
    """What the installed torch's fp32 -> float8_e4m3fn cast does on overflow (NaN or saturate)."""
    bits = int(torch.tensor([1.0e6]).to(torch.float8_e4m3fn).view(torch.uint8).item())
    return Overflow.SATURATE if bits == 0x7E else Overflow.NAN


_E, _F, _Z = Encoding.IEEE, Encoding.FN, Encoding.FNUZ

#: Every format roundoff knows, by name.
FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("fp64", 11, 52, _E, Overflow.INF, torch.float64),
        Format("fp32", 8, 23, _E, Overflow.INF, torch.float32),
        Format("tf32", 8, 10, _E, Overflow.INF, None, rounding="nearest_away"),
        Format("bf16", 8, 7, _E, Overflow.INF, torch.bfloat16),
        Format("fp16", 5, 10, _E, Overflow.INF, torch.float16),
        Format("fp8_e4m3fn", 4, 3, _F, _torch_e4m3fn_overflow(), torch.float8_e4m3fn),
        Format("fp8_e5m2", 5, 2, _E, Overflow.INF, torch.float8_e5m2),
        Format("fp8_e4m3fnuz", 4, 3, _Z, Overflow.NAN, torch.float8_e4m3fnuz),
        Format("fp8_e5m2fnuz", 5, 2, _Z, Overflow.NAN, torch.float8_e5m2fnuz),
    )
}

_BY_DTYPE: dict[torch.dtype, Format] = {f.torch_dtype: f for f in FORMATS.values() if f.torch_dtype}

#: dtypes torch computes in fp32 opmath (``at::toOpMathType``): the formats of 16 bits or fewer.
_LOW_PRECISION: frozenset[torch.dtype] = frozenset(d for d, f in _BY_DTYPE.items() if f.bits <= 16)


def is_low_precision(dtype: torch.dtype | None) -> bool:
    """True for bf16, fp16 and every fp8 dtype (fnuz included): torch computes them in fp32 opmath.

    False for wider floats, non-floating dtypes and None (no error: callers ask about any value's dtype).
    """
    return dtype in _LOW_PRECISION


def opmath_dtype(dtype: torch.dtype) -> torch.dtype:
    """torch's opmath type (``at::toOpMathType``): fp32 for `is_low_precision` dtypes, else `dtype`."""
    return torch.float32 if is_low_precision(dtype) else dtype


def format_of_dtype(dtype: torch.dtype) -> Format:
    """The format of a floating torch dtype; ValueError naming the dtype and the known ones otherwise."""
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"format_of_dtype expects a torch.dtype, got {type(dtype).__name__} {dtype!r}")
    try:
        return _BY_DTYPE[dtype]
    except KeyError:
        known = ", ".join(str(d) for d in _BY_DTYPE)
        raise ValueError(f"dtype {dtype} has no roundoff format; known dtypes: {known}") from None


def get_format(fmt: Format | str | torch.dtype) -> Format:
    """Resolve a format given as a `Format`, its name (e.g. ``"bf16"``) or a torch dtype."""
    if isinstance(fmt, Format):
        return fmt
    if isinstance(fmt, torch.dtype):
        return format_of_dtype(fmt)
    if isinstance(fmt, str):
        try:
            return FORMATS[fmt]
        except KeyError:
            raise ValueError(
                f"unknown format name {fmt!r}; known formats: {', '.join(FORMATS)} "
                "(or pass a Format record or a floating torch dtype)"
            ) from None
    raise TypeError(
        f"format must be a Format, a format name or a torch dtype, got {type(fmt).__name__} {fmt!r}"
    )
