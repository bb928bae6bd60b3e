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
from roundoff.policy.model import FmaContraction, OpOverride, Policy

_aten = torch.ops.aten
ADD_SUB = frozenset({_aten.add.Tensor, _aten.sub.Tensor})
MULS = frozenset({_aten.mul.Tensor, _aten.mul.Scalar})


def _product(
    add: torch.fx.Node, operand: int, decisions: Mapping[str, NodeDecision], fusion: Fusion
) -> str | None:
    """Id of the mul at `operand` of `add` if it can be folded into it, else None."""
    if operand >= len(add.args):
        return None
    p = add.args[operand]
    if not isinstance(p, torch.fx.Node) or p.target not in MULS:
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
            or d.input_format is not None
        ):
            continue
        products = [(i, _product(n, i, decisions, fusion)) for i in (0, 1)]
        found = [(i, m) for i, m in products if m is not None]
        if not found:
            continue
        if len(found) == 2 and found[0][1] != found[1][1]:
            uses = [len(n.args[i].users) for i, _ in found]  # type: ignore[union-attr]
            if uses[0] > uses[1]:
                found.reverse()
        operand, mul = found[0]
        forced = override(n).contract_fma
        contracted = forced if forced is not None else policy.fma is FmaContraction.WITHIN_FUSION
        sites[d.node_id] = FmaSite(
            d.node_id, mul, operand, contracted, tuple(m for _, m in found[1:])
        )
    return sites
