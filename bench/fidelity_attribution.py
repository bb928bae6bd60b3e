"""Attribution of elements where roundoff's emulation and real Inductor differ (GPU validation).

Used by ``bench/gpu_validation.py``. A recorded FMA site may have a division as its product
(``Division.RECIPROCAL_MULTIPLY``: ``FmaSite.mul_id`` names the ``div``); flipping it (the caller's
``contract_fma`` override on the add/sub) and switching every site off (below) treat it as any
other site. Two attributions beyond recorded FMA sites:

- an *op implementation* difference: the emulation re-run with one suspect node (division and
  friends, which eager computes correctly rounded and Triton lowers to ``div.full.f32``) evaluated by
  Inductor's own kernel matches real Inductor at the element; the evidence is the node's fp32
  operands there, torch's result, Inductor's and the correctly rounded one;
- a *contraction outside the plan*: real Inductor with Triton's FP fusion off (nothing else changed)
  matches the emulation with no contraction at all at the element.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from typing import Any

import torch

from roundoff.numerics import same_bits_mask

# IEEE ops that are one correctly rounded operation in eager but that a backend may lower to an
# approximation (Triton's fp32 ``/`` is PTX ``div.full.f32``; reciprocal is ``1 / x``): suspects
# for an implementation difference. rsqrt and the transcendentals already run through Inductor's
# kernels in the emulator's ``transcendentals="inductor"`` mode.
_APPROX_SUSPECTS = ("div", "reciprocal", "sqrt", "rsqrt", "true_divide")
# Kernel-source patterns recorded per graph (how the op was lowered).
_LOWERING_PATTERNS = (
    "div_rn",
    " / ",
    "libdevice.rsqrt",
    "tl.rsqrt",
    "sqrt_rn",
    "libdevice.sqrt",
    "tl.sqrt(",
)


def lowering(code: list[str]) -> dict[str, Any]:
    lines = [ln.strip() for src in code for ln in src.splitlines() if "tmp" in ln and "=" in ln]
    found = {p: [ln for ln in lines if p in ln][:4] for p in _LOWERING_PATTERNS}
    return {p: v for p, v in found.items() if v}


def _bits(x: float) -> str:
    return "0x" + struct.pack(">f", x).hex()


def _impl_evidence(
    program: Any, pl: Any, inputs: tuple, impl: str, node_id: str, element: int
) -> dict[str, Any]:
    """The suspect node's fp32 operands at `element` (emulated values), torch's result, Inductor's
    kernel's result and the correctly rounded quotient/root (fp64 then one rounding to fp32:
    exact for one fp32 division or sqrt, as fp64 has more than 2*24+2 bits)."""
    from roundoff.execute import TranscendentalImpl
    from roundoff.execute.run import run_keep

    _, env = run_keep(pl, inputs, transcendentals=impl)
    node = next(n for n in pl.program.graph.nodes if n.meta.get("roundoff_id") == node_id)

    def at(a: Any) -> Any:
        if isinstance(a, torch.fx.Node):
            v = env[a][0]
            return v.reshape(-1)[element if v.numel() > 1 else 0].float().reshape(1)
        return a

    args = tuple(at(a) for a in node.args)
    ops = [float(a) for a in args if isinstance(a, (torch.Tensor, float, int))]
    torch_out = float(node.target(*args))
    ind_out = float(TranscendentalImpl("inductor")(node.target, args, {}))
    name = str(node.target)
    exact = None
    if "div" in name and len(ops) == 2:
        exact = float(torch.tensor(ops[0], dtype=torch.float64) / ops[1])
    elif "sqrt" in name and ops:
        r = torch.tensor(ops[0], dtype=torch.float64).sqrt()
        exact = float(1 / r if "rsqrt" in name else r)
    cr = float(torch.tensor(exact).float()) if exact is not None else None
    return {
        "node": node_id,
        "op": name,
        "element": element,
        "operands_fp32": [f"{v!r} ({_bits(v)})" for v in ops],
        "torch_result": f"{torch_out!r} ({_bits(torch_out)})",
        "inductor_kernel_result": f"{ind_out!r} ({_bits(ind_out)})",
        "correctly_rounded": None if cr is None else f"{cr!r} ({_bits(cr)})",
    }


def attribute_impl(
    program: Any,
    pl: Any,
    policy: Any,
    inputs: tuple,
    impl: str,
    real: torch.Tensor,
    unexplained: torch.Tensor,
) -> list[dict[str, Any]]:
    """For each suspect node, re-run the emulation with that node alone evaluated by Inductor's
    kernel; elements that then match real Inductor are attributed to that op's implementation."""
    from roundoff.execute.run import run_plan
    from roundoff.ops.classes import OpClass

    rows = []
    for nid, d in pl.decisions.items():
        if not unexplained.any():
            break
        if d.op_class is OpClass.POINTWISE_TRANSCENDENTAL and impl == "inductor":
            continue  # already Inductor's kernel
        if not any(s in str(d.op) for s in _APPROX_SUSPECTS):
            continue
        swapped = dataclasses.replace(d, op_class=OpClass.POINTWISE_TRANSCENDENTAL)
        alt_plan = dataclasses.replace(pl, decisions={**pl.decisions, nid: swapped})
        alt = run_plan(alt_plan, inputs, transcendentals="inductor")[0]
        fixed = unexplained & same_bits_mask(alt, real)
        row: dict[str, Any] = {"node": nid, "op": d.op, "elements_fixed": int(fixed.sum())}
        if fixed.any():
            el = int(fixed.reshape(-1).nonzero()[0])
            row["evidence"] = _impl_evidence(program, pl, inputs, impl, nid, el)
        rows.append(row)
        unexplained &= ~fixed
    return rows


