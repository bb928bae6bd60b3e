"""roundoff: explicit, predictable, checkable floating-point behaviour for low-precision PyTorch."""

__version__ = "0.1.0"
