"""Outputs judged as the run makes them (`OutputJudge`): the same verdicts, without holding fp64 outputs.

The oracle is the verdict of the same outputs judged at the end of a run that keeps every value
(``stream=False``, or the lowered screen, which judges what its graph returns), computed in the test.
"""

from __future__ import annotations

import pytest
import torch

from roundoff.analyze import check
from roundoff.analyze.check import _plan
from roundoff.analyze.output_verdicts import OutputJudge, output_verdicts
from roundoff.analyze.screen import screen
from roundoff.analyze.verdict import Rule
from roundoff.capture import capture
from roundoff.execute import plan_numerics
from roundoff.execute.interpreter import RELEASED
from roundoff.execute.node_numerics import OracleNumerics
from roundoff.zoo import get_workload


def _mlp_step(device: str = "cpu") -> tuple:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 8))
    model = model.to(torch.bfloat16).to(device)
    x = torch.randn(16, 32, dtype=torch.bfloat16).to(device)
    prog = capture(lambda a: model(a).float().pow(2).mean(), x, backward=True)
    return prog, prog.example_inputs


def _zoo(name: str) -> tuple:
    w = get_workload(name)
    xs = w.make_inputs()
    return capture(w.build(), *xs, backward=w.backward), xs


@pytest.mark.parametrize("case", ["mlp", "softmax-backward", "bf16-chain", "fma-cancel-vector"])
def test_outputs_judged_as_made_equal_outputs_judged_at_the_end(case: str) -> None:
    prog, xs = _mlp_step() if case == "mlp" else _zoo(case)
    for policy in ("inductor-gpu", "eager"):
        for against in ("eager", "oracle"):
            what = f"check({case}, {policy!r}, against={against!r})"
            kept = check(prog, xs, policy, against=against, nodes="all", stream=False)  # judged at the end
            # (repr: a NaN figure equals itself)
            assert repr(check(prog, xs, policy, against=against, nodes="all").outputs) == repr(kept.outputs), what
            screened = check(prog, xs, policy, against=against)
            lowered = check(prog, xs, policy, against=against, screen_with="lowered")  # judged at the end
            assert repr(screened.outputs) == repr(lowered.outputs), what
    verdicts = check(prog, xs, "inductor-gpu", against="oracle", nodes="all").outputs
    if case == "softmax-backward":  # (the cases cover failing outputs too)
        assert not all(o.passes for o in verdicts)


def test_judged_outputs_are_not_held_to_the_end() -> None:
    prog, xs = _mlp_step()
    plan_a = _plan(prog, "inductor-gpu")
    judge = OutputJudge(plan_a.program, Rule.SAME, 1e-4, has_reference=False)
    s = screen(plan_a, [plan_numerics(plan_a), OracleNumerics()], xs, on_output=judge)
    grads = [i for i, arg in enumerate(plan_a.program.output_args()) if i > 0]
    # every parameter gradient released on every side once judged: no run holds a model's gradients to
    # the end (a bf16 training step's policy and reference gradients alone are 2x eager's peak)
    assert grads and all(side[i] is RELEASED for side in s.outputs for i in grads)
    ends = output_verdicts(plan_a.program, s.outputs, 1e-4, Rule.SAME, None, by_values=True, settled=judge.settled)
    assert len(ends) == len(plan_a.program.output_args())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_outputs_judged_as_made_on_cuda_equal_outputs_judged_at_the_end() -> None:
    prog, xs = _mlp_step("cuda")
    for against in ("eager", "oracle"):
        kept = check(prog, xs, "inductor-gpu", against=against, nodes="all", stream=False)
        assert repr(check(prog, xs, "inductor-gpu", against=against, nodes="all").outputs) == repr(kept.outputs)
        interpreted = check(prog, xs, "inductor-gpu", against=against, screen_with="interpreter")
        graphed = check(prog, xs, "inductor-gpu", against=against, screen_with="graphed")  # judged at the end
        assert repr(interpreted.outputs) == repr(graphed.outputs)


