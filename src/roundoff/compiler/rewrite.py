"""Graph rewrites for what Inductor settings cannot express: per-node overrides on aten graphs.

Placement (how a stable roundoff id reaches the graph the backend receives): ``roundoff.compile``
captures the user's callable with ``roundoff.capture`` on the first call's inputs, the same capture
``roundoff check`` and ``roundoff blame`` use, so ids mean the same thing. Each overridden node is
keyed by (aten overload, source ``file:line``, occurrence among nodes with that overload and line,
in graph order). The backend receives AOTAutograd's forward (and later backward) aten graphs; their
nodes carry the user's stack trace, from which the same key is built. A key found in no graph, or a
key whose (overload, line) group has a different size in the two graphs (a decomposition split or
merged it), raises ``RoundoffPlacementError``: an override is never placed on a guess.

Rewrites (which one an override needs depends on the policy's rounding, see ``check_override``):

- ``keep_unrounded`` (``round_result=False``): the node computes from operands upcast to fp32 and
  returns fp32, so its direct consumers read the unrounded opmath value, in its kernel and in every
  other (under fusion-boundary rounding a kernel boundary then stores it in fp32); each consumer reads
  its other 16-bit float operands upcast too (a matmul takes one dtype) and its floating-point result
  is cast back to the dtype it had, and a graph output is rounded to its original dtype. Under
  ``emulate_precision_casts`` Inductor honours exactly these casts; under fusion-boundary rounding a
  consumer with a buffer of its own (a matmul, a reduction) is rounded back as ``keep_rounded`` does.
- ``keep_rounded`` (``round_result=True`` or ``compute=STORAGE`` under fusion-boundary rounding,
  bf16 and fp16): the in-kernel fp32 value is rounded to its format by integer RNE on its bit pattern, which
  Inductor cannot elide the way it elides a ``.to(bf16).to(fp32)`` pair. Under per-op rounding
  nothing is needed (every result is rounded already).
- ``sign_flip_negations`` (policies with ``negation=SIGN_FLIP``, on CUDA): Triton lowers ``-x`` to
  ``0.0 - x``, so ``-(+0.0)`` is ``+0.0`` there (``roundoff.policy.Negation``); every floating
  ``aten.neg`` becomes ``x * -1.0``, which is ``-x`` bit for bit (the sign flipped, zeros included).
- ``contract_fma``: no per-node switch exists. ``False`` holds wherever contraction is off for the
  whole compilation (per-op rounding; on CPU the backend turns the C++ flag off, with a warning);
  ``True``, or ``False`` on GPU under fusion-boundary rounding, raises ``RoundoffPlacementError``.
"""

from __future__ import annotations

import operator
import os
import re
from collections.abc import Iterable, Mapping

import torch
import torch.fx

from roundoff.compiler.errors import RoundoffPlacementError
from roundoff.compiler.numbering import GraphNumbering, NodeKey
from roundoff.numerics import is_low_precision
from roundoff.ops import classify
from roundoff.ops.classes import OpClass
from roundoff.policy.model import ComputePrecision, OpOverride

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _normalize_source(source: str | None) -> str | None:
    if not source:
        return None
    path, _, line = source.rpartition(":")
    return f"{os.path.basename(path)}:{line}"


def stack_source(node: torch.fx.Node) -> str | None:
    """``basename:line`` of the innermost user frame in `node`'s stack trace, if any."""
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    frames = _FRAME.findall(trace)
    if not frames:
        return None
    path, line = frames[-1]
    return f"{os.path.basename(path)}:{line}"


def _op_name(node: torch.fx.Node) -> str:
    return str(node.target)


def keys_by_node(nodes: Iterable[torch.fx.Node], source_of) -> dict[torch.fx.Node, NodeKey]:
    """Key every call_function node by (op, source, occurrence) in graph order."""
    seen: dict[tuple[str, str | None], int] = {}
    keys = {}
    for node in nodes:
        if node.op != "call_function":
            continue
        group = (_op_name(node), source_of(node))
        keys[node] = NodeKey(group[0], group[1], seen.get(group, 0))
        seen[group] = seen.get(group, 0) + 1
    return keys


