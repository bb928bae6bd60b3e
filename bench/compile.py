"""Speed of roundoff.compile(policy="eager") against plain torch.compile, same run (issue 6).

A Llama-style block (zoo llama-block; ``--large``: d=4096, 32 heads, seq 2048, FFN 11008, batch 1,
sdpa attention, bf16) runs forward+backward. Variants, timed in interleaved rounds so clock drift
hits all alike: eager, plain ``torch.compile``, ``roundoff.compile`` under the eager and inductor-gpu
policies, and those with ``check="warn", sample_every=100``. Each round times 100 calls and starts
with the sampled one (an eager forward, a snapshot, the comparisons and, when an output is not
allclose to eager, an fp64 forward). Reports median ms per step and ratios: throughput of
roundoff.compile(eager) relative to plain compile (target >= 0.95) and checking overhead relative
to the same policy unchecked (target < 5%): asynchronous (the default for "warn" on a GPU) and
synchronous (``_sync``), with the default reference (``check_reference="auto"``: on this bf16 block
on CUDA, fp64 with split-bf16 matmuls) or the plain fp64 one run eagerly (``_eager_ref``) or
compiled (``_compiled_ref``);
``_fp64`` variants scale the eager output by 1 + 2**-6 so every sample needs the fp64 run (the cost
for a policy that is not bit-faithful to eager); the inductor-gpu variants need it naturally.

``--profile-sample`` instead times the pieces of one sampled check (eager forward, fp64 parameter
conversion, fp64 forward built anew / from the cached shadow / compiled, the comparisons) and lists
the fp64 forward's top kernels (torch.profiler), writing ``<stem>_sample_profile.{json,txt}``.

``--model llama`` runs issue 15's transformers Llama (hidden 1024, 4 layers, seq 512, SDPA, bf16,
``ids -> logits``) instead of the block; ``--variants a,b`` keeps only those variants (plus eager,
plain_compile and roundoff_eager, the baselines).

Usage: ``python bench/compile.py [--large | --model llama] [--variants ...] [--rounds 5] [--steps 100]
[--profile-sample] --out DIR``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import roundoff
from roundoff.compiler.checking import compare_outputs
from roundoff.compiler.reference import Fp64Reference, run_fp64, to_fp64
from roundoff.zoo import blocks, get_workload


class _Logits(torch.nn.Module):
    """A transformers causal LM as ``ids -> logits`` (what the step's backward is seeded from)."""

    def __init__(self, lm: torch.nn.Module) -> None:
        super().__init__()
        self.lm = lm

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.lm(input_ids=ids).logits


def build_llama(device: str) -> tuple[torch.nn.Module, torch.Tensor, dict[str, int]]:
    """Issue 15's transformers Llama: hidden 1024, 4 layers, seq 512, bf16, SDPA, random weights."""
    from transformers import LlamaConfig, LlamaForCausalLM

    size = {"hidden": 1024, "layers": 4, "heads": 16, "seq": 512, "batch": 1, "vocab": 32000}
    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=size["hidden"], intermediate_size=4 * size["hidden"], num_hidden_layers=size["layers"],
        num_attention_heads=size["heads"], num_key_value_heads=size["heads"] // 4, vocab_size=size["vocab"],
        attn_implementation="sdpa",
    )
    lm = LlamaForCausalLM(config).to(device=device, dtype=torch.bfloat16).train()
    ids = torch.randint(0, size["vocab"], (size["batch"], size["seq"]), generator=torch.Generator().manual_seed(1))
    return _Logits(lm), ids.to(device), size


