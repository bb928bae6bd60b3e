"""FMA contraction sites: an add/sub computed as one correctly rounded ``fma(a, b, ±c)``.

A candidate (policy or not) is an ``aten.add.Tensor`` / ``aten.sub.Tensor`` (no ``alpha``; after
the policy's decompositions) computing in fp32-or-wider opmath, with an operand produced by an
``aten.mul`` in the same kernel, in the same compute dtype, and read unrounded. A product that is
also used elsewhere still qualifies: NVPTX contracts multi-use products (thread 003: ``tmp4 - tmp4``
became ``fma(a, b, -tmp4)``). The choice follows LLVM's DAGCombiner (``visitFADDForFMACombine`` /
``visitFSUBForFMACombine``): the product in operand 0 first (``(a*b) - c -> fma(a, b, -c)``), else
operand 1 (``c - a*b -> fma(-a, b, c)``); when both operands are (different) products, the one with
fewer uses ("prefer to fold the multiply with fewer uses"; uses counted in the graph, standing in
for uses in the kernel), operand 0 on a tie. The other candidate is kept in ``alternatives``.

Under ``Division.RECIPROCAL_MULTIPLY`` a division is a product too: Triton's fp32 ``a / b`` is
``div.full.f32``, i.e. ``a * R`` with ``R = MUFU.RCP(b)`` (after exact power-of-two pre-scaling), and
ptxas contracts that multiply into a following add/sub (``c - a/b`` is ``fma(-a, R, c)``, measured on
an H200: bench/results/gpu_div_contraction.txt). An ``aten.div.Tensor`` / ``aten.div.Scalar`` (no
``rounding_mode``) with a tensor divisor qualifies only when the add/sub is the quotient's *only*
user: in a kernel that also stored the quotient, the subtraction stayed an ``FADD`` (the multiply
exists only after ptxas expands the division, and ptxas did not contract a multi-use one). A Python
number divisor is different: Inductor's GPU lowering (``div_prim``) rewrites ``a / s`` as
``a * (1/s)``, a real multiply that LLVM contracts like any mul, multi-use included. A division
feeding an add/sub is then recorded as ``FmaSite.mul_id``, which may therefore name a division.
When both operands of the add/sub are products, LLVM-level products (muls and divisions by a
number) come before divisions by a tensor, whose multiply only appears after LLVM has contracted;
within a tier the rules above apply.

An fp64 add/sub is no candidate: the emulation's correctly rounded ``fma`` computes fp32 and narrower
formats exactly in fp64, and no wider format is at hand for an fp64 one. Triton contracts fp64 too
(``fma.rn.f64``), so an fp64 ``a*b + c`` under a contracting policy may differ from the GPU's in its
last bit (trial 72: a timestep embedding computed in fp64 beside a bf16 model).

Whether a site is contracted: ``OpOverride.contract_fma`` for the add/sub node or op when set, else
``policy.fma is FmaContraction.WITHIN_FUSION``. Uncontracted candidates are recorded too, so blame
and reports can flip them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch
import torch.fx

from roundoff.capture.program import node_id
from roundoff.plan.fusion import Fusion
from roundoff.plan.model import FmaSite, NodeDecision
from roundoff.policy.model import Division, FmaContraction, OpOverride, Policy

_aten = torch.ops.aten
ADD_SUB = frozenset({_aten.add.Tensor, _aten.sub.Tensor})
MULS = frozenset({_aten.mul.Tensor, _aten.mul.Scalar})
DIVS = frozenset({_aten.div.Tensor, _aten.div.Scalar})


def is_division(node: torch.fx.Node) -> bool:
    """Whether `node` is a true division (``aten.div`` without ``rounding_mode``)."""
    return node.target in DIVS and node.kwargs.get("rounding_mode") is None


def divides_by_tensor(node: torch.fx.Node) -> bool:
    """Whether the division `node`'s divisor is a tensor (not folded to ``a * (1/s)`` by Inductor)."""
    return len(node.args) > 1 and isinstance(node.args[1], torch.fx.Node)


def _is_product(p: torch.fx.Node, add: torch.fx.Node, policy: Policy) -> bool:
    if p.target in MULS:
        return True
    if policy.division is not Division.RECIPROCAL_MULTIPLY or not is_division(p):
        return False
    return not divides_by_tensor(p) or set(p.users) == {add}


def _product(
    add: torch.fx.Node,
    operand: int,
    decisions: Mapping[str, NodeDecision],
    fusion: Fusion,
    policy: Policy,
) -> str | None:
    """Id of the product (mul or division) at `operand` of `add` if it can fold into it, else None."""
    if operand >= len(add.args):
        return None
    p = add.args[operand]
    if not isinstance(p, torch.fx.Node) or not _is_product(p, add, policy):
        return None
    pid, aid = node_id(p), node_id(add)
    pd, ad = decisions[pid], decisions[aid]
    group = fusion.home.get(aid)
    if group is None or pid not in fusion.members[group]:
        return None
    if pd.rounds_result or pid in ad.rounded_inputs or pd.input_format is not None:
        return None
    if pd.compute_dtype != ad.compute_dtype:
        return None
    if is_division(p) and pd.compute_dtype != torch.float32:
        return None  # only fp32 division is div.full.f32 (Triton's fp64 ``/`` is div.rn.f64)
    return pid


def find_sites(
    nodes: list[torch.fx.Node],
    decisions: Mapping[str, NodeDecision],
    fusion: Fusion,
    policy: Policy,
    override: Callable[[torch.fx.Node], OpOverride],
) -> dict[str, FmaSite]:
    """Every FMA candidate of the graph, keyed by the add/sub's id (see the module docstring)."""
    sites: dict[str, FmaSite] = {}
    for n in nodes:
        if n.op != "call_function" or n.target not in ADD_SUB or n.kwargs.get("alpha", 1) != 1:
            continue
        d = decisions[node_id(n)]
        if (
            d.compute_dtype is None
            or not d.compute_dtype.is_floating_point
            or d.compute_dtype == torch.float64
            or d.input_format is not None
        ):
            continue
        products = [(i, _product(n, i, decisions, fusion, policy)) for i in (0, 1)]
        found = [(i, m) for i, m in products if m is not None]
        if not found:
            continue
        if len(found) == 2 and found[0][1] != found[1][1]:
            found.sort(key=lambda im: _rank(n.args[im[0]], im[0]))  # type: ignore[arg-type]
        operand, mul = found[0]
        forced = override(n).contract_fma
        contracted = forced if forced is not None else policy.fma is FmaContraction.WITHIN_FUSION
        sites[d.node_id] = FmaSite(
            d.node_id, mul, operand, contracted, tuple(m for _, m in found[1:])
        )
    return sites


def _rank(p: torch.fx.Node, operand: int) -> tuple[bool, int, int]:
    """Sort key of a product operand: LLVM-level products first, then fewer uses, then operand 0."""
    return (is_division(p) and divides_by_tensor(p), len(p.users), operand)
