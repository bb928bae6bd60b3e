"""Outputs judged inside a captured run: `OutputJudge` for a CUDA graph, which cannot read values.

A captured run's memory pool keeps the run's peak for as long as the graph lives. Where every output
is held to the end, that peak holds a training step's gradients three times over (the policy's, the
reference's and fp64's at 4x the bytes of bf16 ones). `CapturedOutputJudge` launches, at each output
whose only reader is the output node, every figure its verdict reads (the metric passes of
`output_verdicts.LaunchedOutputs`, the flags, the rule's own test) and releases its values on every
side; `settle` takes the verdicts from those figures once the replay has run.

Numeric contract: the verdicts are `OutputJudge`'s, from the same figures of the same values. Where a
verdict needs the values themselves (a NaN/inf, an output that keeps under half its signal, ``same``
decided by its RMSE test, a reference in another dtype), `settle` raises `NeedsValues` and the caller
judges interpreted instead. Against the oracle, the sums `verdict.oracle_output_passes` and the
output's limit read are launched too, over every element as the value-reading code takes them (all
finite there), so they are the same sums; an operand floor (`output_floor`) is not taken: that check
keeps its values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from roundoff.analyze.metrics import Metrics, exact_metrics, from_stats, launch_many
from roundoff.analyze.observe import implied_pass
from roundoff.analyze.output_verdicts import (
    LOST_SIGNAL,
    Settled,
    _finite_rmse,
    _flags,
    _output,
    judged_outputs,
)
from roundoff.analyze.result import OutputVerdict
from roundoff.analyze.verdict import (
    EXCESS_LIMIT,
    Rule,
    lucky_rounding_floor,
    path_dtypes,
    quantum_floor,
    unscaled_flag,
    widen_fp8,
)
from roundoff.capture.program import Program
from roundoff.execute.formats import is_float
from roundoff.execute.interpreter import RELEASED, Lockstep
from roundoff.numerics import round_to, same_bits_mask
from roundoff.numerics.metrics import PendingStats


class NeedsValues(Exception):
    """A decision needs a node's values, not only its gathered figures: check interpreted instead."""


@dataclass(frozen=True)
class _Made:
    """One judged output as captured: what its verdict needs besides the figures read."""

    index: int
    dtype: torch.dtype  # the result's
    ref_dtype: torch.dtype  # the reference's (against the oracle: fp64 rounded to `judged`, as the result's)
    judged: torch.dtype
    numel: int
    pending: PendingStats  # (result, fp64)[, (result, reference), (reference as the result's dtype, fp64)], stubs
    extras: tuple[str, ...]  # the figures launched after the flags, in order (`_extras`)


def _stub(t: torch.Tensor) -> torch.Tensor:
    """`t`'s shape and dtype without its storage (what `PendingStats.finish` reads of a pair)."""
    return torch.empty_like(t, device="meta")


