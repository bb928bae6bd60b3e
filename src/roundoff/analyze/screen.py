"""The screen of `check`: the runs compared at their outputs and at checkpoints only, no per-node figures.

`screen(plan, sides, inputs)` runs the sides (policy, fp64 oracle, reference: as ``Lockstep`` takes
them) in one pass and returns their outputs and a few figures per probed node (`Screened`): at each
checkpoint, per non-oracle side, the count of elements NaN/inf where fp64 is finite; at each node
whose range a hazard rule reads (`range_nodes`), the oracle's finite min and max (so `check`'s
value-dependent hazards are the same as with every node examined). The figures are device
tensors computed where the values are and read with one transfer at the end (`Screened.read`): no
host sync per node.

Four ways to run, the same figures:

- ``how="interpreter"``: ``Lockstep`` (streaming with recomputation: the least memory), the probes
  computed as each node is produced;
- ``how="lowered"``: the sides lowered into one graph with the probes as ops
  (``roundoff.lower.lower_sides``: a trace of the same emulator, bit for bit the same values) and
  run as FX's generated Python: no per-node decisions left, one aten call per op;
- ``how="compiled"``: that graph compiled (``compile_lowered``): transcendentals are then Inductor's
  kernels and reductions may sum in another order (see ``roundoff.lower.compiled``);
- ``how="graphed"`` (CUDA): the interpreter's run captured once as a CUDA graph and replayed
  (``roundoff.execute.graphed``): the interpreter's kernels and values, without its per-node Python
  and launch latency; no lowering, no compilation (its first call costs two interpreted runs, and the
  graph's memory pool keeps the run's peak while the program lives).

The lowered and compiled graphs are cached per program, `key` (what the sides compute), checkpoint
spacing and input signature: a second check of the same program reuses them.

Checkpoints: every `every`-th float-valued ``call_function`` node in graph order, and the last one.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from roundoff.analyze.hazards import Ranges, finite_range, ranged_ids
from roundoff.analyze.verdict import widen_fp8
from roundoff.capture.program import NODE_ID, Program
from roundoff.capture.uninitialised import UNINITIALISED
from roundoff.execute.formats import is_float
from roundoff.execute.interpreter import Lockstep, OnNode, chained
from roundoff.execute.run import complete_inputs
from roundoff.ops import classify, short_name
from roundoff.ops.classes import OpClass

__all__ = ["HOWS", "Screened", "checkpoints", "probe_figures", "range_nodes", "screen"]

ORACLE = 1


@dataclass(frozen=True)
class Screened:
    """Outputs of every side (one tuple per side) and the probes' figures: `figures`, one fp64 device
    tensor (not read until `read`), labelled by `probed`: ``(node id, "nonfinite", side)``: the count
    of that side's elements NaN/inf where fp64 is finite, at a checkpoint; ``(node id, "min"|"max",
    1)``: the oracle's smallest / largest finite element (NaN when it has none), at a node whose
    range a hazard rule reads. `how`: ``"interpreter"``, ``"lowered"``, ``"compiled"`` or ``"graphed"``
    (whose `outputs` and `figures` are the CUDA graph's own: the next graphed screen of the program
    overwrites them)."""

    outputs: tuple
    figures: torch.Tensor
    probed: tuple[tuple[str, str, int], ...]
    how: str
    judged: Any = None  # graphed with a `captured_judge`: (the judge that captured the run, its figures unread)

    def read(self) -> dict[tuple[str, str, int], float]:
        """{label: value} of every probe: the one host read of the screen."""
        return dict(zip(self.probed, self.figures.tolist()))

    def nonfinite_counts(self, values: dict[tuple[str, str, int], float] | None = None) -> dict[tuple[str, int], int]:
        """{(node id, side): count} of the checkpoints where a side turned NaN/inf (fp64 finite)."""
        values = self.read() if values is None else values
        return {(nid, side): int(v) for (nid, kind, side), v in values.items() if kind == "nonfinite" and v}

    def ranges(self, values: dict[tuple[str, str, int], float] | None = None) -> Ranges:
        """The oracle's value ranges (`roundoff.analyze.hazards.Ranges`) at the probed nodes."""
        values = self.read() if values is None else values
        out = Ranges()
        for (nid, kind, _), v in values.items():
            if kind == "max" and math.isfinite(v) and math.isfinite(lo := values[(nid, "min", ORACLE)]):
                out.absmax[nid], out.max[nid] = max(-lo, v), v
        return out


