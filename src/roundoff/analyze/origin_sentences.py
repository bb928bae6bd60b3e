"""Why a node makes NaN/inf where fp64 is finite, in words: its own overflow, an operand's overflow or zero,
a contracted FMA's error, a 16-bit loss kernel's terms."""

from __future__ import annotations

import torch
import torch.fx

from roundoff.analyze.culprits import (
    path_cause,
)
from roundoff.analyze.hazards import fma_can_err, product_words
from roundoff.analyze.naming import node_at, nonfinite_kind, op_name, report_at
from roundoff.analyze.result import NodeReport
from roundoff.capture.program import (
    NODE_ID,
)
from roundoff.execute.native_kernels import LOSSES, accumulates_in_storage
from roundoff.plan.model import Plan


def overflowing(node: torch.fx.Node, by_id: dict[str, NodeReport], overflow: set[str]) -> list[str]:
    """`node`'s operands that overflow: inf where fp64 is finite, or flagged by an overflow hazard."""
    out = []
    for p in node.all_input_nodes:
        pid = p.meta.get(NODE_ID, "")
        pr = by_id.get(pid)
        if pid in overflow or (pr is not None and pr.vs_oracle.inf > pr.vs_oracle.ref_inf):
            out.append(f"`{op_name(p)}` ({pid})")
    return out


def _overflow_began(p: torch.fx.Node, by_id: dict[str, NodeReport]) -> NodeReport | None:
    """The first node whose format overflow `p`'s infinities carry (`p` itself, or the earliest of the
    operands it passes them on from: ``1 + exp(x)`` after an fp16 ``exp`` overflows), None where none is."""
    seen: set[torch.fx.Node] = set()
    began = None
    while p not in seen:
        seen.add(p)
        pr = by_id.get(p.meta.get(NODE_ID, ""))
        if pr is None or pr.vs_oracle.inf <= pr.vs_oracle.ref_inf:
            break
        began = pr if pr.overflow else began
        carriers = [a for a in p.all_input_nodes if (ar := by_id.get(a.meta.get(NODE_ID, ""))) is not None
                    and ar.vs_oracle.inf > ar.vs_oracle.ref_inf]
        if len(carriers) != 1:
            break
        p = carriers[0]
    return began


#: What each element of a loss kernel computes before the reduction (`loss_overflow_words`).
_LOSS_TERMS = {"mse_loss": "squared difference", "smooth_l1_loss": "loss", "huber_loss": "loss"}


def loss_overflow_words(node: torch.fx.Node, plan: Plan) -> str | None:
    """Where `node` is a loss that `plan` runs as eager's 16-bit kernel (`native_kernels.LOSSES`: each
    element's loss is computed and rounded in the 16-bit dtype, then reduced in it), how an inf it makes from
    finite inputs comes about: an element's term past the format's largest finite value; else None."""
    d = plan.decisions.get(node.meta.get(NODE_ID, ""))
    term = _LOSS_TERMS.get(op_name(node))
    if d is None or term is None or node.target not in LOSSES or not accumulates_in_storage(node, d):
        return None
    dtype = str(d.compute_dtype).removeprefix("torch.")
    return (f"eager's kernel computes each element's {term} in {dtype} before it reduces them, so a {term} past "
            f"{dtype}'s largest finite value ({torch.finfo(d.compute_dtype).max:g}) is inf where "
            f"fp64's loss is finite: compute the loss in float32 (`F.{op_name(node)}(input.float(), target.float())`)")