def build(large: bool, device: str) -> tuple[torch.nn.Module, torch.Tensor, dict[str, int]]:
    """The block and its input; `large` patches the zoo's size constants while constructing."""
    if not large:
        work = get_workload("llama-block")
        x = work.make_inputs(device=device)[0]
        size = {
            "dim": blocks.DIM,
            "heads": blocks.HEADS,
            "seq": blocks.SEQ,
            "batch": blocks.BATCH,
            "ffn": blocks.FFN,
        }
        return work.build(device=device), x, size
    size = {"dim": 4096, "heads": 32, "seq": 2048, "batch": 1, "ffn": 11008}
    saved = (blocks.DIM, blocks.HEADS, blocks.SEQ)
    blocks.DIM, blocks.HEADS, blocks.SEQ = size["dim"], size["heads"], size["seq"]
    try:
        module = blocks._initialise(
            blocks.Block(blocks.SwiGLU(size["dim"], size["ffn"]), sdpa=True),
            0,
            device,
            torch.bfloat16,
        )
    finally:
        blocks.DIM, blocks.HEADS, blocks.SEQ = saved
    g = torch.Generator().manual_seed(1000)
    x = (
        torch.randn(size["batch"], size["seq"], size["dim"], generator=g)
        .to(torch.bfloat16)
        .to(device)
    )
    return module, x.requires_grad_(), size


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def step_fn(model: Callable, module: torch.nn.Module, x: torch.Tensor) -> Callable[[], None]:
    with torch.no_grad():
        like = module(x)  # the output's shape and dtype (x may be token ids)
    cot = torch.randn(like.shape, generator=torch.Generator().manual_seed(7)).to(like.dtype).to(x.device)

    def step() -> None:
        x.grad = None
        for p in module.parameters():
            p.grad = None
        model(x).backward(cot)

    return step


def time_steps(step: Callable[[], None], n: int, device: str) -> float:
    """Milliseconds per step over `n` steps."""
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    _sync(device)
    return (time.perf_counter() - t0) * 1e3 / n



def _write(args: argparse.Namespace, device: str, suffix: str, result: dict, text: str) -> None:
    """`result` as OUT/compile_{gpu,cpu}_{large,small}SUFFIX.json and `text` as .txt; `text` printed."""
    args.out.mkdir(parents=True, exist_ok=True)
    size = "_llama" if args.model == "llama" else ("_large" if args.large else "_small")
    stem = ("compile_gpu" if device == "cuda" else "compile_cpu") + size + suffix
    (args.out / f"{stem}.json").write_text(json.dumps(result, indent=2))
    (args.out / f"{stem}.txt").write_text(text)
    print(text, flush=True)

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--large", action="store_true", help="d=4096, seq 2048 (for the GPU)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=100, help="steps per round; a multiple of 100")
    ap.add_argument("--out", type=Path, default=Path("bench/results"))
    ap.add_argument("--profile-sample", action="store_true", help="time one check's pieces")
    ap.add_argument("--model", choices=("block", "llama"), default="block",
                    help="llama: a transformers Llama (hidden 1024, 4 layers, seq 512; issue 15)")
    ap.add_argument("--variants", default="", help="comma-separated variant names to run (default: all)")
    args = ap.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    module, x, size = build_llama(device) if args.model == "llama" else build(args.large, device)
    # Every variant compiles the same module's forward (and the compiled references a copy of it):
    # past Dynamo's default of 8 entries per code object, later variants would silently run eagerly.
    torch._dynamo.config.recompile_limit = 64
    if hasattr(torch._dynamo.config, "accumulated_recompile_limit"):
        torch._dynamo.config.accumulated_recompile_limit = 512
    if args.profile_sample:
        return profile_sample(args, device, size, module, x)
    variants = {
        "eager": module,
        "plain_compile": torch.compile(module),
        "roundoff_eager": roundoff.compile(module, policy="eager"),
        "roundoff_igpu": roundoff.compile(module, policy="inductor-gpu"),
    }
    checked = {  # name: (policy, check_reference, check_async, perturb eager's output)
        "roundoff_eager_check100": ("eager", "auto", None, False),
        "roundoff_eager_check100_sync": ("eager", "auto", False, False),
        "roundoff_eager_check100_eager_ref": ("eager", "eager", None, False),
        "roundoff_eager_check100_compiled_ref": ("eager", "compiled", None, False),
        "roundoff_eager_check100_fp64": ("eager", "auto", None, True),
        "roundoff_eager_check100_fp64_sync": ("eager", "auto", False, True),
        "roundoff_eager_check100_fp64_eager_ref": ("eager", "eager", None, True),
        "roundoff_eager_check100_fp64_compiled_ref": ("eager", "compiled", None, True),
        "roundoff_igpu_check100": ("inductor-gpu", "auto", None, False),
        "roundoff_igpu_check100_eager_ref": ("inductor-gpu", "eager", None, False),
        "roundoff_igpu_check100_compiled_ref": ("inductor-gpu", "compiled", None, False),
    }
    if args.variants:
        keep = set(args.variants.split(",")) | {"eager", "plain_compile", "roundoff_eager"}
        variants = {k: v for k, v in variants.items() if k in keep}
        checked = {k: v for k, v in checked.items() if k in keep}
    for name, (policy, ref, check_async, perturb) in checked.items():
        variants[name] = roundoff.compile(
            module, policy=policy, check="warn", sample_every=100, check_reference=ref,
            check_async=check_async,
        )
        if perturb:
            _perturb_eager(variants[name]._roundoff.checker)
    steps = {name: step_fn(m, module, x) for name, m in variants.items()}
    compile_s = {}
    for name, step in steps.items():
        t0 = time.perf_counter()
        for _ in range(3):
            step()
        if hasattr(variants[name], "flush_checks"):
            checker = variants[name]._roundoff.checker
            while checker.calls % 100:  # each round then starts with its sampled call
                step()
            variants[name].flush_checks()
        _sync(device)
        compile_s[name] = round(time.perf_counter() - t0, 1)
        print(f"warm-up {name}: {compile_s[name]} s", flush=True)
    times: dict[str, list[float]] = {name: [] for name in steps}
    pending_at_end = dict.fromkeys(steps, 0)  # rounds whose sample was still pending at the end
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for r in range(args.rounds):
            for name, step in steps.items():
                times[name].append(time_steps(step, args.steps, device))
                if hasattr(variants[name], "flush_checks"):
                    pending_at_end[name] += variants[name]._roundoff.checker._pending is not None
                    variants[name].flush_checks()
            print(
                f"round {r}: " + ", ".join(f"{k} {v[-1]:.3f} ms" for k, v in times.items()),
                flush=True,
            )
            _report(args, device, size, variants, times, compile_s, caught, pending_at_end)
    return 0


