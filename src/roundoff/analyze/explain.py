"""Plain-words findings of a `CheckResult`, in the order a user should read them."""

from __future__ import annotations

import torch.fx

from roundoff.analyze.hazards import product_words
from roundoff.analyze.result import CheckResult, NodeReport
from roundoff.capture.program import NODE_ID
from roundoff.plan.model import Plan


def _at(r: NodeReport) -> str:
    return f"`{r.op}` ({r.node_id}{' at ' + r.source if r.source else ''})"


def _op(n: torch.fx.Node) -> str:
    t = n.target
    return getattr(getattr(t, "overloadpacket", t), "__name__", str(t))


def _kind(r: NodeReport) -> str:
    m = r.vs_oracle
    return "NaN" if m.nan and not m.ref_nan else "inf"


def explain(result: CheckResult, plan: Plan, zero_operands: dict[str, list[str]] | None = None) -> tuple[str, ...]:
    """Sentences: failing outputs, the NaN/inf origin and its cause, first divergence, culprits, hazards."""
    by_id = {r.node_id: r for r in result.nodes}
    lines: list[str] = []
    for o in result.outputs:
        if not o.passes:
            lines.append(
                f"output `{o.name}` diverges from {result.against}: RMSE against fp64 is {o.rmse_result:.3g}, "
                f"the reference's is {o.rmse_reference:.3g} (PyTorch's `same` rule allows a small multiple)."
            )
    if result.nan_origin is not None and result.nan_origin in by_id:
        zeros = (zero_operands or {}).get(result.nan_origin, [])
        lines.append(_origin_sentence(by_id[result.nan_origin], by_id, plan, zeros))
    if result.first_divergent is not None and result.first_divergent != result.nan_origin:
        r = by_id[result.first_divergent]
        ref = r.vs_reference or r.vs_oracle
        own = (
            "it loses the accuracy itself" if r.local is not None and r.local.max_bits >= r.vs_oracle.max_bits / 2
            else "most of it is inherited from its inputs"
        )
        lines.append(
            f"first divergence at {_at(r)}: {ref.mismatch_fraction:.1%} of elements differ from {result.against}, "
            f"up to {r.vs_oracle.max_bits:.1f} bits of error against fp64 ({own})."
        )
    for nid in result.culprits[:3]:
        r = by_id[nid]
        if r.local is not None and nid not in (result.nan_origin, result.first_divergent):
            lines.append(f"{_at(r)} loses accuracy itself: up to {r.local.max_bits:.1f} bits recomputed from fp64 inputs.")
    lines.extend(h.message for h in result.hazards)
    return tuple(lines)


def _origin_sentence(r: NodeReport, by_id: dict[str, NodeReport], plan: Plan, zeros: list[str]) -> str:
    node = plan.program.node(r.node_id)
    if zeros:
        z = plan.program.node(zeros[0])
        made_by = ", ".join(f"`{_op(a)}` ({a.meta.get(NODE_ID)})" for a in z.all_input_nodes)
        return (
            f"{_at(r)} makes {_kind(r)} from finite inputs: its operand `{_op(z)}` "
            f"({zeros[0]}) is 0 where fp64 is not (computed from {made_by})."
        )
    for p in node.all_input_nodes:
        pr = by_id.get(p.meta.get(NODE_ID, ""))
        d = plan.decisions.get(p.meta.get(NODE_ID, ""))
        if pr is not None and d is not None and d.fma is not None and d.fma.contracted:
            return (
                f"{_at(pr)}: FMA contraction keeps the rounding error of {product_words(plan.program.node(d.fma.mul_id))} ({d.fma.mul_id}) "
                f"(about {pr.vs_oracle.max_abs:.2g} away from fp64); {_at(r)} turns it into {_kind(r)}."
            )
    worst = max(
        (by_id[p.meta.get(NODE_ID, "")] for p in node.all_input_nodes if p.meta.get(NODE_ID, "") in by_id),
        key=lambda x: x.vs_oracle.max_bits,
        default=None,
    )
    tail = (
        f"; its input {_at(worst)} is already {worst.vs_oracle.max_abs:.2g} away from fp64"
        if worst is not None and worst.vs_oracle.max_bits > 0 else ""
    )
    return f"{_at(r)} makes {_kind(r)} from finite inputs{tail}."
