"""Notes on what a check measures: the fp64 oracle runs the graph as captured, a 16-bit format's range limit
included (trial 58: transformers' T5 clamps float16 hidden states to it, and the oracle clamped too); an
output with no elements passes with nothing measured (trial 59)."""

from __future__ import annotations

import linecache

import pytest
import torch

from roundoff.analyze import check
from roundoff.capture import capture


def test_t5s_float16_clamp_is_named_at_its_source_line() -> None:
    transformers = pytest.importorskip("transformers")
    from transformers.models.t5.modeling_t5 import T5Block

    torch.manual_seed(0)
    config = transformers.T5Config(d_model=32, d_ff=64, num_heads=2, d_kv=16, num_layers=1, vocab_size=64)
    block = T5Block(config, has_relative_attention_bias=True).half().eval()
    x = torch.randn(2, 8, 32).half()
    program = capture(lambda x: block(x)[0], x)
    notes = [n for n in check(program, (x,), "eager", against="oracle").notes if "runs the graph as captured" in n]
    assert len(notes) == 1, notes
    limit = torch.finfo(torch.float16).max
    assert f"with {limit:g}, float16's largest finite value" in notes[0] or "or near it" in notes[0], notes[0]
    source = notes[0].split(" at ")[1].split(")")[0]  # modeling_t5.py:LINE, where T5 tests its dtype
    file, line = source.rsplit(":", 1)
    import transformers.models.t5.modeling_t5 as t5

    statement = "".join(linecache.getline(t5.__file__, i) for i in range(int(line), int(line) + 4))
    assert file == "modeling_t5.py" and "torch.finfo(hidden_states.dtype).max" in statement, source
    assert not [n for n in check(program, (x,), "eager", against="eager").notes if "as captured" in n]


def test_a_finfo_min_mask_is_named_as_a_mask_not_a_clamp() -> None:
    """Trial 78: a GPT-NeoX attention mask filled with ``finfo(float16).min`` was explained as "its
    largest finite value ... a clamp to torch.finfo(x.dtype).max; T5's clamp". Oracle: torch's finfo."""
    q = torch.randn(4, 8, 8).half()
    lowest = torch.finfo(torch.float16).min
    causal = torch.ones(8, 8, dtype=torch.bool).triu(1)
    program = capture(lambda q: torch.softmax((q @ q.transpose(-1, -2)).masked_fill(causal, lowest), -1), q)
    (note,) = [n for n in check(program, (q,), "eager", against="oracle").notes if "as captured" in n]
    assert f"with {lowest:g}, float16's most negative finite value" in note and "attention mask filled with " \
        "torch.finfo(x.dtype).min" in note and "clamp" not in note, note


def test_no_note_without_a_range_limit_constant() -> None:
    w = torch.randn(16, 16).half()
    x = torch.randn(4, 16).half()
    program = capture(lambda x: torch.relu(x @ w).clamp(max=1000.0), x)
    assert not [n for n in check(program, (x,), "eager", against="oracle").notes if "as captured" in n]


def test_an_output_with_no_elements_is_said_to_pass_with_nothing_measured() -> None:
    """Trial 59: a 0-size output showed "rmse 0, ok" as though it had been measured."""
    x = torch.randn(0, 8).bfloat16()
    program = capture(lambda x: (torch.exp(x) * 2, x.sum()), x)
    notes = check(program, (x,), "inductor-cpu", against="oracle").notes
    assert [n for n in notes if n.startswith("nothing measured")] == [
        "nothing measured at `out0`: no elements (a 0-size input?); they pass vacuously"]


