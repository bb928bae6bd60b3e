"""The fp64 oracle holding exact values as they are stored: the same values, less memory.

`OracleNumerics` converts every float input to fp64 when it loads it, and every view and cast of a
value is then an fp64 tensor too. `NarrowHeldOracle` computes the same fp64 values but keeps a value
that is only an exact copy of a narrower one in that narrower dtype: inputs (parameters, the batch),
casts (the oracle ignores them: a cast's value is its operand's) and views of a value not held in
fp64. fp64 holds every bf16/fp16/fp32 value exactly and every computing op reads its operands
converted to fp64, so each figure is bit for bit the one `OracleNumerics` gives; what changes is that
a run holding the values of a training step no longer holds an fp64 copy of every parameter and of
every value a caller substituted in its own dtype (`roundoff.observed.compare`'s observed buffers;
`check`'s interpreted screen). Outputs are finished in fp64, as `OracleNumerics` finishes them.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx
from torch.fx.node import map_aggregate

from roundoff.execute.devices import relocated
from roundoff.execute.formats import is_float
from roundoff.execute.node_numerics import OracleNumerics, Read, stride_free
from roundoff.execute.wide_kernels import call

_aten, _prims = torch.ops.aten, torch.ops.prims
#: Ops whose result is a view (or an exact copy) of their first operand's elements: run on the value
#: as held, in its own dtype.
_VIEWS = frozenset({
    _aten.view.default, _aten._unsafe_view.default, _aten.reshape.default, _aten.permute.default, _aten.t.default,
    _aten.transpose.int, _aten.expand.default, _aten.unsqueeze.default, _aten.squeeze.dim, _aten.squeeze.dims,
    _aten.squeeze.default, _aten.slice.Tensor, _aten.select.int, _aten.alias.default, _aten.clone.default,
})
#: Casts: the oracle's value of a cast is its operand's (`OracleNumerics` ignores casts).
_CASTS = frozenset({_prims.convert_element_type.default, _aten._to_copy.default})


class NarrowHeldOracle(OracleNumerics):
    """`OracleNumerics`' values, with inputs, casts and views of non-fp64 values held as stored (see
    the module). A value read from this side may be bf16/fp16/fp32: convert it to fp64 (exact) to use it."""

    def load_input(self, node: torch.fx.Node, value: Any) -> Any:
        return value

    def evaluate(self, node: torch.fx.Node, read: Read, fresh: bool = False) -> Any:
        first = node.args[0] if node.args else None
        if node.target in _CASTS or node.target in _VIEWS:
            held = read(first) if isinstance(first, torch.fx.Node) else None
            if is_float(held) and held.dtype != self.dtype and self._held_here(node, held):
                if node.target in _CASTS:
                    return held
                args = torch.fx.node.map_arg(node.args, read)
                kwargs = torch.fx.node.map_arg(relocated(node.kwargs, self.relocate), read)
                return call(stride_free(node.target), args, kwargs)
        return super().evaluate(node, read, fresh)

    def finish_output(self, node: torch.fx.Node, value: Any) -> Any:
        """An output as `OracleNumerics` gives it: fp64 (an output held narrow is converted, exactly)."""
        return map_aggregate(value, lambda v: v.to(self.dtype) if is_float(v) and v.dtype != self.dtype else v)

    @staticmethod
    def _held_here(node: torch.fx.Node, held: torch.Tensor) -> bool:
        """Whether `node` can run on `held` as stored: a view, or a cast to a float dtype that names no
        device (a cast to an integer dtype, or a copy to a device, computes as `OracleNumerics` does)."""
        if node.target not in _CASTS:
            return True
        dtype = node.args[1] if len(node.args) > 1 else node.kwargs.get("dtype")
        return (isinstance(dtype, torch.dtype) and dtype.is_floating_point and node.kwargs.get("device") is None
                and set(node.kwargs) <= {"dtype", "device", "layout", "memory_format", "non_blocking"})
