"""Speed of roundoff.compile(policy="eager") against plain torch.compile, same run (issue 6).

A Llama-style block (zoo llama-block; ``--large``: d=4096, 32 heads, seq 2048, FFN 11008, batch 1,
sdpa attention, bf16) runs forward+backward. Variants, timed in interleaved rounds so clock drift
hits all alike: eager, plain ``torch.compile``, ``roundoff.compile(policy="eager")`` and the same with
``check="warn", sample_every=100`` (each round times a multiple of 100 calls, so exactly one call in
100 is checked: an eager forward plus an fp64 forward beside it). Reports median ms per step and
ratios: throughput of roundoff.compile relative to plain compile (target >= 0.95) and checking
overhead relative to roundoff.compile without checking (target < 5%).

Usage: ``python bench/compile.py [--large] [--rounds 5] [--steps 100] --out DIR``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import roundoff
from roundoff.zoo import blocks, get_workload


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
    cot = torch.randn(x.shape, generator=torch.Generator().manual_seed(7)).to(x.dtype).to(x.device)

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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--large", action="store_true", help="d=4096, seq 2048 (for the GPU)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=100, help="steps per round; a multiple of 100")
    ap.add_argument("--out", type=Path, default=Path("bench/results"))
    args = ap.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    module, x, size = build(args.large, device)
    variants = {
        "eager": module,
        "plain_compile": torch.compile(module),
        "roundoff_eager": roundoff.compile(module, policy="eager"),
        "roundoff_eager_check100": roundoff.compile(
            module, policy="eager", check="warn", sample_every=100
        ),
    }
    steps = {name: step_fn(m, module, x) for name, m in variants.items()}
    compile_s = {}
    for name, step in steps.items():
        t0 = time.perf_counter()
        for _ in range(3):
            step()
        _sync(device)
        compile_s[name] = round(time.perf_counter() - t0, 1)
        print(f"warm-up {name}: {compile_s[name]} s", flush=True)
    times: dict[str, list[float]] = {name: [] for name in steps}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for r in range(args.rounds):
            for name, step in steps.items():
                times[name].append(time_steps(step, args.steps, device))
            print(
                f"round {r}: " + ", ".join(f"{k} {v[-1]:.3f} ms" for k, v in times.items()),
                flush=True,
            )
            _report(args, device, size, variants, times, compile_s, caught)
    return 0


def _report(
    args: argparse.Namespace,
    device: str,
    size: dict,
    variants: dict,
    times: dict,
    compile_s: dict,
    caught: list,
) -> None:
    """Write JSON and text (called after every round, so a timeout keeps the rounds done)."""
    med = {k: statistics.median(v) for k, v in times.items()}
    checker = variants["roundoff_eager_check100"]._roundoff.checker
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
        "checking_overhead": med["roundoff_eager_check100"] / med["roundoff_eager"] - 1,
        "checked_calls": len(checker.history),
        "checks_failed": sum(not c.passed for _, cs in checker.history for c in cs),
        "divergence_warnings": sum("diverges" in str(w.message) for w in caught),
    }
    text = (
        f"{result['device']} torch {result['torch']} size {size}\n"
        + "".join(f"  {k:>24}: {v:.3f} ms/step\n" for k, v in med.items())
        + f"  roundoff.compile(eager) throughput / plain compile: "
        f"{result['throughput_ratio_roundoff_vs_plain']:.3f}\n"
        + f"  checking overhead at sample_every=100: {result['checking_overhead']:+.2%} "
        f"({result['checked_calls']} checked calls, {result['checks_failed']} failed)\n"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    stem = ("compile_gpu" if device == "cuda" else "compile_cpu") + (
        "_large" if args.large else "_small"
    )
    (args.out / f"{stem}.json").write_text(json.dumps(result, indent=2))
    (args.out / f"{stem}.txt").write_text(text)
    print(text, flush=True)


if __name__ == "__main__":
    sys.exit(main())
