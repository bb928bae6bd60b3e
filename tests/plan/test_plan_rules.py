"""Per-node decision rules: rounding points, casts, scalars, storage promotion, overrides, FMA choice,
unmodeled ops and bad input. Expected values follow the policy enums' documented meaning
(roundoff.policy.model) and LLVM's DAGCombiner operand order for FMA."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from plan_helpers import by_op

from roundoff.capture import capture
from roundoff.plan import format_side_by_side, format_trace, plan
from roundoff.policy import ComputePrecision, OpOverride, RoundingPoint, get_policy

BF16 = torch.bfloat16


def _inputs(*shapes: tuple[int, ...], dtype: torch.dtype = BF16) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(*s, generator=g).to(dtype) for s in shapes)


def _user_cast(x: torch.Tensor) -> torch.Tensor:
    return (x * 3.0).to(BF16).to(torch.float32) + 1.0


def test_user_casts_dropped_at_fusion_boundary_kept_when_honoured_and_in_eager() -> None:
    prog = capture(_user_cast, *_inputs((16,), dtype=torch.float32))
    base = get_policy("inductor-gpu")
    dropped = plan(prog, dataclasses.replace(base, rounding=RoundingPoint.FUSION_BOUNDARY))
    honoured = plan(
        prog, dataclasses.replace(base, rounding=RoundingPoint.FUSION_BOUNDARY_HONOR_CASTS)
    )
    down = [
        d
        for d in dropped.decisions.values()
        if d.op_class.value == "cast" and d.storage_dtype == BF16
    ]
    assert len(down) == 1, dropped.decisions
    cid = down[0].node_id
    assert (
        not dropped.decisions[cid].rounds_result
        and dropped.decisions[cid].compute_dtype == torch.float32
    )
    assert honoured.decisions[cid].rounds_result
    eager = [
        d
        for d in plan(prog, "eager").decisions.values()
        if d.op_class.value == "cast" and d.storage_dtype == BF16
    ]
    assert [d.rounds_result for d in eager] == [True]
    v = "t" + cid[1:].replace(".", "_")
    assert f"{v}_bf16 = round({v}, bf16)" in format_trace(honoured)
    assert "round(" not in format_trace(dropped).split("return")[0]
    assert "cast not applied in the kernel: value stays f32" in format_trace(dropped)


def _scaled(x: torch.Tensor) -> torch.Tensor:
    return (x * 0.1).sum(dim=1)


def test_python_scalars_rounded_to_storage_only_under_round_to_storage() -> None:
    prog = capture(_scaled, *_inputs((4, 8)))
    (xla,) = by_op(plan(prog, "xla-2.9"), "aten.mul.Tensor")
    (eager,) = by_op(plan(prog, "eager"), "aten.mul.Tensor")
    assert xla.scalar_format == "bf16" and eager.scalar_format is None
    (red,) = by_op(plan(prog, "xla-2.9"), "aten.sum.dim_IntList")
    assert red.scalar_format is None  # dims are not operands
    assert "round(0.1, bf16)" in format_trace(plan(prog, "xla-2.9"))


def test_fp64_storage_promotes_every_float_and_rounds_nothing() -> None:
    prog = capture(_scaled, *_inputs((4, 8)))
    p = plan(prog, "fp64")
    for n in prog.nodes():
        d = p.decisions.get(n.meta["roundoff_id"])
        if d is None or not isinstance(n.meta.get("val"), torch.Tensor):
            continue
        assert d.storage_dtype == (
            torch.float64 if n.meta["val"].dtype.is_floating_point else n.meta["val"].dtype
        )
        assert not d.rounds_result and not d.rounded_inputs, d


def _chain(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    return a * b + c * a


def test_overrides_node_beats_op_and_storage_compute_rounds_operands() -> None:
    prog = capture(_chain, *_inputs((8,), (8,), (8,)))
    first = by_op(plan(prog, "eager"), "aten.mul.Tensor")[0].node_id
    pol = dataclasses.replace(
        get_policy("eager"),
        op_overrides={"aten.mul": OpOverride(compute=ComputePrecision.STORAGE)},
        node_overrides={first: OpOverride(compute=ComputePrecision.OPMATH)},
    )
    m1, m2 = by_op(plan(prog, pol), "aten.mul.Tensor")
    assert (m1.compute_dtype, m1.input_format) == (torch.float32, None)
    assert (m2.compute_dtype, m2.input_format, m2.rounds_result) == (BF16, "bf16", True)


def test_eager_rounds_after_every_low_precision_op() -> None:
    p = plan(capture(_chain, *_inputs((8,), (8,), (8,))), "eager")
    for d in p.decisions.values():
        if d.op != "placeholder":
            assert d.rounds_result and not d.rounded_inputs and d.compute_dtype == torch.float32, d


def _fms(
    a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, d: torch.Tensor
) -> tuple[torch.Tensor, ...]:
    return c - a * b, a * b - c * d, torch.add(c, a * b, alpha=2)


def test_fma_operand_order_follows_llvm_and_alpha_is_not_contracted() -> None:
    prog = capture(_fms, *_inputs((8,), (8,), (8,), (8,)))
    p = plan(prog, "inductor-gpu")
    s1, s2 = by_op(p, "aten.sub.Tensor")
    muls = by_op(p, "aten.mul.Tensor")
    assert s1.fma is not None and s1.fma.operand == 1 and s1.fma.alternatives == ()
    # a*b, CSE'd, has three uses and c*d one: the product with fewer uses (operand 1) is folded
    ab, cd = muls
    assert (s2.fma.operand, s2.fma.mul_id, s2.fma.alternatives) == (1, cd.node_id, (ab.node_id,))
    (add,) = by_op(p, "aten.add.Tensor")
    assert add.fma is None  # c + 2*(a*b): the product is scaled, not foldable
    trace = format_trace(p)
    assert f"t{s1.node_id[1:]} = fma(-a_f32, b_f32, c_f32)" in trace, trace


def _shared_product(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, ...]:
    p = a * b
    return p - c * a, p


def test_fma_prefers_the_product_with_fewer_uses() -> None:
    # DAGCombiner: "If we have two choices trying to fold (fsub (fmul u, v), (fmul x, y)), prefer
    # to fold the multiply with fewer uses": a*b is also an output, so c*a is folded.
    p = plan(capture(_shared_product, *_inputs((8,), (8,), (8,))), "inductor-gpu")
    (sub,) = by_op(p, "aten.sub.Tensor")
    shared, single = by_op(p, "aten.mul.Tensor")
    assert (sub.fma.operand, sub.fma.mul_id, sub.fma.alternatives) == (
        1,
        single.node_id,
        (shared.node_id,),
    )


def _fp64_embedding(t: torch.Tensor) -> torch.Tensor:
    return t * 0.1 + 0.3  # research code's fp64 timestep embedding (trial 72)


def test_an_fp64_multiply_add_is_no_fma_site_and_runs_as_torch_computes_it() -> None:
    """The emulation's correctly rounded fma computes fp32 and narrower formats in fp64; an fp64 add was
    contracted anyway, and `check` stopped with an internal error (trial 72). It is no candidate now, and
    its value is torch's fp64 ``t * 0.1 + 0.3`` bit for bit (the oracle: torch eager)."""
    from roundoff.analyze import check
    from roundoff.execute import run_plan

    (t,) = _inputs((64,), dtype=torch.float64)
    p = plan(capture(_fp64_embedding, t), "inductor-gpu")
    (add,) = by_op(p, "aten.add.Tensor")
    assert add.compute_dtype == torch.float64 and add.fma is None
    (out,) = run_plan(p, (t,))
    assert torch.equal(out, _fp64_embedding(t))
    assert check(capture(_fp64_embedding, t), (t,), "inductor-gpu").outputs[0].passes


