"""``plan(program, policy) -> Plan``: a Policy applied to every node of a Program.

Steps, each a pure function of (program, policy):

1. the policy's decompositions (``roundoff.capture.decompose``; stable ids kept);
2. common-subexpression elimination when the policy fuses (Inductor and XLA CSE inside kernels):
   merged ids in ``Plan.cse`` (removed id -> kept id); after fusion, a recomputed node whose reads
   differ between kernels is split into per-kernel copies (``roundoff.plan.remat``; ``Plan.copies``);
3. storage promotion (``policy.storage``: every floating value of the program stored in that format);
4. per node: op class, storage dtype, compute dtype (OPMATH: fp32 for bf16/fp16/fp8 storage, else
   the storage dtype; STORAGE: the storage dtype, operands rounded to it via ``input_format``;
   reductions accumulate in ``reduction_accumulate``, matmul-like ops in ``matmul_accumulate``, never
   narrower than storage), the format Python-scalar operands are rounded to, matmul input format;
5. kernels (``roundoff.plan.fusion``) and rounding (``RoundingPoint``); 6. FMA sites
   (``roundoff.plan.fma``); a floating ``aten.neg`` records ``policy.negation`` (sign flip or
   ``0.0 - x``: they differ at ``+0.0``); under ``MatmulAdd.ADDMM`` an add of a 2-D matmul's result
   runs as that matmul's GEMM, ``addmm`` (``roundoff.plan.matmul_add``).

Per-node and per-op overrides (``policy.node_overrides`` > overload > packet > class) are resolved by
``roundoff.policy``; an override's ``scalars`` sets that node's scalar format, and ``compute=OPMATH``
on a matmul-like node keeps its operands as stored (no ``matmul_input`` downcast). Rounding is RNE to the storage dtype; subnormals, overflow and NaN are whatever
the rounding does (see ``roundoff.numerics``): the plan only says where.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.fx

from roundoff import ops
from roundoff import policy as policies
from roundoff.capture.program import Program, node_id, node_source, value_holders
from roundoff.numerics import get_format, opmath_dtype
from roundoff.ops.classes import OpClass
from roundoff.plan import _dtypes as dt
from roundoff.plan import remat
from roundoff.plan.fma import find_sites
from roundoff.plan.fusion import Fusion, FusionNode, Kind, fuse
from roundoff.plan.loops import layout, reduced_dims, unrolled_terms
from roundoff.plan.matmul_add import gemm_adds
from roundoff.plan.model import STORED_INPUT_OPS, FmaSite, NodeDecision, Plan
from roundoff.plan.partitioner import saved_values
from roundoff.plan.rewrite import Rewritten, rewrite, training_step_notes
from roundoff.plan.saved import forward_ids, numel, saved_values_stored
from roundoff.policy.model import (
    ComputePrecision,
    Division,
    FusionModel,
    OpOverride,
    Policy,
    RoundingPoint,
    ScalarMixing,
)

_EXTERN = frozenset(
    {OpClass.MATMUL, OpClass.CONVOLUTION, OpClass.ATTENTION, OpClass.NORMALIZATION, OpClass.RANDOM,
     OpClass.OTHER, OpClass.UNMODELED}
)  # fmt: skip
#: Selections every backend modelled runs as a kernel of their own, reading their operand from memory
#: (rounded to storage): Inductor's ATen fallbacks (torch 2.9-2.13 `lowering.py`: topk, kthvalue, median
#: and mode unless `config.triton.decompose_sort_ops`, off by default), nvFuser's and XLA's unfused ops.
_SELECTION_KERNELS = frozenset({"topk", "kthvalue", "median", "nanmedian", "mode"})
#: Inductor's C++ backend runs a sort as an ATen fallback too (`ir.Sort` is Triton only), and a scan
#: (`ir.Scan.create` is Triton only: cumsum's ATen kernel reads its operand stored, rounded; trial 67: a
#: bf16 selective scan's ``cumsum(-softplus(x))``, planned as read unrounded, 320 of 2048 elements off).
_CPP_OWN_KERNELS = _SELECTION_KERNELS | {"sort", "argsort", "msort", "cumsum", "cumprod", "logcumsumexp",
                                               "cummax", "cummin"}
#: Inductor's own kernel of an op in some dtypes only: a bf16 ``index_add`` is an ATen fallback on every
#: device (torch/_inductor/decomposition.py's ``index_add``, pytorch#137425), its source read stored, where
#: other dtypes decompose into a scatter (trial 91: a GNN's bf16 messages ``h[src]`` of a fused ``h + relu``
#: planned as summed unrounded, every aggregate after the first off eager, which the compiled one equals).
_INDUCTOR_OWN_KERNELS_OF_DTYPE = {"index_add": frozenset({torch.bfloat16})}
_MAX_SPLITS = 16  # rounds of remat.split; each resolves every mixed read the fusion found (a loop's
# recomputed state can need one round per step it is carried: trial 62, 12 steps)
_MAX_SPLIT_GROWTH = 3  # ... and while the split program stays within this many times the nodes of the unsplit
# one (an unrolled BiGRU's copies doubled each round, 6174 -> 9630 -> 19272 nodes, and planned 10+ minutes:
# trial 89; the real-model corpus grows by 5% at most: bench/results/split-growth-session40.txt)
_MATMUL_LIKE = frozenset({OpClass.MATMUL, OpClass.CONVOLUTION, OpClass.ATTENTION})
_SCALAR_OPERAND_CLASSES = frozenset(
    {OpClass.POINTWISE_ARITHMETIC, OpClass.POINTWISE_TRANSCENDENTAL, OpClass.COMPARISON_SELECT}
)


@dataclass(frozen=True)
class _Base:
    """What a node computes, before fusion decides where values are rounded."""

    op: str
    op_class: OpClass
    storage: torch.dtype | None
    compute: torch.dtype | None
    precision: ComputePrecision | None
    input_format: str | None
    scalar_format: str | None
    override: OpOverride


def plan(program: Program, policy: Policy | str, *, rewritten: Rewritten | None = None, joint: bool = False) -> Plan:
    """Apply `policy` (a Policy or a preset name) to `program`; see the module docstring.

    `rewritten` (from ``roundoff.plan.rewrite.rewrite(program, p)``) skips steps 1-2 when it fits
    `program` and `policy` (same program object, decompositions and fusion); else they run again.
    `joint`: a training program compiled as one graph, forward and backward together (``roundoff
    observe`` without ``--partitioned``), where torch.compile splits it in two: no value is saved for a
    backward, and the backward's nodes are no pass of their own.
    """
    if not isinstance(program, Program):
        raise TypeError(
            f"plan() takes a roundoff Program (from roundoff.capture.capture(fn, *inputs)), got "
            f"{type(program).__name__}; capture your callable first"
        )
    if isinstance(policy, str):
        policy = policies.get_policy(policy)
    if not isinstance(policy, Policy):
        raise TypeError(f"plan() takes a Policy or a preset name, got {type(policy).__name__}")
    if rewritten is None or not rewritten.fits(program, policy):
        rewritten = rewrite(program, policy)
    partitioned = saved_values(program.captured()) if (
        program.backward and not joint and policy.fusion is not FusionModel.NONE) else None
    program, cse = rewritten.program, rewritten.cse
    promote = dt.dtype_of_format(policy.storage, "storage") if policy.storage else None
    holder_of = value_holders(program.graph)
    rounds = _split_rounds(program, policy, promote, holder_of, partitioned, joint)
    program, nodes, gemms, fusion, copies = rounds.program, list(rounds.nodes), rounds.gemms, rounds.fusion, rounds.copies
    bases = dict(rounds.bases)  # (a node no override reaches keeps the base the rounds decided)
    for n in nodes if policy.node_overrides else ():
        if _override_id(nid := node_id(n), policy, copies, holder_of) in policy.node_overrides:
            bases[nid] = _base(n, policy, promote, copies, holder_of, nid in gemms)
    notes = list(rounds.notes)
    decisions = _decide(nodes, bases, fusion, policy, gemms)
    sites = find_sites(nodes, decisions, fusion, policy, lambda n: bases[node_id(n)].override)
    for nid, site in sites.items():
        decisions[nid] = _replace(decisions[nid], fma=site)
    notes.extend(fusion.notes)
    notes.extend(_notes(nodes, bases, policy, fusion, sites))
    notes.extend(training_step_notes(program, policy))
    unmodeled = tuple(i for i, b in bases.items() if b.op_class is OpClass.UNMODELED)
    return Plan(
        program=program,
        policy=policy,
        decisions=decisions,
        groups=fusion.groups,
        fma_sites=tuple(sites.values()),
        unmodeled=unmodeled,
        notes=tuple(notes),
        cse=dict(cse),
        copies=dict(copies),
    )


@dataclass(frozen=True)
class _Rounds:
    """The program the rounds of splitting leave (`remat`), its nodes, GEMM adds, fusion and copies, and
    each node's `_Base` under the policy less its node overrides (a node no override reaches keeps it)."""

    program: Program
    nodes: tuple[torch.fx.Node, ...]
    gemms: Mapping[str, str]
    fusion: Fusion
    copies: Mapping[str, str]
    notes: tuple[str, ...]
    bases: Mapping[str, _Base]


