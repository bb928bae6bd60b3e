"""`retain_freed_memory`: freed blocks stay in the process (observed through its resident set size)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import os, sys, torch
    from roundoff.execute.cpu_allocator import retain_freed_memory

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    applied = retain_freed_memory() if sys.argv[1] == "retain" else False
    before = rss()
    x = torch.ones(2**24, dtype=torch.float64)  # 128 MiB, above any mmap threshold
    del x
    print(applied, (rss() - before) / 2**20)
    """
)


def _freed_mib(mode: str) -> tuple[bool, float]:
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, check=True)
    applied, mib = out.stdout.split()
    return applied == "True", float(mib)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc tuning is Linux-only")
def test_freed_block_stays_resident_only_when_retained() -> None:
    applied, kept = _freed_mib("retain")
    if not applied:
        pytest.skip("the C library is not glibc (mallopt refused)")
    _, default = _freed_mib("default")
    assert kept >= 100, f"retained: {kept:.0f} MiB resident after freeing 128 MiB; repro: python -c SCRIPT retain"
    assert default < 20, f"default glibc: {default:.0f} MiB resident after freeing 128 MiB; repro: python -c SCRIPT default"
