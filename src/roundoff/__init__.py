"""roundoff: explicit, predictable, checkable floating-point behaviour for low-precision PyTorch."""

__version__ = "0.1.0"


def __getattr__(name: str) -> object:  # lazy, so `import roundoff` stays light
    if name == "compile":
        from roundoff.compiler import compile

        return compile
    raise AttributeError(f"module 'roundoff' has no attribute {name!r}")
