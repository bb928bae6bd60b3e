"""The lowered plan executed equals the emulator (`run_plan`) bit for bit, and states its decisions as ops.

Oracle: ``roundoff.execute.run_plan`` on the same plan and inputs (itself tested against real eager
and real Inductor in tests/execute). NaN equals NaN (payloads are not modelled).
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings

from roundoff.capture import capture
from roundoff.execute import run_oracle, run_plan
from roundoff.lower import lower, lower_oracle, lowered_code
from roundoff.plan import plan
from roundoff.policy import PRESETS
from roundoff.zoo import get_workload
from tests.execute.graphs import build, inputs, recipes

_ROUND = torch.ops.roundoff.round_to.default
_FMA = torch.ops.roundoff.fma.default
POINTWISE_ZOO = ["fma-cancel", "softmax-backward", "bf16-chain"]


def _zoo(name: str, backward: bool | None = None) -> tuple:
    """The captured workload and its full flat inputs (parameters included)."""
    w = get_workload(name)
    program = capture(w.build(), *w.make_inputs(), backward=w.backward if backward is None else backward, name=name)
    return program, tuple(x.detach() for x in program.example_inputs)


def _differ(a: torch.Tensor, b: torch.Tensor) -> int:
    """Elements whose bits differ (any NaN equals any NaN); every element when dtype or shape differ."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return max(a.numel(), b.numel(), 1)
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    nan = a.float().isnan() & b.float().isnan() if a.is_floating_point() else torch.zeros_like(a, dtype=torch.bool)
    return int((~((a.view(ints) == b.view(ints)) | nan)).sum())


def _assert_same(got: tuple, want: tuple, repro: str) -> None:
    assert len(got) == len(want), repro
    for i, (g, w) in enumerate(zip(got, want)):
        if not isinstance(w, torch.Tensor):
            assert g == w, f"output {i}: {g!r} != {w!r}; repro: {repro}"
            continue
        assert not _differ(g, w), f"output {i}: {_differ(g, w)} of {w.numel()} elements differ; repro: {repro}"


@pytest.mark.parametrize("policy", sorted(PRESETS))
@pytest.mark.parametrize("name", POINTWISE_ZOO)
def test_zoo_pointwise_lowered_equals_emulator(name: str, policy: str) -> None:
    program, xs = _zoo(name)
    p = plan(program, policy)
    gm = lower(p)
    _assert_same(gm(*xs), run_plan(p, xs), f"lower(plan(zoo:{name}, {policy!r}))(*inputs) vs run_plan")


def test_lowered_graph_interpreted_and_on_other_inputs() -> None:
    """fx.Interpreter gives the same bits; and the graph is a function of its inputs, not of the trace's."""
    program, xs = _zoo("bf16-chain")
    p = plan(program, "inductor-cpu")
    gm = lower(p)
    assert type(gm).__name__ == "LoweredPlan"  # (trial 83: `<lambda>`, after the function make_fx traced)
    _assert_same(tuple(torch.fx.Interpreter(gm).run(*xs)), run_plan(p, xs), "Interpreter(lower(...)).run")
    g = torch.Generator().manual_seed(7)
    other = tuple(torch.randn(x.shape, generator=g).to(x.dtype) for x in xs)
    _assert_same(gm(*other), run_plan(p, other), "lower(plan) traced on example inputs, run on others")


def test_decisions_are_explicit_ops() -> None:
    """FMA sites become roundoff::fma; every fp32 -> narrow cast is fed by a roundoff::round_to;
    bf16-chain under eager rounds after each of its 4 ops, under inductor-cpu only the output."""
    program, xs = _zoo("fma-cancel")
    p = plan(program, "inductor-gpu")
    fmas = [n for n in lower(p).graph.nodes if n.target is _FMA]
    assert len(fmas) == len([s for s in p.fma_sites if s.contracted]) == 1
    program, xs = _zoo("bf16-chain")
    counts = {}
    for policy in ("eager", "inductor-cpu"):
        gm = lower(plan(program, policy))
        for n in gm.graph.nodes:
            if n.target is torch.ops.aten._to_copy.default and n.kwargs.get("dtype") == torch.bfloat16:
                src = n.args[0]
                assert src.meta["val"].dtype != torch.float32 or src.target is _ROUND, n.format_node()
        counts[policy] = sum(n.target is _ROUND for n in gm.graph.nodes)
        assert "roundoff.round_to" in lowered_code(gm)
    assert counts == {"eager": 4, "inductor-cpu": 1}, counts


