"""Division as an FMA product under ``Division.RECIPROCAL_MULTIPLY`` (plan side).

Spec, from the H200 measurements in bench/results/gpu_div_contraction.txt (torch 2.11, Triton 3.6):
Triton's fp32 ``a / b`` is ``div.full.f32`` = ``a * MUFU.RCP(b)``, and ptxas contracts that multiply
into a following add/sub when the quotient has no other use (real ``c - a/b`` equals
``fma(-a, R, c)`` in every one of 4 x 2**24 elements; with the quotient also stored, the subtraction
stayed an FADD). A Python-number divisor is Inductor's ``a * (1/s)`` (``div_prim``), a real multiply.
The emulated values of these sites are checked against C ``fmaf`` in tests/execute.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from plan_helpers import by_op

from roundoff.capture import capture
from roundoff.plan import format_trace, plan
from roundoff.policy import Division, OpOverride, get_policy

BF16 = torch.bfloat16


def _inputs(n: int = 4) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(8, generator=g).to(BF16) for _ in range(n))


VARIANTS = {  # operand of the add/sub that is the quotient, and the trace's right-hand side
    "lambda a, b, c: c - a / b": (1, "fma(-a_f32, aten.reciprocal.default(b_f32), c_f32)"),
    "lambda a, b, c: a / b - c": (0, "fma(a_f32, aten.reciprocal.default(b_f32), -c_f32)"),
    "lambda a, b, c: c + a / b": (1, "fma(a_f32, aten.reciprocal.default(b_f32), c_f32)"),
    "lambda a, b, c: a / b + c": (0, "fma(a_f32, aten.reciprocal.default(b_f32), c_f32)"),
}


def _repro(fn: str, preset: str) -> str:
    return (
        f'repro: python -c "import torch; from roundoff.capture import capture; from roundoff.plan '
        f"import plan, format_trace; x=torch.randn(8).bfloat16(); print(format_trace(plan(capture("
        f"{fn}, x, x, x), '{preset}')))\""
    )


@pytest.mark.parametrize("fn", sorted(VARIANTS))
def test_single_use_division_is_a_contracted_site_under_inductor_gpu(fn: str) -> None:
    operand, rhs = VARIANTS[fn]
    p = plan(capture(eval(fn), *_inputs(3)), "inductor-gpu")
    (div,) = by_op(p, "aten.div.Tensor")
    (site,) = p.fma_sites
    assert site.contracted and site.operand == operand and site.mul_id == div.node_id, (
        f"{site}\n{_repro(fn, 'inductor-gpu')}"
    )
    trace = format_trace(p)
    assert rhs in trace and "division=reciprocal_multiply" in trace.splitlines()[2], trace


@pytest.mark.parametrize("fn", sorted(VARIANTS))
def test_ieee_presets_record_no_division_site(fn: str) -> None:
    prog = capture(eval(fn), *_inputs(3))
    for preset in ("inductor-cpu", "eager", "eager-cuda", "thunder-nvfuser"):
        p = plan(prog, preset)
        assert not p.fma_sites, f"{preset}: {p.fma_sites}\n{_repro(fn, preset)}"
    # thunder-nvfuser contracts FMAs but divides IEEE: the plan says so in a note
    assert any("not modelled" in note for note in plan(prog, "thunder-nvfuser").notes)
    # the same policy with its division switched records the site (and drops that note)
    rm = dataclasses.replace(get_policy("thunder-nvfuser"), division=Division.RECIPROCAL_MULTIPLY)
    p = plan(prog, rm)
    assert len(p.fma_sites) == 1 and not any("not modelled" in n for n in p.notes), p.fma_sites


def _shared_quotient(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, ...]:
    q = a / b
    return c - q, q


def test_division_with_another_user_is_not_a_site() -> None:
    p = plan(capture(_shared_quotient, *_inputs(3)), "inductor-gpu")
    (sub,) = by_op(p, "aten.sub.Tensor")
    assert sub.fma is None and not p.fma_sites, p.fma_sites
    assert any("another user" in note for note in p.notes), p.notes


def _number_divisor(a: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, ...]:
    q = a / 3.7
    return c - q, q


def test_number_divisor_is_a_multiply_site_even_with_another_user() -> None:
    # Inductor's GPU lowering makes a / 3.7 the multiply a * (1/3.7): LLVM contracts multi-use muls
    p = plan(capture(_number_divisor, *_inputs(2)), "inductor-gpu")
    (sub,) = by_op(p, "aten.sub.Tensor")
    (div,) = by_op(p, "aten.div.Tensor")
    assert sub.fma is not None and sub.fma.contracted and sub.fma.mul_id == div.node_id, p.fma_sites


def _mul_and_div(
    a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, d: torch.Tensor
) -> tuple[torch.Tensor, ...]:
    return a / b - c * d, c * d - b / a


def test_a_multiply_is_folded_before_a_tensor_division() -> None:
    # LLVM contracts the mul before ptxas ever sees the division's multiply
    p = plan(capture(_mul_and_div, *_inputs(4)), "inductor-gpu")
    (mul,) = by_op(p, "aten.mul.Tensor")  # c*d CSE'd: two uses
    (s1, s2) = by_op(p, "aten.sub.Tensor")
    divs = {d.node_id for d in by_op(p, "aten.div.Tensor")}
    for s, operand in ((s1, 1), (s2, 0)):
        assert s.fma.mul_id == mul.node_id and s.fma.operand == operand, s.fma
        assert set(s.fma.alternatives) <= divs and len(s.fma.alternatives) == 1, s.fma


def test_override_turns_a_division_site_off() -> None:
    prog = capture(lambda a, b, c: c - a / b, *_inputs(3))
    (s1,) = by_op(plan(prog, "inductor-gpu"), "aten.sub.Tensor")
    pol = dataclasses.replace(
        get_policy("inductor-gpu"), node_overrides={s1.node_id: OpOverride(contract_fma=False)}
    )
    site = plan(prog, pol).decisions[s1.node_id].fma
    assert site is not None and not site.contracted, site
    assert "FMA candidate" in format_trace(plan(prog, pol))


def test_fp64_division_is_not_a_site() -> None:
    # only fp32 division is div.full.f32; fp64 storage computes in fp64
    x = torch.randn(8, dtype=torch.float64)
    p = plan(capture(lambda a, b, c: c - a / b, x, x, x), "inductor-gpu")
    assert not p.fma_sites, p.fma_sites
