"""Cost of a full `roundoff.analyze.check` against one eager forward+backward, same machine, same run.

Workload (`--model`): ``block``, the zoo's Llama-style block, forward+backward, in bf16: at the zoo's
size (d=64, seq 16, batch 2) and at realistic sizes (`--sizes D:SEQ:BATCH[:LAYERS] ...`, the same
layers with d, 4*d/2 MLP width, d/16 heads; LAYERS such blocks in sequence, default 1) where per-op
work, not per-node Python overhead, dominates; or ``llama``, a transformers ``LlamaForCausalLM`` with
random weights (roundoff.corpus's builder; size ``corpus`` is the corpus's: hidden 64, 2 layers, seq
16, batch 2; ``D:SEQ:BATCH:LAYERS`` resizes it, e.g. ``1024:512:1:4`` with SDPA attention), its loss
forward+backward. Measured per size:

- eager: the real module, ``block(x)`` then ``out.backward(ones)`` (autograd), one step;
- check-every-node: ``check(program, inputs, "inductor-gpu", against="eager", nodes="all")``: emulated
  policy run, fp64 oracle, emulated eager reference and every node's comparison + local error,
  streaming (what "check" measured before the screen);
- check-screen: the default ``check(...)``: the three runs compared at the outputs and every 16th
  node only (every node examined only when that fails: not on these clean workloads; the bench stops
  if it does); ``screen_with="auto"``: the interpreter on CPU, graphed on CUDA;
- check-screen-oracle: the same screen against the fp64 oracle instead of emulated eager (outputs
  judged by their values: `verdict.oracle_output_passes`);
- check-screen-lowered / check-screen-compiled: the same screen with the three runs lowered once
  into one graph and run as FX Python / compiled by Inductor (``screen_with=...``);
- check-screen-interpreter / check-screen-graphed: the screen interpreted, and the interpreter's run
  captured once as a CUDA graph and replayed (CUDA only);
- compile: ``torch.compile(model)`` forward+backward (its first call is torch.compile's cold start);
- check-lite: the same against the oracle only and without local error;
- runs-only: the floor of `check`: the same three lockstep runs (policy, fp64 oracle, reference),
  streaming with recomputation as `check` does, with no per-node observer (no metrics, verdicts,
  local error);
- fp64-eager: the real module and input cast to fp64, forward+backward in eager: the cost of any fp64
  oracle of this program on this machine (the floor below which no fp64-checked run can go).

Every timing child process first calls `roundoff.execute.cpu_allocator.retain_freed_memory()` (what the
``roundoff`` command does), eager included, so all items run on the same allocator; ``--default-malloc``
leaves glibc's defaults (fresh page faults for every large temporary).

Time is the median of `--repeat` runs after one warm-up, in a fresh subprocess per item; each child
also times the eager step interleaved with the item (``ratio_same_process``: the ratio a machine
shared with other work keeps best). Peak memory
is measured in another fresh subprocess per item, on the second call (the first plans the program and
compiles kernels, once per process) (CPU: bytes malloc has handed out and not had back, glibc's
``mallinfo2``, sampled every 0.5 ms, above the level before the call, so memory the allocator keeps
for reuse is not counted as used; CUDA: ``torch.cuda.max_memory_allocated`` above it, plus what the
first call left allocated: a CUDA graph's pool).

    python bench/check.py [--model block|llama] [--device cpu|cuda] [--sizes 64:16:2 256:128:4:4]
                          [--repeat 5] [--threads 1] [--default-malloc] [--items ...] [--out FILE.json]

Cold start: the items that compile (check-screen, compile) run in a child with a fresh, empty
``TORCHINDUCTOR_CACHE_DIR`` (their "first call" is the cold start, capture included for check-screen:
``cold_seconds``), then in a second child reusing that cache (``warm_cache_seconds``), side by side.

Planning (decomposition re-trace: a fixed cost per program) is done by the first (warm-up) call and
cached by `check` for the same program and policy; "first call" reports that call alone.
A child process that fails has its stderr printed by the parent, which then stops.
"""

