"""The corpus: every entry builds and trains in eager, the list is PyTorch's, and a subset that covers
the most distinct aten ops runs the bench's six cells without an exception."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from roundoff import corpus

BENCH = Path(__file__).resolve().parents[2] / "bench"

# PyTorch's benchmarks/dynamo/huggingface_models_list.txt (name, A100 batch size), verbatim.
PYTORCH_LIST = """\
AlbertForMaskedLM,8
AlbertForQuestionAnswering,8
AllenaiLongformerBase,8
BartForCausalLM,8
BartForConditionalGeneration,4
BertForMaskedLM,32
BertForQuestionAnswering,32
BlenderbotForCausalLM,32
BlenderbotForConditionalGeneration,16
BlenderbotSmallForCausalLM,256
BlenderbotSmallForConditionalGeneration,128
CamemBert,32
DebertaV2ForMaskedLM,8
DebertaV2ForQuestionAnswering,8
DistilBertForMaskedLM,256
DistilBertForQuestionAnswering,512
DistillGPT2,32
ElectraForCausalLM,64
ElectraForQuestionAnswering,128
GPT2ForSequenceClassification,8
GPTJForCausalLM,1
GPTJForQuestionAnswering,1
GPTNeoForCausalLM,32
GPTNeoForSequenceClassification,32
GoogleFnet,32
LayoutLMForMaskedLM,32
LayoutLMForSequenceClassification,32
M2M100ForConditionalGeneration,64
MBartForCausalLM,8
MBartForConditionalGeneration,4
MT5ForConditionalGeneration,32
MegatronBertForCausalLM,16
MegatronBertForQuestionAnswering,16
MobileBertForMaskedLM,256
MobileBertForQuestionAnswering,256
OPTForCausalLM,4
PLBartForCausalLM,16
PLBartForConditionalGeneration,8
PegasusForCausalLM,128
PegasusForConditionalGeneration,64
RobertaForCausalLM,32
RobertaForQuestionAnswering,32
T5ForConditionalGeneration,8
T5Small,8
TrOCRForCausalLM,64
XGLMForCausalLM,32
XLNetLMHeadModel,16
YituTechConvBert,32
meta-llama/Llama-3.2-1B,8
google/gemma-2-2b,8
google/gemma-3-4b-it,8
openai/whisper-tiny,8
Qwen/Qwen3-0.6B,8
mistralai/Mistral-7B-Instruct-v0.3, 8
openai/gpt-oss-20b, 8
"""
PYTORCH_NAMES = tuple(line.split(",")[0].strip() for line in PYTORCH_LIST.splitlines())


def _needs(name: str) -> list[pytest.MarkDecorator]:
    marks = []
    if corpus.get(name).family is corpus.Family.HUGGINGFACE:
        marks.append(pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                                        reason="transformers not installed (roundoff[models])"))
    return marks


def _entry_param(name: str) -> object:
    marks = _needs(name)
    if corpus.get(name).broken:
        marks.append(pytest.mark.xfail(strict=True, raises=RuntimeError, reason=corpus.get(name).broken))
    return pytest.param(name, marks=marks, id=name)


def _load_bench():
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("roundoff_bench_models", BENCH / "models.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_the_list_is_pytorchs_and_the_bench_runs_all_of_it() -> None:
    assert len(PYTORCH_NAMES) == 55
    assert corpus.HF_MODELS == PYTORCH_NAMES  # PyTorch's names, in its order
    assert set(corpus.HANDWRITTEN) == {"nanogpt-sdpa", "nanogpt-manual", "cnn-bn"}
    bench = _load_bench()
    assert set(bench.default_models()) == set(PYTORCH_NAMES) | set(corpus.HANDWRITTEN)
    assert len(bench.CELLS) == 6 and "eager@oracle" in bench.CELLS
    with_ids = [n for n in corpus.names() if "ids" in corpus.get(n).forms]
    assert len(with_ids) >= 10


def test_corpus_imports_and_reports_without_transformers() -> None:
    code = (
        "import sys; sys.modules['transformers'] = None\n"
        "from roundoff import corpus\n"
        "corpus.build('nanogpt-sdpa').step()\n"
        "try:\n    corpus.build('BertForMaskedLM')\n"
        "except corpus.CorpusUnavailable as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "transformers is not installed" in out.stdout


@pytest.mark.parametrize("name", [_entry_param(n) for n in corpus.names()])
def test_every_entry_builds_small_bf16_and_trains_in_eager(name: str) -> None:
    target = corpus.build(name)
    model = target.model
    assert model.training
    params = [p for p in model.parameters() if p.requires_grad]
    assert all(p.dtype == torch.bfloat16 for p in params)
    assert sum(p.numel() for p in params) < 400_000
    assert all(not isinstance(m, torch.nn.Dropout) or m.p == 0.0 for m in model.modules())
    loss = target.step()
    assert loss.dim() == 0 and math.isfinite(loss.item())
    grads = [p.grad for p in params if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    assert any(g.abs().sum() > 0 for g in grads)


@pytest.mark.parametrize("name", [pytest.param(n, marks=_needs(n), id=n) for n in corpus.names()
                                  if not corpus.get(n).broken])
def test_every_form_computes_the_same_loss_as_the_module(name: str) -> None:
    module = corpus.build(name, "module")
    reference = module.fn(*module.inputs)
    for form in corpus.get(name).forms[1:]:
        target = corpus.build(name, form)
        assert target.form == form and not isinstance(target.fn, torch.nn.Module)
        if form == "ids":
            assert [t.dtype for t in target.inputs] == [torch.int64]
        loss = target.fn(*target.inputs)
        if form == "closure":  # same model, same inputs, same ops: bit for bit
            assert torch.equal(loss, reference)
        else:
            assert math.isfinite(loss.item())


def test_builds_are_deterministic_per_seed() -> None:
    a, b, c = (corpus.build("nanogpt-manual", seed=s) for s in (0, 0, 1))
    assert all(torch.equal(x, y) for x, y in zip(a.inputs, b.inputs))
    assert torch.equal(a.model.lm_head.weight, b.model.lm_head.weight)
    assert not torch.equal(a.model.lm_head.weight, c.model.lm_head.weight)
    with pytest.raises(ValueError, match="cnn-bn has no 'ids' form"):
        corpus.build("cnn-bn", "ids")
    with pytest.raises(KeyError, match="no corpus entry 'gpt5'"):
        corpus.get("gpt5")


# The CI subset: a greedy cover of the distinct aten ops in the captured forward+backward graphs of
# the corpus, weighed by graph size (check's cost grows with the node count). 125 ops over the graphs
# that capture at this commit: gpt-oss (MoE, 839 nodes) has 67, Whisper (encoder-decoder, conv1d;
# 954) +20, the hand-written-softmax nanoGPT (398) +5: 92 (DistillGPT2 would add 2 for 348 nodes);
# plus the CNN for convolution, batch norm and max-pool, which no transformers entry has.
SUBSET = ("openai/gpt-oss-20b", "openai/whisper-tiny", "nanogpt-manual", "cnn-bn")
CELLS = ("eager@eager", "inductor-gpu@eager", "inductor-cpu@eager", "xla-2.10@eager",
         "thunder-autocast@eager", "eager@oracle")
#: Cells where the default (screen) check is compared with every node examined (``nodes="all"``).
SCREEN_VS_EVERY_NODE = ("inductor-gpu@eager", "eager@oracle")


def _subset_param(name: str, cell: str) -> object:
    return pytest.param(name, cell, marks=_needs(name), id=f"{name}-{cell}")


_PROGRAMS: dict[str, tuple] = {}


def _captured(bench, name: str) -> tuple:
    """(exit, error line, program) of `capture(..., backward=True)` under the CLI's guard, once."""
    if name not in _PROGRAMS:
        from roundoff.capture import capture

        target = corpus.build(name)
        _PROGRAMS[name] = bench.run_guarded(lambda: capture(target.fn, *target.inputs, backward=True))
    return _PROGRAMS[name]