def _judged_both_ways(prog, xs, policy: str, reference: str, rule: Rule, tol: float = 1e-4) -> tuple:
    """(`OutputJudge.settled`, `CapturedOutputJudge.settle` of the same run's figures, or its NeedsValues);
    `reference` "oracle": against fp64."""
    from roundoff.analyze.captured_outputs import CapturedOutputJudge, NeedsValues
    from roundoff.execute.interpreter import Lockstep
    from roundoff.execute.run import complete_inputs
    from roundoff.numerics.metrics import read_together
    from roundoff.plan.shared import plan_pair

    vs_oracle = reference == "oracle"
    if vs_oracle:
        plan_a = _plan(prog, policy)
        sides = [plan_numerics(plan_a), OracleNumerics()]
    else:
        plan_a, plan_b = plan_pair(prog, policy, reference, _plan)  # (as check plans the two)
        sides = [plan_numerics(plan_a), OracleNumerics(), plan_numerics(plan_b)]
    judge = OutputJudge(plan_a.program, rule, tol, has_reference=not vs_oracle)
    captured = CapturedOutputJudge(plan_a.program, rule, tol, has_reference=not vs_oracle)
    captured.begin()
    xs = complete_inputs(plan_a.program, xs)
    with torch.inference_mode():  # (as check runs)
        Lockstep(plan_a.program, sides, on_node=judge, recompute=range(len(sides))).run_inputs(xs)
        outs = Lockstep(plan_a.program, sides, on_node=captured, recompute=range(len(sides))).run_inputs(xs)
    assert captured.made and all(side[m.index] is RELEASED for side in outs for m in captured.made)  # none kept
    try:
        return judge.settled, captured.settle(read_together(captured.tensors()))
    except NeedsValues as e:
        return judge.settled, e


def _cancellation() -> tuple:
    """A finite output bf16 holds poorly: (x + 32) - 32 keeps ~4 of x's bits (fails against fp64)."""
    x = torch.randn(64, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
    prog = capture(lambda a: (a + 32.0) - 32.0, x)
    return prog, prog.example_inputs


@pytest.mark.parametrize("case", ["mlp", "softmax-backward", "bf16-chain", "fma-cancel-vector", "cancellation"])
def test_outputs_judged_from_captured_figures_equal_outputs_judged_from_values(case: str) -> None:
    """What the graphed screen settles from figures alone is what `OutputJudge` settles from the values,
    field for field; where it cannot, it says so (NeedsValues), never a different verdict."""
    prog, xs = _mlp_step() if case == "mlp" else _cancellation() if case == "cancellation" else _zoo(case)
    if case == "cancellation":  # (the verdict by values fails there: the comparison can tell)
        by_values, by_figures = _judged_both_ways(prog, xs, "eager", "oracle", Rule.SAME)
        assert [s.by_values for s in by_figures.values()] == [False] == [s.by_values for s in by_values.values()]
    undecided = []
    for policy, reference in (("inductor-gpu", "eager"), ("eager", "inductor-gpu"), ("eager", "eager"),
                              ("inductor-gpu", "oracle"), ("eager", "oracle")):
        for rule in (Rule.SAME, Rule.ALLCLOSE, Rule.BITWISE):
            by_values, by_figures = _judged_both_ways(prog, xs, policy, reference, rule)
            if isinstance(by_figures, Exception):
                undecided.append((policy, reference, rule, str(by_figures)))
            else:
                assert repr(by_figures) == repr(by_values), (case, policy, reference, rule)
    if case == "mlp":  # a finite workload: the figures decide all but `same` where its RMSE test decides
        assert len(undecided) <= 1 and all(rule is Rule.SAME and "`same` needs" in why for *_, rule, why in undecided)
        assert not [u for u in undecided if u[1] == "oracle"]  # against fp64, every rule
    if case == "bf16-chain":
        assert not undecided
