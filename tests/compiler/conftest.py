"""roundoff.compiler tests: a fresh Dynamo per test.

Several tests compile the same function under different policies; past Dynamo's recompile limit a
frame silently runs eagerly, which would make "equals eager" assertions pass vacuously.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Iterator[None]:
    torch._dynamo.reset()
    yield