def made_by_factory(node: torch.fx.Node) -> bool:
    """Whether AOTAutograd made `node` by decomposing a factory op (no tensor operand: ``arange``'s
    ``iota * step + start``), which the capture holds as one node: it is not the user's op at that line
    (trial 63: ``exp(-log(10000) * arange(half, dtype=fp16) / half)`` had two ``mul`` in the compiled graph)."""
    made_from = node.meta.get("original_aten")
    if not isinstance(made_from, torch._ops.OpOverload) or made_from is node.target:
        return False
    return not any("Tensor" in str(a.type) for a in made_from._schema.arguments)


def group_sizes(keys: Iterable[NodeKey]) -> dict[tuple[str, str | None], int]:
    sizes: dict[tuple[str, str | None], int] = {}
    for key in keys:
        sizes[(key.op, key.source)] = sizes.get((key.op, key.source), 0) + 1
    return sizes


def _keyed(program) -> tuple[dict[str, NodeKey], dict[tuple[str, str | None], int]]:
    """{id: key} of a Program's forward nodes (the compiled graphs are keyed on theirs), and group sizes."""
    from roundoff.capture.program import NODE_ID, NODE_SOURCE

    nodes = program.graph.nodes
    if program.backward:
        from roundoff.plan.saved import forward_ids

        forward = forward_ids(program)
        nodes = [n for n in nodes if n.meta.get(NODE_ID) in forward]
    keys = keys_by_node(nodes, lambda n: _normalize_source(n.meta.get(NODE_SOURCE)))
    return {node.meta.get(NODE_ID): key for node, key in keys.items()}, group_sizes(keys.values())


def program_keys(program, node_ids: Iterable[str], aliases: Mapping[str, str] | None = None,
                 decomposed=None) -> dict[str, tuple[NodeKey, int]]:
    """Key of each id in `node_ids` within a roundoff Program, with the size of its key group.
    `aliases`: {id a plan made (``n7.3``): the captured node placed for it (``n7``)}. `decomposed`: the
    Program as the compiler decomposes it (`roundoff.capture.rewrite.decompose`); a node it decomposed
    (a ``clamp`` with tensor bounds: an fp32 clamp and a cast back) is keyed at the last node made from
    it, which holds its value in the compiled graphs."""
    from roundoff.capture.program import value_holders

    by_id, sizes = _keyed(program)
    by_id.update({made: by_id[base] for made, base in (aliases or {}).items() if base in by_id})
    in_compiled: dict[str, tuple[NodeKey, int]] = {}
    if decomposed is not None:
        made_keys, made_sizes = _keyed(decomposed)
        for holder, base in value_holders(decomposed.graph).items():
            if holder in made_keys:
                key = made_keys[holder]
                in_compiled[base] = (key, made_sizes[(key.op, key.source)])
    node_ids = list(node_ids)
    missing = [nid for nid in node_ids if nid not in by_id]
    if missing:
        known = ", ".join(sorted(i for i in by_id if i)[:8])
        more = (f" and {len(missing) - 1} more of the policy's {len(node_ids)} node overrides" if len(missing) > 1
                else "")
        raise RoundoffPlacementError(
            f"node override {missing[0]!r}{more} name{'s' if len(missing) == 1 else ''} no computing node of the "
            f"forward capture of your callable (ids look like {known}, ...); run `roundoff trace` to see the ids. "
            f"Ids of backward-only nodes cannot be placed by roundoff.compile, nor ids of the steps a "
            f"decomposition made (n7.0), but for round_result=false at the last step, the value of n7 "
            f"(placed as n7); a policy `roundoff blame` saved may hold such changes: `roundoff blame --placeable` "
            f"searches only changes roundoff.compile places"
        )
    out = {}
    for nid in node_ids:
        placed_on = (aliases or {}).get(nid, nid)  # (an alias's value is its captured node's)
        key, size = in_compiled.get(nid) or in_compiled.get(placed_on) or (
            by_id[nid], sizes[(by_id[nid].op, by_id[nid].source)])
        if key.source is None:
            raise RoundoffPlacementError(
                f"node override {nid!r} ({key.op}) has no source line in the capture, so it cannot "
                f"be placed on the compiled graph; key the override by op instead (op_overrides)"
            )
        out[nid] = (key, size)
    return out


