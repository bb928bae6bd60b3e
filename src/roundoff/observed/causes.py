"""Why an observed buffer can differ from the emulated policy's value: a diagnosis from the kernel's
kind, the ops Inductor fused into it and the plan (`emulation_cause`), not a proof."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import torch
import torch.fx

from roundoff.capture.program import NODE_ID, Program, base_id
from roundoff.observed.buffers import Observed, narrow_float
from roundoff.ops import classify, short_name
from roundoff.ops.classes import OpClass
from roundoff.plan.model import Plan
from roundoff.policy.model import FusionModel

_ORDERED = frozenset(  # classes whose result depends on summation order
    {OpClass.REDUCTION, OpClass.MATMUL, OpClass.CONVOLUTION, OpClass.ATTENTION, OpClass.NORMALIZATION}
)



def unrounded_in_kernel(
    program: Program, the_plan: Plan, obs: Observed, observed: Mapping[str, Observed]
) -> str | None:
    """A value Inductor's kernel keeps unrounded (fp32, in registers) where the plan reads it rounded
    to bf16/fp16: an operand the same kernel call also stores rounded (SiLU stored for the backward
    and multiplied unrounded), or a node Inductor fused into this buffer that the plan reads across
    one of its own fusion boundaries (a recomputed ``cos.to(bf16)``). The value's node, or None."""
    fused = set(obs.fused)
    nodes = {n.meta.get(NODE_ID): n for n in program.nodes()}
    loaded = _loaded_by_reductions(the_plan)
    rounded = _read_rounded(the_plan)
    for nid in obs.fused:
        for p in nodes[nid].all_input_nodes if nid in nodes else ():
            pid = p.meta.get(NODE_ID)
            other = observed.get(pid)
            if (pid not in fused and other is not None and other.launch == obs.launch and narrow_float(other.value.dtype)
                    and not _moves_inputs(p) and not _copies(nodes[nid]) and (nid, pid) not in loaded
                    and (nid, pid) in rounded):
                return f"{short_name(p.target)} ({pid})"
    for d in the_plan.decisions.values():
        if base_id(d.node_id) not in fused:
            continue
        for rid in d.rounded_inputs:
            r = the_plan.decisions.get(rid)
            rounds = r is not None and narrow_float(r.storage_dtype) and r.compute_dtype != r.storage_dtype
            if (base_id(rid) in fused and rounds and not _moves_inputs(nodes.get(base_id(rid)))
                    and not _copies(nodes.get(base_id(d.node_id)))):
                node = nodes.get(base_id(rid))  # (trial 99 read "keeps prims.convert_element_type.default")
                return f"{short_name(node.target) if node is not None else r.op.split('.')[-2]} ({base_id(rid)})"
    return None


def _read_rounded(the_plan: Plan) -> set[tuple[str, str]]:
    """(reader, value) pairs, by captured id, where the plan reads the value rounded to its storage format
    in every kernel computing the reader (its per-kernel copies included): across one of its fusion
    boundaries, or a value it rounds as it is produced. A pair read unrounded somewhere (a residual sum
    Triton's RMSNorm kernel stores and squares in fp32, its backward's copies loading it) is no sign of an
    unmodelled decision."""
    rounds = {base_id(d.node_id) for d in the_plan.decisions.values() if d.rounds_result}
    reads: dict[tuple[str, str], bool] = {}
    for n in the_plan.program.graph.nodes:
        d = the_plan.decisions.get(n.meta.get(NODE_ID, ""))
        if d is None:
            continue
        reader = base_id(d.node_id)
        for p in n.all_input_nodes:
            pid = p.meta.get(NODE_ID, "")
            key = (reader, base_id(pid))
            reads[key] = reads.get(key, True) and (pid in d.rounded_inputs or base_id(pid) in rounds)
    return {key for key, rounded in reads.items() if rounded}


def _loaded_by_reductions(the_plan: Plan) -> set[tuple[str, str]]:
    """(reader, value) pairs, by captured id, where the plan has a C++ reduction kernel load a value it
    reads rounded: the loop-range rule (`roundoff.plan.loops`, measured against real torch.compile) says
    the value's loop nest is not the reduction's, so the same kernel call storing it is no sign it was read
    unrounded (observe's Llama table: an RMSNorm's sum of squares of the stored residual, a flat loop)."""
    if the_plan.policy.fusion is not FusionModel.POINTWISE_CPP:
        return set()
    reductions = {g.id for g in the_plan.groups if g.kind == "reduction"}
    return {(base_id(d.node_id), base_id(r)) for d in the_plan.decisions.values() if d.group in reductions
            for r in d.rounded_inputs}


