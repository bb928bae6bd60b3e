"""`check`'s verdict on each float output of a run (`OutputVerdict`), its figures read from the device at once.

What a verdict means is `roundoff.analyze.verdict`'s. This module reads every output's figures
(flags, counts and metric passes: `measure_many`) together, not with a dozen host syncs per output
(a transformers model's step returns one output per parameter gradient): on CUDA in one read, every
pass launched first; on CPU the flags first, so no pass runs that they make unneeded. The per-output rule (``same``, ``allclose``,
``bitwise``) runs only where the figures do not already decide it (`implied_pass`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch

from roundoff.analyze.culprits import ancestors
from roundoff.analyze.metrics import Metrics, exact_metrics, launch_many, measure_many
from roundoff.analyze.observe import implied_pass, rmse
from roundoff.analyze.output_floor import OutputFloors
from roundoff.analyze.result import OutputVerdict
from roundoff.analyze.verdict import (
    Rule,
    judge,
    lucky_rounding_floor,
    oracle_output_passes,
    path_dtypes,
    quantum_floor,
    same_multiplier,
    widen_fp8,
)
from roundoff.capture.program import NODE_ID, Program
from roundoff.execute.formats import is_float
from roundoff.execute.interpreter import RELEASED, Lockstep
from roundoff.execute.node_numerics import round_value
from roundoff.numerics import get_format, round_to, same_bits_mask
from roundoff.numerics.metrics import read_together

#: Normwise relative error against fp64 from which an output counts as keeping too little of its
#: values to pass unremarked: where its format cannot hold them (`OutputVerdict.below_range`), a
#: passing verdict says so.
LOST_SIGNAL = 0.5


@dataclass
class _Output:
    """One float output's values and its flags as read: NaN/inf lost where fp64 is finite, NaN, the
    reference's bits equal to the result's, and the reference's own NaN/inf where fp64 is finite."""

    index: int
    res: torch.Tensor
    oracle: torch.Tensor
    ref: torch.Tensor
    judged: torch.dtype
    any_lost: bool = False
    any_nan: bool = False
    agree: bool = False
    reference_nonfinite: int = 0


def output_verdicts(
    program: Program, outs: tuple, tol: float, rule: Rule, failing_nodes: set[str] | None, by_values: bool = False,
    shown_nodes: set[str] | None = None, floors: dict[int, float] | None = None,
    settled: dict[int, Settled] | None = None, figures: tuple[LaunchedOutputs, list] | None = None,
) -> tuple[OutputVerdict, ...]:
    """One `OutputVerdict` per float output. Against the oracle with `Rule.SAME`: NaN/inf where fp64 is
    finite fails; else, where a node on its path diverges, is not finite or amplifies an error
    (`failing_nodes`, `shown_nodes`), or always with `by_values` (the screen), its values decide
    (`verdict.oracle_output_passes`, with its operand floor from `floors`, as blame judges it): a
    defect whose effect stays within the limit at an output is a finding, not a failing output.
    `settled`: outputs an `OutputJudge` settled as the run made them (their oracle values released).
    `figures`: (`output_figures` of this run, its tensors read), where they were launched with the run."""
    settled = dict(settled or {})
    has_reference = len(outs) > 2
    oracle_rule = rule is Rule.SAME and not has_reference  # (no failing nodes given: none flagged)
    found = figures[0].found if figures is not None else _outputs(program, outs, rule, settled)
    if not found and not settled:
        raise ValueError(
            f"program {program.name!r} has no floating-point outputs: nothing to check; "
            "return the float tensors whose accuracy you care about"
        )
    flagged = {i: not oracle_rule or _flagged(program, i, failing_nodes, shown_nodes, by_values)
               for i in (*settled, *(o.index for o in found))}
    if found:
        measured = figures[0].finish(figures[1]) if figures is not None else _measure(found, has_reference)
        for o, fig in zip(found, measured):
            settled[o.index] = _settle(o, fig, rule, tol, (floors or {}).get(o.index, 0.0), not has_reference,
                                       by_values=oracle_rule and flagged[o.index])
    return tuple(_verdict(program, settled[i], oracle_rule, flagged[i]) for i in sorted(settled))


