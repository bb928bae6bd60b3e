"""Runtime of a generated repro script: plain PyTorch, no roundoff import (copied into repro.py).

It evaluates a straight-line aten program in three ways:

- ``"eager"``: every op called on the real dtypes, as eager PyTorch runs the captured graph.
- ``"fp64"``: every float tensor held in fp64 (inputs upcast exactly), float dtype arguments
  rewritten to fp64, nothing rounded: the oracle.
- a decision table (one dict per node): the plan's numerics with explicit casts, the same contract
  as ``roundoff.execute``: narrow values (bf16/fp16/fp8) live in fp32 containers; a consumer reads a
  producer rounded (RNE, torch's own cast) to the producer's storage dtype when the producer is in its
  ``rounded_inputs``; operands are rounded to ``input_format`` and to a narrow ``compute`` dtype; a
  contracted FMA site is one correctly rounded fp32 FMA (a division folded into it multiplies by
  the correctly rounded reciprocal of its divisor; exact fp64 product, TwoSum, round-to-odd in
  fp64, one RNE to fp32: Boldo & Melquiond 2008); the result is rounded to a narrow compute dtype and,
  when ``rounds``, to its storage dtype; graph outputs are cast to their storage dtype.
"""

from __future__ import annotations

import base64
import math
from typing import Any

import torch

NARROW = (torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.float8_e5m2)


class R:
    """A reference to the value of node `nid`."""

    def __init__(self, nid: str) -> None:
        self.nid = nid


def load(b64: str, dtype: torch.dtype, shape: tuple[int, ...]) -> torch.Tensor:
    """A tensor from its raw little-endian bytes (base64), bit for bit."""
    raw = bytearray(base64.b64decode(b64))
    if not raw:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(raw, dtype=torch.uint8).view(dtype).reshape(shape).clone()


