"""roundoff.capture: a PyTorch callable or nn.Module as an aten FX graph with stable node ids.

Public API: `capture`, `decompose`, `eliminate_common_subexpressions`, `DECOMPOSITION_SETS`,
`Program` (and `node_id` / `node_source` for its node metadata), `Specialization` /
`SpecializationKind` (a graph break checked across), `CaptureError`.
"""

from roundoff.capture.errors import CaptureError
from roundoff.capture.program import (
    NODE_ID,
    NODE_MODULE,
    NODE_SOURCE,
    Program,
    Specialization,
    SpecializationKind,
    node_id,
    node_source,
)
from roundoff.capture.retrace import DECOMPOSITION_SETS
from roundoff.capture.rewrite import decompose, eliminate_common_subexpressions
from roundoff.capture.trace import capture

__all__ = [
    "DECOMPOSITION_SETS",
    "NODE_ID",
    "NODE_MODULE",
    "NODE_SOURCE",
    "CaptureError",
    "Program",
    "Specialization",
    "SpecializationKind",
    "capture",
    "decompose",
    "eliminate_common_subexpressions",
    "node_id",
    "node_source",
]
