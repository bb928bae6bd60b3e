"""An output's *operand floor*: the error it takes from its last op's operands held in its format.

A gradient that cancels to 0 by the model's structure cannot be correctly rounded by any run that
holds its operands in bf16: a bias before a normalisation (its gradient sums to 0 across the
normalised channels), the sum over positions of a cross-entropy gradient (a question-answering
head's), a weight shared by layers whose contributions cancel (ALBERT). Its fp64 value is fp64's
rounding noise; the rounding of its last op's operands alone, carried through that op, is far beyond
the rounding of that tiny result. Such an output is judged against that error instead.

Definition: the output's *producer* is the op that computes it, looked through ops that only move or
cast its elements (views, transposes, clones, dtype casts: same element count) and through
``getitem`` of a multi-output op (`producer`). Its floor in a format ``w`` is the 2-norm of

    f(a (1 + s_a u/2), b (1 + s_b u/2), ...) - f(a, b, ...)

with ``a, b, ...`` the producer's fp64 (oracle) float operands, ``s`` independent random signs per
element (a fixed seed), ``u`` the unit roundoff of ``w`` and ``f`` evaluated in fp64, over the
elements finite on both sides (`operand_floor`): the random-sign model of rounding each operand
to ``w`` (for a sum, ``u/2 ||terms||_2``: `roundoff.analyze.verdict.reduction_floor`), also where
an operand happens to be representable in ``w``. An output is *structurally zero* when its fp64
value's 2-norm is at most its floor in fp32 (not even fp32 operands resolve it from 0: a gradient
that cancels by structure measures 1e-16 of its terms, while a variance by E[x^2] - E[x]^2 in bf16
is a real value fp32 resolves, and its cancellation in bf16 a defect). A structurally zero output's
error is judged against the larger of its floor in its judged format and the rounding of its own
fp64 value (`roundoff.analyze.verdict.excess_within`); so is an output a reduction, matmul,
convolution or normalisation produces (a bias gradient sums the gradients of a batch, a weight
gradient is a matmul: as a sum node is judged against its terms' rounding, `verdict.reduction_floor`;
a new user's CLIP text-bias gradient, 4% off in a clean bf16 backward, sent blame to keep unrelated
attention in fp32). Every other output's floor is 0.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from roundoff.analyze.verdict import path_dtypes, unit_roundoff
from roundoff.execute.formats import is_float
from roundoff.execute.interpreter import Lockstep, is_random
from roundoff.execute.node_numerics import OracleNumerics
from roundoff.execute.run import complete_inputs
from roundoff.numerics.chunks import combined_norm, slices
from roundoff.ops.classes import OpClass
from roundoff.ops.classify import classify

__all__ = ["OutputFloors", "operand_floor", "oracle_floors", "producer", "structural_zero_floor"]

_MOVES = (OpClass.DATA_MOVEMENT, OpClass.CAST)
#: Producers whose result is a sum of terms: their outputs always get the floor (as a sum node's own
#: error is judged against its terms' rounding: `verdict.reduction_floor`).
_SUMMING = (OpClass.REDUCTION, OpClass.MATMUL, OpClass.CONVOLUTION, OpClass.NORMALIZATION)


def _numel(node: torch.fx.Node) -> int | None:
    v = node.meta.get("val")
    return v.numel() if isinstance(v, torch.Tensor) else None


def producer(node: Any) -> tuple[torch.fx.Node, int | None] | None:
    """(the op computing output `node`, the index of `node`'s value among that op's results, or None
    for a single result), looking through element-preserving moves and casts (module doc); None when
    the output is a graph input or moved from one, or not a float tensor."""
    if not isinstance(node, torch.fx.Node) or not is_float(node.meta.get("val")):
        return None
    size = _numel(node)
    while node.op == "call_function":
        src = node.args[0] if node.args and isinstance(node.args[0], torch.fx.Node) else None
        if node.target is operator.getitem and src is not None and isinstance(node.args[1], int):
            return (src, node.args[1]) if src.op == "call_function" else None
        if src is None or classify(node.target).op_class not in _MOVES or _numel(src) != size:
            return node, None
        node = src
    return None


def operand_floor(node: torch.fx.Node, exact: Any, read: Callable[[torch.fx.Node], Any], dtype: torch.dtype,
                  indices: tuple[int | None, ...] = (None,)) -> tuple[float, ...]:
    """Per index in `indices` (of `node`'s results; None: its only result), the 2-norm of the error that
    result takes from `node`'s float operands perturbed by `dtype`'s rounding with random signs (module
    doc), `node` evaluated in fp64. `exact`: `node`'s fp64 value; `read` gives each operand's. 0.0 for
    a random op (its sample is shared by every run) and for a result that is not a float tensor."""
    if is_random(node):
        return (0.0,) * len(indices)
    half_u = unit_roundoff(dtype) / 2
    seeds: dict[torch.device, torch.Generator] = {}

    def perturbed(n: torch.fx.Node) -> Any:
        v = read(n)
        if not is_float(v):
            return v
        gen = seeds.setdefault(v.device, torch.Generator(v.device).manual_seed(0))
        # the signs drawn at once (the same draws as fp64's `randint`), applied a slice at a time on the host:
        # one fp64 copy of the operand, not three (1 + u/2 s, s = +-1, is exact); none of fp64 zeros,
        # their own perturbation (an embedding gradient's accumulator)
        host = v.device.type == "cpu"
        signs = torch.randint(0, 2, v.shape, generator=gen, device=v.device, dtype=torch.int8 if host else torch.float64)
        if v.dtype == torch.float64 and not bool(v.any()):
            return v
        held = v.to(torch.float64, copy=True)
        for part, s in slices(held, signs):
            part.mul_(s.to(torch.float64).mul_(2).sub_(1).mul_(half_u).add_(1))
        return held

    held_all = OracleNumerics().evaluate(node, perturbed, fresh=True)
    out = []
    for index in indices:
        x, held = (exact, held_all) if index is None else (exact[index], held_all[index])
        if not (is_float(x) and is_float(held)) or x.shape != held.shape:
            out.append(0.0)
            continue
        out.append(_finite_distance(held, x))
    return tuple(out)


def _finite_distance(a: torch.Tensor, b: torch.Tensor) -> float:
    """``||a - b||_2`` (fp64) over the elements finite on both sides, a slice at a time on the host."""
    norms = []
    for x, y in slices(a, b):
        both = x.isfinite() & y.isfinite()
        diff = x.double() - y.double()  # (all finite: its norm as is, not a masked copy's)
        norms.append(float(diff.reshape(-1).norm() if bool(both.all()) else diff[both].norm()))
    return combined_norm(norms)


class OutputFloors:
    """Each float output's operand floor (`floors`: {output index: 2-norm}), recorded while a run of the
    oracle produces the outputs' producers: call `record(node, exact, read)` at every node."""

    def __init__(self, program: Any, judged: dict[torch.fx.Node, torch.dtype]) -> None:
        """`program`: a `roundoff.capture.Program`; `judged`: each output node's judged format."""
        self.sites: dict[torch.fx.Node, list[tuple[int, int | None, torch.dtype]]] = {}
        for i, arg in enumerate(program.output_args()):
            found = producer(arg)
            if found is not None and arg in judged:
                self.sites.setdefault(found[0], []).append((i, found[1], judged[arg]))
        self.floors: dict[int, float] = {}

    def record(self, node: torch.fx.Node, exact: Any, read: Callable[[torch.fx.Node], Any]) -> None:
        """Record the floors of the outputs `node` produces (`exact`: its fp64 value): 0.0 for an output
        neither a sum makes nor structurally zero (module doc). The fp32 floor the structural test needs
        is evaluated only for the others, once, and shared where fp32 is also a judged format."""
        sites = self.sites.get(node, [])

        def floors_in(dtype: torch.dtype, indices: tuple[int | None, ...]) -> dict[int | None, float]:
            return dict(zip(indices, operand_floor(node, exact, read, dtype, indices)))

        floors = {d: floors_in(d, tuple(idx for _, idx, dd in sites if dd == d))
                  for d in dict.fromkeys(d for _, _, d in sites)}
        if classify(node.target).op_class in _SUMMING:  # a sum's output always gets its floor
            self.floors.update({i: floors[d][idx] for i, idx, d in sites})
            return
        if torch.float32 not in floors:  # structurally zero: not even fp32 operands resolve it from 0
            floors[torch.float32] = floors_in(torch.float32, tuple(idx for _, idx, _ in sites))
        for i, idx, d in sites:
            zero = finite_norm(exact if idx is None else exact[idx]) <= floors[torch.float32][idx]
            self.floors[i] = floors[d][idx] if zero else 0.0


def structural_zero_floor(node: torch.fx.Node, exact: Any, read: Callable[[torch.fx.Node], Any],
                          dtype: torch.dtype) -> float:
    """For a node whose fp64 value `exact` is structurally zero (its 2-norm at most its operand floor in
    fp32, as for an output: the gradient reaching the max of a log-sum-exp, ``1 - sum(softmax)``, is
    1e-16 of its terms), the RMS of its operand floor in `dtype` (the error it takes from its operands
    held in `dtype`, what its own error is then judged against, as a sum's against its terms'); else 0.
    `read` gives each operand's fp64 value. A real value fp32 resolves (a variance by moments) is not
    structurally zero."""
    if not is_float(exact) or not exact.numel():
        return 0.0
    site, whole, index = node, exact, (None,)
    if node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node):  # one result of several
        site, whole, index = node.args[0], read(node.args[0]), (node.args[1],)  # (LayerNorm's saved mean)
        try:  # its producer's operands, where the run still holds them (a forward op's, read by the backward)
            (in_fp32,) = operand_floor(site, whole, read, torch.float32, index)
        except (KeyError, RuntimeError):  # released after the producer ran: no floor (judged as before)
            return 0.0
    else:
        (in_fp32,) = operand_floor(site, whole, read, torch.float32, index)
    if finite_norm(exact) > in_fp32:
        return 0.0
    (held,) = operand_floor(site, whole, read, dtype, index) if dtype != torch.float32 else (in_fp32,)
    finite = int(exact.isfinite().sum())
    return held / finite**0.5 if finite else 0.0


def finite_norm(x: Any) -> float:
    """The 2-norm of `x` over its finite elements (0 for a non-float value), a slice at a time on the host."""
    return combined_norm([float(p.double()[p.isfinite()].norm()) for (p,) in slices(x)]) if is_float(x) else 0.0


def oracle_floors(program: Any, inputs: Any) -> tuple[tuple[Any, ...], dict[int, float]]:
    """(the fp64 oracle's outputs of `program` on `inputs`, each float output's operand floor in the
    narrowest float format on its path (`verdict.path_dtypes`), by output index): one oracle run."""
    floors = OutputFloors(program, path_dtypes(program.graph))

    def on_node(node: torch.fx.Node, vals: tuple, ls: Lockstep) -> None:
        if node in floors.sites:
            floors.record(node, vals[0], ls.reader(0))

    (out,) = Lockstep(program, [OracleNumerics()], on_node=on_node).run_inputs(complete_inputs(program, inputs))
    return tuple(out), floors.floors
