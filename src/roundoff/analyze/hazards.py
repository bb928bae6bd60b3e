"""Hazard lint: numeric traps in a plan, each with a message a user can act on.

Static checks read only the plan (graph + decisions); checks marked *dynamic* also read the
oracle's per-node maximum magnitudes (``oracle_absmax``) and the policy's error there.
"""

from __future__ import annotations

import math

import torch
import torch.fx

from roundoff.analyze.result import Hazard
from roundoff.capture.program import NODE_ID, node_source
from roundoff.plan.model import NodeDecision, Plan

_aten = torch.ops.aten
_EXP_LOG = {_aten.exp.default, _aten.log.default, _aten.exp2.default, _aten.expm1.default, _aten.pow.Tensor_Tensor}
_ADD_SUB = {_aten.add.Tensor, _aten.sub.Tensor}
_MAX = {_aten.amax.default, _aten.max.default, _aten.max.dim}
_SUMS = {_aten.sum.default, _aten.sum.dim_IntList, _aten.mean.default, _aten.mean.dim}
_FP16_MAX = 65504.0
_EXP_LIMIT = {torch.float16: math.log(_FP16_MAX), torch.bfloat16: 88.7, torch.float32: 88.7}
_UNIT = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11, torch.float32: 2.0**-24}


def _nid(n: torch.fx.Node) -> str:
    return n.meta.get(NODE_ID, n.name)


def _dtype(n: torch.fx.Node) -> torch.dtype | None:
    v = n.meta.get("val")
    return v.dtype if isinstance(v, torch.Tensor) else None


def _numel(n: torch.fx.Node) -> int:
    v = n.meta.get("val")
    return v.numel() if isinstance(v, torch.Tensor) else 0


def _reads_rounded(d: NodeDecision | None, p: torch.fx.Node, plan: Plan) -> bool:
    pd = plan.decisions.get(_nid(p))
    return bool((d is not None and _nid(p) in d.rounded_inputs) or (pd is not None and pd.rounds_result))


def _name(n: torch.fx.Node) -> str:
    return getattr(n.target, "__name__", str(n.target)).split(".")[0]


def _where(n: torch.fx.Node) -> str:
    src = node_source(n)
    return f"`{_name(n)}` ({_nid(n)}{' at ' + src if src else ''})"


def lint(plan: Plan, oracle_absmax: dict[str, float] | None = None) -> tuple[Hazard, ...]:
    """All hazards of `plan`; with `oracle_absmax` also the value-dependent ones."""
    absmax = oracle_absmax or {}
    out: list[Hazard] = []
    for n in plan.program.graph.nodes:
        if n.op != "call_function":
            continue
        d = plan.decisions.get(_nid(n))

        def add(kind: str, msg: str, n: torch.fx.Node = n) -> None:
            out.append(Hazard(kind, _nid(n), _name(n), node_source(n), msg))

        if d is not None and d.fma is not None and d.fma.contracted:
            mul = plan.program.node(d.fma.mul_id)
            other = n.args[1 - d.fma.operand]
            size = absmax.get(d.fma.mul_id)
            dt = _dtype(mul) or torch.float32
            err = f" (about {size * _UNIT.get(dt, 2.0**-24) / 2:.2g} here)" if size else ""
            same_product = isinstance(other, torch.fx.Node) and other.target == mul.target and other.args == mul.args
            feeds = [u for u in n.users if u.target in _EXP_LOG]
            add("fma-cancellation",
                f"{_where(n)}: FMA contraction computes `{_name(mul)}` ({d.fma.mul_id}) exactly but its other "
                f"operand rounded, so the result keeps the product's rounding error{err} instead of cancelling"
                + (" (both sides are the same product: the exact answer is 0)" if same_product else "")
                + (f"; `{_name(feeds[0])}` amplifies it" if feeds else "")
                + ". Fix: forbid contraction at this node (OpOverride(contract_fma=False)) or compute the product once.")
        if n.target in _EXP_LOG and n.args and isinstance(n.args[0], torch.fx.Node):
            src = n.args[0]
            sd = plan.decisions.get(_nid(src))
            if src.target in _ADD_SUB and sd is not None:
                ops = [a for a in src.args[:2] if isinstance(a, torch.fx.Node)]
                mixed = len(ops) == 2 and _reads_rounded(sd, ops[0], plan) != _reads_rounded(sd, ops[1], plan)
                if mixed or (sd.fma is not None and sd.fma.contracted):
                    add("exp-of-difference",
                        f"{_where(n)} of {_where(src)}, whose operands are held at different precisions "
                        f"({'FMA-contracted' if sd.fma else 'one rounded, one not'}): a difference that should be "
                        f"small or 0 can come out large, and `{_name(n)}` turns it into inf/0. Fix: round both "
                        f"operands the same way (policy rounding at this node) or forbid the FMA.")
            limit = _EXP_LIMIT.get(_dtype(n) or torch.float32, 88.7)
            if n.target is _aten.exp.default and absmax.get(_nid(src), 0.0) > limit:
                add("exp-overflow",
                    f"{_where(n)}: argument reaches {absmax[_nid(src)]:.3g} in the oracle, beyond {limit:.3g} where "
                    f"exp overflows in {_dtype(n)}. Subtract the maximum first (x - amax(x)), as softmax does.")
        if n.target is _aten.sub.Tensor and isinstance(n.args[1], torch.fx.Node) and n.args[1].target in _MAX:
            m = n.args[1]
            x = n.args[0]
            md = plan.decisions.get(_nid(m))
            if isinstance(x, torch.fx.Node) and m.args and m.args[0] is x and _reads_rounded(d, x, plan) != _reads_rounded(md, x, plan):
                add("max-subtraction-mismatch",
                    f"{_where(n)}: `x - amax(x)` reads x {'rounded' if _reads_rounded(d, x, plan) else 'unrounded'} "
                    f"but amax read it {'rounded' if _reads_rounded(md, x, plan) else 'unrounded'}: the difference can "
                    f"be > 0, so a following exp can exceed 1 or overflow. Fix: round x once before both uses.")
        if _dtype(n) == torch.float16 and absmax.get(_nid(n), 0.0) > _FP16_MAX:
            add("fp16-overflow",
                f"{_where(n)}: reaches {absmax[_nid(n)]:.3g} in the fp64 oracle, beyond fp16's 65504: it becomes "
                f"inf in fp16. Fix: scale the values down or compute this node in bf16/fp32.")
        if n.target in _SUMS and d is not None and n.args and isinstance(n.args[0], torch.fx.Node):
            terms = _numel(n.args[0]) // max(_numel(n), 1)
            acc = d.compute_dtype
            if acc in (torch.bfloat16, torch.float16) and terms >= 256:
                add("narrow-reduction",
                    f"{_where(n)}: sums {terms} terms accumulating in {acc}: past ~{int(1 / _UNIT[acc])} terms each "
                    f"new term falls below half an ulp of the sum and is lost. Fix: accumulate in fp32.")
        if n.target is _aten.add.Tensor and isinstance(n.args[1], float) and isinstance(n.args[0], torch.fx.Node):
            dt = _dtype(n)
            eps, big = abs(n.args[1]), absmax.get(_nid(n.args[0]))
            if dt in _UNIT and d is not None and d.rounds_result and big and 0 < eps < big * _UNIT[dt] / 2:
                add("absorbed-epsilon",
                    f"{_where(n)}: adds {eps:g} to values up to {big:.3g} and rounds to {dt}: the epsilon is below "
                    f"half an ulp and vanishes. Fix: add it in fp32 (keep the result unrounded) or use a larger eps.")
    return tuple(out)
