"""PyTorch's HuggingFace accuracy suite: `benchmarks/dynamo/huggingface_models_list.txt`, 55 models.

Each entry keeps PyTorch's name and is built as PyTorch's harness
(`benchmarks/dynamo/huggingface.py`) builds it: the transformers class (or the EXTRA_MODELS /
HF_LLM_MODELS class of the named checkpoint), from its config class, random weights, training mode,
``use_cache=False``, the model's own loss on the harness's inputs (labels for
*LM/*HeadModel/*ConditionalGeneration, start/end positions for *QuestionAnswering, a class label for
*SequenceClassification; ``decoder_input_ids = input_ids`` for T5/M2M100/MT5/Blenderbot; Bart-style
inputs end in EOS; RoBERTa's ids are ``randint(0, 1)``, i.e. 0). What differs, and why:

- size: `_REDUCED` (2 layers, encoder and decoder; hidden 64, 4 heads, FFN 128, vocab 512) plus the
  per-entry overrides of `SPECS`, after transformers' own ``*ModelTester`` tiny configs; batch 2,
  sequence 16 (the harness uses the checkpoint's sizes and sequences of 128-2048);
- dtype: bf16 (the harness runs fp32 and AMP);
- dropout: every float config field whose name contains ``drop`` is 0 *before* the model is built
  (the harness sets 1e-30 after building, which keeps the dropout ops and their RNG): roundoff's
  capture handles random ops, but a numerics check compares runs, and randomness would differ
  between them;
- checkpoints: a hub name (``meta-llama/Llama-3.2-1B``) becomes that checkpoint's architecture class
  built from its config class; nothing is downloaded.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from roundoff.corpus.registry import CorpusUnavailable, Entry, Family, model_loss

BATCH, SEQ = 2, 16
SOURCE = "pytorch/pytorch benchmarks/dynamo/huggingface_models_list.txt"

# Reduced sizes, applied to whichever of these fields the config class stores (its own names).
_REDUCED: Mapping[str, Any] = {
    **dict.fromkeys(("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers",
                     "decoder_layers", "num_decoder_layers"), 2),
    **dict.fromkeys(("hidden_size", "d_model", "n_embd", "dim"), 64),
    **dict.fromkeys(("intermediate_size", "ffn_dim", "encoder_ffn_dim", "decoder_ffn_dim", "d_ff",
                     "hidden_dim", "d_inner"), 128),
    **dict.fromkeys(("num_attention_heads", "n_head", "n_heads", "num_heads", "attention_heads",
                     "encoder_attention_heads", "decoder_attention_heads"), 4),
    "num_key_value_heads": 2, "head_dim": 16, "d_kv": 16, "d_head": 16,
    "vocab_size": 512, "max_position_embeddings": 64, "n_positions": 64, "use_cache": False,
}
_TOKEN_FIELDS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id",
                 "sep_token_id", "cls_token_id", "mask_token_id")


class Task:
    """How the harness makes inputs for a class, by its name's suffix."""

    LM = "lm"              # input_ids, labels (bs, seq)
    QA = "qa"              # input_ids, start_positions, end_positions (bs,)
    SEQ_CLS = "seq_cls"    # input_ids, labels (bs,) in [0, num_labels - 1)
    SEQ2SEQ = "seq2seq"    # input_ids, labels in [0, vocab - 1) (+ decoder_input_ids)
    SPEECH = "speech"      # input_features (bs, mel, 2 * max_source_positions), labels


@dataclass(frozen=True)
class Spec:
    """A list entry: PyTorch's name, the transformers class, config overrides over `_REDUCED`."""

    name: str
    model_class: str
    task: str
    config: Mapping[str, Any] = field(default_factory=dict)
    decoder_input_ids: bool = False
    note: str = ""
    broken: str = ""


