"""GPU validation of roundoff.compile and of the inductor-gpu preset (issue 6).

Runs on CUDA when present (the H200 of the device tool), else on CPU as a dry run:

1. motivating cases, plain ``torch.compile`` vs ``roundoff.compile(policy="eager")``:
   ``exp(x*scale - x*scale)`` (zoo fma-cancel), the user-level softmax backward (zoo softmax-backward,
   seed 0 plus 12 random seeds), the bf16 chain ``((a*b)+c)*d - a`` against eager;
2. fidelity of the inductor-gpu preset: roundoff's emulation (capture, plan, execute, on the same
   device) against real Inductor output on the zoo's pointwise graphs and on random pointwise graphs:
   bit-identical fraction, and each differing element attributed: an FMA candidate contracted
   differently than the plan says (flipping that one site makes the emulation match), or an
   implementation difference of a named op (evaluating that one node with Inductor's own kernel
   makes it match; the evidence is the node's fp32 operands at the element, torch's and Inductor's
   results and the correctly rounded one, plus the generated kernel's lines for the op), or
   unexplained. The op lowering found in the generated Triton/C++ code is recorded per graph.

Usage: ``python bench/gpu_validation.py --out DIR [--random 20]``; writes DIR/gpu_validation.json and
DIR/gpu_validation.txt.

``--bits`` (issue 16) runs instead: (1) the fidelity above, (2) prediction without the hardware,
the inductor-gpu emulation run on the CPU against real Inductor on CUDA with every difference
attributed to one op, and (3) a per-op sweep of the GPU's and the CPU's implementations against the
correctly rounded values (``bench/gpu_prediction.py``); writes DIR/gpu-validation-bits.{json,md}
(on a machine without CUDA: the CPU parts only, in DIR/gpu-validation-bits-cpu.{json,md}, saying
what was skipped). Every count compares bit patterns (-0.0 != +0.0, NaN == NaN).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from fidelity_attribution import attribute_contraction, attribute_impl, lowering
from gpu_prediction import Routes, bits_markdown, op_sweep, predict_one

import roundoff
from roundoff.numerics import bits_differ, same_bits, same_bits_mask
from roundoff.zoo import get_workload


def _leaves(x: Any) -> list[torch.Tensor]:
    return [t for t in torch.utils._pytree.tree_leaves(x) if isinstance(t, torch.Tensor)]


def _nan_count(ts: list[torch.Tensor]) -> int:
    return int(sum(int(t.isnan().sum()) for t in ts))


def fma_cancel(device: str) -> dict[str, Any]:
    work = get_workload("fma-cancel")
    fn = work.build()
    x, s = (t.detach().to(device) for t in work.make_inputs(device="cpu"))
    out = {
        "eager": fn(x, s).item(),
        "plain_compile": torch.compile(fn)(x, s).item(),
        "roundoff_eager": roundoff.compile(fn, policy="eager")(x, s).item(),
    }
    out["pass"] = out["roundoff_eager"] == 1.0
    return out


def _softmax_grads(fn: Callable, x: torch.Tensor, y: torch.Tensor) -> list[torch.Tensor]:
    y = y.detach().clone().requires_grad_()
    out = fn(x, y)
    out.sum().backward()
    return [out.detach(), y.grad]


def softmax_backward(device: str, trials: int = 12) -> dict[str, Any]:
    work = get_workload("softmax-backward")
    fn = work.build()
    plain, ours = torch.compile(fn), roundoff.compile(fn, policy="eager")
    rows = []
    for seed in range(trials + 1):
        x, y = (t.detach().to(device) for t in work.make_inputs(seed=seed))
        rows.append(
            {
                "seed": seed,
                "eager_nan": _nan_count(_softmax_grads(fn, x, y)),
                "plain_nan": _nan_count(_softmax_grads(plain, x, y)),
                "roundoff_nan": _nan_count(_softmax_grads(ours, x, y)),
            }
        )
    return {
        "trials": rows,
        "plain_trials_with_nan": sum(r["plain_nan"] > 0 for r in rows),
        "roundoff_trials_with_nan": sum(r["roundoff_nan"] > 0 for r in rows),
        "pass": all(r["roundoff_nan"] == 0 for r in rows),
    }


def bf16_chain(device: str, n: int = 1 << 20) -> dict[str, Any]:
    fn = get_workload("bf16-chain").build()
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(n, generator=g).to(torch.bfloat16).to(device) for _ in range(4)]
    ref = fn(*xs)
    plain = torch.compile(fn)(*xs)
    ours = roundoff.compile(fn, policy="eager")(*xs)
    native = roundoff.compile(fn, policy="inductor-gpu" if device == "cuda" else "inductor-cpu")(
        *xs
    )
    return {
        "elements": n,
        "plain_mismatch": bits_differ(plain, ref),
        "roundoff_mismatch": bits_differ(ours, ref),
        "pass": same_bits(ours, ref),
        "roundoff_native_policy_vs_plain_mismatch": bits_differ(native, plain),
    }


def kept_rounding_override(device: str, n: int = 1 << 20) -> dict[str, Any]:
    """A node override from blame's vocabulary on the device: round ``a*b`` of the chain to bf16
    inside Inductor's fused kernel (native preset), against a hand-cast eager oracle."""
    from roundoff.capture import capture
    from roundoff.policy import OpOverride, get_policy

    fn = get_workload("bf16-chain").build()
    g = torch.Generator().manual_seed(1)
    a, b, c, d = xs = [torch.randn(n, generator=g).to(torch.bfloat16).to(device) for _ in range(4)]

    def f(t: torch.Tensor) -> torch.Tensor:
        return t.float()

    oracle = ((f((f(a) * f(b)).bfloat16()) + f(c)) * f(d) - f(a)).bfloat16()
    nid = next(
        m.meta["roundoff_id"] for m in capture(fn, *xs).graph.nodes if "mul" in str(m.target)
    )
    base = get_policy("inductor-gpu" if device == "cuda" else "inductor-cpu")
    pol = dataclasses.replace(base, node_overrides={nid: OpOverride(round_result=True)})
    out = roundoff.compile(fn, policy=pol)(*xs)
    plain = torch.compile(fn)(*xs)
    return {
        "override": f"{nid}: round_result=True on {base.name}",
        "mismatch_vs_oracle": bits_differ(out, oracle),
        "plain_vs_oracle": bits_differ(plain, oracle),
        "pass": same_bits(out, oracle),
    }