def _real_without_fp_fusion(fn: Callable, inputs: tuple) -> tuple[torch.Tensor | None, int]:
    """Real Inductor output with Triton's FP fusion (ptxas contraction) off and nothing else
    changed: every generated kernel's ``triton_meta`` is edited before Triton compiles it (the FX
    graph cache off, so the kernels are generated anew). Returns (output, kernels edited); (None, 0)
    without Triton kernels (CPU)."""
    from unittest import mock

    from torch._inductor.async_compile import AsyncCompile

    original = AsyncCompile.triton
    edited = [0]

    def no_fusion(self: Any, kernel_name: str, source_code: str, *a: Any, **k: Any) -> Any:
        for on in ("'enable_fp_fusion': True", '"enable_fp_fusion": True'):
            if on in source_code:
                edited[0] += 1
                source_code = source_code.replace(on, on.replace("True", "False"))
        return original(self, kernel_name, source_code, *a, **k)

    import torch._functorch.config as functorch_config
    from torch._inductor.codecache import PyCodeCache

    torch._dynamo.reset()
    PyCodeCache.cache_clear()  # else the same wrapper source is served from memory, unedited
    with (
        mock.patch.object(AsyncCompile, "triton", no_fusion),
        torch._inductor.config.patch({"fx_graph_cache": False, "compile_threads": 1}),
        functorch_config.patch({"enable_autograd_cache": False}),
        torch.no_grad(),
    ):
        out = torch.compile(fn)(*inputs)
    torch._dynamo.reset()
    PyCodeCache.cache_clear()
    return (out, edited[0]) if edited[0] else (None, 0)


def attribute_contraction(
    fn: Callable,
    program: Any,
    pl: Any,
    policy: Any,
    inputs: tuple,
    impl: str,
    real: torch.Tensor,
    unexplained: torch.Tensor,
) -> dict[str, Any]:
    """Elements where real Inductor with Triton FP fusion off matches the emulation with every
    recorded FMA site uncontracted and every suspect op on Inductor's kernel: a contraction ptxas
    made that the plan records no FMA site for (e.g. into the multiply inside ``div.full.f32``)."""
    from roundoff.execute.run import run_plan
    from roundoff.ops.classes import OpClass
    from roundoff.policy import OpOverride

    nofusion, edited = _real_without_fp_fusion(fn, inputs)
    if nofusion is None:
        return {"kernels_edited": 0, "elements_fixed": 0}
    off = {s.node_id: OpOverride(contract_fma=False) for s in pl.fma_sites}
    from roundoff.plan import plan as make_plan

    pl_off = make_plan(
        program, dataclasses.replace(policy, node_overrides={**policy.node_overrides, **off})
    )
    swapped = {
        nid: dataclasses.replace(d, op_class=OpClass.POINTWISE_TRANSCENDENTAL)
        for nid, d in pl_off.decisions.items()
        if any(s in str(d.op) for s in _APPROX_SUSPECTS)
    }
    pl_off = dataclasses.replace(pl_off, decisions={**pl_off.decisions, **swapped})
    emu_off = run_plan(pl_off, inputs, transcendentals="inductor")[0]
    fixed = unexplained & same_bits_mask(nofusion, emu_off) & ~same_bits_mask(nofusion, real)
    row: dict[str, Any] = {"kernels_edited": edited, "elements_fixed": int(fixed.sum())}
    if fixed.any():
        el = int(fixed.reshape(-1).nonzero()[0])
        row["element"] = el
        row["real"] = _bits(float(real.reshape(-1)[el]))
        row["real_fp_fusion_off"] = _bits(float(nofusion.reshape(-1)[el]))
        row["emulated_no_contraction"] = _bits(float(emu_off.reshape(-1)[el]))
    unexplained &= ~fixed
    return row
