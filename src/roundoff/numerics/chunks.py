"""Aligned slices of large host tensors, so that an elementwise test reduced to a count holds one slice's
temporaries (``isfinite``'s ``abs`` copy, a comparison's masks), not the whole tensor's.

Contract: `slices` yields views (no copies) that together cover every element once, in order for
contiguous tensors; a count summed over them is the count over the whole tensors, exactly. CUDA tensors
are not sliced (each slice would cost a host sync where the whole test costs one).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import torch

#: Elements per slice: a few hundred KiB to 2 MiB of temporaries, and few enough slices that their
#: per-call cost stays small beside the arithmetic.
SLICE_ELEMENTS = 1 << 18


def slices(*tensors: torch.Tensor, size: int = SLICE_ELEMENTS) -> Iterator[tuple[torch.Tensor, ...]]:
    """Views of `tensors` (one shape) of about `size` elements each, aligned across them: flat ranges
    where all are contiguous, else ranges along their longest dimension. The tensors whole where they
    are small, on CUDA, or of different shapes."""
    first = tensors[0]
    if (first.numel() <= size or first.dim() == 0 or first.is_cuda
            or any(t.shape != first.shape for t in tensors[1:])):
        yield tensors
        return
    if all(t.is_contiguous() for t in tensors):
        flat = [t.reshape(-1) for t in tensors]
        for start in range(0, first.numel(), size):
            yield tuple(f[start : start + size] for f in flat)
        return
    dim = max(range(first.dim()), key=lambda d: first.shape[d])
    per = max(1, size * first.shape[dim] // first.numel())
    yield from zip(*(t.split(per, dim=dim) for t in tensors))


def combined_norm(norms: Sequence[float]) -> float:
    """The 2-norm of the whole from its slices' 2-norms (one slice's norm as it is, bit for bit)."""
    return norms[0] if len(norms) == 1 else math.fsum(n * n for n in norms) ** 0.5