def _float_dtype(node: torch.fx.Node) -> torch.dtype | None:
    val = node.meta.get("val")
    return val.dtype if isinstance(val, torch.Tensor) and val.is_floating_point() else None


def _cast(graph: torch.fx.Graph, value: torch.fx.Node, dtype: torch.dtype) -> torch.fx.Node:
    node = graph.call_function(torch.ops.prims.convert_element_type.default, (value, dtype))
    node.meta.update({k: v for k, v in value.meta.items() if k in ("stack_trace", "seq_nr")})
    val = value.meta.get("val")
    if isinstance(val, torch.Tensor):
        node.meta["val"] = val.to(dtype)
    return node


#: Consumers Inductor computes into a buffer of their own (an extern kernel, a reduction's result): a cast
#: back after one is a pointwise op of the next kernel, where fusion-boundary rounding would drop it.
_OWN_BUFFER = frozenset({OpClass.MATMUL, OpClass.CONVOLUTION, OpClass.ATTENTION, OpClass.REDUCTION,
                         OpClass.NORMALIZATION})


def keep_unrounded(graph: torch.fx.Graph, node: torch.fx.Node, boundaries_round: bool = False,
                   kept: Iterable[torch.fx.Node] = ()) -> None:
    """Rewrite `node` to compute and return fp32; consumers' results are cast back (see module), except
    those of consumers in `kept`, which are kept unrounded themselves (their own rewrite casts their users).

    `boundaries_round` (fusion-boundary rounding, casts not emulated): a consumer with a buffer of its
    own (`_OWN_BUFFER`) has its cast back written as `keep_rounded`'s integer rounding, which no kernel
    drops, so its result is stored rounded as before (the plan's model: a kernel boundary)."""
    dtype = _float_dtype(node)
    if not is_low_precision(dtype):
        return
    if node.target is torch.ops.prims.convert_element_type.default:
        # a cast to 16 bits (a decomposition's last step, or ``.to``): kept unrounded, it casts to fp32
        node.args = (node.args[0], torch.float32)
        node.meta["val"] = node.meta["val"].to(torch.float32)
        _users_read_unrounded(graph, node, dtype, boundaries_round, kept)
        return
    with graph.inserting_before(node):
        args = [
            _cast(graph, a, torch.float32)
            if isinstance(a, torch.fx.Node) and is_low_precision(_float_dtype(a))
            else a
            for a in node.args
        ]
    node.args = tuple(args)
    if isinstance(node.meta.get("val"), torch.Tensor):
        node.meta["val"] = node.meta["val"].to(torch.float32)
    _users_read_unrounded(graph, node, dtype, boundaries_round, kept)


def _passes_through(user: torch.fx.Node, node: torch.fx.Node) -> bool:
    """Whether `user` is a view or copy of `node` alone (``aten.alias``: what a joint graph's backward
    reads of a saved result), whose dtype is its input's, and which no fused attention reads (trial 58:
    a query kept in fp32 beside its fp16 keys made Inductor's CPU flash attention fail; that reader
    gets the view of the value cast back)."""
    return (_moves_alone(user, node)
            and not any(u.op == "call_function" and classify(u.target).op_class is OpClass.ATTENTION for u in user.users))


