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