def checkpoints(program: Program, every: int) -> tuple[torch.fx.Node, ...]:
    """Every `every`-th float-valued call_function node of `program` (and the last such node), leaving
    out `UNINITIALISED` allocations and what data movement makes of them (a slice, a slice filled into
    them: partly the allocation's memory still)."""
    if every < 1:
        raise ValueError(f"checkpoint spacing must be a positive number of nodes, got {every}")
    floats, garbage = [], set()
    for n in program.graph.nodes:
        if n.op != "call_function":
            continue
        if short_name(n.target) in UNINITIALISED or (
                classify(n.target).op_class is OpClass.DATA_MOVEMENT and garbage.intersection(n.all_input_nodes)):
            garbage.add(n)
        elif is_float(n.meta.get("val")):
            floats.append(n)
    picked = floats[every - 1 :: every]
    if floats and (not picked or picked[-1] is not floats[-1]):
        picked.append(floats[-1])
    return tuple(picked)


def range_nodes(plan: Any) -> frozenset[str]:
    """Ids of the nodes whose oracle range some hazard rule of `lint(plan, ranges)` reads (cached per
    plan)."""
    return ranged_ids(plan)


def _labels(program: Program, points: Sequence[torch.fx.Node], ranged: frozenset[str], nsides: int) -> tuple:
    wanted = frozenset(points)
    out: list[tuple[str, str, int]] = []
    for n in program.graph.nodes:
        nid = n.meta.get(NODE_ID, n.name)
        if n in wanted:
            out += [(nid, "nonfinite", s) for s in range(nsides) if s != ORACLE]
        if nid in ranged and is_float(n.meta.get("val")):
            out += [(nid, "min", ORACLE), (nid, "max", ORACLE)]
    return tuple(out)


def probe_figures(
    points: Sequence[torch.fx.Node], ranged: frozenset[str], nsides: int
) -> Callable[[torch.fx.Node, tuple], list]:
    """``probe(node, values)``: the fp64 scalars `_labels` names for `node` (module doc): at a checkpoint,
    per non-oracle side, the count of elements NaN/inf where the oracle's are finite (0 where a side's
    value is not a float tensor of the oracle's shape); at a ranged node, the oracle's finite min, max."""
    wanted = frozenset(points)

    def probe(node: torch.fx.Node, vals: tuple) -> list:
        at_point = node in wanted
        at_range = node.meta.get(NODE_ID, node.name) in ranged and is_float(node.meta.get("val"))
        if not (at_point or at_range):
            return []
        oracle, out = vals[ORACLE], []
        dev = oracle.device if isinstance(oracle, torch.Tensor) else None
        if at_point:
            finite = oracle.isfinite() if is_float(oracle) else None
            for s in range(nsides):
                v = vals[s]
                if s == ORACLE:
                    continue
                if finite is not None and is_float(v) and v.shape == oracle.shape:
                    out.append(torch.count_nonzero(~widen_fp8(v).isfinite() & finite).double())
                else:
                    out.append(torch.zeros((), dtype=torch.float64, device=dev))
        if at_range:
            if is_float(oracle) and oracle.numel():
                out += list(finite_range(oracle).double())
            else:
                out += [torch.full((), math.nan, dtype=torch.float64, device=dev)] * 2
        return out

    return probe


_COMPILED: weakref.WeakKeyDictionary[torch.fx.GraphModule, dict[tuple, Callable[..., Any]]] = (
    weakref.WeakKeyDictionary())


def input_signature(inputs: Sequence[Any]) -> tuple:
    return tuple((tuple(x.shape), x.dtype, x.device) if isinstance(x, torch.Tensor) else repr(x) for x in inputs)


