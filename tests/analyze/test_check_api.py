"""`check` as a library call: verdict equals PyTorch's rule on independent runs; bad input is clear."""

from __future__ import annotations

import json
import re

import pytest
import torch
from torch._dynamo.utils import same

from roundoff.analyze import check
from roundoff.capture import capture
from roundoff.zoo import get_workload


def test_verdict_is_pytorch_same_on_real_runs() -> None:
    w = get_workload("bf16-chain")
    fn, xs = w.build(), w.make_inputs()
    real_eager = fn(*xs)
    real_compiled = torch.compile(fn, dynamic=False)(*xs)
    fp64 = fn(*(x.double() for x in xs))
    r = check(fn, xs, "inductor-cpu")
    expected = same(real_eager, real_compiled, fp64_ref=fp64, tol=1e-4, log_error=lambda *a: None)
    assert r.outputs[0].passes == expected, "repro: check(zoo bf16-chain, 'inductor-cpu')"
    assert r.outputs[0].vs_reference.mismatch_fraction > 0.2  # fused fp32 intermediates: a third differ


def test_stream_and_keep_agree() -> None:
    w = get_workload("softmax-backward")
    xs = w.make_inputs()
    prog = capture(w.build(), *xs, backward=True)
    a = check(prog, xs, "inductor-gpu", stream=True).to_dict()
    b = check(prog, xs, "inductor-gpu", stream=False).to_dict()
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_against_another_policy_and_without_local() -> None:
    w = get_workload("bf16-chain")
    fn, xs = w.build(), w.make_inputs()
    r = check(fn, xs, "inductor-cpu", against="inductor-emulate", local=False, nodes="all")
    assert r.against == "inductor-emulate" and all(n.local is None for n in r.nodes)
    assert r.nodes[-1].vs_reference is not None


def test_wrong_input_dtype_is_a_clear_error() -> None:
    w = get_workload("bf16-chain")
    fn, xs = w.build(), w.make_inputs()
    prog = capture(fn, *xs)
    with pytest.raises(ValueError, match="expected torch.bfloat16"):
        check(prog, tuple(x.float() for x in xs), "eager")


def test_a_missing_argument_a_bad_policy_and_a_bad_tolerance_are_clear_errors() -> None:
    """Trial 57: a forgotten argument was taken from the capture's example inputs (a result for inputs
    never passed), ``check(program, xs, 123)`` raised AttributeError from deep inside, and ``tol=-1``
    was accepted. A module's parameters may still be left out (they follow its arguments)."""
    w = get_workload("bf16-chain")
    fn, xs = w.build(), w.make_inputs()
    prog = capture(fn, *xs)
    with pytest.raises(ValueError, match=f"takes {len(xs)} argument"):
        check(prog, xs[:-1], "eager")
    with pytest.raises(TypeError, match="a Policy or a preset name"):
        check(prog, xs, 123)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a Policy or a preset name"):
        check(prog, xs, "eager", against=3.5)  # type: ignore[arg-type]
    for tol in (-1, 0.0, float("nan"), "1e-4"):
        with pytest.raises(ValueError, match="tol="):
            check(prog, xs, "eager", tol=tol)  # type: ignore[arg-type]
    from roundoff.policy.errors import PolicyError

    with pytest.raises(PolicyError, match="'oracle' \\(fp64\\), or a policy"):  # trial 58: the choices named
        check(prog, xs, "eager", against="bogus")
    with pytest.raises(PolicyError, match="against='oracel': did you mean 'oracle'"):  # trial 106: as the CLI says
        check(prog, xs, "eager", against="oracel")
    x1 = torch.randn(8, 4).bfloat16()  # trial 58: a bare tensor is one input, not its 8 rows
    assert check(lambda t: t * 3, x1, "eager").outputs[0].rmse_result == check(lambda t: t * 3, (x1,), "eager").outputs[0].rmse_result
    module = torch.nn.Linear(4, 3).bfloat16()
    x = torch.randn(2, 4).bfloat16()
    linear = capture(module, x)
    assert len(linear.input_names) == 3 and not check(linear, (x,), "eager").diverges  # weight, bias: the capture's


def test_not_callable_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="Program, a function or an nn.Module"):
        check(42, (torch.zeros(2),), "eager")  # type: ignore[arg-type]


def test_no_float_outputs_is_a_clear_error() -> None:
    x = torch.arange(8)
    with pytest.raises((ValueError, TypeError), match="float"):
        check(lambda t: t * 2, (x,), "eager")


