"""Prediction without the hardware (issue 16): the emulation of ``inductor-gpu`` run on the CPU
against real Inductor on CUDA, bit for bit, and every difference attributed to one op.

Used by ``bench/gpu_validation.py --bits``. Two parts:

- ``predict``: per random pointwise graph, real Inductor on CUDA, and roundoff's emulation of the
  ``inductor-gpu`` plan on the CPU with each CPU transcendental implementation ("eager": torch's CPU
  kernels; "triton-model": `roundoff.execute.triton_models`; "correctly-rounded": each op in fp64
  rounded once). Elements whose bit patterns differ
  (``roundoff.numerics.same_bits_mask``: -0.0 != +0.0, NaN == NaN) are attributed by re-running the
  CPU emulation with one op family's values taken from the GPU (`TranscendentalImpl("inductor",
  device="cuda", targets=...)`: that op alone evaluated by Inductor's CUDA kernel, every other op on
  the CPU); what no single family fixes but all together do is "several ops"; what the all-GPU run
  does not fix is not an implementation difference ("unexplained"). The first node (graph order)
  whose value differs between the CPU run and the all-GPU run is named, with the evidence at its
  first differing element: the fp32 operands, the CPU and GPU results, the correctly rounded one
  (the op in fp64, rounded once) and each side's distance from it in ulps.
- ``op_sweep``: per op, 2**20 fp32 inputs over its working range through Inductor's CUDA kernel,
  torch's CPU kernel and the triton-model (where one exists), each against the correctly rounded
  value: bit-identical fractions and worst ulps, and the lowering Inductor generated for it.

Without CUDA both parts run their CPU side and say what they skipped.
"""

from __future__ import annotations

import time
import types
from collections.abc import Callable
from typing import Any

import torch
import torch._inductor.config as inductor_config
from torch._inductor.utils import run_and_get_code

from roundoff.capture import capture
from roundoff.execute import TranscendentalImpl, run_keep, run_plan
from roundoff.numerics import bits_differ, same_bits_mask, ulp_distance
from roundoff.ops.classes import OpClass
from roundoff.plan import plan

aten = torch.ops.aten
_DIV_FAMILY = frozenset({aten.div.Tensor, aten.div.Scalar, aten.reciprocal.default})
CPU_IMPLS = ("eager", "triton-model", "correctly-rounded")
# Lowering patterns per family, searched in the generated Triton code.
_LOWERING = {
    "exp": ("libdevice.exp(", "tl_math.exp(", "tl.exp("),
    "log": ("libdevice.log(", "tl_math.log("),
    "tanh": ("libdevice.tanh(", "tl_math.tanh("),
    "sigmoid": ("tl.sigmoid(",),
    "rsqrt": ("libdevice.rsqrt(", "tl.rsqrt("),
    "erf": ("libdevice.erf(",),
    "sin": ("tl_math.sin(", "libdevice.sin("),
    "div": ("div_rn", " / "),
}


def family(target: Any) -> str:
    """Op family of an aten overload: its packet name, division and reciprocal together."""
    if target in _DIV_FAMILY:
        return "div"
    return getattr(getattr(target, "overloadpacket", None), "__name__", str(target))


def _targets(pl: Any) -> dict[str, frozenset]:
    """Families of the plan's ops that an implementation choice can change (transcendentals and the
    IEEE ops Triton approximates), with their overloads."""
    probe = TranscendentalImpl("inductor")
    out: dict[str, set] = {}
    for n in pl.program.graph.nodes:
        d = pl.decisions.get(n.meta.get("roundoff_id", ""))
        if d is not None and n.op == "call_function" and probe.handles(n.target, d.op_class):
            out.setdefault(family(n.target), set()).add(n.target)
        if d is not None and d.fma is not None and d.fma.contracted and "div" in pl.decisions[d.fma.mul_id].op:
            out.setdefault("div", set()).add(aten.reciprocal.default)  # R of a folded division
    return {k: frozenset(v | (_DIV_FAMILY if k == "div" else set())) for k, v in out.items()}


def _lowering(code: list[str], fam: str) -> list[str]:
    lines = [ln.strip() for src in code for ln in src.splitlines() if "tmp" in ln and "=" in ln]
    return [ln for ln in lines if any(p in ln for p in _LOWERING.get(fam, ()))][:2]


def _bits(v: float) -> str:
    return "0x" + torch.tensor([v], dtype=torch.float32).view(torch.int32).item().to_bytes(4, "big", signed=True).hex()


def _node_value(env: dict, node: Any) -> Any:
    v = env.get(node)
    return v[0] if isinstance(v, tuple) and v else v


