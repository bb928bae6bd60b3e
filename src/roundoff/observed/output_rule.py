"""Which of a compiled program's outputs fail against fp64, and what on their path makes them fail.

`observe_compiled` judges each kernel buffer locally (`roundoff.observed.compare`); this module holds
the rules that judge the compiled program's outputs from those reports, as `check` judges a
program's outputs from its node reports: an output over the limit by value fails only where a kernel
on its path is flagged (`flagged_on_path`); a kernel computing a wrong value fails the outputs its
value moves beyond their own format's limit (`moved_by_wrong_kernels`); a buffer that loses values
outside its format's range is named after the others where that loss moves no output
(`range_losses_moving_nothing`). Each "moves" is measured by running fp64 again with the value
replaced (`roundoff.analyze.replay`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from roundoff.analyze.check import MAX_REPLAYS
from roundoff.analyze.culprits import ancestors
from roundoff.analyze.observe import rmse
from roundoff.analyze.replay import as_held, moves_outputs, replayed_outputs
from roundoff.analyze.verdict import EXCESS_LIMIT, Verdict, oracle_output_passes
from roundoff.capture.program import NODE_ID, Program, base_id
from roundoff.execute.interpreter import is_random
from roundoff.numerics import get_format, round_to
from roundoff.observed.buffers import Observed
from roundoff.observed.compare import KernelReport, substitution_nodes


@dataclass(frozen=True)
class OutputFailure:
    """A compiled output that fails: against the oracle, by `check`'s output rule against the fp64 run of
    the whole program (`verdict.oracle_output_passes`: NaN/inf where fp64 is finite, or an error over
    `EXCESS_LIMIT` times fp64 correctly rounded to the narrowest format on its path or its operand
    floor); against eager, by the chosen rule (`verdict.judge`) against real eager's output of the
    same program, fp64 of the whole program as the reference's reference."""

    name: str
    node_id: str  # the program node the output is ("" for a constant)
    rmse: float  # against fp64 of the whole program, over elements finite on both sides (NaN: none is)
    reference_rmse: float  # the reference's against fp64: fp64 correctly rounded to the judged format, or eager's
    nonfinite: int  # elements NaN/inf where fp64 is finite
    #: Against the oracle, an output within the limit of the narrowest format on its path that fails in
    #: its own format because of kernels computing wrong values (`ObserveResult.failing_outputs`): their ids
    moved_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class CompiledOutput:
    """A floating-point output of the compiled program, measured whether it passes or not: its RMSE against
    fp64 of the whole program and its reference's (fp64 correctly rounded to the judged format, or real
    eager's), over the elements finite on all three (NaN: none is), and its NaN/inf where fp64 is finite."""

    name: str
    node_id: str
    rmse: float
    reference_rmse: float
    nonfinite: int
    passes: bool = True


@dataclass(frozen=True)
class SelectionFlip:
    """A selection of the compiled program that chose other indices than fp64 (see `ObserveResult`)."""

    node_id: str
    op: str
    source: str | None
    differing: int
    of: int


def flagged_on_path(program: Program, failures: tuple[OutputFailure, ...], reports: list[KernelReport],
                     flips: tuple[SelectionFlip, ...] = ()) -> tuple[tuple[OutputFailure, ...], tuple[OutputFailure, ...]]:
    """`failures` split as `check` judges outputs against fp64 (`roundoff.analyze.verdict`): those NaN/inf
    where fp64 is finite, or with a flagged node on their path (a buffer that diverges or is NaN/inf, or a
    node computed in a kernel that amplifies an error it reads, `KernelReport.amplifying`, or a selection
    whose choice differs from fp64's and matters, `SelectionFlip`), fail; the rest,
    over the limit by value alone, pass."""
    flagged = {k.node_id for k in reports if k.verdict is not Verdict.OK} | {i for k in reports for i, _op, _src in k.amplifying}
    flagged |= {base_id(f.node_id) for f in flips}
    fail, passing = [], []
    for f in failures:
        path = ancestors(program, {base_id(f.node_id)}) if f.node_id else set()  # (a planned node's id: n7.2)
        (fail if f.nonfinite or math.isnan(f.rmse) or path & flagged else passing).append(f)
    return tuple(fail), tuple(passing)


