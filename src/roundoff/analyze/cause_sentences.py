"""Why a node whose own error causes a failing output is a cause, in words: FMA contraction, a format's
precision or range, a cancellation, rounded reads a later op amplifies, a kernel that sums in 16 bits."""

from __future__ import annotations

import math

import torch
import torch.fx

from roundoff.analyze.culprits import (
    error_source,
    reported_operands,
    value_maker,
)
from roundoff.analyze.hazards import fma_can_err, product_words
from roundoff.analyze.naming import node_at, nonfinite_kind, op_name, report_at
from roundoff.analyze.result import NodeReport
from roundoff.analyze.selections import is_selection
from roundoff.analyze.verdict import EXCESS_LIMIT, unit_roundoff
from roundoff.capture.program import (
    NODE_ID,
    Program,
    multi_output_parent,
)
from roundoff.execute.native_kernels import BATCH_NORMS, accumulates_in_storage
from roundoff.ops.classes import OpClass
from roundoff.plan.model import Plan

#: The names a report gives the 16-bit float formats (its `dtype`).
SIXTEEN_BITS = ("bfloat16", "float16")


def cause_sentence(r: NodeReport, plan: Plan, by_id: dict[str, NodeReport] | None = None,
                    zeros: frozenset[str] | None = None, rule: str = "same") -> str:
    """Why `r`, a cause of a failing output, is one. `zeros`: the ids a NaN/inf-making node reads as 0
    where fp64 is not (None: not known, taken as `r` being one where its own error is within the limit)."""
    own = r.local if r.local is not None else r.vs_oracle
    d = plan.decisions.get(r.node_id)
    if d is not None and d.fma is not None and fma_can_err(plan, d) and not own.new_nonfinite:
        exact_zero = " (fp64's value is exactly 0 there)" if own.norm_rel == math.inf else ""
        return (
            f"{report_at(r)}: FMA contraction keeps the rounding error of "
            f"{product_words(plan.program.node(d.fma.mul_id))} ({d.fma.mul_id}): recomputed from fp64 "
            f"inputs it is up to {own.max_abs:.2g} away from fp64{exact_zero}"
            + ("." if exact_zero else f", {r.own_excess:.3g} times the rounding of {r.working_dtype or r.dtype}"
               + (f" (within the limit, {EXCESS_LIMIT:g}: a later op grows it)." if r.own_excess <= EXCESS_LIMIT else "."))
        )  # (trial 103: "up to 3.9e-19 away" said nothing of whether that is much)
    if own.new_nonfinite:
        return f"{report_at(r)} makes {nonfinite_kind(r)} itself: recomputed from fp64 inputs it is {nonfinite_kind(r)} where fp64 is finite."
    if own.norm_rel == math.inf:
        return (
            f"{report_at(r)} loses accuracy itself: fp64's value is exactly 0 there, and recomputed from fp64 inputs "
            f"it is up to {own.max_abs:.2g} away."
        )
    if r.own_excess <= EXCESS_LIMIT and zeros is not None and r.node_id not in zeros:
        if rule == "same":  # flagged for growing what it reads beyond its format (trial 100: a BatchNorm backward's
            # `x - mean` read the bf16 sum of a 4096 offset and its signal)
            return (f"{report_at(r)} grows an error it reads: recomputed from its operands as it reads them, its own "
                    f"error is {r.own_excess:.3g} times the rounding of {r.working_dtype or r.dtype}, within the limit, "
                    f"but its value is {r.vs_oracle.norm_rel:.2g} off fp64 (normwise), more than {EXCESS_LIMIT:g} times the "
                    "error of what it reads: an error made before it (a difference of nearly equal values keeps only "
                    "their error); hold what it reads in a wider format, or compute it from values it does not cancel "
                    "against.")
        return (f"{report_at(r)} is on the path of an output that fails the `{rule}` rule; its own error is "
                f"{r.own_excess:.3g} times the rounding of {r.working_dtype or r.dtype}, within the limit: what the "
                "rule does not allow there is that format's rounding itself.")
    if r.own_excess <= EXCESS_LIMIT:  # a culprit only by a zero a later node divides by or takes the log of
        source = error_source(plan.program, r, by_id) if by_id else None
        return (
            f"{report_at(r)} is 0 where fp64 is not (elsewhere its error is {r.own_excess:.3g} times the rounding of "
            f"{r.working_dtype or r.dtype}) and a later node divides by it or takes its log: "
            + (_zeros_sentence(source, plan) if source is not None else _own_zeros_sentence(r, plan))
        )
    judged = r.working_dtype or r.dtype
    if (amplified := _rounded_reads_amplified(r, plan, judged, by_id or {})) is not None:
        return amplified
    held = f"; the narrowest format its value meets, it computes in {r.dtype}" if judged != r.dtype else ""
    if r.own_excess > (own.excess or 0):  # judged by the format's precision: its range cannot hold the values
        if below_normal(r) and not (own.inf > own.ref_inf or r.overflow):  # (trial 67: "5.27e3 times the
            return below_normal_sentence(r)  # rounding" of an fp16 mm fp64 rounded is as far from: subnormals)
        return (
            f"{report_at(r)} loses what {judged} cannot hold: recomputed from fp64 inputs rounded as it reads them, its "
            f"own normwise relative error is {own.norm_rel:.2g}, {r.own_excess:.3g} times {judged}'s precision, "
            f"{own.excess or 0:.3g} times fp64 correctly rounded to {judged}'s error there{held}"
            + _range_words(r, own) + (_storage_sums(r, plan) or _narrow_reads(r, plan))
        )
    return (
        f"{report_at(r)} loses accuracy itself: recomputed from fp64 inputs rounded as it reads them, its error is "
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
    if node.target in (*BATCH_NORMS, torch.ops.aten.native_batch_norm_backward.default):  # (trial 98: the backward
        # was given index_put's advice)
        how = ("normalizes with the rounded values" if node.target in BATCH_NORMS else
               "its backward computes the gradients from those rounded values")
        return (f" Eager's BatchNorm on CPU with {dtype} weights rounds the batch's mean and 1/std to {dtype} and "
                f"{how}: keep the BatchNorm's weight and bias in float32 (`bn.float()`: "
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
    if node.target is torch.ops.aten.index_add.default:
        return (f" ATen's index_add adds the terms into its {dtype} result, for a 1-D result one at a time, rounding "
                "every sum: add into a float32 buffer instead (`torch.zeros(..., dtype=torch.float32).index_add(...)`, "
                "the source `.float()`).")
    return (f" Its kernel adds each term into its {dtype} result one at a time, rounding every sum (eager's "
            "`index_put(accumulate=True)` on CPU and CUDA, the gradient of `w[idx]`, and an embedding's gradient): sum in fp32 "
            "instead (index a float32 copy, `w.float()[idx]`, or keep the weights in fp32).")


def _own_zeros_sentence(r: NodeReport, plan: Plan) -> str:
    """Where the zeros of `r`, which makes its error itself (no `error_source`), come from: below its format's
    range where it subtracts nothing (trial 68: an fp16 entropy's ``p = e / sum(e)``)."""
    if op_name(plan.program.node(r.node_id)) in _CANCELLING:
        return ("the zeros come from a value it reads that lost what fp64 has there (an epsilon absorbed upstream) "
                "or from values below the format's range.")
    return (f"the zeros are values below {r.working_dtype or r.dtype}'s range rounded to 0, its own or an operand's "
            f"(it subtracts nothing: an underflow{_underflow_fix(plan.program.node(r.node_id))}.")


def _zeros_sentence(source: NodeReport, plan: Plan) -> str:
    """Where a zero-making value's error was created (`error_source`): a comparison's or a selection's
    other outcome (`_cancelled_sentence` otherwise)."""
    node = plan.program.node(source.node_id)
    decided = next((n for n in (node, *node.all_input_nodes) if is_selection(n)), None)
    if decided is None and op_name(node) not in _CANCELLING:  # (trial 68: an entropy's p = e / sum(e), said to subtract)
        return (f"the zeros come from {report_at(source)}, {source.vs_oracle.norm_rel:.2g} away from fp64 (normwise relative): it "
                f"subtracts nothing, and its values below {source.working_dtype or source.dtype}'s range round to 0 (an "
                f"underflow{_underflow_fix(node)}.")
    if decided is None:
        return _cancelled_sentence(source)
    return (f"the zeros come from {report_at(source)}, {source.vs_oracle.norm_rel:.2g} away from fp64 (normwise relative): it "
            f"holds the outcome of {node_at(decided)}, which fp64 decides otherwise there (above).")


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
        if op_name(n) in ("exp", "exp2", "_softmax", "softmax", "sigmoid"):
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
        f"the zeros come from {report_at(source)}, {source.vs_oracle.norm_rel:.2g} away from fp64 (normwise relative) "
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
    if (d is None or d.compute_dtype not in (torch.float32, torch.float64) or judged not in SIXTEEN_BITS
            or d.op_class not in (OpClass.POINTWISE_ARITHMETIC, OpClass.POINTWISE_TRANSCENDENTAL)):
        return None
    rounded = [plan.program.node(i) for i in d.rounded_inputs
               if (p := plan.decisions.get(i)) is not None and p.storage_dtype in (torch.bfloat16, torch.float16)]
    if not rounded:
        return None
    own = r.local if r.local is not None else r.vs_oracle
    tiny = [p for p in rounded if (q := by_id.get(p.meta.get(NODE_ID, ""))) is not None and below_normal(q)]
    if tiny:
        read = by_id[tiny[0].meta[NODE_ID]]
        return (f"{report_at(r)} computes in {str(d.compute_dtype).removeprefix('torch.')}, but reads "
                f"{', '.join(node_at(p) for p in tiny[:2])} rounded to {judged} (a kernel boundary), whose values lie "
                f"below {judged}'s normal range: even fp64 correctly rounded to {judged} is off by "
                f"{_share(read.format_loss)} (normwise) there (subnormals hold fewer bits; below them, 0). From fp64 inputs "
                f"so read its error is {r.own_excess:.3g} times the rounding of {judged} (its normwise relative error "
                f"{own.norm_rel:.2g}). Scale those values up (in a backward pass, the loss: torch.amp.GradScaler) or "
                "keep them in bf16/fp32 (blame --against oracle tries such placements where the policy makes them).")
    names = ", ".join(node_at(p) for p in rounded[:2])
    return (f"{report_at(r)} amplifies the rounding of what it reads: it computes in {str(d.compute_dtype).removeprefix('torch.')}, "
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
    names = ", ".join(node_at(p) for p in reads[:2])
    return (f" It reads {names} in {str(plan.decisions[reads[0].meta[NODE_ID]].storage_dtype).removeprefix('torch.')}: "
            "if it amplifies that rounding, keep what it reads in a wider format (blame --against oracle tries such placements where the policy makes them).")


def amplification(source: NodeReport, amp: NodeReport) -> float:
    """How many times `amp`'s error (normwise relative, against fp64) is the error `source` passes on."""
    return amp.vs_oracle.norm_rel / max(source.vs_oracle.norm_rel, 1e-300)


#: How `source_sentence` points to blame for the values to keep wider (blame drops it where it has tried them all).
BLAME_FINDS_WHICH = "; blame --against oracle finds which to keep"


def source_sentence(r: NodeReport, amp: NodeReport, plan: Plan, by_id: dict[str, NodeReport]) -> str:
    """Why a node whose own error may be small is named: a later node amplifies the error it passes on.
    A cast or view only reads a value: the node that made the value is named, read through it. The values
    upstream in the same format whose rounding is in its value as well are named too (`rounded_upstream`;
    trial 56: a timestep embedding's fp16 ``t * freqs`` before a ``sin``, whose fp16 ``freqs`` carry as
    much of the phase error as the product's rounding), and a factory among them that makes its values in
    that format, which only the code can widen."""
    fmt = r.working_dtype or r.dtype
    carriers = rounded_upstream(r, plan.program, by_id)
    factories = [u for u in carriers if is_factory(plan.program, u)]
    keep = ("; " + ", ".join(f"{report_at(u)} makes its values in {u.dtype} itself" for u in factories)
            + ", which no policy or blame change keeps wider: create them in a wider dtype (dtype=torch.float32)"
            if factories else BLAME_FINDS_WHICH)
    upstream = "; ".join(f"{report_at(u)} in {u.dtype}: {(u.local or u.vs_oracle).norm_rel:.2g}" for u in carriers)
    amplified = (f"{report_at(amp)} amplifies that error about {amplification(r, amp):.3g}x "
                 f"(to {amp.vs_oracle.norm_rel:.2g})")
    if carriers and (r.local or r.vs_oracle).norm_rel < r.vs_oracle.norm_rel / 4:
        # it makes next to none of its error (a user's fp32 position from a bf16 linspace): where it was made is named
        return (f"{report_at(r)}, held in {r.dtype}, carries an error made before it (normwise relative "
                f"{r.vs_oracle.norm_rel:.2g}), and {amplified}: what it is computed from was rounded ({upstream}){keep}.")
    how = "is within the rounding of" if r.own_excess <= EXCESS_LIMIT else f"loses {r.own_excess:.3g} times its rounding"
    made = _made_by(r, plan)
    subject = report_at(r) if made is None else f"{made}, read in {fmt} by {report_at(r)},"
    also = (f" It is computed from {fmt} values already off fp64 ({upstream}): where their rounding reaches it, "
            f"keeping only it wider leaves that error{keep}.") if carriers else ""
    widen = (f"it makes its values in {r.dtype} itself, which no policy or blame change keeps wider: create them in a "
             "wider dtype (dtype=torch.float32)" if made is None and is_factory(plan.program, r) else "keep it in a wider format")
    return (
        f"{subject} {how} {'' if r.own_excess <= EXCESS_LIMIT else 'in '}{fmt} (its value's normwise relative error "
        f"{r.vs_oracle.norm_rel:.2g}; {fmt}'s unit roundoff {unit_roundoff(getattr(torch, fmt)):.2g}), but "
        f"{amplified}: {fmt} is too narrow for this value; {widen}.{also}"
    )


#: How many upstream 16-bit roundings `source_sentence` names.
_CARRIERS = 4


def rounded_upstream(r: NodeReport, program: Program, by_id: dict[str, NodeReport]) -> list[NodeReport]:
    """Where the error `r` carries was made upstream: up through views and through every value that
    carries at least a quarter of `r`'s error (normwise relative), the nodes whose own error is that
    large (their rounding is in `r`'s value too, each below half of it where several add up: trial 88, a
    NeRF's bf16 ``o + d * t`` whose ``d * t`` and whose bf16 ``linspace`` t carry 0.0025 and 0.0017 of the
    sum's 0.0062; an fp32 ``.float()`` of that linspace carries its error without making any); nearest
    first, at most `_CARRIERS`. Graph inputs, exact, are not among them."""
    bar = r.vs_oracle.norm_rel / 4  # (a cancellation's relative error outgrows its operands': a 16-bit rounding
    if (fmt := r.working_dtype or r.dtype) in SIXTEEN_BITS:  # upstream counts from a quarter of its format's unit)
        bar = min(bar, unit_roundoff(getattr(torch, fmt)) / 4)
    found: list[NodeReport] = []
    todo, seen = [r], {r.node_id}
    while todo and len(found) < _CARRIERS:
        for u in reported_operands(program.node(todo.pop(0).node_id), by_id):
            if u.node_id not in seen and u.vs_oracle.norm_rel >= bar > 0:
                seen.add(u.node_id)
                todo.append(u)
                if (u.local or u.vs_oracle).norm_rel >= bar and not _widens(program, u):
                    found.append(u)
    return found[:_CARRIERS]


def _widens(program: Program, r: NodeReport) -> bool:
    """Whether `r` is a cast to a wider float format (a user's ``x.float()``): exact, it carries the error of
    the value it reads and rounds nothing itself (trial 103: an fp16 rotary's ``_to_copy`` to fp32 was listed
    among the values "already off fp64", as if rounded there)."""
    node = program.node(r.node_id)
    if r.op_class != OpClass.CAST.value or len(node.all_input_nodes) != 1:
        return False
    read, made = node.all_input_nodes[0].meta.get("val"), node.meta.get("val")
    return (isinstance(read, torch.Tensor) and isinstance(made, torch.Tensor) and read.is_floating_point()
            and made.is_floating_point() and torch.finfo(made.dtype).bits > torch.finfo(read.dtype).bits
            and torch.finfo(made.dtype).eps <= torch.finfo(read.dtype).eps)


def is_factory(program: Program, r: NodeReport) -> bool:
    """Whether `r`'s node makes its values from no tensor (``linspace``, ``arange``, ``full``): in its dtype."""
    node = program.node(r.node_id)
    return node.op == "call_function" and not node.all_input_nodes


def _made_by(r: NodeReport, plan: Plan) -> str | None:
    """Where `r` (a cast or view, such as a user's ``x.float()``) only reads a value another node made,
    that node, named (`culprits.value_maker`); else None."""
    node = value_maker(plan.program, r.node_id)
    if node is None:
        return None
    if node.op != "call_function":
        return f"input `{plan.program.input_name(node)}`"
    return node_at(node)


def below_normal(r: NodeReport) -> bool:
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


def below_normal_sentence(r: NodeReport) -> str:
    fmt = r.working_dtype or r.dtype
    return (
        f"{report_at(r)} computes values below {fmt}'s normal range: even fp64 correctly rounded to {fmt} is off by "
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