_ENC_DEC = {"decoder_input_ids": True}
_LONGFORMER = {"attention_window": 4}
_MOBILEBERT = {"embedding_size": 32, "true_hidden_size": 32, "intra_bottleneck_size": 32}
_DECODER_LLM = {"tie_word_embeddings": True, "rope_theta": 500000.0}

SPECS: tuple[Spec, ...] = (
    Spec("AlbertForMaskedLM", "AlbertForMaskedLM", Task.LM, {"embedding_size": 32}),
    Spec("AlbertForQuestionAnswering", "AlbertForQuestionAnswering", Task.QA,
         {"embedding_size": 32}),
    Spec("AllenaiLongformerBase", "LongformerForMaskedLM", Task.LM, _LONGFORMER,
         note="allenai/longformer-base-4096's class (AutoModelForMaskedLM); attention window 4"),
    Spec("BartForCausalLM", "BartForCausalLM", Task.LM),
    Spec("BartForConditionalGeneration", "BartForConditionalGeneration", Task.SEQ2SEQ),
    Spec("BertForMaskedLM", "BertForMaskedLM", Task.LM),
    Spec("BertForQuestionAnswering", "BertForQuestionAnswering", Task.QA),
    Spec("BlenderbotForCausalLM", "BlenderbotForCausalLM", Task.LM),
    Spec("BlenderbotForConditionalGeneration", "BlenderbotForConditionalGeneration", Task.SEQ2SEQ,
         **_ENC_DEC),
    Spec("BlenderbotSmallForCausalLM", "BlenderbotSmallForCausalLM", Task.LM),
    Spec("BlenderbotSmallForConditionalGeneration", "BlenderbotSmallForConditionalGeneration",
         Task.SEQ2SEQ),
    Spec("CamemBert", "CamembertForMaskedLM", Task.LM,
         note="the harness names no head for CamemBert; the masked-LM head gives it a loss"),
    Spec("DebertaV2ForMaskedLM", "DebertaV2ForMaskedLM", Task.LM),
    Spec("DebertaV2ForQuestionAnswering", "DebertaV2ForQuestionAnswering", Task.QA),
    Spec("DistilBertForMaskedLM", "DistilBertForMaskedLM", Task.LM),
    Spec("DistilBertForQuestionAnswering", "DistilBertForQuestionAnswering", Task.QA),
    Spec("DistillGPT2", "GPT2LMHeadModel", Task.LM,
         note="distilgpt2's class (AutoModelForCausalLM)"),
    Spec("ElectraForCausalLM", "ElectraForCausalLM", Task.LM, {"embedding_size": 32}),
    Spec("ElectraForQuestionAnswering", "ElectraForQuestionAnswering", Task.QA,
         {"embedding_size": 32}),
    Spec("GPT2ForSequenceClassification", "GPT2ForSequenceClassification", Task.SEQ_CLS,
         {"pad_token_id": 0}),
    Spec("GPTJForCausalLM", "GPTJForCausalLM", Task.LM, {"rotary_dim": 8}),
    Spec("GPTJForQuestionAnswering", "GPTJForQuestionAnswering", Task.QA, {"rotary_dim": 8}),
    Spec("GPTNeoForCausalLM", "GPTNeoForCausalLM", Task.LM,
         {"attention_types": [[["global", "local"], 1]], "window_size": 8}),
    Spec("GPTNeoForSequenceClassification", "GPTNeoForSequenceClassification", Task.SEQ_CLS,
         {"attention_types": [[["global", "local"], 1]], "window_size": 8, "pad_token_id": 0}),
    Spec("GoogleFnet", "FNetForMaskedLM", Task.LM,
         note="google/fnet-base's class (AutoModelForMaskedLM)",
         broken="FNet mixes tokens with torch.fft.fftn, which has no bf16 CPU kernel ('Unsupported "
                "dtype BFloat16'); its TPU option (DFT matmuls in complex64) returns fp32 into a "
                "bf16 LayerNorm ('mixed dtype (CPU)'): FNet trains in fp32 or AMP only"),
    Spec("LayoutLMForMaskedLM", "LayoutLMForMaskedLM", Task.LM),
    Spec("LayoutLMForSequenceClassification", "LayoutLMForSequenceClassification", Task.SEQ_CLS),
    Spec("M2M100ForConditionalGeneration", "M2M100ForConditionalGeneration", Task.SEQ2SEQ,
         **_ENC_DEC),
    Spec("MBartForCausalLM", "MBartForCausalLM", Task.LM),
    Spec("MBartForConditionalGeneration", "MBartForConditionalGeneration", Task.SEQ2SEQ),
    Spec("MT5ForConditionalGeneration", "MT5ForConditionalGeneration", Task.SEQ2SEQ, **_ENC_DEC),
    Spec("MegatronBertForCausalLM", "MegatronBertForCausalLM", Task.LM),
    Spec("MegatronBertForQuestionAnswering", "MegatronBertForQuestionAnswering", Task.QA),
    Spec("MobileBertForMaskedLM", "MobileBertForMaskedLM", Task.LM, _MOBILEBERT),
    Spec("MobileBertForQuestionAnswering", "MobileBertForQuestionAnswering", Task.QA, _MOBILEBERT),
    Spec("OPTForCausalLM", "OPTForCausalLM", Task.LM, {"word_embed_proj_dim": 64}),
    Spec("PLBartForCausalLM", "PLBartForCausalLM", Task.LM),
    Spec("PLBartForConditionalGeneration", "PLBartForConditionalGeneration", Task.SEQ2SEQ),
    Spec("PegasusForCausalLM", "PegasusForCausalLM", Task.LM),
    Spec("PegasusForConditionalGeneration", "PegasusForConditionalGeneration", Task.SEQ2SEQ),
    Spec("RobertaForCausalLM", "RobertaForCausalLM", Task.LM, {"pad_token_id": 0}),
    Spec("RobertaForQuestionAnswering", "RobertaForQuestionAnswering", Task.QA,
         {"pad_token_id": 0}),
    Spec("T5ForConditionalGeneration", "T5ForConditionalGeneration", Task.SEQ2SEQ, **_ENC_DEC),
    Spec("T5Small", "T5ForConditionalGeneration", Task.SEQ2SEQ, {"feed_forward_proj": "relu"},
         **_ENC_DEC, note="t5-small's class (AutoModelForSeq2SeqLM); at this size the same as T5"),
    Spec("TrOCRForCausalLM", "TrOCRForCausalLM", Task.LM,
         note="the text decoder, as the harness runs it (token ids, no pixel values)"),
    Spec("XGLMForCausalLM", "XGLMForCausalLM", Task.LM),
    Spec("XLNetLMHeadModel", "XLNetLMHeadModel", Task.LM),
    Spec("YituTechConvBert", "ConvBertForMaskedLM", Task.LM, {"embedding_size": 64},
         note="YituTech/conv-bert-base's class (AutoModelForMaskedLM)"),
    Spec("meta-llama/Llama-3.2-1B", "LlamaForCausalLM", Task.LM, _DECODER_LLM),
    Spec("google/gemma-2-2b", "Gemma2ForCausalLM", Task.LM, {"sliding_window": 8}),
    Spec("google/gemma-3-4b-it", "Gemma3ForCausalLM", Task.LM, {"sliding_window": 8},
         note="the text tower (Gemma3ForCausalLM); the checkpoint's image tower is left out"),
    Spec("openai/whisper-tiny", "WhisperForConditionalGeneration", Task.SPEECH,
         {"num_mel_bins": 16, "max_source_positions": 16, "max_target_positions": 64}),
    Spec("Qwen/Qwen3-0.6B", "Qwen3ForCausalLM", Task.LM, {"tie_word_embeddings": True}),
    Spec("mistralai/Mistral-7B-Instruct-v0.3", "MistralForCausalLM", Task.LM,
         {"sliding_window": 8}),
    Spec("openai/gpt-oss-20b", "GptOssForCausalLM", Task.LM,
         {"num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 8}),
)


def _model_class(name: str) -> type:
    try:
        transformers = importlib.import_module("transformers")
    except ImportError as exc:
        raise CorpusUnavailable(
            "transformers is not installed: pip install 'roundoff[models]'"
        ) from exc
    cls = getattr(transformers, name, None)
    if cls is None:
        raise CorpusUnavailable(
            f"transformers {transformers.__version__} has no {name}; install transformers>=4.55"
        )
    return cls


def reduced_config(spec: Spec) -> Any:
    """The class's config at corpus size: `_REDUCED` on the fields it stores, then `spec.config`,
    every ``*drop*`` probability 0, every special token id inside the vocabulary (all as constructor
    arguments, so that the config validates what the model is built from)."""
    config_class = _model_class(spec.model_class).config_class
    stored = config_class().to_dict()
    kwargs = {k: v for k, v in _REDUCED.items() if k in stored}
    kwargs.update(spec.config)
    vocab = kwargs.get("vocab_size", stored.get("vocab_size"))
    for i, key in enumerate(_TOKEN_FIELDS):
        value = stored.get(key)
        if isinstance(value, int) and value >= vocab and key not in kwargs:
            kwargs[key] = i
    kwargs.update({k: 0.0 for k, v in stored.items() if "drop" in k and isinstance(v, float)})
    return config_class(**kwargs)


def build_model(spec: Spec, seed: int) -> torch.nn.Module:
    """The model with random weights from `seed`, in bf16."""
    config = reduced_config(spec)
    torch.manual_seed(seed)
    return _model_class(spec.model_class)(config).to(torch.bfloat16)


def make_inputs(spec: Spec, model: torch.nn.Module, seed: int) -> dict[str, torch.Tensor]:
    """The harness's inputs for `spec` at batch `BATCH`, sequence `SEQ`, from `seed`."""
    g = torch.Generator().manual_seed(seed)
    config = model.config
    vocab = config.vocab_size

    def ints(high: int, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.randint(0, max(high, 1), shape, generator=g, dtype=torch.int64)

    if spec.task == Task.SPEECH:
        frames = 2 * config.max_source_positions
        feats = torch.randn(BATCH, config.num_mel_bins, frames, generator=g).to(torch.bfloat16)
        return {"input_features": feats, "labels": ints(vocab, (BATCH, SEQ))}
    ids = ints(1 if spec.name.startswith("Roberta") else vocab, (BATCH, SEQ))
    if "Bart" in spec.name:
        ids[:, -1] = config.eos_token_id
    named = {"input_ids": ids}
    if spec.decoder_input_ids:
        named["decoder_input_ids"] = ids
    if spec.task == Task.QA:
        named["start_positions"] = ints(SEQ, (BATCH,))
        named["end_positions"] = ints(SEQ, (BATCH,))
    elif spec.task == Task.SEQ_CLS:
        named["labels"] = ints(config.num_labels - 1, (BATCH,))
    elif spec.task == Task.SEQ2SEQ:
        named["labels"] = ints(vocab - 1, (BATCH, SEQ))
    else:
        named["labels"] = ints(vocab, (BATCH, SEQ))
    return named


def _ids_inputs(spec: Spec) -> tuple[str, ...]:
    if spec.task in (Task.LM, Task.SEQ2SEQ):
        return ("labels", "decoder_input_ids") if spec.decoder_input_ids else ("labels",)
    return ()


def entry(spec: Spec) -> Entry:
    return Entry(
        name=spec.name, family=Family.HUGGINGFACE, source=SOURCE,
        build_model=functools.partial(build_model, spec),
        make_inputs=functools.partial(make_inputs, spec),
        loss=model_loss, ids_inputs=_ids_inputs(spec),
        note=spec.note or spec.model_class, broken=spec.broken,
    )


ENTRIES: tuple[Entry, ...] = tuple(entry(s) for s in SPECS)
