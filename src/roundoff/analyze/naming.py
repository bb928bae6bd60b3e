"""How the findings name a node: `` `op` (id at file:line)``, and what it makes where fp64 is finite."""

from __future__ import annotations

import torch
import torch.fx

from roundoff.analyze.result import NodeReport
from roundoff.analyze.verdict import nan_or_inf
from roundoff.capture.program import (
    MADE_FROM,
    NODE_ID,
    base_id,
    multi_output_parent,
    node_module,
    node_source,
    output_op_name,
    value_holders,
)


def report_at(r: NodeReport) -> str:
    """A node report as the findings name it: `` `op` (id at file:line)``, ``, in the backward`` added for a
    backward node, whose line is the forward code it differentiates (trial 78: an underflowing backward
    ``add`` named at a ``max`` of the forward, with no word of the backward)."""
    return f"`{r.op}` ({r.node_id}{located(r.source, r.module)}{', in the backward' if r.backward else ''})"


def located(source: str | None, module: str | None) -> str:
    """`` at file:line in module.path`` (each part where known; trial 98: every op of an ``nn.Sequential``
    MobileNet was named at its one ``self.features(x)`` line), or ""."""
    return (f" at {source}" if source else "") + (f" in {module}" if module else "")


def node_at(n: torch.fx.Node) -> str:
    """A graph node as the findings name it: `` `op` (id at file:line)``; a node a decomposition made
    names the op the user wrote (`` `convert_element_type` (n10.3, the value of `mean` n10, at ...)``)."""
    nid = str(n.meta.get(NODE_ID, n.name))
    name = output_op_name(n) if multi_output_parent(n) is not None else op_name(n)  # (trial 97: `getitem` (n232)
    return f"`{name}` ({nid}{_made_from(n, nid)}{located(node_source(n), node_module(n))})"  # in the findings,
    # `native_batch_norm[0]` in the table)


def _made_from(n: torch.fx.Node, nid: str) -> str:
    """``, the value of `mean` n10`` (the last node its decomposition made) or ``, part of ...``; else ""."""
    made = n.meta.get(MADE_FROM)
    if made is None:
        return ""
    holds = nid in value_holders(n.graph)
    return f", {'the value' if holds else 'part'} of `{made}` {base_id(nid)},"


def op_name(n: torch.fx.Node) -> str:
    t = n.target
    return getattr(getattr(t, "overloadpacket", t), "__name__", str(t))


def nonfinite_kind(r: NodeReport) -> str:
    """What the node makes where fp64 is finite: NaN, inf, or both (counts beyond fp64's own)."""
    m = r.vs_oracle
    return nan_or_inf(max(0, m.nan - m.ref_nan), max(0, m.inf - m.ref_inf))
