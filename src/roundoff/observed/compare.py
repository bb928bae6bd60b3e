"""Judge each observed kernel buffer at its Program node: fp64, eager and the emulated policy.

Every figure but `vs_fp64_total` is *local*: the graph is run once more with four sides in step
(eager, the fp64 oracle, the emulated policy, and fp64 of the whole program; `roundoff.execute.
Lockstep`), and at every node a kernel wrote, each side's value is first compared with the observed
buffer and then, on the first three sides, replaced by it (converted exactly: fp64, or the side's
own dtype). So a kernel is compared with what eager, fp64 and the emulation
compute *from the same operands the compiled program gave it*, and an error made upstream is never
held against a later kernel (Herbie's local error, at kernel granularity).

Verdicts reuse `roundoff.analyze.verdict`: NaN/inf where fp64 (from the kernel's operands, or of
the whole program with no other kernel's output already non-finite there) is finite is
`Verdict.NONFINITE`; against the oracle, an excess over fp64 correctly rounded to the buffer's dtype above
`EXCESS_LIMIT` is `Verdict.DIVERGES` (a sum/mean is also allowed its terms' rounding:
`reduction_floor`, and where they are read from memory in 16 bits, their rounding there: `rounded_terms_floor`; a buffer whose values its format cannot hold and that loses them too is scored as
`check` scores a node, `verdict.own_excess`); against eager, the chosen `Rule` (default `Rule.SAME`, ``torch._dynamo.utils.same``) between eager's and
the observed value with the fp64 value as reference. Emulation agreement is bit for bit (-0.0
differs from 0.0; NaN equals NaN whatever its payload).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import torch
import torch.fx

from roundoff.analyze.metrics import Metrics, measure, norm_rels, rounding_error, rounding_norm_rel
from roundoff.analyze.observe import terms_floor
from roundoff.analyze.output_floor import OutputFloors, structural_zero_floor
from roundoff.analyze.selections import differing_indices, is_selection
from roundoff.analyze.verdict import (
    EXCESS_LIMIT,
    Rule,
    Verdict,
    demanded_dtypes,
    excess,
    judge,
    narrower,
    new_nonfinite,
    nonfinite_counts,
    own_excess,
    reduction_floor,
    rounded_terms_floor,
    unit_roundoff,
    widen_fp8,
    working_dtype,
)
from roundoff.capture.program import NODE_ID, Program, base_id, node_module, node_source
from roundoff.execute.interpreter import RELEASED, Lockstep
from roundoff.numerics import bits_differ, get_format, round_to
from roundoff.observed.buffers import Observed, narrow_float
from roundoff.observed.causes import emulation_cause, local_region, near_ties
from roundoff.ops import classify, short_name
from roundoff.ops.classes import OpClass
from roundoff.plan.model import Plan
from roundoff.policy.model import FmaContraction

EAGER, ORACLE, EMULATED, GLOBAL = 0, 1, 2, 3  # GLOBAL: fp64 of the whole program, never substituted
_aten = torch.ops.aten
_SUMS = {  # sum/mean ops -> is a mean
    _aten.sum.default: False, _aten.sum.dim_IntList: False, _aten.mean.default: True, _aten.mean.dim: True,
}
_MOVES = (OpClass.DATA_MOVEMENT, OpClass.CAST)  # ops that only move or convert a value
_CANCELLING = frozenset({_aten.add.Tensor, _aten.sub.Tensor})  # where a value 0 by structure is made
_POINTWISE = (OpClass.POINTWISE_ARITHMETIC, OpClass.POINTWISE_TRANSCENDENTAL)


@dataclass(frozen=True)
class KernelReport:
    """The figures of one kernel-written buffer at its Program node (all local, see the module)."""

    kernel: str
    buffer: str
    kind: str
    node_id: str
    op: str
    source: str | None
    fused_ops: tuple[str, ...]
    fused_ids: tuple[str, ...]  # roundoff ids of the Program nodes fused into the buffer
    dtype: str
    vs_oracle: Metrics
    vs_eager: Metrics
    vs_fp64_total: Metrics  # against the fp64 run of the whole program (inherited error included)
    excess: float
    verdict: Verdict  # against the chosen reference
    emulated_mismatch: int  # elements whose bits differ from the emulated policy's value
    cause: str | None  # why the emulation differs: see `emulation_cause`
    judged_in: str = ""  # the format the excess is over (`KernelObserver._judged_format`); "" = `dtype`
    #: `vs_fp64_total`'s excess over the whole program's fp64 correctly rounded to the judged format:
    #: an error made upstream included, so it shows where such an error grows (not a verdict)
    total_excess: float = 0.0
    #: A NaN/inf buffer whose kernel fused the node that made it: (node id, op, source line) of the
    #: first of the kernel's nodes whose value, emulated from the kernel's operands, is NaN/inf where
    #: fp64 of the whole program is finite, where it is not the buffer's own node; else None
    made_at: tuple[str, str, str | None] | None = None
    #: The observed nodes the kernel reads (its computation's operands from other buffers) that the
    #: program stores in 16 bits or fewer: what may carry an error it amplifies (`total_excess`)
    reads_narrow: tuple[str, ...] = ()
    #: Every observed node the kernel reads (its operands from other buffers), in kernel order
    reads: tuple[str, ...] = ()
    #: The pointwise nodes computed for this buffer (its own or fused into its kernel) that `amplify`
    #: an error they read beyond their format, as `check` flags a node, and the buffer's own node where
    #: it is not pointwise (a matmul) and `amplifies_rounding`: what fails an output by value; each
    #: (node id, op, source line), in kernel order (where inside a fused kernel accuracy is lost)
    amplifying: tuple[tuple[str, str, str | None], ...] = ()
    #: Normwise relative error of fp64 (from the kernel's operands) correctly rounded to the judged
    #: format: above `EXCESS_LIMIT` times its unit roundoff, the format cannot hold the values (below or
    #: above its range), and a buffer that loses them too diverges at an excess of 1 (`verdict.own_excess`)
    format_loss: float = 0.0
    #: Against the oracle, a buffer diverging only because its format cannot hold its values (`format_loss`,
    #: at an excess within the limit) whose values, as that format holds them, put into fp64's run move no
    #: output beyond the limit (`analyze.replay.moves_outputs`): named after the buffers that matter, as
    #: `check` names such a node after the causes that move an output
    moves_no_output: bool = False
    #: `nonfinite` because a later kernel turned this buffer's format overflow (inf where fp64 of the
    #: whole program is finite but beyond its format) into NaN/inf: a fact of the whole run, which the
    #: run with unrounded reads (`better`) does not undo
    overflow_harms: bool = False
    #: the module whose call made what the buffer computes (``features.3.conv.4``; `capture.program.NODE_MODULE`)
    module: str | None = None

    @property
    def emulated_identical(self) -> bool:
        return self.emulated_mismatch == 0


def _may_be_float(node: torch.fx.Node) -> bool:
    """Whether `node`'s value may be floating point (not known to be an index or mask tensor)."""
    val = node.meta.get("val")
    return not (isinstance(val, torch.Tensor) and not val.is_floating_point())


