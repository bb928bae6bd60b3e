"""decompose(): ids and sources survive; values agree with the undecomposed graph at fp64."""

from __future__ import annotations

import pytest
import torch
from capture_helpers import captured

from roundoff.capture import (
    DECOMPOSITION_SETS,
    CaptureError,
    capture,
    decompose,
    eliminate_common_subexpressions,
    node_id,
    node_source,
)
from roundoff.zoo import list_workloads

# Forward+backward graphs contain the forward graph, so they cover both. Every workload under the
# table the planner uses most (Inductor's); core_aten where it differs in kind: sdpa (whose forward it
# decomposes and whose backward it does not) and the user-level softmax.
CASES = [(w.name, True, "inductor") for w in list_workloads()] + [
    ("llama-block-sdpa", True, "core_aten"),
    ("softmax-backward", True, "core_aten"),
    ("mixtral-block", True, "core_aten"),
]


@pytest.mark.parametrize("name,backward,table", CASES)
def test_ids_and_sources_survive(name: str, backward: bool, table: str) -> None:
    """Every new id is an old id (node kept) or ``old.k`` (made from old); the source is old's."""
    _, _, program = captured(name, backward)
    new = decompose(program, [table])
    repro = f"decompose(capture(zoo {name!r}, backward={backward}), [{table!r}])"
    old_sources = {node_id(n): node_source(n) for n in program.nodes()}
    new_ids = [node_id(n) for n in new.nodes()]
    assert len(set(new_ids)) == len(new_ids), repro
    for n in new.nodes():
        nid = node_id(n)
        base = nid if nid in old_sources else nid.rsplit(".", 1)[0]
        assert base in old_sources, f"{nid} has no origin; {repro}"
        assert node_source(n) == old_sources[base], (
            f"{nid}: {node_source(n)} != {old_sources[base]}; {repro}"
        )
    old_ph = [node_id(n) for n in program.nodes() if n.op == "placeholder"]
    assert [node_id(n) for n in new.nodes() if n.op == "placeholder"] == old_ph, repro
    assert new.input_names == program.input_names and new.output_names == program.output_names


def _vals(program):
    return [n.meta["val"] for n in program.nodes() if isinstance(n.meta.get("val"), torch.Tensor)]


@pytest.mark.parametrize("name,backward,table", CASES)
def test_values_agree_at_fp64(name: str, backward: bool, table: str) -> None:
    """Built at fp64, a decomposition only re-associates or re-expresses ops, so results agree to
    256 ulps of the output's scale in the narrowest float dtype the graph computes in: fp64 for the
    pointwise cases, fp32 for the blocks, whose RMSNorm and softmax cast to fp32 as written (the
    decomposed fp32 softmax and rsqrt round differently). The margin covers summation-order changes."""
    _, _, program = captured(name, backward, torch.float64)
    new = decompose(program, [table])
    want = program.graph_module(*program.example_inputs)
    got = new.graph_module(*program.example_inputs)
    eps = max(torch.finfo(v.dtype).eps for v in _vals(program) if v.dtype.is_floating_point)
    for out_name, g, o in zip(program.output_names, got, want):
        tol = 256 * eps * (o.abs().max().item() + 1)
        err = (g - o).abs().max().item()
        assert err <= tol, (
            f"{out_name}: max err {err:.3g} > {tol:.3g}; repro: decompose(fp64 zoo {name!r}, [{table!r}])"
        )


def test_decomposed_node_gets_suffixed_ids() -> None:
    """The llama block's fp32 softmax (one aten._softmax node) becomes several nodes n<k>.0, n<k>.1, ...
    with the softmax's line; ops the table leaves alone (rsqrt, mm: Inductor's table only adds dead
    scratch nodes around a small mm) keep their ids and targets."""
    _, _, program = captured("llama-block", False)
    softmax = [n for n in program.nodes() if n.target is torch.ops.aten._softmax.default]
    assert len(softmax) == 1
    sid = node_id(softmax[0])
    new = decompose(program, ["inductor"])
    parts = [n for n in new.nodes() if node_id(n).startswith(sid + ".")]
    assert len(parts) >= 3 and {node_source(n) for n in parts} == {node_source(softmax[0])}
    assert torch.ops.aten.exp.default in {n.target for n in parts}
    for target, count in ((torch.ops.aten.rsqrt.default, 2), (torch.ops.aten.mm.default, 7)):
        kept = [node_id(n) for n in program.nodes() if n.target is target]
        assert len(kept) == count and all(new.node(k).target is target for k in kept), target


def test_no_names_returns_program_and_unknown_name_is_rejected() -> None:
    _, _, program = captured("bf16-chain", False)
    assert decompose(program, []) is program
    with pytest.raises(CaptureError, match="unknown decomposition set 'tvm'.*core_aten, eager, eager-cpu, inductor"):
        decompose(program, ["tvm"])
    with pytest.raises(TypeError, match="wrap it"):
        decompose(program, "inductor")  # type: ignore[arg-type]
    assert set(DECOMPOSITION_SETS) == {"inductor", "core_aten", "eager", "eager-cpu"}


def test_constants_keep_ids_through_decompose_and_merge_in_cse() -> None:
    """A closure tensor is fetched as a constant (get_attr) once per use; each fetch keeps its id
    through decompose, and CSE merges the fetches into the first."""
    c = torch.tensor([1.5, 2.5, 3.5, 4.5], dtype=torch.float64)

    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x * c, -1) + c

    x = torch.randn(4, dtype=torch.float64, requires_grad=True)
    program = capture(f, x, backward=True)
    consts = [node_id(n) for n in program.nodes() if n.op == "get_attr"]
    assert len(consts) == 3
    new = decompose(program, ["inductor"])
    assert [node_id(n) for n in new.nodes() if n.op == "get_attr"] == consts
    merged, removed = eliminate_common_subexpressions(new)
    assert removed == {consts[1]: consts[0], consts[2]: consts[0]}
    want = program.graph_module(x)
    for name, got, w in zip(program.output_names, merged.graph_module(x), want):
        torch.testing.assert_close(
            got, w, rtol=1e-13, atol=1e-13, msg=f"{name}: decompose+CSE of f"
        )