def test_kernel_boundaries_annotated() -> None:
    program, _ = _zoo("bf16-chain")
    p = plan(program, "inductor-gpu")
    gm = lower(p)
    tagged = {n.meta["roundoff"].node_id: n.meta["roundoff"].kernel for n in gm.graph.nodes if "roundoff" in n.meta}
    want = {nid: p.decisions[nid].group if nid in p.decisions else None for nid in tagged}
    assert tagged == want and set(tagged) >= {"n5", "n7"}, (tagged, want)
    assert "[kernel 0: pointwise]" in lowered_code(gm)


def _random(recipe: list, dtype: torch.dtype, policy: str) -> None:
    xs = inputs(dtype, n=256)
    program = capture(build(recipe), *xs)
    p = plan(program, policy)
    _assert_same(lower(p)(*xs), run_plan(p, xs), f"lower(plan(capture(build({recipe!r})), {policy!r}))")


@settings(max_examples=12, deadline=None, derandomize=True)
@given(recipe=recipes(scalar_ops=("add", "sub", "mul", "div")))
@pytest.mark.parametrize("policy", ["eager", "eager-cuda", "inductor-gpu", "inductor-cpu", "xla-2.10"])
def test_random_pointwise_lowered_equals_emulator_bf16(policy: str, recipe: list) -> None:
    _random(recipe, torch.bfloat16, policy)


@settings(max_examples=12, deadline=None, derandomize=True)
@given(recipe=recipes(scalar_ops=("add", "sub", "mul", "div")))
@pytest.mark.parametrize("policy", ["eager", "inductor-gpu"])
def test_random_pointwise_lowered_equals_emulator_fp16(policy: str, recipe: list) -> None:
    _random(recipe, torch.float16, policy)


def test_fp8_and_fnuz_roundings_lowered() -> None:
    x, y = inputs(torch.float32, n=512)[:2]

    def fn(x: torch.Tensor, y: torch.Tensor) -> tuple:
        a = (x * y).to(torch.float8_e4m3fnuz).float() + y
        b = (a * 3.0).to(torch.float8_e5m2fnuz)
        c = (x - y).to(torch.float8_e4m3fn).float() * (x + y).to(torch.float8_e5m2).float()
        return b, c.to(torch.float16)

    program = capture(fn, x, y)
    for policy in ("eager", "inductor-gpu"):  # inductor-gpu drops the user's round trips inside a kernel
        p = plan(program, policy)
        gm = lower(p)
        fmts = {n.args[1] for n in gm.graph.nodes if n.target is _ROUND}
        want = {"fp8_e4m3fnuz", "fp8_e5m2fnuz", "fp8_e4m3fn", "fp8_e5m2", "fp16"}
        assert fmts == (want if policy == "eager" else {"fp8_e5m2fnuz", "fp16"}), (policy, fmts)
        _assert_same(gm(x, y), run_plan(p, (x, y)), f"lower(plan(fp8 casts, {policy!r}))")


@pytest.mark.parametrize("policy", ["eager", "inductor-cpu", "xla-2.10", "thunder-autocast"])
def test_llama_block_forward_backward_lowered_equals_emulator(policy: str) -> None:
    program, xs = _zoo("llama-block", backward=True)
    assert program.backward
    p = plan(program, policy)
    _assert_same(lower(p)(*xs), run_plan(p, xs), f"lower(plan(llama-block fwd+bwd, {policy!r}))")


def test_oracle_lowered_equals_run_oracle() -> None:
    program, xs = _zoo("softmax-backward")
    _assert_same(lower_oracle(program)(*program.example_inputs), run_oracle(program, ()), "lower_oracle(softmax-backward)")