def _override_id(nid: str, policy: Policy, copies: Mapping[str, str], holder_of: Mapping[str, str]) -> str:
    """The id whose node override applies to node `nid`: its own, else its original's (a kernel's copy follows
    its original's overrides), else that of the node holding its value (a decomposed node's step)."""
    if nid not in policy.node_overrides:
        nid = copies.get(nid, nid)
    if nid not in policy.node_overrides:
        nid = holder_of.get(nid, nid)
    return nid


def _split_rounds(
    program: Program, policy: Policy, promote: torch.dtype | None, holder_of: dict[str, str],
    partitioned: Mapping[str, str | None] | None, joint: bool,
) -> _Rounds:
    """Fuse, split the nodes whose copies in other kernels read differently rounded values, and again.

    What a node's kernel is depends on its op and class, never on a node override (`_fusion_nodes`,
    `_kind`): the rounds run with `policy` less its node overrides, and their result is kept with
    `program` (`Program.derived`) for the next plan of a policy that differs only there, which `blame`
    makes for every candidate change."""
    shared = dataclasses.replace(policy, node_overrides={})
    kept = program.derived.setdefault("plan.rounds", [])
    found = next((r for key, r in kept if key == (shared, joint)), None)
    if found is not None:
        return found
    notes: list[str] = []
    copies: dict[str, str] = {}
    unsplit = 0  # the node count before any split
    pinned = None  # the user's graph's stored values: a split's copies change no realization decision
    for round_ in range(_MAX_SPLITS + 1):
        nodes = [n for n in program.nodes() if n.op != "output"]
        gemms = gemm_adds(nodes, shared, partitioned or ())
        bases = {node_id(n): _base(n, shared, promote, copies, holder_of, node_id(n) in gemms) for n in nodes}
        fusion_nodes = _fusion_nodes(program, bases, partitioned, shared, joint)
        fusion = fuse(fusion_nodes, shared.fusion, pinned)
        if pinned is None:
            pinned = (fusion.stored, fusion.stored_backward)
        split = remat.differing_copies(fusion_nodes, fusion)
        if not split:
            break
        unsplit = unsplit or len(nodes)
        grown = len(nodes) + sum(map(len, split.values())) > _MAX_SPLIT_GROWTH * unsplit
        if round_ == _MAX_SPLITS or grown:  # (the decisions below are this program's: it is not split again)
            why = (f"after {round_} round(s) of splitting, the next would make the program over {_MAX_SPLIT_GROWTH} "
                   f"times its {unsplit} nodes" if grown else f"after {_MAX_SPLITS} rounds of splitting")
            notes.append(
                f"recomputed nodes whose copies in other kernels read differently rounded values {why} "
                f"({', '.join(sorted({m for ms in split.values() for m in ms})[:8])}): "
                "each is emulated with its home kernel's reads")
            break
        program, made = remat.split(program, fusion, split)
        copies.update({c: copies.get(o, o) for c, o in made.items()})
    found = _Rounds(program, tuple(nodes), gemms, fusion, copies, tuple(notes), bases)
    kept.append(((shared, joint), found))
    return found



