"""Values a kernel stores rounded and also uses unrounded, and how the comparison reads them.

Inductor may store a bf16/fp16 value for later kernels (rounded) and use the same value unrounded
in the kernel that computes it (a residual sum stored for the next block and squared in fp32 for
its RMSNorm). Which reading a user of it saw is not known from outside the kernel, so `compare`
judges those users under both: once as the graph says (rounded), once with `unrounded_reads`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

import torch
import torch.fx

from roundoff.capture.program import NODE_ID, Program, base_id
from roundoff.observed.buffers import Observed, narrow_float
from roundoff.observed.causes import local_region
from roundoff.observed.compare import substitution_nodes


def stored_and_reused(program: Program, observed: Mapping[str, Observed]) -> dict[str, set[str]]:
    """Observed bf16/fp16 buffers that a kernel stores and, in the same launch, may also use unrounded
    (a user of the node is fused into, or is, another buffer of that launch: SiLU stored for the
    backward and multiplied in fp32 in the same loop; a residual sum stored for the next block and
    squared unrounded for its RMSNorm), each with those users' ids. Which reading the kernel used is
    not known from outside, so `compare_pair` judges those users under both (`unrounded_reads`)."""
    by_launch: dict[int, set[str]] = {}
    calls = {n.meta.get(NODE_ID): n for n in program.nodes() if n.op == "call_function"}
    for nid, obs in observed.items():  # what each launch computes: its buffers' regions, a sum it never stores too
        by_launch.setdefault(obs.launch, set()).update((nid, *local_region(program, nid, obs, observed, calls)))
    users = {n.meta.get(NODE_ID): {u.meta.get(NODE_ID) for u in n.users} for n in program.nodes()}
    reused = {}
    for nid, obs in observed.items():
        readers = users.get(nid, set()) & (by_launch[obs.launch] - {nid})
        if narrow_float(obs.value.dtype) and readers:
            reused[nid] = readers
    return reused


UNROUNDED = "~unrounded"  # suffix of a twin's roundoff id (`unrounded_reads`)


@contextlib.contextmanager
def unrounded_reads(graph: torch.fx.Graph, reads: Mapping[str, set[str]]) -> Iterator[None]:
    """For the duration, each node of `reads` in `graph` has a twin: the same op on the same operands,
    id ``<id>~unrounded`` (no plan decision, so no side rounds it, and observe does not substitute
    it), read instead of the node by the users listed (by the id they were made from). Those users
    see the value the kernel kept in registers; every other user, a later kernel included, still
    reads the node, i.e. the buffer the kernel stored. The graph is edited in place (the plan's
    numerics know its nodes) and restored on exit."""
    twins: list[tuple[torch.fx.Node, torch.fx.Node, list[torch.fx.Node]]] = []
    try:
        for node, nid in substitution_nodes(graph, set(reads)).items():
            readers = [u for u in node.users if base_id(u.meta.get(NODE_ID, "")) in reads[nid]]
            if not readers:
                continue
            with graph.inserting_after(node):
                twin = graph.create_node(node.op, node.target, node.args, node.kwargs, name=f"{node.name}_unrounded")
            twin.meta = {**node.meta, NODE_ID: f"{nid}{UNROUNDED}"}
            for u in readers:
                u.replace_input_with(node, twin)
            twins.append((node, twin, readers))
        yield
    finally:
        for node, twin, readers in reversed(twins):  # a later twin may read an earlier one
            for u in readers:
                u.replace_input_with(twin, node)
            graph.erase_node(twin)


