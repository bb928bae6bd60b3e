"""Evaluating a change set: re-plan, re-run only what the change can affect, and judge the outputs.

A change at node n can alter only n's value and the values of nodes downstream of n. So the
evaluator runs the unchanged plan once keeping every node's value, and for each change set it
re-plans, finds the nodes whose decision differs from the base plan (normally exactly the changed
nodes), and re-runs the graph from an ``initial_env`` holding the cached value of every node not
downstream of one of them (FX Interpreter partial evaluation). It counts nodes recomputed against
nodes a full run would compute, so the saving is measured, not assumed.

The verdict is PyTorch's own accuracy rule, `torch._dynamo.utils.same` (RMSE against the fp64 run,
with its multiplier), applied to every float output: against the real eager run of the same graph,
or against the fp64 oracle rounded to the output's dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.fx

from roundoff.blame.changes import Change, Reference, apply_changes, downstream
from roundoff.blame.repro_runtime import within
from roundoff.capture.program import Program, node_id
from roundoff.plan.model import Plan
from roundoff.policy import get_policy
from roundoff.policy.model import Policy


def _make_plan(program: Program, policy: Policy) -> Plan:
    from roundoff.plan import plan

    return plan(program, policy)


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
        from roundoff.execute import run_eager, run_keep, run_oracle

        self._run_keep = run_keep
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
        self.base_plan = _make_plan(program, self.policy)
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
        out = next(n for n in program.graph.nodes if n.op == "output")
        self._output_nodes = tuple(out.args[0]) if isinstance(out.args[0], (tuple, list)) else (out.args[0],)
        self.evaluations = 0
        self.nodes_recomputed = 0
        self.nodes_full = 0

    def judge(self, outputs: Sequence[torch.Tensor]) -> bool:
        """PyTorch's accuracy verdict (analyze's `same_rule`) on every float output.

        Against eager the reference is the real eager run of the graph; against the oracle it is
        the fp64 run cast to the output's dtype. With `rmse_ratio`, the stricter user bound of
        `repro_runtime.within` instead. The repro script applies the same rule. Against the oracle
        without `rmse_ratio`, check's output verdict instead (`analyze.verdict.oracle_output_passes`:
        no NaN/inf where fp64 is finite, excess within its limit), so blame fixes what check fails.
        """
        from roundoff.analyze import same_rule
        from roundoff.analyze.verdict import oracle_output_passes, path_dtype

        for i, (res, eager, oracle) in enumerate(zip(outputs, self.eager, self.oracle)):
            if not (isinstance(res, torch.Tensor) and res.is_floating_point()):
                continue
            ref = eager if self.reference is Reference.EAGER else oracle.to(res.dtype)
            if self.reference is Reference.ORACLE and self.rmse_ratio is None:
                node = self._output_nodes[i] if i < len(self._output_nodes) else None
                work = path_dtype(node) if isinstance(node, torch.fx.Node) else res.dtype
                ok = oracle_output_passes(res, oracle, work)
            elif self.rmse_ratio is None:
                ok = same_rule(ref, res, oracle, self.tol)
            else:
                ok = within(ref, res, oracle, self.tol, self.rmse_ratio)
            if not ok:
                return False
        return True

    def plan_for(self, changes: Sequence[Change]) -> Plan:
        return _make_plan(self.program, apply_changes(self.policy, changes))

    def affected(self, plan: Plan) -> frozenset[str]:
        """Nodes whose decision differs from the base plan, and everything downstream of them."""
        base = self.base_plan.decisions
        roots = {nid for nid, d in plan.decisions.items() if base.get(nid) != d}
        roots |= {nid for nid in base if nid not in plan.decisions}
        return downstream(plan.program, roots)

    def outputs(self, changes: Sequence[Change]) -> tuple[torch.Tensor, ...]:
        """Emulated outputs under `policy` + `changes`, recomputing only affected nodes."""
        plan = self.plan_for(changes)
        env = None
        recomputed = len(self._computing)
        if self.incremental:
            dirty = self.affected(plan)
            env = {
                n: self._cache[node_id(n)]
                for n in plan.program.nodes()
                if n.op != "output" and node_id(n) not in dirty and node_id(n) in self._cache
            }
            recomputed = sum(
                1 for n in plan.program.nodes() if n.op not in ("placeholder", "output") and n not in env
            )
        out, _ = self._run_keep(
            plan, self.inputs, transcendentals=self.transcendentals, initial_env=env
        )
        self.evaluations += 1
        self.nodes_recomputed += recomputed
        self.nodes_full += len(self._computing)
        return out

    def fixes(self, changes: Sequence[Change]) -> bool:
        return self.judge(self.outputs(changes))

    def cost(self) -> Cost:
        return Cost(self.evaluations, self.nodes_recomputed, self.nodes_full)
