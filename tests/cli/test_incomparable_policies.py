"""Trial 82: `check -p inductor-cpu --against inductor-gpu --backward` on a program where both policies
recompute nodes as per-kernel copies of their own exited 3, "this is a roundoff bug", with the advice
of a known limitation. The pair is a choice the user can change: exit 2 with the same advice."""

from __future__ import annotations

import json
import textwrap

from typer.testing import CliRunner

from roundoff.cli.errors import EXIT_USAGE
from roundoff.cli.main import app

SCRIPT = textwrap.dedent('''
    import torch
    from tests.plan.test_plan_shared import _softmax_gelu_and_amax

    def step(a, b, c, d, x, w):
        return _softmax_gelu_and_amax(a, b, c, d, x, w)

    def inputs():
        g = torch.Generator().manual_seed(0)
        args = [torch.randn(32, 64, generator=g).to(torch.bfloat16).requires_grad_() for _ in range(4)]
        return (*args, torch.randn(8, 16, generator=g).to(torch.bfloat16).requires_grad_(),
                torch.randn(16, 16, generator=g).to(torch.bfloat16).requires_grad_())
''')


def test_two_policies_that_cannot_share_a_graph_are_bad_usage_not_a_bug(tmp_path) -> None:
    script = tmp_path / "pair.py"
    script.write_text(SCRIPT)
    got = CliRunner().invoke(app, ["check", f"{script}:step", "--inputs", f"{script}:inputs", "--backward",
                                   "-p", "inductor-cpu", "--against", "inductor-gpu", "--json"])
    assert got.exit_code == EXIT_USAGE, got.output
    error = json.loads(got.stdout)
    assert error["exit"] == EXIT_USAGE
    assert "per-kernel copies" in error["error"] and "'eager' or the fp64 oracle" in error["error"]
    assert "roundoff bug" not in error["error"]