def _replace(d: NodeDecision, **changes: object) -> NodeDecision:
    return dataclasses.replace(d, **changes)


def op_name(node: torch.fx.Node) -> str:
    """``"aten.mul.Tensor"`` for a call_function node, ``"placeholder"`` / ``"get_attr"`` for inputs."""
    if node.op != "call_function":
        return node.op
    return ops.classify(node.target).name


def _storage(node: torch.fx.Node, promote: torch.dtype | None) -> torch.dtype | None:
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        return None
    if promote is not None and val.dtype.is_floating_point:
        return promote
    return val.dtype


def _first_tensor_dtype(node: torch.fx.Node, promote: torch.dtype | None) -> torch.dtype | None:
    val = node.meta.get("val")
    if isinstance(val, (tuple, list)):
        for v in val:
            if isinstance(v, torch.Tensor) and v.dtype.is_floating_point:
                return promote or v.dtype
    return None


def _has_scalar_operand(node: torch.fx.Node) -> bool:
    """A Python number among the args or keyword args (``alpha``, ``value``, ``min``, ...)."""
    values = (*node.args, *node.kwargs.values())
    return any(isinstance(a, (int, float)) and not isinstance(a, bool) for a in values)


def _input_format(
    cls: OpClass,
    precision: ComputePrecision | None,
    override: OpOverride,
    value_dtype: torch.dtype,
    policy: Policy,
) -> str | None:
    """Format tensor operands are rounded to first (None: as read); see OpOverride for matmuls."""
    if cls in _MATMUL_LIKE:
        if override.compute is ComputePrecision.OPMATH:
            return None  # taken out of the autocast: operands as stored
        if policy.matmul_input is not None:
            dt.dtype_of_format(policy.matmul_input, "matmul_input")
            return policy.matmul_input
    if precision is ComputePrecision.STORAGE:
        return get_format(value_dtype).name
    return None