def first_difference(pl: Any, inputs: tuple, cpu: TranscendentalImpl, gpu: TranscendentalImpl) -> dict | None:
    """The first node (graph order) whose value differs between the CPU run and the run with every
    implementation-dependent op on the GPU, with the evidence at its first differing element."""
    _, env_c = run_keep(pl, inputs, transcendentals=cpu)
    _, env_g = run_keep(pl, inputs, transcendentals=gpu)
    for n in pl.program.graph.nodes:
        a, b = _node_value(env_c, n), _node_value(env_g, n)
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or not a.is_floating_point():
            continue
        diff = ~same_bits_mask(a.reshape(-1), b.reshape(-1).to(a.device))
        if not diff.any():
            continue
        el = int(diff.nonzero()[0])
        ops = [_node_value(env_g, p) if isinstance(p, torch.fx.Node) else p for p in n.args]
        at = [float(o.reshape(-1)[el if o.numel() > 1 else 0]) if isinstance(o, torch.Tensor) else o for o in ops]
        c, g = float(a.reshape(-1)[el]), float(b.reshape(-1)[el])
        row = {"node": n.meta.get("roundoff_id"), "op": str(n.target), "family": family(n.target),
               "elements": int(diff.sum()), "element": el,
               "operands_fp32": [f"{v!r} ({_bits(v)})" if isinstance(v, float) else repr(v) for v in at],
               "cpu": f"{c!r} ({_bits(c)})", "gpu": f"{g!r} ({_bits(g)})"}  # fmt: skip
        try:  # the correctly rounded value: the op on the fp32 operands in fp64, rounded once
            args64 = [torch.tensor(v, dtype=torch.float64) if isinstance(v, float) else v for v in at]
            exact = n.target(*args64, **n.kwargs)
            cr = torch.as_tensor(exact, dtype=torch.float64).reshape(1)
            row["correctly_rounded"] = f"{float(cr.float())!r} ({_bits(float(cr.float()))})"
            row["ulps_cpu_gpu"] = [int(ulp_distance(torch.tensor([x], dtype=torch.float32), cr, "fp32")) for x in (c, g)]
        except (RuntimeError, TypeError, ValueError) as err:
            row["correctly_rounded"] = f"n/a ({type(err).__name__})"
        return row
    return None


class Routes:
    """Transcendental implementations shared across graphs (their compiled kernels are cached)."""

    def __init__(self, gpu: str | None) -> None:
        self.gpu = gpu
        self.cpu = {name: TranscendentalImpl(name) for name in CPU_IMPLS}
        self.all_gpu = TranscendentalImpl("inductor", device=gpu) if gpu else None
        self._one: dict[frozenset, TranscendentalImpl] = {}

    def one(self, targets: frozenset) -> TranscendentalImpl:
        if targets not in self._one:
            self._one[targets] = TranscendentalImpl("inductor", device=self.gpu, targets=targets)
        return self._one[targets]


def _fresh(fn: Callable, name: str) -> Callable:
    code = fn.__code__.replace(co_name=f"graph_{name.replace(':', '_')}")
    return types.FunctionType(code, fn.__globals__, code.co_name, fn.__defaults__, fn.__closure__)


def predict_one(name: str, fn: Callable, inputs: tuple, routes: Routes) -> dict[str, Any]:
    """One graph: CPU emulation of inductor-gpu vs real Inductor on CUDA (when there is one)."""
    program = capture(fn, *inputs)
    pl = plan(program, "inductor-gpu")
    emu = {k: run_plan(pl, inputs, transcendentals=impl)[0] for k, impl in routes.cpu.items()}
    row: dict[str, Any] = {"graph": name, "elements": emu["eager"].numel(), "families": sorted(_targets(pl))}
    row["cpu_impls_differ_from_eager"] = {k: bits_differ(emu["eager"], e) for k, e in emu.items() if k != "eager"}
    if routes.gpu is None:
        row["skipped"] = "no CUDA: real Inductor on the GPU not run"
        return row
    # a fresh code object per graph (Dynamo caches per code object, limit 8); the FX graph cache off
    # so that the generated code is there to read (Triton's own kernel cache still applies)
    with torch.no_grad(), inductor_config.patch(fx_graph_cache=False):
        real, code = run_and_get_code(torch.compile(_fresh(fn, name)), *(x.to(routes.gpu) for x in inputs))
    real = real.cpu()
    for k, e in emu.items():
        differs = ~same_bits_mask(e, real)
        row[f"differing_{k}"] = int(differs.sum())
        row[f"signed_zero_only_{k}"] = int((differs & (e == real)).sum())
    differs = ~same_bits_mask(emu["eager"], real)
    row["attribution"] = []
    if not differs.any():
        return row
    alt = run_plan(pl, inputs, transcendentals=routes.all_gpu)[0]
    fixed_all = differs & same_bits_mask(alt, real)
    union = torch.zeros_like(differs)
    for fam, targets in sorted(_targets(pl).items()):
        one = run_plan(pl, inputs, transcendentals=routes.one(targets))[0]
        fixed = differs & same_bits_mask(one, real)
        union |= fixed
        if fixed.any():
            row["attribution"].append({"family": fam, "elements": int(fixed.sum()), "lowering": _lowering(code, fam)})
    row["several_ops"] = int((fixed_all & ~union).sum())
    row["unexplained"] = int((differs & ~fixed_all).sum())
    row["first_difference"] = first_difference(pl, inputs, routes.cpu["eager"], routes.all_gpu)
    return row


