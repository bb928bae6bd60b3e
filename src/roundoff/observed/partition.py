"""Compile a captured training step the way torch.compile does: forward and backward apart.

roundoff captures forward and backward as one aten graph (the joint graph). Compiled as one graph,
Inductor may fuse across the forward/backward boundary and keeps no activation for a backward; a
real ``torch.compile`` of a training step does neither: AOTAutograd splits the joint graph with
its min-cut partitioner (``min_cut_rematerialization_partition``: which activations the forward
saves, which cheap values the backward recomputes) and Inductor compiles the forward and the
backward as two programs. `compile_staged(..., partitioned=True)` does the same to roundoff's
captured joint graph: the loss's gradient seed (``ones_like(loss)``) becomes the backward's
tangent input, the default partitioner splits the labelled graph, and each part is compiled by
Inductor and tapped on its own. Partitioning and compilation copy each node's roundoff id, so
every buffer of either part (a value the backward recomputes included) maps to the Program node
whose value it holds.

Checked against real ``torch.compile`` of ``loss.backward()`` (tests/observed/test_partition.py,
a bf16 MLP): the same forward kernels (source), the same backward kernels by name, and the same
loss and gradients, bit for bit. Not yet the same backward *code*: each part is compiled here by
``compile_fx`` as an inference graph, while torch.compile compiles the backward with
``compile_fx_backward`` (it may reuse the saved activations' memory in place, so its kernels take
``in_out_ptr`` arguments) after Inductor's joint-graph passes (``compile_fx.partition_fn``).
Calling those directly needs the joint graph decomposed by Inductor's table first (roundoff's
graph keeps ``aten.t``, which Inductor lowers only after decomposing it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from roundoff.capture.program import Program
from roundoff.observed.taps import (
    CompiledProgram,
    ObserveError,
    compile_graph,
    compile_program,
    labelled_graph,
)

TANGENT = "tangents_1"  # AOTAutograd's name for the first tangent input: its partitioner keys on it


@dataclass(frozen=True)
class Stage:
    """One compiled program of a step: ``""`` (the whole joint graph), ``"forward"`` or ``"backward"``."""

    label: str
    compiled: CompiledProgram


@dataclass(frozen=True)
class Staged:
    """The compiled program(s) of a captured program and how to chain them into its outputs."""

    stages: tuple[Stage, ...]
    num_forward_outputs: int
    saved: tuple[str, ...] = ()  # names of the forward part's outputs after the program's own
    backward_inputs: tuple[str, ...] = ()  # the backward part's inputs, by those names (and TANGENT)
    tangent: torch.Tensor | None = None  # the gradient seed: 1 in the loss's dtype

    def run(self, inputs: Sequence[Any], call: Callable[[Stage, list[Any]], Sequence[Any]]) -> tuple:
        """The program's outputs (forward outputs, then gradients), each stage run by
        ``call(stage, its inputs)`` (which returns that stage's outputs)."""
        if len(self.stages) == 1:
            return tuple(call(self.stages[0], list(inputs)))
        forward, backward = self.stages
        outs = call(forward, list(inputs))
        values = dict(zip(self.saved, outs[self.num_forward_outputs:]))
        values[TANGENT] = self.tangent
        grads = call(backward, [values[name] for name in self.backward_inputs])
        return tuple(outs[: self.num_forward_outputs]) + tuple(grads)

    @property
    def source(self) -> str:
        """The generated wrapper module(s), each headed by its stage when there are two."""
        if len(self.stages) == 1:
            return self.stages[0].compiled.source
        return "\n".join(f"# ===== {s.label} (Inductor wrapper module) =====\n{s.compiled.source}" for s in self.stages)


def _seed(gm: torch.fx.GraphModule, program: Program) -> torch.fx.Node:
    """The ``ones_like(loss)`` node autograd seeded the backward with (capture's backward without
    cotangents differentiates the sum of the outputs)."""
    seeds = [n for n in gm.graph.nodes if n.op == "call_function" and n.target == torch.ops.aten.ones_like.default
             and getattr(n.meta.get("val"), "dim", lambda: -1)() == 0]
    if len(seeds) != 1:
        raise ObserveError(
            f"program {program.name!r}: partitioned observe needs a backward seeded by one scalar loss "
            f"(found {len(seeds)} scalar ones_like seeds; capture without cotangents, or observe unpartitioned)")
    return seeds[0]


def split_joint(program: Program, device: torch.device) -> tuple[torch.fx.GraphModule, torch.fx.GraphModule]:
    """The labelled joint graph of `program` split by AOTAutograd's default partitioner into the
    forward graph (the program's forward outputs, then the values saved for the backward) and the
    backward graph (saved values and the tangent in; the gradients out)."""
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    if not program.backward:
        raise ObserveError(f"program {program.name!r} has no backward: capture it with backward=True to "
                           "observe forward and backward partitioned")
    gm = labelled_graph(program, device)
    seed = _seed(gm, program)
    first = next(n for n in gm.graph.nodes if n.op != "placeholder")
    with gm.graph.inserting_before(first):
        tangent = gm.graph.placeholder(TANGENT)
    tangent.meta["val"] = seed.meta["val"]
    seed.replace_all_uses_with(tangent)
    gm.graph.erase_node(seed)
    gm.recompile()
    try:
        return min_cut_rematerialization_partition(gm, None, num_fwd_outputs=program.num_forward_outputs)
    except Exception as exc:  # a private torch API: say what failed in one line
        raise ObserveError(f"program {program.name!r}: AOTAutograd's partitioner failed: {type(exc).__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else ''}") from None


def _outputs(gm: torch.fx.GraphModule) -> list[str]:
    out = next(n for n in gm.graph.nodes if n.op == "output")
    return [a.name if isinstance(a, torch.fx.Node) else "" for a in out.args[0]]


def compile_staged(program: Program, inputs: Sequence[torch.Tensor], backend: str = "inductor",
                   partitioned: bool = False) -> Staged:
    """`program` compiled by Inductor: one graph, or (`partitioned`) forward and backward apart as
    torch.compile compiles a training step (see the module docstring)."""
    if not partitioned:
        return Staged((Stage("", compile_program(program, inputs, backend)),), program.num_forward_outputs)
    if backend != "inductor":
        raise ObserveError(f"backend {backend!r}: observe supports 'inductor' only")
    device = next((x.device for x in inputs if isinstance(x, torch.Tensor)), torch.device("cpu"))
    fw_gm, bw_gm = split_joint(program, device)
    forward = compile_graph(fw_gm, inputs, f"{program.name} (forward)")
    with torch.no_grad():
        outs = forward.run(*inputs)
    nfo = program.num_forward_outputs
    saved = tuple(_outputs(fw_gm)[nfo:])
    backward_inputs = tuple(n.name for n in bw_gm.graph.nodes if n.op == "placeholder")
    seed = next(n for n in bw_gm.graph.nodes if n.name == TANGENT).meta["val"]
    tangent = torch.ones((), dtype=seed.dtype, device=device)
    values = dict(zip(saved, outs[nfo:]))
    values[TANGENT] = tangent
    backward = compile_graph(bw_gm, [values[n] for n in backward_inputs], f"{program.name} (backward)")
    return Staged((Stage("forward", forward), Stage("backward", backward)), nfo, saved, backward_inputs, tangent)