def amplifies(node: torch.fx.Node, err: float, floor: float, read_errors: list[float]) -> bool:
    """Whether pointwise `node` amplifies an error it reads beyond its format, as `check` flags a node
    (`roundoff.analyze.culprits.amplifies`): its normwise relative error against fp64 of the whole
    program (`err`) more than `EXCESS_LIMIT` times its format's rounding of that (`floor`) and more than
    `EXCESS_LIMIT` times the largest of `read_errors` (its operands')."""
    return (classify(node.target).op_class in _POINTWISE and err > EXCESS_LIMIT * floor
            and err > EXCESS_LIMIT * max(read_errors, default=0.0))


#: How the cause of a kernel over the limit where the emulation is within it begins (`KernelObserver._cause`).
WRONG_VALUE = "a wrong value"


def better(a: KernelReport, b: KernelReport) -> KernelReport:
    """Of two reports of one buffer (operands read rounded, or unrounded), the one that explains the
    kernel better: the smaller excess over fp64 decides the figures and verdict; the emulation's
    agreement is the closer one."""
    best = a if (a.overflow_harms, a.verdict is Verdict.OK, -a.excess) >= (
        b.overflow_harms, b.verdict is Verdict.OK, -b.excess) else b
    closest = a if a.emulated_mismatch <= b.emulated_mismatch else b
    if closest is not best and (closest.cause or "").startswith(WRONG_VALUE) and best.excess <= EXCESS_LIMIT:
        closest = best  # (its "wrong value" names the other reading's excess, not the one reported: trial 81)
    return replace(best, emulated_mismatch=closest.emulated_mismatch, cause=closest.cause)


def _dtype(node: torch.fx.Node) -> torch.dtype | None:
    """The dtype of a node's traced value (None for a tuple or a non-tensor)."""
    return getattr(node.meta.get("val"), "dtype", None)