HOWS = ("interpreter", "lowered", "compiled", "graphed")


def _lowered_runner(plan: Any, sides: Sequence[Any], inputs: tuple, probe: Callable, key: tuple,
                    compiled: bool) -> Callable:
    from roundoff.lower import compile_lowered, direct_primitives, lower_sides

    cache = _COMPILED.setdefault(plan.program.graph_module, {})
    full = (*key, compiled, input_signature(inputs))
    if full not in cache:
        gm = lower_sides(plan, sides, inputs, probe)
        cache[full] = compile_lowered(gm, inputs) if compiled else direct_primitives(gm)
    return cache[full]


def screen(
    plan: Any, sides: Sequence[Any], inputs: Sequence[Any], *, every: int = 16, how: str = "interpreter",
    key: tuple = (), recompute: bool = True, on_output: OnNode | None = None, captured_judge: Any = None,
) -> Screened:
    """Run `sides` over `plan`'s program on `inputs`, outputs and probes only (module doc).

    `key` names what the sides compute (policies, reference, transcendentals) for the graph cache.
    `on_output`: with ``how="interpreter"``, also called at every node (an `OutputJudge`, which may
    release the values of an output it settled: `Screened.outputs` then holds `interpreter.RELEASED`
    there). `captured_judge`: with ``how="graphed"``, the same in the captured run (a
    `captured_outputs.CapturedOutputJudge`, keyed by `key` with the graph): `Screened.judged` holds the
    judge that captured the run and its figures, to `settle`."""
    if how not in HOWS:
        raise ValueError(f"screen how={how!r}: choose one of {', '.join(HOWS)}")
    program = plan.program
    inputs = complete_inputs(program, inputs)
    points, ranged = checkpoints(program, every), range_nodes(plan)
    probed = _labels(program, points, ranged, len(sides))
    probe = probe_figures(points, ranged, len(sides))
    if how in ("lowered", "compiled"):
        run = _lowered_runner(plan, sides, inputs, probe, (*key, every), how == "compiled")
        with torch.no_grad():
            *outs, figures = run(*inputs)
        return Screened(tuple(outs), figures, probed, how)

    def interpreted(*xs: Any) -> tuple:
        found: list[torch.Tensor] = []

        def on_node(node: torch.fx.Node, vals: tuple, _ls: Lockstep) -> None:
            found.extend(probe(node, vals))

        in_graph = captured_judge if how == "graphed" else None  # (no host reads there)
        judged = on_output if how == "interpreter" else in_graph
        if in_graph is not None:
            in_graph.begin()
        ls = Lockstep(program, sides, on_node=chained(on_node, judged),
                      recompute=range(len(sides)) if recompute else ())
        with torch.inference_mode():  # (graphed: captured under it too)
            outs = ls.run_inputs(xs)
        dev = found[0].device if found else None
        probes = torch.stack([t.to(dev) for t in found]) if found else torch.zeros(0, dtype=torch.float64)
        return (*outs, probes, *(in_graph.tensors() if in_graph is not None else ()))

    if how == "graphed":
        from roundoff.execute.graphed import CudaGraphed, captured_once

        if not any(isinstance(x, torch.Tensor) and x.is_cuda for x in inputs):
            raise ValueError("screen how='graphed' replays a CUDA graph: it needs CUDA inputs")
        judging = captured_judge.key if captured_judge is not None else None
        full = (*key, every, "screen", judging, input_signature(inputs))  # (judged before the next replay:)

        def capture() -> CudaGraphed:
            run = CudaGraphed(interpreted, inputs, clone_outputs=False)
            run.judge = captured_judge  # type: ignore[attr-defined]  # (its records describe this run's figures)
            return run

        graphed = captured_once(program.graph_module, full, capture)
        got = graphed(*inputs)
        outs, figures = got[: len(sides)], got[len(sides)]
        judged = (graphed.judge, list(got[len(sides) + 1 :])) if graphed.judge is not None else None
        return Screened(tuple(outs), figures, probed, how, judged)
    *outs, figures = interpreted(*inputs)
    return Screened(tuple(outs), figures, probed, how)
