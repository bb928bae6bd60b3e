"""roundoff.execute: run a Plan with its numerics emulated, the fp64 oracle, and the real eager run.

Public API: `run_plan`, `complete_inputs`, `run_oracle`, `run_eager`, `run_keep`, `Lockstep` (several numerics over one
graph in one streaming pass), `PlanNumerics`, `OracleNumerics`, `TranscendentalImpl`, `NoWideKernelError` (an op
with no kernel for the dtype it is evaluated in and no decomposition: `roundoff.execute.wide_kernels`).
"""

from roundoff.execute.interpreter import Lockstep
from roundoff.execute.node_numerics import OracleNumerics, PlanNumerics
from roundoff.execute.run import (
    complete_inputs,
    plan_numerics,
    run_eager,
    run_keep,
    run_oracle,
    run_plan,
)
from roundoff.execute.transcendental import TranscendentalImpl
from roundoff.execute.wide_kernels import NoWideKernelError

__all__ = [
    "Lockstep",
    "NoWideKernelError",
    "OracleNumerics",
    "PlanNumerics",
    "TranscendentalImpl",
    "complete_inputs",
    "plan_numerics",
    "run_eager",
    "run_keep",
    "run_oracle",
    "run_plan",
]
