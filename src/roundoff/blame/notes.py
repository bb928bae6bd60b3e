"""What `blame` says beside its fix: the limits of a fix, and why no change of a policy can fix a cause.

Each function reads the check's result, the planned program and (some) the evaluator's runs, and
returns sentences or node ids; none changes a plan or a result. Node ids are the planned program's
(decompositions included: ``n56.0``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from roundoff.analyze.cause_sentences import SIXTEEN_BITS, is_factory, rounded_upstream
from roundoff.analyze.culprits import amplifier
from roundoff.analyze.decision_sentences import flip_sentences
from roundoff.analyze.result import CheckResult
from roundoff.analyze.verdict import EXCESS_LIMIT
from roundoff.blame.changes import Change, ChangeKind, output_ids
from roundoff.blame.evaluate import Evaluator
from roundoff.blame.explain import describe_node
from roundoff.capture.program import Program, base_id, node_id, node_source, value_inputs
from roundoff.ops.classes import OpClass
from roundoff.plan.model import Plan


def over_limit_by_value(result: CheckResult) -> tuple[tuple[str, float], ...]:
    """(output, RMSE over its reference) for the outputs `result` passes though that ratio is above
    `EXCESS_LIMIT` (no node on their path flagged), worst first."""
    over = [(o.name, o.rmse_result / o.rmse_reference) for o in result.outputs
            if o.passes and o.rmse_reference > 0 and o.rmse_result > EXCESS_LIMIT * o.rmse_reference]
    return tuple(sorted(over, key=lambda t: -t[1]))


def nonfinite_removed(ev: Evaluator, together: Sequence[torch.Tensor]) -> list[str]:
    """The outputs (names, backticked) where the policy is NaN/inf and fp64 and eager are finite, and the
    policy with every candidate change (`together`: its outputs) is finite (trial 65: an fp16 online
    softmax's NaN gradients, removable, where eager itself is 640x off fp64 and no change reaches the limit)."""
    def bad(values: Sequence[Any]) -> set[int]:
        return {i for i, (v, x) in enumerate(zip(values, ev.oracle)) if isinstance(v, torch.Tensor)
                and v.is_floating_point() and bool((~v.isfinite() & x.isfinite()).any())}

    made = bad(ev.base_outputs) - bad(ev.eager)
    if not made:
        return []
    names = ev.program.output_labels()
    return [f"`{names[i]}`" for i in sorted(made - bad(together))]


def backward_only(program: Program, found: Sequence[Change]) -> list[str]:
    """Ids of the changes at nodes of a training step's backward that no forward output is computed from
    (what roundoff.compile cannot place)."""
    if not program.backward:
        return []
    from roundoff.plan.saved import forward_ids

    forward = forward_ids(program)
    return [c.node_id for c in found if base_id(c.node_id) not in forward and c.node_id not in forward]


def causes_left(program: Program, checked: CheckResult, found: Sequence[Change]) -> list[str]:
    """A note per cause `checked` names (its first three) that the fix `found` changes neither at its node
    nor on its source line: the outputs pass because less error reaches it, not because it is gone (trial
    83: a forward fix kept a mean in fp32 and said "fixed"; the cancellation check named, a line later,
    stayed 196x its format's rounding)."""
    reports = {r.node_id: r for r in checked.nodes}
    changed = {c.node_id for c in found}
    changed_lines = {node_source(program.node(nid)) for nid in changed} - {None}
    left = [nid for nid in checked.culprits[:3] if nid in reports and nid not in changed
            and reports[nid].own_excess > EXCESS_LIMIT and node_source(program.node(nid)) not in changed_lines
            and not any(node_id(p) in changed for p in _values_read(program, nid, reports))]  # (trial 110: the
    # `sin` of bf16 phases the fix keeps in fp32: its own error, judged from what it reads, is the fix's to change)
    return [
        f"check names {describe_node(program, nid)} as a cause ({reports[nid].own_excess:.3g} times the rounding "
        f"of {reports[nid].working_dtype or reports[nid].dtype} itself); the fix does not change it: the outputs "
        "come within the limit because less error reaches them through it, not because it is gone (`roundoff "
        "check` with the fixed policy and --every-node shows what it still loses); to remove it, change its line too"
        for nid in left]


def _values_read(program: Program, nid: str, reports: dict[str, Any]) -> list[torch.fx.Node]:
    """The values node `nid` reads, through the views the report leaves out (no report, one input)."""
    read: list[torch.fx.Node] = []
    for p in value_inputs(program.node(nid)):
        while node_id(p) not in reports and len(value_inputs(p)) == 1:
            p = value_inputs(p)[0]
        if p not in read:
            read.append(p)
    return read


def unreachable_causes(program: Program, checked: CheckResult, candidates: Sequence[Change]) -> list[str]:
    """Why no candidate change fixes what `checked` found: the causes it names that no change reaches
    (a value the code itself creates in a 16-bit dtype, ``arange(..., dtype=torch.bfloat16)``), then the
    selections that chose other indices than fp64 (a discrete decision). `program`: the planned program
    (decompositions included: ``n56.0``), whose ids `checked` and `candidates` name."""
    changed = {c.node_id for c in candidates}
    widened = {c.node_id for c in candidates if c.kind is ChangeKind.KEEP_FP32}  # (held in fp32: in its range)
    outputs = output_ids(program)
    reports = {r.node_id: r for r in checked.nodes}
    amplifiers = {a.node_id for c in checked.culprits if (a := amplifier(checked.culprits, program, reports, c))}
    notes = []
    forward = None
    if program.backward:
        from roundoff.plan.saved import forward_ids

        forward = forward_ids(program)
    origin = [checked.nan_origin] if checked.nan_origin and checked.nan_origin not in checked.culprits[:3] else []
    for nid in [*checked.culprits[:3], *origin]:
        if nid not in reports or nid in amplifiers:  # an amplifier: its source is the cause
            continue
        r = reports[nid]
        dtype = r.dtype
        narrow = dtype in SIXTEEN_BITS
        kept_output = nid in outputs and narrow  # a program output keeps its dtype
        own = r.local if r.local is not None else r.vs_oracle
        # flagged by the format's range alone, or its values stored as the format's overflow where fp64's are
        # too (trial 62: a linear attention's fp16 state, NaN/inf origin, that every candidate change left)
        out_of_range = (own.excess or 0.0) <= EXCESS_LIMIT < r.own_excess or (r.overflow > 0 and not kept_output)
        if nid in changed and not out_of_range or out_of_range and nid in widened and not kept_output:
            continue  # (a change keeping it in fp32 holds what its format cannot: trial 99's fp16 pow)
        if narrow and not (out_of_range or kept_output) and forward is not None and not {nid, base_id(nid)} & forward:
            continue  # autograd made it in the forward's dtype, not a dtype= argument (trial 63: a NaN count's div)
        notes.append(
            f"check names {describe_node(program, nid)} as a cause, and no change this policy offers "
            f"{'fixes' if nid in changed else 'reaches'} it: "
            + (f"its values lie {'beyond' if r.overflow else 'below'} {dtype}'s range, so even fp64 correctly rounded "
               f"to {dtype} loses them; " + _into_range(r.overflow > 0, forward is not None
                                                        and not {nid, base_id(nid)} & forward, r.op)
               if out_of_range else
               f"it is a program output, which keeps its dtype ({dtype}); compute it in float32 in the code"
               if kept_output else _made_narrow(program, nid, reports, dtype) if narrow else
               f"it computes in {dtype} already, the widest format these changes offer; compute it another way "
               "that stays accurate (log1p, a two-pass variance, a max subtracted first) or in float64")
        )
    return notes + _factories_upstream(program, checked, reports) + [
        sentence for sentence, _ in flip_sentences(checked, program.node)]


def _factories_upstream(program: Program, checked: CheckResult, reports: dict[str, Any]) -> list[str]:
    """A factory making in 16 bits values whose rounding a named cause carries and a later op amplifies
    (`rounded_upstream`): no change reaches it (trial 88: a NeRF's bf16 ``linspace`` depths under a
    positional encoding's ``cos``; blame said "not a placement decision" where the code's dtype= was)."""
    made: dict[str, str] = {}
    for nid in checked.culprits[:3]:
        if nid in reports and amplifier(checked.culprits, program, reports, nid) is not None:
            for u in rounded_upstream(reports[nid], program, reports):
                if is_factory(program, u) and u.dtype in SIXTEEN_BITS:
                    made.setdefault(u.node_id, u.dtype)
    return [f"check names {describe_node(program, nid)} upstream of an amplified error, and no change this policy "
            f"offers reaches it: its values are made in {dtype} by the code itself (a dtype= argument); create them "
            "in float32 in the code" for nid, dtype in made.items()]


def bits_the_compiler_decides(plan: Plan, transcendentals: str) -> list[str]:
    """Under ``--rule bitwise``, what a bit-for-bit fix of an Inductor policy rests on that no placement
    decides: its exp/sin/cos/... were evaluated with `transcendentals`' kernels, and the compiled program
    runs Inductor's own (trial 88: a NeRF's bitwise fix, bit for bit emulated, was an ulp off eager's
    loss under roundoff.compile: Inductor's vectorized sin/cos differ from eager's in thousands of
    elements, as `roundoff observe` shows)."""
    if "inductor" not in plan.policy.decompositions or transcendentals == "inductor":
        return []
    ops = sorted({d.op.split(".")[1] for d in plan.decisions.values()
                  if d.op_class is OpClass.POINTWISE_TRANSCENDENTAL and d.op.count(".") >= 2})
    if not ops:
        return []
    return [f"bit for bit as emulated, with eager's {', '.join(f'`{o}`' for o in ops[:5])}{' ...' if len(ops) > 5 else ''}: "
            "the compiled program evaluates these with Inductor's own implementations, which can differ from eager's "
            "in the last bit whatever the placement (roundoff observe compares the real kernels with the emulation)"]


def _into_range(overflow: bool, in_backward: bool, op: str = "exp") -> str:
    """How to bring a value its format cannot hold into range: loss scaling only for a backward's underflow
    (trial 68: GradScaler was advised for a forward `exp(+45)` that a mask applied after it left); an
    exp's overflow by subtracting a maximum, another op's by scaling what it reads (trial 87: an RMSNorm's
    ``x * x`` of large embeddings was given the exp's advice)."""
    if overflow and op == "exp":
        return ("keep them in range (subtract a maximum before an exp, apply a mask before the exp rather than after "
                "it) or compute in bf16/fp32")
    if overflow:
        return (f"keep them in range (scale what `{op}` reads down first: a square or product of large values "
                "overflows before they do) or compute in bf16/fp32")
    if in_backward:
        return "scale them into range (the loss: torch.amp.GradScaler) or compute in bf16/fp32"
    return "scale them into range (multiply by a power of two before, divide after) or compute in bf16/fp32"


def _made_narrow(program: Program, nid: str, reports: dict[str, Any], dtype: str) -> str:
    """Why a 16-bit cause no change reaches is 16-bit: created so by the code (a dtype= argument), or computed
    from 16-bit values it reads (trial 67: a scan's ``L_t - L_s`` of a bf16 cumsum was said to be created in
    bf16 by a dtype= argument)."""
    read = [p for p in _values_read(program, nid, reports)
            if (r := reports.get(node_id(p))) is not None and r.dtype in SIXTEEN_BITS]
    if not read:
        return f"its values are made in {dtype} by the code itself (e.g. a dtype= argument); create them in float32 in the code"
    names = ", ".join(describe_node(program, node_id(p)) for p in read[:2])
    return f"it is computed from the {dtype} values it reads ({names}); compute those in float32 in the code"


def beyond_fp32(program: Program, inputs: Sequence[torch.Tensor]) -> str | None:
    """Why no change toward the oracle can help, when that is the reason: the first node whose fp64
    values fp32 cannot hold (0 where fp64 is not, or inf where it is finite) and whose loss matters:
    fp64 run again with them held as fp32 holds them moves an output beyond the limit
    (`analyze.replay`; an ``exp(x - max)`` below 1e-38 beside a term of 1 does not, trial 45). Keeping
    values in fp32, the widest format blame's changes offer, loses them too."""
    from roundoff.analyze.check import MAX_REPLAYS
    from roundoff.analyze.replay import moves_outputs
    from roundoff.execute import Lockstep, OracleNumerics, complete_inputs
    from roundoff.numerics import round_to

    inputs = complete_inputs(program, inputs)
    ls = Lockstep(program, [OracleNumerics()], keep=True)
    exact = ls.run_inputs(inputs)[0]
    tried = 0
    for n in program.nodes():
        value = ls.env.get(n, (None,))[0] if n.op == "call_function" else None
        if not (isinstance(value, torch.Tensor) and value.dtype == torch.float64):
            continue
        in32 = round_to(value, "fp32")
        lost_at = ((in32 == 0) & (value != 0)) | (in32.isinf() & value.isfinite())
        lost = int(lost_at.sum())
        if not lost or tried >= MAX_REPLAYS:
            continue
        tried += 1
        held = torch.where(lost_at, in32.double(), value)
        matters, exact = moves_outputs(program, inputs, node_id(n), lambda _value, _read, held=held: held, exact)
        if matters:
            return (
                f"{describe_node(program, node_id(n))} has {lost} value(s) that fp32 cannot hold either (fp64's value "
                "underflows or overflows it there): compute it another way that stays in range (e.g. "
                "`logsigmoid(x)` for `log(sigmoid(x))`, `log1p`, a rescaled sum) or in fp64"
            )
    return None
