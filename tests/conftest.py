"""Test-session setup: keep Inductor's compile cache inside this run."""

from __future__ import annotations

import os
import tempfile

_CACHE = tempfile.mkdtemp(prefix="roundoff-inductor-")
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", _CACHE)
os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(_CACHE, "triton"))
