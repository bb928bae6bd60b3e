"""The printed lowered plan is runnable Python that computes the emulation (oracle: `run_plan`)."""

from __future__ import annotations

import torch
from typer.testing import CliRunner

from roundoff.capture import capture
from roundoff.cli.main import app
from roundoff.execute import run_plan
from roundoff.lower import format_lowered, lower, lowered_code
from roundoff.plan import plan
from roundoff.zoo import get_workload


def test_printed_code_runs_and_equals_the_emulation() -> None:
    w = get_workload("bf16-chain")
    xs = w.make_inputs()
    for policy in ("eager", "inductor-gpu"):
        p = plan(capture(w.build(), *xs), policy)
        text = format_lowered(p)
        assert text.startswith("# roundoff lowered plan") and lowered_code(lower(p)) in text
        ns = {"torch": torch}
        exec(compile(text, "<lowered>", "exec"), ns)  # noqa: S102 - the trace is meant to be run
        (got,) = ns["forward"](None, *xs)
        (want,) = run_plan(p, xs)
        assert torch.equal(got.view(torch.int16), want.view(torch.int16)), f"printed lowered code != run_plan ({policy})"


def test_cli_trace_lowered() -> None:
    result = CliRunner().invoke(app, ["trace", "zoo:fma-cancel", "-p", "inductor-gpu", "--lowered"])
    assert result.exit_code == 0, result.output
    assert "torch.ops.roundoff.fma.default(" in result.stdout and "[kernel 0: pointwise]" in result.stdout
    plain = CliRunner().invoke(app, ["trace", "zoo:fma-cancel", "-p", "inductor-gpu"])
    assert "roundoff.fma" not in plain.stdout  # the default trace is unchanged
