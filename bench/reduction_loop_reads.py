"""Which stored fp16 values a reduction reads unrounded under real torch.compile, against the plan.

Each pattern stores an fp16 ``exp`` (a matmul or the graph output reads it) that overflows fp16 for
inputs near 11.5, and reduces it in fp32: a reduction that reads the stored (rounded) value sees inf, one
that computes it in its own loop (`roundoff.plan.loops`) a finite value. The table compares real
torch.compile with the plan's emulation (``inductor-cpu`` on CPU, ``inductor-gpu`` on CUDA) per
pattern; finiteness is the oracle (summation order does not change it).

    python bench/reduction_loop_reads.py [--device cuda] [--out bench/results/reduction-loop-reads-cpu]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
from collections.abc import Callable

import torch

from roundoff.capture import capture
from roundoff.execute import run_plan
from roundoff.plan import plan

F32 = torch.float32


def patterns(device: str) -> dict[str, tuple[str, Callable[[torch.Tensor], tuple[torch.Tensor, ...]]]]:
    half: dict = {"dtype": torch.float16, "device": device}
    g = torch.Generator().manual_seed(0)
    w = torch.randn(32, 8, generator=g).to(**half)
    x1 = (torch.rand(512, generator=g) + 11.5).to(**half)
    x3 = (torch.rand(4, 16, 32, generator=g) + 11.5).to(**half)
    c, r = torch.full((16, 1), 0.25, **half), torch.full((1, 32), 0.25, **half)
    colv, v, y = torch.full((32,), 1.01, **half), torch.ones(32, **half), torch.full((32, 16), 0.25, **half)
    w2 = (torch.randn(32, 32, generator=g) * 0.01).to(**half)
    c3, w3, m3 = torch.full((4, 16, 1), 0.25, **half), torch.full((4, 1, 32), 1.01, **half), torch.full((1, 16, 32), 0.25, **half)
    return {
        "flat exp, rows summed": ("exp(x) @ w; sum(1)", lambda x: ((e := torch.exp(x)) @ w, e.sum(1, dtype=F32))),
        "flat exp, columns summed": ("exp(x) @ w; sum(0)", lambda x: ((e := torch.exp(x)) @ w, e.sum(0, dtype=F32))),
        "flat exp, mv": ("exp(x) @ w; exp(x) @ v", lambda x: ((e := torch.exp(x)) @ w, (e @ v).float())),
        "flat exp, all summed": ("exp(x) @ w; sum()", lambda x: ((e := torch.exp(x)) @ w, e.sum(dtype=F32))),
        "flat exp output, rows summed": ("exp(x); sum(1)", lambda x: ((e := torch.exp(x)), e.sum(1, dtype=F32))),
        "1-D exp output, summed": ("exp(x1); sum()", lambda x: ((e := torch.exp(x1)), e.sum(dtype=F32))),
        "row-reduction operand": ("exp(x - 0.001 x.sum(1)) @ w; sum(1)",
                                  lambda x: ((e := torch.exp(x - x.sum(1, keepdim=True) * 0.001)) @ w, e.sum(1, dtype=F32))),
        "column operand, rows summed": ("exp(x - c[16,1]) @ w; sum(1)", lambda x: ((e := torch.exp(x - c)) @ w, e.sum(1, dtype=F32))),
        "column operand, mean": ("exp(x - c) @ w; float().mean(1)", lambda x: ((e := torch.exp(x - c)) @ w, e.float().mean(1))),
        "column operand, amax": ("exp(x - c) @ w; float().amax(1)", lambda x: ((e := torch.exp(x - c)) @ w, e.float().amax(1))),
        "column operand, output": ("exp(x - c); sum(1)", lambda x: ((e := torch.exp(x - c)), e.sum(1, dtype=F32))),
        "column operand, two reductions": ("exp(x - c) @ w; sum(1), amax(1)",
                                           lambda x: ((e := torch.exp(x - c)) @ w, torch.cat([e.sum(1, dtype=F32), e.float().amax(1)]))),
        "column operand, product summed": ("exp(x - c) @ w; (2 e).sum(1)", lambda x: ((e := torch.exp(x - c)) @ w, (e * 2).sum(1, dtype=F32))),
        "column operand, columns summed": ("exp(x - c) @ w; sum(0)", lambda x: ((e := torch.exp(x - c)) @ w, e.sum(0, dtype=F32))),
        "column operand, all summed": ("exp(x - c) @ w; sum()", lambda x: ((e := torch.exp(x - c)) @ w, e.sum(dtype=F32))),
        "column operand, read through a slice": ("exp(x - c) @ w; (e * e[:, :1]).sum(1)",
                                                 lambda x: ((e := torch.exp(x - c)) @ w, (e * e[:, :1]).sum(1, dtype=F32))),
        "column operand, read through a view": ("exp(x - c) @ w; view(16, 2, 16).sum(-1)",
                                                lambda x: ((e := torch.exp(x - c)) @ w, e.view(16, 2, 16).sum(-1, dtype=F32))),
        "row operand, rows summed": ("exp(x * colv[32]) @ w; sum(1)", lambda x: ((e := torch.exp(x * colv)) @ w, e.sum(1, dtype=F32))),
        "row operand, columns summed": ("exp(x - r[1,32]) @ w; sum(0)", lambda x: ((e := torch.exp(x - r)) @ w, e.sum(0, dtype=F32))),
        "transposed operand": ("exp(x + y.T) @ w; sum(1)", lambda x: ((e := torch.exp(x + y.T)) @ w, e.sum(1, dtype=F32))),
        "3-D, [4,16,1] operand, last dim": ("exp(x3 - c3) @ w; sum(-1)", lambda x: ((e := torch.exp(x3 - c3)) @ w, e.sum(-1, dtype=F32))),
        "3-D, [4,1,32] operand, last dim": ("exp(x3 * w3) @ w; sum(-1)", lambda x: ((e := torch.exp(x3 * w3)) @ w, e.sum(-1, dtype=F32))),
        "3-D, [1,16,32] operand, last dim": ("exp(x3 - m3) @ w; sum(-1)", lambda x: ((e := torch.exp(x3 - m3)) @ w, e.sum(-1, dtype=F32))),
        "viewed for a matmul, added to its result": ("y = x - c; exp(y.view(16, 32) @ w2 + y) @ w; sum(1)",
                                                     lambda x: ((e := torch.exp((y := x - c).view(16, 32) @ w2 + y)) @ w,
                                                                e.sum(1, dtype=F32))),
        "3-D, [1,16,32] operand, last two dims": ("exp(x3 - m3) @ w; sum((1, 2))",
                                                  lambda x: ((e := torch.exp(x3 - m3)) @ w, e.sum((1, 2), dtype=F32))),
    }


def _read(t: torch.Tensor) -> str:
    return "unrounded" if bool(torch.isfinite(t).all()) else "rounded"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default=None, help="write OUT.md and OUT.json")
    args = ap.parse_args()
    policy = "inductor-gpu" if args.device == "cuda" else "inductor-cpu"
    x = (torch.rand(16, 32, generator=torch.Generator().manual_seed(1)) + 11.5).to(torch.float16).to(args.device)
    rows = []
    for name, (code, fn) in patterns(args.device).items():
        torch._dynamo.reset()
        real = torch.compile(fn, dynamic=False)(x)[1]
        emulated = run_plan(plan(capture(fn, x), policy), (x,))[1]
        rows.append({"pattern": name, "code": code, "real": _read(real), "plan": _read(emulated)})
        print(f"{name:40s} real {rows[-1]['real']:9s} plan {rows[-1]['plan']:9s}", flush=True)
    agree = sum(r["real"] == r["plan"] for r in rows)
    print(f"{agree} of {len(rows)} patterns: the plan reads as real torch.compile does ({policy}, {args.device})")
    if args.out:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False).stdout.strip()
        head = (f"# Reduction reads of a stored fp16 value: real torch.compile vs the {policy} plan ({args.device})\n\n"
                f"Command: `python bench/reduction_loop_reads.py --device {args.device} --out {args.out}` "
                f"(torch {torch.__version__}, {platform.machine()}, commit {commit})\n\n"
                f"{agree} of {len(rows)} patterns agree. x: fp16 [16, 32] near 11.5 (exp overflows fp16); "
                "'unrounded': the reduction computes the exp in its own loop (finite), 'rounded': it loads the "
                "stored fp16 value (inf).\n\n| pattern | code | real | plan |\n| --- | --- | --- | --- |\n")
        body = "".join(f"| {r['pattern']} | `{r['code']}` | {r['real']} | {r['plan']} |\n" for r in rows)
        with open(f"{args.out}.md", "w") as f:
            f.write(head + body)
        with open(f"{args.out}.json", "w") as f:
            json.dump({"device": args.device, "policy": policy, "torch": torch.__version__, "commit": commit,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
