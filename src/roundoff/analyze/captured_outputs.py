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
judges interpreted instead. Against a reference only: against the oracle the verdict reads the values
(`verdict.oracle_output_passes`, the operand floor), so those runs keep them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from roundoff.analyze.metrics import Metrics, PendingMetrics, exact_metrics, from_stats, launch_many
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
from roundoff.analyze.verdict import Rule, widen_fp8
from roundoff.capture.program import Program
from roundoff.execute.formats import is_float
from roundoff.execute.interpreter import RELEASED, Lockstep
from roundoff.numerics.metrics import PendingStats


class NeedsValues(Exception):
    """A decision needs a node's values, not only its gathered figures: check interpreted instead."""


@dataclass(frozen=True)
class _Made:
    """One judged output as captured: what its verdict needs besides the figures read."""

    index: int
    dtype: torch.dtype  # the result's
    ref_dtype: torch.dtype
    judged: torch.dtype
    numel: int
    pending: PendingMetrics  # (result, fp64), (result, reference), (reference as the result's dtype, fp64)
    close: bool  # whether the rule's own test was launched (after the flags)


def _stub(t: torch.Tensor) -> torch.Tensor:
    """`t`'s shape and dtype without its storage (what `PendingStats.finish` reads of a pair)."""
    return torch.empty_like(t, device="meta")


class CapturedOutputJudge:
    """A `Lockstep` `on_node` (policy, oracle, reference sides) for a run captured as a CUDA graph: see
    the module doc. Call `begin` before each run it observes (a capture runs twice: warm-up, then the
    captured run); `tensors()` are the figures to return from the captured run, read after a replay
    and passed to `settle`."""

    def __init__(self, program: Program, rule: Rule, tol: float) -> None:
        self.program, self.rule, self.tol = program, rule, tol
        self.at = judged_outputs(program)
        self.made: list[_Made] = []
        self._tensors: list[torch.Tensor] = []

    @property
    def key(self) -> tuple:
        """What the figures it launches depend on besides the run (for a captured run's cache key)."""
        return ("judged outputs", self.rule.value, self.tol)

    def begin(self) -> None:
        self.made, self._tensors = [], []

    def __call__(self, node: torch.fx.Node, vals: tuple, ls: Lockstep) -> tuple | None:
        indices = self.at.get(node)
        if not indices or not all(is_float(v) for v in vals):
            return None
        res, oracle, ref = (side.finish_output(node, v) for side, v in zip(ls.sides, vals))
        for i in indices:
            o = _output(self.program, i, res, oracle, ref, {})
            # (as `LaunchedOutputs` launches them; the reference as it is, converted inside each pass)
            pending = launch_many([(res, oracle, res.dtype), (res, ref, res.dtype), (ref.to(res.dtype), oracle, res.dtype)])
            close = self.rule in (Rule.SAME, Rule.ALLCLOSE) and ref.shape == res.shape
            self._tensors += [*pending.tensors(), _flags(o, True)]
            if close:
                self._tensors.append(close_flag(self.rule, widen_fp8(ref), widen_fp8(res), self.tol).long().reshape(1))
            stripped = PendingMetrics([(_stub(a), _stub(r), d) for a, r, d in pending.triples], PendingStats(
                [(_stub(a), _stub(r), f) for a, r, f in pending.stats.pairs], pending.stats.rows))
            self.made.append(_Made(i, res.dtype, ref.dtype, o.judged, res.numel(), stripped, close))
        return (RELEASED,) * len(vals)

    def tensors(self) -> list[torch.Tensor]:
        return list(self._tensors)

    def settle(self, read: list[list[float]]) -> dict[int, Settled]:
        """{output index: `Settled`} from `tensors()` read in order; `NeedsValues` where one needs values."""
        settled, at = {}, 0
        for m in self.made:
            n = len(m.pending.tensors())
            stats = m.pending.stats.finish(read[at : at + n])
            lost, nan, same, ref_bad = read[at + n]
            close = bool(read[at + n + 1][0]) if m.close else None
            at += n + 1 + int(m.close)
            try:
                settled[m.index] = _settle_from_figures(m, stats, bool(lost), bool(nan), bool(same) and not nan,
                                                        int(ref_bad), close, self.rule)
            except NeedsValues as e:
                raise NeedsValues(f"output `{self.program.output_labels()[m.index]}`: {e}") from None
        return settled


def close_flag(rule: Rule, ref: torch.Tensor, res: torch.Tensor, tol: float) -> torch.Tensor:
    """Not read, for finite values: under `Rule.ALLCLOSE` whether `verdict.judge` passes; under
    `Rule.SAME`, whether ``same``'s first test, ``allclose(ref, res, atol=tol, rtol=tol)``, passes
    (then ``same`` passes; where it fails, ``same`` compares RMSEs, which needs the values)."""
    if rule is Rule.ALLCLOSE:
        from torch.testing._comparison import default_tolerances

        rtol, atol = default_tolerances(res.dtype)
        return torch.isclose(res, ref.to(res.dtype), rtol=rtol, atol=atol, equal_nan=True).all()
    return torch.isclose(ref, res, rtol=tol, atol=tol).all()


def _settle_from_figures(m: _Made, stats: list, lost: bool, nan: bool, agree: bool, ref_bad: int,
                         close: bool | None, rule: Rule) -> Settled:
    """`output_verdicts._settle` against a reference, from figures only (`NeedsValues` where it reads values)."""
    if lost or nan or any(s is None for s in stats):
        raise NeedsValues("it has NaN/inf values, which its verdict reads")
    vs_fp64, vs_ref, ref_fp64 = (from_stats(s) for s in stats)  # (as `PendingMetrics.finish` makes them)
    if vs_fp64.norm_rel >= LOST_SIGNAL and m.dtype != torch.float64:
        raise NeedsValues("it keeps under half its signal (its values below the format's range are counted)")
    if agree:
        by_rule, rmse_ref = True, vs_fp64.rmse
    else:
        if rule is Rule.SAME and implied_pass(vs_fp64, ref_fp64):
            by_rule = True
        elif close is not None and (rule is Rule.ALLCLOSE or close):
            by_rule = close  # (`same` passes where its allclose does)
        elif rule is Rule.BITWISE and m.ref_dtype == m.dtype:
            by_rule = False  # the bits differ (the flags)
        else:
            raise NeedsValues(f"`{rule.value}` needs its values (its figures do not decide it)")
        rmse_ref = _finite_rmse(ref_fp64) if m.ref_dtype == m.dtype else None
        if rmse_ref is None:
            raise NeedsValues("its reference is in another dtype (its error is measured from the values)")
    res_rmse = _finite_rmse(vs_fp64)
    assert res_rmse is not None  # (every element finite: the stats exist)
    verdict = OutputVerdict(
        name="", node_id="", passes=False, rmse_result=res_rmse, rmse_reference=rmse_ref, vs_oracle=vs_fp64,
        vs_reference=_agreeing(m) if agree else vs_ref, rule=rule.value, nonfinite=0, unrepresentable=0,
        nan_in_fp64=0, dtype=str(m.dtype).removeprefix("torch."), judged_dtype=str(m.judged).removeprefix("torch."),
        reference_nonfinite=0 if agree else ref_bad, below_range=0,
    )
    return Settled(m.index, None, by_rule, False, verdict)


def _agreeing(m: _Made) -> Metrics:
    """`exact_metrics` of a finite result of `m`'s size (its values are gone; it has no infinities)."""
    return exact_metrics(torch.empty(m.numel, dtype=widen_fp8(torch.empty(0, dtype=m.dtype)).dtype, device="meta"),
                         infinities=0)
