"""Evaluating a change set: re-plan, re-run only what no earlier run computed, and judge the outputs.

A change at node n can alter only n's value and the values of nodes downstream of n. So the
evaluator runs the unchanged plan once keeping every node's value, and for each change set it
re-plans and re-runs the graph from an ``initial_env`` (FX Interpreter partial evaluation) holding
every node whose value an earlier run computed under the same decisions for it and everything
upstream of it (`roundoff.blame.reuse`: the base run covers all nodes upstream of the changed ones,
earlier change sets what a search re-visits). It counts nodes recomputed against nodes a full run
would compute, so the saving is measured, not assumed.

Judging a change set (`fixes`) also stops early: each output is judged as soon as its node has
run, and the first failing output ends the run (a change set fails when any output fails, so the
verdict is the same as judging them all at the end; most change sets a search tries fail); an
output whose value an earlier run judged keeps that verdict (a failing one rejects the set without
a run). The policy's graph rewrites (decompositions, CSE) do not depend on node overrides, so they
are done once (`roundoff.plan.rewrite`) and every change set is planned on that graph.

The verdict is PyTorch's own accuracy rule, `torch._dynamo.utils.same` (RMSE against the fp64 run,
with its multiplier), applied to every float output: against the real eager run of the same graph,
or against the fp64 oracle rounded to the output's dtype; or, where asked, check's ``allclose`` or
``bitwise`` rule against eager or fp64 correctly rounded to the output's path format (`Evaluator.passes`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from roundoff.analyze.output_floor import oracle_floors
from roundoff.analyze.verdict import (
    Rule,
    judge,
    no_worse_than,
    oracle_output_passes,
    path_dtypes,
    same_rule,
)
from roundoff.blame.changes import Change, Reference, apply_changes
from roundoff.blame.repro_runtime import within
from roundoff.blame.reuse import ValueCache, value_bytes
from roundoff.capture.program import Program, node_id
from roundoff.execute import Lockstep, complete_inputs, plan_numerics, run_eager, run_keep
from roundoff.execute.node_numerics import round_value
from roundoff.plan import plan
from roundoff.plan.model import Plan
from roundoff.plan.rewrite import rewrite
from roundoff.policy import get_policy
from roundoff.policy.model import Policy

#: An output `check` passes may be this many times less accurate under a fix than under the policy.
NO_WORSE = 2.0


class _Rejected(Exception):
    """Raised from a run's node hook when an output fails: the change set does not fix."""


@dataclass(frozen=True)
class Cost:
    """What the search cost: distinct change sets run, and nodes recomputed versus a full rerun."""

    evaluations: int
    nodes_recomputed: int
    nodes_full: int

    @property
    def saved_fraction(self) -> float:
        return 1.0 - self.nodes_recomputed / self.nodes_full if self.nodes_full else 0.0