def _base(
    node: torch.fx.Node, policy: Policy, promote: torch.dtype | None, copies: dict[str, str],
    holder_of: dict[str, str], in_gemm: bool = False,
) -> _Base:
    """`in_gemm`: an add computed inside its matmul's GEMM (`gemm_adds`), which is that matmul's kernel."""
    storage = _storage(node, promote)
    if node.op in STORED_INPUT_OPS:
        return _Base(
            node.op, OpClass.DATA_MOVEMENT, storage, storage, None, None, None, OpOverride()
        )
    info = ops.classify(node.target)
    nid = _override_id(node_id(node), policy, copies, holder_of)
    override = policies.override_for(policy, info.name, nid)
    cls = OpClass.MATMUL if in_gemm else info.op_class
    # multi-output nodes are rounded through their getitem users; their own storage stays None
    value_dtype = storage if storage is not None else _first_tensor_dtype(node, promote)
    if not dt.is_float(value_dtype):
        return _Base(info.name, cls, storage, value_dtype, None, None, None, override)
    precision = policies.compute_precision(policy, info.name, cls, nid) if cls.computes else None
    input_format = _input_format(cls, precision, override, value_dtype, policy)
    if cls in _MATMUL_LIKE:
        # STORAGE: operands as stored (Thunder's prims.matmul); accumulation as the policy says
        compute = dt.wider(
            dt.dtype_of_format(policy.matmul_accumulate, "matmul_accumulate"), value_dtype
        )
    elif precision is ComputePrecision.STORAGE:
        compute = value_dtype
    elif cls is OpClass.REDUCTION:
        compute = dt.wider(
            dt.dtype_of_format(policy.reduction_accumulate, "reduction_accumulate"), value_dtype
        )
    elif cls in (OpClass.RANDOM, OpClass.OTHER, OpClass.UNMODELED):
        compute = value_dtype
    else:
        compute = opmath_dtype(value_dtype)
    scalar_format = None
    if (
        policies.scalar_mixing(policy, info.name, nid) is ScalarMixing.ROUND_TO_STORAGE
        and cls in _SCALAR_OPERAND_CLASSES
        and _has_scalar_operand(node)
    ):
        scalar_format = get_format(value_dtype).name
    return _Base(info.name, cls, storage, compute, precision, input_format, scalar_format, override)


