"""A division folded into an FMA (``Division.RECIPROCAL_MULTIPLY``): emulated values against oracles.

CPU oracle: C ``fmaf`` through ctypes on ``(±a, R, ±c)`` with ``R`` numpy's fp32 ``1 / b`` (IEEE
fp32 division, as torch's fp32 reciprocal that the emulator uses on CPU), or for a Python-number
divisor numpy's fp32 rounding of the fp64 ``1 / s`` (the constant Inductor's GPU lowering multiplies
by). CUDA oracle (skipped without CUDA): real ``torch.compile`` output, bit for bit, with the
emulator evaluating ``R`` by Inductor's own reciprocal kernel (``transcendentals="inductor"``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch._dynamo

from roundoff.capture import capture
from roundoff.execute import run_plan
from roundoff.numerics import same_bits_mask
from roundoff.plan import plan
from roundoff.policy import OpOverride, get_policy

_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
_LIBM.fmaf.restype = ctypes.c_float
_LIBM.fmaf.argtypes = [ctypes.c_float] * 3

# name -> (function, sign of the product, sign of c) in fma(sa * a, R, sc * c)
VARIANTS = {
    "c - a/b": (lambda a, b, c: c - a / b, -1.0, 1.0),
    "a/b - c": (lambda a, b, c: a / b - c, 1.0, -1.0),
    "c + a/b": (lambda a, b, c: c + a / b, 1.0, 1.0),
    "a/b + c": (lambda a, b, c: a / b + c, 1.0, 1.0),
}
_REPRO = (
    'repro: python -c "import torch; from roundoff.capture import capture; from roundoff.plan import '
    "plan; from roundoff.execute import run_plan; f={fn}; x=torch.randn(9); "
    "print(run_plan(plan(capture(f, x, x, x), 'inductor-gpu'), (x, x, x))[0])\""
)


def _triples(
    n: int, seed: int, cancel: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """fp32 (a, b, c): wide exponents, huge and subnormal-edge divisors, zeros, inf and NaN, and c
    equal to ``cancel * fl(a * R)`` so the FMA returns the product's rounding error where the
    uncontracted ``c ± q`` gives 0."""
    g = torch.Generator().manual_seed(seed)

    def wide(k: int) -> torch.Tensor:
        return torch.randn(k, generator=g) * torch.exp2(
            torch.randint(-40, 40, (k,), generator=g).float()
        )

    a, b, c = wide(n), wide(n), wide(n)
    b[: n // 16] = torch.exp2(torch.empty(n // 16).uniform_(100, 126, generator=g))
    b[n // 16 : n // 8] = torch.exp2(torch.empty(n // 16).uniform_(-126, -110, generator=g))
    with np.errstate(divide="ignore"):
        r = (np.float32(1.0) / b.numpy()).astype(np.float32)
    c[n // 8 : n // 4] = cancel * torch.from_numpy(a.numpy()[n // 8 : n // 4] * r[n // 8 : n // 4])
    specials = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1.0, 3.0])
    a[-7:], b[-14:-7], c[-21:-14] = specials, specials, specials
    b[-3] = 0.0  # R = inf
    return a, b, c


def _fmaf(a: np.ndarray, r: np.ndarray, c: np.ndarray) -> torch.Tensor:
    out = [_LIBM.fmaf(float(x), float(y), float(z)) for x, y, z in zip(a, r, c)]
    return torch.tensor(out, dtype=torch.float32)


def _oracle(a: torch.Tensor, r: np.ndarray, c: torch.Tensor, sa: float, sc: float) -> torch.Tensor:
    return _fmaf(sa * a.float().numpy(), r, sc * c.float().numpy())




def _check(got: torch.Tensor, want: torch.Tensor, fn: str, inputs: tuple) -> None:
    bad = (~same_bits_mask(got, want)).nonzero().flatten()
    if bad.numel():
        i = int(bad[0])
        vals = [float(t.reshape(-1)[i]) for t in inputs]
        raise AssertionError(
            f"{bad.numel()} of {got.numel()} elements differ; first at {i}: inputs {vals}, got "
            f"{float(got.reshape(-1)[i])!r}, oracle {float(want.reshape(-1)[i])!r}\n{_REPRO.format(fn=fn)}"
        )


@pytest.mark.parametrize("name", sorted(VARIANTS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_emulated_division_site_equals_fmaf_with_reciprocal(name: str, dtype: torch.dtype) -> None:
    fn, sa, sc = VARIANTS[name]
    triples = _triples(1 << 13, seed=len(name) + (dtype == torch.bfloat16), cancel=-sa * sc)
    a, b, c = (t.to(dtype) for t in triples)
    p = plan(capture(fn, a, b, c), "inductor-gpu")
    assert len(p.fma_sites) == 1 and p.fma_sites[0].contracted, p.fma_sites
    got = run_plan(p, (a, b, c))[0]
    with np.errstate(divide="ignore"):  # 1/0 = inf, as torch's fp32 reciprocal
        r = (np.float32(1.0) / b.float().numpy()).astype(np.float32)
    # torch's RNE cast to bf16: the fp32 FMA result rounded once more, as the plan's output is
    want = _oracle(a, r, c, sa, sc).to(dtype)
    _check(got, want, f"lambda a, b, c: {name.replace('a/b', 'a / b')}", (a, b, c))
    # the sites do matter: IEEE c - a/b (torch, fp32) differs from the FMA somewhere
    plain = fn(a.float(), b.float(), c.float()).to(dtype)
    assert not bool(same_bits_mask(plain, want).all()), f"{name}: no element tells the FMA from c - a/b"


def test_number_divisor_site_equals_fmaf_with_inductor_constant() -> None:
    a, _, c = _triples(1 << 13, seed=3)
    s = 3.7
    p = plan(capture(lambda a, c: (c - a / s, a / s), a, c), "inductor-gpu")
    assert len(p.fma_sites) == 1 and p.fma_sites[0].contracted, p.fma_sites
    got, quotient = run_plan(p, (a, c))
    r = np.full(a.numel(), np.float32(np.float64(1.0) / np.float64(s)), dtype=np.float32)
    _check(got, _oracle(a, r, c, -1.0, 1.0), "lambda a, c: (c - a / 3.7, a / 3.7)", (a, c))
    _check(quotient, a / s, "the quotient output itself stays torch's a / 3.7", (a, c))


def test_uncontracted_and_shared_quotients_are_ieee() -> None:
    """Oracle: torch's own fp32 ``c - a/b`` when the site is switched off or the quotient is shared."""
    a, b, c = _triples(1 << 12, seed=5)
    fn = VARIANTS["c - a/b"][0]
    prog = capture(fn, a, b, c)
    (site,) = plan(prog, "inductor-gpu").fma_sites
    off = dataclasses.replace(
        get_policy("inductor-gpu"), node_overrides={site.node_id: OpOverride(contract_fma=False)}
    )
    _check(
        run_plan(plan(prog, off), (a, b, c))[0],
        fn(a, b, c),
        "c - a/b, contract_fma=False",
        (a, b, c),
    )

    def shared(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, ...]:
        q = a / b
        return c - q, q

    p = plan(capture(shared, a, b, c), "inductor-gpu")
    assert not p.fma_sites, p.fma_sites
    _check(run_plan(p, (a, b, c))[0], fn(a, b, c), "q = a / b; (c - q, q)", (a, b, c))


