"""When a compiled numerics kernel (rounding, metric figures) is worth compiling in this process.

On the host a kernel variant is compiled only once the eager path has processed `host_elements` of its
elements in this process; on an accelerator at once. Compiling one variant on a 2-core CPU costs 3-9 s
with Inductor's cache warm and 40-70 s cold, for a pass 1.2-2x faster than the eager one, and every
CLI call is a new process (trial 105: a bf16 KAN's first check took 71 s with its two metric variants
compiled, 5 s without; bench/results/compile-after-cpu.md). Counted in elements, not time, so which
path runs (and so the last bits of the metric sums, in fp64 summation order) is the same on every run.

Numeric contract: none of its own; the compiled and eager paths it chooses between are checked equal
on each variant's first compiled call (bit for bit for rounding, figures for the metric pass).
"""

from __future__ import annotations

import torch


class CompileAfter:
    """Per-variant element counts of the eager path, and whether a variant is due to be compiled."""

    def __init__(self, host_elements: int) -> None:
        self.host_elements = host_elements
        self._seen: dict[str, int] = {}

    def due(self, variant: str, t: torch.Tensor) -> bool:
        """Whether `variant` is compiled now for an input on `t`'s device (no counting)."""
        return t.device.type != "cpu" or self._seen.get(variant, 0) >= self.host_elements

    def count(self, variant: str, elements: int) -> None:
        """The eager path processed `elements` of `variant` (a variant compiled on the host later)."""
        self._seen[variant] = self._seen.get(variant, 0) + elements
