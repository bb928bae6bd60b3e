"""The motivating programs (docs/architecture.md, Sources), planned under the presets they are about.

Expectations come from the sources, not from this code's output:
(1) XLA revert thread: r2.9 lowers bf16 ``mul`` as convert-to-f32, multiply,
    convert-back; master/r2.10 multiplies natively in bf16.
(2) Thunder thread: ``matmul(a + b, w)``: the add is upcast to f32 and converted
    back to bf16, the matmul takes its operands in bf16; Thunder's autocast only downcasts matmul
    operands (fp32 inputs -> bf16).
(3) FMA thread: ``exp(x*scale - x*scale)`` is one Triton kernel
    (``triton_poi_fused_exp_mul_sub_0``), ``x * scale`` CSE'd into ``tmp4``, ``tmp4 - tmp4``
    contracted into ``fma(a, b, -tmp4)``; the user-level softmax over 4 elements unrolls ``amax`` and
    ``sum`` ("we choose to unroll sum/amax"), stored by one kernel, and ``div``/``sub``/``exp`` are
    rematerialized into the final ``div``'s kernel.
"""

from __future__ import annotations

import torch
from plan_helpers import by_op, zoo_plan, zoo_program

from roundoff.capture import capture
from roundoff.plan import format_side_by_side, format_trace, plan
from roundoff.policy import get_policy

BF16 = torch.bfloat16


def _mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a * b


def _mul_program():
    g = torch.Generator().manual_seed(0)
    a, b = (torch.randn(8, 16, generator=g).to(BF16) for _ in range(2))
    return capture(_mul, a, b, name="mul")


def test_xla_29_mul_converts_to_f32_and_back_while_210_multiplies_in_bf16() -> None:
    prog = _mul_program()
    old, new = plan(prog, "xla-2.9"), plan(prog, "xla-2.10")
    (m29,), (m210,) = by_op(old, "aten.mul.Tensor"), by_op(new, "aten.mul.Tensor")
    assert (m29.compute_dtype, m29.rounds_result, m29.input_format) == (
        torch.float32,
        True,
        None,
    ), m29
    assert (m210.compute_dtype, m210.rounds_result, m210.input_format) == (BF16, True, "bf16"), m210
    t29, t210 = format_trace(old), format_trace(new)
    for line in ("a_f32 = convert_element_type(a, float32)", "b_f32 = convert_element_type(b, float32)",
                 "t2 = aten.mul.Tensor(a_f32, b_f32)  # n2 bf16[8, 16] compute=f32", "t2_bf16 = round(t2, bf16)",
                 "return (t2_bf16,)"):  # fmt: skip
        assert line in t29, f"missing {line!r} in xla-2.9 trace:\n{t29}"
    assert "t2 = aten.mul.Tensor(a, b)  # n2 bf16[8, 16] compute=bf16" in t210, t210
    assert "convert_element_type" not in t210 and "round(" not in t210, t210
    side = format_side_by_side(old, new)
    row = next(line for line in side.splitlines() if "aten.mul.Tensor(a_f32" in line)
    assert "aten.mul.Tensor(a, b)" in row, side


def test_thunder_nvfuser_upcasts_and_rounds_the_add_and_feeds_matmul_bf16() -> None:
    p = zoo_plan("thunder-matmul", False, "thunder-nvfuser")
    (add,), (mm,) = by_op(p, "aten.add.Tensor"), by_op(p, "aten.mm.default")
    assert add.compute_dtype == torch.float32 and add.storage_dtype == BF16
    assert add.rounds_result or add.node_id in mm.rounded_inputs, (add, mm)
    assert mm.input_format in (None, "bf16") and mm.storage_dtype == BF16, mm
    assert p.decisions[add.node_id].group != mm.group
    trace = format_trace(p)
    for line in ("a_f32 = convert_element_type(a, float32)", "t3_bf16 = round(t3, bf16)",
                 "aten.mm.default(t3_bf16, w)"):  # fmt: skip
        assert line in trace, f"missing {line!r}:\n{trace}"
    assert "w_f32" not in trace and "t3_bf16_f32" not in trace, trace


def test_thunder_autocast_downcasts_fp32_matmul_inputs_to_bf16() -> None:
    p = plan(zoo_program("thunder-matmul", False, torch.float32), "thunder-autocast")
    (add,), (mm,) = by_op(p, "aten.add.Tensor"), by_op(p, "aten.mm.default")
    assert add.compute_dtype == torch.float32 and not add.rounds_result
    assert mm.input_format == "bf16" and mm.compute_dtype == torch.float32, mm
    trace = format_trace(p)
    for line in (
        "t3_bf16 = round(t3, bf16)",
        "w_bf16 = round(w, bf16)",
        "aten.mm.default(t3_bf16, w_bf16)",
    ):
        assert line in trace, f"missing {line!r}:\n{trace}"
    # without autocast the same fp32 program keeps fp32 operands
    plain = plan(zoo_program("thunder-matmul", False, torch.float32), "thunder-nvfuser")
    assert by_op(plain, "aten.mm.default")[0].input_format in (None, "fp32")