def moved_by_wrong_kernels(
    program: Program, run: Program, inputs: Sequence[Any], observed: Mapping[str, Observed], exact: Sequence[Any],
    compiled: tuple, kernels: Sequence[KernelReport], failing: set[str],
) -> tuple[OutputFailure, ...]:
    """The compiled outputs (not in `failing`) over the limit of their own format (fp64 correctly rounded
    to it, 16x) that fp64's run moves beyond it too when given the observed values of the kernels that
    diverge beyond the limit (a wrong value, not a rounding: Inductor's multi-query index_put
    backward, 143% off, trial 48): their error is that kernel's, whatever narrower format is on
    their path. One fp64 run; none where the program draws random numbers (a rerun draws others)."""
    wrong = {k.node_id for k in kernels if k.verdict is Verdict.DIVERGES and k.excess > EXCESS_LIMIT}
    if not wrong or any(is_random(n) for n in run.graph.nodes):
        return ()
    targets = substitution_nodes(run.graph, wrong)

    def held(value: torch.Tensor) -> Callable[[Any, Any], Any]:
        return lambda v, _read: (value.to(v.device).reshape(v.shape).double()
                                 if isinstance(v, torch.Tensor) and v.numel() == value.numel() else v)

    replayed = replayed_outputs(run, inputs, {n: held(observed[i].value) for n, i in targets.items()})
    found = []
    for name, arg, res, fp64, moved in zip(run.output_labels(), run.output_args(),
                                            compiled, exact, replayed):
        out_id = arg.meta.get(NODE_ID, "") if isinstance(arg, torch.fx.Node) else ""
        by = tuple(sorted(ancestors(program, {base_id(out_id)}) & wrong)) if out_id else ()
        if (name in failing or not by or not isinstance(res, torch.Tensor) or not res.is_floating_point()
                or res.dtype == torch.float64 or not isinstance(fp64, torch.Tensor)
                or not isinstance(moved, torch.Tensor)):
            continue
        res = res.detach().to(fp64.device)
        if oracle_output_passes(moved, fp64, res.dtype) or oracle_output_passes(res, fp64, res.dtype):
            continue
        both = res.isfinite() & fp64.isfinite()
        found.append(OutputFailure(
            name, out_id, rmse(res[both], fp64[both]),
            rmse(round_to(fp64, get_format(res.dtype)).double()[both], fp64[both]),
            int((~res.isfinite() & fp64.isfinite()).sum()), moved_by=by))
    return tuple(found)


def range_losses_moving_nothing(program: Program, inputs: list, reports: list[KernelReport],
                                 exact: list[Any]) -> set[str]:
    """Node ids of the buffers (among the first `MAX_REPLAYS` that diverge only because their format
    cannot hold their values: an excess within the limit) whose values as that format holds them, put into
    fp64's run, move no output beyond the limit (`replay.moves_outputs`; check's rule for naming such a
    node after the causes that do). Only where the outputs are finite: a later 16-bit op may be what turns
    such a loss into inf, which fp64's run after the node does not show. One fp64 run each."""
    found = set()
    ids = {n.meta.get(NODE_ID) for n in program.graph.nodes}
    candidates = [r for r in reports if r.verdict is Verdict.DIVERGES and r.excess <= EXCESS_LIMIT
                  and r.node_id in ids][:MAX_REPLAYS]
    for r in candidates:
        fmt = get_format(getattr(torch, r.judged_in or r.dtype))
        if not moves_outputs(program, inputs, r.node_id, as_held(fmt), exact)[0]:
            found.add(r.node_id)
    return found