# ---- fidelity of the inductor-gpu preset ------------------------------------------------------

_UNARY = ("exp_tanh", "tanh", "sigmoid", "neg", "scalar_mul", "scalar_add", "rsqrt_abs")
_BINARY = ("add", "sub", "mul", "div_safe", "where_gt")


_OPS: dict[str, Callable[[Any, Any, Any], torch.Tensor]] = {
    "add": lambda a, b, s: a + b,
    "sub": lambda a, b, s: a - b,
    "mul": lambda a, b, s: a * b,
    "div_safe": lambda a, b, s: a / (b.abs() + 1),
    "where_gt": lambda a, b, s: torch.where(a > b, a, b),
    "exp_tanh": lambda a, b, s: torch.exp(torch.tanh(a)),
    "tanh": lambda a, b, s: torch.tanh(a),
    "sigmoid": lambda a, b, s: torch.sigmoid(a),
    "neg": lambda a, b, s: -a,
    "scalar_mul": lambda a, b, s: a * s,
    "scalar_add": lambda a, b, s: a + s,
    "rsqrt_abs": lambda a, b, s: torch.rsqrt(a.abs() + 1),
}
# A failing section or graph is a finding to record, not a reason to lose the other results.
_RECORDED = (
    RuntimeError,
    ValueError,
    TypeError,
    KeyError,
    AssertionError,
    ImportError,
    NotImplementedError,
)


def random_pointwise(seed: int) -> tuple[Callable, int, list[tuple]]:
    """A random chain of pointwise ops over 2-4 inputs; returns (fn, number of inputs, op list)."""
    rng = random.Random(seed)
    n_in = rng.randint(2, 4)
    steps = []
    for k in range(rng.randint(3, 9)):
        avail = n_in + k
        if rng.random() < 0.65:
            steps.append((rng.choice(_BINARY), rng.randrange(avail), rng.randrange(avail), None))
        else:
            steps.append(
                (rng.choice(_UNARY), rng.randrange(avail), None, round(rng.uniform(-3, 3), 3))
            )

    def fn(*xs: torch.Tensor) -> torch.Tensor:
        vals = list(xs)
        for op, i, j, s in steps:
            a, b = vals[i], vals[j] if j is not None else None
            vals.append(_OPS[op](a, b, s))
        return vals[-1]

    return fn, n_in, steps


