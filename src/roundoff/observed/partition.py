"""Compile a captured training step the way torch.compile does: forward and backward apart.

roundoff captures forward and backward as one aten graph (the joint graph). Compiled as one graph,
Inductor may fuse across the forward/backward boundary and keeps no activation for a backward; a
real ``torch.compile`` of a training step does neither. `compile_staged(..., partitioned=True)` takes
roundoff's captured joint graph through the steps of Inductor's ``compile_fx`` for a training graph:
the loss's gradient seed (``ones_like(loss)``) becomes the backward's tangent input, the graph is
retraced through Inductor's decomposition table (as AOTAutograd traces it), Inductor's joint-graph
passes and its min-cut partitioner split it (``compile_fx.partition_fn``: which activations the
forward saves, which cheap values the backward recomputes), the forward is compiled as a training
forward (``compile_fx_forward``) and the backward by ``compile_fx_backward`` with AOTAutograd's
donated buffers (saved activations whose memory the backward reuses in place: its kernels take
``in_out_ptr`` arguments). Each part is tapped on its own; every step copies each node's roundoff
id, so every buffer of either part (a value the backward recomputes included) maps to the Program
node whose value it holds.

Checked against real ``torch.compile`` of ``loss.backward()`` (tests/observed/test_partition.py):
the same forward and backward kernels (source), the same loss and gradients, bit for bit.
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
    mark_decomposition_steps,
)
from roundoff.plan.partitioner import TANGENT, PartitionError, decomposed, fake_values, with_tangent


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


def _joint(program: Program, device: torch.device) -> torch.fx.GraphModule:
    """The labelled joint graph of `program` with its gradient seed as the last input, `TANGENT`."""
    if not program.backward:
        raise ObserveError(f"program {program.name!r} has no backward: pass backward=True (or capture it with "
                           "backward=True) to observe forward and backward partitioned")
    try:
        return with_tangent(labelled_graph(program, device), program.name)
    except PartitionError as exc:
        raise ObserveError(f"{exc}, or observe unpartitioned") from None


def _donated(forward: torch.fx.GraphModule, backward: torch.fx.GraphModule, num_forward_outputs: int) -> list[int]:
    """The backward's inputs whose memory it may reuse (AOTAutograd's donated buffers: the saved
    values that alias no forward input, program output or gradient), as torch.compile marks them."""
    from torch._functorch._aot_autograd.graph_compile import collect_fw_donated_buffer_idxs

    outs = fake_values(forward, "output")
    return collect_fw_donated_buffer_idxs(fake_values(forward, "placeholder"), outs[:num_forward_outputs],
                                          fake_values(backward, "output"), outs[num_forward_outputs:])


def _boxed(code: Callable[[list], Any]) -> Callable[..., Any]:
    """Inductor's compiled code (called with a list of inputs) as a function of the inputs."""
    return lambda *xs: code(list(xs))


def _config_extra(inductor: Any, gm: torch.fx.GraphModule) -> Any:
    """Inductor's per-compile settings (cudagraphs...), made from the graph where Inductor takes it
    (torch 2.13), else from its config module (torch 2.11)."""
    import inspect

    make = inductor.create_compiler_config_extra
    takes_graph = "gm" in inspect.signature(make).parameters
    return make(gm if takes_graph else inductor.config)


def _compile_training(program: Program, inputs: Sequence[torch.Tensor], device: torch.device) -> Staged:
    """Forward and backward compiled as torch.compile compiles a training step (`_compile_fx_main`):
    the joint graph decomposed by Inductor's table, Inductor's joint-graph passes and min-cut
    partition (``compile_fx.partition_fn``), the forward by ``compile_fx_forward`` as a training
    forward and the backward by ``compile_fx_backward`` with AOTAutograd's donated buffers."""
    import types

    from torch._guards import TracingContext, tracing
    from torch._inductor import compile_fx as inductor
    from torch._inductor.virtualized import V

    needs = ("partition_fn", "compile_fx_forward", "compile_fx_backward", "create_compiler_config_extra")
    if missing := [name for name in needs if not hasattr(inductor, name)]:
        raise ObserveError(f"observe --partitioned compiles a training step through Inductor's "
                           f"{', '.join(missing)}, which torch {torch.__version__} lacks: use torch >= 2.11, "
                           "or observe the joint graph (without --partitioned)")
    joint = _joint(program, device)
    seed = next(n for n in joint.graph.nodes if n.name == TANGENT).meta["val"]
    tangent = torch.ones((), dtype=seed.dtype, device=device)
    joint_inputs = [*inputs, tangent]
    try:
        retraced = decomposed(joint, joint_inputs)
        mark_decomposition_steps(retraced)  # (the parts may hold a step alone: a recomputed upcast)
        fake_mode = fake_values(retraced, "placeholder")[0].fake_mode
        nfo = program.num_forward_outputs
        with V.set_fake_mode(fake_mode), tracing(TracingContext(fake_mode)):
            fw_gm, bw_gm = inductor.partition_fn(retraced, joint_inputs, num_fwd_outputs=nfo)
            # named before compiling: Inductor's post-grad passes rewrite the graphs in place
            saved = tuple(_outputs(fw_gm)[nfo:])
            backward_inputs = tuple(n.name for n in bw_gm.graph.find_nodes(op="placeholder"))
            TracingContext.get().fw_metadata = types.SimpleNamespace(  # what Inductor reads of AOTAutograd's
                bw_donated_idxs=_donated(fw_gm, bw_gm, nfo), num_mutated_inp_runtime_indices=0,
                static_input_indices=[])
            extra = _config_extra(inductor, retraced)

            def forward_compiler(gm: torch.fx.GraphModule, xs: list) -> Callable[..., Any]:
                return _boxed(inductor.compile_fx_forward(gm, xs, num_orig_model_outputs=nfo, num_example_inputs=len(xs),
                                                          compiler_config_extra=extra, is_inference=False))

            def backward_compiler(gm: torch.fx.GraphModule, xs: list) -> Callable[..., Any]:
                return _boxed(inductor.compile_fx_backward(gm, xs, compiler_config_extra=extra))

            with TracingContext.report_output_strides() as strides:
                forward = compile_graph(fw_gm, fake_values(fw_gm, "placeholder"), f"{program.name} (forward)",
                                        forward_compiler)
            backward = compile_graph(bw_gm, _restrided(bw_gm, saved, strides[nfo:]), f"{program.name} (backward)",
                                     backward_compiler)
    except ObserveError:
        raise
    except Exception as exc:  # private torch APIs: say what failed, in one line (--debug: the cause)
        raise ObserveError(f"program {program.name!r}: splitting its training step as torch.compile does failed: "
                           f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}") from exc
    return Staged((Stage("forward", forward), Stage("backward", backward)), nfo, saved, backward_inputs, tangent)


def _restrided(bw_gm: torch.fx.GraphModule, saved: tuple[str, ...], strides: list) -> list:
    """The backward's example inputs, each saved activation with the strides the compiled forward gives
    it (Inductor may lay a convolution's output out channels-last), as AOTAutograd compiles a backward;
    the compiled backward asserts them."""
    values = fake_values(bw_gm, "placeholder")
    by_name = dict(zip(saved, strides))
    for i, node in enumerate(bw_gm.graph.find_nodes(op="placeholder")):
        real = by_name.get(node.name)
        if real is not None and isinstance(values[i], torch.Tensor) and tuple(values[i].stride()) != tuple(real):
            values[i] = values[i].as_strided(values[i].size(), real)
    return values


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
    return _compile_training(program, inputs, device)
