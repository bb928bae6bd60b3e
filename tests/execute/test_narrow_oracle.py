"""`NarrowHeldOracle`: the fp64 oracle's values bit for bit, holding exact copies in their own dtype.

Oracle: `OracleNumerics` run in the same Lockstep (every value converted to fp64 on load).
"""

from __future__ import annotations

import torch

from roundoff.execute import Lockstep, OracleNumerics, plan_numerics
from roundoff.execute.narrow_oracle import NarrowHeldOracle
from roundoff.plan import plan
from tests.execute.test_recompute import _stack

ORACLE, NARROW = 0, 1


def test_every_value_equals_the_fp64_oracle_and_inputs_views_casts_stay_narrow() -> None:
    prog, inputs = _stack(2)  # zoo Llama blocks, bf16, forward+backward: views, casts, matmuls
    p = plan(prog, "inductor-gpu")
    held: dict[str, torch.dtype] = {}
    compared = 0

    def on_node(node: torch.fx.Node, vals: tuple, ls: Lockstep) -> None:
        nonlocal compared
        wide, narrow = vals[ORACLE], vals[NARROW]
        if isinstance(wide, torch.Tensor) and wide.is_floating_point():
            assert narrow.shape == wide.shape, node.format_node()
            torch.testing.assert_close(narrow.double(), wide, rtol=0, atol=0, equal_nan=True, msg=node.format_node())
            held[node.name] = narrow.dtype
            compared += 1

    sides = [OracleNumerics(), NarrowHeldOracle(), plan_numerics(p)]
    with torch.no_grad():
        outs = Lockstep(p.program, sides, on_node=on_node).run_inputs(inputs)
    for a, b in zip(outs[ORACLE], outs[NARROW]):
        assert torch.equal(a, b.double())
    assert compared > 100
    placeholders = [n.name for n in p.program.graph.nodes if n.op == "placeholder"]
    assert all(held[n] == torch.bfloat16 for n in placeholders if n in held)  # no fp64 copy of a parameter
    views = [n.name for n in p.program.graph.nodes if n.target in (torch.ops.aten.permute.default, torch.ops.aten.view.default)]
    assert any(held.get(n) == torch.bfloat16 for n in views)  # a view of a bf16 value stays bf16
    computed = [n.name for n in p.program.graph.nodes if n.target is torch.ops.aten.mm.default]
    assert computed and all(held[n] == torch.float64 for n in computed)  # what the oracle computes is fp64
