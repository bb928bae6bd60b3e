"""Notes `check` adds from the program and from real runs, beside what the emulated runs measured.

- torch's CPU attention kernel on 16-bit values, where the policy does not run it (a GPU policy).
- Modules torch.compile runs eagerly (`Program.dynamo_fallbacks`: nn.LSTM, nn.GRU, nn.RNN), named under a policy
  of torch.compile, which models their ops compiled.
- Outputs real eager makes NaN/inf where the emulated eager reference, run on the policy's graph, does not (an
  op whose eager kernel computes in 16 bits inside, split by the policy's decompositions): real eager is run once
  where the program has such an op, and the count goes on the output (`OutputVerdict.real_eager_nonfinite`).
"""

from __future__ import annotations

from dataclasses import replace

import torch

from roundoff.analyze.result import CheckResult, OutputVerdict
from roundoff.capture.program import NODE_ID, Program, node_source
from roundoff.execute.native_kernels import NATIVE_ATTENTION, SIXTEEN_BIT_INSIDE, attention_native
from roundoff.plan.model import Plan
from roundoff.policy.model import FusionModel


def _reference_lost(o: OutputVerdict) -> int:
    """The reference's elements NaN/inf where fp64 is finite: `OutputVerdict.reference_nonfinite`, which is 0
    where the result equals the reference bit for bit (then the result's own count: trial 74's inf loss, said
    to be finite in the reference)."""
    return o.reference_nonfinite or (o.nonfinite if o.vs_reference is not None and o.vs_reference.exact else 0)


def with_dynamo_fallbacks(result: CheckResult, program: Program, plan_a: Plan) -> CheckResult:
    """`result` with a note, under a policy of torch.compile (Inductor's fusion models), for each module the
    program calls that torch.compile runs eagerly (`Program.dynamo_fallbacks`: nn.LSTM, nn.GRU, nn.RNN), whose
    ops the plan models compiled (trial 74: an fp16 LSTM's gradients up to 2.2x off real torch.compile's,
    which equal eager's bit for bit)."""
    if plan_a.policy.fusion not in (FusionModel.POINTWISE_CPP, FusionModel.POINTWISE_TRITON):
        return result
    notes = tuple(
        f"{DYNAMO_FALLBACK} {module} at {source or 'an unknown line'} eagerly (Dynamo graph-breaks on nn.RNN, nn.GRU "
        f"and nn.LSTM unless torch._dynamo.config.allow_rnn = True): the real compiled program computes it as eager "
        f"does, while {plan_a.policy.name} models its ops compiled, as with allow_rnn; check that part with -p "
        f"{'eager-cuda' if plan_a.policy.fusion is FusionModel.POINTWISE_TRITON else 'eager'}. Where Dynamo cannot "
        "resume after that graph break (inside a loop, a GRU cell's decoder: trial 92), it runs the whole function "
        "eagerly and nothing is compiled (TORCH_LOGS=graph_breaks says so); `roundoff observe` runs the real "
        "compiled step and says which."
        for module, source in program.dynamo_fallbacks)
    return replace(result, notes=notes + result.notes) if notes else result


#: How `with_cpu_attention`'s note begins (the report shows it under a passing run too).
CPU_ATTENTION = "torch's CPU attention kernel"


