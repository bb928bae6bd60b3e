"""The screen of `check`: the runs compared at their outputs and at checkpoints only, no per-node figures.

`screen(plan, sides, inputs)` runs the sides (policy, fp64 oracle, reference: as ``Lockstep`` takes
them) in one pass and returns their outputs and, per checkpoint node and non-oracle side, the count
of elements NaN/inf where fp64 is finite (`Screened`). The counts are device tensors computed where
the values are and read with one transfer at the end (`Screened.nonfinite_counts`): no host sync
per node.

Two ways to run, the same figures (the runs are ``roundoff.execute``'s, bit for bit where compiled
is exact, see ``roundoff.lower.compiled``):

- ``compiled=True``: the sides lowered into one graph with the checkpoint counts as ops
  (``roundoff.lower.lower_sides``) and compiled (``compile_lowered``), cached per program, policies,
  checkpoints and input signature (a second check of the same program reuses it);
- ``compiled=False``: the interpreter (``Lockstep``, streaming with recomputation) with the counts
  computed as each checkpoint is produced.

Checkpoints: every `every`-th float-valued ``call_function`` node in graph order, and the last one.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from roundoff.analyze.verdict import widen_fp8
from roundoff.capture.program import NODE_ID, Program
from roundoff.execute.formats import is_float
from roundoff.execute.interpreter import Lockstep
from roundoff.execute.run import complete_inputs

__all__ = ["Screened", "checkpoints", "nonfinite_probe", "screen"]

ORACLE = 1


@dataclass(frozen=True)
class Screened:
    """Outputs of every side (one tuple per side) and, for each (checkpoint, non-oracle side) in
    `probed` order, the count of elements NaN/inf where fp64 is finite: `nonfinite`, an int64 device
    tensor (not read until `nonfinite_counts`). `how`: ``"compiled"`` or ``"interpreted"``."""

    outputs: tuple
    nonfinite: torch.Tensor
    probed: tuple[tuple[str, int], ...]
    how: str

    def nonfinite_counts(self) -> dict[tuple[str, int], int]:
        """{(node id, side): count} of the probes that found any: the one host read of the screen."""
        counts = self.nonfinite.tolist()
        return {p: c for p, c in zip(self.probed, counts) if c}


def checkpoints(program: Program, every: int) -> tuple[torch.fx.Node, ...]:
    """Every `every`-th float-valued call_function node of `program` (and the last such node)."""
    if every < 1:
        raise ValueError(f"checkpoint spacing must be a positive number of nodes, got {every}")
    floats = [n for n in program.graph.nodes if n.op == "call_function" and is_float(n.meta.get("val"))]
    picked = floats[every - 1 :: every]
    if floats and (not picked or picked[-1] is not floats[-1]):
        picked.append(floats[-1])
    return tuple(picked)


def _probed_pairs(points: Sequence[torch.fx.Node], nsides: int) -> tuple[tuple[str, int], ...]:
    return tuple((n.meta.get(NODE_ID, n.name), s) for n in points for s in range(nsides) if s != ORACLE)


def nonfinite_probe(points: Sequence[torch.fx.Node], nsides: int) -> Callable[[torch.fx.Node, tuple], list]:
    """``probe(node, values)``: at a checkpoint, per non-oracle side, the count (an int64 scalar tensor)
    of elements NaN/inf where the oracle's are finite; nothing at other nodes. Where a side's value is
    not a float tensor of the oracle's shape, the count is 0."""
    wanted = frozenset(points)

    def probe(node: torch.fx.Node, vals: tuple) -> list:
        if node not in wanted:
            return []
        oracle = vals[ORACLE]
        out = []
        for s in range(nsides):
            if s == ORACLE:
                continue
            v = vals[s]
            if is_float(v) and is_float(oracle) and v.shape == oracle.shape:
                out.append(torch.count_nonzero(~widen_fp8(v).isfinite() & oracle.isfinite()))
            else:
                out.append(torch.zeros((), dtype=torch.int64, device=oracle.device if is_float(oracle) else None))
        return out

    return probe


_COMPILED: weakref.WeakKeyDictionary[torch.fx.GraphModule, dict[tuple, Callable[..., Any]]] = (
    weakref.WeakKeyDictionary())


def _signature(inputs: Sequence[Any]) -> tuple:
    return tuple((tuple(x.shape), x.dtype, x.device) if isinstance(x, torch.Tensor) else repr(x) for x in inputs)


def _compiled_runner(plan: Any, sides: Sequence[Any], inputs: tuple, points: tuple, key: tuple) -> Callable:
    from roundoff.lower import compile_lowered, lower_sides

    cache = _COMPILED.setdefault(plan.program.graph_module, {})
    full = (*key, tuple(n.name for n in points), _signature(inputs))
    if full not in cache:
        gm = lower_sides(plan, sides, inputs, nonfinite_probe(points, len(sides)))
        cache[full] = compile_lowered(gm, inputs)
    return cache[full]


def screen(
    plan: Any, sides: Sequence[Any], inputs: Sequence[Any], *, every: int = 16, compiled: bool = False,
    key: tuple = (), recompute: bool = True,
) -> Screened:
    """Run `sides` over `plan`'s program on `inputs`, outputs and checkpoint counts only (module doc).

    `key` names what the sides compute (policies, reference, transcendentals) for the compiled cache."""
    program = plan.program
    inputs = complete_inputs(program, inputs)
    points = checkpoints(program, every)
    probed = _probed_pairs(points, len(sides))
    if compiled:
        run = _compiled_runner(plan, sides, inputs, points, key)
        with torch.no_grad():
            *outs, counts = run(*inputs)
        return Screened(tuple(outs), counts, probed, "compiled")
    probe = nonfinite_probe(points, len(sides))
    found: list[torch.Tensor] = []

    def on_node(node: torch.fx.Node, vals: tuple, _ls: Lockstep) -> None:
        found.extend(probe(node, vals))

    ls = Lockstep(program, sides, on_node=on_node, recompute=range(len(sides)) if recompute else ())
    with torch.no_grad():
        outs = ls.run_inputs(inputs)
    counts = torch.stack([t.to(torch.int64) for t in found]) if found else torch.zeros(0, dtype=torch.int64)
    return Screened(tuple(outs), counts, probed, "interpreted")
