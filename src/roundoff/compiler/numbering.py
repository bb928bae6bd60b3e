"""Node keys across the graphs of one compilation: where a node override of a capture's node id lands
in the aten graphs torch.compile makes, when graph breaks split the program into several."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.fx

from roundoff.compiler.errors import RoundoffPlacementError


@dataclass(frozen=True)
class NodeKey:
    """Where a node is in user code: aten overload, ``basename:line``, occurrence index."""

    op: str
    source: str | None
    occurrence: int


class GraphNumbering:
    """The occurrence numbers of node keys across the graphs torch.compile splits one program into at its
    graph breaks, in the order they are compiled (the order they run: the capture's). A graph's keys
    count on from the graphs compiled before it, so the router of a MoE's second layer, in a graph of
    its own after a break, is occurrence 1 of its line as in the capture (trial 65: it was occurrence 0
    in every graph, and the first graph's placement refused the rest). A graph compiled again (a
    recompilation: the same ops at the same lines) keeps its first numbering. ``finish`` checks, after
    the graphs of a first call, that every node override was placed and that its line holds as many
    such ops in the compiled graphs as in the capture."""

    def __init__(self) -> None:
        self.offsets: dict[tuple[tuple[str, str | None], ...], dict[tuple[str, str | None], int]] = {}
        self.counts: dict[tuple[str, str | None], int] = {}
        self.placed: dict[str, str] = {}
        self.rewrites: dict[str, tuple[tuple[NodeKey, int], str]] = {}
        self.compiled = 0  # graphs the backend compiled (0 after a first call: torch.compile ran it eagerly)

    def number(self, keys: dict[torch.fx.Node, NodeKey]) -> dict[torch.fx.Node, NodeKey]:
        """`keys` (one graph's, from 0) numbered on from the graphs compiled before this one."""
        signature = tuple((k.op, k.source) for k in keys.values())
        if signature not in self.offsets:
            self.offsets[signature] = dict(self.counts)
            for k in keys.values():
                self.counts[(k.op, k.source)] = self.counts.get((k.op, k.source), 0) + 1
        base = self.offsets[signature]
        return {n: NodeKey(k.op, k.source, k.occurrence + base.get((k.op, k.source), 0)) for n, k in keys.items()}

    def finish(self) -> None:
        """RoundoffPlacementError for a node override no graph held, or whose op and line the compiled
        graphs hold a different number of times than the capture (its occurrence is then ambiguous)."""
        graphs = len(self.offsets)
        split = (f" (torch.compile split the program into {graphs} graphs at graph breaks: code compiled once may "
                 "serve several calls, a loop's or a layer's)") if graphs > 1 else ""
        for nid, ((key, size), _) in self.rewrites.items():
            compiled = self.counts.get((key.op, key.source), 0)
            if nid in self.placed and compiled != size:
                advice = ("the compiled code of that line serves several of the capture's occurrences: make the "
                          "change in every call (an op override, or the edit in the code), or remove the graph break"
                          if graphs > 1 and compiled < size else "split the line or use an op override")
                raise RoundoffPlacementError(
                    f"node override {nid!r}: {key.op} at {key.source} occurs {size}x in the capture but "
                    f"{compiled}x in the compiled graph{'s' if graphs > 1 else ''}{split}, so occurrence "
                    f"{key.occurrence} is ambiguous; {advice}")
        missing = [nid for nid in self.rewrites if nid not in self.placed]
        if missing:
            detail = ", ".join(f"{nid} ({k.op} at {k.source}#{k.occurrence})"
                               for nid, (k, _) in ((m, self.rewrites[m][0]) for m in missing))
            raise RoundoffPlacementError(
                f"node overrides not found in any compiled graph: {detail}{split}; the op may have been "
                f"decomposed or fused away by Inductor's pre-lowering passes")