def _outputs(program: Program, outs: tuple, rule: Rule, settled: dict) -> list[_Output]:
    """`_output` of each float output of `outs` (policy, oracle[, reference]) not in `settled`."""
    res_all, oracle_all = outs[0], outs[1]
    ref_all = outs[2] if len(outs) > 2 else None
    res_all = res_all if isinstance(res_all, (tuple, list)) else (res_all,)
    oracle_all = oracle_all if isinstance(oracle_all, (tuple, list)) else (oracle_all,)
    paths = path_dtypes(program.graph) if ref_all is None and rule is Rule.SAME else {}
    return [_output(program, i, res, oracle, ref_all[i] if ref_all is not None else None, paths)
            for i, (res, oracle) in enumerate(zip(res_all, oracle_all)) if is_float(res) and i not in settled]


def _output(program: Program, i: int, res: torch.Tensor, oracle: torch.Tensor, ref: torch.Tensor | None,
            paths: dict[torch.fx.Node, torch.dtype]) -> _Output:
    """Output `i`'s values; against the oracle (`ref` None), its reference is fp64 rounded to the
    narrowest format on its path (`paths`, empty for another rule: the output's own): what the
    verdict judges by (an fp32 loss of a bf16 model is held to bf16's rounding)."""
    node = program.output_args()[i]
    judged = paths.get(node, res.dtype) if isinstance(node, torch.fx.Node) else res.dtype
    return _Output(i, res, oracle, ref if ref is not None else round_value(oracle, judged).to(res.dtype), judged)


def _flagged(program: Program, i: int, failing_nodes: set[str] | None, shown_nodes: set[str] | None,
             by_values: bool) -> bool:
    """Whether output `i`'s values decide its verdict under the oracle rule (`output_verdicts`)."""
    if by_values:
        return True
    node = program.output_args()[i]
    return path_flagged(program, node.meta.get(NODE_ID, str(node)) if isinstance(node, torch.fx.Node) else str(i),
                        failing_nodes, shown_nodes)


def path_flagged(program: Program, output_id: str, failing_nodes: set[str] | None, shown_nodes: set[str] | None) -> bool:
    """Whether a node on the path of the output made by node `output_id` is flagged (in `failing_nodes` or
    `shown_nodes`): where none is, the oracle rule passes it whatever its values (`output_verdicts`)."""
    return bool(((failing_nodes or set()) | (shown_nodes or set())) & ancestors(program, {output_id}))


def judged_outputs(program: Program) -> dict[torch.fx.Node, list[int]]:
    """{node: its output indices} of the float outputs whose only reader is the output node: an
    `OutputJudge` judges them as the run makes them."""
    at: dict[torch.fx.Node, list[int]] = {}
    for i, arg in enumerate(program.output_args()):
        if isinstance(arg, torch.fx.Node) and len(arg.users) == 1 and is_float(arg.meta.get("val")):
            at.setdefault(arg, []).append(i)
    return at


class OutputJudge:
    """A `Lockstep` `on_node` (policy, oracle[, reference] sides, as `check` runs them) that settles each
    float output whose only reader is the output node as soon as the run makes it, then releases its
    value on every side (`interpreter.RELEASED`): a training step's gradients (fp64 ones at 4x the bytes
    of bf16, and the policy's and the reference's, together 2x eager's) are never all held to the end. Pass `settled` to `output_verdicts`: the same verdicts as
    judging the outputs at the end (every figure is taken from the same values)."""

    def __init__(self, program: Program, rule: Rule, tol: float, has_reference: bool,
                 floors: OutputFloors | None = None) -> None:
        """`floors`: the outputs' operand floors, recorded (by another observer) before the producer runs."""
        self.program, self.rule, self.tol, self.has_reference, self.floors = program, rule, tol, has_reference, floors
        self.paths = path_dtypes(program.graph) if not has_reference and rule is Rule.SAME else {}
        self.at = judged_outputs(program)
        self.settled: dict[int, Settled] = {}

    def __call__(self, node: torch.fx.Node, vals: tuple, ls: Lockstep) -> tuple | None:
        indices = self.at.get(node)
        if not indices or not all(is_float(v) for v in vals):
            return None
        res, oracle, *ref = (side.finish_output(node, v) for side, v in zip(ls.sides, vals))  # as the output node makes them
        ref = ref[0] if self.has_reference else None
        found = [_output(self.program, i, res, oracle, ref, self.paths) for i in indices]
        floors = self.floors.floors if self.floors is not None else {}
        for o, fig in zip(found, _measure(found, self.has_reference)):
            self.settled[o.index] = _settle(o, fig, self.rule, self.tol, floors.get(o.index, 0.0),
                                            not self.has_reference, by_values=not self.has_reference and self.rule is Rule.SAME)
        return (RELEASED,) * len(vals)


