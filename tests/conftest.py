"""Test-session setup: keep Inductor's compile cache inside this run, and remove it after.

Under pytest-xdist the controller makes the folder before it starts its workers, which inherit the
environment and so share one cache (Inductor writes its entries atomically); only the controller
removes it, after every worker has finished. Workers keep torch's default thread count: Inductor's CPU
code generation depends on it (with one thread, gather's backward compiles without the in-place fallback
tests/observed/test_observe.py studies).
"""

from __future__ import annotations

import os
import shutil
import tempfile

_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
    _CACHE: str | None = tempfile.mkdtemp(prefix="roundoff-inductor-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = _CACHE
    os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(_CACHE, "triton"))
else:
    _CACHE = None  # set by the caller, or by the controller of this xdist worker: not ours to remove


def pytest_unconfigure(config: object) -> None:
    """Remove this run's cache folder (about 80 MB a full run), so test runs leave nothing behind."""
    if _CACHE is not None and _WORKER is None:
        shutil.rmtree(_CACHE, ignore_errors=True)
