"""Test-session setup: keep Inductor's compile cache inside this run, and remove it after."""

from __future__ import annotations

import os
import shutil
import tempfile

_CACHE = tempfile.mkdtemp(prefix="roundoff-inductor-")
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", _CACHE)
os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(_CACHE, "triton"))


def pytest_unconfigure(config: object) -> None:
    """Remove this run's cache folder (about 80 MB a full run), so test runs leave nothing behind."""
    shutil.rmtree(_CACHE, ignore_errors=True)
