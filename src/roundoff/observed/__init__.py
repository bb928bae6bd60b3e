"""Observe the real compiled program: every buffer its kernels write, judged at the Program node
it holds against fp64, eager and the emulated policy (`observe_compiled`)."""

from roundoff.observed.api import ObserveResult, observe_compiled
from roundoff.observed.compare import KernelReport
from roundoff.observed.taps import ObserveError

__all__ = ["KernelReport", "ObserveError", "ObserveResult", "observe_compiled"]
