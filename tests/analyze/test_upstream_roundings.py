"""A value a later op amplifies is named with the 16-bit roundings upstream that are in it too, and a
factory that makes its values in 16 bits is said to be the code's to widen (trial 88: a NeRF's bf16
``linspace`` depths, amplified by the positional encoding's ``cos``: keeping only the position wider,
as the finding said, left the gradients 50x over fp64's rounding)."""

from __future__ import annotations

import math

import torch

from roundoff.analyze import check
from roundoff.capture import capture

BF16 = torch.bfloat16


def _encoded(t_dtype: torch.dtype, pts_dtype: torch.dtype):
    def encoded(o: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        t = torch.linspace(2.0, 6.0, 32, dtype=BF16).to(t_dtype)
        pts = o.to(pts_dtype)[:, None] + d.to(pts_dtype)[:, None] * t[None, :]
        return torch.cos(256 * math.pi * pts)
    return encoded


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return (-4 + 0.1 * torch.randn(64, generator=g)).to(BF16), (1 + 0.1 * torch.randn(64, generator=g)).to(BF16)  # (a NeRF's rays)


def _error(fn, exact_t: bool) -> float:
    """Normwise relative error of `fn` (by hand) against fp64 of the same code with exact depths."""
    o, d = _inputs()
    exact = torch.cos(256 * math.pi * (o.double()[:, None] + d.double()[:, None] * torch.linspace(2.0, 6.0, 32,
                                                                                                  dtype=torch.float64)))
    got = fn(o, d).double() if not exact_t else torch.cos(256 * math.pi * (
        o.double()[:, None] + d.double()[:, None] * torch.linspace(2.0, 6.0, 32, dtype=torch.float32).double()))
    return float((got - exact).norm() / exact.norm())


def _linspace_id(fn) -> str:
    program = capture(fn, *_inputs())
    (nid,) = [n.meta["roundoff_id"] for n in program.nodes() if "linspace" in str(n.target)]
    return nid


def test_the_roundings_upstream_and_the_factory_are_named() -> None:
    fn = _encoded(BF16, BF16)
    first = check(fn, _inputs(), "eager", against="oracle").explanations[0]
    nid = _linspace_id(fn)
    assert "is within the rounding of bfloat16" in first and "`mul`" in first, first
    assert f"`linspace` ({nid} at" in first and "makes its values in bfloat16 itself" in first, first
    # by hand: the position in fp32 from the bf16 depths is still far off; fp32 depths are not
    kept = _error(_encoded(torch.float32, torch.float32), exact_t=False)
    assert kept > 4 * _error(None, exact_t=True) and kept > 0.05, kept


def test_a_value_held_in_fp32_is_not_said_to_be_rounded_in_bf16() -> None:
    """The position in fp32 (``.float()`` of the bf16 depths) makes no error of its own: the finding says it is
    held in fp32 and carries the linspace's rounding, not that it is 'within the rounding of bfloat16'."""
    fn = _encoded(torch.float32, torch.float32)
    first = check(fn, _inputs(), "eager", against="oracle").explanations[0]
    assert "held in float32, carries an error made before it" in first and "is within the rounding" not in first, first
    assert f"`linspace` ({_linspace_id(fn)} at test_upstream_roundings.py:20) makes its values in bfloat16 itself" in first


def _upcast_then_amplified(x: torch.Tensor) -> torch.Tensor:
    s = x * 3.0
    t = s.float()  # exact: rounds nothing
    u = (t * 7.0).half()
    return torch.exp(u.float() * 40.0).sum()


def test_an_exact_upcast_is_not_named_among_the_roundings_upstream() -> None:
    """Trial 103: an fp16 rotary's ``.float()`` was listed among the values "already off fp64", in float32, as if
    it rounded there; it carries the fp16 ``mul``'s rounding, which is named. Oracle: torch's casts (fp16 -> fp32
    -> fp16 gives every fp16 value back, and fp32 holds it exactly in fp64)."""
    x = torch.linspace(0.01, 0.07, 64).half()
    s = x * 3.0
    assert torch.equal(s.float().half(), s) and torch.equal(s.float().double(), s.double())
    program = capture(_upcast_then_amplified, x)
    ids = {str(n.target).split(".")[-2]: n.meta["roundoff_id"] for n in program.nodes() if n.op == "call_function"
           and n.meta.get("roundoff_source", "").endswith(f":{_upcast_then_amplified.__code__.co_firstlineno + 2}")}
    first = check(_upcast_then_amplified, (x,), "eager", against="oracle").explanations[0]
    product = next(n.meta["roundoff_id"] for n in program.nodes() if n.op == "call_function" and n.meta.get(
        "roundoff_source", "").endswith(f":{_upcast_then_amplified.__code__.co_firstlineno + 1}"))
    assert f"`mul` ({product} at" in first and "in float16:" in first, first
    assert f"`_to_copy` ({ids['_to_copy']} at" not in first and "in float32:" not in first, (ids, first)