class CapturedOutputJudge:
    """A `Lockstep` `on_node` (policy, oracle[, reference] sides) for a run captured as a CUDA graph:
    see the module doc. Call `begin` before each run it observes (a capture runs twice: warm-up, then
    the captured run); `tensors()` are the figures to return from the captured run, read after a replay
    and passed to `settle`."""

    def __init__(self, program: Program, rule: Rule, tol: float, has_reference: bool = True) -> None:
        self.program, self.rule, self.tol, self.has_reference = program, rule, tol, has_reference
        self.by_values = not has_reference and rule is Rule.SAME  # (`OutputJudge`'s)
        self.paths = path_dtypes(program.graph) if self.by_values else {}
        self.at = judged_outputs(program)
        self.made: list[_Made] = []
        self._tensors: list[torch.Tensor] = []

    @property
    def key(self) -> tuple:
        """What the figures it launches depend on besides the run (for a captured run's cache key)."""
        return ("judged outputs", self.rule.value, self.tol, self.has_reference)

    def begin(self) -> None:
        self.made, self._tensors = [], []

    def __call__(self, node: torch.fx.Node, vals: tuple, ls: Lockstep) -> tuple | None:
        indices = self.at.get(node)
        if not indices or not all(is_float(v) for v in vals):
            return None
        res, oracle, *rest = (side.finish_output(node, v) for side, v in zip(ls.sides, vals))
        for i in indices:
            o = _output(self.program, i, res, oracle, rest[0] if self.has_reference else None, self.paths)
            ref = o.ref  # (against the oracle: fp64 rounded to the format it is judged in)
            triples = [(res, oracle, res.dtype)]  # (as `LaunchedOutputs` launches them)
            if self.has_reference:  # (the reference as it is, converted inside each pass)
                triples += [(res, ref, res.dtype), (ref.to(res.dtype), oracle, res.dtype)]
            pending = launch_many(triples)
            extras = self._extras(res, oracle, ref, o.judged)
            self._tensors += [*pending.tensors(), _flags(o, self.has_reference),
                              *(t.double().reshape(1) for t in extras.values())]
            stripped = PendingStats([(_stub(a), _stub(r), f) for a, r, f in pending.stats.pairs], pending.stats.rows)
            self.made.append(_Made(i, res.dtype, ref.dtype, o.judged, res.numel(), stripped, tuple(extras)))
        return (RELEASED,) * len(vals)

    def _extras(self, res: torch.Tensor, oracle: torch.Tensor, ref: torch.Tensor,
                judged: torch.dtype) -> dict[str, torch.Tensor]:
        """The figures besides the metric passes and the flags that `_settle` reads of the values, as the
        value-reading code computes them where every element is finite (scalars, unread)."""
        out: dict[str, torch.Tensor] = {}
        if self.rule in (Rule.SAME, Rule.ALLCLOSE) and ref.shape == res.shape and not self.by_values:
            out["close"] = close_flag(self.rule, widen_fp8(ref), widen_fp8(res), oracle, self.tol)
        if self.rule is Rule.BITWISE and not self.has_reference and ref.dtype == res.dtype and ref.shape == res.shape:
            out["bits"] = same_bits_mask(ref, res).all()
        if not self.has_reference:
            x64 = oracle.reshape(-1).clone()  # (as `oracle[finite]` takes every element: a fresh flat copy)
            out["rmse_ref"] = torch.sqrt(torch.mean((ref.double() - oracle.double()) ** 2))  # (`observe.rmse`)
            out["scale"] = x64.double().norm()
            if self.by_values:  # `verdict.excess_within`'s sums
                rounded = round_to(x64, judged).double()
                out["err"] = (res.double().reshape(-1) - x64).norm()
                out["rounding"] = (rounded - x64).norm()
                out["held"] = rounded.isfinite().all()
        return out

    def tensors(self) -> list[torch.Tensor]:
        return list(self._tensors)

    def settle(self, read: list[list[float]]) -> dict[int, Settled]:
        """{output index: `Settled`} from `tensors()` read in order; `NeedsValues` where one needs values."""
        settled, at = {}, 0
        for m in self.made:
            n = len(m.pending.tensors())
            stats = m.pending.finish(read[at : at + n])
            lost, nan, same, ref_bad = read[at + n]
            extras = {name: read[at + n + 1 + k][0] for k, name in enumerate(m.extras)}
            at += n + 1 + len(m.extras)
            try:
                settled[m.index] = _settle_from_figures(m, stats, bool(lost), bool(nan), bool(same) and not nan,
                                                        int(ref_bad), extras, self.rule, self.has_reference)
            except NeedsValues as e:
                raise NeedsValues(f"output `{self.program.output_labels()[m.index]}`: {e}") from None
        return settled


def close_flag(rule: Rule, ref: torch.Tensor, res: torch.Tensor, oracle: torch.Tensor, tol: float) -> torch.Tensor:
    """Not read, for finite values: under `Rule.ALLCLOSE` whether `verdict.judge` passes; under
    `Rule.SAME`, whether ``same``'s first test, ``allclose(ref, res, atol=tol, rtol=tol)``, passes
    on values `same_rule` takes unscaled (then it passes; where it fails, or where `same_rule` scales
    them, it compares RMSEs, which needs the values)."""
    if rule is Rule.ALLCLOSE:
        from torch.testing._comparison import default_tolerances

        rtol, atol = default_tolerances(res.dtype)
        return torch.isclose(res, ref.to(res.dtype), rtol=rtol, atol=atol, equal_nan=True).all()
    return torch.isclose(ref, res, rtol=tol, atol=tol).all() & unscaled_flag(oracle, ref)


