"""Observe real Inductor on a transformers Llama, forward + backward (issue 16).

Builds ``LlamaForCausalLM`` from its config class with random weights (`real_model_fidelity.build`:
bf16, reduced size), captures loss + every parameter gradient with roundoff, compiles that graph
with real Inductor and observes every buffer its kernels write (`roundoff.observed`). Reports:

- per kernel kind (pointwise, reduction, matmul = extern GEMM, template = GEMM with epilogue), the
  fraction of buffers whose every bit equals the emulated policy's value computed from the same
  operands (``inductor-cpu`` on CPU, ``inductor-gpu`` on CUDA), and each pointwise buffer that is
  not bit-identical with the cause observe names;
- the first kernel that diverges against fp64 (local error, see `roundoff.observed.compare`);
- time: one compiled step (warm) against the observed step (buffers kept as observe keeps them) and the
  comparison; interleaved, also the scanning taps of before; on CPU, host memory peaks.

Usage: ``python bench/observe.py [--device cuda] [--hidden 128 --layers 2 --seq 64] --out bench/results/observe-cpu``
(writes OUT.md and OUT.json).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from check import _peak_cpu  # noqa: E402  (a sibling bench script)
from real_model_fidelity import build  # noqa: E402  (a sibling bench script)

from roundoff.capture import capture  # noqa: E402
from roundoff.execute.cpu_allocator import retain_freed_memory  # noqa: E402
from roundoff.execute.run import complete_inputs  # noqa: E402
from roundoff.observed import observe_compiled  # noqa: E402
from roundoff.observed.replay import device_budget  # noqa: E402
from roundoff.observed.replay import Keeping, plan_taps, run_planned  # noqa: E402
from roundoff.observed.taps import compile_program, tapped  # noqa: E402
from roundoff.report.observed_document import observe_document  # noqa: E402


def overhead(program, device: str, repeats: int) -> dict[str, float]:
    """Fastest of `repeats` interleaved runs of the compiled step: plain; observed as observe does
    (`roundoff.observed.replay`: the plan learned once, buffers kept; on CUDA on the device up to
    observe's budget, the rest on the host); on CUDA also observed with every buffer copied to the
    host (``observed_host``, observe before session 31); and the scanning taps of before (`tapped`:
    every kernel's caller's locals scanned, every mapped buffer copied to host). On CUDA, the device
    peaks of the plain and the observed step and the bytes kept on the device."""
    inputs = [x.to(device) for x in complete_inputs(program, program.example_inputs)]
    compiled = compile_program(program, inputs)
    plan = plan_taps(compiled, inputs)
    cuda = device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    kept: dict[str, torch.Tensor] = {}
    pinned: dict[str, torch.Tensor] = {}
    with torch.no_grad():
        budget = device_budget(torch.device(device), lambda: compiled.run(*inputs))

    def scan_copy(k, n, b, v):
        if b in compiled.buffers:
            kept[b] = v.detach().to("cpu", copy=True)

    ways = {
        "plain": lambda: compiled.run(*inputs),
        "observed": lambda: kept.update(run_planned(compiled, inputs, plan, Keeping(budget, pinned))[0]),
        **({"observed_host": lambda: kept.update(run_planned(compiled, inputs, plan, Keeping(0, pinned))[0])} if cuda else {}),
        "scan_copy": lambda: _tapped_run(compiled, inputs, scan_copy),
    }
    best = dict.fromkeys(ways, float("inf"))
    with torch.no_grad():
        compiled.run(*inputs)
        for _ in range(repeats):
            for name, fn in ways.items():
                kept.clear()
                sync()
                t = time.perf_counter()
                fn()
                sync()
                best[name] = min(best[name], time.perf_counter() - t)
        if device == "cpu":
            best.update(memory(compiled, inputs, plan, program))
        else:
            kept.clear()
            best.update(device_memory(compiled, inputs, plan, budget))
    return best


def device_memory(compiled, inputs, plan, budget: int) -> dict[str, float]:
    """CUDA: peak allocated bytes of the compiled step and of the observed step (its kept buffers
    included; both count the inputs and weights they hold), and the bytes kept on the device."""
    def peak(fn) -> int:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        fn()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated()

    plain = peak(lambda: compiled.run(*inputs))
    keeping = Keeping(budget)
    held: list = []
    observed = peak(lambda: held.append(run_planned(compiled, inputs, plan, keeping)))
    return {"device_peak_compiled": plain, "device_peak_observed": observed, "device_kept_bytes": keeping.used,
            "device_budget": budget,
            "host_kept_bytes": sum(v.numel() * v.element_size() for v in held[0][0].values() if not v.is_cuda)}


def _tapped_run(compiled, inputs, sink) -> None:
    with tapped(compiled.module, sink):
        compiled.run(*inputs)


def memory(compiled, inputs, plan, program) -> dict[str, float]:
    """Peak host bytes (malloc in use above the level before the call) of the compiled step, of the
    observed step (its kept buffers included) and of the comparison (the kept buffers, already
    allocated, not included), and the bytes the kept buffers hold."""
    from roundoff.observed.api import _compare, run_observed
    from roundoff.observed.partition import Stage, Staged

    staged = Staged((Stage("", compiled),), program.num_forward_outputs)
    with torch.no_grad():
        plain = max(_peak_cpu(lambda: compiled.run(*inputs)) for _ in range(5))
        held: list = []
        observed_peak = max(_peak_cpu(lambda: held.append(run_observed(staged, inputs, torch.device("cpu"), {"": plan}, {})))
                            for _ in range(5))
        observed = held[0][0]
        kept = sum(o.value.untyped_storage().nbytes() for o in {id(o.value): o for o in observed.values()}.values())
        compare = _peak_cpu(lambda: _compare(program, observed, inputs, "oracle", "inductor-cpu", 1e-4, "eager"))
    resident = sum(x.untyped_storage().nbytes() for x in {id(x): x for x in inputs if isinstance(x, torch.Tensor)}.values())
    return {"peak_compiled": plain, "peak_observed": observed_peak, "kept_bytes": kept, "peak_compare": compare,
            "input_bytes": resident,
            "copies": sum(c.copy for launch in plan.captures for c in launch),
            "references": sum(not c.copy for launch in plan.captures for c in launch)}


def markdown(doc: dict, args: argparse.Namespace, command: str, capture_s: float, costs: dict[str, float]) -> str:
    s = doc["seconds"]
    lines = [
        f"# observe: real Inductor vs emulated {doc['policy']} on a transformers Llama ({doc['device']})",
        "",
        f"Command: `{command}`",
        "",
        f"Model: LlamaForCausalLM, hidden {args.hidden}, {args.layers} layers, seq {args.seq}, bf16, "
        f"attention {args.attn}, emulated transcendentals: {args.transcendentals}, loss + every parameter gradient "
        + ("(one aten graph split by AOTAutograd's partitioner; forward and backward compiled apart by Inductor). "
           if args.partitioned else "(one aten graph, compiled once by Inductor). ") +
        f"torch {torch.__version__}.",
        "",
        f"Kernel launches: {doc['launches']}; buffers observed and mapped to a Program node: {doc['buffers']}; "
        f"buffers holding no Program node's value: {len(doc['unmapped'])}. Outputs of the observed run "
        f"bit-identical to the unobserved run: {doc['outputs_identical_to_unobserved']}.",
        "",
        "| kernel kind | buffers | bit-identical to emulation | fraction |",
        "| --- | ---: | ---: | ---: |",
    ]
    for kind, v in sorted(doc["agreement"].items()):
        lines.append(f"| {kind} | {v['buffers']} | {v['identical']} | {v['identical'] / v['buffers']:.3f} |")
    causes: dict[tuple[str, str], int] = {}
    for k in doc["kernels"]:
        if not k["emulated_identical"]:
            key = (k["kind"], k["emulation_cause"].split(":")[0])
            causes[key] = causes.get(key, 0) + 1
    lines += ["", "Buffers not bit-identical to the emulation, by kind and observe's diagnosed cause:", "",
              "| kernel kind | cause | buffers |", "| --- | --- | ---: |"]
    lines += [f"| {kind} | {cause} | {n} |" for (kind, cause), n in sorted(causes.items())]
    lines += ["", "Pointwise buffers not bit-identical to the emulation (local: same operands on both sides):", ""]
    lines += ["| kernel | buffer | node | ops fused | elements differing | of | cause |", "| --- | --- | --- | --- | ---: | ---: | --- |"]
    for k in doc["kernels"]:
        if k["kind"] == "pointwise" and not k["emulated_identical"]:
            lines.append(f"| {k['kernel']} | {k['buffer']} | {k['node']} {k['op']} | {', '.join(k['fused_ops'])} | "
                         f"{k['emulated_mismatch']} | {k['vs_oracle']['numel']} | {k['emulation_cause']} |")
    first = doc["first_divergent"]
    lines += ["", "First kernel diverging against fp64 (local excess over fp64 correctly rounded, limit 16): " + (
        f"{first['kernel']} ({first['buffer']}, {first['kind']}, node {first['node']} {first['op']}, "
        f"{first['source']}), excess {float(first['excess']):.3g}" if first else "none")]
    lines += [
        "",
        "| time | seconds | x compiled step |",
        "| --- | ---: | ---: |",
        f"| compiled step (warm, unobserved, fastest of {args.repeats}) | {s['compiled_step']:.4f} | 1.00 |",
        f"| observed step (plan replayed, buffers kept, fastest of {args.repeats}) | {s['observed_step']:.4f} | {s['observed_step'] / s['compiled_step']:.2f} |",
        f"| comparison (eager, fp64, emulation in lock step) | {s['comparison']:.3f} | {s['comparison'] / s['compiled_step']:.1f} |",
        f"| capture (roundoff.capture) | {capture_s:.3f} | - |",
        "",
        f"Interleaved, fastest of {args.repeats} each (one more compile of the same graph): compiled step "
        f"{costs['plain'] * 1e3:.2f} ms, observed (as observe runs it: plan replayed, buffers kept) "
        f"{costs['observed'] * 1e3:.2f} ms ({costs['observed'] / costs['plain']:.2f}x), the scanning taps "
        f"with every mapped buffer copied (observe before the replay) {costs['scan_copy'] * 1e3:.2f} ms "
        f"({costs['scan_copy'] / costs['plain']:.2f}x)." + (
            f" Observed with every buffer copied to the host (observe before session 31) "
            f"{costs['observed_host'] * 1e3:.2f} ms ({costs['observed_host'] / costs['plain']:.2f}x)."
            if "observed_host" in costs else ""),
        "",
    ]
    if "device_peak_compiled" in costs:
        mib = 2.0**20
        lines += [
            f"Device memory (peak allocated, inputs and weights included): compiled step "
            f"{costs['device_peak_compiled'] / mib:.1f} MiB; observed step {costs['device_peak_observed'] / mib:.1f} MiB "
            f"({costs['device_peak_observed'] / costs['device_peak_compiled']:.2f}x), keeping "
            f"{costs['device_kept_bytes'] / mib:.1f} MiB of buffers on the device (budget {costs['device_budget'] / mib:.1f} MiB) "
            f"and {costs['host_kept_bytes'] / mib:.1f} MiB on the host. The whole observe call above (compile, "
            f"steps, comparison with the kept buffers on the device) peaked at {costs['device_peak_observe'] / mib:.1f} MiB.",
            "",
        ]
    if "peak_compiled" in costs:
        mib = 2.0**20
        lines += [
            f"Host memory (malloc in use above the level before each call, peak): compiled step "
            f"{costs['peak_compiled'] / mib:.1f} MiB; observed step {costs['peak_observed'] / mib:.1f} MiB "
            f"({costs['peak_observed'] / costs['peak_compiled']:.2f}x; buffers kept: {costs['kept_bytes'] / mib:.1f} MiB, "
            f"{costs['references']} by reference, {costs['copies']} copied because the program writes over them later); "
            f"comparison {costs['peak_compare'] / mib:.1f} MiB above the kept buffers "
            f"({(costs['peak_compare'] + costs['kept_bytes']) / costs['peak_compiled']:.1f}x the compiled step's peak with them; "
            f"counting the inputs both hold, {costs['input_bytes'] / mib:.1f} MiB of parameters and batch: "
            f"{(costs['input_bytes'] + costs['peak_compare'] + costs['kept_bytes']) / (costs['input_bytes'] + costs['peak_compiled']):.1f}x).",
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--attn", default="eager", choices=["sdpa", "eager"])
    ap.add_argument("--transcendentals", default="eager", choices=["eager", "inductor"],
                    help="evaluate the emulation's transcendentals with Inductor's own kernels")
    ap.add_argument("--repeats", type=int, default=10, help="timed runs of each step (fastest reported)")
    ap.add_argument("--partitioned", action="store_true",
                    help="observe forward and backward compiled apart, as torch.compile compiles a training step "
                         "(the interleaved timing and memory still compile the joint graph)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--source", type=Path, default=None, help="also write Inductor's generated wrapper here")
    args = ap.parse_args(argv)

    retain_freed_memory()  # as the roundoff command line does: host copies reuse freed memory
    module, ids = build(args.hidden, args.layers, args.seq, args.attn, "cpu")
    t0 = time.perf_counter()
    program = capture(module, ids, backward=True, name="llama")
    capture_s = time.perf_counter() - t0
    if args.device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    result = observe_compiled(program, device=args.device, against="oracle", transcendentals=args.transcendentals,
                              repeats=args.repeats, partitioned=args.partitioned)
    whole_peak = torch.cuda.max_memory_allocated() if args.device.startswith("cuda") else None
    doc = observe_document(result, "llama")
    if args.source is not None:
        args.source.write_text(result.source)
    command = "python bench/observe.py " + " ".join(argv if argv is not None else sys.argv[1:])
    costs = overhead(program, args.device, args.repeats)
    if whole_peak is not None:
        costs["device_peak_observe"] = whole_peak
    text = markdown(doc, args, command, capture_s, costs)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".md").write_text(text)
        args.out.with_suffix(".json").write_text(json.dumps({"command": command, "capture_s": capture_s, "overhead_s": costs, **doc}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
