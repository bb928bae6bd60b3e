"""Program: a captured aten-level FX graph whose nodes carry stable ids and source lines.

Node metadata contract (other layers rely on these keys):
- ``node.meta["roundoff_id"]``: stable id (``"n0"``, ``"n1"``, ...; a node made by rewriting node
  ``n7`` gets ``"n7.0"``, ``"n7.1"``, ...). Placeholders and the output node have ids too.
- ``node.meta["roundoff_source"]``: ``"file.py:LINE"`` of the user's code that made the node, or None.
- ``node.meta["val"]``: a (fake) tensor with the node's shape and dtype, or a tuple of them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.fx

NODE_ID = "roundoff_id"
NODE_SOURCE = "roundoff_source"


def node_id(node: torch.fx.Node) -> str:
    """The stable roundoff id of `node`."""
    return node.meta[NODE_ID]


def node_source(node: torch.fx.Node) -> str | None:
    """``"file.py:LINE"`` of the user code that produced `node`, if known."""
    return node.meta.get(NODE_SOURCE)


@dataclass
class Program:
    """An aten FX graph captured from a user's callable.

    `graph_module` takes the flattened tensor inputs in order (`input_names`) and returns a flat tuple
    of tensors: the forward outputs first (`num_forward_outputs` of them), then, when `backward`, one
    gradient per input that requires grad (`grad_input_names`, same order).
    """

    graph_module: torch.fx.GraphModule
    example_inputs: tuple[torch.Tensor, ...]
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    num_forward_outputs: int
    backward: bool = False
    grad_input_names: tuple[str, ...] = ()
    name: str = "program"

    @property
    def graph(self) -> torch.fx.Graph:
        return self.graph_module.graph

    def nodes(self) -> Iterator[torch.fx.Node]:
        return iter(self.graph.nodes)

    def node(self, roundoff_id: str) -> torch.fx.Node:
        """The node with stable id `roundoff_id`; KeyError naming the id if absent."""
        for n in self.graph.nodes:
            if n.meta.get(NODE_ID) == roundoff_id:
                return n
        raise KeyError(f"no node with id {roundoff_id!r} in program {self.name!r}")