def _measure(found: list[_Output], has_reference: bool) -> list[tuple[Metrics, Metrics | None, Metrics | None]]:
    """Fill each output's flags and return its figures: (result vs fp64, result vs the reference, the
    reference in the result's dtype vs fp64; the last two None where the run agrees with its reference
    bit for bit or there is none). On CUDA every pass of every output is launched before one host read
    (`launch_outputs`: the reference's passes too, where the flags will say it agrees: they queue behind
    the run still executing); elsewhere the flags are read first and only the passes they leave are run."""
    if launch_ahead(found[0].res):
        launched = LaunchedOutputs(found, has_reference)
        return launched.finish(read_together(launched.tensors()))
    flags = [_flags(o, has_reference) for o in found]
    read = [v for t in read_together(flags) for v in t]  # the flags' one read
    triples, at = [], []
    for k, o in enumerate(found):
        at.append(len(triples))
        triples.append((o.res, o.oracle, o.res.dtype))
        if has_reference and not (bool(read[4 * k + 2]) and not read[4 * k + 1]):
            triples += [(o.res, o.ref, o.res.dtype), (o.ref.to(o.res.dtype), o.oracle, o.res.dtype)]
    return _figures(found, has_reference, read, measure_many(triples)[0], at)


def _flags(o: _Output, has_reference: bool) -> torch.Tensor:
    """[lost NaN/inf, any NaN, the reference's bits equal, the reference's NaN/inf] of output `o`, unread."""
    wide, finite = widen_fp8(o.res), o.oracle.isfinite()
    bits = (o.ref.dtype == o.res.dtype and o.ref.shape == o.res.shape) and has_reference
    none = torch.zeros((), dtype=torch.int64, device=finite.device)
    return torch.stack([
        (~wide.isfinite() & finite).any().long(), wide.isnan().any().long(),
        same_bits_mask(o.ref, o.res).all().long() if bits else none,
        (~widen_fp8(o.ref).isfinite() & finite).sum() if has_reference else none,
    ])


def _figures(found: list[_Output], has_reference: bool, read: list[float], measured: list[Metrics],
             at: list[int]) -> list[tuple[Metrics, Metrics | None, Metrics | None]]:
    """`_measure`'s figures from the flags `read` and the `measured` triples (output k's first at `at[k]`)."""
    figures = []
    for k, (o, i) in enumerate(zip(found, at)):
        lost, nan, same, ref_bad = read[4 * k : 4 * k + 4]
        o.any_lost, o.any_nan, o.agree = bool(lost), bool(nan), bool(same) and not nan
        o.reference_nonfinite = int(ref_bad) if not o.agree else 0
        figures.append((measured[i], *(measured[i + 1 : i + 3] if has_reference and not o.agree else (None, None))))
    return figures


class LaunchedOutputs:
    """Every figure pass of outputs `found` launched, none read (capturable in a CUDA graph: the
    every-node check's, `analyze.deferred`): read `tensors()` (1-D each), then `finish` with them."""

    def __init__(self, found: list[_Output], has_reference: bool) -> None:
        self.found, self.has_reference = found, has_reference
        self.flags = [_flags(o, has_reference) for o in found]
        triples, self.at = [], []
        for o in found:
            self.at.append(len(triples))
            triples.append((o.res, o.oracle, o.res.dtype))
            if has_reference:  # (the reference as it is: converted to fp64 inside each pass)
                triples += [(o.res, o.ref, o.res.dtype), (o.ref.to(o.res.dtype), o.oracle, o.res.dtype)]
        self.pending = launch_many(triples)

    def tensors(self) -> list[torch.Tensor]:
        return [*self.pending.tensors(), *self.flags]

    def finish(self, read: list[list[float]]) -> list[tuple[Metrics, Metrics | None, Metrics | None]]:
        """`_measure`'s figures from `tensors()` read (the outputs' values still held, for a pass that
        a NaN/inf element leaves to `measure`)."""
        n = len(self.pending.tensors())
        flags = [v for t in read[n:] for v in t]
        return _figures(self.found, self.has_reference, flags, self.pending.finish(read[:n]), self.at)