_CUDA = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs CUDA (Triton's div.full.f32)"
)


def _real(fn: Callable[..., Any], *xs: torch.Tensor) -> Any:
    torch._dynamo.reset()
    with torch.no_grad():
        return torch.compile(fn)(*xs)


@_CUDA
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_cuda_emulation_equals_real_inductor(name: str) -> None:
    fn = VARIANTS[name][0]
    a, b, c = (t.cuda() for t in _triples(1 << 18, seed=11))
    got = run_plan(
        plan(capture(fn, a, b, c), "inductor-gpu"), (a, b, c), transcendentals="inductor"
    )[0]
    _check(got.cpu(), _real(fn, a, b, c).cpu(), name, (a.cpu(), b.cpu(), c.cpu()))


@_CUDA
def test_cuda_number_divisor_and_shared_quotient_equal_real_inductor() -> None:
    a, b, c = (t.cuda() for t in _triples(1 << 18, seed=12))

    def number(a: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return c - a / 3.7, a / 3.7

    def shared(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, ...]:
        q = a / b
        return c - q, q

    for label, fn, xs in (("a / 3.7", number, (a, c)), ("shared a / b", shared, (a, b, c))):
        got = run_plan(plan(capture(fn, *xs), "inductor-gpu"), xs, transcendentals="inductor")
        real = _real(fn, *xs)
        for g, r in zip(got, real):
            _check(g.cpu(), r.cpu(), label, tuple(x.cpu() for x in xs))
