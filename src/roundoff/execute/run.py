"""Public entry points: emulated run of a plan, fp64 oracle run, and the real eager run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from roundoff.capture.program import Program
from roundoff.execute.devices import inputs_device, on_device, relocated, relocation
from roundoff.execute.interpreter import Lockstep
from roundoff.execute.node_numerics import OracleNumerics, PlanNumerics
from roundoff.execute.transcendental import TranscendentalImpl
from roundoff.plan.model import Plan


def complete_inputs(program: Program, inputs: Sequence[Any]) -> tuple:
    """`inputs` validated against the capture's example inputs (dtype, shape; no meta-device tensors).

    No inputs at all means the capture's example inputs. The callable's own arguments may be followed
    by none of the remaining graph inputs (a module's parameters and buffers): those are then taken from
    the capture's example inputs; fewer arguments than the callable takes are refused.
    """
    inputs = (inputs,) if isinstance(inputs, torch.Tensor) else tuple(inputs)  # one tensor: one input, not its rows
    own = program.user_inputs or 0
    if inputs and len(inputs) < own:  # (trial 57: a forgotten argument was taken from the capture, silently)
        raise ValueError(
            f"program {program.name!r} takes {own} argument(s) ({', '.join(program.input_names[:own])}), got "
            f"{len(inputs)}; pass each (a module's parameters and buffers, which follow, come from the capture)"
        )
    if len(inputs) < len(program.input_names):
        inputs = inputs + tuple(x.detach() for x in program.example_inputs[len(inputs):])
    if len(inputs) != len(program.input_names):
        raise ValueError(
            f"program {program.name!r} takes {len(program.input_names)} inputs "
            f"({', '.join(program.input_names)}), got {len(inputs)}; pass one tensor per input"
        )
    for name, x, ex in zip(program.input_names, inputs, program.example_inputs):
        if isinstance(ex, torch.Tensor) and (
            not isinstance(x, torch.Tensor) or x.dtype != ex.dtype or tuple(x.shape) != tuple(ex.shape)
        ):
            got = f"{x.dtype} {tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(
                f"input {name!r} of program {program.name!r}: expected {ex.dtype} {tuple(ex.shape)}, "
                f"got {got}; pass inputs like the example inputs it was captured with"
            )
    for name, x in zip(program.input_names, inputs):
        if isinstance(x, torch.Tensor) and x.is_meta:
            raise ValueError(
                f"input {name!r} of program {program.name!r} is on the meta device: inputs on the meta device "
                "have no values; pass real tensors (CPU or CUDA), e.g. torch.randn(shape) instead of "
                "torch.empty(shape, device='meta')"
            )
    program.check_inputs(inputs)  # a program specialized at a graph break runs on its inputs only
    return tuple(x.detach() if isinstance(x, torch.Tensor) else x for x in inputs)


def plan_numerics(plan: Plan, transcendentals: str | TranscendentalImpl = "eager") -> PlanNumerics:
    """The emulator side for `plan`; ``transcendentals="inductor"`` uses Inductor's kernels."""
    impl = transcendentals if isinstance(transcendentals, TranscendentalImpl) else TranscendentalImpl(transcendentals)
    return PlanNumerics(plan, None if impl.name == "eager" else impl)


def run_plan(
    plan: Plan, inputs: Sequence[Any], *, transcendentals: str | TranscendentalImpl = "eager"
) -> tuple[torch.Tensor, ...]:
    """Outputs of `plan.program` with the plan's numerics emulated, in their storage dtypes."""
    inputs = complete_inputs(plan.program, inputs)
    (out,) = Lockstep(plan.program, [plan_numerics(plan, transcendentals)]).run_inputs(inputs)
    return tuple(out)


def run_oracle(program: Program, inputs: Sequence[Any]) -> tuple[torch.Tensor, ...]:
    """Outputs of `program` with every float value in fp64 (inputs upcast exactly, casts ignored)."""
    inputs = complete_inputs(program, inputs)
    (out,) = Lockstep(program, [OracleNumerics()]).run_inputs(inputs)
    return tuple(out)


class _EagerOnDevice(torch.fx.Interpreter):
    """The graph run op by op with torch's own kernels; tensor constants follow the inputs' device."""

    def __init__(self, gm: torch.fx.GraphModule, device: torch.device | None) -> None:
        super().__init__(gm)
        self.device = device
        self.relocate = relocation(gm.graph, device)

    def fetch_attr(self, target: str) -> Any:
        return on_device(super().fetch_attr(target), self.device)

    def call_function(self, target: Any, args: Any, kwargs: Any) -> Any:
        return super().call_function(target, args, relocated(kwargs, self.relocate))


def run_eager(program: Program, inputs: Sequence[Any]) -> tuple[torch.Tensor, ...]:
    """The real eager PyTorch run of the captured graph (its tensor constants and factory ops on the
    inputs' device)."""
    inputs = complete_inputs(program, inputs)
    with torch.no_grad():
        device = inputs_device(inputs)
        if relocation(program.graph, device) is not None or any(n.op == "get_attr" for n in program.graph.nodes):
            return tuple(_EagerOnDevice(program.graph_module, device).run(*inputs))
        return tuple(program.graph_module(*inputs))


def run_keep(
    plan: Plan,
    inputs: Sequence[Any],
    *,
    transcendentals: str | TranscendentalImpl = "eager",
    initial_env: dict | None = None,
) -> tuple[tuple[torch.Tensor, ...], dict]:
    """Like `run_plan`, but also return the environment {node: (value,)} of every node.

    Pass (a copy of) that environment, minus the nodes a change can affect, as `initial_env` to
    re-run only the rest (partial evaluation; blame uses this).
    """
    inputs = complete_inputs(plan.program, inputs)
    ls = Lockstep(plan.program, [plan_numerics(plan, transcendentals)], keep=True)
    (out,) = ls.run_inputs(inputs, initial_env=dict(initial_env) if initial_env else None)
    return tuple(out), ls.env
