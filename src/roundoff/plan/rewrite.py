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
