"""Rewrites of a Program that keep stable ids: decomposition and common-subexpression elimination."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.fx

from roundoff.capture.errors import CaptureError
from roundoff.capture.program import NODE_ID, Program
from roundoff.capture.reduction_lowerings import REDUCTION_LOWERINGS
from roundoff.capture.retrace import (
    REWRITES_ONLY,
    TRACER_ERRORS,
    assign_rewritten_ids,
    decomposition_table,
    retrace,
)


def decompose(program: Program, names: Sequence[str], *, lowerings: bool = True) -> Program:
    """`program` re-traced with the union of the named decomposition tables (`DECOMPOSITION_SETS`).

    Ids survive: a node left as it was keeps its id; the nodes that decomposing node ``n7`` produced
    get ``"n7.0"``, ``"n7.1"``, ... and n7's source line. Inputs, outputs and their order are unchanged.
    Decompositions may compute differently (e.g. a softmax written as exp/sum/div, or with an fp32
    upcast inside), so values can change in the last bits; with no names the program is returned as is.
    ``"inductor"`` also lowers 16-bit means and variances as Inductor does
    (`roundoff.capture.reduction_lowerings`), unless `lowerings` is false: the graph Inductor receives,
    which it lowers so afterwards.
    """
    table = decomposition_table(names)
    if "inductor" in names and any("max_pool" in str(n.target) for n in program.graph.nodes):
        # Inductor's max-pool decomposition reads ``torch._inductor.lowering`` as an attribute at call time
        # (``should_fallback_max_pool_with_indices``) without importing it; importing it costs ~0.7 s, so
        # only a program that pools pays it (else tracing fails unless the user happened to import it)
        import torch._inductor.lowering  # noqa: F401
    if "inductor" in names and lowerings:
        table.update(REDUCTION_LOWERINGS)
    table = _keep_pairs_consistent(table, program.graph)
    if not any(n.op == "call_function" and n.target in table and REWRITES_ONLY.get(n.target, bool)(n)
               for n in program.graph.nodes):
        return program  # (nothing to decompose: no retrace; the eager set's ops are rare)
    try:
        gm = retrace(program.graph_module, program.example_inputs, decomposition_table=table)
    except (
        TRACER_ERRORS
    ) as exc:  # a decomposition that fails on this graph: name it, no tracer traceback
        raise CaptureError(
            f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:200]}",
            construct=f"decomposition {list(names)} failed",
        ) from None
    gm.graph.eliminate_dead_code()  # first: dead scratch nodes of a decomposition must not take ids
    assign_rewritten_ids(gm)
    gm.recompile()
    return program.rewritten(gm)


def _keep_pairs_consistent(table: dict[Any, Any], graph: torch.fx.Graph) -> dict[Any, Any]:
    """Leave op ``X`` whole when the graph also holds ``X_backward`` and the table keeps that whole.

    The backward kernel consumes the forward's auxiliary outputs in its own convention: torch 2.13's
    core_aten table decomposes ``_scaled_dot_product_flash_attention_for_cpu`` but not its backward,
    whose gradients then come out wrong (off by O(10) on random fp64 inputs), since the decomposed
    forward's logsumexp is not what the kernel expects.
    """
    by_name = {str(n.target): n.target for n in graph.nodes if n.op == "call_function"}
    for name, target in by_name.items():
        packet, _, overload = name.rpartition(".")
        if packet.endswith("_backward") and target not in table:
            forward = by_name.get(f"{packet[: -len('_backward')]}.{overload}")
            if forward is not None and forward in table:
                table = {k: v for k, v in table.items() if k is not forward}
    return table


def _is_pure(n: torch.fx.Node) -> bool:
    if n.op != "call_function" or not isinstance(n.target, torch._ops.OpOverload):
        return False
    if n.target._schema.is_mutable:
        return False
    return torch.Tag.nondeterministic_seeded not in n.target.tags


def _freeze(arg: Any) -> Any:
    """A hashable key for an FX argument (nodes by identity); raises TypeError if not hashable."""
    if isinstance(arg, (list, tuple)):
        return (type(arg).__name__, tuple(_freeze(a) for a in arg))
    if isinstance(arg, dict):
        return ("dict", tuple(sorted((k, _freeze(v)) for k, v in arg.items())))
    if isinstance(arg, float):
        return ("float", "nan" if math.isnan(arg) else arg.hex())  # hex keeps -0.0 apart from 0.0
    hash(arg)
    return (type(arg).__name__, arg)


def eliminate_common_subexpressions(program: Program) -> tuple[Program, dict[str, str]]:
    """Merge identical pure nodes (same op, same inputs, same arguments) and repeated fetches of one
    constant, as Inductor's CSE does.

    Returns the new program and ``{removed id: kept id}``; the kept node is the first in graph order
    and keeps its id and source. Random and in-place ops are never merged. Values are unchanged: merged
    nodes compute the same thing from the same inputs.
    """
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    seen: dict[Any, torch.fx.Node] = {}
    removed: dict[str, str] = {}
    for n in program.graph.nodes:
        if n.op == "get_attr":  # the same constant fetched twice is one value
            key = ("get_attr", n.target)
            if key in seen:
                env[n] = seen[key]
                removed[n.meta[NODE_ID]] = seen[key].meta[NODE_ID]
            else:
                env[n] = seen[key] = graph.node_copy(n, lambda a: env[a])
        elif _is_pure(n):
            try:
                mapped = torch.fx.map_arg(
                    (n.args, n.kwargs), lambda a: env[a]
                )  # inputs after merging
                # (a kernel's copy of a node, ``n7@k2``, is kept apart from the node: a plan made it)
                key = (n.target, _freeze(mapped), str(n.meta.get(NODE_ID, "")).partition("@")[2])
            except TypeError:
                key = None
            if key is not None and key in seen:
                env[n] = seen[key]
                removed[n.meta[NODE_ID]] = seen[key].meta[NODE_ID]
                continue
            env[n] = graph.node_copy(n, lambda a: env[a])
            if key is not None:
                seen[key] = env[n]
        else:
            env[n] = graph.node_copy(n, lambda a: env[a])
    gm = torch.fx.GraphModule(program.graph_module, graph)
    return program.rewritten(gm), removed
