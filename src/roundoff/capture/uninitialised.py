"""Memory a program allocates without initialising it (``torch.empty``), and reads before writing it.

``empty``'s values are whatever the allocator's memory held: a program that computes with them has no
defined result, and its runs (eager, compiled, fp64, emulated) differ by chance (trial 62: ``x +
torch.empty(4)`` checked "ok" once and "diverges" the next time). `uninitialised_read` finds such a read
in a captured graph: the allocation, or a view of it, read by an op other than one that writes into it
(``copy_``, ``fill_``, a random fill, a scatter into it: DeepseekV3's ``new_empty`` key states, filled
slice by slice, are fine). Runs fill such memory with NaN (`UNINITIALISED`), as torch's deterministic
mode does, so what a partly written allocation leaves is the same in every run.
"""

from __future__ import annotations

import operator

import torch.fx

#: allocations whose values are whatever memory held
UNINITIALISED = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted"})

#: ops whose result is a view of their first operand (the same memory, still unwritten)
_VIEWS = frozenset({
    "view", "_unsafe_view", "reshape", "slice", "select", "expand", "permute", "t", "transpose", "unsqueeze",
    "squeeze", "as_strided", "alias", "narrow", "unfold", "diagonal", "split", "split_with_sizes", "chunk",
    "unbind", "view_as", "expand_as", "movedim", "_reshape_alias", "flatten", "unflatten",
})
#: ops that write into their first operand without reading its values there (all of it or the part they write)
_WRITES_INTO = frozenset({
    "copy", "fill", "zero", "uniform", "normal", "bernoulli", "exponential", "geometric", "log_normal", "cauchy",
    "random", "slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter", "scatter",
    "index_copy", "index_fill", "masked_fill", "masked_scatter",
})


def packet_name(n: torch.fx.Node) -> str:
    """The aten op's name without its overload (``empty_like``), ``getitem``, or "" for other targets."""
    if n.target is operator.getitem:
        return "getitem"
    return getattr(getattr(n.target, "overloadpacket", None), "__name__", "")


def uninitialised_read(gm: torch.fx.GraphModule) -> tuple[torch.fx.Node, torch.fx.Node] | None:
    """The first (allocation, reader) where a node reads uninitialised memory (see the module docstring);
    None where none does. ``index_put`` reads its destination only where it accumulates."""
    unwritten: dict[torch.fx.Node, torch.fx.Node] = {}  # a node holding unwritten memory -> its allocation
    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        name = packet_name(n)
        val = n.meta.get("val")
        if name in UNINITIALISED and getattr(val, "numel", lambda: 0)() > 0:
            unwritten[n] = n
            continue
        held = [a for a in n.all_input_nodes if a in unwritten]
        if not held:
            continue
        first = n.args[0] if n.args else None
        if name in _VIEWS or name == "getitem":
            if first in unwritten:
                unwritten[n] = unwritten[first]
            continue
        accumulates = name in ("index_put", "_unsafe_index_put") and (
            (n.args[3] if len(n.args) > 3 else n.kwargs.get("accumulate", False)) is True)
        if (name in _WRITES_INTO or name in ("index_put", "_unsafe_index_put")) and not accumulates:
            held = [a for a in held if a is not first]  # its destination: written, not read
        if held:
            return unwritten[held[0]], n
    return None
