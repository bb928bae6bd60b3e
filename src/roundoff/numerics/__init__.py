"""roundoff.numerics: formats, exact rounding, correctly rounded FMA and error metrics (torch only).

Public API: `round_to`, `RoundingMode`, `fma`, `Format`, `Encoding`, `Overflow`, `FORMATS`, `get_format`,
`format_of_dtype`, `is_low_precision`, `opmath_dtype`, and the metrics `compare`, `ErrorStats`,
`ErrorAccumulator`, `ulp_distance`, `ordinal`, `bits_of_error`;
bit-pattern equality `same_bits`, `same_bits_mask`, `bits_differ` (-0.0 != +0.0, NaN == NaN).
"""

from roundoff.numerics.bits import bits_differ, same_bits, same_bits_mask
from roundoff.numerics.fma import fma
from roundoff.numerics.formats import (
    FORMATS,
    Encoding,
    Format,
    Overflow,
    format_of_dtype,
    get_format,
    is_low_precision,
    opmath_dtype,
)
from roundoff.numerics.metrics import (
    ErrorAccumulator,
    ErrorStats,
    bits_of_error,
    compare,
    ordinal,
    ulp_distance,
)
from roundoff.numerics.rounding import RoundingMode, round_to

__all__ = [
    "FORMATS",
    "Encoding",
    "ErrorAccumulator",
    "ErrorStats",
    "Format",
    "Overflow",
    "RoundingMode",
    "bits_differ",
    "bits_of_error",
    "compare",
    "fma",
    "format_of_dtype",
    "get_format",
    "is_low_precision",
    "opmath_dtype",
    "ordinal",
    "round_to",
    "same_bits",
    "same_bits_mask",
    "ulp_distance",
]