def _kind(node: torch.fx.Node, base: _Base, own_kernels: frozenset[str],
          own_of_dtype: Mapping[str, frozenset[torch.dtype]]) -> Kind:
    """`own_kernels`: the ops (packet names) that run as a kernel of their own under the policy; `own_of_dtype`:
    those that do in some dtypes of their value only (`_INDUCTOR_OWN_KERNELS_OF_DTYPE`)."""
    if node.op in STORED_INPUT_OPS or base.op_class is OpClass.OTHER:
        # graph inputs and constants (full, zeros, arange): stored values, no kernel
        return Kind.INPUT
    if node.target is operator.getitem:
        return Kind.ITEM
    if base.op_class in _EXTERN or _packet(base.op) in own_kernels:  # (a C++ scan: a reduction's class)
        return Kind.EXTERN
    if isinstance(v := node.meta.get("val"), torch.Tensor) and v.dtype in own_of_dtype.get(_packet(base.op), ()):
        return Kind.EXTERN
    if base.op_class is OpClass.REDUCTION:
        return Kind.REDUCTION
    if base.op_class is OpClass.DATA_MOVEMENT:
        return Kind.VIEW
    return Kind.FUSIBLE


def _fusion_nodes(
    program: Program, bases: dict[str, _Base], partitioned: Mapping[str, str | None] | None, policy: Policy, joint: bool
) -> list[FusionNode]:
    outputs: set[str] = set()
    # Inductor's lowering unrolls a small reduction into a pointwise loop (`unrolled_terms`)
    inductor = "inductor" in policy.decompositions and policy.fusion is not FusionModel.NONE
    for n in program.nodes():
        if n.op == "output":
            outputs.update(node_id(p) for p in n.all_input_nodes)
    own_kernels = _CPP_OWN_KERNELS if policy.fusion is FusionModel.POINTWISE_CPP else _SELECTION_KERNELS
    nodes = []
    for n in program.nodes():
        if n.op == "output":
            continue
        kind = _kind(n, bases[node_id(n)], own_kernels, _INDUCTOR_OWN_KERNELS_OF_DTYPE if inductor else {})
        terms = unrolled_terms(n, _packet(bases[node_id(n)].op), cpp=policy.fusion is FusionModel.POINTWISE_CPP) if (
            kind is Kind.REDUCTION and inductor) else 0
        nodes.append(FusionNode(
            node_id(n),
            Kind.FUSIBLE if terms else kind,
            tuple(node_id(p) for p in n.all_input_nodes),
            node_id(n) in outputs,
            _packet(bases[node_id(n)].op),
            numel(n),
            **layout(n),
            reduced=reduced_dims(n) if kind is Kind.REDUCTION else None,
            terms=terms,
            scalars=tuple(float(a) for a in n.args if isinstance(a, (int, float)) and not isinstance(a, bool)),
        ))
    if joint:
        return nodes
    saved = saved_values_stored(program, nodes, partitioned)
    forward = forward_ids(program) if program.backward else None
    return [dataclasses.replace(n, saved=n.id in saved, backward=forward is not None and n.id not in forward)
            for n in nodes]


def _packet(name: str) -> str:
    """An op's name without namespace and overload: ``aten.exp.default`` -> ``exp``."""
    parts = name.split(".")
    return parts[1] if len(parts) == 3 else name


def _needs_rounding(base: _Base) -> bool:
    """The value is computed wider than it is stored."""
    return dt.is_float(base.storage) and dt.is_float(base.compute) and base.compute != base.storage


def _rounds_result(node: torch.fx.Node, base: _Base, policy: Policy) -> bool:
    if node.op in STORED_INPUT_OPS or base.storage is None:
        return False
    if base.precision is ComputePrecision.STORAGE:
        return _needs_rounding(base) or base.compute == base.storage
    if base.override.round_result is not None:
        return base.override.round_result and _needs_rounding(base)
    if policy.rounding is RoundingPoint.EVERY_OP:
        return _needs_rounding(base)
    if base.op_class is OpClass.CAST and (
        policy.rounding is RoundingPoint.FUSION_BOUNDARY_HONOR_CASTS
        or (policy.fusion is FusionModel.POINTWISE_CPP and _from_integer(node))
    ):
        return _needs_rounding(base)
    return False


