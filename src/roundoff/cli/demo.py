"""`roundoff demo`, first part: exact rounding and FMA on the numbers of the FMA bug report.

pytorch/pytorch#121558's follow-up: with x = 1134139801600.0 and scale = 0.180336877703666687
(both fp32), eager computes ``exp(x*scale - x*scale) = exp(0) = 1``. A compiler that contracts the
subtraction into ``fma(x, scale, -(x*scale))`` gets the exact rounding error of the fp32 product
instead of 0 (7916.0 here), and exp of that overflows fp32 to inf. Everything below is computed with
``roundoff.numerics`` (correctly rounded FMA, exact round-to-nearest-even casts).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

X = 1134139801600.0
SCALE = 0.180336877703666687


@dataclass(frozen=True)
class FmaDemo:
    """The demo's numbers. `product` is fp32 x*scale (rounded once, RNE); `exact` is the exact
    real product (exact in fp64: two 24-bit significands give at most 48 bits); `error` is
    ``fma(x, scale, -product)`` in fp32, the product's rounding error (exactly representable);
    `eager` is ``exp(product - product)``; `contracted` is ``exp(error)`` (overflows fp32 to inf).
    `rounded` maps a format name to the exact product rounded to that format (RNE; fp16
    overflows to inf)."""

    x: float
    scale: float
    product: float
    exact: float
    error: float
    eager: float
    contracted: float
    rounded: tuple[tuple[str, float], ...]


def fma_demo() -> FmaDemo:
    """Compute the demo with roundoff.numerics (fp32 operands, CPU)."""
    from roundoff.numerics import fma, round_to

    x = torch.tensor([X], dtype=torch.float32)
    s = torch.tensor([SCALE], dtype=torch.float32)
    product = x * s
    exact = x.double() * s.double()
    error = fma(x, s, -product)
    eager = torch.exp(product - product)
    contracted = torch.exp(error)
    rounded = tuple((f, float(round_to(exact, f).item())) for f in ("fp32", "bf16", "fp16"))
    return FmaDemo(
        x=float(x.item()),
        scale=float(s.item()),
        product=float(product.item()),
        exact=float(exact.item()),
        error=float(error.item()),
        eager=float(eager.item()),
        contracted=float(contracted.item()),
        rounded=rounded,
    )


def fma_rows(d: FmaDemo) -> list[tuple[str, str]]:
    """The demo as labelled lines for a two-column table."""
    rows = [
        ("x (fp32)", repr(d.x)),
        ("scale (fp32)", repr(d.scale)),
        ("x*scale exact", repr(d.exact)),
        ("x*scale in fp32 (RNE)", repr(d.product)),
    ]
    rows += [(f"exact x*scale rounded to {f}", repr(v)) for f, v in d.rounded]
    rows += [
        ("fma(x, scale, -(x*scale))", f"{d.error!r}  (the fp32 product's rounding error)"),
        ("eager: exp(x*scale - x*scale)", repr(d.eager)),
        ("contracted: exp(fma(x, scale, -(x*scale)))", f"{d.contracted!r}  (exp overflows fp32)"),
    ]
    return rows
