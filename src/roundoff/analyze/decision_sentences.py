"""Discrete decisions in words: selections and comparisons that decide otherwise than fp64, and outputs that
pass only by a decision near a tie."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.fx

from roundoff.analyze.culprits import (
    upstream,
)
from roundoff.analyze.naming import node_at, nonfinite_kind, op_name, report_at
from roundoff.analyze.result import CheckResult, NodeReport
from roundoff.analyze.selections import COMPARISONS
from roundoff.capture.program import (
    NODE_ID,
    Program,
)
from roundoff.plan.saved import forward_ids


def flip_sentences(result: CheckResult, node: Callable[[str], torch.fx.Node]) -> list[tuple[str, bool]]:
    """(`flip_sentence`, whether it follows a named cause) per selection of `result` that chose other
    indices than fp64; `node` gives a node by id."""
    named = set(result.culprits)
    out = []
    for nid, n, of in result.selection_flips:
        sel = node(nid)
        causes = sorted((u for u in upstream(sel) if u.meta.get(NODE_ID) in named), key=lambda u: result.culprits.index(
            u.meta.get(NODE_ID)))
        out.append((flip_sentence(sel, n, of, after_cause=causes), bool(causes)))
    return out


def near_tie_sentences(result: CheckResult, program: Program) -> list[str]:
    """One sentence per set of outputs that pass with fp64's decisions at comparisons the policy decided
    otherwise near a tie (`OutputVerdict.near_ties`; `roundoff.analyze.decisions`)."""
    groups: dict[tuple[str, ...], list] = {}
    for o in result.outputs:
        if o.near_ties:
            groups.setdefault(o.near_ties, []).append(o)
    flips = {d.node_id: d for d in result.near_tie_decisions}
    backward = program.num_forward_outputs < len(program.output_args())
    forward = forward_ids(program) if backward else set()
    lines = []
    for ids, outs in groups.items():
        shown = [nid for nid in ids if nid in flips]
        where = "; ".join(
            f"{node_at(program.node(nid))}{' in the backward' if backward and nid not in forward else ''} decides "
            f"otherwise than fp64 at {flips[nid].differing} of {flips[nid].of} elements ({result.against}'s run at "
            f"{flips[nid].reference_differing})" for nid in shown[:2]) + (
            f"; {len(shown) - 2} more comparison(s) likewise" if len(shown) > 2 else "")
        first = outs[0]
        names = f"`{first.name}` passes" if len(outs) == 1 else f"`{first.name}` and {len(outs) - 1} more output(s) pass"
        lines.append(
            f"{names} by a decision near a tie, not by this policy's arithmetic: {where}; at each such element fp64's operand "
            f"lies within {result.against}'s own largest error at that comparison of the threshold, where any "
            f"16-bit run (the real compiled program's too) may fall either way; what is computed from that element "
            f"moves by its whole size. With fp64's decisions there in both runs, `{first.name}`'s RMSE is "
            f"{first.rmse_pinned:.3g} against {result.against}'s {first.rmse_reference_pinned:.3g} (as run: "
            f"{first.rmse_result:.3g} against {first.rmse_reference:.3g}), within the limit. A value computed from "
            "such a threshold is only as reproducible as the tie: compare runs on other inputs before trusting it.")
    return lines


def flip_sentence(n: torch.fx.Node, differing: int, of: int, after_cause: Sequence[torch.fx.Node] = ()) -> str:
    """A selection (topk, sort, argmax) that chose other indices than fp64: a discrete decision (or, where
    causes named before it are upstream, `after_cause`, also a consequence of the error they put in the
    scores, as of the rounding of the ops between: trial 95's VQ-VAE, whose argmin flips came from the
    distances' cancellation, was told to fix its encoder's matmul first)."""
    names = ", ".join(node_at(c) for c in after_cause[:2]) + (" and more" if len(after_cause) > 2 else "")
    if n.target in COMPARISONS:  # (a tie mask `x == x.amax()`, a threshold: trial 64)
        where = f"{node_at(n)} compares otherwise than fp64 at {differing} of {of} elements"
        if after_cause:
            return (where + f", downstream of {names} (named above): the values it compares carry that error, and "
                    "the rounding of the ops computing them from it. Fix those, or compare values computed in fp32.")
        return (where + ": operands equal or near equal in fp64, held rounded (or at different precisions), fall on "
                "the other side. What is computed from the other outcome differs from fp64 by more than rounding; "
                "hold both operands in one format, and compare values that can tie in fp32.")
    where = f"{node_at(n)} selects differently from fp64 at "
    if after_cause:
        return (where + f"{differing} of {of} positions, downstream of {names} (named above): the scores it ranks "
                "carry that error, and the rounding of the ops computing them from it. Fix those, or compute the "
                "scores in fp32, which makes such flips rarer.")
    return (
        where + f"{differing} of {of} positions: scores near a tie, rounded, fall on the other side. What is computed "
        "from the other choice differs from fp64 by more than rounding, and no wider format after the "
        "selection changes that; computing the scores it ranks in fp32 makes such flips rarer."
    )


def decision_sentence(n: torch.fx.Node, result: CheckResult, by_id: dict[str, NodeReport]) -> str:
    """Why a non-float node (a comparison) is a cause: a NaN/inf-making node divides by what it decides."""
    where = node_at(n)
    ops = ", ".join(f"`{op_name(a)}` ({a.meta.get(NODE_ID)})" for a in n.all_input_nodes)
    origin = next((m for m in n.graph.nodes if m.meta.get(NODE_ID) == result.nan_origin), None)
    return (
        f"{where} decides differently from fp64 (its operands {ops} are held at different precisions or "
        "carry rounding error): a value computed from it is 0 where fp64 is not, and "
        + (f"{report_at(by_id[result.nan_origin])} divides by it and makes {nonfinite_kind(by_id[result.nan_origin])}."
           if origin is not None and n in upstream(origin) else "a later node divides by it.")
    )