def test_an_integer_output_and_an_all_float32_program_are_said_not_to_be_judged() -> None:
    """Trial 61: a check dropped an integer output without a word, and checked an fp32 model (its
    ``.half()`` forgotten) as "ok" with nothing to say. Oracle: the dtypes torch itself gives the values."""
    def counts(x):  # type: ignore[no-untyped-def]
        return (x * 2).sum(), (x > 0).sum()

    x = torch.randn(8)
    assert counts(x)[1].dtype == torch.int64 and counts(x)[0].dtype == torch.float32
    for dtype, fp32_note in ((torch.float32, True), (torch.float16, False)):
        notes = check(capture(counts, x.to(dtype)), (x.to(dtype),), "inductor-cpu").notes
        assert [n for n in notes if n.startswith("not judged: `out1` (int64)")], notes
        assert bool([n for n in notes if n.startswith("every floating-point value of")]) is fp32_note, notes


def test_a_backward_of_several_outputs_says_it_differentiates_their_sum() -> None:
    """Trial 77: ``return loss, pred`` with --backward took pred's sum into every gradient without a word on
    the terminal. Oracle: torch.autograd's gradient of ``loss + pred.sum()`` is the program's gradient."""
    lin = torch.nn.Linear(8, 8).half()
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(0)).half()

    def step(x: torch.Tensor):  # type: ignore[no-untyped-def]
        pred = lin(x)
        loss = (pred.float() ** 2).mean()
        return loss, pred

    program = capture(step, x, backward=True)
    loss, pred = step(x)
    want = torch.autograd.grad(loss + pred.sum(), lin.weight)[0]
    got = program.graph_module(*program.example_inputs)[program.output_names.index("grad_lin.weight")]
    assert torch.equal(got, want)
    notes = check(program, program.example_inputs, "inductor-cpu").notes
    assert [n for n in notes if n.startswith("differentiated: the sum of the floating-point outputs `loss`, `pred`")], notes
    single = capture(lambda x: step(x)[0], x, backward=True)
    assert not [n for n in check(single, single.example_inputs, "inductor-cpu").notes if n.startswith("differentiated")]


def test_torchs_cpu_attention_kernel_is_emulated_as_it_is_or_said_not_to_be() -> None:
    """Trial 79: with transformers' default SDPA, emulated eager was 2-11x closer to fp64 than real eager on
    an fp16 OPT step's gradients: torch's CPU attention kernel rounds the attention weights to fp16 before the V
    product, the emulation computed it in fp32 and rounded once. Eager and inductor-cpu now run that kernel;
    a GPU policy, which does not, says so. Oracle: torch's own kernel, forward and backward, bit for bit, and
    torch.compile's; fp64 for the error the fp32 emulation had."""
    from roundoff.execute import run_plan
    from roundoff.numerics import bits_differ
    from roundoff.plan import plan

    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 64, 16).half().requires_grad_() for _ in range(3))

    def f(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True) * 2

    program = capture(f, q, k, v, backward=True)
    inputs = (q.detach(), k.detach(), v.detach())
    out = f(q, k, v)
    out.backward(torch.ones_like(out))
    real = [out.detach(), q.grad, k.grad, v.grad]
    assert [bits_differ(e, r) for e, r in zip(run_plan(plan(program, "eager"), inputs), real)] == [0] * 4
    for t in (q, k, v):
        t.grad = None
    torch._dynamo.reset()
    out = torch.compile(f)(q, k, v)
    out.backward(torch.ones_like(out))
    compiled = [out.detach(), q.grad, k.grad, v.grad]
    assert [bits_differ(e, r) for e, r in zip(run_plan(plan(program, "inductor-cpu"), inputs), compiled)] == [0] * 4
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    f(q64, k64, v64).sum().backward()
    gpu = run_plan(plan(program, "inductor-gpu"), inputs)[1]  # the fp32 attention rounded once
    errors = [float((t.double() - q64.grad).norm() / q64.grad.norm()) for t in (real[1], gpu)]
    assert errors[0] > 1.2 * errors[1], errors  # the CPU kernel's dq is further from fp64
    for policy, said in (("eager", False), ("inductor-cpu", False), ("inductor-gpu", True)):
        notes = [n for n in check(program, inputs, policy, against="oracle").notes
                 if n.startswith("torch's CPU attention kernel")]
        assert bool(notes) == said, (policy, notes)
    assert "rounds the attention weights to float16" in notes[0] and "under inductor-gpu" in notes[0], notes