def _splits(user: torch.fx.Node, node: torch.fx.Node) -> bool:
    """Whether `user` cuts `node` alone into views (``split``, ``chunk``, ``unbind``: a data movement op with
    several results)."""
    return _moves_alone(user, node) and isinstance(user.meta.get("val"), (tuple, list))


def _moves_alone(user: torch.fx.Node, node: torch.fx.Node) -> bool:
    """Whether `user` is a data movement op whose only floating-point operand is `node`."""
    return (user.op == "call_function" and classify(user.target).op_class is OpClass.DATA_MOVEMENT
            and [a for a in user.all_input_nodes if _float_dtype(a) is not None] == [node])


def _fp32_like(val: torch.Tensor) -> torch.Tensor:
    """A traced value's fp32 stand-in, its shape and strides kept."""
    return val.new_empty_strided(val.shape, val.stride(), dtype=torch.float32)


def _users_read_unrounded(graph: torch.fx.Graph, node: torch.fx.Node, dtype: torch.dtype, boundaries_round: bool,
                          kept: Iterable[torch.fx.Node]) -> None:
    """`keep_unrounded`'s consumers of fp32 `node` (once of `dtype`): a view or copy of it alone is fp32
    too and its own consumers are rewritten (trial 57: the ``alias`` a training step's backward reads an
    fp32-kept ``exp`` through was cast back to fp16, and the backward read inf); every other computes in
    fp32 and its result is cast back."""
    for user in list(node.users):
        if _passes_through(user, node) and isinstance(val := user.meta.get("val"), torch.Tensor):
            user.meta["val"] = _fp32_like(val)
            _users_read_unrounded(graph, user, dtype, boundaries_round, kept)
            continue
        if _splits(user, node):  # its pieces are views of the fp32 value: fp32 too, as `chunk` of a `.float()` is
            # (trial 86: a flow's `x1, x2 = x.chunk(2)` of a kept `cat` rounded both halves back)
            user.meta["val"] = type(user.meta["val"])(_fp32_like(v) if isinstance(v, torch.Tensor) and v.dtype == dtype
                                                      else v for v in user.meta["val"])
            for item in list(user.users):
                if item.target is operator.getitem and _float_dtype(item) == dtype:
                    item.meta["val"] = _fp32_like(item.meta["val"])
                    _users_read_unrounded(graph, item, dtype, boundaries_round, kept)
            continue
        if user.op == "output":
            with graph.inserting_after(node):
                rounded = _cast(graph, node, dtype)
            user.replace_input_with(node, rounded)
            continue
        user_dtype = _float_dtype(user)
        if user_dtype is None:
            if isinstance(user.meta.get("val"), (tuple, list)) and classify(user.target).op_class is OpClass.ATTENTION:
                with graph.inserting_before(user):  # a fused attention reads it as it was (its kernels take one
                    user.replace_input_with(node, _cast(graph, node, dtype))  # dtype: trial 58)
            elif isinstance(user.meta.get("val"), (tuple, list)):
                _results_cast_back(graph, user, dtype)
            continue
        if user in kept:
            continue  # (its operands are upcast by its own rewrite)
        with graph.inserting_before(user):  # its other 16-bit operands upcast too: one dtype for a matmul,
            def up(a: object) -> object:  # for an attention's mask too (an ``attn_mask=`` keyword, trial 58)
                return (_cast(graph, a, torch.float32) if isinstance(a, torch.fx.Node) and a is not node
                        and is_low_precision(_float_dtype(a)) else a)
            user.args = tuple(up(a) for a in user.args)
            user.kwargs = {k: up(v) for k, v in user.kwargs.items()}
        if is_low_precision(user_dtype) and classify(user.target).op_class is not OpClass.CAST:
            # it computes in fp32 now: so says its traced value, or a pass would take the cast back for a no-op
            user.meta["val"] = user.meta["val"].to(torch.float32)
        with graph.inserting_after(user):
            back = _cast(graph, user, user_dtype)
        user.replace_all_uses_with(back, delete_user_cb=lambda u, b=back: u is not b)
        if boundaries_round and classify(user.target).op_class in _OWN_BUFFER:
            keep_rounded(graph, back)


