"""Streaming per-node statistics over a `Lockstep` run (side 0: policy, 1: oracle, 2: reference).

`NodeObserver` is the Lockstep's `on_node` callback: it reduces each node's values to `Metrics`
while the node's operands are still alive, then the interpreter frees them. Per node it keeps only
scalars, so memory stays at what the lockstep run itself holds.
"""

from __future__ import annotations

import logging
import math
import operator
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch
import torch.fx

from roundoff.analyze.amplified import amplified_read, fp32_own_excess
from roundoff.analyze.decisions import DecisionFlip, is_decision, near_tie_flip
from roundoff.analyze.hazards import Ranges, finite_range
from roundoff.analyze.metrics import Metrics, exact_metrics, measure_each, norm_rels
from roundoff.analyze.noise import (
    all_zero,
    fp64_without,
    noise_size,
    overflowed_reads,
    overflows_format,
    rms_of,
    stored_overflow,
    unlike,
)
from roundoff.analyze.output_floor import (
    OutputFloors,
    finite_norm,
    operand_floor,
    structural_zero_floor,
)
from roundoff.analyze.result import NodeReport
from roundoff.analyze.selections import differing_indices, is_selection
from roundoff.analyze.verdict import (
    EXCESS_LIMIT,
    Rule,
    Verdict,
    demanded_dtypes,
    excess,
    format_overflow,
    judge,
    matmul_floor_from,
    matmul_norm_squared,
    narrower,
    new_nonfinite,
    nonfinite_counts,
    own_excess,
    reduction_floor_from,
    reduction_norm,
    unit_roundoff,
    widen_fp8,
    working_dtype,
)
from roundoff.capture.program import (
    NODE_ID,
    base_id,
    multi_output_parent,
    node_module,
    node_source,
    output_op_name,
)
from roundoff.execute.formats import HELD_NARROW, is_float
from roundoff.execute.interpreter import Lockstep, is_random
from roundoff.execute.native_kernels import SUMS_IN_STORAGE
from roundoff.execute.node_numerics import OracleNumerics, PlanNumerics, round_value
from roundoff.numerics import FORMATS, Format, get_format, round_to
from roundoff.ops.classes import OpClass
from roundoff.ops.classify import classify
from roundoff.plan.saved import forward_ids

POLICY, ORACLE, REFERENCE = 0, 1, 2
_aten = torch.ops.aten
_MEANS = frozenset({_aten.mean.default, _aten.mean.dim})
#: Reductions whose result is a sum of their first argument's elements (embedding's gradient sums
#: the gradient rows of each index).
_SUMS = _MEANS | {_aten.sum.default, _aten.sum.dim_IntList, _aten.embedding_dense_backward.default}
#: Matmuls and their operand positions (a @ b).
_MATMULS = {_aten.mm.default: (0, 1), _aten.bmm.default: (0, 1), _aten.addmm.default: (1, 2),
            _aten.baddbmm.default: (1, 2)}
#: Ops whose result is uninitialised memory (only its shape and dtype mean anything).
_UNINITIALIZED = frozenset({
    _aten.empty.memory_format, _aten.empty_like.default, _aten.empty_strided.default,
    _aten.new_empty.default, _aten.new_empty_strided.default,
})


#: Relative slack on the RMSE ratio for fp64 summation-order differences between the metric pass and
#: ``same``'s own ``mean`` (at most ~n * 2**-53 relative: 1e-9 at 2**23 elements).
_RMSE_SLACK = 1e-6


def implied_pass(res: Metrics, ref: Metrics) -> bool:
    """True when ``same(ref, res, fp64_ref=oracle)`` must pass, from both values' figures against the oracle.

    `res`/`ref` must measure exactly the tensors `same` receives. With every element of res, ref and
    the oracle finite, ``same`` passes when ``allclose`` does or when ``rmse(res) <= m * rmse(ref) +
    tol/10`` with a multiplier ``m >= 2`` (2, 3, 8 or 10 in torch 2.9-2.13). Both RMSEs share the oracle's
    signal, so their ratio is ``10**((sqnr_ref - sqnr_res) / 20)``; a ratio at most 2 (less a slack for
    summation order) passes whatever the multiplier and tolerance. Anything else: False (undecided).
    """
    finite = res.nonfinite + ref.nonfinite + res.ref_nan + res.ref_inf == 0
    if not finite or math.isnan(res.sqnr_db) or math.isnan(ref.sqnr_db):
        return False
    if res.sqnr_db == math.inf:  # no error at all
        return True
    if not math.isfinite(ref.sqnr_db):  # ref exact (+inf) or the oracle all zeros (-inf): ratio unknown
        return False
    return res.sqnr_db - ref.sqnr_db >= -20 * math.log10(2 * (1 - _RMSE_SLACK))


def rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.sqrt(torch.mean((a.double() - b.double()) ** 2)))


