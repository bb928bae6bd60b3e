"""Independent oracles for the numerics tests: exact rational rounding and the C library's fmaf."""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
import shutil
import subprocess
import tempfile
from fractions import Fraction

import numpy as np

from roundoff.numerics import Format, Overflow


def round_exact(x: float, fmt: Format, mode: str) -> float:
    """`x` rounded to `fmt` with exact rational arithmetic (no bit tricks): the reference semantics.

    mode: "nearest_even", "nearest_away", "toward_zero", "to_odd". Overflow as round_to documents it.
    """
    if math.isnan(x):
        return math.nan
    neg = math.copysign(1.0, x) < 0
    if math.isinf(x):
        mag = math.inf if fmt.has_inf else (fmt.max_finite if fmt.overflow is Overflow.SATURATE else math.nan)
        return -mag if neg else mag
    v = abs(Fraction(x))
    if v == 0:
        res = Fraction(0)
    else:
        e = max(math.floor(math.log2(v)), fmt.min_exponent)
        while Fraction(2) ** e > v and e > fmt.min_exponent:  # log2 of a huge Fraction can be off by one
            e -= 1
        while Fraction(2) ** (e + 1) <= v:
            e += 1
        e = max(e, fmt.min_exponent)
        q = Fraction(2) ** (e - fmt.mantissa_bits)
        n = v / q
        lo = math.floor(n)
        frac = n - lo
        if mode == "toward_zero":
            k = lo
        elif mode == "to_odd":
            k = lo if frac == 0 or lo % 2 == 1 else lo + 1
        elif mode == "nearest_away":
            k = lo + (1 if frac >= Fraction(1, 2) else 0)
        else:
            k = lo + (1 if frac > Fraction(1, 2) or (frac == Fraction(1, 2) and lo % 2 == 1) else 0)
        res = k * q
    if res > Fraction(fmt.max_finite):
        if mode in ("toward_zero", "to_odd"):
            out = fmt.max_finite
        else:
            out = {Overflow.INF: math.inf, Overflow.SATURATE: fmt.max_finite, Overflow.NAN: math.nan}[fmt.overflow]
    else:
        out = float(res)
    if neg and (out != 0 or fmt.has_negative_zero):
        out = -out
    return out


_C_SHIM = r"""
#include <math.h>
void fmaf_array(const float* a, const float* b, const float* c, float* out, long n) {
    for (long i = 0; i < n; ++i) out[i] = fmaf(a[i], b[i], c[i]);
}
"""

_shim: ctypes.CDLL | None = None


def fmaf_shim() -> ctypes.CDLL | None:
    """libm's fmaf over arrays, through a 4-line C loop compiled with the system cc (None: no compiler)."""
    global _shim
    if _shim is not None:
        return _shim
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    d = tempfile.mkdtemp(prefix="roundoff-fmaf-")
    src, lib = os.path.join(d, "fmaf.c"), os.path.join(d, "libfmaf.so")
    with open(src, "w") as f:
        f.write(_C_SHIM)
    # -fno-builtin: call the C library's fmaf, not whatever the compiler would inline.
    proc = subprocess.run([cc, "-O2", "-fno-builtin", "-shared", "-fPIC", src, "-o", lib, "-lm"], capture_output=True, check=False)
    if proc.returncode != 0:
        return None
    _shim = ctypes.CDLL(lib)
    _shim.fmaf_array.restype = None
    return _shim


_libm = ctypes.CDLL(ctypes.util.find_library("m"))
_libm.fmaf.restype = ctypes.c_float
_libm.fmaf.argtypes = [ctypes.c_float] * 3


def fmaf(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The C library's fmaf elementwise on fp32 arrays (compiled loop if possible, else per element)."""
    a, b, c = (np.ascontiguousarray(v, dtype=np.float32) for v in np.broadcast_arrays(a, b, c))
    out = np.empty_like(a)
    shim = fmaf_shim()
    if shim is not None:
        p = ctypes.POINTER(ctypes.c_float)
        shim.fmaf_array(a.ctypes.data_as(p), b.ctypes.data_as(p), c.ctypes.data_as(p), out.ctypes.data_as(p),
                        ctypes.c_long(a.size))
        return out
    for k, (x, y, z) in enumerate(zip(a.ravel().tolist(), b.ravel().tolist(), c.ravel().tolist())):
        out.flat[k] = _libm.fmaf(x, y, z)
    return out