def output_figures(program: Program, outs: tuple, rule: Rule) -> LaunchedOutputs:
    """`LaunchedOutputs` of every float output of a run (`outs` as `output_verdicts` takes them)."""
    return LaunchedOutputs(_outputs(program, outs, rule, {}), len(outs) > 2)


def launch_ahead(value: torch.Tensor) -> bool:
    """Whether `_measure` launches every pass before reading (where kernels run asynchronously: CUDA)."""
    return value.is_cuda


def _finite_rmse(m: Metrics) -> float | None:
    """`rmse` from `m` where every element of both sides is finite (the same sum, another order), else None."""
    return m.rmse if m.nonfinite + m.ref_nan + m.ref_inf == 0 else None


@dataclass(frozen=True)
class Settled:
    """One float output's figures and every part of its verdict that reads its values (`_settle`): what
    is left to decide needs only which nodes are flagged (`_verdict`)."""

    index: int
    by_values: bool | None  # no NaN/inf lost and `oracle_output_passes` (None: not needed, not computed)
    by_rule: bool | None  # the rule against the reference (None under the oracle rule)
    any_lost: bool
    verdict: OutputVerdict  # its `passes` still to be decided


def _settle(o: _Output, fig: tuple[Metrics, Metrics | None, Metrics | None], rule: Rule, tol: float, floor: float,
            vs_oracle: bool, by_values: bool) -> Settled:
    """Everything output `o`'s verdict reads from its values; `by_values`: also whether its values pass
    the oracle rule (`verdict.oracle_output_passes`, with its operand `floor`)."""
    res, oracle, ref, i = o.res, o.oracle, o.ref, o.index
    vs_fp64, vs_ref, ref_fp64 = fig
    rmse_res = r if (r := _finite_rmse(vs_fp64)) is not None else rmse(res, oracle)
    values = (not o.any_lost and oracle_output_passes(res, oracle, o.judged, floor)) if by_values else None
    by_rule = None
    if not (vs_oracle and rule is Rule.SAME):
        if o.agree:
            by_rule = not o.any_lost
        elif rule is Rule.SAME and ref_fp64 is not None and implied_pass(vs_fp64, ref_fp64):
            by_rule = True  # what `same` must return, from the two values' figures against fp64
        else:
            by_rule = judge(rule, ref.to(res.dtype), res, oracle, tol)
            if not by_rule and o.reference_nonfinite and not o.any_lost:  # the reference fails there, not the
                # result: those elements left out, as a node's verdict leaves them (trial 74: of four finite VAE
                # gradients beside eager's NaN, one failed and three passed, by what `same` made of the NaN)
                left_out = ~widen_fp8(ref).isfinite() & oracle.isfinite()
                by_rule = judge(rule, ref.to(res.dtype), res, oracle.masked_fill(left_out, math.nan), tol)
    if o.agree:
        rmse_ref = rmse_res
    else:
        own = _finite_rmse(ref_fp64) if ref_fp64 is not None and ref.dtype == res.dtype else None
        rmse_ref = max((own if own is not None else rmse(ref, oracle),
                        *(oracle_limit_floors(oracle, o.judged, floor) if vs_oracle else ())))
    below = 0  # a result that keeps under half its signal: count what its format cannot hold at all
    if vs_fp64.norm_rel >= LOST_SIGNAL and res.dtype != torch.float64:
        below = int(((round_to(oracle, get_format(res.dtype)) == 0) & (oracle != 0) & oracle.isfinite()).sum())
    lost = (~widen_fp8(res).isfinite() & oracle.isfinite()) if o.any_lost else None
    best = round_to(oracle, get_format(res.dtype)) if lost is not None and res.dtype != torch.float64 else oracle
    verdict = OutputVerdict(
        name="", node_id="", passes=False, rmse_result=rmse_res, rmse_reference=rmse_ref, vs_oracle=vs_fp64,
        vs_reference=None if vs_oracle else exact_metrics(widen_fp8(res)) if o.agree else vs_ref,
        rule=rule.value, nonfinite=int(lost.sum()) if lost is not None else 0,
        unrepresentable=int((lost & ~best.isfinite()).sum()) if lost is not None else 0,
        nan_in_fp64=int((oracle.isnan() & widen_fp8(res).isnan()).sum()) if o.any_nan else 0,
        dtype=str(res.dtype).removeprefix("torch."), judged_dtype=str(o.judged).removeprefix("torch."),
        reference_nonfinite=o.reference_nonfinite, below_range=below,
    )
    return Settled(i, values, by_rule, o.any_lost, verdict)