@pytest.mark.parametrize("name, policy, against", [("softmax-backward", "inductor-gpu", "eager"),
                                                    ("bf16-chain", "inductor-cpu", "eager"),
                                                    ("fma-cancel-vector", "inductor-gpu", "oracle")])
def test_outputs_judged_with_every_pass_launched_first_equal_the_flags_first(
    monkeypatch: pytest.MonkeyPatch, name: str, policy: str, against: str,
) -> None:
    """The CUDA way of reading the outputs' figures (every pass launched before one read) gives the
    verdicts and figures the CPU way does (flags read first, the passes they leave run)."""
    from roundoff.analyze import output_verdicts

    w = get_workload(name)
    xs = w.make_inputs()
    prog = capture(w.build(), *xs, backward=w.backward)
    flags_first = check(prog, xs, policy, against=against, nodes="all").to_dict()["outputs"]
    monkeypatch.setattr(output_verdicts, "launch_ahead", lambda value: True)
    launched = check(prog, xs, policy, against=against, nodes="all").to_dict()["outputs"]
    assert json.dumps(launched, sort_keys=True) == json.dumps(flags_first, sort_keys=True)


def test_a_module_torch_compile_runs_eagerly_is_said_under_its_policies() -> None:
    """torch.compile runs nn.GRU eagerly (Dynamo graph-breaks on RNN modules): real compiled output equals
    eager's bit for bit, while inductor-cpu models the GRU's ops compiled (trial 74's LSTM). The capture
    records the module and its line; an Inductor policy's check says so, the eager policy's does not.
    Oracle: real torch.compile against real eager."""
    gru = torch.nn.GRU(8, 16, batch_first=True).half()
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(0)).half()

    def run(x: torch.Tensor) -> torch.Tensor:
        return gru(x)[0].float().sum()

    torch._dynamo.reset()
    with torch.no_grad():
        assert torch.equal(torch.compile(run)(x), run(x))  # compiled as eager: the GRU is not compiled
    program = capture(run, x)
    (module, source), = program.dynamo_fallbacks
    assert module == "nn.GRU" and source == f"test_check_api.py:{run.__code__.co_firstlineno + 1}"
    said = [n for n in check(program, (x,), "inductor-cpu", against="oracle").notes if n.startswith("torch.compile runs")]
    assert len(said) == 1 and "nn.GRU at test_check_api.py" in said[0] and "-p eager" in said[0]
    assert "runs the whole function eagerly" in said[0] and "roundoff observe" in said[0]  # (trial 92)
    assert not any(n.startswith("torch.compile runs") for n in check(program, (x,), "eager", against="oracle").notes)