from __future__ import annotations

import argparse
import copy
import ctypes
import ctypes.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import torch

ITEMS = ("eager", "fp64-eager", "compile", "check-screen", "check-screen-oracle", "check-screen-lowered", "check-screen-compiled",
         "check-screen-interpreter", "check-screen-graphed", "check-every-node", "check-every-node-interpreter", "check-lite", "runs-only")
#: Items measured cold (a fresh Inductor cache) and again reusing that cache: their first call compiles.
COMPILING = ("compile", "check-screen-compiled")
DEFAULT_SIZES = ("64:16:2", "256:128:4", "512:256:4")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def _malloc_in_use() -> Callable[[], int]:
    """Bytes malloc has handed out and not had back (glibc >= 2.33: ``mallinfo2``: heap blocks in use
    plus mmapped blocks, all arenas); the resident set size where that is unavailable."""
    try:
        fn = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallinfo2
        fn.restype = _MallInfo2
    except (OSError, AttributeError):
        def rss() -> int:
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

        return rss

    def in_use() -> int:
        m = fn()
        return m.uordblks + m.hblkhd

    return in_use


def _peak_cpu(fn: Callable[[], Any]) -> int:
    used = _malloc_in_use()
    base, peak, done = used(), [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], used())
            time.sleep(0.0005)

    t = threading.Thread(target=sample)
    t.start()
    try:
        fn()
    finally:
        done.set()
        t.join()
    return max(peak[0], used()) - base


def _peak_cuda(fn: Callable[[], Any]) -> int:
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base