def random_inputs(seed: int, n_in: int, device: str) -> tuple[torch.Tensor, ...]:
    """The inputs of random graph `seed`: bf16 normals times 4, made on the CPU, moved to `device`."""
    g = torch.Generator().manual_seed(seed)
    return tuple(
        (torch.randn(1 << 16, generator=g) * 4).to(torch.bfloat16).to(device) for _ in range(n_in)
    )


def prediction(
    n_random: int, only: list[int] | None, progress: Callable[[dict[str, Any]], None]
) -> dict[str, Any]:
    """The random graphs' inductor-gpu emulation on the CPU vs real Inductor on CUDA (if present)."""
    gpu = "cuda" if torch.cuda.is_available() else None
    routes, rows = Routes(gpu), []
    for seed in only or range(n_random):
        fn, n_in, steps = random_pointwise(seed)
        try:
            row = predict_one(f"random:{seed}", fn, random_inputs(seed, n_in, "cpu"), routes)
        except _RECORDED as err:
            row = {"graph": f"random:{seed}", "error": f"{type(err).__name__}: {err}"[:300]}
        row["ops"] = [s[0] for s in steps]
        rows.append(row)
        progress({"graphs": rows, "partial": True})
    out: dict[str, Any] = {"graphs": rows, "errors": sum("error" in r for r in rows)}
    if gpu is None:
        out["skipped"] = "no CUDA: real Inductor on the GPU not run; the CPU emulation ran alone"
    return out


def bits_main(args: argparse.Namespace, results: dict[str, Any], only: list[int]) -> int:
    """``--bits``: fidelity, prediction and the op sweep, written as gpu-validation-bits.{json,md}."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    stem = args.stem or ("gpu-validation-bits" if device == "cuda" else "gpu-validation-bits-cpu")

    def write() -> None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"{stem}.json").write_text(json.dumps(results, indent=2, default=str))
        (args.out / f"{stem}.md").write_text(bits_markdown(results))

    def part(key: str) -> Callable[[dict[str, Any]], None]:
        return lambda value: (results.__setitem__(key, value), write())

    sections = [
        ("fidelity", fidelity, (device, args.random, args.transcendentals, only, part("fidelity"))),
        ("prediction", prediction, (args.random, only, part("prediction"))),
        ("op_sweep", lambda gpu: {"ops": op_sweep(gpu)}, ("cuda" if device == "cuda" else None,)),
    ]
    for key, fn, fargs in sections:
        _section(results, key, fn, *fargs)
        write()
    print(bits_markdown(results))
    return 0


def _emulate(program: Any, policy: Any, inputs: tuple, impl: str) -> torch.Tensor:
    from roundoff.execute import run_plan
    from roundoff.plan import plan

    return run_plan(plan(program, policy), inputs, transcendentals=impl)[0]


def fidelity_one(name: str, fn: Callable, inputs: tuple, policy: Any, impl: str) -> dict[str, Any]:
    """Bit-identical fraction of emulation vs real Inductor, and attribution of each difference."""
    from torch._inductor.utils import run_and_get_code

    from roundoff.capture import capture
    from roundoff.plan import plan
    from roundoff.policy import OpOverride

    # Every random graph shares one code object: without a reset, Dynamo's recompile limit (8)
    # silently falls back to eager after the 8th graph and "real Inductor" would be eager.
    torch._dynamo.reset()
    with torch.no_grad():
        real, code = run_and_get_code(torch.compile(fn), *inputs)
    program = capture(fn, *inputs)
    pl = plan(program, policy)
    emu = _emulate(program, policy, inputs, impl)
    differs = ~same_bits_mask(emu, real)  # bit patterns: -0.0 != +0.0, NaN == NaN
    row = {
        "graph": name,
        "elements": real.numel(),
        "fma_candidates": len(pl.fma_sites),
        # sites whose product is a division (Division.RECIPROCAL_MULTIPLY: fma(a, 1/b, ±c))
        "division_sites": sum("div" in pl.decisions[s.mul_id].op for s in pl.fma_sites),
        "identical": int(real.numel() - differs.sum()),
        "signed_zero_only": int((differs & (emu == real)).sum()),  # equal values, other sign of zero
        "explained": 0,
        "flips": [],
        "lowering": lowering(code),
    }
    unexplained = differs.clone()
    for site in pl.fma_sites if differs.any() else ():
        flip = {site.node_id: OpOverride(contract_fma=not site.contracted)}
        flipped = dataclasses.replace(policy, node_overrides={**policy.node_overrides, **flip})
        alt = _emulate(program, flipped, inputs, impl)
        fixed = unexplained & same_bits_mask(alt, real)
        row["flips"].append(
            {
                "site": site.node_id,
                "product": f"{site.mul_id} {pl.decisions[site.mul_id].op}",
                "contracted_in_plan": site.contracted,
                "elements_fixed": int(fixed.sum()),
            }
        )
        unexplained &= ~fixed
    row["explained_fma"] = int(differs.sum() - unexplained.sum())
    before = int(unexplained.sum())
    row["implementation"] = (
        attribute_impl(program, pl, policy, inputs, impl, real, unexplained) if before else []
    )
    row["explained_implementation"] = before - int(unexplained.sum())
    before = int(unexplained.sum())
    row["contraction_outside_plan"] = (
        attribute_contraction(fn, program, pl, policy, inputs, impl, real, unexplained)
        if before
        else {}
    )
    row["explained_contraction_outside_plan"] = before - int(unexplained.sum())
    row["explained"] = int(differs.sum() - unexplained.sum())
    row["unexplained"] = int(unexplained.sum())
    row["identical_fraction"] = row["identical"] / max(1, row["elements"])
    return row


def _div_config() -> dict[str, Any]:
    """Inductor's division/FTZ/libdevice options on this torch (absent: None)."""
    from torch._inductor import config

    en = getattr(config, "eager_numerics", None)
    names = ("division_rounding", "disable_ftz", "use_pytorch_libdevice")
    return {n: getattr(en, n, None) for n in names} if en is not None else {"eager_numerics": None}


