"""Streaming per-node statistics over a `Lockstep` run (side 0: policy, 1: oracle, 2: reference).

`NodeObserver` is the Lockstep's `on_node` callback: it reduces each node's values to `Metrics`
while the node's operands are still alive, then the interpreter frees them. Per node it keeps only
scalars, so memory stays at what the lockstep run itself holds.
"""

from __future__ import annotations

import logging
import operator

import torch
import torch.fx

from roundoff.analyze.hazards import Ranges
from roundoff.analyze.metrics import Metrics, exact_metrics, measure, measure_each
from roundoff.analyze.result import NodeReport
from roundoff.capture.program import NODE_ID, node_source
from roundoff.execute.formats import is_float
from roundoff.execute.interpreter import Lockstep
from roundoff.execute.node_numerics import PlanNumerics
from roundoff.ops import short_name
from roundoff.ops.classes import OpClass

POLICY, ORACLE, REFERENCE = 0, 1, 2


def same_rule(ref: torch.Tensor, res: torch.Tensor, fp64_ref: torch.Tensor, tol: float) -> bool:
    """PyTorch's own accuracy rule: ``torch._dynamo.utils.same`` with an fp64 reference, silenced."""
    from torch._dynamo.utils import same

    return bool(same(ref, res, fp64_ref=fp64_ref, tol=tol, log_error=lambda *a, **k: None))


def rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.sqrt(torch.mean((a.double() - b.double()) ** 2)))


