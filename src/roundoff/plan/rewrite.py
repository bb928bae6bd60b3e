"""The graph a policy plans on: its decompositions and CSE applied to a Program (planner steps 1-2).

These rewrites depend on the policy's `decompositions` and on whether it fuses, never on its
per-node or per-op overrides. So policies that differ only in overrides (blame's candidate fixes)
share one `Rewritten` program: `rewrite` once, then ``plan(program, policy, rewritten=...)`` per
policy skips the re-trace, which costs far more than the rest of planning.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from roundoff import capture
from roundoff.capture.program import Program
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


#: How `training_step_notes`' note begins (the terminal shows it on a passing check with a tie hazard).
ONE_GRAPH_NOTE = "the gradients a rounding-decided result reaches"


def training_step_notes(program: Program, policy: Policy) -> list[str]:
    """Under Inductor's decompositions, what planning a training step as one graph leaves unmodelled:
    torch.compile compiles forward and backward apart (what it saves at a reduction's shape is
    modelled: `roundoff.plan.saved`)."""
    if "inductor" not in policy.decompositions or not program.backward:
        return []
    one_graph = (
        f"{ONE_GRAPH_NOTE} (a tie with a stored maximum, a NaN) can differ from "
        "the compiled step's (`roundoff observe --backward --partitioned` runs the real step): forward and "
        "backward are planned as one graph, where torch.compile compiles a training step as two (the backward "
        "reads the activations the forward saved as stored, or recomputes them in its own kernels)")
    return [one_graph]
