"""What the fp64 oracle inherits from the capture: code that branches on the dtype it was run in.

The oracle runs the captured graph in fp64. A model that tests its dtype in Python (transformers' T5
clamps its fp16 hidden states to ``torch.finfo(torch.float16).max``) is captured with the branch its
16-bit run took, so the oracle clamps at fp16's range too: it is fp64 of that graph, not of the model run
in fp64 (trial 58: T5's loss 6.398 under the oracle, 6.354 for the fp64 model).
"""

from __future__ import annotations

import torch

from roundoff.capture.program import Program, node_id, node_source
from roundoff.numerics import get_format

#: 16-bit formats whose largest finite value (or within `NEAR` of it: T5's ``max - 1000``) marks a constant
FORMATS = ("fp16", "bf16")
NEAR = 0.95


def dtype_branch_notes(program: Program) -> tuple[str, ...]:
    """One note per 16-bit format whose range limit the program holds as a constant, where the program
    computes in that format: the first such node and its source line."""
    dtypes = {v.dtype for n in program.graph.nodes if isinstance(v := n.meta.get("val"), torch.Tensor)}
    notes = []
    for name in FORMATS:
        fmt = get_format(name)
        if fmt.torch_dtype not in dtypes:
            continue
        for n in program.graph.nodes:
            hit = next((a for a in (*n.args, *n.kwargs.values()) if isinstance(a, float)
                        and NEAR * fmt.max_finite <= abs(a) <= fmt.max_finite), None)
            if hit is not None:
                source = node_source(n)
                dtype = str(fmt.torch_dtype).removeprefix("torch.")
                near = "" if abs(hit) == fmt.max_finite else " or near it"
                where = f"`{node_id(n)}`" + (f" at {source}" if source else "")
                why = ("an attention mask filled with torch.finfo(x.dtype).min" if hit < 0 else
                       "a clamp to torch.finfo(x.dtype).max, as T5's float16-only clamp")  # (trial 78: a mask)
                notes.append(
                    f"the fp64 oracle runs the graph as captured, with {hit:g}, {dtype}'s {'most negative' if hit < 0 else 'largest'} "
                    f"finite value{near} ({where}), which code written for its dtype holds ({why}): it is fp64 of "
                    "what the 16-bit run computed, not of the model run in fp64")
                break
    return tuple(notes)
