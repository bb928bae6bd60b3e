"""How long `blame` takes, and what it finds: the nanoGPT hand-written-softmax case and the planted defects.

Issue 15's target: `blame` on the nanoGPT hand-written-softmax case at <= 1/4 of the time of the
branch base, with the same 1-minimal fix. The case is the corpus's nanoGPT (`nanogpt-manual`:
2 layers, d=64, hand-written softmax, bf16, forward+backward, module form) with 2 heads instead of 4.
With the corpus's 4 heads the head dimension is 16 and the score scale 1/sqrt(16) = 0.25 is a power
of two, so the scaled scores are exact in bf16, kept-fp32 and rounded values agree, and there is
nothing to blame (blame says "already within tolerance" after 1 evaluation; `--cases` lists it as
`nanogpt-manual`). With 2 heads the scale is 1/sqrt(32): under `inductor-gpu` the gradients are NaN
(amax's backward compares the kept-fp32 scores with their bf16-rounded max and divides by a zero
count) where eager's are finite, the case the issue measured.

Per case: status, candidates, evaluations, wall time of `blame(...)` (capture excluded, one call,
repro=False) and the change set. Runs against whatever roundoff is on PYTHONPATH; with
``--baseline REV`` it also runs itself in a subprocess on ``git archive REV src`` and prints both
side by side (the same machine, the same run)::

    PYTHONPATH=$PWD/src python bench/blame.py --baseline e149126 [--planted] [--cases a,b]
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NANOGPT = ("nanogpt-manual-2h", "nanogpt-manual")
ONLINE_SOFTMAX = "online-softmax-fp16"  # trial 65: tests/blame/test_blame.py's fp16 online softmax, backward


def _online_softmax():
    """(program, policy, against, options) of trial 65's FlashAttention-style fp16 softmax, forward+backward,
    with ``placeable=True`` as its test: a training step whose plan under `inductor-cpu` splits per-kernel
    copies over several rounds, planned again for each of ~45 candidate sets."""
    from roundoff.capture import capture

    spec = importlib.util.spec_from_file_location("blame_tests", ROOT / "tests" / "blame" / "test_blame.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    g = torch.Generator().manual_seed(0)
    q, k = ((torch.randn(64, 32, generator=g) * 0.2).half() for _ in range(2))
    v = ((torch.randn(64, 32, generator=g) * 300 + 2000) / 1000).half()
    program = capture(lambda q, k, v: mod._online_attention(q, k, v).float().sum(), q.requires_grad_(), k, v,
                      backward=True)
    return program, "inductor-cpu", "eager", {"placeable": True}


def _planted() -> dict:
    spec = importlib.util.spec_from_file_location("planted", ROOT / "tests" / "analyze" / "planted.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["planted"] = mod
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return {f"planted:{p.name}": p for p in mod.PLANTED}


def _nanogpt(name: str):
    """(program, policy, against, options) of a nanoGPT case (see the module docstring)."""
    from roundoff import corpus
    from roundoff.capture import capture
    from roundoff.corpus import handwritten

    entry = corpus.get("nanogpt-manual")
    if name == "nanogpt-manual-2h":
        build = functools.partial(handwritten._build, handwritten.GPT, flash=False, n_head=2)
        entry = dataclasses.replace(entry, name=name, build_model=build)
    target = entry.build("module")
    return capture(target.fn, *target.inputs, backward=True), "inductor-gpu", "eager", {}


def _case(name: str, planted: dict):
    from roundoff.capture import capture

    if name in NANOGPT:
        return _nanogpt(name)
    if name == ONLINE_SOFTMAX:
        return _online_softmax()
    p = planted[name]
    return capture(p.fn, *p.inputs(), backward=p.backward), p.policy, p.against, {}


def measure(names: list[str]) -> list[dict]:
    from roundoff.blame import blame

    planted = _planted()
    rows = []
    for name in names:
        program, policy, against, options = _case(name, planted)
        torch.manual_seed(0)
        t0 = time.perf_counter()
        r = blame(program, policy, against=against, repro=False, **options)
        rows.append({
            "case": name, "policy": policy, "against": against, "status": r.status.value,
            "candidates": r.candidates, "evaluations": r.evaluations,
            "seconds": time.perf_counter() - t0, "fix": [c.label for c in r.changes],
        })
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def _baseline(rev: str, names: list[str]) -> list[dict]:
    """This script's rows run on ``git archive rev src`` (this file itself, the tests' planted programs
    and the corpus from the working tree)."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True)
        tar = Path(tmp) / "src.tar"
        tar.write_bytes(archive.stdout)
        with tarfile.open(tar) as t:
            t.extractall(tmp, filter="data")
        env = dict(os.environ, PYTHONPATH=str(Path(tmp) / "src"))
        threads = ["--threads", str(torch.get_num_threads())]
        out = subprocess.run([sys.executable, __file__, "--json", "--cases", ",".join(names), *threads],
                             env=env, check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(out.stdout)


def _fix(row: dict) -> str:
    return ", ".join(row["fix"]) if row["fix"] else "-"


def table(after: list[dict], before: list[dict] | None) -> str:
    if before is None:
        lines = ["| case | policy vs | status | candidates | evaluations | seconds | fix |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {r['case']} | {r['policy']} vs {r['against']} | {r['status']} | {r['candidates']} | "
                  f"{r['evaluations']} | {r['seconds']:.2f} | {_fix(r)} |" for r in after]
        return "\n".join(lines)
    lines = ["| case | status | evaluations before / after | seconds before / after | speed-up | same fix | fix |",
             "|---|---|---|---|---|---|---|"]
    for a, b in zip(after, before):
        same = "yes" if a["fix"] == b["fix"] and a["status"] == b["status"] else f"**no** (before: {_fix(b)})"
        lines.append(f"| {a['case']} | {a['status']} | {b['evaluations']} / {a['evaluations']} | "
                     f"{b['seconds']:.2f} / {a['seconds']:.2f} | {b['seconds'] / a['seconds']:.1f}x | {same} | {_fix(a)} |")
    tb, ta = sum(r["seconds"] for r in before), sum(r["seconds"] for r in after)
    lines.append(f"| all | | | {tb:.2f} / {ta:.2f} | {tb / ta:.1f}x | | |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=None, help=f"comma-separated case names (default: {NANOGPT[0]}; also "
                    f"{NANOGPT[1]}, {ONLINE_SOFTMAX})")
    ap.add_argument("--planted", action="store_true", help="also every planted-defect program")
    ap.add_argument("--baseline", default=None, help="a git revision to measure side by side (e.g. e149126)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON (used for --baseline)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch.set_num_threads for both runs (default: torch's; on a loaded machine the "
                         "multi-threaded tiny matmuls wait for each other: 1 gives steadier figures)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    names = args.cases.split(",") if args.cases else [NANOGPT[0]]
    if args.planted:
        names += [n for n in _planted() if n not in names]
    if args.json:
        print(json.dumps(measure(names)))
        return
    before = _baseline(args.baseline, names) if args.baseline else None
    after = measure(names)
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, {torch.get_num_threads()} threads, "
          f"HEAD {head.stdout.strip()}"
          + (f" (+ working tree), baseline {args.baseline}" if args.baseline else ""))
    print(table(after, before))


if __name__ == "__main__":
    main()