def with_cpu_attention(result: CheckResult, plan_a: Plan) -> CheckResult:
    """`result` with a note where the program calls torch's CPU scaled-dot-product attention (flash attention,
    what eager runs and Inductor calls on CPU) on bf16/fp16 values and the policy does not run that kernel
    (`execute.native_kernels.attention_native`: eager and inductor-cpu do, bit for bit; a GPU policy models
    another kernel). The CPU kernel rounds the unnormalized attention weights to the 16-bit dtype before the V
    product; the emulation then computes attention in fp32 and rounds once, closer to fp64 (trial 79: a
    transformers OPT step's gradients 2-11x closer under emulated eager than under real eager, before eager
    ran the kernel itself)."""
    def emulated_otherwise(n: torch.fx.Node) -> bool:  # a 16-bit call the plan does not run as the kernel
        q = n.args[0].meta.get("val") if n.args and isinstance(n.args[0], torch.fx.Node) else None
        d = plan_a.decisions.get(str(n.meta.get(NODE_ID)))
        return (isinstance(q, torch.Tensor) and q.dtype in (torch.float16, torch.bfloat16)
                and not (d is not None and attention_native(n, d, plan_a)))

    nodes = [n for n in plan_a.program.graph.nodes
             if n.op == "call_function" and n.target in NATIVE_ATTENTION and emulated_otherwise(n)]
    if not nodes:
        return result
    first = nodes[0]
    dtype = str(first.args[0].meta["val"].dtype).removeprefix("torch.")
    note = (f"{CPU_ATTENTION} ({len(nodes)} call(s), first {first.meta.get(NODE_ID, first.name)} at "
            f"{node_source(first) or 'an unknown line'}) rounds the attention weights to {dtype} before multiplying "
            f"them by V; under {plan_a.policy.name} the emulation computes attention in fp32 and rounds once (it runs "
            "that kernel itself under eager and inductor-cpu), so its figures there are closer to fp64 than the "
            "CPU kernel's (1.2-1.5x on one fp16 attention's output and gradients, several times more on a "
            "transformers model's weight gradients).")
    return replace(result, notes=(note, *result.notes))


#: How the notes begin that say torch.compile runs a module eagerly (`with_dynamo_fallbacks`) and that real
#: eager makes NaN/inf where the emulated eager reference does not (`with_real_eager`): the report keys on them.
DYNAMO_FALLBACK = "torch.compile runs"
REAL_EAGER = "real eager gives"


def with_real_eager(result: CheckResult, program: Program, inputs: tuple, reference: Plan | None) -> CheckResult:
    """`result` with a note for each output real eager makes NaN/inf in more elements than the emulated
    eager reference does (and that count as the output's `real_eager_nonfinite`), where that reference runs
    another graph than the user's (the policy's decompositions: trial 72's fp16 ``mse_loss``, inf in eager,
    which computes each element's loss in fp16, was finite as emulated eager of Inductor's fp32 ``sub``,
    ``pow`` and ``mean``). Real eager is the
    captured program run by torch (one step more, taken only where the program has an op whose eager
    kernel computes in 16 bits inside, `native_kernels.SIXTEEN_BIT_INSIDE`); against the oracle, or a
    reference that is no eager policy or runs the user's graph, `result` unchanged."""
    if (reference is None or not reference.policy.name.startswith("eager")
            or reference.program.graph_module is program.graph_module
            or not any(n.target in SIXTEEN_BIT_INSIDE for n in program.graph.nodes)):
        return result
    with torch.no_grad():
        real = program.graph_module(*inputs)
    by_name = dict(zip(program.output_labels(), real if isinstance(real, (tuple, list)) else (real,)))
    notes, outputs = [], []
    for o in result.outputs:
        value = by_name.get(o.name)
        lost = int((~value.isfinite()).sum()) if isinstance(value, torch.Tensor) and value.is_floating_point() else 0
        if lost > _reference_lost(o) + o.nan_in_fp64:
            o = replace(o, real_eager_nonfinite=lost)
            notes.append(
                f"{REAL_EAGER} NaN/inf in {lost} element(s) of `{o.name}`, the eager reference in "
                f"{_reference_lost(o)}: check eager itself with -p eager --against oracle (the reference emulates "
                f"eager on {result.policy}'s graph, which computes a 16-bit loss or a norm's backward from parts "
                "eager runs as one kernel).")
        outputs.append(o)
    return replace(result, outputs=tuple(outputs), notes=result.notes + tuple(notes)) if notes else result
