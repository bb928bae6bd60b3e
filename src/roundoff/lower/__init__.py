"""roundoff.lower: a plan lowered once to an FX graph with explicit rounding and FMA ops.

``lower(plan) -> torch.fx.GraphModule``: aten ops plus the custom ops ``roundoff::round_to`` and
``roundoff::fma``, kernel boundaries in ``node.meta["roundoff"]``; executing it is the emulation.
``lowered_code(gm)`` prints it as Python, ``format_lowered(plan)`` with a header (``roundoff trace
--lowered``); ``compile_lowered(gm, inputs)`` runs it under torch.compile (Inductor, CPU). Sits
between ``execute`` (whose semantics it traces) and ``analyze``.
"""

from roundoff.lower.code import format_lowered, lowered_code
from roundoff.lower.compiled import compile_lowered, direct_primitives, expand_primitives
from roundoff.lower.lower import LoweredFrom, Probe, lower, lower_oracle, lower_sides
from roundoff.lower.primitives import fma_op, round_op

__all__ = [
    "LoweredFrom",
    "compile_lowered",
    "direct_primitives",
    "expand_primitives",
    "fma_op",
    "format_lowered",
    "lower",
    "lower_oracle",
    "lower_sides",
    "Probe",
    "lowered_code",
    "round_op",
]