def _results_cast_back(graph: torch.fx.Graph, user: torch.fx.Node, dtype: torch.dtype) -> None:
    """A multi-output consumer of a value kept in fp32 (``topk``, ``sort``, ``max.dim``): its `dtype`
    results are fp32 now (so says its traced value), and each item taken of them is cast back to `dtype`
    (trial 64: a topk of a softmax kept in fp32 returned fp32 values its readers were traced as bf16,
    and the gradients came out 4x to 50x off)."""
    val = user.meta["val"]
    user.meta["val"] = type(val)(v.to(torch.float32) if isinstance(v, torch.Tensor) and v.dtype == dtype else v
                                 for v in val)
    for item in list(user.users):
        if item.target is operator.getitem and _float_dtype(item) == dtype:
            item.meta["val"] = item.meta["val"].to(torch.float32)
            with graph.inserting_after(item):
                back = _cast(graph, item, dtype)
            item.replace_all_uses_with(back, delete_user_cb=lambda u, b=back: u is not b)


def sign_flip_negations(gm: torch.fx.GraphModule) -> int:
    """Rewrite every floating-point ``aten.neg`` of `gm` as ``aten.mul(x, -1.0)``; return how many."""
    count = 0
    for node in list(gm.graph.nodes):
        if node.target is not torch.ops.aten.neg.default or _float_dtype(node) is None:
            continue
        with gm.graph.inserting_before(node):
            mul = gm.graph.call_function(torch.ops.aten.mul.Tensor, (node.args[0], -1.0))
        mul.meta.update(node.meta)
        node.replace_all_uses_with(mul)
        gm.graph.erase_node(node)
        count += 1
    if count:
        gm.graph.lint()
        gm.recompile()
    return count


def _call(graph: torch.fx.Graph, target: object, *args: object) -> torch.fx.Node:
    node = graph.call_function(target, args)
    vals = [a.meta.get("val") if isinstance(a, torch.fx.Node) else a for a in args]
    if all(
        not isinstance(a, torch.fx.Node) or isinstance(v, torch.Tensor) for a, v in zip(args, vals)
    ):
        node.meta["val"] = target(*vals)
    return node


def keep_rounded(graph: torch.fx.Graph, node: torch.fx.Node) -> None:
    """Round `node`'s in-kernel fp32 value to its 16-bit dtype with ops Inductor cannot elide.

    Under fusion-boundary rounding Inductor drops a ``.to(bf16).to(fp32)`` pair inside a kernel, so the
    rounding is written as RNE on the bit pattern. bf16: ``(bits + 0x7FFF + lsb) & 0xFFFF0000`` (lsb =
    bit 16, the tie-to-even carry), which carries into the exponent (max finite + half an ulp -> inf, as
    the cast does) and keeps -0.0, subnormals and inf. fp16 (`_rounded_to_fp16`): the same at bit 13
    for magnitudes from fp16's smallest normal 2**-14 up, above 65504 inf; below, ``(|x| + 0.5) - 0.5``,
    which rounds to a multiple of 2**-24 (fp32's spacing in [0.5, 1)) to even; the sign put back. NaN
    passes through unchanged (NaN lanes are zeroed before the integer add and restored after).
    """
    dtype = _float_dtype(node)
    if dtype not in (torch.bfloat16, torch.float16):
        raise RoundoffPlacementError(
            f"a kept rounding of {node.name} ({_op_name(node)}, {dtype}) under fusion-boundary rounding "
            f"is implemented for bf16 and fp16 only; use rounding=every_op for other formats"
        )
    aten = torch.ops.aten
    users = list(node.users)
    with graph.inserting_before(node.next):  # one anchor: new nodes land in creation order
        up = _cast(graph, node, torch.float32)
        nan = _call(graph, aten.isnan.default, up)
        finite = _call(graph, aten.where.ScalarSelf, nan, 0.0, up)
        if dtype == torch.bfloat16:
            rounded = _rne_bits(graph, finite, 16)
        else:
            rounded = _rounded_to_fp16(graph, finite)
        out = _cast(graph, _call(graph, aten.where.self, nan, up, rounded), dtype)
    for user in users:
        user.replace_input_with(node, out)


