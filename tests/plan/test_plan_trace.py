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