class _OverflowingVAE(torch.nn.Module):
    """Trial 74's fp16 VAE: inputs x24 take the KL's ``logvar.exp()`` past 65504 (the loss inf) and eager's
    gradients through it to NaN, where Inductor's are finite."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.enc, self.mu, self.logvar = torch.nn.Linear(32, 64), torch.nn.Linear(64, 8), torch.nn.Linear(64, 8)
        self.dec1, self.dec2 = torch.nn.Linear(8, 64), torch.nn.Linear(64, 32)

    def forward(self, x: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.enc(x))
        mu, logvar = self.mu(h), self.logvar(h)
        xr = self.dec2(torch.relu(self.dec1(mu + torch.exp(0.5 * logvar) * eps)))
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / x.shape[0]
        return torch.nn.functional.mse_loss(xr, x) + 0.01 * kl


def test_outputs_where_only_the_reference_is_nan_pass_alike() -> None:
    """Against eager, outputs the reference makes NaN/inf where fp64 and the policy are finite are judged
    without those elements, as nodes are: all pass (trial 74: one of four failed, by what `same` made of
    the NaN). Oracle: real eager fp16 (inf loss, NaN gradients)."""
    model = _OverflowingVAE().half()
    g = torch.Generator().manual_seed(1)
    x, eps = (torch.randn(16, 32, generator=g) * 24).half(), torch.randn(16, 8, generator=g).half()
    real = model(x, eps)
    real.backward()
    assert real.isinf() and any(bool(p.grad.isnan().any()) for p in model.parameters())
    model.zero_grad(set_to_none=True)
    result = check(capture(model, x, eps, backward=True), (x, eps), "inductor-gpu", against="eager")
    beside = [o for o in result.outputs if o.reference_nonfinite and not o.nonfinite]
    assert len(beside) >= 4 and all(o.passes for o in beside), [(o.name, o.passes) for o in beside]


def test_an_inf_the_policy_shares_with_the_reference_and_real_eager_is_no_real_eager_note() -> None:
    """An fp16 ``mse_loss`` whose mean passes 65504: inf in real eager, and in inductor-cpu's fp32 mean rounded
    to fp16, bit for bit the emulated eager reference's. No note says real eager is inf where the reference
    is not (trial 74: "the eager reference in 0", its reference_nonfinite counted 0 where the two agree).
    Oracles: real eager and fp64."""
    x = (torch.randn(256, generator=torch.Generator().manual_seed(0)) * 1000).half()

    def loss(out: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.mse_loss(out, torch.zeros_like(out))

    assert loss(x).isinf() and loss(x.double()) < 1e300 and loss(x.double()) > 65504
    result = check(capture(loss, x), (x,), "inductor-cpu", against="eager")
    assert result.outputs[0].nonfinite == 1 and result.outputs[0].vs_reference.exact  # inf, as the reference
    assert not any(n.startswith("real eager gives") for n in result.notes), result.notes


def test_a_divergence_an_autocast_read_makes_is_put_down_to_that_read() -> None:
    """Trial 78: thunder-autocast's fp16 matmuls, which it reads in bf16, diverged from eager with "the
    difference comes from what it reads" and no word of the bf16 cast (only blame said it). Oracle: the
    matmul of the bf16-rounded operands in fp64, rounded to fp16, against fp64 by hand: the error the
    sentence states."""
    import re

    g = torch.Generator().manual_seed(0)
    w = torch.randn(64, 64, generator=g).half()
    x = torch.randn(32, 64, generator=g).half()

    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x @ w) @ w

    result = check(capture(f, x), (x,), "thunder-autocast")
    exact = x.double() @ w.double()
    by_hand = (x.bfloat16().double() @ w.bfloat16().double()).half().double()
    want = float((by_hand - exact).norm() / exact.norm())
    sentence = next(e for e in result.explanations if e.startswith("first divergence at `mm`"))
    stated = float(re.search(r"normwise relative error ([0-9.e-]+) against fp64", sentence).group(1))
    assert abs(stated - want) <= 0.05 * want, (sentence, want)
    assert "reads rounded to bf16 (its float16 operands cast to bf16 first" in sentence, sentence
    eager = check(capture(f, x), (x,), "eager", against="oracle", nodes="all")  # no cast read: no such words
    assert not any("reads rounded to" in e for e in eager.explanations)


def test_a_loss_checked_without_its_backward_says_its_gradients_were_not_checked() -> None:
    """Trial 78: `check vit.py:train_loss` without --backward said ok with no word that no gradient was
    checked (with --backward the patch-embedding gradients diverge). Oracle: the model's own parameters
    that require grad, counted by torch."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).bfloat16()
    x = torch.randn(4, 8).bfloat16()

    def loss(x: torch.Tensor) -> torch.Tensor:
        return model(x).float().square().mean()

    def notes(fn, backward: bool = False) -> list[str]:
        return [n for n in check(capture(fn, x, backward=backward), (x,), "eager", against="oracle").notes
                if "not differentiated" in n]

    trainable = sum(p.requires_grad for p in model.parameters())
    (note,) = notes(loss)
    assert f"`out` is one number computed from {trainable} input(s) that require grad" in note and "--backward" in note
    assert notes(loss, backward=True) == []  # differentiated
    # another forward of them (trial 80: a train-mode Gemma's logits): checked as an inference graph, said so
    (note,) = notes(lambda x: model(x))
    assert note.startswith(f"not differentiated: {trainable} input(s) require grad;") and "torch.no_grad()" in note
    model.requires_grad_(False)
    assert notes(loss) == [] and notes(lambda x: model(x)) == []  # nothing to differentiate


def test_a_results_repr_is_one_line_naming_its_verdict() -> None:
    """Trial 78: ``print(check(...))`` printed the generated repr of every node's figures, many KB. Oracle:
    the result's own fields."""
    x = torch.randn(64, 64).half()
    result = check(capture(lambda x: torch.exp(x * 20) * 2 - x, x), (x,), "eager", against="oracle", nodes="all")
    text = repr(result)
    assert "\n" not in text and len(text) < 400 and len(result.nodes) >= 3, text
    assert "verdict='diverges'" in text and f"first_divergent={result.first_divergent!r}" in text
    assert f"failing_outputs={[o.name for o in result.outputs if not o.passes]!r}" in text


