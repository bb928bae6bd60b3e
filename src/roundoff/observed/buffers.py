"""One buffer read from a compiled program (`Observed`) and the small facts observe uses about it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Observed:
    """One buffer read from the compiled program: the kernel that wrote it and its value (host copy)."""

    kernel: str
    buffer: str
    kind: str  # pointwise / reduction / matmul / template / extern
    fused: tuple[str, ...]  # roundoff ids of the Program nodes Inductor fused into the buffer
    value: torch.Tensor
    order: int  # position among the buffers of the run, in the order the kernels wrote them
    launch: int  # which kernel call of the run wrote it (a kernel writes several buffers in one)


def narrow_float(dtype: Any) -> bool:
    return isinstance(dtype, torch.dtype) and dtype.is_floating_point and dtype.itemsize < 4
