"""Small user scripts written into tmp_path, one per kind of good and bad input."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

SCRIPTS = {
    "good.py": """
        import torch

        def f(a, b):
            return (a * b + a) * b - a

        def f_inputs():
            g = torch.Generator().manual_seed(0)
            return (torch.randn(64, generator=g).to(torch.bfloat16),
                    torch.randn(64, generator=g).to(torch.bfloat16))

        def other_inputs():
            return torch.ones(8, dtype=torch.bfloat16), torch.ones(8, dtype=torch.bfloat16)

        def one_input():
            return (torch.ones(8, dtype=torch.bfloat16),)

        def mm(a, w):
            return a @ w

        def mm_inputs():
            return torch.ones(2, 3), torch.ones(4, 5)

        def ints(a):
            return a * 2 + 1

        def ints_inputs():
            return (torch.arange(6),)

        def compare(a):
            return a > 0

        def compare_inputs():
            return (torch.randn(4),)

        def no_factory(a):
            return a

        def bad_factory(a):
            return a

        def bad_factory_inputs():
            return [torch.ones(2), 3.0]

        NOT_A_FUNCTION = 3
    """,
    "broken.py": """
        import torch
        x = 1 / 0
    """,
    "missing_dep.py": """
        import roundoff_no_such_module
    """,
    "one_target.py": """
        import torch

        def helper(x):
            return x

        def loss(x):
            return helper(x).sum()

        def loss_inputs():
            return (torch.ones(4, dtype=torch.bfloat16),)
    """,
}


@pytest.fixture
def scripts(tmp_path: Path) -> Path:
    for name, text in SCRIPTS.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path