# ---- per-op sweep -----------------------------------------------------------------------------

def _sweep_inputs(op: str, n: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(16)
    u = torch.rand(n, generator=g, dtype=torch.float64)
    ranges = {"exp": (-87.0, 88.0), "tanh": (-10.0, 10.0), "sigmoid": (-30.0, 30.0), "erf": (-4.0, 4.0),
              "sin": (-100.0, 100.0)}  # fmt: skip
    if op in ranges:
        lo, hi = ranges[op]
        return (u * (hi - lo) + lo).float()
    sign = torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0) if op == "reciprocal" else 1.0
    return (torch.exp2(u * 200 - 100) * sign).float()  # log, rsqrt, reciprocal: every binade


_SWEEP_OPS = {
    "exp": aten.exp.default, "log": aten.log.default, "tanh": aten.tanh.default,
    "sigmoid": aten.sigmoid.default, "rsqrt": aten.rsqrt.default, "erf": aten.erf.default,
    "sin": aten.sin.default, "reciprocal": aten.reciprocal.default,
}  # fmt: skip


def op_sweep(gpu: str | None, n: int = 1 << 20) -> list[dict[str, Any]]:
    """Per op: GPU Inductor kernel, CPU torch and triton-model against the correctly rounded value."""
    model = TranscendentalImpl("triton-model")
    rows = []
    for name, op in _SWEEP_OPS.items():
        t0 = time.perf_counter()
        x = _sweep_inputs(name, n)
        cr = op(x.double())
        sides = {"cpu_torch": op(x)}
        if model.handles(op, OpClass.POINTWISE_TRANSCENDENTAL):
            sides["triton_model"] = model(op, (x,), {})
        row: dict[str, Any] = {"op": name, "elements": n}
        if gpu is not None:
            one_op = _fresh(lambda t, op=op: op(t), f"sweep_{name}")
            with inductor_config.patch(fx_graph_cache=False):
                out, code = run_and_get_code(torch.compile(one_op, dynamic=False), x.to(gpu))
            sides["gpu_inductor"] = out.cpu()
            row["lowering"] = [ln.strip() for src in code for ln in src.splitlines() if "tmp1 = " in ln][:1]
        else:
            row["skipped"] = "no CUDA: Inductor's GPU kernel not run"
        for k, v in sides.items():
            u = ulp_distance(v, cr, "fp32")
            row[f"{k}_correctly_rounded"] = int((u == 0).sum()) / n
            row[f"{k}_max_ulps"] = int(u.max())
        if "gpu_inductor" in sides:
            for k in ("cpu_torch", "triton_model"):
                if k in sides:
                    row[f"{k}_equals_gpu"] = 1 - bits_differ(sides[k], sides["gpu_inductor"]) / n
        row["seconds"] = round(time.perf_counter() - t0, 1)
        rows.append(row)
    return rows


# ---- report ----------------------------------------------------------------------------------

