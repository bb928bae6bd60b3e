"""roundoff.compiler: enforce a precision policy on Inductor (``roundoff.compile``), checking mode."""

from roundoff.compiler.backend import BACKEND_NAME, compile, make_backend, register
from roundoff.compiler.checking import Checker, OutputCheck, compare_outputs
from roundoff.compiler.errors import (
    RoundoffCheckingWarning,
    RoundoffCompileError,
    RoundoffDivergenceError,
    RoundoffDivergenceWarning,
    RoundoffEnforcementWarning,
    RoundoffOverflowWarning,
    RoundoffPlacementError,
)
from roundoff.compiler.reference import Fp64Reference
from roundoff.compiler.settings import InductorSettings, has_config, inductor_settings

register()

__all__ = [
    "BACKEND_NAME",
    "Checker",
    "Fp64Reference",
    "InductorSettings",
    "OutputCheck",
    "RoundoffCheckingWarning",
    "RoundoffCompileError",
    "RoundoffDivergenceError",
    "RoundoffDivergenceWarning",
    "RoundoffEnforcementWarning",
    "RoundoffOverflowWarning",
    "RoundoffPlacementError",
    "compare_outputs",
    "compile",
    "has_config",
    "inductor_settings",
    "make_backend",
    "register",
]
