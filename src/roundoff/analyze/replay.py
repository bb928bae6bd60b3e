"""fp64 run again with one node's value replaced: does that move an output beyond the limit?

A discrete choice (a selection picking other indices than fp64) or a value a format cannot hold (an
``exp`` fp32 flushes to 0) is a cause only where it matters to the outputs. `moves_outputs` measures
that: the fp64 oracle run of the program once more, `node_id`'s value replaced by `replace(value,
read)`, every output judged against the plain fp64 run by `verdict.oracle_output_passes` in its path
format (a format as wide as fp64: fp32's). A program that draws random numbers cannot be run again
alike: there the answer is always True (taken to matter).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import torch.fx

from roundoff.analyze.verdict import oracle_output_passes, path_dtypes
from roundoff.capture.program import NODE_ID, Program
from roundoff.execute.formats import is_float
from roundoff.execute.interpreter import Lockstep, is_random
from roundoff.execute.node_numerics import OracleNumerics
from roundoff.numerics import Format, round_to

__all__ = ["as_held", "fp64_outputs", "moves_outputs", "replayed_outputs"]

Replace = Callable[[Any, Callable[[torch.fx.Node], Any]], Any]


def as_held(fmt: Format) -> Replace:
    """The replacement that puts a value as `fmt` holds it (fp64 correctly rounded to `fmt`, back in fp64)
    into fp64's run: does the loss of a format that cannot hold the values (an underflow) move an output?"""
    return lambda value, _read: round_to(value, fmt).double() if is_float(value) else value


def fp64_outputs(program: Program, inputs: Sequence[Any]) -> tuple:
    """The outputs of `program`'s fp64 oracle run on `inputs`."""
    with torch.no_grad():
        return tuple(Lockstep(program, [OracleNumerics()]).run_inputs(inputs)[0])


def moves_outputs(program: Program, inputs: Sequence[Any], node_id: str, replace: Replace,
                  exact: Sequence[Any] | None = None) -> tuple[bool, tuple]:
    """Whether fp64's run with `node_id`'s value replaced by ``replace(value, read)`` (`read`: fp64's
    value of another node) moves an output beyond the limit (module doc); with fp64's outputs (`exact`,
    run here when not given), for the next call."""
    if any(is_random(n) for n in program.graph.nodes):
        return True, tuple(exact or ())
    exact = fp64_outputs(program, inputs) if exact is None else tuple(exact)
    target = next(n for n in program.graph.nodes if n.meta.get(NODE_ID, n.name) == node_id)
    replayed = replayed_outputs(program, inputs, {target: replace})
    work = path_dtypes(program.graph)
    for arg, want, got in zip(program.output_args(), exact, replayed):
        if not (isinstance(want, torch.Tensor) and want.is_floating_point() and isinstance(got, torch.Tensor)):
            continue
        fmt = work.get(arg, want.dtype) if isinstance(arg, torch.fx.Node) else want.dtype
        if not oracle_output_passes(got, want, torch.float32 if fmt == torch.float64 else fmt):
            return True, exact
    return False, exact


def replayed_outputs(program: Program, inputs: Sequence[Any], replacements: Mapping[torch.fx.Node, Replace]) -> tuple:
    """The outputs of fp64's run of `program` with each node of `replacements` given
    ``replace(value, read)`` instead of its fp64 value (the caller checks the program draws no random
    numbers: a second run would draw others)."""
    def substitute(n: torch.fx.Node, vals: tuple, ls: Lockstep) -> tuple | None:
        return (replacements[n](vals[0], ls.reader(0)),) if n in replacements else None

    with torch.no_grad():
        return tuple(Lockstep(program, [OracleNumerics()], on_node=substitute).run_inputs(inputs)[0])
