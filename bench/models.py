"""The corpus matrix: every model x form x cell, forward+backward, through the library, one process.

Cells (policy against reference): eager, inductor-gpu, inductor-cpu, xla-2.10 and thunder-autocast
against eager, and eager against the fp64 oracle. Per model and form: the corpus target is built
(`roundoff.corpus`), one eager forward+backward step is run once to warm up and once measured, the
program is captured once (``capture(fn, *inputs, backward=True)``), and each cell is
``check(program, program.example_inputs, policy, against=..., nodes="all")`` (every node examined:
the cells count diverging nodes). Each stage runs under the CLI's own error guard
(`roundoff.cli.main.guarded`), so a cell's exit code is the one ``roundoff check`` would give:
0 within tolerance, 1 an output diverges, 2 usage error, 3 internal error, with the CLI's one
error line. A capture error is every cell's error (the CLI captures before it checks).

Time: wall seconds of one `check` call (its plan included: the first check of a program and policy
plans it) over one eager forward+backward step of the same model, measured in the same process.
Capture is reported once per model (capture_ratio). Peak memory: bytes malloc has handed out above
the level before the call (glibc ``mallinfo2``, sampled every 0.5 ms by `bench/check.py`'s
``_peak_cpu``; on CUDA ``torch.cuda.max_memory_allocated`` above the level before), for the check
and for the eager step, as a ratio. The sampler runs during both, so both pay its overhead; the
process keeps freed memory (``retain_freed_memory()``, as the ``roundoff`` command does).
diverging: outputs (loss and gradients) failing PyTorch's ``same`` rule / all float outputs.

    python bench/models.py [--models A,B] [--policies eager,eager@oracle,...] [--forms module,closure,ids]
                           [--device cpu|cuda] [--out bench/results/models-cpu]

writes OUT.md (a table per form, then the failures grouped by error line) and OUT.json, each headed
by the exact command, the git commit and the versions.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
import typer

from check import _peak_cpu, _peak_cuda  # bench/check.py: the same memory measure as the check bench

from roundoff import corpus
from roundoff.analyze import check
from roundoff.capture import capture
from roundoff.cli.main import guarded

CELLS = ("eager@eager", "inductor-gpu@eager", "inductor-cpu@eager", "xla-2.10@eager",
         "thunder-autocast@eager", "eager@oracle")
EXIT_NAMES = {0: "ok", 1: "diverges", 2: "usage error", 3: "internal error"}


def run_guarded(fn: Callable[[], Any]) -> tuple[int | None, str, Any]:
    """(exit code or None when `fn` returned, the CLI's error line, `fn`'s value)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            with guarded(debug=False):
                return None, "", fn()
        except typer.Exit as exc:
            return exc.exit_code, err.getvalue().strip().splitlines()[0], None


def measured(fn: Callable[[], Any], device: str) -> tuple[Any, float, int]:
    """(value, seconds, peak bytes above the level before) of one call of `fn`."""
    box: dict[str, Any] = {}

    def timed() -> None:
        t0 = time.perf_counter()
        box["value"] = fn()
        if device == "cuda":
            torch.cuda.synchronize()
        box["seconds"] = time.perf_counter() - t0

    peak = (_peak_cuda if device == "cuda" else _peak_cpu)(timed)
    return box.get("value"), box.get("seconds", float("nan")), peak


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def run_cell(program: Any, cell: str, eager: dict[str, Any], device: str) -> dict[str, Any]:
    policy, against = cell.split("@")
    out: dict[str, Any] = {"cell": cell, "policy": policy, "against": against}
    box: dict[str, Any] = {}

    def one() -> Any:
        box["result"], box["seconds"], box["peak"] = measured(
            lambda: check(program, program.example_inputs, policy, against=against, nodes="all"), device)

    code, error, _ = run_guarded(one)
    result = box.get("result")
    if code is None and result is not None:
        code = 1 if result.diverges else 0
        out["diverging"] = sum(not o.passes for o in result.outputs)
        out["outputs"] = len(result.outputs)
        out["diverging_nodes"] = sum(n.verdict != "ok" for n in result.nodes)
        out["nonfinite_origin"] = result.nan_origin
        out["seconds"], out["peak_bytes"] = box["seconds"], box["peak"]
        out["time_ratio"] = _ratio(box["seconds"], eager["seconds"])
        out["memory_ratio"] = _ratio(box["peak"], eager["peak_bytes"])
    out["exit"], out["error"] = code, error
    return out