def test_fma_overrides_and_rounded_products() -> None:
    prog = capture(_fms, *_inputs((8,), (8,), (8,), (8,)))
    gpu = plan(prog, "inductor-gpu")
    s1, s2 = by_op(gpu, "aten.sub.Tensor")
    off = plan(
        prog,
        dataclasses.replace(
            get_policy("inductor-gpu"), node_overrides={s1.node_id: OpOverride(contract_fma=False)}
        ),
    )
    assert not off.decisions[s1.node_id].fma.contracted and off.decisions[s2.node_id].fma.contracted
    on = plan(
        prog,
        dataclasses.replace(
            get_policy("inductor-cpu"),
            op_overrides={"aten.sub.Tensor": OpOverride(contract_fma=True)},
        ),
    )
    assert on.decisions[s1.node_id].fma.contracted
    keep = plan(
        prog,
        dataclasses.replace(
            get_policy("inductor-gpu"),
            node_overrides={s1.fma.mul_id: OpOverride(round_result=True)},
        ),
    )
    assert keep.decisions[s1.node_id].fma is None  # the product is rounded: nothing to contract
    assert not plan(prog, "eager").fma_sites and not plan(prog, "inductor-emulate").fma_sites


def _spectral(x: torch.Tensor) -> torch.Tensor:
    return torch.fft.rfft(x).abs() * 2.0


def test_unmodeled_ops_are_listed_flagged_and_stand_alone() -> None:
    p = plan(capture(_spectral, torch.randn(8)), "inductor-gpu")
    (fft,) = by_op(p, "aten._fft_r2c.default")
    assert p.unmodeled == (fft.node_id,)
    assert any(fft.node_id in g.node_ids and g.kind == "extern" for g in p.groups)
    assert "UNMODELED" in format_trace(p) and any("unmodeled" in n for n in p.notes)


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="capture"):
        plan(lambda x: x, "eager")  # type: ignore[arg-type]
    prog = capture(_scaled, *_inputs((4, 8)))
    with pytest.raises(TypeError, match="Policy or a preset name"):
        plan(prog, 3)  # type: ignore[arg-type]
    with pytest.raises(Exception, match="nope"):
        plan(prog, "nope")


def test_trace_functions_reject_non_plans() -> None:
    with pytest.raises(TypeError, match="roundoff Plan"):
        format_trace("eager")  # type: ignore[arg-type]
    prog = capture(_scaled, *_inputs((4, 8)))
    with pytest.raises(TypeError, match="plan_b must be a roundoff Plan"):
        format_side_by_side(plan(prog, "eager"), prog)  # type: ignore[arg-type]