class NodeObserver:
    """Collects `NodeReport`s and the first non-finite origin while a Lockstep runs."""

    def __init__(
        self, policy_side: PlanNumerics, has_reference: bool, tol: float, local: bool = True, rule: Rule = Rule.SAME,
        floors: OutputFloors | None = None,
    ) -> None:
        """`floors`: where to record the outputs' operand floors (`roundoff.analyze.output_floor`), if at all."""
        self.side = policy_side
        self.floors = floors
        # Selections choosing other indices than fp64 (`roundoff.analyze.selections`): {id: (differing, of)}.
        self.flips: dict[str, tuple[int, int]] = {}
        self.flip_values: dict[str, object] = {}  # the policy's value of each flipped selection
        # Against a reference: ordered comparisons the policy decided otherwise near a tie (`analyze.decisions`).
        self.decisions: dict[str, DecisionFlip] = {}
        self.rule = rule
        self.has_reference = has_reference
        self.tol = tol
        self.local = local
        self.reports: list[NodeReport] = []
        self._forward: set[str] | frozenset[str] | None = None  # `_in_backward`'s, made when first asked
        self.nan_origin: str | None = None
        self.reference_nan_origin: str | None = None
        self.ranges = Ranges()
        self.zero_operands: dict[str, list[str]] = {}
        # Nodes whose policy value equals the oracle's bit for bit: a node reading only such values
        # has local error == total error, so it is not recomputed from oracle inputs.
        self.exact: set[torch.fx.Node] = set()
        # Nodes whose policy (reference) value is NaN/inf somewhere fp64 is finite (see `_origin`).
        self.bad: set[torch.fx.Node] = set()
        self.ref_bad: set[torch.fx.Node] = set()
        # Nodes +-inf only where their format cannot hold fp64's value (`verdict.nonfinite_counts`),
        # each mapped to the node where that overflow began: an origin only if it later makes harm.
        self.forced: dict[torch.fx.Node, str] = {}
        self._demand: dict[torch.fx.Node, torch.dtype] | None = None
        self._whole: tuple[torch.fx.Node, Any] | None = None  # a multi-output op recomputed (`_local_value`)
        # Nodes whose fp64 value is 0 by the model's structure, or made only of such values (`_noise_of_zeros`),
        # and per multi-output op with such operands, its results fp64 again with them 0 makes 0.
        self.zeroish: set[torch.fx.Node] = set()
        # Nodes a kernel keeps in fp32 that overflow where a kernel boundary stores them: what reads them
        # reads inf, which is not its own making (`noise.stored_overflow`).
        self.stored_wide: set[torch.fx.Node] = set()
        self._beyond_format: dict[str, bool] = {}  # node id -> fp64's range beyond its narrow storage format
        self._zero_items: dict[torch.fx.Node, set[int]] = {}
        logging.getLogger("torch._dynamo.utils").setLevel(logging.CRITICAL)

    def _demanded(self, node: torch.fx.Node) -> dict[torch.fx.Node, torch.dtype]:
        """`verdict.demanded_dtypes` of the graph being run, computed at its first node."""
        if self._demand is None:
            self._demand = demanded_dtypes(node.graph, self.side.storage)
        return self._demand

    def __call__(self, node: torch.fx.Node, vals: tuple, ls: Lockstep) -> tuple | None:
        """Report `node`; returns `vals` with the reference sharing the policy's tensor where the two
        are equal bit for bit (same dtype and layout), so the run holds that value once."""
        if node.op == "placeholder" and is_float(vals[ORACLE]):
            self._record_range(node.meta.get(NODE_ID, node.name), vals[ORACLE], None)
            if self._placeholder_exact(vals[POLICY], vals[ORACLE]):
                self.exact.add(node)
        if self.floors is not None and node in self.floors.sites:
            self.floors.record(node, vals[ORACLE], ls.reader(ORACLE))
        if node.op == "output":  # an output +-inf where fp64 is finite fails: its overflow did harm
            for began in {self.forced[p] for p in node.all_input_nodes if p in self.forced}:
                self._overflow_harms(began)
        if (is_selection(node)
                and (flip := self._flip(vals[POLICY], vals[ORACLE])) is not None):
            self.flips[node.meta.get(NODE_ID, node.name)], self.flip_values[node.meta.get(NODE_ID, node.name)] = flip
        if self.has_reference and is_decision(node) and (
                tie := near_tie_flip(node, vals, [ls.reader(i) for i in range(len(vals))], POLICY, ORACLE, REFERENCE)):
            self.decisions[tie.node_id] = tie
        self._recompute_whole(node, vals, ls)
        if node.op == "call_function" and isinstance(vals[ORACLE], (tuple, list)):
            self._find_zero_items(node, vals, ls)
        if node.op != "call_function" or not is_float(vals[POLICY]):
            return None
        d = self.side.decision(node)
        op_class = d.op_class if d is not None else None
        if node.target in _UNINITIALIZED:  # its values are whatever memory held: nothing to compare
            return None
        if op_class is OpClass.DATA_MOVEMENT and node.target is not operator.getitem:
            if all(p in self.exact for p in node.all_input_nodes):  # moves exact values only
                self.exact.add(node)
            floats = [p for p in node.all_input_nodes if is_float(p.meta.get("val"))]
            if floats and all(p in self.zeroish for p in floats):  # moves fp64's noise only
                self.zeroish.add(node)
            for bad in (self.bad, self.ref_bad):  # moves NaN/inf made upstream: not an origin either
                if any(p in bad for p in node.all_input_nodes):
                    bad.add(node)
            if (began := self._forced_from(node)) is not None:
                self.forced[node] = began
            return None
        dtype, work = self._formats(node, vals)
        res, oracle = vals[POLICY], vals[ORACLE]
        nid = node.meta.get(NODE_ID, node.name)
        ref = vals[REFERENCE] if self.has_reference else self._rounded_oracle(oracle, dtype)
        ref_differs = self.has_reference and self._differs(ref, res)  # common: the policies agree here
        local_value = self._local_value(node, ls)
        harmed = None  # where the format overflow began that this node turns into wrong values, if it does
        if local_value is not None and (reads := self._overflowing_reads(node, op_class)):
            local_value, harmed = self._without_overflowed_reads(local_value, oracle, reads, ls)
        pair = _judged_pair(res, ref, dtype) if ref_differs else None  # (against the oracle no `same` per node)
        m, floor, floor_work = self._figures(res, ref, oracle, local_value, pair, ref_differs, dtype, work)
        vs_oracle = m["policy"]
        new, overflow = nonfinite_counts(res, oracle) if vs_oracle.nonfinite else (0, 0)
        if overflow and not new:
            self.forced[node] = self._forced_from(node) or nid
        elif not overflow and dtype in HELD_NARROW and res.dtype != dtype and self._stored(node, nid) and (
                overflow := self._stored_overflow(res, oracle, dtype)):  # kept wide in its kernel, inf where it is
            self.forced[node] = self._forced_from(node) or nid  # stored (trial 50: a VAE's fp16 KL sum, 1e5;
            self.stored_wide.add(node)  # the mul reading it was named the origin)
        terms = self._terms_floor(node, ls, oracle, work)
        vs_oracle = replace(vs_oracle, excess=excess(vs_oracle, floor, dtype, terms), new_nonfinite=new)
        self._record_range(nid, oracle, vs_oracle)
        vs_ref = ref_vs_oracle = None
        if self.has_reference:
            if ref_differs:
                vs_ref, ref_vs_oracle = m["vs_reference"], m["reference"]
            else:
                vs_ref, ref_vs_oracle = self._exact_metrics(res), vs_oracle
        self._origin(node, vals, ls, vs_oracle, ref_vs_oracle, oracle)
        local, inherited = self._local(node, vs_oracle, m.get("local"))
        if local is not None:
            own_new = new_nonfinite(local_value, oracle) if local.nonfinite and local_value is not None else 0
            made = own_new or local.new_nonfinite
            if made and any(p in self.stored_wide or self._reads_stored_overflow(node, p)  # an operand's overflow
                            for p in node.all_input_nodes):  # as stored: not its own making
                made = 0
            local = replace(local, excess=excess(local, floor_work, work, terms), new_nonfinite=made)
        if terms and rms_of(vs_oracle) <= terms * unit_roundoff(torch.float32) / unit_roundoff(work):
            self.zeroish.add(node)  # a sum fp32 could not tell from 0: fp64's noise (trial 50: a q gradient)
        elif (not self.has_reference and vs_oracle.norm_rel > 0.5 and not vs_oracle.new_nonfinite and (
                (parent := multi_output_parent(node)) is not None and node.args[1] in self._zero_items.get(parent, ())
                or parent is None and structural_zero_floor(node, oracle, ls.reader(ORACLE), work))):
            self.zeroish.add(node)  # nothing like fp64, which is 0 but for its noise (a flash-attention q gradient)
        elif (not self.has_reference and math.isinf(vs_oracle.norm_rel) and not vs_oracle.nonfinite
              and local is not None and local.max_abs == 0.0):
            self.zeroish.add(node)  # fp64 exactly 0 and the op exact from fp64's operands: its value is their
            # rounding noise, carried into a 0 by the model's structure (where fp64's own kernel cancels exactly)
        # against a reference too where its value is fp64's noise as well (trial 71: a gradient 0 by structure
        # had an own excess of 1024 against eager, 1e-14 against fp64, and --rule bitwise named it a cause);
        # not where the reference holds the 0 the policy loses (`exp(x*s - x*s)`'s FMA)
        noise_for_both = not self.has_reference or (ref_vs_oracle is not None and ref_vs_oracle.norm_rel >= 0.5)
        if (noise_for_both and own_excess(local or vs_oracle, floor_work, work, terms) > EXCESS_LIMIT
                and not (local or vs_oracle).new_nonfinite
                and (zero := (structural_zero_floor(node, oracle, ls.reader(ORACLE), work) if not terms else 0.0)
                     or self._noise_of_zeros(node, ls, oracle, local or vs_oracle)
                     or (noise_size(oracle, local or vs_oracle) if node in self.zeroish else 0.0))):
            terms = zero  # 0 by the model's structure (1 - sum(softmax)): held to its operands' rounding,
            self.zeroish.add(node)  # or, made of such values only, to its own error (fp64's noise: no signal)
            vs_oracle = replace(vs_oracle, excess=excess(vs_oracle, floor, dtype, terms))
            local = replace(local, excess=excess(local, floor_work, work, terms)) if local is not None else None
        elif op_class is OpClass.CAST and all(p in self.zeroish for p in node.all_input_nodes if is_float(p.meta.get("val"))):
            self.zeroish.add(node)  # fp64's noise cast is noise still (trial 93: a decomposed BatchNorm's bias
            # gradient, 0 by structure, cast to fp16 was called an underflow, "5e13% off fp64", GradScaler advised)
        if vs_oracle.max_abs == 0.0 and vs_oracle.nonfinite == 0 and vs_oracle.ref_nan + vs_oracle.ref_inf == 0:
            self.exact.add(node)
        judged = None  # figures of exactly the (res, ref) pair `same` would receive
        if pair is not None:
            judged = (m.get("judged_res", vs_oracle), m.get("judged_ref", ref_vs_oracle))
        score = own_excess(local if local is not None else vs_oracle, floor_work, work, terms)
        if (local is not None and score > EXCESS_LIMIT and not local.new_nonfinite and not self.has_reference
                and (own := fp32_own_excess(self.side, node, ls.reader(ORACLE), oracle, dtype, local, floor_work, work,
                                            terms)) is not None):
            score, local = own, replace(local, excess=own)
        verdict = self._verdict(res, ref, oracle, dtype, vs_oracle, judged, score)
        read = amplified_read(self.side, node, ls.reader(ORACLE), oracle, dtype, floor_work, work, terms) if (
            local is not None and score > EXCESS_LIMIT and not local.new_nonfinite and not self.has_reference) else None
        if verdict is not Verdict.OK and node not in self.forced and (began := self._forced_from(node)) is not None:
            self._overflow_harms(began)
        elif harmed is not None:
            self._overflow_harms(harmed)
        self.reports.append(
            NodeReport(
                node_id=nid, op=output_op_name(node), source=node_source(node),
                op_class=op_class.value if op_class else "unknown", dtype=str(dtype).replace("torch.", ""),
                vs_oracle=vs_oracle, vs_reference=vs_ref, reference_vs_oracle=ref_vs_oracle,
                local=local, inherited_bits=inherited, verdict=verdict,
                fma=bool(d is not None and d.fma is not None and d.fma.contracted),
                working_dtype=str(work).removeprefix("torch."), format_loss=floor_work, overflow=overflow, terms_rmse=terms,
                amplifies_read=read, backward=self._in_backward(nid, node), module=node_module(node),
            )
        )
        if self.has_reference and not ref_differs and ref is not res and _same_layout(ref, res):
            return (res, oracle, res) + vals[3:]
        return None

    def _in_backward(self, nid: str, node: torch.fx.Node | None = None) -> bool:
        """Whether node `nid` is computed for a training step's backward only (`plan.saved.forward_ids`): neither
        it, its copy's original (``n7@k2``), the captured node it was made from (``n7.1``) nor the op of which
        it is one result (`node`'s: a BatchNorm's saved 1/std, which only the backward reads) is a forward
        node (trial 85: a LayerNorm's first step ``n59.0``, its captured node decomposed away, was said to be
        in the backward; trial 100: eager's ``native_batch_norm[2]``)."""
        if self._forward is None:
            program = self.side.plan.program
            self._forward = forward_ids(program) if program.backward else frozenset()
        parent = multi_output_parent(node) if node is not None else None
        ids = {nid, nid.split("@")[0], base_id(nid)} | ({str(parent.meta.get(NODE_ID))} if parent is not None else set())
        return bool(self._forward) and not ids & self._forward

    def _figures(
        self, res: torch.Tensor, ref: torch.Tensor, oracle: torch.Tensor, local_value: torch.Tensor | None,
        pair: tuple[torch.Tensor, torch.Tensor] | None, ref_differs: bool, dtype: torch.dtype, work: torch.dtype,
    ) -> tuple[dict[str, Metrics], float, float]:
        """Every comparison against the oracle in one pass: policy, reference, local recomputation and
        the two values the verdict judges where they are not among those (see `implied_pass`); and the
        normwise relative error of fp64 correctly rounded to the storage and to the working format (the
        floors of `verdict.excess`, all they are used for: no ULP figures)."""
        values = {"policy": res, "reference": ref if ref_differs else None, "local": local_value}
        if pair is not None:
            values["judged_res"] = pair[0] if pair[0] is not res else None
            values["judged_ref"] = pair[1] if pair[1] is not ref or not ref_differs else None
        held = not self.has_reference and ref.dtype == dtype  # `ref` is fp64 correctly rounded already
        return self._measured({k: v for k, v in values.items() if v is not None}, oracle, dtype, ref if held else None,
                              work, ("policy", "reference") if ref_differs else None)

    def _measured(
        self, values: dict[str, torch.Tensor], oracle: torch.Tensor, dtype: torch.dtype, rounded: torch.Tensor | None,
        work: torch.dtype, pair: tuple[str, str] | None,
    ) -> tuple[dict[str, Metrics], float, float]:
        """`_figures`' measurements of the named `values` (`rounded`: fp64 correctly rounded to `dtype`
        where the caller holds it; `pair`: the two names measured against each other too, as
        ``"vs_reference"``)."""
        rounded = rounded if rounded is not None else round_to(oracle, _fmt(dtype))
        if work != dtype:
            floor, floor_work = norm_rels((rounded, round_to(oracle, _fmt(work))), oracle)
        else:
            floor = floor_work = norm_rels((rounded,), oracle)[0]
        unique = list({id(v): v for v in values.values()}.values())
        ids = [id(v) for v in unique]
        at = (ids.index(id(values[pair[0]])), ids.index(id(values[pair[1]]))) if pair is not None else None
        figures = measure_each(unique, oracle, dtype, rounded, at)
        measured = dict(zip(ids, figures))
        return {**{k: measured[id(v)] for k, v in values.items()},
                **({"vs_reference": figures[-1]} if at is not None else {})}, floor, floor_work

    def _terms_floor(self, node: torch.fx.Node, ls: Lockstep, oracle: torch.Tensor, dtype: torch.dtype) -> float:
        return terms_floor(node, ls, ORACLE, oracle.numel(), dtype)

    def _formats(self, node: torch.fx.Node, vals: tuple) -> tuple[torch.dtype, torch.dtype]:
        """(storage dtype, working dtype) of examined node `node` (static: the plan's decisions)."""
        d = self.side.decision(node)
        dtype = self.side.storage(node)
        dtype = dtype if isinstance(dtype, torch.dtype) else vals[POLICY].dtype
        operands = [s for p in node.all_input_nodes if isinstance(s := self.side.storage(p), torch.dtype)]
        if d is not None and d.input_format is not None:  # the plan reads the operands rounded (autocast)
            operands.append(get_format(d.input_format).storage_dtype)
        return dtype, narrower(working_dtype(dtype, operands), self._demanded(node).get(node, dtype))

    # Where the decisions read values (`analyze.deferred` takes them from figures read once instead).

    def _placeholder_exact(self, policy: torch.Tensor, oracle: torch.Tensor) -> bool:
        return policy.shape == oracle.shape and torch.equal(policy.double(), oracle)

    def _flip(self, policy: Any, oracle: Any) -> tuple[tuple[int, int], Any] | None:
        """(`differing_indices`, the policy's value) of a selection that chose other indices than fp64."""
        flip = differing_indices(policy, oracle)
        return (flip, policy) if flip is not None else None

    def _rounded_oracle(self, oracle: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return round_value(oracle, dtype)

    def _differs(self, ref: torch.Tensor, res: torch.Tensor) -> bool:
        return not torch.equal(ref, res)

    def _equal_as(self, ref: torch.Tensor, res: torch.Tensor, dtype: torch.dtype) -> bool:
        return torch.equal(ref.to(dtype), res.to(dtype))

    def _judge(self, ref: torch.Tensor, res: torch.Tensor, oracle: torch.Tensor, dtype: torch.dtype) -> bool:
        """The rule on (ref, res) in `dtype`, leaving out the elements where the reference is NaN/inf and
        fp64 is not (the reference fails there, not the node: the outputs' findings say so, as observe's
        kernels leave them out) and where the node's value is the infinity fp64 correctly rounded to
        `dtype` is (the format's overflow, not held against the node at first: module doc of
        `roundoff.analyze.verdict`; `forced` tracks whether a later node turns it into harm). An fp32
        ``exp`` kept wide in its kernel, judged in its fp16 storage, is inf there as eager's is."""
        ref, res = ref.to(dtype), res.to(dtype)
        if judge(self.rule, ref, res, oracle, self.tol):
            return True
        left_out = (~widen_fp8(ref).isfinite() & oracle.isfinite()) | format_overflow(res, oracle)
        return bool(left_out.any()) and judge(self.rule, ref, res, oracle.masked_fill(left_out, math.nan), self.tol)

    def _stored_overflow(self, res: torch.Tensor, oracle: torch.Tensor, dtype: torch.dtype) -> int:
        return stored_overflow(res, oracle, dtype)

    def _exact_metrics(self, res: torch.Tensor) -> Metrics:
        return exact_metrics(res)

    def _unlike(self, res: Any, oracle: Any) -> bool:
        return unlike(res, oracle)

    def _oracle_range(self, oracle: torch.Tensor, m: Metrics | None) -> tuple[float, float]:
        if m.ref_nan + m.ref_inf == 0 if m is not None else bool(oracle.isfinite().all()):
            lo, hi = torch.aminmax(oracle)
        else:
            lo, hi = finite_range(oracle)
        return float(lo), float(hi)

    def _forced_from(self, node: torch.fx.Node) -> str | None:
        """Where the format overflow an operand of `node` carries began (`self.forced`), if any."""
        return next((self.forced[p] for p in node.all_input_nodes if p in self.forced), None)

    def _record_range(self, nid: str, oracle: torch.Tensor, m: Metrics | None) -> None:
        """absmax/max of the oracle's finite values (`m`'s reference counts skip the mask when all are finite)."""
        if not oracle.numel():
            return
        lo, hi = self._oracle_range(oracle, m)
        if math.isfinite(lo) and math.isfinite(hi):  # else no finite element at all
            self.ranges.absmax[nid] = max(-lo, hi)
            self.ranges.max[nid] = hi

    def _verdict(
        self, res: torch.Tensor, ref: torch.Tensor, oracle: torch.Tensor, dtype: torch.dtype, m: Metrics,
        judged: tuple[Metrics, Metrics] | None = None, own: float = 0.0,
    ) -> Verdict:
        """The node's `Verdict` as `roundoff.analyze.verdict` defines it. Against a reference, the rule
        on (ref, res) in `dtype`; `same` is skipped where `judged`, the figures of exactly those two
        values against the oracle, already imply that it passes."""
        if m.new_nonfinite:
            return Verdict.NONFINITE
        if not self.has_reference:  # `own`: the node's own error, `verdict.own_excess`
            return Verdict.DIVERGES if own > EXCESS_LIMIT else Verdict.OK
        if self.rule is Rule.SAME and judged is not None and implied_pass(*judged):
            return Verdict.OK
        # torch.equal calls -0.0 and +0.0 equal: a shortcut for every rule but the bitwise one
        if self.rule is not Rule.BITWISE and self._equal_as(ref, res, dtype):
            return Verdict.OK
        return Verdict.OK if self._judge(ref, res, oracle, dtype) else Verdict.DIVERGES

    def _local_value(self, node: torch.fx.Node, ls: Lockstep) -> torch.Tensor | None:
        """The node recomputed by the policy from the oracle's inputs, when that can differ from its value.
        An output of a multi-output op (``getitem``) is taken from that op recomputed so
        (`_recompute_whole`): its own error is the op's (a LayerNorm backward's weight gradient), not
        only its rounding."""
        if not self.local or is_random(node) or all(p in self.exact for p in node.all_input_nodes):
            return None  # (a random node's sample is shared by every run: nothing local to recompute)
        read = ls.reader(ORACLE)
        if self._whole is not None and multi_output_parent(node) is self._whole[0]:
            parent, whole = self._whole
            value = self.side.evaluate(node, lambda p: whole if p is parent else read(p), fresh=True)
        else:
            value = self.side.evaluate(node, read, fresh=True)
        return value if is_float(value) else None

    def _overflowing_reads(self, node: torch.fx.Node, op_class: OpClass | None) -> list[tuple[torch.fx.Node, torch.dtype]]:
        """The operands pointwise `node` reads in a narrow format fp64's value overflows somewhere, with that
        format: one +-inf where fp64 is finite (`forced`), or one kept wide whose stored value is
        (`stored_wide`) where `node` reads it stored (trial 55: a softmax's fp16 row sum, inf at a row
        where fp64's is 6.6e4, read by the division)."""
        if op_class not in (OpClass.POINTWISE_ARITHMETIC, OpClass.POINTWISE_TRANSCENDENTAL):
            return []
        return [(p, dtype) for p in node.all_input_nodes
                if (p in self.forced or self._reads_stored_overflow(node, p))
                and isinstance(dtype := self.side.storage(p), torch.dtype) and dtype in HELD_NARROW]

    def _reads_stored_overflow(self, node: torch.fx.Node, p: torch.fx.Node) -> bool:
        """Whether `node` reads operand `p` stored in a narrow format that cannot hold fp64's value of it
        somewhere (kept wide and inf where stored, `stored_wide`; or fp64's range beyond the format where
        the run's own value cannot show it, being NaN already: trial 109, an fp16 softmax's `exp` after an
        earlier attention's NaN, whose row `sum` was said to make NaN itself). Recomputed from fp64
        operands, `node` reads inf there: the operand format's overflow, not `node`'s own making."""
        d = self.side.decision(node)
        pid = p.meta.get(NODE_ID)
        if d is None or pid not in d.rounded_inputs:
            return False
        if p in self.stored_wide:
            return True
        if pid not in self._beyond_format:  # (once a producer: every pointwise consumer asks)
            dtype, absmax = self.side.storage(p), self.ranges.absmax.get(pid)
            self._beyond_format[pid] = (absmax is not None and isinstance(dtype, torch.dtype)
                                        and dtype in HELD_NARROW and overflows_format(absmax, dtype))
        return self._beyond_format[pid]

    def _without_overflowed_reads(
        self, local: torch.Tensor, oracle: torch.Tensor, reads: list[tuple[torch.fx.Node, torch.dtype]], ls: Lockstep,
    ) -> tuple[torch.Tensor, str | None]:
        """`local` with its finite elements that read an operand's format overflow (`noise.overflowed_reads`)
        set to fp64's value in `local`'s dtype, so that the node's own error is judged where it has one
        (NaN/inf it makes there stay: the origin rules name where that overflow began); and, where it
        makes 0 of them while fp64 is finite and not 0 (``x / inf``), the node where that overflow began
        (`_overflow_harms`), else None."""
        read = ls.reader(ORACLE)
        mask = overflowed_reads(local.shape, [(read(p), dtype) for p, dtype in reads])
        if mask is None:
            return local, None
        mask = mask & local.isfinite()  # (`mask` may be a broadcast view)
        zeroed = mask & (local == 0) & oracle.isfinite() & (oracle != 0)
        began = next((self.forced[p] for p, _ in reads if p in self.forced), None) if bool(zeroed.any()) else None
        return torch.where(mask, oracle.to(local.dtype), local), began

    def _stored(self, node: torch.fx.Node, nid: str) -> bool:
        """Whether some user of `node` reads it rounded to its storage format (a kernel boundary stores it)."""
        return any((d := self.side.decision(u)) is not None and nid in d.rounded_inputs for u in node.users)

    def _noise_of_zeros(self, node: torch.fx.Node, ls: Lockstep, oracle: torch.Tensor, own: Metrics) -> float:
        """Where `node`'s fp64 value is made only of values 0 by the model's structure (`zeroish`: fp64's
        rounding noise, 1e-16 of their terms; trial 50: a CLIP whose pooled token attends only to itself,
        its q/k gradients), the larger of that value's RMS and of its `own` error: what its error is held
        to (it carries no signal: fp16's 0 is as good as fp32's noise); else 0. Read as: fp64 again
        with those operands 0 gives 0."""
        if not any(p in self.zeroish for p in node.all_input_nodes) or not is_float(oracle):
            return 0.0
        if (parent := multi_output_parent(node)) is not None:
            zeroed = node.args[1] in self._zero_items.get(parent, ())
        else:
            zeroed = all_zero(fp64_without(node, ls.reader(ORACLE), self.zeroish))
        return noise_size(oracle, own) if zeroed else 0.0

    def _recompute_whole(self, node: torch.fx.Node, vals: tuple, ls: Lockstep) -> None:
        """Keep, for the ``getitem`` nodes after multi-output op `node` (`_local_value`), fp64's value
        of it moved by the op's own error: its result on the policy's operands minus fp64's on those
        same operands (what its kernel adds, not what they carry); drop it at another node. Only an
        op whose kernel sums in its storage dtype (`SUMS_IN_STORAGE`: eager CPU's 16-bit LayerNorm
        backward, a rounding per row). Recomputed from fp64's operands rounded instead, a LayerNorm's
        ``x - mean`` amplifies their inconsistent roundings (the saved mean is rounded from fp64's,
        not computed from the rounded x): a 20x "own error" where the output is 2x (corpus BERT). Of
        exact operands (graph inputs), that is the op's own value: its error is all its own (a BatchNorm of
        the input features). Other multi-output ops' results are judged by their rounding, as before."""
        if self._whole is not None and node is not self._whole[0] and multi_output_parent(node) is not self._whole[0]:
            self._whole = None
        if (self.local and node.target in SUMS_IN_STORAGE and isinstance(vals[POLICY], (tuple, list))
                and any(is_float(v) for v in vals[POLICY]) and not is_random(node)):
            self._whole = (node, self._moved_by_own_error(node, vals, ls))  # (exact operands: the op's value)

    def _moved_by_own_error(self, node: torch.fx.Node, vals: tuple, ls: Lockstep) -> tuple:
        """`_recompute_whole`'s value of multi-output op `node`: the kernel's error on the policy's operands,
        relative to its exact result on them, carried to fp64's scale (times ||fp64's|| / ||that exact
        result||, one factor per result), so an operand inherited orders of magnitude too large does not make
        the kernel's own error as many times larger than fp64's rounding (trial 103: a Conformer's
        LayerNorm-backward bias sum, fed gradients 1e6x fp64's by an upstream E[x^2] - E[x]^2, was named
        the cause at 3.7e7x where its relative error was fp64's operands' 60x)."""
        read = ls.reader(POLICY)
        exact = OracleNumerics().evaluate(node, lambda p: v.double() if is_float(v := read(p)) else v)

        def moved(o: torch.Tensor, r: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
            to, at = finite_norm(o), finite_norm(e)
            scale = to / at if to > 0.0 and at > 0.0 and math.isfinite(to / at) else 1.0
            return o + (r.double() - e) * scale

        return tuple(moved(o, r, e) if is_float(o) and is_float(r) and is_float(e) else o
                     for o, r, e in zip(vals[ORACLE], vals[POLICY], exact))

    def _find_zero_items(self, node: torch.fx.Node, vals: tuple, ls: Lockstep) -> None:
        """The results of multi-output op `node` fp64 holds only as noise (`_zero_items`), found while
        its operands are here: those nothing like fp64's that fp32 could not tell from 0, and those
        fp64 again with its noise operands read as 0 makes 0."""
        if not self.has_reference:
            far = tuple(i for i, (r, o) in enumerate(zip(vals[POLICY], vals[ORACLE])) if self._unlike(r, o))
            if far:
                floors = operand_floor(node, vals[ORACLE], ls.reader(ORACLE), torch.float32, far)
                self._zero_items[node] = {i for i, f in zip(far, floors) if finite_norm(vals[ORACLE][i]) <= f}
        if any(p in self.zeroish for p in node.all_input_nodes):
            self._zero_items.setdefault(node, set()).update(
                i for i, v in enumerate(fp64_without(node, ls.reader(ORACLE), self.zeroish)) if all_zero(v))

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
        self, node: torch.fx.Node, vals: tuple, ls: Lockstep, m: Metrics, ref_m: Metrics | None,
        oracle: torch.Tensor,
    ) -> None:
        """Track the nodes with NaN/inf where fp64 is finite; the first of each run whose float operands
        have none is its origin (`m`: the policy's figures). Masks (fp64 +-inf or NaN as well) and NaN
        already in the inputs are never origins."""
        nid = node.meta.get(NODE_ID, node.name)
        if m.new_nonfinite:
            if self.nan_origin is None and not any(p in self.bad for p in node.all_input_nodes):
                self.nan_origin = self._forced_from(node) or nid
            if not any(p in self.bad or p in self.forced for p in node.all_input_nodes):  # (inf * 0: the inf is the cause)
                self.zero_operands[nid] = _new_zeros(node, ls)
            self.bad.add(node)
        if ref_m is not None and ref_m.nonfinite and new_nonfinite(vals[REFERENCE], oracle):
            if self.reference_nan_origin is None and not any(p in self.ref_bad for p in node.all_input_nodes):
                self.reference_nan_origin = nid
            self.ref_bad.add(node)

    def _overflow_harms(self, began: str) -> None:
        """Node `began` overflowed its format and a later node that reads it fails (NaN/inf fp64 does not
        have, or its error beyond the limit): `began`'s report becomes `Verdict.NONFINITE`, counting its
        overflowing elements, and it is the NaN/inf origin unless one came before."""
        if self.nan_origin is None:
            self.nan_origin = began
        for i in range(len(self.reports) - 1, -1, -1):
            r = self.reports[i]
            if r.node_id == began:
                m, own = r.vs_oracle, r.local
                self.reports[i] = replace(
                    r, verdict=Verdict.NONFINITE, vs_oracle=replace(m, new_nonfinite=m.inf - m.ref_inf),
                    local=replace(own, new_nonfinite=own.inf - own.ref_inf) if own is not None else None,
                )
                return


def terms_floor(node: torch.fx.Node, ls: Lockstep, side: int, numel: int, dtype: torch.dtype) -> float:
    """`verdict.reduction_floor` of a sum/mean node, `verdict.matmul_floor` of a matmul (else 0), from
    side `side`'s values of its operands (0 where they are no longer held): the RMS error over `numel`
    results that rounding its fp64 terms to `dtype` causes."""
    pending = terms_norm(node, ls, side, numel, dtype)
    return pending[1](float(pending[0])) if pending is not None else 0.0


def terms_norm(
    node: torch.fx.Node, ls: Lockstep, side: int, numel: int, dtype: torch.dtype,
) -> tuple[torch.Tensor, Callable[[float], float]] | None:
    """`terms_floor` not read: (a device scalar, what makes the floor of it read); None where the floor
    is 0 whatever the values."""
    if node.target in _MATMULS:
        a, b = (_operand(node, i, ls, side) for i in _MATMULS[node.target])
        if a is None or b is None or not numel or a.dim() < 2 or b.dim() < 2:
            return None
        return matmul_norm_squared(a, b), lambda v: matmul_floor_from(v, numel, dtype)
    if node.target not in _SUMS or (terms := _operand(node, 0, ls, side)) is None or not numel or not terms.numel():
        return None
    count, mean = terms.numel(), node.target in _MEANS
    return reduction_norm(terms), lambda v: reduction_floor_from(v, count, numel, dtype, mean)


def _operand(node: torch.fx.Node, i: int, ls: Lockstep, side: int = ORACLE) -> torch.Tensor | None:
    """Side `side`'s value of `node`'s `i`-th argument, when it is a float node still held."""
    arg = node.args[i] if i < len(node.args) else None
    if not isinstance(arg, torch.fx.Node) or arg not in ls.env:
        return None
    value = ls.reader(side)(arg)
    return value if is_float(value) else None


def _judged_pair(res: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(res, ref) as the verdict's ``same`` receives them, in `dtype` (bf16, fp16, fp32; else None)."""
    if dtype not in (*HELD_NARROW, torch.float32):
        return None
    return tuple(v if v.dtype == dtype else v.to(dtype) for v in (res, ref))  # type: ignore[return-value]


def _fmt(dtype: torch.dtype) -> Format:
    try:
        return get_format(dtype)
    except ValueError:
        return FORMATS["fp32"]


def _same_layout(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride() and a.device == b.device


#: Divisions: only the divisor's zeros make NaN/inf (a 0 numerator over a finite divisor is 0).
_DIVISIONS = frozenset({torch.ops.aten.div.Tensor, torch.ops.aten.div.Tensor_mode})


#: Ops whose result is finite wherever their operands are: a 0 among finite operands cannot make their NaN/inf,
#: which is an overflow of finite values (trial 105: a PatchTST's fp16 ``mse_loss`` overflowed on inputs ~150x
#: off fp64, made by a one-pass variance upstream, and the target's zeros were named its cause).
_ZERO_SAFE = frozenset(getattr(torch.ops.aten, name) for name in (
    "add", "sub", "rsub", "mul", "neg", "abs", "square", "addcmul", "sum", "mean", "cumsum", "mse_loss",
    "mse_loss_backward", "l1_loss", "exp", "exp2", "expm1", "sigmoid", "tanh", "sin", "cos", "relu", "silu", "gelu",
))
_ZERO_SAFE_CLASSES = frozenset({OpClass.MATMUL, OpClass.CONVOLUTION, OpClass.COMPARISON_SELECT,
                                OpClass.DATA_MOVEMENT, OpClass.CAST})


def _new_zeros(node: torch.fx.Node, ls: Lockstep) -> list[str]:
    """Ids of `node`'s tensor operands that are 0 under the policy where the oracle is not (of a division, its
    divisor only: trial 92's GAT ``div(max_grad, tie_count)`` was said to make NaN from its numerator, a
    gradient 0 by the model's structure, not from the tie count its mixed-precision ``eq`` left 0); none
    for an op a 0 cannot take to NaN/inf (`_ZERO_SAFE`)."""
    if getattr(node.target, "overloadpacket", None) in _ZERO_SAFE or classify(node.target).op_class in _ZERO_SAFE_CLASSES:
        return []
    out = []
    operands = [node.args[1]] if node.target in _DIVISIONS and isinstance(node.args[1], torch.fx.Node) else node.all_input_nodes
    for p in operands:
        if p not in ls.env:
            continue
        pol, ora = ls.reader(POLICY)(p), ls.reader(ORACLE)(p)
        if not isinstance(pol, torch.Tensor) or not isinstance(ora, torch.Tensor):
            continue
        if pol.shape == ora.shape and bool(((pol == 0) & (ora != 0)).any()):
            out.append(p.meta.get(NODE_ID, p.name))
    return out
