"""The lowered plan executed three ways against the interpreted emulator and one eager step (CPU).

Workload: the zoo's Llama-style block, forward+backward, bf16 (`--sizes D:SEQ:BATCH`, as
bench/check.py builds them), under `--policy` (default inductor-gpu: fused kernels and FMA sites).
Items, timed in one process, interleaved, median of `--repeat` after a warm-up:

- eager: the real module, ``block(x)`` then ``out.backward(ones)``, one step (the unit);
- emulator: ``run_plan(plan, inputs)``: the interpreted emulator (FX Interpreter, Python per node);
- lowered: ``lower(plan)(*inputs)``: the lowered graph's own Python code, no interpreter;
- compiled-opaque: ``compile_lowered(gm, xs, primitives="opaque")``: Inductor, CPU, round_to/fma
  as extern custom-op calls;
- compiled-expanded: ``compile_lowered(gm, xs)``: round_to/fma expanded into numerics' integer /
  exact-fp64 aten ops, fused by Inductor.

Also: lowering time (make_fx of the emulator), each compiled graph's first call in this process, and,
in fresh subprocesses with an EMPTY Inductor cache each, the cold first call of the compiled lowered
graph (lowering + compile + run) next to the cold first call of ``torch.compile(block)`` forward+backward
(the issue's cold-start yardstick). Bits: each run's outputs against the interpreted emulator's
(per output: count of differing elements, max relative difference over finite elements).

`--equivalence` instead compiles the lowered plan of each pointwise zoo workload under every preset
and counts elements that differ from the interpreted lowered graph and from ``run_plan`` with
Inductor's transcendental kernels (``transcendentals="inductor"``).

    python bench/lowered.py [--sizes 64:16:2 256:128:4] [--policy inductor-gpu] [--repeat 5] [--threads 1]
    python bench/lowered.py --equivalence
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check import _block  # noqa: E402  (bench/check.py's model builder: same blocks, same weights)
from roundoff.numerics import bits_differ  # noqa: E402


def _differ(a: torch.Tensor, b: torch.Tensor) -> tuple[int, float]:
    bad = bits_differ(a, b)
    fin = torch.isfinite(a.double()) & torch.isfinite(b.double())
    rel = ((a.double() - b.double()).abs() / b.double().abs().clamp_min(1e-30))[fin]
    return bad, float(rel.max()) if rel.numel() else 0.0


def _setup(size: str, policy: str) -> tuple[dict[str, Callable[[], Any]], dict[str, Any]]:
    from roundoff.capture import capture
    from roundoff.execute import run_plan
    from roundoff.lower import compile_lowered, lower
    from roundoff.plan import plan

    d, seq, batch = (int(v) for v in size.split(":"))
    block = _block(d, seq, "cpu")
    x = torch.randn(batch, seq, d, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)
    program = capture(block, x.requires_grad_(), backward=True, name=f"llama-{size}")
    xs = tuple(t.detach() for t in program.example_inputs)
    p = plan(program, policy)
    t0 = time.perf_counter()
    gm = lower(p)
    info: dict[str, Any] = {"lower_s": time.perf_counter() - t0, "nodes": len(program.graph.nodes),
                            "lowered_nodes": len(gm.graph.nodes)}
    want = run_plan(p, xs)
    info["lowered_vs_emulator"] = [_differ(g, w) for g, w in zip(gm(*xs), want)]
    compiled = {}
    for mode in ("opaque", "expanded"):
        t0 = time.perf_counter()
        compiled[mode] = compile_lowered(gm, xs, primitives=mode)
        got = compiled[mode](*xs)
        info[f"compiled_{mode}_first_call_s"] = time.perf_counter() - t0
        info[f"compiled_{mode}_vs_emulator"] = [_differ(g, w) for g, w in zip(got, want)]
    xe = x.detach().clone().requires_grad_()

    def eager() -> None:
        out = block(xe)
        out.backward(torch.ones_like(out))

    return {"eager": eager, "emulator": lambda: run_plan(p, xs), "lowered": lambda: gm(*xs),
            "compiled-opaque": lambda: compiled["opaque"](*xs),
            "compiled-expanded": lambda: compiled["expanded"](*xs)}, info


def _time(items: dict[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    for fn in items.values():
        fn()  # warm-up
    samples: dict[str, list[float]] = {k: [] for k in items}
    for _ in range(repeat):  # interleaved: machine noise hits every item alike
        for k, fn in items.items():
            t0 = time.perf_counter()
            fn()
            samples[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in samples.items()}


_LOWERED = (
    "from roundoff.capture import capture; from roundoff.lower import compile_lowered, lower\n"
    "from roundoff.plan import plan\n"
    "t0 = time.perf_counter(); program = capture(block, x.requires_grad_(), backward=True)\n"
    "xs = tuple(t.detach() for t in program.example_inputs)\n"
    "gm = lower(plan(program, POLICY)); compile_lowered(gm, xs, primitives=MODE)(*xs)\n"
)
_COLD = {
    "compiled-opaque (capture+plan+lower+compile+run)": "MODE = 'opaque'\n" + _LOWERED,
    "compiled-expanded (capture+plan+lower+compile+run)": "MODE = 'expanded'\n" + _LOWERED,
    "torch.compile(block)": (
        "c = torch.compile(block); t0 = time.perf_counter(); out = c(x.requires_grad_()); out.backward(torch.ones_like(out))\n"
    ),
}


def _cold(size: str, policy: str, threads: int) -> dict[str, float]:
    """First call with an empty Inductor cache, each in a fresh process."""
    d, seq, batch = (int(v) for v in size.split(":"))
    out = {}
    for name, body in _COLD.items():
        code = (
            f"import sys, time, torch; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n"
            f"torch.set_num_threads({threads}); from check import _block; POLICY = {policy!r}\n"
            f"block = _block({d}, {seq}, 'cpu')\n"
            f"x = torch.randn({batch}, {seq}, {d}, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)\n"
            + body + "print(time.perf_counter() - t0)\n"
        )
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache)
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
        if proc.returncode:
            raise SystemExit(f"cold {name} failed:\n{proc.stderr[-3000:]}")
        out[name] = float(proc.stdout.strip().splitlines()[-1])
    return out


def _equivalence() -> list[dict[str, Any]]:
    from roundoff.capture import capture
    from roundoff.execute import run_plan
    from roundoff.lower import lower
    from roundoff.plan import plan
    from roundoff.policy import PRESETS
    from roundoff.zoo import get_workload

    rows = []
    for name in ("fma-cancel", "fma-cancel-vector", "softmax-backward", "bf16-chain"):
        w = get_workload(name)
        program = capture(w.build(), *w.make_inputs(), backward=w.backward)
        xs = tuple(t.detach() for t in program.example_inputs)
        for policy in sorted(PRESETS):
            p = plan(program, policy)
            gm = lower(p)
            got = torch.compile(gm)(*xs)
            interp = gm(*xs)
            ind = run_plan(p, xs, transcendentals="inductor")
            rows.append({"workload": name, "policy": policy, "elements": sum(t.numel() for t in interp),
                         "vs_interpreted": sum(_differ(a, b)[0] for a, b in zip(got, interp)),
                         "vs_emulator_inductor_transcendentals": sum(_differ(a, b)[0] for a, b in zip(got, ind))})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", default=["64:16:2", "256:128:4"])
    ap.add_argument("--policy", default="inductor-gpu")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-cold", action="store_true", help="skip the cold-start subprocesses")
    ap.add_argument("--equivalence", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.equivalence:
        _equivalence()
        return
    for size in args.sizes:
        items, info = _setup(size, args.policy)
        t = _time(items, args.repeat)
        row = {"size": size, "policy": args.policy, "threads": args.threads, **info,
               "seconds": t, "x_eager": {k: v / t["eager"] for k, v in t.items()}}
        if not args.no_cold:
            row["cold_first_call_s"] = _cold(size, args.policy, args.threads)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