def _as(value: torch.Tensor, dtype: torch.dtype | None) -> Callable[[], torch.Tensor]:
    """A function giving `value` in `dtype` (as held where None): made when read, not held."""
    return (lambda: value) if dtype is None else (lambda: value.to(dtype))


def _laid_out(value: torch.Tensor, node: torch.fx.Node) -> torch.Tensor:
    """`value` with the strides the captured program gives `node` (a copy where they differ and those strides
    are dense): what the sides read of it is laid out as in the program. A buffer Inductor laid out its own way
    (trial 97, a Segformer's attention: q as (1024, 1, 64, 2)) made the CPU flash attention the sides run
    on it return other values (its last dimension not unit-strided), and the matmul after it 600x "wrong"."""
    meta = node.meta.get("val")
    if (not isinstance(meta, torch.Tensor) or meta.shape != value.shape or meta.stride() == value.stride()
            or not _dense(meta.shape, meta.stride())):
        return value
    return torch.empty_strided(meta.shape, meta.stride(), dtype=value.dtype, device=value.device).copy_(value)


def _dense(shape: torch.Size, stride: tuple[int, ...]) -> bool:
    """Whether `stride` lays `shape` out with no gap and no overlap (a permutation of contiguous)."""
    expected = 1
    for st, size in sorted((st, size) for size, st in zip(shape, stride) if size != 1):
        if st != expected:
            return False
        expected *= size
    return True


def _rounds_to(emulated: object, stored: torch.Tensor) -> bool:
    """Whether the emulated side's value of a node, rounded (RNE) to the dtype of the buffer holding it, is
    that buffer bit for bit. Then the emulation keeps its own value rather than take the buffer's: a
    plan may keep it unrounded (fp32) for readers in the kernel that stores it, as Inductor's kernel
    reads its register, not its store (a hand-written GRU's backward: ``tanh_backward`` stored in fp16 into
    a ``cat``, its fp32 value read by the ``mul`` the same kernel computes; the buffer's value in its place
    made 48 of 269 buffers differ from the kernels by 1-2 ulp: trial 74). A value the kernel did not
    store (any bit differs) is replaced, as the other sides' are: each kernel is judged from its operands."""
    if not (isinstance(emulated, torch.Tensor) and emulated.is_floating_point() and stored.is_floating_point()
            and emulated.numel() == stored.numel()):
        return False
    return bits_differ(emulated.reshape(stored.shape).to(stored.dtype), stored) == 0


def substitution_nodes(graph: torch.fx.Graph, ids: set[str]) -> dict[torch.fx.Node, str]:
    """{node of `graph`: observed id} for each id: the node with that id, or, where a plan rewrote it
    (``n7`` became ``n7.0``, ``n7.1``, ...), the last node made from it (the one holding its value)."""
    exact: dict[str, torch.fx.Node] = {}
    made: dict[str, torch.fx.Node] = {}
    for n in graph.nodes:
        nid = n.meta.get(NODE_ID)
        if nid in ids:
            exact[nid] = n
        elif nid is not None and (base := nid.split(".")[0]) in ids:
            made[base] = n  # the last node made from it wins
    return {n: i for i, n in {**made, **exact}.items()}


