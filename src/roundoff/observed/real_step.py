"""The user's function compiled by torch.compile itself, beside the program observe compiles.

observe compiles roundoff's captured program, whose backward is eager autograd's derivatives, decomposed
afterwards by Inductor's table; torch.compile differentiates the forward after Inductor's decompositions
(a nearest upsample's backward: an fp32 ``index_put``, not ``upsample_nearest2d_backward``), so the two
compile different graphs, and a defect of the graph torch.compile builds is not in observe's kernels.
Trial 80: torch.compile (Inductor, CPU, torch 2.13) made 36 of 52 gradients of an fp16 UNet exactly 0
(fp32 right; `max_fusion_size=1` right), where observe's compile of the captured program was within
tolerance everywhere, and observe said ok. `real_outputs` runs the real one on the same inputs, in the
captured program's output order, so that observe can compare its outputs with its own step's and judge
them against fp64.

Numeric contract: none of its own; the outputs are torch.compile's, the inputs observe's.
"""

from __future__ import annotations

import contextlib
import itertools
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch._dynamo.backends.registry import lookup_backend

from roundoff.analyze.verdict import EXCESS_LIMIT
from roundoff.capture.closure import target_state
from roundoff.capture.program import Program


@dataclass(frozen=True)
class TorchCompileOutput:
    """One output torch.compile's own step computes otherwise than the step observe compiled (bit for
    bit): `differing` of `numel` elements; both steps' RMSE against fp64 of the whole program; `zeros`:
    its elements exactly 0 where observe's step's are not; `nonfinite`: NaN/inf
    where fp64 is finite. `fails`: NaN/inf where observe's step is finite, or an RMSE over `EXCESS_LIMIT`
    times both observe's step's and the output's reference's: torch.compile's graph computes it wrong,
    not the kernels observe judged."""

    name: str
    differing: int
    numel: int
    rmse: float
    observed_rmse: float
    reference_rmse: float
    zeros: int
    nonfinite: int
    fails: bool

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "differing": self.differing, "numel": self.numel, "rmse": self.rmse,
                "observed_rmse": self.observed_rmse, "reference_rmse": self.reference_rmse, "zeros": self.zeros,
                "nonfinite": self.nonfinite, "fails": self.fails}


def departures(real: Sequence[Any], observed: Sequence[Any], names: Sequence[str],
               measured_real: dict[str, tuple[float, float, int]],
               measured_observed: dict[str, tuple[float, int]]) -> tuple[TorchCompileOutput, ...]:
    """A `TorchCompileOutput` per floating-point output whose bits differ between torch.compile's step
    (`real`) and observe's (`observed`); `measured_real`: {name: (RMSE against
    fp64, reference RMSE, NaN/inf where fp64 is finite)}, `measured_observed`: {name: (RMSE, NaN/inf)}."""
    found = []
    for name, r, o in zip(names, real, observed):
        if not (isinstance(r, torch.Tensor) and r.is_floating_point() and isinstance(o, torch.Tensor)
                and name in measured_real and name in measured_observed):
            continue
        r, o = r.detach().to(o.device), o.detach()
        if r.shape != o.shape:
            continue
        differ = ((r != o) & ~(r.isnan() & o.isnan())) | (torch.signbit(r) != torch.signbit(o))
        if not bool(differ.any()):
            continue
        rmse, reference, lost = measured_real[name]
        seen, seen_lost = measured_observed[name]
        zeros = int(((r == 0) & (o != 0)).sum())
        fails = lost > seen_lost or rmse > EXCESS_LIMIT * max(seen, reference)
        found.append(TorchCompileOutput(name, int(differ.sum()), r.numel(), rmse, seen, reference, zeros, lost, fails))
    return tuple(found)


@contextlib.contextmanager
def _buffers_kept(state: Sequence[tuple[str, torch.Tensor, bool]]) -> Iterator[None]:
    """Buffers' values (BatchNorm's running statistics, which the real step updates) restored afterwards;
    parameters' ``.grad`` is not touched (the gradients are taken with `torch.autograd.grad`)."""
    values = [(t, t.detach().clone()) for _, t, buffer in state if buffer]
    try:
        yield
    finally:
        with torch.no_grad():
            for t, v in values:
                if not torch.equal(t, v):
                    t.copy_(v)