def test_the_steps_of_a_decomposed_forward_op_are_not_said_to_be_in_the_backward() -> None:
    """Trial 85: Bloom's first divergence, its input LayerNorm's cast ``n59.0``, was said to be "in the backward":
    a planned step was held to be backward-only where its captured node (``n59``) was decomposed away. Oracle:
    a LayerNorm's statistics and normalisation are computed by the forward (the loss reads them)."""
    import torch

    from roundoff.analyze import check

    torch.manual_seed(0)
    ln, lin = torch.nn.LayerNorm(64).to(torch.bfloat16), torch.nn.Linear(64, 64).to(torch.bfloat16)

    def step(x: torch.Tensor) -> torch.Tensor:
        return lin(ln(x)).float().square().mean()

    r = check(step, (torch.randn(8, 64).to(torch.bfloat16),), "inductor-cpu", against="eager", nodes="all",
              backward=True)
    layer_norm = {n.node_id for n in r.nodes if n.op == "var_mean[0]"}  # its forward's: the first of two
    first = min(layer_norm, key=lambda i: int(i[1:].split(".")[0])).split(".")[0]
    normalised = [n for n in r.nodes if n.node_id.startswith(f"{first}.") and n.op in ("var_mean[0]", "rsqrt", "sub")]
    assert len(normalised) == 3 and not any(n.backward for n in normalised), [(n.node_id, n.backward) for n in normalised]
    assert any(n.backward for n in r.nodes)  # (the gradients are)


def test_flagged_nodes_of_one_line_beyond_those_named_are_counted_in_the_findings() -> None:
    """Trial 85: Bloom's table marked four `mul`s of one line (four layers) as diverging, the findings named
    two and said nothing of the others. Five ``x*s - x*s`` of one line under inductor-gpu, each contracted
    into an FMA that keeps the product's rounding error, where eager (and fp64: the oracle) gives 0: every
    flagged `sub` of the line is named or counted."""
    import torch

    from roundoff.analyze import check
    from roundoff.analyze.verdict import Verdict

    g = torch.Generator().manual_seed(0)
    x, scales = torch.randn(256, generator=g) * 1e4, [torch.randn(256, generator=g) * 3 for _ in range(5)]

    def cancelled(x: torch.Tensor, *scales: torch.Tensor) -> torch.Tensor:
        return torch.stack([x * s - x * s for s in scales]).sum(0)  # each 0, as fp64 computes it

    assert float(cancelled(x.double(), *(s.double() for s in scales)).abs().max()) == 0.0
    r = check(cancelled, (x, *scales), "inductor-gpu", against="eager", nodes="all")
    flagged = {n.node_id for n in r.nodes if n.op == "sub" and n.verdict is not Verdict.OK}
    assert len(flagged) == 5, [(n.node_id, n.op, n.verdict) for n in r.nodes]
    text = " ".join(r.explanations)
    assert all(re.search(rf"\b{nid}\b", text) for nid in flagged) and "are flagged as well" in text, text


def test_an_output_both_runs_make_inf_says_it_fails_whichever_runs_it() -> None:
    """Trial 86: `check -p eager --against eager` said "eager diverges from eager" of an fp16 loss beyond fp16's
    range, with no word that the reference is inf too. Oracle: real fp16 eager's loss is inf, fp64's finite."""
    import torch

    from roundoff.analyze import check

    def energy(x: torch.Tensor) -> torch.Tensor:
        return (x * 300).pow(2).sum()

    x = torch.randn(64, generator=torch.Generator().manual_seed(0)).half()
    assert torch.isinf(energy(x)) and torch.isfinite(energy(x.double()))
    r = check(energy, (x,), "eager", against="eager")
    assert r.diverges  # (the rule: an output NaN/inf where fp64 is finite fails)
    assert any("eager is not finite there either: the output fails whichever runs it" in e for e in r.explanations)
    assert not any("there either" in e for e in check(energy, (x,), "eager", against="oracle").explanations)