def _extern_result(node: torch.fx.Node, nid: str, bases: Mapping[str, _Base], fusion: Fusion, policy: Policy) -> bool:
    """A matmul or convolution that a fusion policy runs as an extern kernel (its own kernel, its result
    stored) and that every reader reads from memory is rounded where it is made: Inductor calls torch's own
    kernel on the 16-bit operands (``extern_kernels.mm``, ``convolution``), whose output is the 16-bit
    buffer; no fp32 value of it exists. So the emulation runs that kernel (`execute.native_kernels`), and
    its figures are the stored value's (trial 78: an fp16 ViT's patch-embedding convolution measured before
    its rounding, 1000x closer to fp64 than the compiled program's, and named the first bitwise divergence
    from eager, whose bits the compiled convolution has). A reader computing with it unrounded (the add
    Inductor's ``addmm`` folds in) keeps it as it is. A multi-output op's (a convolution's backward) results
    are its ``getitem`` nodes: each is rounded where every reader of it reads it from memory."""
    base = bases[nid]
    source = node.args[0] if node.target is operator.getitem and node.args else node
    kind = bases[node_id(source)].op_class if isinstance(source, torch.fx.Node) else None
    if (policy.rounding is RoundingPoint.EVERY_OP or kind not in (OpClass.MATMUL, OpClass.CONVOLUTION, OpClass.ATTENTION)
            or base.precision is ComputePrecision.STORAGE or base.override.round_result is not None
            or not _needs_rounding(base) or nid not in fusion.stored or not node.users):
        return False
    return all(u.op == "output" or fusion.reads_rounded(node_id(u), nid) for u in node.users)


def _from_integer(node: torch.fx.Node) -> bool:
    """A cast of an integer or bool value the kernel makes itself (an ``arange``, reached through views):
    Inductor's C++ kernel converts that index expression to the target format (no fp32 value exists to
    keep), so it is rounded there (measured, torch 2.13: ``torch.arange(8192, 8224).to(bf16)`` then fp32
    math, compiled bit for bit as eager). An integer tensor the kernel loads (timesteps passed in) is
    converted to fp32 and kept so, as a float cast is (trial 90: a diffusion model's
    ``t[:, None].to(bf16) * freqs`` of int64 steps 900-999, compiled bit for bit that way, was emulated
    rounded and said to diverge 210x). Triton's codegen is not measured (`bench/gpu/int_cast_cuda.py`
    measures it): the GPU model keeps the rule for float casts."""
    src = node.args[0] if node.args else None
    while isinstance(src, torch.fx.Node) and src.op == "call_function" and ops.classify(src.target).op_class is OpClass.DATA_MOVEMENT \
            and len(src.all_input_nodes) == 1:
        src = src.all_input_nodes[0]  # (through views: ``t[:, None]``)
    dtype = getattr(src.meta.get("val"), "dtype", None) if isinstance(src, torch.fx.Node) else None
    made_here = isinstance(src, torch.fx.Node) and src.op == "call_function" and not src.all_input_nodes
    return made_here and dtype is not None and not dtype.is_floating_point and not dtype.is_complex


def _decide(
    nodes: list[torch.fx.Node], bases: dict[str, _Base], fusion: Fusion, policy: Policy, gemms: Mapping[str, str]
) -> dict[str, NodeDecision]:
    decisions: dict[str, NodeDecision] = {}
    wide: set[str] = set()  # values kept unrounded for other kernels (`_kept_wide`)
    for n in nodes:
        nid = node_id(n)
        b = bases[nid]
        compute = b.compute
        if n.op in STORED_INPUT_OPS or (nid in fusion.stored and fusion.home.get(nid) is None):
            compute = b.storage if b.storage is not None else compute  # stored inputs and aliases
        rounded = frozenset(
            pid
            for p in n.all_input_nodes
            if fusion.reads_rounded(nid, pid := node_id(p)) and _wider_than_stored(decisions[pid])
            and pid not in wide
        )
        rounds = _rounds_result(n, b, policy) or _extern_result(n, nid, bases, fusion, policy)
        floats = [node_id(p) for p in n.all_input_nodes if dt.is_float(bases[node_id(p)].storage) or node_id(p) in wide]
        # (a kept multi-output view, `split`, has no storage dtype of its own: its items move its kept values)
        if _kept_wide(b):
            wide.add(nid)
        elif b.op_class is OpClass.DATA_MOVEMENT and len(floats) == 1 and floats[0] in wide:
            rounds = False  # a view of a kept value moves it unrounded, as the real fp32 tensor would; a copy of
            wide.add(nid)  # several (cat) is rounded unless kept itself, as roundoff.compile casts its result back
            # and in the kept value's dtype: a view computed in its graph dtype converted the kept fp32 value to it
            # (trial 102: a BART cross-attention's bmm kept in fp32, 8.1e4, was inf past its `view`)
            compute = decisions[floats[0]].compute_dtype or compute
        decisions[nid] = NodeDecision(
            node_id=nid,
            op=b.op,
            op_class=b.op_class,
            storage_dtype=b.storage,
            compute_dtype=compute,
            rounds_result=rounds,
            group=fusion.home.get(nid),
            rounded_inputs=rounded,
            scalar_format=b.scalar_format,
            input_format=b.input_format,
            source=node_source(n),
            negation=policy.negation if _is_float_neg(n, b) else None,
            gemm=gemms.get(nid),
        )
    return decisions


