"""roundoff.plan: a Policy applied to a Program, and its trace.

``plan(program, policy) -> Plan`` decides per node the compute dtype, where values are rounded,
the kernels (``roundoff.plan.fusion``) and the FMA sites (``roundoff.plan.fma``);
``plan_pair`` plans two policies over one common graph;
``format_trace(plan)`` prints it as a Thunder-style trace with every cast explicit.
"""

from roundoff.plan.model import FmaSite, FusionGroup, NodeDecision, Plan
from roundoff.plan.planner import plan
from roundoff.plan.shared import plan_pair
from roundoff.plan.trace import format_side_by_side, format_trace

__all__ = [
    "FmaSite",
    "FusionGroup",
    "NodeDecision",
    "Plan",
    "format_side_by_side",
    "format_trace",
    "plan",
    "plan_pair",
]
