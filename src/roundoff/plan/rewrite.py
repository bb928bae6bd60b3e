"""The graph a policy plans on: its decompositions and CSE applied to a Program (planner steps 1-2).

These rewrites depend on the policy's `decompositions` and on whether it fuses, never on its
per-node or per-op overrides. So policies that differ only in overrides (blame's candidate fixes)
share one `Rewritten` program: `rewrite` once, then ``plan(program, policy, rewritten=...)`` per
policy skips the re-trace, which costs far more than the rest of planning.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from roundoff import capture
from roundoff.capture.program import Program, node_id
from roundoff.capture.reduction_lowerings import REDUCTION_LOWERINGS
from roundoff.ops import short_name
from roundoff.policy.model import Policy


@dataclass(frozen=True)
class Rewritten:
    """`program` as `source` becomes under a policy with `decompositions` and (`fuses`) CSE;
    `cse` maps the ids CSE merged away to the id kept."""

    source: Program
    program: Program
    decompositions: tuple[str, ...]
    fuses: bool
    cse: dict[str, str] = field(default_factory=dict)

    def fits(self, program: Program, policy: Policy) -> bool:
        """Whether planning `program` under `policy` would rewrite it to this very graph."""
        return program is self.source and _key(policy) == (self.decompositions, self.fuses)


def _key(policy: Policy) -> tuple[tuple[str, ...], bool]:
    return tuple(policy.decompositions), policy.fusion.value != "none"


def rewrite(program: Program, policy: Policy) -> Rewritten:
    """`program` with `policy`'s decompositions (``capture.decompose``, stable ids kept) and, when
    the policy fuses, common-subexpression elimination (``capture.eliminate_common_subexpressions``)."""
    decompositions, fuses = _key(policy)
    out, cse = program, {}
    if decompositions:
        out = capture.decompose(out, decompositions)
    if fuses:
        out, cse = capture.eliminate_common_subexpressions(out)
    return Rewritten(program, out, decompositions, fuses, dict(cse))


def training_step_notes(program: Program, policy: Policy) -> list[str]:
    """Under Inductor's decompositions, what planning a training step as one graph leaves unmodelled:
    torch.compile compiles forward and backward apart (`_saved_means_note` for the 16-bit means)."""
    if "inductor" not in policy.decompositions or not program.backward:
        return []
    one_graph = (
        "the gradients a rounding-decided result reaches (a tie with a stored maximum, a NaN) can differ from "
        "the compiled step's (`roundoff observe --backward --partitioned` runs the real step): forward and "
        "backward are planned as one graph, where torch.compile compiles a training step as two (the backward "
        "reads the activations the forward saved as stored, or recomputes them in its own kernels)")
    return [one_graph, *_saved_means_note(program)]


def _saved_means_note(program: Program) -> list[str]:
    """In a training graph under Inductor's decompositions, 16-bit means and variances stay whole and
    stored rounded, as torch.compile saves them for the backward (`roundoff.capture.reduction_lowerings`):
    a note naming them and what that leaves unmodelled (`program`: the rewritten program)."""
    means = [
        f"{node_id(n)} ({short_name(n.target)})" for n in program.nodes()
        if n.op == "call_function" and n.target in REDUCTION_LOWERINGS
        and getattr(n.args[0].meta.get("val"), "dtype", None) in (torch.bfloat16, torch.float16)
    ]
    if not means:
        return []
    return [
        "NaN/inf at or after the 16-bit means/variances " + ", ".join(means) + " may not happen in the compiled "
        "step (`roundoff observe --backward --partitioned` shows its values): they are planned stored rounded, "
        "as a compiled training step saves them for the backward and its full-width kernels read them so, but "
        "Inductor computes their consumers of the mean's own shape in the reduction's kernel from the fp32 sum, "
        "which is not modelled (a naive variance mean(x*x) - mean(x)**2 is not negative there; an fp16 "
        "RMSNorm's rsqrt(mean(x*x)) of squares beyond 65504 is finite there)"
    ]