def _block(d: int, seq: int, device: str, seed: int = 0) -> torch.nn.Module:
    """The zoo's Llama block layers at model width `d` and sequence length `seq` (weights as the zoo's)."""
    from roundoff.zoo import blocks

    if (d, seq) == (blocks.DIM, blocks.SEQ):
        return blocks.llama_block(seed, device=device)
    block = blocks.Block(blocks.SwiGLU(d, 2 * d))
    block.input_layernorm, block.post_attention_layernorm = blocks.RMSNorm(d), blocks.RMSNorm(d)
    block.self_attn = blocks.Attention(d, max(1, d // 16), seq)
    return blocks._initialise(block, seed, device, torch.bfloat16)


def _model(d: int, seq: int, layers: int, device: str) -> torch.nn.Module:
    """One block, or `layers` of them in sequence (each initialised from its own seed)."""
    if layers == 1:
        return _block(d, seq, device)
    return torch.nn.Sequential(*[_block(d, seq, device, seed) for seed in range(layers)])


def _parse_size(size: str) -> tuple[int, int, int, int]:
    """``D:SEQ:BATCH`` or ``D:SEQ:BATCH:LAYERS`` (default 1 layer)."""
    parts = [int(v) for v in size.split(":")]
    if len(parts) not in (3, 4) or min(parts) < 1:
        raise SystemExit(f"bench/check.py: size {size!r} is not D:SEQ:BATCH[:LAYERS] with positive integers")
    return parts[0], parts[1], parts[2], parts[3] if len(parts) == 4 else 1


def _llama(size: str, device: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """A transformers Llama (loss module, inputs) from roundoff.corpus; ``corpus`` or D:SEQ:BATCH:LAYERS."""
    from roundoff import corpus
    from roundoff.corpus import huggingface as hf

    name = "meta-llama/Llama-3.2-1B"
    if size == "corpus":
        t = corpus.build(name, device=device)
        return t.fn, t.inputs
    d, seq, batch, layers = _parse_size(size)
    spec = next(s for s in hf.SPECS if s.name == name)
    config = hf.reduced_config(spec)
    heads = max(1, d // 64)
    config.update({"hidden_size": d, "intermediate_size": 4 * d, "num_hidden_layers": layers,
                   "num_attention_heads": heads, "num_key_value_heads": heads, "head_dim": d // heads,
                   "max_position_embeddings": max(seq, config.max_position_embeddings)})
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = hf._model_class(spec.model_class)(config).to(torch.bfloat16).to(device).train()
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, config.vocab_size, (batch, seq), generator=g).to(device)

    class Loss(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
            return self.model(input_ids=input_ids, labels=labels).loss

    return Loss(), (ids, ids.clone())


def _workload(model: str, size: str, device: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """(module, inputs) whose forward returns what the step backpropagates."""
    if model == "llama":
        return _llama(size, device)
    d, seq, batch, layers = _parse_size(size)
    g = torch.Generator().manual_seed(1000)
    x = torch.randn(batch, seq, d, generator=g).to(torch.bfloat16).to(device).requires_grad_()
    return _model(d, seq, layers, device), (x,)


def _step(module: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
    out = module(*inputs)
    out.backward(torch.ones_like(out))
    module.zero_grad(set_to_none=True)
    for x in inputs:
        x.grad = None


def _setup(model: str, size: str, device: str, recompute: bool = True) -> dict[str, Callable[[], Any]]:
    from roundoff.analyze import check
    from roundoff.capture import capture

    module, xs = _workload(model, size, device)
    t0 = time.perf_counter()
    program = capture(module, *xs, backward=True)
    capture_seconds = time.perf_counter() - t0
    inputs = tuple(t.detach() for t in program.example_inputs)
    module64 = copy.deepcopy(module).double()
    xs64 = tuple(x.detach().double().requires_grad_() if x.is_floating_point() else x for x in xs)
    compiled = torch.compile(module)

    def runs_only() -> None:
        from roundoff.analyze.check import _plan
        from roundoff.execute.interpreter import Lockstep
        from roundoff.execute.node_numerics import OracleNumerics
        from roundoff.execute.run import plan_numerics

        plan_a = _plan(program, "inductor-gpu")
        sides = [plan_numerics(plan_a), OracleNumerics(), plan_numerics(_plan(plan_a.program, "eager"))]
        with torch.no_grad():
            Lockstep(plan_a.program, sides, recompute=range(len(sides)) if recompute else ()).run_inputs(inputs)

    return {
        "eager": lambda: _step(module, xs),
        "fp64-eager": lambda: _step(module64, xs64),
        "compile": lambda: _step(compiled, xs),
        "runs-only": runs_only,
        "check-every-node": lambda: check(program, inputs, "inductor-gpu", against="eager", recompute=recompute,
                                          nodes="all"),  # (auto: graphed on CUDA)
        "check-every-node-interpreter": lambda: check(program, inputs, "inductor-gpu", against="eager",
                                                      recompute=recompute, nodes="all", nodes_with="interpreter"),
        "check-screen": lambda: _screened(check(program, inputs, "inductor-gpu", against="eager",
                                                recompute=recompute)),
        "check-screen-oracle": lambda: _screened(check(program, inputs, "inductor-gpu", against="oracle",
                                                       recompute=recompute)),
        "check-screen-lowered": lambda: _screened(check(program, inputs, "inductor-gpu", against="eager",
                                                        screen_with="lowered")),
        "check-screen-compiled": lambda: _screened(check(program, inputs, "inductor-gpu", against="eager",
                                                         screen_with="compiled")),
        "check-screen-interpreter": lambda: _screened(check(program, inputs, "inductor-gpu", against="eager",
                                                            screen_with="interpreter", recompute=recompute)),
        "check-screen-graphed": lambda: _screened(check(program, inputs, "inductor-gpu", against="eager",
                                                        screen_with="graphed", recompute=recompute)),
        "check-lite": lambda: check(program, inputs, "inductor-gpu", against="oracle", local=False,
                                    recompute=recompute, nodes="all"),
        "_nodes": lambda: sum(1 for _ in program.graph.nodes),
        "_program": lambda: program,
        "_inputs": lambda: inputs,
        "_capture_seconds": lambda: capture_seconds,
    }


def _screened(result: Any) -> None:
    """A screen that had to examine nodes measures something else: say so and stop."""
    if result.mode != "screen":
        raise SystemExit(f"bench/check.py: the screen found a divergence ({result.first_divergent}): "
                         "this workload is not clean, so check-screen would time every-node")
    if failed := [n for n in result.notes if "screen failed" in n]:
        raise SystemExit(f"bench/check.py: {failed[0]}: this would time the interpreter")


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def measure_one(item: str, model: str, size: str, device: str, repeat: int, recompute: bool = True) -> dict[str, Any]:
    """Run in a fresh process: time of the first call, then median time of `repeat` calls."""
    fns = _setup(model, size, device, recompute)
    fn = fns[item]
    _sync(device)
    t0 = time.perf_counter()
    result = fn()
    _sync(device)
    first = time.perf_counter() - t0
    fns["eager"]()
    times, eager = [], []
    for _ in range(repeat):  # the eager step interleaved, in this process: a ratio a loaded machine keeps
        for f, into in ((fns["eager"], eager), (fn, times)):
            _sync(device)
            t0 = time.perf_counter()
            f()
            _sync(device)
            into.append(time.perf_counter() - t0)
    return {"item": item, "size": size, "seconds": statistics.median(times), "first_call_seconds": first,
            "eager_here_seconds": statistics.median(eager), "capture_seconds": fns["_capture_seconds"](),
            "nodes": fns["_nodes"](), "examined_with": getattr(result, "examined_with", None)}


def measure_memory(item: str, model: str, size: str, device: str, recompute: bool = True) -> dict[str, Any]:
    """Run in a fresh process: peak memory of a warm (second) call.

    The first call plans the program and compiles kernels once per process; its imports and compiled
    code stay resident and are not the check's data. On CUDA, device memory the first call leaves
    allocated is counted (`resident_bytes`, included in `peak_bytes`): the graphed screen's CUDA graph
    pool holds its run's peak for as long as the program lives.
    """
    fns = _setup(model, size, device, recompute)
    if device != "cuda":
        fns[item]()
        return {"peak_bytes": _peak_cpu(fns[item])}
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    fns[item]()
    torch.cuda.synchronize()
    resident = torch.cuda.memory_allocated() - before
    return {"peak_bytes": resident + _peak_cuda(fns[item]), "resident_bytes": resident}


def _child(item: str, size: str, args: argparse.Namespace, memory: bool = False,
           cache: str | None = None) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--one", item, "--model", args.model, "--sizes", size, "--device", args.device,
           "--repeat", str(args.repeat), "--threads", str(args.threads)]
    cmd += ["--no-recompute"] if args.no_recompute else []
    cmd += ["--memory"] if memory else []
    cmd += ["--default-malloc"] if args.default_malloc else []
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache} if cache else None
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"bench/check.py: child {' '.join(cmd[1:])} exited {proc.returncode} (its stderr is above)")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _measure_item(item: str, size: str, args: argparse.Namespace) -> dict[str, Any]:
    """Timing and memory children; a compiling item first with a fresh Inductor cache (cold), then again
    reusing it (its steady-state timing is taken from that second child)."""
    if item not in COMPILING:
        return {**_child(item, size, args), **_child(item, size, args, memory=True)}
    cache = tempfile.mkdtemp(prefix="roundoff-bench-inductor-")
    try:
        cold = _child(item, size, args, cache=cache)
        warm = _child(item, size, args, cache=cache)
        mem = _child(item, size, args, memory=True, cache=cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    extra = cold["capture_seconds"] if item.startswith("check") else 0.0  # torch.compile's first call traces
    return {**warm, **mem, "cold_seconds": cold["first_call_seconds"] + extra,
            "warm_cache_seconds": warm["first_call_seconds"] + extra}


def _report(rows: list[dict[str, Any]], res: dict[str, dict[str, Any]], size: str) -> None:
    e = res["eager"]
    for item, r in res.items():
        r["time_ratio"] = r["seconds"] / e["seconds"]
        r["ratio_same_process"] = r["seconds"] / r["eager_here_seconds"]  # item and eager interleaved
        r["first_call_ratio"] = r["first_call_seconds"] / e["seconds"]
        r["memory_ratio"] = r["peak_bytes"] / e["peak_bytes"] if e["peak_bytes"] > 0 else None
        if "cold_seconds" in r and "compile" in res:
            r["cold_vs_compile"] = r["cold_seconds"] / res["compile"]["cold_seconds"]
        rows.append(r)
        mem = f"{r['memory_ratio']:.2f}x" if r["memory_ratio"] is not None else "n/a"
        vs = f" ({r['cold_vs_compile']:.2f}x compile's)" if "cold_vs_compile" in r else ""
        cold = (f"  cold {r['cold_seconds']:.1f} s{vs}, cache reused {r['warm_cache_seconds']:.1f} s"
                if "cold_seconds" in r else "")
        print(f"{size:>12} {item:19s} {r['seconds'] * 1e3:9.2f} ms  {r['time_ratio']:7.1f}x time "
              f"({r['ratio_same_process']:.1f}x interleaved) "
              f"(first call {r['first_call_ratio']:7.1f}x)  {r['peak_bytes'] / 2**20:8.1f} MiB  {mem} memory  "
              f"({r['nodes']} nodes){cold}{f', examined with {w}' if (w := r.get('examined_with')) else ''}", flush=True)


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False,
                             cwd=os.path.dirname(os.path.abspath(__file__)))
        return out.stdout.strip()
    except OSError:
        return ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=("block", "llama"), default="block")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--sizes", nargs="+", default=None,
                    help="D:SEQ:BATCH[:LAYERS] per size (llama: also 'corpus', its default)")
    ap.add_argument("--items", nargs="+", default=list(ITEMS), choices=ITEMS, help="eager is always measured")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=None)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads; same for every item")
    ap.add_argument("--default-malloc", action="store_true", help="keep glibc's default allocator settings")
    ap.add_argument("--no-recompute", action="store_true",
                    help="check and runs-only without recomputation (every activation held, as before it)")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--memory", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.sizes = args.sizes or (["corpus"] if args.model == "llama" else list(DEFAULT_SIZES))
    torch.set_num_threads(args.threads)
    if not args.default_malloc:
        from roundoff.execute.cpu_allocator import retain_freed_memory

        retain_freed_memory()
    if args.one:
        recompute = not args.no_recompute
        measure = measure_memory(args.one, args.model, args.sizes[0], args.device, recompute) if args.memory else (
            measure_one(args.one, args.model, args.sizes[0], args.device, args.repeat, recompute))
        print(json.dumps(measure))
        return
    rows: list[dict[str, Any]] = []
    items = ["eager", *[i for i in args.items if i != "eager"]]
    for size in args.sizes:
        _report(rows, {item: _measure_item(item, size, args) for item in items}, size)
    doc = {
        "command": "python bench/check.py " + " ".join(sys.argv[1:]), "model": args.model,
        "device": args.device if args.device == "cpu" else torch.cuda.get_device_name(),
        "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
        "torch": torch.__version__, "threads": args.threads, "rows": rows,
        "allocator": "glibc default" if args.default_malloc else "retain_freed_memory()",
        "recompute": not args.no_recompute,
        "targets": {"check-screen": 12.0, "check-every-node": 40.0, "memory_ratio": 3.0, "cold_vs_compile": 1.5},
        "commit": _commit(),
    }
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=2)


if __name__ == "__main__":
    main()