_FRESH = itertools.count()


def _fresh(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A call of `fn` whose code object is new: Dynamo keeps a compiled graph per code object and reuses it
    under another Inductor config (a torch.compile of the same function earlier in the process, with
    ``max_fusion_size=1``, answered for the compile asked now), so this one is traced afresh."""
    def step(*args: Any) -> Any:
        return fn(*args)

    code = step.__code__.replace(co_name=f"roundoff_torch_compile_{next(_FRESH)}")
    return types.FunctionType(code, step.__globals__, code.co_name, None, step.__closure__)


def _flat(result: Any) -> list[Any]:
    """The forward outputs as capture flattens them: a tensor, a tuple/list, or a dict's tensor values."""
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return list(result)
    if isinstance(result, dict):
        return [v for v in result.values() if isinstance(v, torch.Tensor)]
    return [result]


def real_outputs(fn: Callable[..., Any], program: Program, inputs: Sequence[Any],
                 backend: str = "inductor") -> tuple[torch.Tensor, ...] | str:
    """torch.compile(`fn`, backend=`backend`)'s outputs on `inputs` (the program's inputs as observe runs
    them, its user arguments first) in `program`'s output order: the forward outputs, then, for a
    program with a backward, the gradient of the sum of its floating-point outputs with respect to each
    of `program.grad_input_names` (as `capture` differentiates it; an unused one 0); a sentence saying
    why not where they cannot be matched to the program's outputs."""
    users = program.user_inputs if program.user_inputs is not None else 0
    names = program.input_names
    state = target_state(fn, reserved=tuple(names[:users])).state
    if tuple(q for q, _, _ in state) != tuple(names[users:users + len(state)]):
        return "the function's parameters and buffers are not the captured program's"
    by_name = {q: t for q, t, _ in state}
    args = [x.detach().clone().requires_grad_(program.backward and n in program.grad_input_names)
            if isinstance(x, torch.Tensor) and x.is_floating_point() else x
            for n, x in zip(names[:users], inputs[:users])]
    device = next((x.device for x in inputs if isinstance(x, torch.Tensor)), None)
    if any(t.device != device for _, t, _ in state):
        return "the function's parameters are on another device than observe's inputs"
    try:
        return _run(fn, program, args, state, by_name, users, backend)
    except Exception as exc:  # noqa: BLE001 (the user's code under Dynamo, or Inductor's error: said, not raised)
        return f"torch.compile of the function raised {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"


def _run(fn: Callable[..., Any], program: Program, args: list, state: Sequence[tuple[str, torch.Tensor, bool]],
         by_name: dict[str, torch.Tensor], users: int, backend: str) -> tuple[torch.Tensor, ...] | str:
    """`real_outputs`' step, its errors raised."""
    names = program.input_names
    graphs: list[int] = []

    def counted(gm: torch.fx.GraphModule, example_inputs: Any, **kwargs: Any) -> Any:
        graphs.append(len(gm.graph.nodes))
        return lookup_backend(backend)(gm, example_inputs, **kwargs)

    compiled = torch.compile(_fresh(fn), backend=counted)
    with _buffers_kept(state), (torch.enable_grad() if program.backward else torch.no_grad()):
        outs = _flat(compiled(*args))
        if not graphs:  # (trial 84: a MoE's loop with a graph break; eager's own error was put down to torch.compile)
            return ("torch.compile compiled no graph of the function and ran it eagerly (Dynamo skipped the frame: "
                    "a graph break inside a loop, or code it does not trace): its step is eager's")
        if len(outs) != program.num_forward_outputs or not all(isinstance(o, torch.Tensor) for o in outs):
            return "the compiled function returned other outputs than the captured program"
        if not program.backward:
            return tuple(o.detach() for o in outs)
        diff = [args[names.index(n)] if names.index(n) < users else by_name[n] for n in program.grad_input_names]
        pairs = [o for o in outs if o.is_floating_point() and o.requires_grad]
        if not pairs:
            return "no output of the compiled function requires grad"
        loss = pairs[0].sum()
        for o in pairs[1:]:
            loss = loss + o.sum()
        grads = torch.autograd.grad(loss, diff, allow_unused=True)
    return tuple(o.detach() for o in outs) + tuple(
        g if g is not None else torch.zeros_like(x) for g, x in zip(grads, diff))
