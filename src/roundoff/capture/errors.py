"""Errors raised while capturing or rewriting a program."""

from __future__ import annotations


class CaptureError(ValueError):
    """A program roundoff cannot capture as a static aten graph, or bad capture arguments.

    The message names the construct (data-dependent control flow, non-tensor output, ...), the user's
    source line when one is known, and what to do instead.
    """

    def __init__(self, message: str, *, construct: str, source: str | None = None) -> None:
        where = f" at {source}" if source else ""
        super().__init__(f"cannot capture: {construct}{where}: {message}")
        self.construct = construct
        self.source = source


#: What to do about a function that runs its own backward (`CaptureError` construct
#: "backward inside the function"), said wherever it is found.
BACKWARD_INSIDE = (
    "the function runs the backward itself; return the loss (not the result of `.backward()`) and let "
    "roundoff differentiate it: `--backward` on the command line, `backward=True` in the library (an "
    "optimizer step belongs outside the function too)"
)