def _fidelity_table(fi: dict[str, Any]) -> list[str]:
    lines = ["| graph | ops | identical bits | differing | of which only the sign of zero | explained (FMA / op impl / contraction) | unexplained |",
             "| --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for g in fi.get("graphs", []):
        if "error" in g:
            lines.append(f"| {g['graph']} | {' '.join(g.get('ops', []))} | ERROR {g['error'][:80]} | | | | |")
            continue
        lines.append(
            f"| {g['graph']} | {' '.join(g.get('ops', []))} | {g['identical_fraction']:.6f} | "
            f"{g['elements'] - g['identical']} | {g.get('signed_zero_only')} | {g.get('explained_fma')} / "
            f"{g.get('explained_implementation')} / {g.get('explained_contraction_outside_plan')} | {g['unexplained']} |"
        )
    return lines


def _prediction_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| graph | differing (CPU eager impl) | differing (triton-model) | differing (correctly-rounded) | op | elements fixed by the GPU's op | lowering | cause |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for r in rows:
        if "error" in r or "skipped" in r:
            continue
        base = f"| {r['graph']} | {r.get('differing_eager')} | {r.get('differing_triton-model')} | {r.get('differing_correctly-rounded')} "
        if not r.get("attribution") and not r.get("unexplained"):
            if r.get("differing_eager"):
                lines.append(base + "| - | - | - | no single op |")
            continue
        for a in r.get("attribution", []):
            cause = f"implementation of {a['family']}: CPU torch kernel vs Inductor's CUDA kernel"
            lines.append(base + f"| {a['family']} | {a['elements']} | `{'; '.join(a['lowering'])}` | {cause} |")
        for key, what in (("several_ops", "several ops together"), ("unexplained", "not an op implementation (unexplained)")):
            if r.get(key):
                lines.append(base + f"| - | {r[key]} | - | {what} |")
    return lines


def bits_markdown(res: dict[str, Any]) -> str:
    """gpu-validation-bits.md: the three tables of ``gpu_validation.py --bits``."""
    fi, pr, sw = res.get("fidelity", {}), res.get("prediction", {}), res.get("op_sweep", {})
    out = [f"# GPU validation in bits ({res['device']}, torch {res['torch']}, Triton {res['triton']})", "",
           f"Command: `{res['command']}`. Every figure compares bit patterns (`roundoff.numerics.same_bits_mask`): "
           "-0.0 and +0.0 differ, any NaN equals any NaN.", "",
           f"## 1. Emulation on the same device vs real Inductor ({fi.get('policy')}, transcendentals="
           f"{fi.get('transcendentals')})", ""]  # fmt: skip
    out += _fidelity_table(fi) if "graphs" in fi else [f"not run: {fi.get('error')}"]
    ok = [g for g in fi.get("graphs", []) if "error" not in g]
    out += ["", f"{sum(g['identical'] == g['elements'] for g in ok)} of {len(ok)} graphs bit-identical; "
            f"every difference explained: {fi.get('all_differences_explained')}.", "",
            "## 2. Prediction without the hardware: inductor-gpu emulated on the CPU vs real Inductor on CUDA", ""]  # fmt: skip
    rows = pr.get("graphs", [])
    if pr.get("skipped") or any("skipped" in r for r in rows):
        out.append(f"Skipped the comparison: {pr.get('skipped') or rows[0].get('skipped')}. The CPU emulation ran "
                   f"for {len(rows)} graphs; elements where another CPU implementation differs from eager's: "
                   + ", ".join(f"{k} {sum(r.get('cpu_impls_differ_from_eager', {}).get(k, 0) for r in rows)}"
                               for k in CPU_IMPLS[1:]) + ".")  # fmt: skip
    else:
        done = [r for r in rows if "error" not in r]
        for k in CPU_IMPLS:
            same = sum(r.get(f"differing_{k}") == 0 for r in done)
            out.append(f"- CPU transcendentals `{k}`: {same} of {len(done)} graphs bit-identical to the GPU; "
                       f"{sum(r.get(f'differing_{k}', 0) for r in done)} differing elements in all; "
                       f"{sum(r.get(f'signed_zero_only_{k}', 0) for r in done)} of them only in the sign of zero.")  # fmt: skip
        out += ["", *_prediction_table(done), "", "First differing node per graph (CPU eager impl vs every op on the GPU):", ""]
        for r in done:
            fd = r.get("first_difference")
            if fd:
                out.append(f"- {r['graph']}: {fd['node']} {fd['op']} ({fd['elements']} elements): operands "
                           f"{fd['operands_fp32']}, CPU {fd['cpu']}, GPU {fd['gpu']}, correctly rounded "
                           f"{fd.get('correctly_rounded')}, ulps (CPU, GPU) {fd.get('ulps_cpu_gpu')}")  # fmt: skip
    out += ["", "## 3. Per op: 2**20 fp32 inputs, each implementation against the correctly rounded value", "",
            "| op | lowering | CPU torch: correctly rounded / max ulp | GPU Inductor: correctly rounded / max ulp | "
            "triton-model: correctly rounded / max ulp | CPU torch = GPU | triton-model = GPU |",
            "| --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for r in sw.get("ops", []):
        def cell(k: str) -> str:
            return f"{r[k + '_correctly_rounded']:.4f} / {r[k + '_max_ulps']}" if k + "_max_ulps" in r else "-"

        eq = [f"{r[k]:.6f}" if k in r else "-" for k in ("cpu_torch_equals_gpu", "triton_model_equals_gpu")]
        low = "; ".join(r.get("lowering", [])) or r.get("skipped", "")
        out.append(f"| {r['op']} | `{low}` | {cell('cpu_torch')} | {cell('gpu_inductor')} | {cell('triton_model')} | {eq[0]} | {eq[1]} |")
    return "\n".join(out) + "\n"
