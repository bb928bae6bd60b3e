"""Result data of `roundoff.analyze.check`: frozen, JSON-able, independent of how it was computed."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from roundoff.analyze.decisions import DecisionFlip
from roundoff.analyze.metrics import Metrics
from roundoff.analyze.verdict import Verdict, excess, own_excess

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Hazard:
    """A numeric trap found in the plan (and, where it needs values, in the oracle run).

    `kind` is a stable key (``"fma-cancellation"``, ``"exp-of-difference"``, ``"max-subtraction-
    mismatch"``, ``"fp16-overflow"``, ``"exp-overflow"``, ``"narrow-reduction"``,
    ``"absorbed-epsilon"``, ``"division-by-rounded-small"``); `message` says what to do.
    """

    kind: str
    node_id: str
    op: str
    source: str | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "node_id": self.node_id, "op": self.op, "source": self.source, "message": self.message}


@dataclass(frozen=True)
class NodeReport:
    """One node's numbers: error of the policy run vs the oracle and vs the reference run.

    `local`: the node recomputed under the policy from *oracle* inputs (read as the plan reads
    them), against the oracle; the error the node itself makes. `inherited_bits`: mean bits of
    error of the policy run not explained by the local error (max(0, total - local)).
    `verdict`: a `roundoff.analyze.verdict.Verdict` (a str enum: ``"ok"``, ``"diverges"``,
    ``"nonfinite"``), defined in `roundoff.analyze.verdict`. `overflow`: elements +-inf where fp64 is
    finite but beyond the node's format (`roundoff.analyze.verdict.nonfinite_counts`); `terms_rmse`: the
    RMS error a sum's or matmul's terms' rounding causes (`verdict.reduction_floor`/`matmul_floor`);
    `amplifies_read`: for a node whose own error is beyond the limit only because it reads an operand
    stored in bf16/fp16 (recomputed from that operand unrounded it is within the limit: a ``cos`` of a
    phase a bf16 ``mul`` rounded), the id of that operand's producer, the decision to change. `backward`:
    the node is the backward's (the findings say so: its source line is the forward code it differentiates).
    """

    node_id: str
    op: str
    source: str | None
    op_class: str
    dtype: str
    vs_oracle: Metrics
    vs_reference: Metrics | None
    reference_vs_oracle: Metrics | None
    local: Metrics | None
    inherited_bits: float | None
    verdict: Verdict
    fma: bool = False
    working_dtype: str = ""
    format_loss: float = 0.0
    overflow: int = 0
    terms_rmse: float = 0.0
    amplifies_read: str | None = None
    #: computed only for a training step's backward (no forward output needs it)
    backward: bool = False
    #: the dotted path of the module whose call made it (``features.3.conv.4``; `capture.program.NODE_MODULE`)
    module: str | None = None

    @property
    def own_excess(self) -> float:
        """The node's own (local; total where not measured) error over its working format's rounding,
        as `roundoff.analyze.verdict.own_excess` judges and ranks it."""
        own = self.local if self.local is not None else self.vs_oracle
        return own_excess(own, self.format_loss, self._work, self.terms_rmse)

    @property
    def total_excess(self) -> float:
        """The node's total error (inherited included) over its working format's rounding."""
        return excess(self.vs_oracle, self.format_loss, self._work, self.terms_rmse)

    @property
    def _work(self) -> torch.dtype:
        return getattr(torch, self.working_dtype or self.dtype, torch.float32)

    def to_dict(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id, "op": self.op, "source": self.source, "module": self.module,
            "op_class": self.op_class, "dtype": self.dtype, "vs_oracle": _m(self.vs_oracle), "vs_reference": _m(self.vs_reference),
            "reference_vs_oracle": _m(self.reference_vs_oracle), "local": _m(self.local),
            "inherited_bits": self.inherited_bits, "verdict": str(getattr(self.verdict, "value", self.verdict)),
            "fma": self.fma, "working_dtype": self.working_dtype, "format_loss": _num(self.format_loss),
            "overflow": self.overflow, "own_excess": _num(self.own_excess), "amplifies_read": self.amplifies_read,
        }


@dataclass(frozen=True)
class OutputVerdict:
    """Verdict for one program output by `rule` (`roundoff.analyze.verdict` defines it): fails on any
    element NaN/inf where fp64 is finite (`nonfinite` of them; `unrepresentable` of those are beyond
    the format even when fp64 is correctly rounded to it), else by the rule. `nan_in_fp64`: elements
    NaN in fp64 and in the result alike (reported, never failed). `rmse_reference` against the oracle is
    fp64 correctly rounded to `judged_dtype`, the narrowest float format on the output's path (what the
    default rule holds it to), or, where larger, the RMS error its last op takes from its operands'
    rounding in that format (`roundoff.analyze.output_floor`: a sum-made or structurally zero output),
    or a quarter of that format's unit roundoff of its values (a scalar fp64 rounds luckily): the base
    its limit, `EXCESS_LIMIT` times it, multiplies;
    else fp64 correctly rounded to its own `dtype`."""

    name: str
    node_id: str
    passes: bool
    rmse_result: float
    rmse_reference: float
    vs_oracle: Metrics
    vs_reference: Metrics | None
    rule: str = "same"
    nonfinite: int = 0
    unrepresentable: int = 0
    nan_in_fp64: int = 0
    dtype: str = ""
    judged_dtype: str = ""
    reference_nonfinite: int = 0  # against a reference: its elements NaN/inf where fp64 is finite
    #: Elements whose fp64 value is finite and not 0 but rounds to 0 in `dtype` (below its range), counted
    #: only where the result is at least half its norm off fp64 (`LOST_SIGNAL`), else 0.
    below_range: int = 0
    #: fp64 holds its values only as noise: 0 by the model's structure (a query no other token reaches),
    #: or made only of such values; no figure against fp64 means anything for it.
    noise_only: bool = False
    #: Against an eager reference emulated on the policy's graph, where `check` ran real eager too
    #: (`roundoff.analyze.check`): real eager's elements NaN/inf where fp64 is finite, recorded only where
    #: more than the reference's (the emulation splits a kernel eager runs in 16 bits inside); else None.
    real_eager_nonfinite: int | None = None
    #: Against a reference, a failing output that passes once every emulated side takes fp64's decisions at
    #: the comparisons it reads that the policy decided otherwise near a tie (`roundoff.analyze.decisions`):
    #: those comparisons' node ids, and its RMSE and the reference's against fp64 in that run.
    near_ties: tuple[str, ...] = ()
    rmse_pinned: float | None = None
    rmse_reference_pinned: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "node_id": self.node_id, "passes": self.passes, "rmse_result": _num(self.rmse_result),
            "rmse_reference": _num(self.rmse_reference), "vs_oracle": self.vs_oracle.to_dict(),
            "vs_reference": None if self.vs_reference is None else self.vs_reference.to_dict(),
            "rule": self.rule, "nonfinite": self.nonfinite, "unrepresentable": self.unrepresentable,
            "nan_in_fp64": self.nan_in_fp64, "dtype": self.dtype, "judged_dtype": self.judged_dtype,
            "reference_nonfinite": self.reference_nonfinite, "below_range": self.below_range, "noise_only": self.noise_only,
            "real_eager_nonfinite": self.real_eager_nonfinite, "near_ties": list(self.near_ties),
            "rmse_pinned": _num(self.rmse_pinned), "rmse_reference_pinned": _num(self.rmse_reference_pinned),
        }


@dataclass(frozen=True)
class CheckResult:
    """Everything `check` found for one program, policy and reference.

    `diverges` is True when any output fails its verdict. `first_divergent` is the first node in
    graph order whose verdict is not ``"ok"``; `nan_origin` the first node with NaN/inf where fp64 is
    finite and whose operands have none; `culprits` the findings ranked by cause: the nodes whose own
    error creates a failing output's divergence or non-finite values (on the path to it), worst
    first; `explanations` plain-words sentences for a user, the causes first; `selection_flips` the
    discrete decisions that fell the other way than in fp64 (`roundoff.analyze.selections`).
    """

    program: str
    policy: str
    against: str
    nodes: tuple[NodeReport, ...]
    outputs: tuple[OutputVerdict, ...]
    first_divergent: str | None
    nan_origin: str | None
    culprits: tuple[str, ...]
    hazards: tuple[Hazard, ...]
    explanations: tuple[str, ...]
    unmodeled: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    mode: str = "every-node"
    checkpoints: tuple[str, ...] = ()
    #: Selections (topk, sort, argmax) that chose other indices than fp64: (node id, differing, of).
    selection_flips: tuple[tuple[str, int, int], ...] = ()
    #: 16-bit values whose rounding alone, fp64 run again with it, takes an output beyond the limit where
    #: no node amplifies it 16x (`roundoff.analyze.check`): the node ids, named first as findings.
    rounding_causes: tuple[str, ...] = ()
    #: How the nodes were examined (`check`'s `nodes_with`): "interpreter", "deferred" or "graphed";
    #: the same result either way.
    examined_with: str = "interpreter"
    #: Ordered comparisons decided otherwise than fp64 near a tie through which outputs pass with fp64's
    #: decisions (`OutputVerdict.near_ties`; `roundoff.analyze.decisions`).
    near_tie_decisions: tuple[DecisionFlip, ...] = ()
    #: Whether every output against the oracle was judged by its values (`check(..., by_values=True)`),
    #: not only those with a flagged node on their path.
    outputs_by_values: bool = False

    @property
    def examined(self) -> tuple[str, ...]:
        """Ids of the nodes that have per-node figures (`nodes`): every float node when `mode` is
        ``"every-node"``; none when ``"screen"`` (the runs agreed at the outputs and `checkpoints`, so
        no node was examined; ``check(..., nodes="all")`` examines every node)."""
        return tuple(n.node_id for n in self.nodes)

    @property
    def diverges(self) -> bool:
        return not all(o.passes for o in self.outputs)

    def __repr__(self) -> str:
        """One line: the verdict and where to look (trial 78: the generated repr of every node's figures ran
        to many KB in a REPL or a print); the fields hold the rest."""
        failing = [o.name for o in self.outputs if not o.passes]
        return (f"CheckResult({self.program!r}, policy={self.policy!r}, against={self.against!r}, "
                f"verdict={'diverges' if self.diverges else 'ok'!r}, failing_outputs={failing[:3]!r}"
                f"{f' (+{len(failing) - 3})' if len(failing) > 3 else ''}, first_divergent={self.first_divergent!r}, "
                f"nan_origin={self.nan_origin!r}, nodes={len(self.nodes)}, outputs={len(self.outputs)}, "
                f"findings={len(self.explanations)}, mode={self.mode!r})")

    def node(self, node_id: str) -> NodeReport:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        raise KeyError(f"no report for node {node_id!r}")

    def by_source(self) -> dict[str, tuple[float, float]]:
        """Error against fp64 per user source line ("layer"): (max bits, mean of nodes' mean bits)."""
        groups: dict[str, list[NodeReport]] = {}
        for n in self.nodes:
            groups.setdefault(n.source or "<unknown>", []).append(n)
        return {
            src: (max(r.vs_oracle.max_bits for r in rs), sum(r.vs_oracle.mean_bits for r in rs) / len(rs))
            for src, rs in groups.items()
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION, "program": self.program, "policy": self.policy, "against": self.against,
            "diverges": self.diverges, "outputs": [o.to_dict() for o in self.outputs],
            "first_divergent": self.first_divergent, "nan_origin": self.nan_origin, "culprits": list(self.culprits),
            "hazards": [h.to_dict() for h in self.hazards], "explanations": list(self.explanations),
            "unmodeled": list(self.unmodeled), "notes": list(self.notes), "mode": self.mode,
            "examined_with": self.examined_with, "outputs_by_values": self.outputs_by_values,
            "checkpoints": list(self.checkpoints), "nodes": [n.to_dict() for n in self.nodes],
        }


def _num(x: float | None) -> float | str | None:
    return x if x is None or math.isfinite(x) else str(x)


def _m(x: Metrics | None) -> dict[str, Any] | None:
    return None if x is None else x.to_dict()