class Evaluator:
    """`fixes(changes)`: does `policy` with `changes` bring `program` within tolerance?"""

    def __init__(
        self,
        program: Program,
        policy: Policy | str,
        inputs: Sequence[torch.Tensor],
        *,
        reference: Reference | str = Reference.EAGER,
        tol: float = 1e-4,
        rmse_ratio: float | None = None,
        transcendentals: str = "eager",
        incremental: bool = True,
        reuse_budget: float = 1.0,
        judged: Collection[int] | None = None,
        noise: Collection[int] | None = None,
        rule: Rule | str = Rule.SAME,
    ) -> None:
        """`incremental=False` runs every change set in full (the reference the reuse is tested
        against); `reuse_budget`: values of earlier change sets kept, in multiples of the bytes of
        one full run's values (0: reuse only the base run's). `judged` (against the oracle): the
        indices of the outputs a fix must bring within the limit (those `check` fails); every other
        output is only held to no worse than the policy computes it (`passes`). None: all judged.
        `rule`: check's output rule; ``allclose`` and ``bitwise`` judge against eager, or against fp64
        correctly rounded to the narrowest format on the output's path, by that rule (`passes`)."""
        self.program = program
        self.policy = get_policy(policy)
        self.inputs = tuple(inputs)
        self.reference = Reference.parse(reference)
        self.tol = tol
        if rmse_ratio is not None and not rmse_ratio > 0:
            raise ValueError(f"rmse_ratio must be a positive number or None, got {rmse_ratio!r}")
        self.rmse_ratio = rmse_ratio
        self.rule = Rule.parse(rule)
        if rmse_ratio is not None and self.rule is not Rule.SAME:
            raise ValueError(f"rmse_ratio replaces the `same` rule's multiplier; the {self.rule.value} rule takes none")
        self.transcendentals = transcendentals
        self.incremental = incremental
        self._rewritten = rewrite(program, self.policy)
        self.base_plan = plan(program, self.policy, rewritten=self._rewritten)
        self.base_outputs, env = run_keep(self.base_plan, self.inputs, transcendentals=transcendentals)
        self.eager = tuple(run_eager(program, self.inputs))
        self.oracle, self._floors = oracle_floors(program, self.inputs)
        base_bytes = sum(value_bytes(v) for n, v in env.items() if n.op != "output")
        self._values = ValueCache(int(reuse_budget * base_bytes))
        self._base_keys = self._values.keys(self.base_plan)
        for n, k in self._base_keys.items():
            self._values.store(k, env[n], pinned=True)
        self._computing = [
            node_id(n) for n in self.base_plan.program.nodes() if n.op not in ("placeholder", "output")
        ]
        paths = path_dtypes(program.graph)  # each output is judged in the narrowest format on its path
        self._work = tuple(paths.get(a) if isinstance(a, torch.fx.Node) else None for a in program.output_args())
        self.judged = None if judged is None else frozenset(judged)
        self.noise = frozenset(noise or ())  # outputs fp64 holds only as noise: any value passes
        self._verdicts: dict[tuple[int, int], bool] = {}  # (output index, node number) -> passes
        self.evaluations = 0
        self.nodes_recomputed = 0
        self.nodes_full = 0
        self.on_evaluation: Callable[[int], None] | None = None  # told the count after each evaluation

    def judge(self, outputs: Sequence[torch.Tensor]) -> bool:
        """PyTorch's accuracy verdict (analyze's `same_rule`) on every float output (see `passes`)."""
        n = min(len(self.eager), len(self.oracle))
        return all(self.passes(i, res) for i, res in enumerate(outputs) if i < n)

    def passes(self, i: int, res: torch.Tensor) -> bool:
        """Whether output `i` (`res`, as stored) passes; non-float outputs always do.

        Against eager the reference is the real eager run of the graph; against the oracle it is
        the fp64 run cast to the output's dtype. With `rmse_ratio`, the stricter user bound of
        `repro_runtime.within` instead. The repro script applies the same rule. Against the oracle
        without `rmse_ratio`: an output in `judged` passes by its values (`analyze.verdict.
        oracle_output_passes`: no NaN/inf where fp64 is finite, its error within the limit of its
        format's rounding, or of its operand floor where a sum, matmul or normalisation makes it or
        it is structurally zero: `analyze.output_floor`), so blame fixes what check fails; any other output passes
        by the same values rule or when no worse than `NO_WORSE` times the policy's own error
        (`analyze.verdict.no_worse_than`: check passes it, and a bf16 backward through a normalisation
        may be many roundings off with no defect, so its values alone cannot be held to the limit; a
        fix is not made to keep an output within twice its old error where it is within the limit
        anyway, which added changes on lines a user never touched).
        """
        if not (isinstance(res, torch.Tensor) and res.is_floating_point()) or i in self.noise:
            return True  # (0 by the model's structure: fp64's noise, which no format holds; trial 51)
        eager, oracle = self.eager[i], self.oracle[i]
        if self.rule is not Rule.SAME:  # check's rule, against eager or fp64 rounded as check rounds it
            work = (self._work[i] if i < len(self._work) else None) or res.dtype
            ref = eager if self.reference is Reference.EAGER else round_value(oracle, work)
            ok = judge(self.rule, ref.to(res.dtype), res, oracle, self.tol)
            if self.reference is Reference.ORACLE and self.judged is not None and i not in self.judged:
                return ok or bool(no_worse_than(res, oracle, self.base_outputs[i], NO_WORSE))
            return ok
        if self.reference is Reference.ORACLE and self.rmse_ratio is None:
            work = self._work[i] if i < len(self._work) else None
            by_values = bool(oracle_output_passes(res, oracle, work or res.dtype, self._floors.get(i, 0.0)))
            if self.judged is not None and i not in self.judged:
                return by_values or bool(no_worse_than(res, oracle, self.base_outputs[i], NO_WORSE))
            return by_values
        # in the result's dtype, as check compares them (trial 75: -p fp32's fp32 output beside eager's fp16 one
        # failed `same`'s dtype test, and blame said no change fixed what check passed)
        ref = eager.to(res.dtype) if self.reference is Reference.EAGER else oracle.to(res.dtype)
        if self.rmse_ratio is None:
            return bool(same_rule(ref, res, oracle, self.tol))
        return bool(within(ref, res, oracle, self.tol, self.rmse_ratio))

    def plan_for(self, changes: Sequence[Change]) -> Plan:
        """The plan of `policy` + `changes`, on the graph the policy's rewrites made once."""
        return plan(self.program, apply_changes(self.policy, changes), rewritten=self._rewritten)

    def _run(self, plan: Plan, judge: bool = False) -> tuple | None:
        """`plan`'s outputs, running only the nodes `ValueCache` has no value for (every node when
        not incremental); with `judge`, None as soon as an output fails (see `fixes`)."""
        n_out = min(len(self.eager), len(self.oracle))
        keys = self._values.keys(plan) if self.incremental else {}
        env = self._values.env(keys) if self.incremental else {}
        numerics = plan_numerics(plan, self.transcendentals)
        args = plan.program.output_args()[:n_out] if judge else ()
        positions: dict[torch.fx.Node, list[int]] = {}
        for i, p in enumerate(args):
            if isinstance(p, torch.fx.Node) and p not in env:
                positions.setdefault(p, []).append(i)
            elif isinstance(p, torch.fx.Node) and not self._passes(i, keys[p], numerics.finish_output(p, env[p][0])):
                self._count(0)
                return None  # a reused output fails: no run can change it
        ran = 0

        def hook(n: torch.fx.Node, vals: tuple, ls: Lockstep) -> None:
            nonlocal ran
            ran += n.op not in ("placeholder", "output")
            if n in keys:
                self._values.store(keys[n], vals)
            for i in positions.get(n, ()):
                if not self._passes(i, keys.get(n), numerics.finish_output(n, vals[0])):
                    raise _Rejected

        ls = Lockstep(plan.program, [numerics], on_node=hook)
        try:
            (out,) = ls.run_inputs(complete_inputs(plan.program, self.inputs), initial_env=env or None)
        except _Rejected:
            return None
        finally:
            self._count(ran)
        out = tuple(out)
        others = [i for i, p in enumerate(args) if not isinstance(p, torch.fx.Node)]
        return out if all(self.passes(i, out[i]) for i in others) else None

    def _passes(self, i: int, key: int | None, value: Any) -> bool:
        """`passes`, remembered by (output, node number) when the node has one."""
        if key is None:
            return self.passes(i, value)
        if (i, key) not in self._verdicts:
            self._verdicts[(i, key)] = self.passes(i, value)
        return self._verdicts[(i, key)]

    def _count(self, ran: int) -> None:
        self.evaluations += 1
        self.nodes_recomputed += ran
        self.nodes_full += len(self._computing)
        if self.on_evaluation is not None:
            self.on_evaluation(self.evaluations)

    def outputs(self, changes: Sequence[Change]) -> tuple[torch.Tensor, ...]:
        """Emulated outputs under `policy` + `changes`, recomputing only nodes no earlier run computed
        under the same decisions (incremental) or all of them."""
        out = self._run(self.plan_for(changes))
        assert out is not None  # not judged, never rejected
        return out

    def fixes(self, changes: Sequence[Change]) -> bool:
        """Whether `policy` + `changes` brings every output within tolerance: `judge` on the outputs.

        Incremental: each output is judged as soon as it is produced (or, when its value is reused,
        by the verdict already given on that value) and the run ends at the first failure; the
        verdict is the one `judge` gives on all outputs of a full run. Not incremental: a full run,
        then `judge`.
        """
        plan = self.plan_for(changes)
        if not self.incremental:
            out = self._run(plan)
            return out is not None and self.judge(out)
        return self._run(plan, judge=True) is not None

    def failing(self, out: Sequence[torch.Tensor]) -> list[str]:
        """Names of the outputs that fail (`passes`) among `out` (`outputs` of a change set)."""
        names = self.program.output_labels()
        return [names[i] for i, res in enumerate(out) if i < min(len(self.eager), len(self.oracle)) and not self.passes(i, res)]

    def makes_nonfinite(self, nid: str) -> bool:
        """Whether the base run's value of node `nid` has NaN/inf where every operand's is finite: the node
        itself overflows (or divides 0 by 0) under the policy, not only its precision."""
        env = self._values.env(self._base_keys)

        def nonfinite(n: torch.fx.Node) -> bool:
            value = env.get(n, (None,))[0]
            return isinstance(value, torch.Tensor) and value.is_floating_point() and not bool(value.isfinite().all())

        node = self.base_plan.program.node(nid)
        return nonfinite(node) and not any(nonfinite(p) for p in node.all_input_nodes)

    def cost(self) -> Cost:
        return Cost(self.evaluations, self.nodes_recomputed, self.nodes_full)