def _report(
    args: argparse.Namespace,
    device: str,
    size: dict,
    variants: dict,
    times: dict,
    compile_s: dict,
    caught: list,
    pending_at_end: dict[str, int],
) -> None:
    """Write JSON and text (called after every round, so a timeout keeps the rounds done)."""
    med = {k: statistics.median(v) for k, v in times.items()}
    checkers = {
        k: v._roundoff.checker for k, v in variants.items() if "_check" in k
    }
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "torch": torch.__version__,
        "command": " ".join(sys.argv),
        "size": size,
        "rounds": len(times["eager"]),
        "steps_per_round": args.steps,
        "ms_per_step_median": med,
        "ms_per_step_all": times,
        "warmup_s_incl_compile": compile_s,
        "throughput_ratio_roundoff_vs_plain": med["plain_compile"] / med["roundoff_eager"],
        "checking_overhead": {
            k: med[k] / med[k.split("_check")[0]] - 1 for k in checkers
        },
        "checked_calls": {k: len(c.history) for k, c in checkers.items()},
        "checks_failed": {
            k: sum(not o.passed for _, cs in c.history for o in cs) for k, c in checkers.items()
        },
        "fp64_run_calls": {
            k: sum(not math.isnan(o.rmse_compiled) for _, cs in c.history for o in cs)
            for k, c in checkers.items()
        },
        "first_sample_host_ms": {
            k: round(c.sample_seconds[0] * 1e3, 1) if c.sample_seconds else None
            for k, c in checkers.items()
        },
        "max_mismatch_fraction_vs_eager": {
            k: max((o.mismatch_fraction for _, cs in c.history for o in cs), default=None)
            for k, c in checkers.items()
        },
        "divergence_warnings": sum("diverges" in str(w.message) for w in caught),
        "rounds_ending_with_a_pending_sample": {k: pending_at_end[k] for k in checkers},
    }
    text = (
        f"{result['device']} torch {result['torch']} size {size}\n"
        + "".join(f"  {k:>24}: {v:.3f} ms/step\n" for k, v in med.items())
        + f"  roundoff.compile(eager) throughput / plain compile: "
        f"{result['throughput_ratio_roundoff_vs_plain']:.3f}\n"
        + "".join(
            f"  checking overhead at sample_every=100, {k} (vs {k.split('_check')[0]}): {v:+.2%} "
            f"({result['checked_calls'][k]} "
            f"checked calls, {result['fp64_run_calls'][k]} with the fp64 run, "
            f"{result['checks_failed'][k]} failed; first sample {result['first_sample_host_ms'][k]} "
            f"ms host; max fraction of output elements differing from eager "
            f"{result['max_mismatch_fraction_vs_eager'][k]})\n"
            for k, v in result["checking_overhead"].items()
        )
    )
    _write(args, device, "", result, text)