class NodeObserver:
    """Collects `NodeReport`s and the first non-finite origin while a Lockstep runs."""

    def __init__(self, policy_side: PlanNumerics, has_reference: bool, tol: float, local: bool = True) -> None:
        self.side = policy_side
        self.has_reference = has_reference
        self.tol = tol
        self.local = local
        self.reports: list[NodeReport] = []
        self.nan_origin: str | None = None
        self.reference_nan_origin: str | None = None
        self.ranges = Ranges()
        self.zero_operands: dict[str, list[str]] = {}
        # Nodes whose policy value equals the oracle's bit for bit: a node reading only such values
        # has local error == total error, so it is not recomputed from oracle inputs.
        self.exact: set[torch.fx.Node] = set()
        logging.getLogger("torch._dynamo.utils").setLevel(logging.CRITICAL)

    def __call__(self, node: torch.fx.Node, vals: tuple, ls: Lockstep) -> None:
        if node.op == "placeholder" and is_float(vals[ORACLE]):
            self._record_range(node.meta.get(NODE_ID, node.name), vals[ORACLE], None)
            if vals[POLICY].shape == vals[ORACLE].shape and torch.equal(vals[POLICY].double(), vals[ORACLE]):
                self.exact.add(node)
        if node.op != "call_function" or not is_float(vals[POLICY]):
            return
        d = self.side.decision(node)
        op_class = d.op_class if d is not None else None
        if op_class is OpClass.DATA_MOVEMENT and node.target is not operator.getitem:
            if all(p in self.exact for p in node.all_input_nodes):  # moves exact values only
                self.exact.add(node)
            return
        dtype = self.side.storage(node)
        dtype = dtype if isinstance(dtype, torch.dtype) else vals[POLICY].dtype
        res, oracle = vals[POLICY], vals[ORACLE]
        nid = node.meta.get(NODE_ID, node.name)
        # Every comparison against the oracle (policy, reference, local recomputation) in one pass.
        ref = vals[REFERENCE] if self.has_reference else None
        ref_differs = ref is not None and not torch.equal(ref, res)  # common: the policies agree here
        local_value = self._local_value(node, ls)
        against_oracle = [res] + ([ref] if ref_differs else []) + ([local_value] if local_value is not None else [])
        measured = measure_each(against_oracle, oracle, dtype)
        vs_oracle = measured[0]
        self._record_range(nid, oracle, vs_oracle)
        vs_ref = ref_vs_oracle = None
        if ref is not None:
            if ref_differs:
                vs_ref, ref_vs_oracle = measure(res, ref, dtype), measured[1]
            else:
                vs_ref, ref_vs_oracle = exact_metrics(res), vs_oracle
        else:
            ref = _rounded(oracle, dtype)
        self._origin(node, vals, ls, vs_oracle, ref_vs_oracle)
        local, inherited = self._local(node, vs_oracle, measured[-1] if local_value is not None else None)
        if vs_oracle.max_abs == 0.0 and vs_oracle.nonfinite == 0 and vs_oracle.ref_nan + vs_oracle.ref_inf == 0:
            self.exact.add(node)
        verdict = self._verdict(res, ref, oracle, dtype, vs_oracle)
        self.reports.append(
            NodeReport(
                node_id=nid, op=short_name(node.target), source=node_source(node),
                op_class=op_class.value if op_class else "unknown", dtype=str(dtype).replace("torch.", ""),
                vs_oracle=vs_oracle, vs_reference=vs_ref, reference_vs_oracle=ref_vs_oracle,
                local=local, inherited_bits=inherited, verdict=verdict,
                fma=bool(d is not None and d.fma is not None and d.fma.contracted),
            )
        )

    def _record_range(self, nid: str, oracle: torch.Tensor, m: Metrics | None) -> None:
        """absmax/max of the oracle's finite values (`m`'s reference counts skip the mask when all are finite)."""
        all_finite = m.ref_nan + m.ref_inf == 0 if m is not None else bool(oracle.isfinite().all())
        finite = oracle.reshape(-1) if all_finite else oracle[oracle.isfinite()]
        if finite.numel():
            lo, hi = torch.aminmax(finite)
            self.ranges.absmax[nid] = max(-float(lo), float(hi))
            self.ranges.max[nid] = float(hi)

    def _verdict(
        self, res: torch.Tensor, ref: torch.Tensor, oracle: torch.Tensor, dtype: torch.dtype, m: Metrics
    ) -> str:
        if m.nan + m.inf and bool(ref.isfinite().all()):
            return "nonfinite"
        r, s = ref.to(dtype), res.to(dtype)
        return "ok" if torch.equal(r, s) or same_rule(r, s, oracle, self.tol) else "diverges"

    def _local_value(self, node: torch.fx.Node, ls: Lockstep) -> torch.Tensor | None:
        """The node recomputed by the policy from the oracle's inputs, when that can differ from its value."""
        if not self.local or all(p in self.exact for p in node.all_input_nodes):
            return None
        value = self.side.evaluate(node, ls.reader(ORACLE), fresh=True)
        return value if is_float(value) else None

    def _local(
        self, node: torch.fx.Node, total: Metrics, local: Metrics | None
    ) -> tuple[Metrics | None, float | None]:
        """(local error, bits inherited from the inputs); when every input is exact, local == total."""
        if not self.local:
            return None, None
        if all(p in self.exact for p in node.all_input_nodes):  # oracle inputs == policy inputs
            return total, 0.0
        if local is None:
            return None, None
        return local, max(0.0, total.mean_bits - local.mean_bits)

    def _origin(
        self, node: torch.fx.Node, vals: tuple, ls: Lockstep, m: Metrics, ref_m: Metrics | None
    ) -> None:
        """First node of each run that makes a non-finite value from finite inputs (`m`: policy's counts)."""
        for side, attr, metrics in ((POLICY, "nan_origin", m), (REFERENCE, "reference_nan_origin", ref_m)):
            if getattr(self, attr) is not None or metrics is None or not metrics.nonfinite:
                continue
            inputs = [ls.env[p][side] for p in node.all_input_nodes if p in ls.env]
            if all(bool(v.isfinite().all()) for v in inputs if is_float(v)):
                setattr(self, attr, node.meta.get(NODE_ID, node.name))
                if side == POLICY:
                    self.zero_operands[node.meta.get(NODE_ID, node.name)] = _new_zeros(node, ls)


def _rounded(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    from roundoff.execute.node_numerics import round_value

    return round_value(x, dtype)


def _new_zeros(node: torch.fx.Node, ls: Lockstep) -> list[str]:
    """Ids of `node`'s tensor operands that are 0 under the policy where the oracle is not."""
    out = []
    for p in node.all_input_nodes:
        v = ls.env.get(p)
        if v is None or not isinstance(v[POLICY], torch.Tensor) or not isinstance(v[ORACLE], torch.Tensor):
            continue
        if v[POLICY].shape == v[ORACLE].shape and bool(((v[POLICY] == 0) & (v[ORACLE] != 0)).any()):
            out.append(p.meta.get(NODE_ID, p.name))
    return out
