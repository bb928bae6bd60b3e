"""Every zoo workload, forward and forward+backward, planned under every preset.

Independent checks: storage dtypes against the captured graph's own ``meta["val"]`` (and the
policy's ``storage`` promotion); opmath compute dtypes against torch's own
``torch._prims_common.get_computation_dtype``; structure (kernels, rounded reads, FMA sites) against
the graph's edges; unmodeled ops against ``roundoff.ops.classify``.
"""

from __future__ import annotations

import operator

import pytest
import torch
from plan_helpers import PRESET_NAMES, repro, zoo_plan
from torch._prims_common import get_computation_dtype

from roundoff.ops import OpClass, classify
from roundoff.plan import format_trace
from roundoff.policy import ComputePrecision, RoundingPoint
from roundoff.zoo import list_workloads

WORKLOADS = tuple(w.name for w in list_workloads())
_POINTWISE = (OpClass.POINTWISE_ARITHMETIC, OpClass.POINTWISE_TRANSCENDENTAL)


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("backward", [False, True], ids=["fwd", "fwd+bwd"])
@pytest.mark.parametrize("workload", WORKLOADS)
def test_plan_every_workload_under_every_preset(workload: str, backward: bool, preset: str) -> None:
    p = zoo_plan(workload, backward, preset)
    why = repro(workload, backward, preset)
    nodes = {n.meta["roundoff_id"]: n for n in p.program.nodes() if n.op != "output"}
    assert set(p.decisions) == set(nodes), why
    promote = {"fp32": torch.float32, "fp64": torch.float64}.get(p.policy.storage or "")
    group_of = {g.id: set(g.node_ids) for g in p.groups}
    assert [g.id for g in p.groups] == list(range(len(p.groups))), why
    for nid, d in p.decisions.items():
        n = nodes[nid]
        val = n.meta.get("val")
        if isinstance(val, torch.Tensor):
            want = promote if promote is not None and val.dtype.is_floating_point else val.dtype
            assert d.storage_dtype == want, f"{nid}: {d}\n{why}"
        inputs = {q.meta["roundoff_id"] for q in n.all_input_nodes}
        assert d.rounded_inputs <= inputs, f"{nid}: {d}\n{why}"
        if d.group is not None:
            assert nid in group_of[d.group], why
        if (
            d.op_class in _POINTWISE
            and d.storage_dtype is not None
            and d.storage_dtype.is_floating_point
        ):
            opmath = get_computation_dtype(d.storage_dtype)
            allowed = (
                {opmath, d.storage_dtype}
                if p.policy.compute.get(d.op_class) is not ComputePrecision.OPMATH
                or p.policy.op_overrides
                else {opmath}
            )
            assert d.compute_dtype in allowed, f"{nid}: {d}\n{why}"
        if n.op == "call_function" and n.target is not operator.getitem:
            assert (classify(n.target).op_class is OpClass.UNMODELED) == (nid in p.unmodeled), why
        if p.policy.rounding is RoundingPoint.EVERY_OP and d.op != "placeholder":
            assert not d.rounded_inputs, (
                f"{nid} reads rounded at a boundary under every_op: {d}\n{why}"
            )
    for copy, original in p.copies.items():
        assert original in nodes and nodes[copy].target is nodes[original].target, why
    for site in p.fma_sites:
        add = nodes[site.node_id]
        assert add.args[site.operand] is nodes[site.mul_id], why
        assert site.mul_id in group_of[p.decisions[site.node_id].group], why
        assert p.decisions[site.node_id].fma == site, why
    trace = format_trace(p)
    for nid, n in nodes.items():
        if n.op != "placeholder":
            assert f"# {nid} " in trace, f"{nid} missing from trace\n{why}"