def _settle_from_figures(m: _Made, stats: list, lost: bool, nan: bool, agree: bool, ref_bad: int,
                         extras: dict[str, float], rule: Rule, has_reference: bool) -> Settled:
    """`output_verdicts._settle` from figures only, without an operand floor (`NeedsValues` where it
    reads values)."""
    if lost or nan or any(s is None for s in stats) or not m.numel:
        raise NeedsValues("it has NaN/inf values, which its verdict reads")
    vs_fp64, *against_ref = (from_stats(s) for s in stats)  # (as `PendingMetrics.finish` makes them)
    if vs_fp64.norm_rel >= LOST_SIGNAL and m.dtype != torch.float64:
        raise NeedsValues("it keeps under half its signal (its values below the format's range are counted)")
    res_rmse = _finite_rmse(vs_fp64)
    assert res_rmse is not None  # (every element finite: the stats exist)
    values = None
    if has_reference:
        vs_ref, ref_fp64 = against_ref
        by_rule, rmse_ref = _by_rule_against_reference(m, vs_fp64, ref_fp64, agree, extras, rule)
    else:  # against the oracle: `output_verdicts.oracle_limit_floors` with no operand floor, every element finite
        vs_ref, lucky = None, lucky_rounding_floor(m.judged) if m.judged.is_floating_point else 0.0
        quantum = quantum_floor(m.judged) if m.judged.is_floating_point else 0.0
        rmse_ref = max(extras["rmse_ref"], 0.0, extras["scale"] * lucky / math.sqrt(m.numel), quantum)
        by_rule = None if rule is Rule.SAME else _by_rule(rule, extras)
        if rule is Rule.SAME:  # `verdict.excess_within`, no operand floor
            if not extras["held"]:
                raise NeedsValues("fp64 overflows the format it is judged in there (its rounding is summed from the values)")
            err, scale = extras["err"], extras["scale"]
            floor = extras["rounding"] / max(scale, 1e-300)
            values = err == 0.0 or err <= EXCESS_LIMIT * max(scale * max(floor, lucky_rounding_floor(m.judged)),
                                                             quantum * math.sqrt(m.numel))
    verdict = OutputVerdict(
        name="", node_id="", passes=False, rmse_result=res_rmse, rmse_reference=rmse_ref, vs_oracle=vs_fp64,
        vs_reference=(_agreeing(m.numel) if agree else vs_ref) if has_reference else None, rule=rule.value, nonfinite=0,
        unrepresentable=0, nan_in_fp64=0, dtype=str(m.dtype).removeprefix("torch."),
        judged_dtype=str(m.judged).removeprefix("torch."), reference_nonfinite=0 if agree else ref_bad, below_range=0,
    )
    return Settled(m.index, values, by_rule, False, verdict)


def _by_rule_against_reference(m: _Made, vs_fp64: Metrics, ref_fp64: Metrics, agree: bool, extras: dict[str, float],
                               rule: Rule) -> tuple[bool, float]:
    """(`verdict.judge`, the reference's RMS error) against a reference, from the figures."""
    if agree:
        return True, vs_fp64.rmse
    if rule is Rule.SAME and implied_pass(vs_fp64, ref_fp64):
        by_rule = True
    elif "close" in extras and (rule is Rule.ALLCLOSE or extras["close"]):
        by_rule = bool(extras["close"])  # (`same` passes where its allclose does)
    elif rule is Rule.BITWISE and m.ref_dtype == m.dtype:
        by_rule = False  # (the flags: the bits differ)
    else:
        raise NeedsValues(f"`{rule.value}` needs its values (its figures do not decide it)")
    rmse_ref = _finite_rmse(ref_fp64) if m.ref_dtype == m.dtype else None
    if rmse_ref is None:
        raise NeedsValues("its reference is in another dtype (its error is measured from the values)")
    return by_rule, rmse_ref


def _by_rule(rule: Rule, extras: dict[str, float]) -> bool:
    """`verdict.judge` against fp64 rounded to the output's format, under `allclose` or `bitwise`."""
    if rule is Rule.BITWISE and "bits" in extras:
        return bool(extras["bits"])
    if rule is Rule.ALLCLOSE and "close" in extras:
        return bool(extras["close"])
    raise NeedsValues(f"`{rule.value}` needs its values (its figures do not decide it)")


def _agreeing(numel: int) -> Metrics:
    """`exact_metrics` of a finite result of `numel` elements (its values are gone; it has no infinities)."""
    return exact_metrics(torch.empty(numel, device="meta"), infinities=0)
