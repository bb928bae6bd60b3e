"""Keep freed CPU memory in the process, so large temporaries are not page-faulted anew each time.

glibc's malloc serves blocks above its mmap threshold (at most 32 MiB) with fresh ``mmap`` calls and
returns them to the kernel on ``free``. An emulated run allocates many such blocks (fp32 and fp64
copies of bf16 activations), and touching each fresh page costs a page fault: on the 2-core CI box
an fp32 multiply of 2**23 elements takes 17 ms with the default allocator and 3 ms with freed
memory kept (``bench/check.py`` measures both ways). `retain_freed_memory` switches glibc to serving
every block from its heap (``M_MMAP_MAX = 0``) and never trimming it (``M_TRIM_THRESHOLD``), the
same tuning as ``MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=...`` in the environment.

It changes the whole process for its lifetime (memory freed by it stays reserved for reuse and is
not returned to the operating system), so the library never calls it on its own: the ``roundoff``
command line does, and library users may. Values are unaffected: only where memory comes from.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
_NEVER_TRIM = 2**31 - 1  # INT_MAX: mallopt takes an int

_applied = False


def retain_freed_memory() -> bool:
    """Tune glibc malloc to keep freed memory (see the module docstring); True if it is now in effect.

    Returns False, changing nothing, where the C library is not glibc (macOS, Windows, musl).
    Calling it again is harmless.
    """
    global _applied
    if _applied:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    ok = mallopt(M_MMAP_MAX, 0) == 1 and mallopt(M_TRIM_THRESHOLD, _NEVER_TRIM) == 1  # 1: success
    _applied = ok
    return ok
