"""Shared, cached captures for the plan tests (capturing is the slow part; plans are cheap)."""

from __future__ import annotations

import functools

import torch

from roundoff.capture import Program, capture
from roundoff.plan import Plan, plan
from roundoff.policy import PRESETS
from roundoff.zoo import get_workload

PRESET_NAMES = tuple(PRESETS)


@functools.cache
def zoo_program(name: str, backward: bool, dtype: torch.dtype | None = None) -> Program:
    w = get_workload(name)
    return capture(w.build(dtype=dtype), *w.make_inputs(dtype=dtype), backward=backward, name=name)


@functools.cache
def zoo_plan(name: str, backward: bool, preset: str, dtype: torch.dtype | None = None) -> Plan:
    return plan(zoo_program(name, backward, dtype), PRESETS[preset])


def by_op(p: Plan, op: str) -> list:
    """Decisions of nodes whose op is `op` (``"aten.mul.Tensor"``), in graph order."""
    order = [n.meta["roundoff_id"] for n in p.program.nodes()]
    return [p.decisions[i] for i in order if i in p.decisions and p.decisions[i].op == op]


def repro(name: str, backward: bool, preset: str) -> str:
    """One-line repro for failure messages."""
    return (
        'python -c "from roundoff.capture import capture; from roundoff.plan import plan, format_trace; '
        f"from roundoff.zoo import get_workload as g; w=g('{name}'); "
        f"print(format_trace(plan(capture(w.build(), *w.make_inputs(), backward={backward}), '{preset}')))\""
    )