def container(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in NARROW else dtype


def rnd(v: Any, dtype: Any) -> Any:
    """`v` rounded (torch's RNE cast) to a narrow `dtype`, kept in its container; else unchanged."""
    if isinstance(v, (tuple, list)):
        dts = dtype if isinstance(dtype, (tuple, list)) else (dtype,) * len(v)
        return type(v)(rnd(x, d) for x, d in zip(v, dts))
    if isinstance(v, torch.Tensor) and v.is_floating_point() and dtype in NARROW:
        return v.to(dtype).to(v.dtype)
    return v


def _reciprocal(x: float, dtype: torch.dtype) -> float:
    """``1/x`` of a Python number in fp64, rounded to `dtype` (``1/±0`` is ``±inf``)."""
    r = math.copysign(math.inf, x) if x == 0 else 1.0 / x
    return float(torch.tensor(r, dtype=torch.float64).to(dtype))


def fma32(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Correctly rounded fp32 ``a*b + c`` (elementwise), via fp64 round-to-odd."""
    p = a.double() * b.double()  # exact: 24 + 24 significant bits fit in 53
    cd = c.double()
    s = p + cd
    bp = s - p
    err = (p - (s - bp)) + (cd - bp)  # TwoSum: s + err == p + c exactly (finite case)
    even = (s.view(torch.int64) & 1) == 0
    fix = torch.isfinite(s) & (err != 0) & even
    toward = torch.where(err > 0, torch.full_like(s, float("inf")), torch.full_like(s, -float("inf")))
    s = torch.where(fix, torch.nextafter(s, toward), s)
    return s.float()


def _map(obj: Any, fn: Any) -> Any:
    if isinstance(obj, (tuple, list)):
        return type(obj)(_map(x, fn) for x in obj)
    if isinstance(obj, dict):
        return {k: _map(v, fn) for k, v in obj.items()}
    return fn(obj)


def _is_ft(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.is_floating_point()


class Run:
    """One evaluation of the program: `mode` is "eager", "fp64" or a decision table (dict)."""

    def __init__(self, mode: Any, storage: dict[str, Any]) -> None:
        self.mode = mode
        self.storage = storage
        self.env: dict[str, Any] = {}
        self.calls: dict[str, tuple[tuple, dict]] = {}

    def input(self, nid: str, value: torch.Tensor) -> None:
        if self.mode == "eager" or not _is_ft(value):
            self.env[nid] = value
        elif self.mode == "fp64":
            self.env[nid] = value.double()
        else:
            self.env[nid] = value.to(container(value.dtype))

    def node(self, nid: str, op: Any, args: tuple, kwargs: dict) -> None:
        self.calls[nid] = (args, kwargs)
        if self.mode == "eager":
            read = _map((args, kwargs), lambda a: self.env[a.nid] if isinstance(a, R) else a)
            self.env[nid] = op(*read[0], **read[1])
        elif self.mode == "fp64":
            self.env[nid] = self._fp64(op, args, kwargs)
        else:
            self.env[nid] = self._planned(nid, op, args, kwargs)

    def _fp64(self, op: Any, args: tuple, kwargs: dict) -> Any:
        def conv(a: Any) -> Any:
            if isinstance(a, R):
                a = self.env[a.nid]
            if _is_ft(a):
                return a.double()
            if isinstance(a, torch.dtype) and a.is_floating_point:
                return torch.float64
            return a

        a, k = _map((args, kwargs), conv)
        return op(*a, **k)

    def _operands(self, d: dict, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        cdt = d["cdt"]
        fmts = [f for f in (d["input_format"], d["narrow"]) if f in NARROW]

        def prep(a: Any) -> Any:
            if isinstance(a, R):
                v = self.env[a.nid]
                a = rnd(v, self.storage[a.nid]) if a.nid in d["rounded_inputs"] else v
            if _is_ft(a):
                a = a.to(cdt)
                for f in fmts:
                    a = rnd(a, f)
                return a
            if isinstance(a, float) and d["scalar_format"] in NARROW:
                return float(torch.tensor(a, dtype=torch.float64).to(d["scalar_format"]).double())
            if isinstance(a, torch.dtype) and a.is_floating_point:
                return cdt
            return a

        return _map((args, kwargs), prep)

    def _planned(self, nid: str, op: Any, args: tuple, kwargs: dict) -> Any:
        d = self.mode[nid]
        a, k = self._operands(d, args, kwargs)
        if d["fma"] is not None:
            mul_id, operand, negate, divides = d["fma"]
            (x, y), _ = self._operands(self.mode[mul_id], *self.calls[mul_id])
            c = a[1 - operand]
            cdt = d["cdt"]
            if divides:  # x / y computed as x * (1/y), the reciprocal correctly rounded
                y = torch.reciprocal(y.to(cdt)) if isinstance(y, torch.Tensor) else _reciprocal(y, cdt)
            x, y, c = (t if isinstance(t, torch.Tensor) else torch.tensor(t, dtype=cdt) for t in (x, y, c))
            if negate == "c":
                c = -c
            elif negate == "a":
                x = -x
            x, y, c = (t.contiguous() for t in torch.broadcast_tensors(x.to(cdt), y.to(cdt), c.to(cdt)))
            out = fma32(x, y, c)
        else:
            out = op(*a, **k)
        if d["narrow"] is not None:
            out = rnd(out, d["narrow"])
        if d["rounds"]:
            out = rnd(out, self.storage[nid])
        return out

    def outputs(self, nids: list[str]) -> list[Any]:
        vals = [self.env[n] for n in nids]
        if self.mode in ("eager", "fp64"):
            return vals
        return [v.to(self.storage[n]) if _is_ft(v) else v for v, n in zip(vals, nids)]



def _quiet(*args: Any, **kwargs: Any) -> None:
    return None


def _rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.sqrt(torch.mean((a.double() - b.double()) ** 2)))


def within(base: torch.Tensor, res: torch.Tensor, fp64: torch.Tensor, tol: float, ratio: Any) -> bool:
    """One output: PyTorch's `same` rule, or with `ratio` a stricter RMSE bound (see `verdict`)."""
    from torch._dynamo.utils import same

    if ratio is None:
        return bool(same(base, res, fp64, tol=tol, log_error=_quiet))
    if bool((torch.isnan(res) & ~torch.isnan(base)).any()):
        return False
    return _rmse(res, fp64) <= ratio * _rmse(base, fp64) + tol / 10.0


def verdict(ref: list[Any], res: list[Any], fp64: list[Any], reference: str, tol: float,
            ratio: Any = None) -> bool:
    """PyTorch's accuracy rule (`torch._dynamo.utils.same`, RMSE against fp64) on every float output.

    Against "eager" the reference is the eager run; against "oracle" it is the fp64 run rounded to
    the output's dtype (the best the output format can hold). With `ratio` (a user tolerance, as
    Polygraphy takes one) an output passes when it has no NaN the reference lacks and
    ``rmse(res, fp64) <= ratio * rmse(reference, fp64) + tol/10`` (same's own form, own multiplier).
    """
    ok = True
    for r, x, f in zip(ref, res, fp64):
        if not _is_ft(x):
            continue
        base = f.to(x.dtype) if reference == "oracle" else r
        ok = ok and within(base, x, f, tol, ratio)
    return ok


def describe(res: list[Any], fp64: list[Any]) -> str:
    """Per float output: max |error| against fp64 over finite entries, and non-finite counts."""
    parts = []
    for i, (x, f) in enumerate(zip(res, fp64)):
        if not _is_ft(x):
            continue
        e = (x.double() - f).abs()
        finite = torch.isfinite(e)
        worst = float(e[finite].max()) if bool(finite.any()) else float("nan")
        parts.append(
            f"out{i}: max|err|={worst:.3g} nan={int(torch.isnan(x).sum())} "
            f"inf={int(torch.isinf(x).sum())} (fp64 ref nan={int(torch.isnan(f).sum())})"
        )
    return "; ".join(parts)
