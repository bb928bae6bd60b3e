"""Test-session setup: keep Inductor's compile cache inside this run, and remove it after.

Under pytest-xdist the controller makes the folder before it starts its workers, which inherit the
environment and so share one cache (Inductor writes its entries atomically); only the controller
removes it, after every worker has finished.

Each xdist worker runs eager torch on its share of the cores (one thread each for ``-n 2`` on two
cores). Two workers of two OpenMP threads on two cores made big eager kernels 3-10x slower (threads
spin waiting for a core): the exhaustive rounding check's eager kernel took 0.6-1.2 s per 48 chunks
with one thread and 3-6 s with two, beside another two-thread process. Inductor's CPU code generation
keeps the thread count a plain run has (``cpp.threads``): its kernels depend on it (with one thread,
gather's backward compiles without the in-place fallback tests/observed/test_observe.py studies), so
every kernel a test compiles is the one a plain run compiles.
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


if _WORKER is not None:
    import torch
    from torch._inductor import config as _inductor_config

    _inductor_config.cpp.threads = torch.get_num_threads()
    _workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    torch.set_num_threads(max(1, torch.get_num_threads() // _workers))


def pytest_unconfigure(config: object) -> None:
    """Remove this run's cache folder (about 80 MB a full run), so test runs leave nothing behind."""
    if _CACHE is not None and _WORKER is None:
        shutil.rmtree(_CACHE, ignore_errors=True)