def run_model(name: str, form: str, cells: tuple[str, ...], device: str) -> dict[str, Any]:
    entry = corpus.get(name)
    row: dict[str, Any] = {"model": name, "form": form, "family": entry.family.value}
    try:
        target = entry.build(form, device=device)
        target.step()  # warm-up: first-call costs (lazy init, kernel selection) out of the baseline
        _, seconds, peak = measured(target.step, device)
    except Exception as exc:  # not roundoff's: the model itself does not run here
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        row["eager_error"] = f"{type(exc).__name__}: {first}"
        row["cells"] = [{"cell": c, "exit": None, "error": "eager step fails: " + row["eager_error"]}
                        for c in cells]
        return row
    row["eager"] = eager = {"seconds": seconds, "peak_bytes": peak}
    t0 = time.perf_counter()
    code, error, program = run_guarded(lambda: capture(target.fn, *target.inputs, backward=True))
    row["capture_ratio"] = _ratio(time.perf_counter() - t0, seconds)
    if program is None:
        row["capture_error"] = error
        row["cells"] = [{"cell": c, "exit": code, "error": error} for c in cells]
        return row
    row["nodes"] = len(program.graph.nodes)
    row["cells"] = [run_cell(program, c, eager, device) for c in cells]
    return row


def _git_commit() -> str:
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "src", "bench/models.py"],
                               cwd=here, capture_output=True, text=True).stdout.strip()
        return rev.stdout.strip() + (" (with uncommitted changes)" if dirty else "")
    except OSError:
        return "unknown"


def _cell_text(c: dict[str, Any]) -> str:
    if c["exit"] is None:
        return "n/a"
    if c["exit"] > 1:
        return f"**{c['exit']}**"
    t = c.get("time_ratio")
    m = c.get("memory_ratio")
    tt = f"{t:.0f}x" if t is not None else "?"
    mm = f"{m:.1f}x" if m is not None else "?"
    return f"{c['exit']} · {tt} · {mm} · {c['diverging']}/{c['outputs']}"


def markdown(doc: dict[str, Any]) -> str:
    cells = doc["cells"]
    lines = [f"# Corpus matrix ({doc['device']})", "",
             f"Command: `{doc['command']}`  ", f"Commit: `{doc['commit']}`  ",
             f"torch {doc['torch']}, transformers {doc['transformers']}, {doc['date']}, "
             f"{doc['elapsed_s']:.0f} s in all", "",
             "A cell: exit code · check time / eager fwd+bwd step · peak memory / eager step · "
             "diverging outputs / float outputs (loss + gradients). Exit 0 ok, 1 diverges, "
             "**2** usage error, **3** internal error (see below); n/a: the eager bf16 step itself "
             "fails. `capture` is capture time / eager step.", ""]
    for form in doc["forms"]:
        rows = [r for r in doc["rows"] if r["form"] == form]
        if not rows:
            continue
        lines += [f"## Form `{form}`", "",
                  "| model | capture | " + " | ".join(cells) + " |",
                  "|---|---|" + "---|" * len(cells)]
        for r in rows:
            cap = f"{r['capture_ratio']:.1f}x" if r.get("capture_ratio") else "-"
            lines.append(f"| {r['model']} | {cap} | " + " | ".join(_cell_text(c) for c in r["cells"]) + " |")
        counts = {k: sum(1 for r in rows for c in r["cells"] if c["exit"] == k) for k in (0, 1, 2, 3, None)}
        lines += ["", "Cells: " + ", ".join(f"{EXIT_NAMES.get(k, 'n/a')} {v}" for k, v in counts.items()), ""]
    oracle = [(r, c) for r in doc["rows"] for c in r["cells"]
              if c.get("against") == "oracle" and c["exit"] in (0, 1) and "diverging_nodes" in c]
    if oracle:
        lines += ["## Against the fp64 oracle: nodes", "",
                  f"{len(oracle)} checks; diverging nodes in all of them: "
                  f"{sum(c['diverging_nodes'] for _, c in oracle)}; NaN/Inf origins named: "
                  f"{sum(c['nonfinite_origin'] is not None for _, c in oracle)}.", ""]
        lines += [f"- {r['model']} ({r['form']}): {c['diverging_nodes']} diverging node(s), "
                  f"origin {c['nonfinite_origin']}" for r, c in oracle
                  if c["diverging_nodes"] or c["nonfinite_origin"] is not None]
        lines.append("")
    lines += ["## Failures by error line", "", "| exit | error (first line) | cells | models |", "|---|---|---|---|"]
    for (code, error), where in failures(doc).items():
        models = sorted({w[0] for w in where})
        shown = "n/a" if code is None else code
        lines.append(f"| {shown} | {error.replace('|', '/')} | {len(where)} | {', '.join(models)} |")
    return "\n".join(lines) + "\n"


