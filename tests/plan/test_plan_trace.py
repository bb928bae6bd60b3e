"""The trace names each input after the program's input name, so it can be matched with check's
tables (which use `program.input_names`), and its signature stays valid Python."""

from __future__ import annotations

import ast

import torch

from roundoff.capture import capture
from roundoff.plan import format_side_by_side, format_trace, plan
from roundoff.policy import get_policy


def _module_program():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    return capture(m.to(torch.bfloat16), torch.randn(2, 4, dtype=torch.bfloat16))


def test_trace_inputs_carry_the_program_input_names() -> None:
    program = _module_program()
    dotted = [n for n in program.input_names if "." in n]
    assert dotted, program.input_names  # parameters are named like "0.weight"
    trace = format_trace(plan(program, get_policy("inductor-gpu")))
    for name in program.input_names:
        assert name in trace, f"input {name!r} not in trace\n{trace}"
    assert "arg" not in trace.split("def ", 1)[1].split(")", 1)[0], trace  # no placeholder names
    signature = next(line for line in trace.splitlines() if line.startswith("def "))
    tree = ast.parse(signature + "\n  pass")
    params = [a.arg for a in tree.body[0].args.args]
    assert len(params) == len(set(params)) == len(program.input_names)
    side = format_side_by_side(
        plan(program, get_policy("eager")), plan(program, get_policy("inductor-gpu"))
    )
    assert all(name in side for name in program.input_names), side


def test_moving_values_held_in_their_format_prints_no_round() -> None:
    """Trial 76: eager's trace printed ``round(t, bf16)`` after every slice of a bf16 input, a step that does
    nothing. Oracle: torch's own slice of a bf16 tensor is bf16, and rounding it to bf16 changes no bit."""
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(0)).bfloat16()
    assert x[:, :4].dtype == torch.bfloat16 and torch.equal(x[:, :4].float().bfloat16(), x[:, :4])

    def f(x: torch.Tensor) -> torch.Tensor:
        return (x[:, :4] * 2).sum(-1)

    trace = format_trace(plan(capture(f, x), get_policy("eager")))
    slice_line = next(line for line in trace.splitlines() if "aten.slice.Tensor" in line)
    var = slice_line.split("=")[0].strip()
    assert f"round({var}, bf16)" not in trace, trace
    assert "round(t2, bf16)" in trace, trace  # the multiply's result is rounded as eager rounds it