def _kept_wide(producer: _Base) -> bool:
    """A ``round_result=False`` override keeps the producer's value unrounded for its direct consumers,
    in other kernels too: under per-op rounding, and under fusion-boundary rounding where a kernel
    boundary would store it (what ``roundoff.compile``'s ``keep_unrounded`` rewrite does: the value is
    handed over in fp32, as if the user wrote ``.float()``). A graph output is still rounded."""
    return producer.override.round_result is False


def _is_float_neg(n: torch.fx.Node, base: _Base) -> bool:
    return n.target is torch.ops.aten.neg.default and dt.is_float(base.storage)


def _wider_than_stored(d: NodeDecision) -> bool:
    """`d`'s value, as its consumers in the same kernel see it, is not yet in its storage format."""
    return (
        not d.rounds_result
        and dt.is_float(d.storage_dtype)
        and dt.is_float(d.compute_dtype)
        and d.compute_dtype != d.storage_dtype
    )


def _notes(
    nodes: list[torch.fx.Node],
    bases: dict[str, _Base],
    policy: Policy,
    fusion: Fusion,
    sites: dict[str, FmaSite],
) -> list[str]:
    notes: list[str] = []
    unmodeled = [
        f"{node_id(n)} ({bases[node_id(n)].op})"
        for n in nodes
        if bases[node_id(n)].op_class is OpClass.UNMODELED
    ]
    if unmodeled:
        notes.append(
            "unmodeled ops (roundoff does not know their numerics; computed as stored, treated as "
            "single kernels): " + ", ".join(unmodeled)
        )
    if policy.matmul_input is not None:
        narrowed = [
            node_id(n) for n in nodes
            if bases[node_id(n)].op_class in _MATMUL_LIKE
            and bases[node_id(n)].input_format == policy.matmul_input
        ]  # fmt: skip
        if narrowed:
            notes.append(
                f"matmul-like ops {', '.join(narrowed)} read their operands rounded to "
                f"{policy.matmul_input} (autocast-style); their results keep the program's dtype"
            )
    divs = [
        node_id(n) for n in nodes
        if n.op == "call_function" and n.target is torch.ops.aten.div.Tensor
        and any(u.target in (torch.ops.aten.add.Tensor, torch.ops.aten.sub.Tensor)
                and fusion.home.get(node_id(u)) == fusion.home.get(node_id(n)) is not None
                for u in n.users)
    ]  # fmt: skip
    if divs and policy.fma.value != "never" and policy.division is Division.IEEE:
        notes.append(
            f"divisions {', '.join(divs)} feed an add/sub in the same kernel; a backend that computes "
            "x / y as x * (1/y) can contract that product into an FMA (thread 003); not modelled"
        )
    shared = [d for d in divs if d not in {s.mul_id for s in sites.values()}]
    if shared and policy.fma.value != "never" and policy.division is Division.RECIPROCAL_MULTIPLY:
        notes.append(
            f"divisions {', '.join(shared)} feed an add/sub in the same kernel but are not FMA "
            "candidates (the quotient has another user, or the add/sub folds another product); "
            "ptxas was measured to leave a multi-use quotient's subtraction uncontracted"
        )
    return notes