def _moves_inputs(node: torch.fx.Node | None) -> bool:
    """`node` only moves values of the program's inputs (an embedding lookup of a bf16 weight): its
    value is exact in its format, so rounding it changes nothing."""
    return _copies(node) and all(p.op == "placeholder" for p in _float_operands(node))


def _copies(node: torch.fx.Node | None) -> bool:
    """`node` moves its operand's values into a result of the same dtype (a clone, an expand, a cat): its
    result is the operand rounded to that format whether it reads the operand rounded or unrounded, so a
    kernel keeping the operand unrounded cannot change it (the H100 Llama's ``repeat_kv`` clone of the
    rotary ``k``, bench/results/gpu-session30/)."""
    if node is None or node.op != "call_function" or classify(node.target).op_class is not OpClass.DATA_MOVEMENT:
        return False
    dtype = getattr(node.meta.get("val"), "dtype", None)
    return all(p.meta["val"].dtype == dtype for p in _float_operands(node))


def _float_operands(node: torch.fx.Node) -> list[torch.fx.Node]:
    return [p for p in node.all_input_nodes if getattr(p.meta.get("val"), "is_floating_point", lambda: False)()]


def local_region(
    program: Program, nid: str, obs: Observed, observed: Mapping[str, Observed],
    nodes: Mapping[str, torch.fx.Node] | None = None,
) -> tuple[str, ...]:
    """The Program nodes the emulation computes for buffer `obs` at `nid` from the substituted values:
    the nodes Inductor fused into it plus every ancestor of `nid` reachable without crossing another
    observed node or a graph input. Inductor's origins of a stored buffer can omit the computation
    (a transposed copy whose source buffer was fused away: the H200 Llama's RoPE backward), the
    region does not. `nodes`: the program's {id: call_function node}, where the caller has it."""
    if nodes is None:
        nodes = {n.meta.get(NODE_ID): n for n in program.nodes() if n.op == "call_function"}
    region = dict.fromkeys(obs.fused)
    stack, seen = [nid], set()
    while stack:
        i = stack.pop()
        if i in seen or i not in nodes:
            continue
        seen.add(i)
        region[i] = None
        stack += [pid for p in nodes[i].all_input_nodes if (pid := p.meta.get(NODE_ID)) not in observed]
    return tuple(region)


#: what a GEMM or convolution kernel computes as its own value: differences there are summation order
_GEMM_OWN = (OpClass.MATMUL, OpClass.CONVOLUTION, OpClass.ATTENTION)


def emulation_cause(
    program: Program, nid: str, obs: Observed, the_plan: Plan | None = None,
    observed: Mapping[str, Observed] | None = None, region: tuple[str, ...] | None = None,
) -> str:
    """Why the emulated value can differ from the kernel's (a diagnosis from the kernel's kind, the
    ops it fused and the plan, not a proof): ``"unmodelled decision: ..."`` where the kernel keeps a
    value unrounded that the plan rounds (`unrounded_in_kernel`), else ``"summation order"`` for a
    reduction, matmul or normalisation, ``"transcendental implementation"`` for exp/erf/sin/...
    (both: ``"summation order or transcendental implementation"``), else ``"unmodelled decision"``
    (a rewrite or rounding the plan does not model). A GEMM buffer holding a node that is not a
    matmul, convolution or attention (Inductor's ``addmm`` for ``mm + add``: the add in fp32 before
    the one rounding) is an unmodelled decision unless the plan computes it in that GEMM too (``NodeDecision.gemm``), as is a fallback op's buffer (``torch.ops.aten.x``: an
    attention Inductor's pattern rewrite made); an extern kernel's own cause is never a
    transcendental (its origins list the ops that made its operands). `region`: `local_region` of the buffer, where the caller has it."""
    nodes = {n.meta.get(NODE_ID): n for n in program.nodes() if n.op == "call_function"}
    extern = obs.kind in ("matmul", "extern", "template")
    if observed is not None and not extern:  # judge what the emulation computes for this buffer
        obs = replace(obs, fused=region if region is not None else local_region(program, nid, obs, observed, nodes))
    classes = {classify(nodes[i].target).op_class for i in obs.fused if i in nodes}
    if obs.kernel.startswith("torch.ops."):  # a fallback op Inductor calls for several ops (its pattern rewrite)
        return (f"unmodelled decision: Inductor calls {obs.kernel.split('.')[3]} for these ops (a pattern rewrite: "
                "its own kernel, summation order and masking)")
    in_gemm = the_plan is not None and getattr(the_plan.decisions.get(nid), "gemm", None) is not None
    if extern and nid in nodes and classify(nodes[nid].target).op_class not in _GEMM_OWN and not in_gemm:
        op = short_name(nodes[nid].target)
        return f"unmodelled decision: Inductor computes {op} ({nid}) inside the GEMM, before its one rounding"
    ordered = obs.kind != "pointwise" or bool(classes & _ORDERED)
    transcendental = OpClass.POINTWISE_TRANSCENDENTAL in classes and not extern
    # a GEMM reads its operands from memory: only a generated kernel can keep a value in registers
    inside = the_plan is not None and not extern
    kept = unrounded_in_kernel(program, the_plan, obs, observed or {}) if inside else None
    if nid in nodes and not extern and _adds_atomically(nodes[nid]):
        also = f"; perhaps also the kernel keeps {kept} unrounded where the plan rounds it" if kept else ""
        return ("summation order: the kernel's threads add into the buffer atomically, in no fixed order (on CPU, "
                f"OMP_NUM_THREADS=1 adds them in eager's order){also}")
    if kept is not None:
        also = "; also summation order" if ordered else ""
        return f"unmodelled decision: the kernel keeps {kept} unrounded where the plan rounds it{also}"
    if ordered and transcendental:
        return "summation order or transcendental implementation"
    if ordered:
        return "summation order"
    return "transcendental implementation" if transcendental else "unmodelled decision"