def _rne_bits(graph: torch.fx.Graph, value: torch.fx.Node, drop: int) -> torch.fx.Node:
    """`value` (fp32, no NaN) with its `drop` low mantissa bits rounded off to nearest, ties to even."""
    aten = torch.ops.aten
    bits = _call(graph, aten.view.dtype, value, torch.int32)
    lsb = _call(graph, aten.bitwise_and.Scalar, _call(graph, aten.bitwise_right_shift.Tensor_Scalar, bits, drop), 1)
    biased = _call(graph, aten.add.Tensor, _call(graph, aten.add.Tensor, bits, lsb), (1 << (drop - 1)) - 1)
    return _call(graph, aten.view.dtype, _call(graph, aten.bitwise_and.Scalar, biased, -(1 << drop)), torch.float32)


def _rounded_to_fp16(graph: torch.fx.Graph, value: torch.fx.Node) -> torch.fx.Node:
    """`value` (fp32, no NaN) rounded to the nearest fp16 value, ties to even, as fp32 (see `keep_rounded`)."""
    aten = torch.ops.aten
    magnitude = _call(graph, aten.abs.default, value)
    normal = _rne_bits(graph, magnitude, 13)
    normal = _call(graph, aten.where.ScalarSelf, _call(graph, aten.gt.Scalar, normal, 65504.0), float("inf"), normal)
    tiny = _call(graph, aten.sub.Tensor, _call(graph, aten.add.Tensor, magnitude, 0.5), 0.5)
    below = _call(graph, aten.lt.Scalar, magnitude, 2.0**-14)
    return _call(graph, aten.copysign.Tensor, _call(graph, aten.where.self, below, tiny, normal), value)


def forward_nodes(graph: torch.fx.Graph) -> list[torch.fx.Node]:
    """The nodes of a joint forward+backward graph that read no ``tangents`` input and that AOTAutograd
    did not trace in the backward (the forward's), in order. (A backward op's first steps can read
    forward values only: `_softmax_backward_data`'s cast of the saved bf16 softmax to fp32, trial 64.)"""
    backward: set[torch.fx.Node] = set()
    for n in graph.nodes:
        if ((n.op == "placeholder" and n.name.startswith("tangents")) or n.meta.get("autograd_backward")
                or n.meta.get("partitioner_tag") == "is_backward" or any(p in backward for p in n.all_input_nodes)):
            backward.add(n)
    return [n for n in graph.nodes if n not in backward]


def _matches_op(name: str, node: torch.fx.Node) -> bool:
    full = _op_name(node)
    return full == name or full.rsplit(".", 1)[0] == name


def check_override(
    label: str, override: OpOverride, emulates_casts: bool, fma_off: bool = False
) -> str | None:
    """The rewrite `override` needs ("keep_unrounded", "keep_rounded" or None); raise if it cannot
    be enforced.

    `fma_off`: contraction is off for the whole compilation (per-op rounding, or the backend turned
    the C++ contraction flag off because some override forbids an FMA), so ``contract_fma=False``
    holds everywhere, this node included. Under per-op rounding (`emulates_casts`) every result is
    rounded already, so a kept rounding (``round_result=True``, ``compute=STORAGE``) needs nothing."""
    if override.contract_fma is True or (
        override.contract_fma is False and not (emulates_casts or fma_off)
    ):
        raise RoundoffPlacementError(
            f"override {label}: contract_fma={override.contract_fma} cannot be set per node in "
            f"Inductor (contraction is a per-kernel Triton/C++ flag; on CPU roundoff turns it off for "
            f"the whole compilation to forbid one FMA, on GPU only per-op rounding turns it off); "
            f"drop it or change the policy's fma"
        )
    if override.round_result is False:  # (fused intermediates stay fp32 already; kernel boundaries do not)
        return "keep_unrounded"
    if override.round_result is True or override.compute is ComputePrecision.STORAGE:
        return None if emulates_casts else "keep_rounded"
    return None