@pytest.mark.parametrize(("name", "cell"), [_subset_param(n, c) for n in SUBSET for c in CELLS])
def test_subset_runs_every_cell_to_a_verdict(name: str, cell: str) -> None:
    """Exit 0 or 1 as ``roundoff check`` would give it (never 2 on valid code, never 3)."""
    from roundoff.analyze import check

    bench = _load_bench()
    code, error, program = _captured(bench, name)
    assert code is None, f"capture exits {code}: {error}"
    policy, against = cell.split("@")
    code, error, result = bench.run_guarded(
        lambda: check(program, program.example_inputs, policy, against=against))
    assert code is None, f"check exits {code}: {error}"
    assert len(result.outputs) == program.num_forward_outputs + len(program.grad_input_names)
    if policy == against:  # a policy emulated against itself agrees bit for bit
        assert not result.diverges
        assert all(o.vs_reference.exact for o in result.outputs)
    if cell in SCREEN_VS_EVERY_NODE:  # the screen's verdict is every node's (issue 15)
        code, error, full = bench.run_guarded(
            lambda: check(program, program.example_inputs, policy, against=against, nodes="all"))
        assert code is None, f"check --every-node exits {code}: {error}"
        assert result.diverges == full.diverges and [o.passes for o in result.outputs] == [
            o.passes for o in full.outputs]
        if full.diverges:
            assert (result.first_divergent, result.nan_origin, result.culprits) == (
                full.first_divergent, full.nan_origin, full.culprits)
        result = full
    if against == "oracle":  # issue 13: a clean model under eager shows no noise against fp64; what fails
        # follows a selection that picks other elements than fp64 where that choice moves the outputs (a
        # bf16 max pool's near-ties: a discrete decision, named, replayed in fp64 by check), nothing else
        from roundoff.analyze.culprits import ancestors

        flipped = {nid for nid, _n, _of in result.selection_flips}
        failing = [o for o in result.outputs if not o.passes]
        assert all(flipped & ancestors(program, {o.node_id.split(".")[0]}) for o in failing), [o.name for o in failing]
        assert not failing or any("selects differently from fp64" in e for e in result.explanations)
        assert [n.node_id for n in result.nodes if n.verdict != "ok"] == []
        assert result.nan_origin is None


