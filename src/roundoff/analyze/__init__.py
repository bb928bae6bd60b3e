"""roundoff.analyze: per-node diagnosis of a policy run against the fp64 oracle and a reference.

Public API: `check` -> `CheckResult` (with `NodeReport`, `OutputVerdict`, `Hazard`, `to_dict()`),
`lint` (hazards of a plan), `measure` -> `Metrics`, `same_rule` (PyTorch's accuracy rule).
"""

from roundoff.analyze.check import check
from roundoff.analyze.hazards import lint
from roundoff.analyze.metrics import Metrics, measure
from roundoff.analyze.result import CheckResult, Hazard, NodeReport, OutputVerdict
from roundoff.analyze.verdict import same_rule

__all__ = ["CheckResult", "Hazard", "Metrics", "NodeReport", "OutputVerdict", "check", "lint", "measure", "same_rule"]
