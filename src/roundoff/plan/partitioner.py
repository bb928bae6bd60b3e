"""Which forward values torch.compile saves for a training step's backward, asked of its partitioner.

roundoff captures forward and backward as one joint graph; torch.compile splits a training step with
AOTAutograd's min-cut partitioner (Inductor's ``compile_fx.partition_fn``), and what it saves is a
forward output, stored in its dtype: the forward's later kernels read it rounded. Which values it
saves depends on costs no local rule reproduces (a hand-written LayerNorm on a graph input saves its
16-bit mean and reads it rounded; the same LayerNorm on an ``unfold``'s output saves the normalized
values instead, and its mean stays fp32 in the kernel: measured, CPU, torch 2.13). So the joint graph
is taken through the steps torch.compile takes (the loss's gradient seed as the tangent input, a
retrace through Inductor's decomposition table, the partitioner) and the saved values are read off,
each by the roundoff id of the node it was made from. No code is generated.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.fx

from roundoff.capture.program import NODE_ID, Program

TANGENT = "tangents_1"  # AOTAutograd's name for the first tangent input: its partitioner keys on it
CUSTOM_KEY = "roundoff_id"  # where each node of a retraced graph keeps its roundoff id (``meta["custom"]``)

_SAVED: weakref.WeakKeyDictionary[torch.fx.GraphModule, Mapping[str, str | None] | None] = weakref.WeakKeyDictionary()


class PartitionError(ValueError):
    """The joint graph cannot be split as torch.compile splits it (its message says why)."""


def label(gm: torch.fx.GraphModule) -> None:
    """Put each node's roundoff id in ``meta["custom"]``, which retracing copies to what it makes."""
    for n in gm.graph.nodes:
        n.meta["custom"] = {**(n.meta.get("custom") or {}), CUSTOM_KEY: n.meta[NODE_ID]}


def custom_id(node: Any) -> str | None:
    """The roundoff id a retraced node carries (`label`), if any."""
    return (getattr(node, "meta", {}).get("custom") or {}).get(CUSTOM_KEY)


def with_tangent(gm: torch.fx.GraphModule, name: str) -> torch.fx.GraphModule:
    """`gm` (a labelled joint graph, changed in place) with the ``ones_like(loss)`` node autograd seeded
    the backward with (capture without cotangents differentiates the sum of the outputs) replaced by
    a last input, `TANGENT`; `PartitionError` unless there is exactly one such scalar seed."""
    seeds = [n for n in gm.graph.nodes if n.op == "call_function" and n.target == torch.ops.aten.ones_like.default
             and getattr(n.meta.get("val"), "dim", lambda: -1)() == 0]
    if len(seeds) != 1:
        raise PartitionError(
            f"program {name!r}: partitioning needs a backward seeded by one scalar loss (found {len(seeds)} "
            "scalar ones_like seeds; capture without cotangents)")
    first = next(n for n in gm.graph.nodes if n.op != "placeholder")
    with gm.graph.inserting_before(first):
        tangent = gm.graph.placeholder(TANGENT)
    tangent.meta["val"] = seeds[0].meta["val"]
    seeds[0].replace_all_uses_with(tangent)
    gm.graph.erase_node(seeds[0])
    gm.recompile()
    return gm


def decomposed(joint: torch.fx.GraphModule, inputs: Sequence[Any]) -> torch.fx.GraphModule:
    """`joint` retraced through Inductor's decomposition table, as AOTAutograd traces a training step
    for torch.compile: fake values in ``meta["val"]``, each node keeping the roundoff id of the node it
    was made from (``meta["custom"]``), the inputs keeping their names."""
    import torch.fx.traceback as fx_traceback
    from torch._inductor.decomposition import select_decomp_table
    from torch.fx.experimental.proxy_tensor import make_fx

    names = [n.name for n in joint.graph.find_nodes(op="placeholder")]
    with fx_traceback.preserve_node_meta():
        gm = make_fx(torch.fx.Interpreter(joint).run, decomposition_table=select_decomp_table(),
                     tracing_mode="fake", _allow_non_fake_inputs=True)(*inputs)  # (constants: real tensors)
    for node, name in zip(gm.graph.find_nodes(op="placeholder"), names):
        node.name = node.target = name
    gm.recompile()
    return gm


def fake_values(gm: torch.fx.GraphModule, op: str) -> list[Any]:
    """The fake values of `gm`'s inputs (``op="placeholder"``) or outputs (``op="output"``)."""
    if op == "placeholder":
        return [n.meta.get("val") for n in gm.graph.find_nodes(op="placeholder")]
    out = next(reversed(gm.graph.find_nodes(op="output"))).args[0]
    return [n.meta.get("val") if isinstance(n, torch.fx.Node) else None for n in out]


def saved_values(program: Program) -> Mapping[str, str | None] | None:
    """The forward values torch.compile's partitioner saves for `program`'s backward: {roundoff id of the
    captured node whose value it is: None}, and {``"<id>.<k>"``: its op} for an intermediate of that
    node's decomposition (the k-th node made from it, as the plan numbers a decomposition's nodes: a
    16-bit BatchNorm's saved mean and 1/std, cast to 16 bits on CPU; `roundoff.plan.saved` places it
    where a node of that id and op exists). None where the partitioner cannot be asked (no backward,
    cotangent inputs, a torch without Inductor's ``partition_fn``, or a graph it fails on). Computed
    once per captured graph."""
    gm = program.graph_module
    if gm not in _SAVED:
        try:
            _SAVED[gm] = _ask_partitioner(program)
        except Exception:  # noqa: BLE001 (private torch APIs: the caller falls back to its own rule)
            _SAVED[gm] = None
    return _SAVED[gm]


def _ask_partitioner(program: Program) -> Mapping[str, str | None] | None:
    from torch._guards import TracingContext, tracing
    from torch._inductor import compile_fx as inductor
    from torch._inductor.virtualized import V

    if not program.backward or not hasattr(inductor, "partition_fn"):
        return None
    joint = copy.deepcopy(program.graph_module)
    label(joint)
    joint = with_tangent(joint, program.name)
    seed = next(n for n in joint.graph.nodes if n.name == TANGENT).meta["val"]
    inputs = [*program.example_inputs, torch.ones((), dtype=seed.dtype, device=seed.device)]
    graph = decomposed(joint, inputs)
    last = {i: n for n in graph.graph.nodes if (i := custom_id(n)) is not None}
    fake_mode = fake_values(graph, "placeholder")[0].fake_mode
    with V.set_fake_mode(fake_mode), tracing(TracingContext(fake_mode)):
        forward, _ = inductor.partition_fn(graph, inputs, num_fwd_outputs=program.num_forward_outputs)
    out = next(reversed(forward.graph.find_nodes(op="output"))).args[0]
    made: dict[str, list[str]] = {}  # captured id -> names of the nodes made from it, in graph order
    for n in graph.graph.nodes:
        if (i := custom_id(n)) is not None:
            made.setdefault(i, []).append(n.name)
    saved: dict[str, str | None] = {}
    for n in out[program.num_forward_outputs:]:
        nid = custom_id(n)
        if nid is None or nid not in last:
            continue
        if last[nid].name == n.name:  # (the partitioner copies names)
            saved[nid] = None
        elif n.name in made[nid]:  # an intermediate of its decomposition: its ordinal, as the plan numbers them
            saved[f"{nid}.{made[nid].index(n.name)}"] = str(n.target)
    return saved