def _adds_atomically(node: torch.fx.Node) -> bool:
    """An accumulating scatter (``index_put(accumulate=True)``, ``scatter_add``, ``index_add``): Inductor's
    kernel adds each value into the buffer with an atomic add, from several threads on a CPU of more than one
    (measured, torch 2.13, 2 threads: a bf16 gather's gradient differs from eager's sequential sum in 1027 of
    6400 elements, with one thread in none; trial 91 read it as an unmodelled decision)."""
    name = short_name(node.target)
    if name in ("index_put", "_unsafe_index_put", "index_put_", "_unsafe_index_put_"):
        accumulate = node.args[3] if len(node.args) > 3 else node.kwargs.get("accumulate", False)
        return bool(accumulate)
    return name in ("scatter_add", "index_add", "scatter_add_", "index_add_")


#: A differing element is a near tie when fp64 lies within this fraction of an ulp of the midpoint between
#: the kernel's value and the emulation's: values computed in fp32 that differ in their last bits (2**-13
#: of a 16-bit ulp each) round to either neighbour there (measured: a DiT block's fp16 backward, trial 72,
#: 7 elements within 0.0025 ulp; a rounding decision the plan does not model puts them up to 0.7 ulp away).
NEAR_TIE = 2.0**-6


def near_ties(value: torch.Tensor, emulated: torch.Tensor, oracle: torch.Tensor) -> float | None:
    """Where `value` (a bf16/fp16 buffer) differs from `emulated` only in elements one ulp apart whose fp64
    value (`oracle`, from the same operands) lies within `NEAR_TIE` ulp of the midpoint between the two: the
    largest such distance, in ulps; else None (no difference, another dtype, or a difference a tie does not
    explain). There the two fp32 values rounded differ in their last bits (the order of the kernel's fp32
    operations or an op's implementation), not in a rounding decision. Where the compiler may contract an
    FMA the plan did not place (Triton), the caller does not ask: that is a decision."""
    if value.dtype not in (torch.bfloat16, torch.float16) or emulated.dtype != value.dtype:
        return None
    ints = value.view(torch.int16).int(), emulated.view(torch.int16).int()
    differ = ints[0] != ints[1]
    if not bool(differ.any()):
        return None
    v, e, o = value[differ].double(), emulated[differ].double(), oracle.reshape(value.shape)[differ].double()
    same_sign = (torch.sign(v) == torch.sign(e)) & (v != 0) & (e != 0)
    if not bool((same_sign & ((ints[0] - ints[1])[differ].abs() == 1) & v.isfinite() & e.isfinite()).all()):
        return None
    off = float(((o - (v + e) / 2).abs() / (v - e).abs()).max())
    return off if off <= NEAR_TIE else None
