"""`BlameResult`: what blame found, in a form the report layer and the CLI can render as-is."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from roundoff.blame.changes import Change
from roundoff.policy.model import Policy

SCHEMA_VERSION = 1


class BlameStatus(enum.Enum):
    """Outcome of a blame run."""

    FIXED = "fixed"  # a 1-minimal change set brings the program within tolerance
    ALREADY_OK = "already_ok"  # the policy as given is already within tolerance: nothing to blame
    NO_FIX = "no_fix"  # even every candidate change together does not bring it within tolerance


@dataclass(frozen=True)
class BlameResult:
    """A change set and its evidence.

    `changes` are in graph order, each with its plain-words explanation (same order);
    `policy_toml` is a complete policy (the base policy plus `[node_overrides]`) that ``--policy``
    accepts (None without the optional `tomli-w`), `fixed_policy` the same as a `Policy` (for
    ``roundoff.compile(fn, policy=result.fixed_policy)`` or `check`); `repro` is a standalone script (None when not requested or when status is not FIXED).
    `evaluations` counts distinct change sets run; `nodes_recomputed` / `nodes_full` is the work the
    node-value cache left versus re-running every node for every evaluation. `affects`: the nodes whose
    computation the fix changes (`roundoff.blame.changes.affected_nodes`: the changed nodes and those
    reading a value they now round differently, e.g. the `sub` whose operands a fix keeps in fp32).
    """

    program: str
    policy: str
    reference: str
    search: str
    status: BlameStatus
    changes: tuple[Change, ...]
    explanations: tuple[str, ...]
    candidates: int
    evaluations: int
    nodes_recomputed: int
    nodes_full: int
    ok_before: bool
    ok_after: bool
    policy_toml: str | None = None
    fixed_policy: Policy | None = field(default=None, repr=False)
    repro: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    affects: tuple[str, ...] = field(default_factory=tuple)
    #: (output, RMSE over its reference) for each output the fix leaves over the limit by its values,
    #: which check passes because no node on its path is flagged (trimmed to what check needs)
    over_limit: tuple[tuple[str, float], ...] = ()
    #: The output rule the fix was judged by (check's `--rule`: same, allclose or bitwise).
    rule: str = "same"

    @property
    def fixed(self) -> bool:
        return self.status is BlameStatus.FIXED

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (schema version `SCHEMA_VERSION`; the version keys as `check`'s document has them)."""
        from roundoff import __version__

        return {
            "schema": "roundoff.blame",
            "schema_version": SCHEMA_VERSION,
            "roundoff_version": __version__,
            "program": self.program,
            "policy": self.policy,
            "reference": self.reference,
            "rule": self.rule,
            "search": self.search,
            "status": self.status.value,
            "ok_before": self.ok_before,
            "ok_after": self.ok_after,
            "candidates": self.candidates,
            "evaluations": self.evaluations,
            "nodes_recomputed": self.nodes_recomputed,
            "nodes_full": self.nodes_full,
            "changes": [
                {
                    "node_id": c.node_id,
                    "op": c.op,
                    "source": c.source,
                    "kind": c.kind.value,
                    "override": {
                        k: (v.value if isinstance(v, enum.Enum) else v)
                        for k, v in vars(c.override).items()
                        if v is not None
                    },
                    "explanation": e,
                }
                for c, e in zip(self.changes, self.explanations)
            ],
            "policy_toml": self.policy_toml,
            "repro": self.repro,
            "notes": list(self.notes),
            "affects": list(self.affects),
            "over_limit": [{"output": name, "x_reference": ratio} for name, ratio in self.over_limit],
        }