def _verdict(program: Program, s: Settled, oracle_rule: bool, flagged: bool) -> OutputVerdict:
    """Output `s`'s verdict: under the oracle rule, by its values where `flagged` (else it passes unless
    it lost NaN/inf), else by the rule against the reference."""
    if oracle_rule:
        passes = not s.any_lost and (bool(s.by_values) if flagged else True)
    else:
        passes = bool(s.by_rule)
    node = program.output_args()[s.index]
    nid = node.meta.get(NODE_ID, str(node)) if isinstance(node, torch.fx.Node) else str(s.index)
    return replace(s.verdict, name=program.output_labels()[s.index], node_id=nid, passes=passes)


def oracle_limit_floors(oracle: torch.Tensor, judged: torch.dtype, floor: float) -> tuple[float, ...]:
    """The RMS errors besides fp64's rounding that an output's limit against the oracle is 16x of
    (`verdict.excess_within`), over its finite elements: its operand `floor` (a 2-norm), a quarter of the
    unit roundoff of its judged format, so that a scalar loss fp64 rounds luckily is not held to that
    luck, and half its subnormal quantum (`quantum_floor`). Its reference RMSE is the largest of these and
    fp64 correctly rounded's, in check's outputs table and observe's alike (trial 78: observe showed the
    rounded one alone, 29.9x where check said 17.2x of the same gradient)."""
    finite = oracle.isfinite()
    n = max(int(finite.sum()), 1)
    lucky = lucky_rounding_floor(judged) if judged.is_floating_point else 0.0
    scale = float(oracle[finite].double().norm()) if bool(finite.any()) else 0.0
    return floor / math.sqrt(n), scale * lucky / math.sqrt(n), quantum_floor(judged) if judged.is_floating_point else 0.0


#: How the note on a program without a 16-bit value begins: shown under the verdict, not last (trial 80:
#: an fp32 UNet's report said so in its last of ~200 lines).
WIDE_ONLY = "every floating-point value of"
#: How the note on a program with inputs that require grad, checked without its backward, begins (`scope_notes`).
NOT_DIFFERENTIATED = "not differentiated:"
#: how each of `scope_notes`' notes begins (a report shows them under a passing run too)
SCOPE_NOTE_STARTS = ("not judged", "differentiated:", NOT_DIFFERENTIATED, WIDE_ONLY)


#: How `slack_notes`' note begins (a report shows it under a passing run too).
SLACK_NOTE = "passing `same` by its absolute slack alone"


def slack_notes(outputs: Sequence[OutputVerdict], rule: Rule, tol: float, vs_oracle: bool) -> tuple[str, ...]:
    """Say which outputs pass `same` against a reference only by its absolute slack: their RMS error over the
    rule's multiple of the reference's, yet below ``tol/10`` (`verdict.same_rmse_rule`), which `same`, made for
    values of order 1, allows whatever the multiple (trial 85: a 1e-7-scale output 37x its reference passed
    without a word; a ConvNeXt's layer-scale gradients, 1e-12 to 1e-9, pass against any reference)."""
    if vs_oracle or rule is not Rule.SAME:
        return ()
    slack = [o for o in outputs if o.passes and not o.nonfinite and not o.noise_only and o.rmse_reference > 0
             and o.rmse_result <= tol / 10
             and o.rmse_result > same_multiplier(getattr(torch, o.dtype)) * o.rmse_reference]
    if not slack:
        return ()
    worst = max(slack, key=lambda o: o.rmse_result / o.rmse_reference)
    names = ", ".join(f"`{o.name}`" for o in slack[:3]) + (f" and {len(slack) - 3} more" if len(slack) > 3 else "")
    return (f"{SLACK_NOTE}: {names}, their RMS error below tol/10 = {tol / 10:.3g} "
            f"(`{worst.name}`: {worst.rmse_result:.3g}, {worst.rmse_result / worst.rmse_reference:.3g}x the "
            f"reference's), which `same`, made for values of order 1, allows whatever the multiple; a smaller --tol "
            f"(about {worst.rmse_reference:.0e}) holds them to it.",)


