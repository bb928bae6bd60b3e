"""Plain-words findings of a `CheckResult`, in the order a user should read them."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.fx

from roundoff.analyze.culprits import (
    amplifier,
    amplifies_fp32_rounding,
    ancestors,
    error_source,
    path_cause,
    reported_operands,
    upstream,
    value_maker,
)
from roundoff.analyze.hazards import ACCUMULATION_HAZARDS, fma_can_err, product_words
from roundoff.analyze.output_sentences import output_sentences
from roundoff.analyze.result import CheckResult, NodeReport
from roundoff.analyze.selections import COMPARISONS, is_selection
from roundoff.analyze.verdict import EXCESS_LIMIT, OVERFLOW_HAZARDS, nan_or_inf, unit_roundoff
from roundoff.capture.program import (
    MADE_FROM,
    NODE_ID,
    Program,
    base_id,
    multi_output_parent,
    node_source,
    value_holders,
)
from roundoff.execute.native_kernels import BATCH_NORMS, LOSSES, accumulates_in_storage
from roundoff.numerics import get_format
from roundoff.ops.classes import OpClass
from roundoff.plan.model import Plan
from roundoff.plan.saved import forward_ids


def _at(r: NodeReport) -> str:
    """A node report as the findings name it: `` `op` (id at file:line)``, ``, in the backward`` added for a
    backward node, whose line is the forward code it differentiates (trial 78: an underflowing backward
    ``add`` named at a ``max`` of the forward, with no word of the backward)."""
    return f"`{r.op}` ({r.node_id}{' at ' + r.source if r.source else ''}{', in the backward' if r.backward else ''})"


def _node_at(n: torch.fx.Node) -> str:
    """A graph node as the findings name it: `` `op` (id at file:line)``; a node a decomposition made
    names the op the user wrote (`` `convert_element_type` (n10.3, the value of `mean` n10, at ...)``)."""
    nid = str(n.meta.get(NODE_ID, n.name))
    return f"`{_op(n)}` ({nid}{_made_from(n, nid)}{' at ' + s if (s := node_source(n)) else ''})"


def _made_from(n: torch.fx.Node, nid: str) -> str:
    """``, the value of `mean` n10`` (the last node its decomposition made) or ``, part of ...``; else ""."""
    made = n.meta.get(MADE_FROM)
    if made is None:
        return ""
    holds = nid in value_holders(n.graph)
    return f", {'the value' if holds else 'part'} of `{made}` {base_id(nid)},"


def _op(n: torch.fx.Node) -> str:
    t = n.target
    return getattr(getattr(t, "overloadpacket", t), "__name__", str(t))


def _kind(r: NodeReport) -> str:
    """What the node makes where fp64 is finite: NaN, inf, or both (counts beyond fp64's own)."""
    m = r.vs_oracle
    return nan_or_inf(max(0, m.nan - m.ref_nan), max(0, m.inf - m.ref_inf))


def _cause_sentence(r: NodeReport, plan: Plan, by_id: dict[str, NodeReport] | None = None,
                    zeros: frozenset[str] | None = None, rule: str = "same") -> str:
    """Why `r`, a cause of a failing output, is one. `zeros`: the ids a NaN/inf-making node reads as 0
    where fp64 is not (None: not known, taken as `r` being one where its own error is within the limit)."""
    own = r.local if r.local is not None else r.vs_oracle
    d = plan.decisions.get(r.node_id)
    if d is not None and d.fma is not None and fma_can_err(plan, d) and not own.new_nonfinite:
        exact_zero = " (fp64's value is exactly 0 there)" if own.norm_rel == math.inf else ""
        return (
            f"{_at(r)}: FMA contraction keeps the rounding error of "
            f"{product_words(plan.program.node(d.fma.mul_id))} ({d.fma.mul_id}): recomputed from fp64 "
            f"inputs it is up to {own.max_abs:.2g} away from fp64{exact_zero}."
        )
    if own.new_nonfinite:
        return f"{_at(r)} makes {_kind(r)} itself: recomputed from fp64 inputs it is {_kind(r)} where fp64 is finite."
    if own.norm_rel == math.inf:
        return (
            f"{_at(r)} loses accuracy itself: fp64's value is exactly 0 there, and recomputed from fp64 inputs "
            f"it is up to {own.max_abs:.2g} away."
        )
    if r.own_excess <= EXCESS_LIMIT and zeros is not None and r.node_id not in zeros:  # (trial 54: --rule bitwise)
        return (f"{_at(r)} is on the path of an output that fails the `{rule}` rule; its own error is "
                f"{r.own_excess:.3g} times the rounding of {r.working_dtype or r.dtype}, within the limit: what the "
                "rule does not allow there is that format's rounding itself.")
    if r.own_excess <= EXCESS_LIMIT:  # a culprit only by a zero a later node divides by or takes the log of
        source = error_source(plan.program, r, by_id) if by_id else None
        return (
            f"{_at(r)} is 0 where fp64 is not (elsewhere its error is {r.own_excess:.3g} times the rounding of "
            f"{r.working_dtype or r.dtype}) and a later node divides by it or takes its log: "
            + (_zeros_sentence(source, plan) if source is not None else _own_zeros_sentence(r, plan))
        )
    judged = r.working_dtype or r.dtype
    if (amplified := _rounded_reads_amplified(r, plan, judged, by_id or {})) is not None:
        return amplified
    held = f"; the narrowest format its value meets, it computes in {r.dtype}" if judged != r.dtype else ""
    if r.own_excess > (own.excess or 0):  # judged by the format's precision: its range cannot hold the values
        if _below_normal(r) and not (own.inf > own.ref_inf or r.overflow):  # (trial 67: "5.27e3 times the
            return _below_normal_sentence(r)  # rounding" of an fp16 mm fp64 rounded is as far from: subnormals)
        return (
            f"{_at(r)} loses what {judged} cannot hold: recomputed from fp64 inputs rounded as it reads them, its "
            f"own normwise relative error is {own.norm_rel:.2g}, {r.own_excess:.3g} times {judged}'s precision, "
            f"{own.excess or 0:.3g} times fp64 correctly rounded to {judged}'s error there{held}"
            + _range_words(r, own) + (_storage_sums(r, plan) or _narrow_reads(r, plan))
        )
    return (
        f"{_at(r)} loses accuracy itself: recomputed from fp64 inputs rounded as it reads them, its error is "
        f"{r.own_excess:.3g} times the rounding of {judged} (its own normwise relative error {own.norm_rel:.2g}{held})."
        + (_storage_sums(r, plan) or _narrow_reads(r, plan))
    )


def _storage_sums(r: NodeReport, plan: Plan) -> str:
    """Where `r`'s kernel (or, for an output of a multi-output op, that op's) adds into its 16-bit result
    one term at a time (`native_kernels.accumulates_in_storage`: eager's ``index_put(accumulate=True)``
    on CPU and CUDA, the gradient of ``w[idx]``; eager CPU's LayerNorm backward with 16-bit weights; eager CPU's
    BatchNorm, whose statistics it rounds):
    that is the loss, and the fix."""
    node = plan.program.node(r.node_id)
    parent = multi_output_parent(node)
    node, index = (parent, node.args[1]) if parent is not None else (node, None)
    d = plan.decisions.get(node.meta.get(NODE_ID, ""))
    if d is None or not accumulates_in_storage(node, d):
        return ""
    dtype = str(d.compute_dtype).removeprefix("torch.")
    if node.target in BATCH_NORMS:
        return (f" Eager's BatchNorm on CPU with {dtype} weights rounds the batch's mean and 1/std to {dtype} and "
                f"normalizes with the rounded values: keep the BatchNorm's weight and bias in float32 (`bn.float()`: "
                f"eager then keeps its statistics in float32 and still returns {dtype}).")
    if node.target is torch.ops.aten.native_layer_norm_backward.default:
        if index not in (1, 2):  # the input's gradient is computed row by row, in fp32
            return ""
        return (f" Eager's LayerNorm backward on CPU adds each row's term of the weight and bias gradients into a "
                f"{dtype} buffer (its input's dtype, with float32 weights too), rounding every sum: run the LayerNorm "
                "in float32 (`F.layer_norm(x.float(), shape, w.float(), b.float()).to(x.dtype)`).")
    if node.target in (torch.ops.aten._log_softmax.default, torch.ops.aten.nll_loss_forward.default):  # own order
        return ""
    if node.target is torch.ops.aten.max_pool2d_with_indices_backward.default:
        return (f" Eager's max-pool backward on CPU adds the gradients of overlapping windows into its {dtype} result "
                "one at a time, rounding every sum: pool in float32 (`F.max_pool2d(x.float(), ...).to(x.dtype)`).")
    return (f" Its kernel adds each term into its {dtype} result one at a time, rounding every sum (eager's "
            "`index_put(accumulate=True)` on CPU and CUDA, the gradient of `w[idx]`, and an embedding's gradient): sum in fp32 "
            "instead (index a float32 copy, `w.float()[idx]`, or keep the weights in fp32).")


def _own_zeros_sentence(r: NodeReport, plan: Plan) -> str:
    """Where the zeros of `r`, which makes its error itself (no `error_source`), come from: below its format's
    range where it subtracts nothing (trial 68: an fp16 entropy's ``p = e / sum(e)``)."""
    if _op(plan.program.node(r.node_id)) in _CANCELLING:
        return ("the zeros come from a value it reads that lost what fp64 has there (an epsilon absorbed upstream) "
                "or from values below the format's range.")
    return (f"the zeros are values below {r.working_dtype or r.dtype}'s range rounded to 0, its own or an operand's "
            f"(it subtracts nothing: an underflow{_underflow_fix(plan.program.node(r.node_id))}.")


def _zeros_sentence(source: NodeReport, plan: Plan) -> str:
    """Where a zero-making value's error was created (`error_source`): a comparison's or a selection's
    other outcome (`_cancelled_sentence` otherwise)."""
    node = plan.program.node(source.node_id)
    decided = next((n for n in (node, *node.all_input_nodes) if is_selection(n)), None)
    if decided is None and _op(node) not in _CANCELLING:  # (trial 68: an entropy's p = e / sum(e), said to subtract)
        return (f"the zeros come from {_at(source)}, {source.vs_oracle.norm_rel:.2g} away from fp64 (normwise relative): it "
                f"subtracts nothing, and its values below {source.working_dtype or source.dtype}'s range round to 0 (an "
                f"underflow{_underflow_fix(node)}.")
    if decided is None:
        return _cancelled_sentence(source)
    return (f"the zeros come from {_at(source)}, {source.vs_oracle.norm_rel:.2g} away from fp64 (normwise relative): it "
            f"holds the outcome of {_node_at(decided)}, which fp64 decides otherwise there (above).")


def _underflow_fix(node: torch.fx.Node) -> str:
    """The end of an underflow's sentence: log space where an exp makes the values (within three ops upstream),
    else a wider format or operands scaled into range (trial 75: an Adam step's ``(1 - b2) * g * g`` was told to
    use log_softmax)."""
    seen, todo = set(), [(node, 0)]
    while todo:
        n, depth = todo.pop()
        if n in seen or depth > 3:
            continue
        seen.add(n)
        if _op(n) in ("exp", "exp2", "_softmax", "softmax", "sigmoid"):
            return (", as of an exp of a large negative number); compute in log space (log_softmax rather than "
                    "log(softmax)) or in a wider format")
        todo.extend((p, depth + 1) for p in n.all_input_nodes)
    return ("); compute it in a wider format (float32), or scale its operands into range (a product of small "
            "values: multiply one by a power of two first)")


#: Ops whose result can cancel (a difference of close values): the zeros they make are a cancellation's.
_CANCELLING = frozenset({"add", "sub", "rsub", "addcmul", "addcdiv", "lerp", "var", "var_mean", "std", "sum", "mean"})


def _cancelled_sentence(source: NodeReport) -> str:
    """Where a zero-making value's error was created (`error_source`): a node far from fp64 though about
    correct from what it reads, a cancellation of rounded operands (``E[x*x] - E[x]**2``)."""
    return (
        f"the zeros come from {_at(source)}, {source.vs_oracle.norm_rel:.2g} away from fp64 (normwise relative) "
        f"though within {max(source.own_excess, 1):.3g}x its format's rounding of what it reads: it subtracts values "
        "that agree in almost every bit, so their rounding decides it (0, or of the wrong sign, where fp64 is small; "
        "a variance as mean(x*x) - mean(x)**2 is one). Compute it without the cancellation (mean((x - mean)**2)) "
        "or in a wider format: an epsilon alone does not fix it."
    )


def _rounded_reads_amplified(r: NodeReport, plan: Plan, judged: str, by_id: dict[str, NodeReport]) -> str | None:
    """A pointwise node that computes in fp32 inside a kernel and reads some operands rounded to 16 bits
    (a kernel boundary): its own fp32 rounding is far below 16 bits', so an error many times the 16-bit
    rounding is that of what it reads, amplified (trial 65: a VQ-VAE's ``||z||^2 - 2 z.e + ||e||^2``
    under inductor-cpu was said to "lose accuracy itself"), or lost to that format's range where what it
    reads lies below its normal range (trial 76: a gradient of 1e-9 stored in fp16, all 0, was called a
    cancellation). None where that does not hold."""
    d = plan.decisions.get(r.node_id)
    if (d is None or d.compute_dtype not in (torch.float32, torch.float64) or judged not in ("bfloat16", "float16")
            or d.op_class not in (OpClass.POINTWISE_ARITHMETIC, OpClass.POINTWISE_TRANSCENDENTAL)):
        return None
    rounded = [plan.program.node(i) for i in d.rounded_inputs
               if (p := plan.decisions.get(i)) is not None and p.storage_dtype in (torch.bfloat16, torch.float16)]
    if not rounded:
        return None
    own = r.local if r.local is not None else r.vs_oracle
    tiny = [p for p in rounded if (q := by_id.get(p.meta.get(NODE_ID, ""))) is not None and _below_normal(q)]
    if tiny:
        read = by_id[tiny[0].meta[NODE_ID]]
        return (f"{_at(r)} computes in {str(d.compute_dtype).removeprefix('torch.')}, but reads "
                f"{', '.join(_node_at(p) for p in tiny[:2])} rounded to {judged} (a kernel boundary), whose values lie "
                f"below {judged}'s normal range: even fp64 correctly rounded to {judged} is off by "
                f"{_share(read.format_loss)} (normwise) there (subnormals hold fewer bits; below them, 0). From fp64 inputs "
                f"so read its error is {r.own_excess:.3g} times the rounding of {judged} (its normwise relative error "
                f"{own.norm_rel:.2g}). Scale those values up (in a backward pass, the loss: torch.amp.GradScaler) or "
                "keep them in bf16/fp32 (blame --against oracle tries such placements where the policy makes them).")
    names = ", ".join(_node_at(p) for p in rounded[:2])
    return (f"{_at(r)} amplifies the rounding of what it reads: it computes in {str(d.compute_dtype).removeprefix('torch.')}, "
            f"but reads {names} rounded to {judged} (a kernel boundary), and from fp64 inputs so read its error is "
            f"{r.own_excess:.3g} times the rounding of {judged} (its normwise relative error {own.norm_rel:.2g}): "
            "a cancellation of rounded operands, or a function steep there. Keep what it reads in a wider format "
            "(blame --against oracle tries such placements where the policy makes them), or compute it without the "
            "cancellation.")


def _narrow_reads(r: NodeReport, plan: Plan) -> str:
    """Which computed operands `r` reads in a 16-bit format: where an op amplifies its operands'
    rounding (sin of a large phase, a cancellation), keeping those wider is the fix, not the op."""
    reads = [
        p for p in plan.program.node(r.node_id).all_input_nodes
        if p.op == "call_function" and (d := plan.decisions.get(p.meta.get(NODE_ID, ""))) is not None
        and d.storage_dtype in (torch.bfloat16, torch.float16)
    ]
    if not reads:
        return ""
    names = ", ".join(_node_at(p) for p in reads[:2])
    return (f" It reads {names} in {str(plan.decisions[reads[0].meta[NODE_ID]].storage_dtype).removeprefix('torch.')}: "
            "if it amplifies that rounding, keep what it reads in a wider format (blame --against oracle tries such placements where the policy makes them).")


def _amplification(source: NodeReport, amp: NodeReport) -> float:
    """How many times `amp`'s error (normwise relative, against fp64) is the error `source` passes on."""
    return amp.vs_oracle.norm_rel / max(source.vs_oracle.norm_rel, 1e-300)


def _source_sentence(r: NodeReport, amp: NodeReport, plan: Plan, by_id: dict[str, NodeReport]) -> str:
    """Why a node whose own error may be small is named: a later node amplifies the error it passes on.
    A cast or view only reads a value: the node that made the value is named, read through it. Its
    operands in the same format that already carry at least half its error are named too: their
    rounding is in its value as well (trial 56: a timestep embedding's fp16 ``t * freqs`` before a
    ``sin``, whose fp16 ``freqs`` carry as much of the phase error as the product's rounding)."""
    fmt = r.working_dtype or r.dtype
    how = "is correctly rounded" if r.own_excess <= EXCESS_LIMIT else f"loses {r.own_excess:.3g} times its rounding"
    made = _made_by(r, plan)
    subject = _at(r) if made is None else f"{made}, read in {fmt} by {_at(r)},"
    carriers = [u for u in reported_operands(plan.program.node(r.node_id), by_id)
                if u.dtype == r.dtype and u.vs_oracle.norm_rel >= r.vs_oracle.norm_rel / 2 > 0]
    also = (f" It is computed from {fmt} values already about as far off fp64 ("
            + ", ".join(f"{_at(u)}: {u.vs_oracle.norm_rel:.2g}" for u in carriers)
            + "): where their rounding reaches it, keeping only it wider leaves that error; "
              "blame --against oracle finds which to keep.") if carriers else ""
    return (
        f"{subject} {how} in {fmt} (its value's normwise relative error {r.vs_oracle.norm_rel:.2g}), but "
        f"{_at(amp)} amplifies that error about {_amplification(r, amp):.3g}x (to {amp.vs_oracle.norm_rel:.2g}): "
        f"{fmt} is too narrow for this value; keep it in a wider format.{also}"
    )


def _made_by(r: NodeReport, plan: Plan) -> str | None:
    """Where `r` (a cast or view, such as a user's ``x.float()``) only reads a value another node made,
    that node, named (`culprits.value_maker`); else None."""
    node = value_maker(plan.program, r.node_id)
    if node is None:
        return None
    if node.op != "call_function":
        return f"input `{node.name}`"
    return _node_at(node)


def _below_normal(r: NodeReport) -> bool:
    """Whether even fp64 correctly rounded to `r`'s format is off by more than 4 units of its rounding:
    its values sit below the format's normal range, where subnormals hold fewer bits."""
    dtype = getattr(torch, r.working_dtype or r.dtype, None)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        return False
    if r.vs_oracle.nonfinite > r.vs_oracle.ref_nan + r.vs_oracle.ref_inf:
        return False  # NaN/inf where fp64 is finite is what it says, not its range (trial 76: an all-NaN cumsum)
    return r.format_loss is not None and r.format_loss > 4 * unit_roundoff(dtype)


def _share(rel: float) -> str:
    """A normwise relative error in words: a percent from 1% (trial 76: "off by 1" meant 100%), else the number."""
    if not 0.01 <= rel < math.inf:
        return f"{rel:.2g}"
    return f"{rel * 100:.0f}%" if rel >= 0.1 else f"{rel * 100:.2g}%"


def _below_normal_sentence(r: NodeReport) -> str:
    fmt = r.working_dtype or r.dtype
    return (
        f"{_at(r)} computes values below {fmt}'s normal range: even fp64 correctly rounded to {fmt} is off by "
        f"{_share(r.format_loss)} (normwise) there, as subnormals hold fewer bits, and "
        + ("its own result equals fp64's here" if r.vs_oracle.norm_rel == 0 else  # ("off by 0": trial 45)
           f"its result is off by {_share(r.vs_oracle.norm_rel)}") + ". Scale the values up (in a backward pass, the loss: torch.amp.GradScaler) "
        "or compute it in bf16/fp32." + _cancellation_hint(r)
    )


def _cancellation_hint(r: NodeReport) -> str:
    """For a sub/add whose values are too small for its format: it may be a cancellation, said so."""
    if r.op not in ("sub", "add", "rsub"):
        return ""
    return (f" {'An' if r.op == 'add' else 'A'} `{r.op}` this small may be a cancellation of values that are not (a variance as mean(x*x) - "
            "mean(x)**2): then compute it without one (mean((x - mean)**2)), as a wider format alone may "
            "leave it wrong.")


def _range_words(r: NodeReport, own) -> str:
    """Why the format cannot hold a node's values: overflow (inf where fp64 is finite) or underflow."""
    fmt = r.working_dtype or r.dtype
    if own.inf > own.ref_inf or r.overflow:
        return f"; {fmt} cannot hold its values (overflow)."
    return (
        f"; its values are below {fmt}'s range and round to 0 (underflow; in a backward pass, scale the loss, "
        "e.g. torch.amp.GradScaler, or compute in bf16/fp32)." + _cancellation_hint(r)
    )


def explain(result: CheckResult, plan: Plan, zero_operands: dict[str, list[str]] | None = None) -> tuple[str, ...]:
    """Sentences, causes first (what `blame` would change): selections that chose other indices than
    fp64, the nodes whose own error causes the failing outputs (with the NaN/inf origin); then those
    outputs, NaN fp64 makes too, the first divergence when no cause is named, hazards."""
    by_id = {r.node_id: r for r in result.nodes}
    lines: list[str] = []
    caused = []  # selections downstream of a named cause: its consequence, said after the causes
    for sentence, after_cause in flip_sentences(result, plan.program.node):
        (caused if after_cause else lines).append(sentence)
    origin = result.nan_origin if result.nan_origin in by_id else None
    overflow = {h.node_id for h in result.hazards if h.kind in OVERFLOW_HAZARDS}
    named = set()
    sources: dict[str, str] = {}  # amplifier id -> the source its sentence named
    zeros = frozenset(z for zs in (zero_operands or {}).values() for z in zs)
    rule = result.outputs[0].rule if result.outputs else "same"
    for nid in result.culprits[:3]:
        if nid in named:  # an amplifier its source's sentence named, with its own error within the limit
            continue
        if nid in result.rounding_causes and nid in by_id:
            lines.append(_rounding_sentence(plan.program.node(nid), by_id[nid].dtype))
            named.add(nid)
            continue
        if nid not in by_id:  # a non-float node (a comparison) that decides a zero operand
            lines.append(_decision_sentence(plan.program.node(nid), result, by_id))
        elif by_id[nid].overflow:  # the format's overflow first, not the rounding of its finite elements that a
            # reader amplifies (trial 63: an fp16 U-Net's attention exp under eager; the next line said "above")
            lines.append(_origin_sentence(by_id[nid], by_id, plan, (zero_operands or {}).get(nid, []), named, overflow))
        elif (amp := amplifier(result.culprits, plan.program, by_id, nid)) is not None and _amplification(
                by_id[nid], amp) < 2 and by_id[nid].own_excess <= EXCESS_LIMIT:
            continue  # a correctly rounded source of an error its amplifier barely grows: not a cause to name
        elif amp is not None and _below_normal(amp):  # not an amplification: the format's subnormals
            if amp.node_id not in named:
                lines.append(_below_normal_sentence(amp))
            named.add(amp.node_id)
        elif amp is not None and _amplification(by_id[nid], amp) >= 2:
            lines.append(_below_normal_sentence(by_id[nid]) + f" {_at(amp)} amplifies that error about "
                         f"{_amplification(by_id[nid], amp):.3g}x." if _below_normal(by_id[nid])
                         else _source_sentence(by_id[nid], amp, plan, by_id))
            sources.update({a: nid for a in result.culprits if a in by_id and by_id[a].amplifies_read is not None
                            and a != nid})
            if ((amp.own_excess <= EXCESS_LIMIT or amp.amplifies_read) and not (amp.local or amp.vs_oracle).new_nonfinite
                    and not amp.overflow):  # (an overflowing amplifier has its own sentence: trial 54's stored exp)
                named.add(amp.node_id)
        elif nid in sources and by_id[nid].amplifies_read is not None:  # amplifies a read another sentence named
            r = by_id[nid]
            lines.append(f"{_at(r)} amplifies the rounding of what it reads in {r.working_dtype or r.dtype} "
                         f"as well: recomputed from it unrounded it is within {EXCESS_LIMIT:g}x its format's rounding.")
        elif nid == origin or by_id[nid].overflow or (  # a second overflow worded as the first, and what
                (by_id[nid].local or by_id[nid].vs_oracle).new_nonfinite  # reads one: not "makes inf itself"
                and _overflowing(plan.program.node(nid), by_id, overflow)):
            lines.append(_origin_sentence(by_id[nid], by_id, plan, (zero_operands or {}).get(nid, []), named, overflow))
        else:
            lines.append(_cause_sentence(by_id[nid], plan, by_id, zeros, rule))
        named.add(nid)
    if origin is not None and origin not in named:
        lines.append(_origin_sentence(by_id[origin], by_id, plan, (zero_operands or {}).get(origin, []), named, overflow))
    lines.extend(caused)
    failing = {o.node_id for o in result.outputs if not o.passes}
    on_path = ancestors(plan.program, failing) if failing and any(
        h.kind in ACCUMULATION_HAZARDS for h in result.hazards) else set()
    accumulating = [h for h in result.hazards if h.kind in ACCUMULATION_HAZARDS and h.node_id in on_path]
    lines.extend(dict.fromkeys(h.message for h in accumulating))  # a cause as much as a node's own error
    lines.extend(output_sentences(result))
    lines.extend(near_tie_sentences(result, plan.program))
    lines.extend(conditioning_sentences(result, plan.program, by_id))
    if result.culprits and not result.diverges and not set(result.culprits) <= set(result.rounding_causes):
        # (a rounding cause's own sentence says why its outputs pass)
        own = [o for o in result.outputs if o.node_id in result.culprits]
        why = ("later ops dilute it, e.g. a tiny term added to a large one" if not own else
               f"output `{own[0].name}` is that value, and its reference, RMSE {own[0].rmse_reference:.3g}, is fp64 correctly "
               "rounded to its format or, where larger, the error its last op takes from its operands' rounding")
        lines.append(
            f"No output fails: the outputs the error named above reaches are within {EXCESS_LIMIT:g}x their reference "
            f"({why}), so the verdict is ok; it is listed as a place where the format loses accuracy."
        )
    broken = [o for o in result.outputs if o.reference_nonfinite]
    if broken:  # one sentence for all: a NaN eager run breaks every gradient alike
        clean = [o for o in broken if not o.nonfinite]
        names = ", ".join(f"`{o.name}`" for o in broken[:3]) + (f" and {len(broken) - 3} more" if len(broken) > 3 else "")
        lines.append(
            f"the reference ({result.against}) is NaN/inf where fp64 is finite at {len(broken)} output(s) ({names}; "
            f"{sum(o.reference_nonfinite for o in broken)} element(s)): {result.against} itself fails there"
            + (f", this policy does not at {'all' if len(clean) == len(broken) else len(clean)} of those outputs"
               if clean else "")
            + "; check each against fp64 with --against oracle."
        )
    for o in result.outputs:
        if o.nan_in_fp64:
            lines.append(
                f"output `{o.name}`: {o.nan_in_fp64} element(s) are NaN in fp64 too (the program makes NaN there "
                "itself, e.g. 0/0 or NaN in its inputs): not a rounding divergence."
            )
    if not result.culprits and result.first_divergent is not None and result.first_divergent != origin:
        r = by_id[result.first_divergent]
        if r.reference_vs_oracle is not None:  # against a reference: how far each is from fp64 there
            lines.append(
                f"first divergence at {_at(r)}: normwise relative error {r.vs_oracle.norm_rel:.2g} against fp64, "
                f"{result.against}'s {r.reference_vs_oracle.norm_rel:.2g}; its own error is within the limit, so the "
                f"difference comes from what it reads{_read_as(plan, r.node_id)}, and no node makes it alone beyond "
                "the limit."
            )
        else:
            lines.append(
                f"first divergence at {_at(r)}: normwise relative error {r.vs_oracle.norm_rel:.2g} against fp64 "
                f"({r.vs_oracle.excess or 0:.3g} times its format's rounding)."
            )
    groups: dict[tuple[str, str | None], list[str]] = {}  # an op in a loop repeats its hazard: once per line
    for h in result.hazards:
        if h in accumulating:
            continue  # said with the causes
        if h.kind == "fp16-overflow" and named and (named & ({h.node_id} | ancestors(plan.program, {h.node_id}))):
            continue  # the named cause's overflow and its consequences downstream: said by the cause's sentence
        groups.setdefault((h.kind, h.source), []).append(h.message)
    lines.extend(ms[0] + (f" (The same at {len(ms) - 1} more node(s) of this line.)" if len(ms) > 1 else "")
                 for ms in groups.values())
    return tuple(lines)


def _read_as(plan: Plan, node_id: str) -> str:
    """", which this policy rounds to bfloat16 first (...)" where the plan reads `node_id`'s operands in
    another format than they are stored in (an autocast cast: `NodeDecision.input_format`), else "" (trial
    78: thunder-autocast's fp16 matmuls read in bf16, the divergence put down to "what it reads" alone)."""
    d = plan.decisions.get(node_id)
    fmt = d.input_format if d is not None else None
    if fmt is None:
        return ""
    stored = sorted({str(s).removeprefix("torch.") for p in plan.program.node(node_id).all_input_nodes
                     if isinstance(s := getattr(p.meta.get("val"), "dtype", None), torch.dtype) and s.is_floating_point
                     and s != get_format(fmt).storage_dtype})
    return (f", which this policy reads rounded to {fmt} (its {'/'.join(stored) + ' ' if stored else ''}operands "
            f"cast to {fmt} first, as the policy's autocast casts a matmul's inputs)")


def _rounding_sentence(n: torch.fx.Node, dtype: str) -> str:
    """A 16-bit value whose rounding alone takes outputs beyond the limit (`CheckResult.rounding_causes`)."""
    return (f"{_node_at(n)} is rounded to {dtype}, and fp64 run again with only that rounding moves outputs "
            f"beyond {EXCESS_LIMIT:g}x their reference: the ops after it amplify it, none beyond {EXCESS_LIMIT:g}x "
            "alone, so no node is flagged and those outputs pass by the path rule, but this one rounding makes "
            "them that far off; keep it in fp32, or compute what reads it from values it does not cancel against.")


def flip_sentences(result: CheckResult, node: Callable[[str], torch.fx.Node]) -> list[tuple[str, bool]]:
    """(`flip_sentence`, whether it follows a named cause) per selection of `result` that chose other
    indices than fp64; `node` gives a node by id."""
    named = set(result.culprits)
    out = []
    for nid, n, of in result.selection_flips:
        sel = node(nid)
        after = bool({u.meta.get(NODE_ID) for u in upstream(sel)} & named)
        out.append((flip_sentence(sel, n, of, after_cause=after), after))
    return out


def conditioning_sentences(result: CheckResult, program: Program, by_id: dict[str, NodeReport]) -> list[str]:
    """Against the oracle, one sentence for the passing outputs over the limit by value whose path has a
    node amplifying fp32's own rounding (`culprits.amplifies_fp32_rounding`), naming the first such node."""
    over = [o for o in result.outputs if result.against == "oracle" and o.passes and not o.noise_only
            and o.rmse_reference and o.rmse_result > EXCESS_LIMIT * o.rmse_reference]
    amps = [r for r in result.nodes if amplifies_fp32_rounding(program, r, by_id)] if over else []
    if not amps:
        return []
    first = None
    reached = []
    for o in over:
        path = ancestors(program, {o.node_id})
        hit = next((r for r in amps if r.node_id in path), None)
        if hit is not None:
            first = first or hit
            reached.append(o)
    if first is None:
        return []
    o = reached[0]
    names = f"`{o.name}`" + (f" and {len(reached) - 1} more output(s)" if len(reached) > 1 else "")
    reads = max(u.vs_oracle.norm_rel for u in reported_operands(program.node(first.node_id), by_id))
    return [(
        f"{names} pass though {o.rmse_result / o.rmse_reference:.3g}x their reference: {_at(first)} amplifies the "
        f"fp32 rounding of what it reads {first.vs_oracle.norm_rel / reads:.3g}x (normwise relative error "
        f"{reads:.2g} in, {first.vs_oracle.norm_rel:.2g} out; a `cos` or `sin` of a large phase, an `exp` of large "
        "logits): the formula's conditioning in fp32, which no format short of fp64 improves, not a low-precision "
        "defect. Where that accuracy matters, compute what it reads in fp64 or reduce it first (a phase modulo 2*pi).")]


def near_tie_sentences(result: CheckResult, program: Program) -> list[str]:
    """One sentence per set of outputs that pass with fp64's decisions at comparisons the policy decided
    otherwise near a tie (`OutputVerdict.near_ties`; `roundoff.analyze.decisions`)."""
    groups: dict[tuple[str, ...], list] = {}
    for o in result.outputs:
        if o.near_ties:
            groups.setdefault(o.near_ties, []).append(o)
    flips = {d.node_id: d for d in result.near_tie_decisions}
    backward = program.num_forward_outputs < len(program.output_args())
    forward = forward_ids(program) if backward else set()
    lines = []
    for ids, outs in groups.items():
        shown = [nid for nid in ids if nid in flips]
        where = "; ".join(
            f"{_node_at(program.node(nid))}{' in the backward' if backward and nid not in forward else ''} decides "
            f"otherwise than fp64 at {flips[nid].differing} of {flips[nid].of} elements ({result.against}'s run at "
            f"{flips[nid].reference_differing})" for nid in shown[:2]) + (
            f"; {len(shown) - 2} more comparison(s) likewise" if len(shown) > 2 else "")
        first = outs[0]
        names = f"`{first.name}` passes" if len(outs) == 1 else f"`{first.name}` and {len(outs) - 1} more output(s) pass"
        lines.append(
            f"{names} by a decision near a tie, not by this policy's arithmetic: {where}; at each such element fp64's operand "
            f"lies within {result.against}'s own largest error at that comparison of the threshold, where any "
            f"16-bit run (the real compiled program's too) may fall either way; what is computed from that element "
            f"moves by its whole size. With fp64's decisions there in both runs, `{first.name}`'s RMSE is "
            f"{first.rmse_pinned:.3g} against {result.against}'s {first.rmse_reference_pinned:.3g} (as run: "
            f"{first.rmse_result:.3g} against {first.rmse_reference:.3g}), within the limit. A value computed from "
            "such a threshold is only as reproducible as the tie: compare runs on other inputs before trusting it.")
    return lines


def flip_sentence(n: torch.fx.Node, differing: int, of: int, after_cause: bool = False) -> str:
    """A selection (topk, sort, argmax) that chose other indices than fp64: a discrete decision (or,
    `after_cause`, a consequence of an error a cause named before it put in the scores)."""
    if n.target in COMPARISONS:  # (a tie mask `x == x.amax()`, a threshold: trial 64)
        where = f"{_node_at(n)} compares otherwise than fp64 at {differing} of {of} elements"
        if after_cause:
            return where + ", downstream of the cause(s) above: the values it compares carry their error. Fix those first."
        return (where + ": operands equal or near equal in fp64, held rounded (or at different precisions), fall on "
                "the other side. What is computed from the other outcome differs from fp64 by more than rounding; "
                "hold both operands in one format, and compare values that can tie in fp32.")
    where = f"{_node_at(n)} selects differently from fp64 at "
    if after_cause:
        return (where + f"{differing} of {of} positions, downstream of the cause(s) above: the scores it ranks "
                "carry their error. Fix those first.")
    return (
        where + f"{differing} of {of} positions: scores near a tie, rounded, fall on the other side. What is computed "
        "from the other choice differs from fp64 by more than rounding, and no wider format after the "
        "selection changes that; computing the scores it ranks in fp32 makes such flips rarer."
    )


def _decision_sentence(n: torch.fx.Node, result: CheckResult, by_id: dict[str, NodeReport]) -> str:
    """Why a non-float node (a comparison) is a cause: a NaN/inf-making node divides by what it decides."""
    where = _node_at(n)
    ops = ", ".join(f"`{_op(a)}` ({a.meta.get(NODE_ID)})" for a in n.all_input_nodes)
    origin = next((m for m in n.graph.nodes if m.meta.get(NODE_ID) == result.nan_origin), None)
    return (
        f"{where} decides differently from fp64 (its operands {ops} are held at different precisions or "
        "carry rounding error): a value computed from it is 0 where fp64 is not, and "
        + (f"{_at(by_id[result.nan_origin])} divides by it and makes {_kind(by_id[result.nan_origin])}."
           if origin is not None and n in upstream(origin) else "a later node divides by it.")
    )


def _overflowing(node: torch.fx.Node, by_id: dict[str, NodeReport], overflow: set[str]) -> list[str]:
    """`node`'s operands that overflow: inf where fp64 is finite, or flagged by an overflow hazard."""
    out = []
    for p in node.all_input_nodes:
        pid = p.meta.get(NODE_ID, "")
        pr = by_id.get(pid)
        if pid in overflow or (pr is not None and pr.vs_oracle.inf > pr.vs_oracle.ref_inf):
            out.append(f"`{_op(p)}` ({pid})")
    return out


def _overflow_began(p: torch.fx.Node, by_id: dict[str, NodeReport]) -> NodeReport | None:
    """The first node whose format overflow `p`'s infinities carry (`p` itself, or the earliest of the
    operands it passes them on from: ``1 + exp(x)`` after an fp16 ``exp`` overflows), None where none is."""
    seen: set[torch.fx.Node] = set()
    began = None
    while p not in seen:
        seen.add(p)
        pr = by_id.get(p.meta.get(NODE_ID, ""))
        if pr is None or pr.vs_oracle.inf <= pr.vs_oracle.ref_inf:
            break
        began = pr if pr.overflow else began
        carriers = [a for a in p.all_input_nodes if (ar := by_id.get(a.meta.get(NODE_ID, ""))) is not None
                    and ar.vs_oracle.inf > ar.vs_oracle.ref_inf]
        if len(carriers) != 1:
            break
        p = carriers[0]
    return began


#: What each element of a loss kernel computes before the reduction (`loss_overflow_words`).
_LOSS_TERMS = {"mse_loss": "squared difference", "smooth_l1_loss": "loss", "huber_loss": "loss"}


def loss_overflow_words(node: torch.fx.Node, plan: Plan) -> str | None:
    """Where `node` is a loss that `plan` runs as eager's 16-bit kernel (`native_kernels.LOSSES`: each
    element's loss is computed and rounded in the 16-bit dtype, then reduced in it), how an inf it makes from
    finite inputs comes about: an element's term past the format's largest finite value; else None."""
    d = plan.decisions.get(node.meta.get(NODE_ID, ""))
    term = _LOSS_TERMS.get(_op(node))
    if d is None or term is None or node.target not in LOSSES or not accumulates_in_storage(node, d):
        return None
    dtype = str(d.compute_dtype).removeprefix("torch.")
    return (f"eager's kernel computes each element's {term} in {dtype} before it reduces them, so a {term} past "
            f"{dtype}'s largest finite value ({torch.finfo(d.compute_dtype).max:g}) is inf where "
            f"fp64's loss is finite: compute the loss in float32 (`F.{_op(node)}(input.float(), target.float())`)")


def _origin_sentence(
    r: NodeReport, by_id: dict[str, NodeReport], plan: Plan, zeros: list[str], named: set[str] = frozenset(),
    overflow: set[str] = frozenset(),
) -> str:
    """Why `r` makes NaN/inf; an operand already `named` as a cause is referred to, not re-explained."""
    node = plan.program.node(r.node_id)
    if r.vs_oracle.inf > r.vs_oracle.ref_inf and (inside := loss_overflow_words(node, plan)) is not None:
        return f"{_at(r)} makes inf from finite inputs: {inside}."
    if r.overflow:
        return (
            f"{_at(r)} overflows {r.dtype}: at {r.overflow} element(s) it is inf where fp64's value is beyond its "
            f"range (fp64 correctly rounded to {r.dtype} is inf too; elements NaN already are not counted), and a later node turns those infinities into wrong values "
            "(NaN, inf or 0 where fp64 is finite): compute it in a wider format or keep its values in range."
        )
    over = _overflowing(node, by_id, overflow)
    began = next((b for b in (_overflow_began(p, by_id) for p in node.all_input_nodes) if b is not None), None)
    if over and began is not None and began.node_id in named and began.node_id != r.node_id:
        return (f"{_at(r)} is where the overflow of {_at(began)} (above) turns into {_kind(r)} where fp64 is finite: "
                f"it reads {', '.join(over)} (fp64's values are finite, the stored ones inf).")
    if over:
        return (
            f"{_at(r)} makes {_kind(r)} where fp64 is finite: its operand(s) {', '.join(over)} exceed their "
            "format's range there (fp64's values are finite, the stored ones inf: overflow), not a value rounded to 0."
        )
    if zeros:
        z = plan.program.node(zeros[0])
        made_by = ", ".join(_node_at(a) for a in z.all_input_nodes)
        return (
            f"{_at(r)} makes {_kind(r)} from finite inputs: its operand `{_op(z)}` "
            f"({zeros[0]}) is 0 where fp64 is not (computed from {made_by})."
        )
    for p in node.all_input_nodes:
        pr = by_id.get(p.meta.get(NODE_ID, ""))
        d = plan.decisions.get(p.meta.get(NODE_ID, ""))
        if pr is not None and d is not None and d.fma is not None and fma_can_err(plan, d):
            if pr.node_id in named:
                return (
                    f"{_at(r)} turns the error FMA contraction leaves in {_at(pr)} (about "
                    f"{pr.vs_oracle.max_abs:.2g} away from fp64) into {_kind(r)}."
                )
            return (
                f"{_at(pr)}: FMA contraction keeps the rounding error of {product_words(plan.program.node(d.fma.mul_id))} ({d.fma.mul_id}) "
                f"(about {pr.vs_oracle.max_abs:.2g} away from fp64); {_at(r)} turns it into {_kind(r)}."
            )
    worst = max(
        (by_id[p.meta.get(NODE_ID, "")] for p in node.all_input_nodes if p.meta.get(NODE_ID, "") in by_id),
        key=lambda x: x.vs_oracle.max_bits,
        default=None,
    )
    tail = (
        f"; its input {_at(worst)} is already {worst.vs_oracle.max_abs:.2g} away from fp64"
        if worst is not None and worst.vs_oracle.max_bits > 0 else ""
    )
    cause = path_cause(node, by_id)
    if cause is not None and cause is not worst:
        tail += (
            f", the error {_at(cause)} makes itself ({cause.own_excess:.3g} times the rounding of "
            f"{cause.working_dtype or cause.dtype}, the largest on its path)"
        )
    return f"{_at(r)} makes {_kind(r)} from finite inputs{tail}."