def _perturb_eager(checker: Any) -> None:
    """Scale the eager run's output by (1 + 2**-6) inside `checker`, so no output is allclose to
    it and every sample runs the fp64 reference and the full comparison: the cost of a sample for
    a policy that is not bit-faithful to eager (the verdicts then fail and warn; they are counted)."""
    eager_fn = checker.original

    def perturbed(*args: Any, **kwargs: Any) -> Any:
        return eager_fn(*args, **kwargs) * (1 + 2**-6)

    checker.original = perturbed


def _median_ms(fn: Callable[[], Any], device: str, n: int) -> float:
    """Median wall milliseconds of `fn` over `n` calls, synchronised around each."""
    times = []
    for _ in range(n):
        _sync(device)
        t0 = time.perf_counter()
        fn()
        _sync(device)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def profile_sample(
    args: argparse.Namespace, device: str, size: dict, module: torch.nn.Module, x: torch.Tensor
) -> int:
    """Time the pieces of one sampled check of the block (see the module docstring)."""
    n = 5
    xin = x.detach()
    cached, compiled = Fp64Reference(module, cache=True), Fp64Reference(module, compile=True)
    split = Fp64Reference(module, cache=False, split_matmul=True)
    ms: dict[str, float] = {}
    t0 = time.perf_counter()
    cached((xin,), {})
    _sync(device)
    ms["first_call_cached_shadow_build_and_run"] = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    try:
        compiled((xin,), {})
    except (RuntimeError, NotImplementedError, TypeError, ValueError, AssertionError) as err:
        print(f"compiled fp64 reference failed: {type(err).__name__}: {err}"[:2000], flush=True)
        compiled = cached
    _sync(device)
    ms["first_call_compiled_incl_compile"] = (time.perf_counter() - t0) * 1e3
    with torch.no_grad():
        eager = module(xin)
        ref64 = cached((xin,), {})
        pieces: dict[str, Callable[[], Any]] = {
            "eager_forward_no_grad": lambda: module(xin),
            "params_to_fp64": lambda: [to_fp64(p) for p in module.parameters()],
            "shadow_refresh_copy_": cached.refresh,
            "fp64_forward_built_anew (old run_fp64)": lambda: run_fp64(module, (xin,), {}),
            "fp64_forward_cached_shadow": lambda: cached((xin,), {}),
            "fp64_forward_compiled_shadow": lambda: compiled((xin,), {}),
            "fp64_forward_split_matmul": lambda: split((xin,), {}),
            "compare_outputs_given_fp64": lambda: compare_outputs(eager * 1.001, eager, ref64),
        }
        for name, fn in pieces.items():
            ms[name] = _median_ms(fn, device, n)
            print(f"{name}: {ms[name]:.2f} ms", flush=True)
        acts = [torch.profiler.ProfilerActivity.CPU]
        if device == "cuda":
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        tables = {}
        for name in (
            "fp64_forward_cached_shadow",
            "fp64_forward_compiled_shadow",
            "fp64_forward_split_matmul",
        ):
            with torch.profiler.profile(activities=acts) as prof:
                pieces[name]()
                _sync(device)
            key = "self_cuda_time_total" if device == "cuda" else "self_cpu_time_total"
            tables[name] = prof.key_averages().table(
                sort_by=key, row_limit=12, max_name_column_width=60
            )
    err = (compiled((xin,), {}) - ref64).abs().max().item()
    split_err = ((split((xin,), {}) - ref64).abs().max() / ref64.abs().max()).item()
    result = {
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "torch": torch.__version__,
        "command": " ".join(sys.argv),
        "size": size,
        "median_ms_of_5": ms,
        "compiled_vs_eager_fp64_max_abs_diff": err,
        "split_matmul_vs_eager_fp64_max_abs_diff_over_max_abs": split_err,
        "memory_params_bytes": sum(p.numel() * p.element_size() for p in module.parameters()),
    }
    text = (
        json.dumps(result, indent=2) + "\n" + "\n".join(f"== {k}\n{v}" for k, v in tables.items())
    )
    _write(args, device, "_sample_profile", result, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