def _scalar(arg: object) -> bool:
    """Whether output `arg` is a floating-point tensor of one element."""
    v = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
    return isinstance(v, torch.Tensor) and v.is_floating_point() and v.numel() == 1


def scope_notes(program: Program) -> tuple[str, ...]:
    """What a check of `program` does not judge: its outputs that are not floating point (an integer count
    computed from floats can still change with rounding), what a backward differentiates where it sums
    several outputs, that a one-number output of parameters that require grad (a loss) was checked without
    its backward, or another forward of such parameters as an inference graph, and, where no value is narrower than fp32, that the policies differ only in summation
    order and contraction (trial 61: a model checked before its ``.half()``)."""
    labels = program.output_labels()
    skipped = [f"`{labels[i]}` ({str(v.dtype).removeprefix('torch.')})" for i, a in enumerate(program.output_args())
               if isinstance(a, torch.fx.Node) and isinstance(v := a.meta.get("val"), torch.Tensor)
               and not v.is_floating_point()]
    notes = [(f"not judged: {', '.join(skipped)}, not floating point; one computed from floats (a count, an "
              "argmax) can still change with their rounding: return the floats it is made from to check them")
             ] if skipped else []
    forward = [f"`{labels[i]}`" for i, a in enumerate(program.output_args()[: program.num_forward_outputs])
               if isinstance(a, torch.fx.Node) and isinstance(v := a.meta.get("val"), torch.Tensor)
               and v.is_floating_point()]
    if program.backward and len(forward) > 1 and not any(n.startswith("cotangent") for n in program.input_names):
        notes.append(  # (trial 77: `return loss, pred` for logging took pred's sum into every gradient)
            f"differentiated: the sum of the floating-point outputs {', '.join(forward[:4])}"
            f"{' and more' if len(forward) > 4 else ''} (each summed, no cotangents given), so every gradient is "
            "of that sum; return the loss alone to differentiate it alone")
    if not program.backward and program.trainable and len(forward) == 1 and _scalar(program.output_args()[0]):
        notes.append(  # (trial 78: a training loss checked ok without its gradients, no word of them)
            f"{NOT_DIFFERENTIATED} {forward[0]} is one number computed from {len(program.trainable)} input(s) that require "
            "grad (a loss?), and only its forward was checked; add --backward (capture(..., backward=True)) to "
            "check the gradients a training step computes from it")
    elif not program.backward and program.trainable:
        notes.append(  # (trial 80: a train-mode Gemma's logits predicted as the no_grad compile, 0.00048 where
            # torch.compile with gradients enabled gave 0.00064, and no word of it)
            f"{NOT_DIFFERENTIATED} {len(program.trainable)} input(s) require grad; a compiler's forward is modelled "
            "as compiled under torch.no_grad(), and with gradients enabled torch.compile compiles a training "
            "forward that can fuse and round otherwise: --backward checks the training step (a function that "
            "runs under torch.no_grad() itself is compiled as modelled: then this does not apply)")
    floats = {v.dtype for n in program.graph.nodes if isinstance(v := n.meta.get("val"), torch.Tensor)
              and v.is_floating_point()}
    if floats and all(torch.finfo(d).bits >= 32 for d in floats):
        notes.append(
            f"{WIDE_ONLY} {program.name!r} is {'/'.join(sorted(str(d).removeprefix('torch.') for d in floats))}:"
            " the policies differ here only in summation order and FMA contraction, not in the bf16/fp16 roundings "
            "they are about; to check the low-precision run, pass bf16/fp16 inputs (model.half(), "
            "x.to(torch.bfloat16))")
    return tuple(notes)
