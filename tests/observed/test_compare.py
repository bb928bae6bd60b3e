"""`emulation_cause` on a buffer whose Inductor origins omit the computation (no compile needed).

The case is the H200 Llama run's RoPE-backward buffers (bench/results/observe-cuda-session3.md,
buf75/buf101): Inductor unrolls a sum over 2 heads into the consuming pointwise kernel and stores
only a transposed copy, whose origins are the layout ops alone. Oracle for what the plan does: the
plan's own decisions (the consumer of the sum reads it rounded to bf16).
"""

from __future__ import annotations

import torch

from roundoff.capture import capture
from roundoff.capture.program import NODE_ID
from roundoff.observed.compare import Observed, emulation_cause, local_region
from roundoff.plan import plan


def head_sum_then_transposed_copy(g, c):
    s = g.sum(0)  # over 2 heads: Inductor computes it inside the consumer, unrounded
    y = s * c + s
    return y.t().contiguous()


def _setup():
    g = torch.randn(2, 8, 4, generator=torch.Generator().manual_seed(0)).bfloat16()
    c = torch.randn(8, 4, generator=torch.Generator().manual_seed(1)).bfloat16()
    program = capture(head_sum_then_transposed_copy, g, c)
    ids = {str(n.target): n.meta[NODE_ID] for n in program.nodes() if n.op == "call_function"}
    return program, ids


def test_a_sum_missing_from_the_origins_is_named_from_the_local_region():
    program, ids = _setup()
    summed, copy = ids["aten.sum.dim_IntList"], ids["aten.clone.default"]
    the_plan = plan(program, "inductor-gpu")
    assert any(summed in d.rounded_inputs for d in the_plan.decisions.values())  # the plan rounds the sum
    layout = tuple(i for t, i in ids.items() if t in ("aten.t.default", "aten.clone.default"))
    obs = Observed("triton_poi_fused_add_mul_sum_0", "buf1", "pointwise", layout,
                   torch.empty(4, 8, dtype=torch.bfloat16), 0, 0)
    observed = {copy: obs}

    region = local_region(program, copy, obs, observed)
    assert set(ids.values()) <= set(region)  # every op back to the graph inputs
    # from the origins alone nothing is known; from the region, the sum the plan rounds
    assert emulation_cause(program, copy, obs, the_plan) == "unmodelled decision"
    assert emulation_cause(program, copy, obs, the_plan, observed) == (
        f"unmodelled decision: the kernel keeps sum ({summed}) unrounded where the plan rounds it; "
        "also summation order"
    )


def test_the_region_stops_at_an_observed_operand():
    program, ids = _setup()
    summed, copy = ids["aten.sum.dim_IntList"], ids["aten.clone.default"]
    sum_obs = Observed("triton_red_fused_sum_0", "buf0", "reduction", (summed,),
                       torch.empty(8, 4, dtype=torch.bfloat16), 0, 0)
    obs = Observed("triton_poi_fused_add_mul_1", "buf1", "pointwise", (copy,),
                   torch.empty(4, 8, dtype=torch.bfloat16), 1, 1)
    region = local_region(program, copy, obs, {summed: sum_obs, copy: obs})
    assert summed not in region and ids["aten.mul.Tensor"] in region
    # the sum is a stored buffer the kernel reads (rounded, like the plan): no unrounded value to name
    cause = emulation_cause(program, copy, obs, plan(program, "inductor-gpu"), {summed: sum_obs, copy: obs})
    assert not cause.startswith("unmodelled decision: the kernel keeps")