class OverridePlacer:
    """Places a policy's op and node overrides on one aten graph of a compilation.

    `node_keys` maps stable ids to their (key, group size) from ``program_keys``; `numbering` numbers
    the keys across the compilation's graphs and collects what was placed (`GraphNumbering.finish`
    raises for ids that no graph held).
    """

    def __init__(
        self,
        op_overrides: Mapping[str, OpOverride],
        node_overrides: Mapping[str, OpOverride],
        node_keys: Mapping[str, tuple[NodeKey, int]],
        emulates_casts: bool,
        fma_off: bool = False,
        numbering: GraphNumbering | None = None,
    ) -> None:
        def needs(label: str, o: OpOverride) -> str | None:
            return check_override(label, o, emulates_casts, fma_off)

        self.op_rewrites = {n: a for n, o in op_overrides.items() if (a := needs(f"op {n!r}", o))}
        self.node_rewrites = {
            nid: (node_keys[nid], a)
            for nid, o in node_overrides.items()
            if (a := needs(f"node {nid!r}", o))
        }
        self.placed: dict[str, str] = {}
        self.emulates_casts = emulates_casts
        self.numbering = numbering if numbering is not None else GraphNumbering()
        self.numbering.rewrites.update(self.node_rewrites)

    @property
    def empty(self) -> bool:
        return not self.op_rewrites and not self.node_rewrites

    def apply(self, gm: torch.fx.GraphModule | torch.fx.Graph, joint: bool = False, backward: bool = False) -> list[str]:
        """Rewrite `gm` in place; return a line per placed override. `joint`: `gm` is AOTAutograd's joint
        forward+backward graph, before the partitioner splits it (its forward nodes are keyed; a kept
        value's backward readers read it in fp32 too, and the forward saves it so). `backward`: a
        partitioned backward graph, which takes op overrides only (node ids name forward nodes)."""
        graph = gm if isinstance(gm, torch.fx.Graph) else gm.graph
        nodes = forward_nodes(graph) if joint else graph.nodes
        keys = keys_by_node([n for n in nodes if not made_by_factory(n)], stack_source)
        by_key = ({key: node for node, key in self.numbering.number(keys).items()}
                  if self.node_rewrites and not backward else {})
        targets: list[tuple[str, torch.fx.Node, str]] = []
        for nid, ((key, _), action) in self.node_rewrites.items():
            if nid in self.placed or key not in by_key:
                continue
            targets.append((nid, by_key[key], action))
        for name, action in self.op_rewrites.items():  # (every node of the graph, backward ones too; a kept
            # rounding of an fp32 value is no rounding: Inductor's fp32 index_put of an upsample's backward, trial 80)
            targets += [(f"op {name}", n, action) for n in graph.nodes if n.op == "call_function" and _matches_op(name, n)
                        and not (action == "keep_rounded" and _float_dtype(n) in (torch.float32, torch.float64))]
        kept = {node for _, node, action in targets if action == "keep_unrounded"}
        for label, node, action in targets:
            if action == "keep_unrounded":
                keep_unrounded(graph, node, boundaries_round=not self.emulates_casts, kept=kept)
            else:
                keep_rounded(graph, node)
            self.placed[label] = f"{label} -> {node.name} ({_op_name(node)}, {action})"
            if label in self.node_rewrites:
                self.numbering.placed[label] = self.placed[label]
        if targets:
            graph.lint()
            if isinstance(gm, torch.fx.GraphModule):
                gm.recompile()
        return [self.placed[label] for label, _, _ in targets]