def test_an_fma_cause_says_its_error_against_its_formats_rounding() -> None:
    """Trial 103: "FMA contraction keeps the rounding error of `mul` (n31): recomputed from fp64 inputs it is up to
    3.9e-19 away from fp64" said nothing of whether that is much (values near 0: 31x bf16's rounding). The
    sentence gives the node's own excess, the figure the nodes table ranks it by."""
    w = get_workload("softmax-backward")
    xs = w.make_inputs()
    r = check(capture(w.build(), *xs, backward=True), xs, "inductor-gpu", against="eager")
    by_id = {n.node_id: n for n in r.nodes}
    fma = [e for e in r.explanations if "FMA contraction keeps the rounding error of" in e and "away from fp64," in e]
    assert fma, r.explanations
    nid = fma[0].split(" at ")[0].split("(")[-1]
    node = by_id[nid]
    assert f"{node.own_excess:.3g} times the rounding of {node.working_dtype or node.dtype}" in fma[0], (fma[0], node)


def _cancels(x: torch.Tensor) -> torch.Tensor:
    big = x * 1000.0
    return (big + 1.0) - big


def test_a_reference_far_from_fp64_is_said_where_the_policy_matches_fp64() -> None:
    """Trial 104: `check -p inductor-cpu` (against eager) said "ok" where eager's loss was 1770x farther from
    fp64 than the compiled one's, finite, with no hint to check eager itself. Oracle: real eager and fp64 by
    hand (eager rounds `big + 1` to bf16, losing the 1; fp32 kept inside one kernel holds it)."""
    x = torch.linspace(1.0, 2.0, 64).bfloat16()
    exact = (x.double() * 1000 + 1) - x.double() * 1000
    eager_err = float((_cancels(x).double() - exact).norm() / exact.norm())
    fp32_err = float((_cancels(x.float()).double() - exact).norm() / exact.norm())
    assert eager_err > 0.5 and fp32_err < 1e-3, (eager_err, fp32_err)
    r = check(_cancels, (x,), "inductor-cpu", against="eager")
    said = [e for e in r.explanations if e.startswith("the reference (eager) is over 16x farther from fp64")]
    assert said and "-p eager --against oracle" in said[0], r.explanations
    calm = check(_cancels, (x,), "eager", against="eager")  # (a reference no farther than the policy: nothing said)
    assert not any("farther from fp64 than this policy" in e for e in calm.explanations), calm.explanations


def test_on_phase_hears_the_screen_and_how_many_nodes_every_node_examination_has_evaluated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Trial 105: a four-minute check's progress said only "under eager", over and over. `on_phase` hears the
    screen, then every node's examination with its count; the last count is the graph's call_function nodes."""
    import importlib

    monkeypatch.setattr(importlib.import_module("roundoff.analyze.check"), "PHASE_EVERY_S", 0.0)
    x = torch.linspace(30, 40, 64, dtype=torch.float64).to(torch.float16)

    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.exp(x * 0.5) * x - x  # fp16 exp of 15-20: beyond fp16's range, so the screen fails

    program = capture(f, x)
    heard: list[str] = []
    result = check(program, (x,), "eager", "oracle", on_phase=heard.append)
    assert result.diverges and heard[0].startswith("screening"), heard
    calls = sum(1 for n in program.graph.nodes if n.op == "call_function")
    assert heard[-1] == f"examining every node ({calls} of {calls} evaluated)", heard


def test_a_training_step_eager_makes_nan_in_and_inductor_does_not_points_to_the_real_partitioned_step() -> None:
    """Trial 106: check -p inductor-cpu passed a GPT-J step whose eager gradients were NaN ("this policy does
    not"), and real torch.compile's were NaN too: the plan runs the step as one graph, torch.compile as two
    (its backward reads the fp16 values the forward stored). The caveat, in --json only, now comes with the
    finding. Oracles: real eager overflows (inf), fp64 is finite."""
    x = torch.linspace(0.5, 1.5, 32, dtype=torch.float64).half()

    def step(x: torch.Tensor) -> torch.Tensor:
        return ((x * 300) * 300 / 1000).sum()  # eager rounds 90000 to fp16's inf; Inductor's fused kernel does not

    assert torch.isinf(step(x)) and torch.isfinite(step(x.double()))
    program = capture(step, x.clone().requires_grad_(), backward=True)
    result = check(program, program.example_inputs, "inductor-cpu", against="eager")
    said = next(e for e in result.explanations if e.startswith("the reference (eager) is NaN/inf"))
    assert "observe --backward --partitioned" in said and "one graph" in said, said
    forward = check(capture(step, x), (x,), "inductor-cpu", against="eager")  # not a training step: not said
    assert not any("partitioned" in e for e in forward.explanations), forward.explanations