def _cancel(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return torch.exp(x * scale - x * scale)


def test_fma_cancel_is_one_kernel_with_cse_and_fma_at_the_subtraction() -> None:
    for dtype in (torch.float32, BF16):
        x = torch.full((4,), 1134139801600.0).to(dtype)
        s = torch.tensor(0.180336877703666687).to(dtype)
        p = plan(capture(_cancel, x, s, name="cancel"), "inductor-gpu")
        muls, (sub,), (exp,) = (
            by_op(p, "aten.mul.Tensor"),
            by_op(p, "aten.sub.Tensor"),
            by_op(p, "aten.exp.default"),
        )
        assert len(muls) == 1, f"CSE must merge the two products: {muls}"
        assert p.cse and set(p.cse.values()) == {muls[0].node_id}, p.cse
        assert [g.kind for g in p.groups] == ["pointwise"], p.groups
        assert {muls[0].node_id, sub.node_id, exp.node_id} <= set(p.groups[0].node_ids)
        for d in (muls[0], sub, exp):
            assert (
                d.compute_dtype == torch.float32 and not d.rounds_result and not d.rounded_inputs
            ), d
        assert sub.fma is not None and sub.fma.contracted and sub.fma.mul_id == muls[0].node_id
        assert sub.fma.operand == 0 and sub.fma.alternatives == (muls[0].node_id,), sub.fma
        assert p.fma_sites == (sub.fma,)
        trace = format_trace(p)
        m, n = muls[0].node_id, sub.node_id
        want = "fma(x, scale, -t2)" if dtype == torch.float32 else "fma(x_f32, scale_f32, -t2)"
        assert f"t{n[1:]} = {want}" in trace and f"FMA contraction of {m} into {n}" in trace, trace
        assert "merged into n2 by common-subexpression elimination" in trace, trace
        assert f"# kernel 0 (pointwise): {' '.join(p.groups[0].node_ids)}" in trace, trace


def test_fma_cancel_eager_and_cpu_do_not_contract() -> None:
    x, s = torch.tensor(1134139801600.0), torch.tensor(0.180336877703666687)
    prog = capture(_cancel, x, s, name="cancel")
    eager = plan(prog, "eager")
    assert not eager.cse and len(by_op(eager, "aten.mul.Tensor")) == 2 and not eager.fma_sites
    # Inductor's C++ is built with -ffp-contract=off: candidate recorded, not contracted
    cpu = plan(prog, "inductor-cpu")
    (site,) = cpu.fma_sites
    assert not site.contracted
    assert "FMA candidate" in format_trace(cpu)


def test_user_softmax_kernels_around_amax_and_sum() -> None:
    p = zoo_plan("softmax-backward", False, "inductor-gpu")
    div1 = by_op(p, "aten.div.Tensor")[0]
    (div2,) = [d for d in by_op(p, "aten.div.Tensor") if d.node_id != div1.node_id]
    (amax,), (total,) = by_op(p, "aten.amax.default"), by_op(p, "aten.sum.dim_IntList")
    subs, exps = by_op(p, "aten.sub.Tensor"), by_op(p, "aten.exp.default")
    kernels = {frozenset(g.node_ids): g.kind for g in p.groups}
    ids = lambda *ds: frozenset(d.node_id for d in ds)
    # thread 003: "we choose to unroll sum/amax" (4 terms: a pointwise loop each), both stored, so
    # "preventing fusion with the downstream div_1"; div, sub and exp are rematerialized in the second
    # kernel, which reads the stored max and sum (rounded to bf16)
    assert kernels.get(ids(div1, amax, subs[0], exps[0], total)) == "pointwise", p.groups
    assert kernels.get(ids(div1, subs[1], exps[1], div2)) == "pointwise", p.groups
    assert amax.node_id in subs[1].rounded_inputs and total.node_id in div2.rounded_inputs
    assert amax.node_id not in subs[0].rounded_inputs  # read as computed in its own kernel
    for d in (div1, *subs, *exps):
        assert d.compute_dtype == torch.float32 and not d.rounds_result, d
    assert any("rematerialized" in note for note in p.notes)
    trace = format_trace(p)
    assert (
        f"round(t{amax.node_id[1:]}, bf16)" in trace
        and f"round(t{total.node_id[1:]}, bf16)" in trace
    )
    eager = zoo_plan("softmax-backward", False, "eager")
    assert all(g.kind == "single" and len(g.node_ids) == 1 for g in eager.groups)


def test_user_softmax_backward_has_fma_sites_under_inductor_gpu() -> None:
    p = zoo_plan("softmax-backward", True, "inductor-gpu")
    assert p.fma_sites and all(s.contracted for s in p.fma_sites)
    for s in p.fma_sites:
        assert p.decisions[s.mul_id].group is not None
        assert s.mul_id not in p.decisions[s.node_id].rounded_inputs


def test_plan_accepts_preset_names_and_policies_alike() -> None:
    prog = _mul_program()
    assert plan(prog, "eager").decisions == plan(prog, get_policy("eager")).decisions