def origin_sentence(
    r: NodeReport, by_id: dict[str, NodeReport], plan: Plan, zeros: list[str], named: set[str] = frozenset(),
    overflow: set[str] = frozenset(),
) -> str:
    """Why `r` makes NaN/inf; an operand already `named` as a cause is referred to, not re-explained."""
    node = plan.program.node(r.node_id)
    if r.vs_oracle.inf > r.vs_oracle.ref_inf and (inside := loss_overflow_words(node, plan)) is not None:
        cause = path_cause(node, by_id)
        if r.local is not None and not r.local.new_nonfinite and cause is not None and cause.node_id in named:
            # (trial 105: a PatchTST's fp16 loss overflowed on inputs a one-pass variance had made ~150x fp64's;
            # the advice to compute the loss in float32 hid the inf, not the error)
            return (f"{report_at(r)} makes inf from finite inputs far from fp64's; computed from fp64's inputs, "
                    f"rounded as it reads them, it is finite: the inf follows from the error {report_at(cause)} "
                    "makes (above), which is the one to fix; a loss computed in float32 would hide the inf, not "
                    "that error.")
        return f"{report_at(r)} makes inf from finite inputs: {inside}."
    if r.overflow:
        return (
            f"{report_at(r)} overflows {r.dtype}: at {r.overflow} element(s) it is inf where fp64's value is beyond its "
            f"range (fp64 correctly rounded to {r.dtype} is inf too; elements NaN already are not counted), and a later node turns those infinities into wrong values "
            "(NaN, inf or 0 where fp64 is finite): compute it in a wider format or keep its values in range."
        )
    over = overflowing(node, by_id, overflow)
    began = next((b for b in (_overflow_began(p, by_id) for p in node.all_input_nodes) if b is not None), None)
    if over and began is not None and began.node_id in named and began.node_id != r.node_id:
        return (f"{report_at(r)} is where the overflow of {report_at(began)} (above) turns into {nonfinite_kind(r)} where fp64 is finite: "
                f"it reads {', '.join(over)} (fp64's values are finite, the stored ones inf).")
    if over:
        return (
            f"{report_at(r)} makes {nonfinite_kind(r)} where fp64 is finite: its operand(s) {', '.join(over)} exceed their "
            "format's range there (fp64's values are finite, the stored ones inf: overflow), not a value rounded to 0."
        )
    if zeros:
        z = plan.program.node(zeros[0])
        made_by = ", ".join(node_at(a) for a in z.all_input_nodes)
        # (trial 104: after an fp16 softmax's max subtraction, as the exp-overflow advice said, its probabilities
        # underflowed to 0 and the log of them made -inf: the sentence said what, not what to do)
        logs = node.target in (torch.ops.aten.log.default, torch.ops.aten.log2.default, torch.ops.aten.log10.default)
        fix = (f" A log of a value {r.dtype} rounds to 0 (a probability that underflows): compute the log directly "
               "(F.log_softmax, torch.logsumexp, F.cross_entropy on the logits) or its operand in float32."
               if logs else "")
        return (
            f"{report_at(r)} makes {nonfinite_kind(r)} from finite inputs: its operand `{op_name(z)}` "
            f"({zeros[0]}) is 0 where fp64 is not (computed from {made_by}).{fix}"
        )
    for p in node.all_input_nodes:
        pr = by_id.get(p.meta.get(NODE_ID, ""))
        d = plan.decisions.get(p.meta.get(NODE_ID, ""))
        if pr is not None and d is not None and d.fma is not None and fma_can_err(plan, d):
            if pr.node_id in named:
                return (
                    f"{report_at(r)} turns the error FMA contraction leaves in {report_at(pr)} (about "
                    f"{pr.vs_oracle.max_abs:.2g} away from fp64) into {nonfinite_kind(r)}."
                )
            return (
                f"{report_at(pr)}: FMA contraction keeps the rounding error of {product_words(plan.program.node(d.fma.mul_id))} ({d.fma.mul_id}) "
                f"(about {pr.vs_oracle.max_abs:.2g} away from fp64); {report_at(r)} turns it into {nonfinite_kind(r)}."
            )
    worst = max(
        (by_id[p.meta.get(NODE_ID, "")] for p in node.all_input_nodes if p.meta.get(NODE_ID, "") in by_id),
        key=lambda x: x.vs_oracle.max_bits,
        default=None,
    )
    tail = (
        f"; its input {report_at(worst)} is already {worst.vs_oracle.max_abs:.2g} away from fp64"
        if worst is not None and worst.vs_oracle.max_bits > 0 else ""
    )
    cause = path_cause(node, by_id)
    if cause is not None and cause is not worst:
        tail += (
            f", the error {report_at(cause)} makes itself ({cause.own_excess:.3g} times the rounding of "
            f"{cause.working_dtype or cause.dtype}, the largest on its path)"
        )
    return f"{report_at(r)} makes {nonfinite_kind(r)} from finite inputs{tail}."
