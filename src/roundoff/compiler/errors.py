"""Errors and warnings raised by ``roundoff.compile``."""

from __future__ import annotations


class RoundoffCompileError(ValueError):
    """A policy or override that ``roundoff.compile`` cannot enforce on the installed compiler."""


class RoundoffPlacementError(RoundoffCompileError):
    """A node override whose stable id cannot be placed on the graph the backend receives."""


class RoundoffEnforcementWarning(UserWarning):
    """Part of a policy that the installed Inductor cannot express; the rest is enforced."""


class RoundoffDivergenceWarning(UserWarning):
    """Checking mode: a sampled call's compiled output fails PyTorch's accuracy rule."""


class RoundoffOverflowWarning(UserWarning):
    """Checking mode: a sampled call's output is NaN/inf in eager and in the compiled program where
    the fp64 run is finite. The compiler agrees with eager (no divergence, never raised), but the
    program leaves its format's range (an overflow, or an underflow a later op turns into NaN/inf)."""


class RoundoffCheckingWarning(UserWarning):
    """Checking mode: a sampled call could not be checked (its fp64 reference run failed); the
    compiled output is returned unchecked."""


class RoundoffDivergenceError(RuntimeError):
    """Checking mode with ``check="raise"``: a sampled call's compiled output diverged.

    `report` holds the per-output findings (see ``roundoff.compiler.checking.OutputCheck``).
    """

    def __init__(self, message: str, report: tuple = ()) -> None:
        super().__init__(message)
        self.report = report
