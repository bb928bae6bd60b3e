"""The decision space blame searches: one candidate change per plan decision that can be flipped.

A change names one node of a Plan and the `OpOverride` that flips one of its precision decisions:

- ``UPCAST``: the node computes in the storage dtype (operands and result rounded to bf16/fp16);
  the change computes it in opmath fp32 instead, as eager PyTorch does.
- ``ROUND``: the node keeps its result in the compute dtype for consumers in the same kernel; the
  change rounds it to the storage dtype as it is produced (eager's per-op rounding).
- ``KEEP_FP32``: the node's result is rounded to the storage dtype, by the node itself or where a
  kernel boundary stores it for another kernel; the change keeps it in the compute dtype for every
  consumer instead (more precision than eager; offered only when the reference is the oracle).
- ``NO_FMA``: the add/sub is contracted with a multiply into one FMA; the change computes the
  product rounded and then the add/sub, as eager does.
- ``NO_DOWNCAST``: a matmul-like node reads its operands rounded to a format other than their
  storage (an autocast ``matmul_input`` downcast, e.g. fp16 operands rounded to bf16); the change
  (``compute=OPMATH`` on the node) reads them as stored.
- ``SCALAR_FP32``: the node rounds a Python scalar operand to its storage format before computing
  (eager CPU's add/sub: ``x + 1e-8`` in fp16 adds 0); the change (``scalars=OPMATH_UNROUNDED``)
  adds it unrounded in fp32, as ``x.float() + 1e-8`` would (offered only toward the oracle).

A set of changes applied to a policy is the policy with those node overrides merged in (a change
overrides only the field it flips; an existing override of the same node keeps its other fields).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields, replace

import torch

from roundoff.capture.program import Program, node_id, value_holders
from roundoff.numerics import get_format, is_low_precision
from roundoff.ops.classes import OpClass
from roundoff.plan.model import NodeDecision, Plan
from roundoff.policy.model import ComputePrecision, OpOverride, Policy, ScalarMixing

MATMUL_LIKE = frozenset({OpClass.MATMUL, OpClass.CONVOLUTION, OpClass.ATTENTION})


class ChangeKind(enum.Enum):
    """Which decision a change flips (see the module docstring)."""

    UPCAST = "upcast"
    ROUND = "round"
    KEEP_FP32 = "keep_fp32"
    NO_FMA = "no_fma"
    NO_DOWNCAST = "no_downcast"
    SCALAR_FP32 = "scalar_fp32"


class Reference(enum.Enum):
    """What the fixed program must agree with: the real eager run, or the fp64 oracle."""

    EAGER = "eager"
    ORACLE = "oracle"

    @classmethod
    def parse(cls, value: Reference | str) -> Reference:
        if isinstance(value, Reference):
            return value
        name = str(value).lower()
        try:
            return cls("oracle" if name == "fp64" else name)  # fp64 is the oracle, as in check()
        except ValueError:
            raise ValueError(
                f"unknown reference {value!r}: pass 'eager' (agree with real eager PyTorch) "
                "or 'oracle'/'fp64' (agree with the fp64 run)"
            ) from None


@dataclass(frozen=True, order=True)
class Change:
    """One flipped decision: `kind` at node `node_id` (position `index` in graph order)."""

    index: int
    node_id: str
    kind: ChangeKind
    op: str
    source: str | None = None

    @property
    def override(self) -> OpOverride:
        """The per-node override that makes this change."""
        if self.kind in (ChangeKind.UPCAST, ChangeKind.NO_DOWNCAST):
            return OpOverride(compute=ComputePrecision.OPMATH)
        if self.kind is ChangeKind.ROUND:
            return OpOverride(round_result=True)
        if self.kind is ChangeKind.KEEP_FP32:
            return OpOverride(round_result=False)
        if self.kind is ChangeKind.SCALAR_FP32:
            return OpOverride(scalars=ScalarMixing.OPMATH_UNROUNDED)
        return OpOverride(contract_fma=False)

    @property
    def label(self) -> str:
        return f"{self.kind.value}@{self.node_id}"


def _downcasts(d: NodeDecision, operands: frozenset[torch.dtype] = frozenset()) -> bool:
    """A matmul-like node whose operands are rounded to a format other than their storage dtype; of a
    multi-output one (no storage dtype of its own: an attention, a convolution's backward) other than the
    dtype of a float operand it reads (`operands`; trial 88: an fp16 ViT's attention and patch-embedding
    backward under thunder-autocast were left bf16 by every candidate, and blame found no fix)."""
    if d.op_class not in MATMUL_LIKE or d.input_format is None:
        return False
    held = {d.storage_dtype} if d.storage_dtype is not None else operands
    return any(t.is_floating_point and d.input_format != get_format(t).name for t in held)


def _changes_for(
    index: int, d: NodeDecision, reference: Reference, outputs: set[str], read_rounded: set[str], floats: int = 1,
    operands: frozenset[torch.dtype] = frozenset(),
) -> list[Change]:
    """The changes of `d`; `outputs`: ids of the values the program only returns (no KEEP_FP32: a graph
    output is rounded); `read_rounded`: ids of the values some consumer reads rounded (a kernel boundary
    stores them); `floats`: how many floating-point values the node reads, `operands` their dtypes."""
    rounded = d.rounds_result or d.node_id in read_rounded
    found: list[ChangeKind] = []
    if d.fma is not None and d.fma.contracted:
        found.append(ChangeKind.NO_FMA)  # FMA contraction matters in fp32 programs too
    if _downcasts(d, operands):
        found.append(ChangeKind.NO_DOWNCAST)
    if reference is Reference.ORACLE and d.scalar_format is not None and is_low_precision(d.storage_dtype):
        found.append(ChangeKind.SCALAR_FP32)
    if d.storage_dtype is None and is_low_precision(d.compute_dtype) and d.op_class.computes:
        found.append(ChangeKind.UPCAST)  # a multi-output op computing in its results' 16-bit dtype
    elif is_low_precision(d.storage_dtype) and d.op_class is OpClass.CAST:
        if rounded and reference is Reference.ORACLE and d.node_id not in outputs:  # a user's downcast, skipped
            found.append(ChangeKind.KEEP_FP32)
        elif not d.rounds_result and reference is Reference.EAGER:  # a downcast its kernel drops, done as eager
            found.append(ChangeKind.ROUND)  # does (trial 93: a BatchNorm's fp16 output an amax backward compares)
    elif (is_low_precision(d.storage_dtype) and d.op_class is OpClass.DATA_MOVEMENT and reference is Reference.ORACLE
          and floats > 1 and d.node_id not in outputs):
        # a copy of several values (cat, stack) stores them in one dtype: a value kept in fp32 upstream beside a
        # 16-bit one is rounded there unless it is kept too, as `torch.cat` of an fp32 and a bf16 tensor is fp32
        # (trial 86: a flow's coupling layers, each `cat([x1, y2])` rounding the y2 every upstream change kept)
        found.append(ChangeKind.KEEP_FP32)
    elif is_low_precision(d.storage_dtype) and (
            d.op_class.computes or (d.op_class is OpClass.COMPARISON_SELECT and reference is Reference.ORACLE)):
        # a select (where, masked_fill, clamp) computes nothing, but it stores what it picks: a value
        # kept in fp32 upstream (an fp16 exp's overflow) is rounded there unless it is kept too
        if is_low_precision(d.compute_dtype) and d.op_class.computes:
            found.append(ChangeKind.UPCAST)
        elif d.compute_dtype is not None:
            if reference is Reference.EAGER and not d.rounds_result:
                found.append(ChangeKind.ROUND)
            if reference is Reference.ORACLE and rounded and d.node_id not in outputs:
                found.append(ChangeKind.KEEP_FP32)
    return [Change(index, d.node_id, k, d.op, d.source) for k in found]


def output_ids(program: Program) -> set[str]:
    """Ids of the nodes whose values are graph outputs (always rounded to storage)."""
    flat: list[torch.fx.Node] = []
    for n in program.nodes():
        if n.op == "output":
            torch.fx.node.map_arg(n.args, flat.append)
    return {node_id(x) for x in flat}


def candidate_changes(
    plan: Plan, reference: Reference | str = Reference.EAGER
) -> tuple[Change, ...]:
    """Every decision of `plan` that can be flipped toward `reference`, in graph (topological) order.

    Toward eager: UPCAST (storage compute -> opmath), ROUND (kept fp32 -> rounded), NO_FMA.
    Toward the oracle: UPCAST, KEEP_FP32 (rounded intermediate, or one a kernel boundary stores rounded,
    or a returned value the program reads too -> kept fp32 for its readers), SCALAR_FP32, NO_FMA.
    Toward either: NO_DOWNCAST (matmul operands as stored instead of autocast-rounded).
    Toward the oracle, selects (where, masked_fill, clamp) offer KEEP_FP32 like computing ops: they store
    what they pick; so do copies of several values (cat, stack), which round a kept one unless kept too.
    Nodes whose storage dtype is not low precision (fp32/fp64/int) offer no change; a multi-output op (no
    storage dtype of its own: its ``getitem`` nodes round) computing in a 16-bit dtype offers UPCAST.
    """
    ref = Reference.parse(reference)
    # a returned value the program also reads (an optimizer's state `v`, read by its own update) may be kept
    # in fp32 for those readers, the output still rounded (trial 75); one only returned has nothing to keep
    returned = output_ids(plan.program)
    outputs = {node_id(n) for n in plan.program.nodes()
               if node_id(n) in returned and all(u.op == "output" for u in n.users)}
    read_rounded = {p for d in plan.decisions.values() for p in d.rounded_inputs}
    changes: dict[tuple[str, ChangeKind], Change] = {}
    for index, n in enumerate(plan.program.nodes()):
        d = plan.decisions.get(node_id(n))
        if d is not None:
            dtypes = [v.dtype for p in n.all_input_nodes if isinstance(v := p.meta.get("val"), torch.Tensor)
                      and v.is_floating_point()]
            for c in _changes_for(index, d, ref, outputs, read_rounded, len(dtypes), frozenset(dtypes)):
                # a kernel's copy of a node (``n7@k4``) follows its original's overrides: the change is the
                # original's, the one a policy can name (trial 92's GAT: a dropped cast recomputed in a kernel)
                c = replace(c, node_id=c.node_id.split("@")[0])
                changes.setdefault((c.node_id, c.kind), c)
    return tuple(changes.values())


def compile_placeable(captured: Program, plan: Plan) -> Callable[[Change], bool]:
    """Whether roundoff.compile can place a change by its node id: a node of the `captured` program, or the
    node holding a decomposed node's value kept unrounded (``round_result=False``, placed on that node:
    `roundoff.compiler.backend.kept_aliases`); not another step of a decomposition (``n7.0``: trial 96, a
    logsumexp's steps in a fix `--placeable` saved and roundoff.compile refused). Backward-only nodes are
    `roundoff.blame.notes.backward_only`'s. The ids are gathered once, for all the changes asked about."""
    present, holders = {node_id(n) for n in captured.nodes()}, value_holders(plan.program.graph)
    return lambda c: c.node_id in present or (c.node_id in holders and c.override == OpOverride(round_result=False))


def merge_overrides(
    base: Mapping[str, OpOverride], changes: Iterable[Change]
) -> dict[str, OpOverride]:
    """`base` node overrides with each change's flipped field set (other fields kept)."""
    merged = dict(base)
    for c in changes:
        cur = merged.get(c.node_id, OpOverride())
        flipped = {
            f.name: v for f in fields(OpOverride) if (v := getattr(c.override, f.name)) is not None
        }
        merged[c.node_id] = replace(cur, **flipped)
    return merged


def apply_changes(policy: Policy, changes: Iterable[Change]) -> Policy:
    """`policy` with the node overrides of `changes` merged into its own."""
    return replace(policy, node_overrides=merge_overrides(policy.node_overrides, changes))


def downstream(program: Program, roots: Iterable[str]) -> frozenset[str]:
    """Ids of `roots` and every node that (transitively) uses one of them."""
    dirty: set[str] = set(roots)
    for n in program.nodes():
        if node_id(n) in dirty:
            continue
        flat: list[torch.fx.Node] = []
        torch.fx.node.map_arg((n.args, n.kwargs), flat.append)
        if any(node_id(x) in dirty for x in flat):
            dirty.add(node_id(n))
    return frozenset(dirty)


def affected_nodes(base: Plan, fixed: Plan) -> tuple[str, ...]:
    """Ids of the nodes whose computation the fix `fixed` (of `base`) changes, in graph order: each node
    whose decision differs, and each node that reads a value whose rounding differs (a consumer of a
    value kept in fp32, looking through data-movement views; the `eq` reading a value now rounded)."""
    changed = {nid for nid, d in fixed.decisions.items() if base.decisions.get(nid) != d}
    affected = set(changed)
    todo = [n for n in fixed.program.nodes() if node_id(n) in changed
            and getattr(base.decisions.get(node_id(n)), "rounds_result", None) != fixed.decisions[node_id(n)].rounds_result]
    while todo:
        for u in todo.pop().users:
            if u.op == "call_function" and node_id(u) not in affected:
                affected.add(node_id(u))
                d = fixed.decisions.get(node_id(u))
                if d is not None and d.op_class is OpClass.DATA_MOVEMENT:
                    todo.append(u)
    return tuple(node_id(n) for n in fixed.program.nodes() if node_id(n) in affected)

