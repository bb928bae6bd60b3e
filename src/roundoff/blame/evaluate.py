"""Evaluating a change set: re-plan, re-run only what the change can affect, and judge the outputs.

A change at node n can alter only n's value and the values of nodes downstream of n. So the
evaluator runs the unchanged plan once keeping every node's value, and for each change set it
re-plans, finds the nodes whose decision differs from the base plan (normally exactly the changed
nodes), and re-runs the graph from an ``initial_env`` holding the cached value of every node not
downstream of one of them (FX Interpreter partial evaluation). It counts nodes recomputed against
nodes a full run would compute, so the saving is measured, not assumed.

Judging a change set (`fixes`) also stops early: each output is judged as soon as its node has
run, and the first failing output ends the run (a change set fails when any output fails, so the
verdict is the same as judging them all at the end; most change sets a search tries fail). The
policy's graph rewrites (decompositions, CSE) do not depend on node overrides, so they are done once
(`roundoff.plan.rewrite`) and every change set is planned on that graph.

The verdict is PyTorch's own accuracy rule, `torch._dynamo.utils.same` (RMSE against the fp64 run,
with its multiplier), applied to every float output: against the real eager run of the same graph,
or against the fp64 oracle rounded to the output's dtype.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from roundoff.blame.changes import Change, Reference, apply_changes, downstream
from roundoff.blame.repro_runtime import within
from roundoff.capture.program import Program, node_id
from roundoff.execute import Lockstep, complete_inputs, plan_numerics, run_eager, run_keep, run_oracle
from roundoff.plan import plan
from roundoff.plan.model import Plan
from roundoff.plan.rewrite import rewrite
from roundoff.policy import get_policy
from roundoff.policy.model import Policy


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
    ) -> None:
        self.program = program
        self.policy = get_policy(policy)
        self.inputs = tuple(inputs)
        self.reference = Reference.parse(reference)
        self.tol = tol
        if rmse_ratio is not None and not rmse_ratio > 0:
            raise ValueError(f"rmse_ratio must be a positive number or None, got {rmse_ratio!r}")
        self.rmse_ratio = rmse_ratio
        self.transcendentals = transcendentals
        self.incremental = incremental
        self._rewritten = rewrite(program, self.policy)
        self.base_plan = plan(program, self.policy, rewritten=self._rewritten)
        self.base_outputs, self._env = run_keep(
            self.base_plan, self.inputs, transcendentals=transcendentals
        )
        self.eager = tuple(run_eager(program, self.inputs))
        self.oracle = tuple(run_oracle(program, self.inputs))
        # The plan's program is the graph as planned (decomposed, CSE'd): cache by stable node id.
        self._cache = {node_id(n): v for n, v in self._env.items() if n.op != "output"}
        self._computing = [
            node_id(n) for n in self.base_plan.program.nodes() if n.op not in ("placeholder", "output")
        ]
        self._output_nodes = _output_args(program)
        self._base_verdicts: dict[int, bool] = {}
        self.evaluations = 0
        self.nodes_recomputed = 0
        self.nodes_full = 0

    def judge(self, outputs: Sequence[torch.Tensor]) -> bool:
        """PyTorch's accuracy verdict (analyze's `same_rule`) on every float output (see `passes`)."""
        n = min(len(self.eager), len(self.oracle))
        return all(self.passes(i, res) for i, res in enumerate(outputs) if i < n)

    def passes(self, i: int, res: torch.Tensor) -> bool:
        """Whether output `i` (`res`, as stored) passes; non-float outputs always do.

        Against eager the reference is the real eager run of the graph; against the oracle it is
        the fp64 run cast to the output's dtype. With `rmse_ratio`, the stricter user bound of
        `repro_runtime.within` instead. The repro script applies the same rule. Against the oracle
        without `rmse_ratio`, check's output verdict instead (`analyze.verdict.oracle_output_passes`:
        no NaN/inf where fp64 is finite, excess within its limit), so blame fixes what check fails.
        """
        from roundoff.analyze import same_rule
        from roundoff.analyze.verdict import oracle_output_passes, path_dtype

        if not (isinstance(res, torch.Tensor) and res.is_floating_point()):
            return True
        eager, oracle = self.eager[i], self.oracle[i]
        if self.reference is Reference.ORACLE and self.rmse_ratio is None:
            node = self._output_nodes[i] if i < len(self._output_nodes) else None
            work = path_dtype(node) if isinstance(node, torch.fx.Node) else res.dtype
            return bool(oracle_output_passes(res, oracle, work))
        ref = eager if self.reference is Reference.EAGER else oracle.to(res.dtype)
        if self.rmse_ratio is None:
            return bool(same_rule(ref, res, oracle, self.tol))
        return bool(within(ref, res, oracle, self.tol, self.rmse_ratio))

    def plan_for(self, changes: Sequence[Change]) -> Plan:
        """The plan of `policy` + `changes`, on the graph the policy's rewrites made once."""
        return plan(self.program, apply_changes(self.policy, changes), rewritten=self._rewritten)

    def affected(self, plan: Plan) -> frozenset[str]:
        """Nodes whose decision differs from the base plan, and everything downstream of them."""
        base = self.base_plan.decisions
        roots = {nid for nid, d in plan.decisions.items() if base.get(nid) != d}
        roots |= {nid for nid in base if nid not in plan.decisions}
        return downstream(plan.program, roots)

    def _initial_env(self, plan: Plan) -> dict | None:
        """The base run's values of `plan`'s nodes that no change affects (None: not incremental)."""
        if not self.incremental:
            return None
        dirty = self.affected(plan)
        return {
            n: self._cache[nid]
            for n in plan.program.nodes()
            if n.op != "output" and (nid := node_id(n)) not in dirty and nid in self._cache
        }

    def _run(
        self, plan: Plan, env: dict | None, on_output: Callable[[int, Any], None] | None = None
    ) -> tuple:
        """`plan`'s outputs, run from `env` (values of nodes not to run); `on_output(i, value)` sees
        output `i` (as stored) as soon as its node has run, and may end the run by raising."""
        positions: dict[torch.fx.Node, list[int]] = {}
        if on_output is not None:
            for i, p in enumerate(_output_args(plan.program)):
                if isinstance(p, torch.fx.Node) and i < len(self.eager):
                    positions.setdefault(p, []).append(i)
        ran = 0

        def hook(n: torch.fx.Node, vals: tuple, ls: Lockstep) -> None:
            nonlocal ran
            ran += n.op not in ("placeholder", "output")
            for i in positions.get(n, ()):
                on_output(i, ls.sides[0].finish_output(n, vals[0]))

        ls = Lockstep(plan.program, [plan_numerics(plan, self.transcendentals)], on_node=hook)
        try:
            (out,) = ls.run_inputs(complete_inputs(plan.program, self.inputs), initial_env=env)
        finally:
            self.evaluations += 1
            self.nodes_recomputed += ran
            self.nodes_full += len(self._computing)
        return tuple(out)

    def outputs(self, changes: Sequence[Change]) -> tuple[torch.Tensor, ...]:
        """Emulated outputs under `policy` + `changes`, recomputing only affected nodes (incremental)."""
        plan = self.plan_for(changes)
        return self._run(plan, self._initial_env(plan))

    def _base_passes(self, i: int) -> bool:
        if i not in self._base_verdicts:
            self._base_verdicts[i] = self.passes(i, self.base_outputs[i])
        return self._base_verdicts[i]

    def fixes(self, changes: Sequence[Change]) -> bool:
        """Whether `policy` + `changes` brings every output within tolerance (`judge`).

        Incremental: an output no change affects keeps its base value and so its base verdict (a
        failing one rejects the set without a run); the others are judged as soon as they are
        produced and the run ends at the first failure. The verdict is the one `judge` gives on the
        outputs of a full run. Not incremental: a full run, then `judge`.
        """
        plan = self.plan_for(changes)
        if not self.incremental:
            return self.judge(self._run(plan, None))
        env = self._initial_env(plan)
        n = min(len(self.eager), len(self.oracle))
        args = _output_args(plan.program)
        if any(isinstance(p, torch.fx.Node) and p in env and not self._base_passes(i)
               for i, p in enumerate(args[:n])):
            self.evaluations += 1
            self.nodes_full += len(self._computing)
            return False
        judged: set[int] = set()

        def check(i: int, value: Any) -> None:
            judged.add(i)
            if not self.passes(i, value):
                raise _Rejected

        try:
            out = self._run(plan, env, check)
        except _Rejected:
            return False
        return all(self.passes(i, r) for i, r in enumerate(out[:n]) if i not in judged)

    def cost(self) -> Cost:
        return Cost(self.evaluations, self.nodes_recomputed, self.nodes_full)


def _output_args(program: Program) -> tuple:
    """The output node's flat arguments (one per program output)."""
    out = next(n for n in program.nodes() if n.op == "output")
    return tuple(out.args[0]) if isinstance(out.args[0], (tuple, list)) else (out.args[0],)
