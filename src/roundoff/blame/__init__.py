"""roundoff.blame: delta debugging over a plan's precision decisions, and standalone repro scripts.

Public API: `blame`, `BlameResult`, `BlameStatus`, `Change`, `ChangeKind`, `Reference`,
`candidate_changes`, `apply_changes`, `ddmin`, `prefix_search`, `Evaluator`, `repro_script`.
"""

from roundoff.blame.api import SEARCHES, blame, overrides_of
from roundoff.blame.changes import (
    Change,
    ChangeKind,
    Reference,
    apply_changes,
    candidate_changes,
    downstream,
    merge_overrides,
)
from roundoff.blame.evaluate import Cost, Evaluator
from roundoff.blame.repro import ReproError, repro_script
from roundoff.blame.result import BlameResult, BlameStatus
from roundoff.blame.search import SearchOutcome, ddmin, prefix_search

__all__ = [
    "SEARCHES",
    "BlameResult",
    "BlameStatus",
    "Change",
    "ChangeKind",
    "Cost",
    "Evaluator",
    "Reference",
    "ReproError",
    "SearchOutcome",
    "apply_changes",
    "blame",
    "candidate_changes",
    "ddmin",
    "downstream",
    "merge_overrides",
    "overrides_of",
    "prefix_search",
    "repro_script",
]