def failures(doc: dict[str, Any]) -> dict[tuple[Any, str], list[tuple[str, str, str]]]:
    """(exit, error line) -> [(model, form, cell)] for every cell that did not exit 0 or 1."""
    out: dict[tuple[Any, str], list[tuple[str, str, str]]] = {}
    for r in doc["rows"]:
        for c in r["cells"]:
            if c["exit"] not in (0, 1):
                out.setdefault((c["exit"], c["error"]), []).append((r["model"], r["form"], c["cell"]))
    return dict(sorted(out.items(), key=lambda kv: -len(kv[1])))


def default_models() -> tuple[str, ...]:
    """The whole corpus: PyTorch's 55 HuggingFace entries, then the hand-written models."""
    return corpus.names()


def _cells(spec: str) -> tuple[str, ...]:
    return tuple(c if "@" in c else f"{c}@eager" for c in spec.split(","))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=None, help="comma-separated corpus names (default: all)")
    ap.add_argument("--policies", default=",".join(CELLS),
                    help="cells POLICY@REFERENCE (a bare POLICY is POLICY@eager), comma-separated")
    ap.add_argument("--forms", default="module", help="comma-separated: module,closure,ids")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--out", default=None, help="path prefix (default bench/results/models-DEVICE)")
    args = ap.parse_args()
    if args.device == "cpu":
        from roundoff.execute.cpu_allocator import retain_freed_memory

        retain_freed_memory()
    models = args.models.split(",") if args.models else list(default_models())
    cells, forms = _cells(args.policies), args.forms.split(",")
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                   f"models-{args.device}")
    commit = _git_commit()  # the code measured: HEAD when the run starts
    t0, rows = time.perf_counter(), []
    for name in models:
        for form in forms:
            if form not in corpus.get(name).forms:
                continue
            t = time.perf_counter()
            rows.append(run_model(name, form, cells, args.device))
            codes = " ".join(str(c["exit"]) for c in rows[-1]["cells"])
            print(f"{name:42s} {form:8s} {codes:14s} {time.perf_counter() - t:6.1f} s", flush=True)
    import transformers

    doc = {
        "command": "python bench/models.py " + " ".join(sys.argv[1:]), "commit": commit,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "device": args.device if args.device == "cpu" else torch.cuda.get_device_name(),
        "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
        "torch": torch.__version__, "transformers": transformers.__version__,
        "cells": list(cells), "forms": forms, "elapsed_s": time.perf_counter() - t0, "rows": rows,
    }
    with open(out + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    with open(out + ".md", "w") as f:
        f.write(markdown(doc))


if __name__ == "__main__":
    main()