@pytest.mark.parametrize("form", ["closure", "ids"])
@pytest.mark.parametrize("name", ["meta-llama/Llama-3.2-1B", "nanogpt-sdpa"])
def test_closure_and_ids_forms_check_like_the_module(name: str, form: str) -> None:
    """A function closing over the model (ids, or all its tensors) is checked as the module is: the
    same loss and gradients (named by the closure's access path), bit for bit under eager."""
    from roundoff.analyze import check
    from roundoff.capture import capture

    bench = _load_bench()
    target = corpus.build(name, form)
    code, error, program = bench.run_guarded(
        lambda: capture(target.fn, *target.inputs, backward=True))
    assert code is None, f"capture exits {code}: {error}"
    assert len(program.grad_input_names) == sum(1 for p in target.model.parameters() if p.requires_grad)
    code, error, result = bench.run_guarded(
        lambda: check(program, program.example_inputs, "eager", against="eager"))
    assert code is None, f"check exits {code}: {error}"
    assert not result.diverges and all(o.vs_reference.exact for o in result.outputs)


#: The models whose eager run the oracle check flagged before issue 13's fixes (bench/results/
#: models-cpu-final.md): GPT-Neo's fp32 mask ``finfo.min + finfo.min`` (-inf; fp64 holds -6.8e38, fp32
#: cannot), RoBERTa's token-type embedding gradient (cancels to ~0 over the tokens).
_ONCE_NOISY = ("GPTNeoForCausalLM", "RobertaForQuestionAnswering")


@pytest.mark.parametrize("name", [pytest.param(n, marks=_needs(n), id=n) for n in _ONCE_NOISY])
def test_models_that_were_noisy_are_clean_under_eager_against_the_oracle(name: str) -> None:
    from roundoff.analyze import check

    code, error, program = _captured(_load_bench(), name)
    assert code is None, f"capture exits {code}: {error}"
    result = check(program, program.example_inputs, "eager", against="oracle", nodes="all")
    assert [n.node_id for n in result.nodes if n.verdict != "ok"] == [] and result.nan_origin is None
    assert not result.diverges
    if name.startswith("GPTNeo"):  # the mask overflowed fp32 where fp64 is finite: seen, not blamed
        assert any(n.overflow for n in result.nodes)
