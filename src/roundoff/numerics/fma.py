"""Correctly rounded fused multiply-add in fp32: ``fma(a, b, c) = RN_fp32(a*b + c)``, one rounding.

Construction (Boldo & Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using
rounding to odd", IEEE TC 2008):
1. ``p = a*b`` in fp64 is exact: 24+24 significant bits fit in 53, and fp32 exponents cannot overflow
   or underflow fp64 (|p| <= 2**256, nonzero |p| >= 2**-298).
2. ``s = p + c`` in fp64 with its exact error ``e`` (TwoSum, no branches), so ``s + e == a*b + c``.
3. ``s`` is turned into the round-to-odd result of the exact sum: if ``e != 0`` and s's last bit is
   even, step one ulp towards ``e`` (the two fp64 neighbours of the exact value differ in parity).
4. Rounding that fp64 value to fp32 with RNE is the correctly rounded result, because round-to-odd at
   53 >= 2*24 + 2 bits followed by RNE never double-rounds.
Overflow gives ±inf, tiny results become fp32 subnormals (no flush to zero), zeros get IEEE signs
(``x*y + (-x*y)`` is +0.0), and inf/NaN operands give what ``fmaf`` gives (inf*0 and inf-inf are NaN).
"""

from __future__ import annotations

import torch

__all__ = ["fma"]

_OPERAND_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _operand(v: object, name: str, device: torch.device | None) -> torch.Tensor:
    """An operand as an fp64 tensor holding its exact fp32 value (bf16/fp16 upcast exactly)."""
    if isinstance(v, torch.Tensor):
        if v.dtype not in _OPERAND_DTYPES:
            raise TypeError(
                f"fma operand {name} has dtype {v.dtype}; accepted: float32, bfloat16, float16 tensors "
                "or Python numbers (converted to fp32). For fp64 operands use plain fp64 arithmetic."
            )
        return v.to(torch.float64)
    if isinstance(v, (bool, complex)) or not isinstance(v, (int, float)):
        raise TypeError(f"fma operand {name} must be a float tensor or a real Python number, got {type(v).__name__}")
    # a fill, not a host-to-device copy (CUDA graph capture forbids those); the same fp32 rounding
    return torch.full((), v, dtype=torch.float32, device=device).to(torch.float64)


def fma(a: torch.Tensor | float, b: torch.Tensor | float, c: torch.Tensor | float) -> torch.Tensor:
    """``a*b + c`` computed exactly and rounded once to fp32 (RNE); fp32 result, broadcast shape.

    Operands: fp32/bf16/fp16 tensors (bf16/fp16 are computed in fp32, as eager opmath does) or Python
    numbers, which are first rounded to fp32 like a 0-dim fp32 tensor. All tensors on one device.
    """
    device = next((t.device for t in (a, b, c) if isinstance(t, torch.Tensor)), None)
    shapes = {n: tuple(t.shape) for t, n in ((a, "a"), (b, "b"), (c, "c")) if isinstance(t, torch.Tensor)}
    try:
        shape = torch.broadcast_shapes(*shapes.values())
    except RuntimeError:
        raise ValueError(f"fma: the operands' shapes do not broadcast to one shape: "
                         f"{', '.join(f'{n} {list(s)}' for n, s in shapes.items())}") from None
    if shape.numel() <= CHUNK:
        return _fma64(*(_operand(v, n, device) for v, n in ((a, "a"), (b, "b"), (c, "c"))))
    # Large: elementwise, so computed chunk by chunk into the result; the ~10 fp64 temporaries of
    # one chunk instead of the whole tensor (same bits).
    ops = [v if isinstance(v, torch.Tensor) else _operand(v, n, device).to(torch.float32) for v, n in ((a, "a"), (b, "b"), (c, "c"))]
    full = [t.expand(shape) for t in ops]  # views: broadcasting copies nothing
    out = torch.empty(shape, dtype=torch.float32, device=device)
    rows = max(1, CHUNK // max(1, shape.numel() // shape[0]))  # chunks of whole leading-dim rows
    for i in range(0, shape[0], rows):
        out[i:i + rows] = _fma64(*(_operand(t[i:i + rows], n, device) for t, n in zip(full, "abc")))
    return out


CHUNK = 2**18  # elements per chunk of a large fma (a chunk's temporaries: ~20 MiB)


def _fma64(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """Steps 1-4 of the module docstring on fp64 operands holding exact fp32 values."""
    p = x * y  # exact
    s = p + z
    # TwoSum (Knuth): e is the exact rounding error of s = fl(p + z). The same operations as
    # e = (p - (s - bb)) + (z - bb), written into the temporaries (`out=` a full alias: elementwise).
    bb = s - p
    e = s - bb
    torch.sub(p, e, out=e)
    del p
    torch.sub(z, bb, out=bb)
    e.add_(bb)
    del bb
    bits = s.view(torch.int64)
    even = torch.bitwise_and(bits, 1) == 0
    inexact = (e != 0) & torch.isfinite(e)
    # One ulp in the direction of e: +1 on the bit pattern moves away from zero, -1 towards it.
    step = torch.where((e > 0) == (s > 0), 1, -1)
    del e
    odd = bits + step.mul_((inexact & even).to(torch.int64))
    return odd.view(torch.float64).to(torch.float32)