class KernelObserver:
    """The Lockstep's `on_node`: report each observed node, then hand the sides the observed value."""

    def __init__(
        self, program: Program, observed: Mapping[str, Observed], targets: Mapping[torch.fx.Node, str],
        against: str, tol: float, emulated: Plan | None = None, rule: Rule = Rule.SAME,
        floors: OutputFloors | None = None, keep_outputs: bool = True,
    ) -> None:
        """`floors`: where to record the outputs' operand floors from the whole program's fp64 run;
        `keep_outputs`: whether fp64 of the whole program keeps its outputs (the run's caller reads them)."""
        self.program, self.observed, self.targets, self.emulated = program, observed, targets, emulated
        self.floors, self.keep_outputs = floors, keep_outputs
        self.against, self.tol, self.rule = against, tol, rule
        self.reports: list[KernelReport] = []
        self.skipped: list[str] = []  # observed ids whose buffer does not fit the node's value
        self.bad: set[str] = set()  # observed ids with NaN/inf where the whole program's fp64 run is finite
        # observed ids +-inf only where their format cannot hold fp64's value (`nonfinite_counts`), with
        # their report's index: the origin once a kernel reading them makes NaN/inf (as `check` says it)
        self.forced: dict[str, int] = {}
        self.originals = {n.meta.get(NODE_ID): n for n in program.nodes()}
        # add/sub nodes whose fp64 value is 0 by structure (within fp32's rounding of their operands:
        # 1 - sum(softmax) at a hand-written log-sum-exp's max), with that rounding's 2-norm
        self.small: dict[str, float] = {}
        # ids of nodes no buffer holds whose emulated value (from the kernel's operands) turned NaN/inf
        # where fp64 of the whole program is finite: where inside a kernel a NaN was made
        self.made_nonfinite: set[str] = set()
        # each float node's normwise relative error against fp64 of the whole program (the observed
        # value where a buffer holds it, else the emulation's from the kernel's operands), and the base
        # ids of the pointwise nodes that amplify what they read (`amplifies`)
        self.total_rel: dict[torch.fx.Node, float] = {}
        self.amplifying: set[str] = set()
        # selections that, from the operands the compiled program gave them, choose other indices than
        # fp64 of the whole program: {id: ((differing, of), the local oracle's value: the compiled choice)}
        self.flips: dict[str, tuple[tuple[int, int], object]] = {}
        self._calls = {i: n for i, n in self.originals.items() if n.op == "call_function"}
        self._regions: dict[str, tuple[str, ...]] = {}  # `_region`'s walks
        # the format each node's value is kept in downstream (`verdict.demanded_dtypes`): an error below
        # what every later rounding throws away cannot reach an output, as `check` judges a node
        self.demand = demanded_dtypes(program.graph, _dtype)
        # the same of the graph the comparison runs, whose nodes a plan may have decomposed (a layer norm's
        # `x - mean`, kept in bf16 downstream where the layer norm's saved statistics are kept in fp32)
        self.run_demand = demanded_dtypes(emulated.program.graph, _dtype) if emulated is not None else {}

    def __call__(self, node: torch.fx.Node, vals: tuple, ls: Lockstep) -> tuple | None:
        """Report `node` where a kernel wrote it and hand the sides the observed value; then, where only the
        output node reads it, release it on every side but fp64 of the whole program where its outputs are
        kept (`keep_outputs`): a training step's gradients are not held to the end three (four) more times."""
        got = self._observe(node, vals, ls)
        if node.op == "call_function" and node.users and all(u.op == "output" for u in node.users):
            kept = GLOBAL if self.keep_outputs else None
            return tuple(v if i == kept else RELEASED for i, v in enumerate(vals if got is None else got))
        return got

    def _observe(self, node: torch.fx.Node, vals: tuple, ls: Lockstep) -> tuple | None:
        if self.floors is not None and node in self.floors.sites:
            self.floors.record(node, vals[GLOBAL], ls.reader(GLOBAL))
        if node.target in _CANCELLING and isinstance(vals[GLOBAL], torch.Tensor) and vals[GLOBAL].is_floating_point():
            self._record_small(node, vals[GLOBAL], ls)
        if is_selection(node) and (flip := differing_indices(vals[ORACLE], vals[GLOBAL])) is not None:
            self.flips[str(node.meta.get(NODE_ID, node.name))] = (flip, vals[ORACLE])
        nid = self.targets.get(node)
        if nid is None:
            self._note_nonfinite(node, vals)
            self._track(node, vals[EMULATED], vals[GLOBAL])
            return None
        obs = self.observed[nid]
        value = obs.value.to(vals[ORACLE].device)
        if value.numel() == getattr(vals[GLOBAL], "numel", lambda: -1)():
            self._track(node, value.reshape(vals[GLOBAL].shape), vals[GLOBAL])
        if (not isinstance(vals[ORACLE], torch.Tensor) or value.numel() != vals[ORACLE].numel()
                or not value.is_floating_point() or not vals[ORACLE].is_floating_point()):
            # integer buffers and nodes (indices, masks: max's indices beside its float values) are not judged
            self.skipped.append(nid)
            return None
        value = _laid_out(value.reshape(vals[ORACLE].shape), node)
        kept, whole = self._own_elements(value, vals), vals[GLOBAL].reshape(value.shape)
        self.reports.append(self._report(node, nid, obs, value, vals, ls, kept))
        if nonfinite_counts(value, whole)[1] if kept is None else nonfinite_counts(value[kept], whole[kept])[1]:
            self.forced[nid] = len(self.reports) - 1
        # the oracle side holds it as stored (`NarrowHeldOracle`: no fp64 copy of every buffer while it lives);
        # a side that drops it and reads it again takes the observed value again (`Lockstep.pin`)
        substituted = {i: _as(value, v.dtype if i != ORACLE else None) for i, v in enumerate(vals)
                       if i != GLOBAL and (i == ORACLE or isinstance(v, torch.Tensor))}
        if _rounds_to(vals[EMULATED], value):  # the emulation's own (unrounded) value is what the kernel stored
            del substituted[EMULATED]
        ls.pin(node, substituted)
        return tuple(substituted[i]() if i in substituted else v for i, v in enumerate(vals))

    def _track(self, node: torch.fx.Node, value: object, whole: object) -> None:
        """Record `node`'s error against fp64 of the whole program, and whether it `amplifies`."""
        if not (isinstance(value, torch.Tensor) and isinstance(whole, torch.Tensor) and value.is_floating_point()
                and value.numel() and node.op == "call_function"):
            return
        reads: list[float] | None = []
        for p in node.all_input_nodes:
            if p in self.total_rel:
                reads.append(self.total_rel[p])
            elif p.op not in ("placeholder", "get_attr") and _may_be_float(p):  # (a tuple's item: unknown)
                reads = None  # what it reads carries an error not measured here: no amplification judged
                break
        decision = self.emulated.decisions.get(str(node.meta.get(NODE_ID))) if self.emulated is not None else None
        fmt = getattr(decision, "storage_dtype", None) or value.dtype  # the format the plan stores it in
        kept = self.run_demand.get(node) or self.demand.get(self.originals.get(base_id(str(node.meta.get(NODE_ID)))))
        fmt = narrower(fmt, kept) if kept is not None and fmt.is_floating_point else fmt
        judged = reads is not None and classify(node.target).op_class in _POINTWISE and not new_nonfinite(value, whole)
        # (NaN/inf fp64 does not have: the NaN rules judge that node)
        (err,) = norm_rels((value,), whole)
        self.total_rel[node] = err
        if judged and amplifies(node, err, rounding_norm_rel(whole, get_format(fmt if fmt.is_floating_point else value.dtype)),
                                reads):
            self.amplifying.add(base_id(str(node.meta.get(NODE_ID))))

    def _note_nonfinite(self, node: torch.fx.Node, vals: tuple) -> None:
        """Record a node inside a kernel (no buffer holds it) whose emulated value, computed from the
        kernel's operands, is NaN/inf where fp64 of the whole program is finite (`made_nonfinite`)."""
        value = vals[EMULATED]
        if (isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel()
                and not bool(value.isfinite().all()) and new_nonfinite(value, vals[GLOBAL])):
            self.made_nonfinite.add(node.meta.get(NODE_ID))

    def _region(self, nid: str, obs: Observed) -> tuple[str, ...]:
        """`local_region` of buffer `obs`, walked once per observer (the observed set does not change)."""
        if nid not in self._regions:
            self._regions[nid] = local_region(self.program, nid, obs, self.observed, self._calls)
        return self._regions[nid]

    def _reads(self, nid: str, obs: Observed) -> tuple[str, ...]:
        """The observed values the kernel computing `obs` reads, in kernel order (`KernelReport.reads`)."""
        region = set(self._region(nid, obs))
        operands = {p.meta.get(NODE_ID) for i in region if i in self.originals for p in self.originals[i].all_input_nodes}
        return tuple(sorted(self._kernel_operands(operands - region), key=lambda i: self.observed[i].order))

    def _named(self, nid: str) -> tuple[str, str, str | None]:
        """(id, op, source line) of Program node `nid`."""
        node = self.originals.get(nid)
        if node is None:
            return nid, nid, None
        return nid, short_name(node.target) if node.op == "call_function" else node.name, node_source(node)

    def _made_at(self, nid: str, obs: Observed) -> tuple[str, str, str | None] | None:
        """The first node fused into `obs` (in program order) that made NaN/inf (see `made_nonfinite`)."""
        order = {i: k for k, i in enumerate(self.originals)}
        made = sorted((i for i in obs.fused if i in self.made_nonfinite and i != nid), key=lambda i: order.get(i, -1))
        if not made:
            return None
        return self._named(made[0])

    def _computing(self, node: torch.fx.Node, obs: Observed) -> torch.fx.Node:
        """The node whose user line and module name what the buffer computes: `node`, or where `node` only
        moves or casts a value (Inductor realises a softmax's result as the ``expand`` the next matmul reads),
        the last node fused into the buffer that computes."""
        if node.op != "call_function" or classify(node.target).op_class not in _MOVES:
            return node
        computing = [n for i in obs.fused if (n := self.originals.get(i)) is not None and n.op == "call_function"
                     and classify(n.target).op_class not in _MOVES]
        return computing[-1] if computing else node

    def _record_small(self, node: torch.fx.Node, exact: torch.Tensor, ls: Lockstep) -> None:
        """Record `node` (an add or sub) in `small`, with the 2-norm of its operands' fp32 rounding, when
        its fp64 value in the run of the whole program (operands no kernel's rounding touched) is 0 by
        structure, as `check` judges a node (`analyze.output_floor.structural_zero_floor`)."""
        rms = structural_zero_floor(node, exact, ls.reader(GLOBAL), torch.float32)
        if rms:
            self.small[base_id(node.meta.get(NODE_ID, ""))] = rms * int(exact.isfinite().sum()) ** 0.5

    def _terms_stored_in(self, node: torch.fx.Node, obs: Observed) -> torch.dtype | None:
        """The 16-bit dtype a sum's terms are read from memory in: its operand, through the moves the kernel
        fuses, is a value another kernel stored (an attention backward's key gradient); None where the kernel
        computes them (they are rounded to nothing narrower than its working format)."""
        src, fused = node.args[0], set(obs.fused)
        while isinstance(src, torch.fx.Node) and str(src.meta.get(NODE_ID)) in fused:
            if src.op != "call_function" or classify(src.target).op_class not in _MOVES or not src.all_input_nodes:
                return None
            src = src.all_input_nodes[0]
        dtype = _dtype(src) if isinstance(src, torch.fx.Node) else None
        return dtype if narrow_float(dtype) else None

    def _structural_floor(self, nid: str, obs: Observed, numel: int, dtype: torch.dtype) -> float:
        """The RMS floor of a buffer that carries a value 0 by structure (`small`, in its local region):
        that value's operand rounding in the buffer's format, spread over its elements; else 0."""
        found = [self.small[i] for i in self._region(nid, obs) if i in self.small]
        if not found or not numel:
            return 0.0
        return max(found) * unit_roundoff(dtype) / unit_roundoff(torch.float32) / numel**0.5

    def _judged_format(self, nid: str, obs: Observed, dtype: torch.dtype) -> torch.dtype:
        """The format buffer `obs` is judged in against fp64, as `check` holds a node to the narrowest of
        its own format and its operands': the narrowest of the buffer's, of every value the program
        stores in 16 bits or fewer among the nodes the kernel computes it through (a bf16 program's
        variance Inductor keeps in fp32), and of the buffers the same kernel call stored that it is
        computed from (it may read them unrounded where its fp64 reference reads them as stored); and
        no wider than the format its value is kept in downstream (an fp32 variance whose every use is
        cast to bf16 is held to bf16's rounding, as `check` holds it)."""
        nodes = self.originals
        region = [nodes[i] for i in self._region(nid, obs) if i in nodes]
        narrow = [d for n in region if narrow_float(d := getattr(n.meta.get("val"), "dtype", None))]
        operands = {pid for n in region for p in n.all_input_nodes if (pid := p.meta.get(NODE_ID)) in self.observed}
        narrow += [o.value.dtype for pid in operands if (o := self.observed[pid]).launch == obs.launch
                   and pid != nid and narrow_float(o.value.dtype)]
        work = working_dtype(dtype, narrow)
        node = nodes.get(nid)
        return narrower(work, self.demand[node]) if node is not None and node in self.demand else work

    def _kernel_operands(self, ids: set[str]) -> set[str]:
        """The observed nodes `ids` are, or are computed from through nodes no kernel stored (views)."""
        found, todo, seen = set(), list(ids), set()
        while todo:
            i = todo.pop()
            if i in seen or i not in self.originals:
                continue
            seen.add(i)
            if i in self.observed:
                found.add(i)
            else:
                todo += [p.meta.get(NODE_ID) for p in self.originals[i].all_input_nodes]
        return found

    def _own_elements(self, value: torch.Tensor, vals: tuple) -> torch.Tensor | None:
        """The elements held against the kernel: against eager, not where eager is NaN/inf and fp64 of the
        whole program is finite (eager's failure, README); None where that is all of them."""
        if self.against != "eager":
            return None
        kept = widen_fp8(vals[EAGER]).isfinite().reshape(value.shape) | ~vals[GLOBAL].reshape(value.shape).isfinite()
        return None if bool(kept.all()) else kept

    def _makes_nonfinite(self, nid: str, obs: Observed, value: torch.Tensor, total: torch.Tensor) -> bool:
        """NaN/inf where the whole program's fp64 run is finite, with no operand from another kernel
        that already had such elements: this kernel made them (even where, from its rounded
        operands, fp64 makes them too: a tie mask emptied by operands held at two precisions)."""
        if not new_nonfinite(value, total):
            return False
        self.bad.add(nid)
        fused = set(obs.fused) | {nid}
        operands = {
            p.meta.get(NODE_ID) for i in fused if i in self.originals for p in self.originals[i].all_input_nodes
        }
        # it read an overflow its format forced, stored by another kernel or by its own in an earlier loop
        # (trial 54: an fp16 exp stored as inf, then 0 * inf in the same kernel): that is where the NaN/inf began
        harmed = (self._kernel_operands(operands - fused) | (fused - {nid})) & set(self.forced)
        for o in harmed:
            i = self.forced.pop(o)
            self.reports[i] = replace(self.reports[i], verdict=Verdict.NONFINITE, overflow_harms=True)
        return not (operands - fused) & self.bad and not harmed

    def _amplifies_rounding(self, node: torch.fx.Node, ls: Lockstep, whole: torch.Tensor, work: torch.dtype,
                            floor: float) -> bool:
        """Whether a node that is not pointwise (a matmul, a reduction) makes an error over `EXCESS_LIMIT`
        times its format's rounding from fp64 of the whole program's operands, rounded as the emulated
        policy reads them: `check`'s local error and score (`verdict.own_excess`, a matmul's or sum's
        terms' rounding allowed). From the compiled program's own operands it may be exact (its
        `excess` 1) while it amplifies the rounding those operands carry beyond its format; `check`
        flags such a node, so an output over the limit that it feeds fails here too (trial 45: an fp16
        step's embedding gradient 2.4e4x off fp64, passed)."""
        read = ls.reader(GLOBAL)
        local = ls.sides[EMULATED].evaluate(node, read, fresh=True)
        if not (isinstance(local, torch.Tensor) and local.is_floating_point() and local.shape == whole.shape):
            return False
        terms = terms_floor(node, ls, GLOBAL, whole.numel(), work)  # (check's own figure)
        m = measure(local, whole, work)
        if m.nonfinite:
            return False  # (NaN/inf fp64 does not have: the NaN rules judge that)
        m = replace(m, excess=excess(m, floor, work, terms))
        return own_excess(m, floor, work, terms) > EXCESS_LIMIT

    def _report(
        self, node: torch.fx.Node, nid: str, obs: Observed, value: torch.Tensor, vals: tuple, ls: Lockstep,
        kept: torch.Tensor | None = None,
    ) -> KernelReport:
        dtype = value.dtype
        oracle, eager, emulated = vals[ORACLE].double(), vals[EAGER].to(dtype), vals[EMULATED].to(dtype)
        vs_oracle = measure(value, oracle, dtype)
        work = self._judged_format(nid, obs, dtype)
        floor = rounding_error(oracle, work)
        terms = 0.0
        if node.target in _SUMS and isinstance(node.args[0], torch.fx.Node) and node.args[0] in ls.env:
            summed, mean = ls.env[node.args[0]][ORACLE], _SUMS[node.target]
            terms = reduction_floor(summed, oracle.numel(), work, mean)
            if (stored := self._terms_stored_in(node, obs)) is not None:  # read from memory in 16 bits: their rounding
                terms = max(terms, rounded_terms_floor(summed, oracle.numel(), stored, mean))
        exc = excess(vs_oracle, floor, work, terms)
        if exc > EXCESS_LIMIT and (zero := self._structural_floor(nid, obs, value.numel(), work)) > terms:
            exc = excess(vs_oracle, floor, work, zero)  # it carries a value 0 by structure: its operands' rounding
        if kept is None:  # (`kept`: `_own_elements`, the elements held against the kernel)
            nonfinite = bool(new_nonfinite(value, oracle)) or self._makes_nonfinite(nid, obs, value, vals[GLOBAL])
        else:  # (where the kernel made them all the same, they still mark it as their origin for later kernels)
            made = self._makes_nonfinite(nid, obs, value, vals[GLOBAL])
            whole = vals[GLOBAL].reshape(value.shape)[kept]
            nonfinite = bool(new_nonfinite(value[kept], oracle[kept])) or (made and bool(new_nonfinite(value[kept], whole)))
        if nonfinite:
            verdict = Verdict.NONFINITE
        elif self.against == "oracle" and self.rule is Rule.SAME:  # (check's score: a format that cannot hold
            # the values, underflow or overflow, and a buffer that loses them too, diverges)
            score = own_excess(replace(vs_oracle, excess=exc), floor.norm_rel, work, terms)
            verdict = Verdict.DIVERGES if score > EXCESS_LIMIT else Verdict.OK
        else:
            ref = eager if self.against == "eager" else round_to(oracle, get_format(dtype)).to(dtype)
            kept = ref.isfinite() | ~oracle.isfinite()  # where eager is NaN/inf and fp64 is not, eager fails,
            whole = bool(kept.all())  # not the kernel (the headline says so; trial 50: masked padding rows)
            judged = (ref, value, oracle) if whole else (ref[kept], value[kept], oracle[kept])
            verdict = Verdict.OK if judge(self.rule, *judged, self.tol) else Verdict.DIVERGES
        mismatch = bits_differ(value, emulated)
        total = measure(value, vals[GLOBAL], dtype)
        if total.nonfinite:
            total = replace(total, new_nonfinite=new_nonfinite(value, vals[GLOBAL]))
        total_floor = rounding_norm_rel(vals[GLOBAL], get_format(work))
        total_exc = excess(total, total_floor, work, terms)
        if (self.against == "oracle" and total_exc > EXCESS_LIMIT and not total.new_nonfinite
                and classify(node.target).op_class not in (*_POINTWISE, *_MOVES)
                and self._amplifies_rounding(node, ls, vals[GLOBAL], work, total_floor)):
            self.amplifying.add(nid)
        original = self.originals.get(nid, node)
        reads = self._reads(nid, obs)
        fused_ops = tuple(
            short_name(self.originals[i].target) for i in obs.fused
            if i in self.originals and self.originals[i].op == "call_function"
        )
        return KernelReport(
            kernel=obs.kernel, buffer=obs.buffer, kind=obs.kind, node_id=nid,
            op=short_name(original.target) if original.op == "call_function" else original.name,
            source=node_source(shown := self._computing(original, obs)), module=node_module(shown), fused_ops=fused_ops, fused_ids=obs.fused, dtype=str(dtype).removeprefix("torch."),
            vs_oracle=vs_oracle, vs_eager=measure(value, eager, dtype),
            vs_fp64_total=total, excess=exc, verdict=verdict, total_excess=total_exc,
            judged_in="" if work == dtype else str(work).removeprefix("torch."),
            format_loss=floor.norm_rel, emulated_mismatch=mismatch, made_at=self._made_at(nid, obs) if verdict is Verdict.NONFINITE else None,
            reads_narrow=tuple(i for i in reads if narrow_float(self.observed[i].value.dtype)),
            reads=reads, amplifying=tuple(self._named(i) for i in dict.fromkeys((*obs.fused, nid)) if i in self.amplifying),
            cause=self._cause(nid, obs, exc, emulated, oracle, floor, work, terms) if mismatch else None,
        )

    def _cause(self, nid: str, obs: Observed, exc: float, emulated: torch.Tensor, oracle: torch.Tensor,
               floor: Metrics, work: torch.dtype, terms: float) -> str:
        """Why the kernel's value differs from the emulation's (`emulation_cause`); where the kernel is over
        the limit of fp64 (from the same operands), the emulation within it and no transcendental is
        fused in, a wrong value, which summation order does not explain (trial 48: Inductor's
        multi-query index_put backward, 143% off, was put down to summation order)."""
        cause = emulation_cause(self.program, nid, obs, self.emulated, self.observed, self._region(nid, obs))
        no_fma = self.emulated is not None and self.emulated.policy.fma is FmaContraction.NEVER  # (a missed FMA
        # is an unmodelled decision; Inductor's C++ is compiled with -ffp-contract=off)
        if cause == "unmodelled decision" and no_fma and (off := near_ties(obs.value, emulated, oracle)) is not None:
            return (f"near-tie rounding: each differing element is one ulp from the emulation's and fp64 lies within "
                    f"{off:.2g} ulp of the midpoint between them: the two fp32 values rounded differ in their last "
                    "bits (the order of the kernel's fp32 operations, or an op's implementation)")
        if exc > EXCESS_LIMIT and "transcendental" not in cause:  # (an exp or erf may be that far off)
            emulated_exc = excess(measure(emulated, oracle, emulated.dtype), floor, work, terms)
            if emulated_exc <= EXCESS_LIMIT:
                return (f"{WRONG_VALUE}: {exc:.3g}x fp64's rounding where the emulation is {emulated_exc:.3g}x, "
                        "more than rounding or summation order explains (a compiler bug, or an op the plan models "
                        "otherwise: compare with eager's value, vs_eager)")
        return cause