def fidelity(
    device: str,
    n_random: int,
    impl: str,
    only: list[int] | None = None,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    from roundoff.policy import get_policy

    policy = get_policy("inductor-gpu" if device == "cuda" else "inductor-cpu")
    rows = []
    for zname in () if only else ("bf16-chain", "fma-cancel-vector"):
        work = get_workload(zname)
        inputs = tuple(t.detach().to(device) for t in work.make_inputs())
        rows.append(fidelity_one(f"zoo:{zname}", work.build(), inputs, policy, impl))
    for seed in only or range(n_random):
        fn, n_in, steps = random_pointwise(seed)
        inputs = random_inputs(seed, n_in, device)
        try:
            row = fidelity_one(f"random:{seed}", fn, inputs, policy, impl)
        except _RECORDED as err:
            row = {"graph": f"random:{seed}", "error": f"{type(err).__name__}: {err}"[:300]}
        row["ops"] = [s[0] for s in steps]
        rows.append(row)
        if progress is not None:  # partial results survive a timeout
            progress(
                {"policy": policy.name, "transcendentals": impl, "graphs": rows, "partial": True}
            )
    ok = [r for r in rows if "error" not in r]
    no_fma = [r for r in ok if r["fma_candidates"] == 0]
    return {
        "policy": policy.name,
        "transcendentals": impl,
        "graphs": rows,
        "no_fma_graphs": len(no_fma),
        "no_fma_all_identical": all(r["identical_fraction"] == 1.0 for r in no_fma),
        "all_differences_explained": all(r["unexplained"] == 0 for r in ok),
        "config": _div_config(),
        "errors": len(rows) - len(ok),
    }


def _write(results: dict[str, Any], out: Path, stem: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(results, indent=2, default=str))
    (out / f"{stem}.txt").write_text(summary(results))


def _section(results: dict, key: str, fn: Callable, *args: Any) -> None:
    t0 = time.perf_counter()
    try:
        results[key] = fn(*args)
    except _RECORDED as err:
        results[key] = {"error": f"{type(err).__name__}: {err}"[:500], "pass": False}
    results[key]["seconds"] = round(time.perf_counter() - t0, 1)
    print(f"[{key}] {json.dumps(results[key], default=str)[:1500]}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("bench/results"))
    ap.add_argument("--random", type=int, default=20, help="number of random pointwise graphs")
    ap.add_argument("--transcendentals", default="inductor", choices=("eager", "inductor"))
    ap.add_argument(
        "--only", default="", help="comma-separated random seeds: fidelity of those only"
    )
    ap.add_argument("--stem", default=None, help="output file stem (default by device)")
    ap.add_argument(
        "--bits",
        action="store_true",
        help="fidelity + prediction without the hardware + per-op sweep (gpu-validation-bits.*)",
    )
    args = ap.parse_args(argv)
    only = [int(v) for v in args.only.split(",") if v]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    results: dict[str, Any] = {
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "torch": torch.__version__,
        "command": " ".join(sys.argv),
    }
    try:
        import triton

        results["triton"] = triton.__version__
    except ImportError:
        results["triton"] = None
    if args.bits:
        return bits_main(args, results, only)
    stem = args.stem or ("gpu_validation" if device == "cuda" else "gpu_validation_cpu_dryrun")
    sections = (
        []
        if only
        else [
            ("fma_cancel", fma_cancel, (device,)),
            ("softmax_backward", softmax_backward, (device,)),
            ("bf16_chain", bf16_chain, (device,)),
            ("kept_rounding_override", kept_rounding_override, (device,)),
        ]
    )
    sections += [
        (
            "fidelity",
            fidelity,
            (
                device,
                args.random,
                args.transcendentals,
                only,
                lambda part: _write({**results, "fidelity": part}, args.out, stem),
            ),
        ),
    ]
    for key, fn, fargs in sections:  # written after each section: a timeout keeps what finished
        _section(results, key, fn, *fargs)
        _write(results, args.out, stem)
    print(summary(results))
    return 0


def summary(r: dict[str, Any]) -> str:
    lines = [f"device {r['device']}  torch {r['torch']}  triton {r['triton']}"]
    fc, sm, ch, fi = (
        r.get(k, {}) for k in ("fma_cancel", "softmax_backward", "bf16_chain", "fidelity")
    )
    lines.append(
        f"exp(x*s - x*s): eager {fc.get('eager')}  plain compile {fc.get('plain_compile')}  "
        f"roundoff eager {fc.get('roundoff_eager')}  {fc.get('error', '')}"
    )
    lines.append(
        f"softmax backward: trials with NaN plain {sm.get('plain_trials_with_nan')}/13, "
        f"roundoff {sm.get('roundoff_trials_with_nan')}/13  {sm.get('error', '')}"
    )
    lines.append(
        f"bf16 chain mismatches vs eager: plain {ch.get('plain_mismatch')}, roundoff "
        f"{ch.get('roundoff_mismatch')} of {ch.get('elements')}  {ch.get('error', '')}"
    )
    ko = r.get("kept_rounding_override", {})
    lines.append(
        f"node override {ko.get('override')}: mismatches vs hand-cast oracle "
        f"{ko.get('mismatch_vs_oracle')} (plain compile {ko.get('plain_vs_oracle')})  {ko.get('error', '')}"
    )
    lines.append(
        f"fidelity ({fi.get('policy')}, transcendentals={fi.get('transcendentals')}): "
        f"{fi.get('error', '')}"
    )
    for g in fi.get("graphs", []):
        if "error" in g:
            lines.append(f"  {g['graph']:>22}  ERROR {g['error'][:120]}")
            continue
        lines.append(
            f"  {g['graph']:>22}  identical {g['identical_fraction']:.6f}  fma candidates "
            f"{g['fma_candidates']} ({g.get('division_sites', 0)} division)  differing "
            f"{g['elements'] - g['identical']}  explained "
            f"{g['explained']} (fma site {g.get('explained_fma')}, op implementation "
            f"{g.get('explained_implementation')}, contraction outside the plan "
            f"{g.get('explained_contraction_outside_plan')})  unexplained {g['unexplained']}"
        )
        for imp in g.get("implementation", []):
            if imp["elements_fixed"]:
                lines.append(
                    f"      {imp['node']} {imp['op']}: {imp['elements_fixed']} element(s); "
                    f"evidence {json.dumps(imp.get('evidence'))}"
                )
        co = g.get("contraction_outside_plan") or {}
        if co.get("elements_fixed"):
            lines.append(
                f"      FP contraction outside the plan's FMA sites (real with Triton FP fusion "
                f"off matches): {json.dumps(co)}"
            )
    lines.append(
        f"  graphs without FMA candidates all identical: {fi.get('no_fma_all_identical')}; "
        f"every difference explained: {fi.get('all_differences_explained')}"
    )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
