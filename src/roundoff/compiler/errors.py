"""Errors and warnings raised by ``roundoff.compile``."""

from __future__ import annotations

import os
import sys
import warnings

import torch

#: Code a warning is not about: torch's (Dynamo and Inductor call the backend many frames deep), roundoff's own,
#: and the standard library's (contextlib, functools between them; not the site-packages inside it).
_LIBRARY_DIRS = tuple(os.path.dirname(m.__file__) + os.sep for m in (torch, sys.modules[__package__.split(".")[0]]))
_STDLIB_DIR = os.path.dirname(os.__file__) + os.sep


def _library(filename: str) -> bool:
    return (filename.startswith(_LIBRARY_DIRS) or filename.startswith("<")
            or (filename.startswith(_STDLIB_DIR) and "site-packages" not in filename))


def warn_at_caller(warning: Warning) -> None:
    """`warnings.warn` attributed to the first frame outside torch, roundoff and the standard library: the line of
    the user's code that compiled or called the program (trial 91: an enforcement warning pointed at
    torch/__init__.py, the fixed stack level of a backend Dynamo calls at a varying depth)."""
    frame, level = sys._getframe(1), 2
    while frame is not None and _library(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    warnings.warn(warning, stacklevel=level if frame is not None else 2)


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
