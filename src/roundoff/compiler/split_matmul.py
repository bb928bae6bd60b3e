"""fp64 matmuls from exact bf16 products: a cheaper fp64 reference for checking mode.

Contract. An fp64 operand ``x`` is split into three bf16 pieces, each the round-to-nearest-even
bf16 value of what the previous ones leave: ``x1 = bf16(x)``, ``x2 = bf16(x - x1)``,
``x3 = bf16(x - x1 - x2)`` (the remainders are exact in fp64; each rounding leaves at most
bf16's unit roundoff 2**-8 of what it rounds). Then ``|x - (x1 + x2 + x3)| <= 2**-24 |x|`` for
``|x|`` in bf16's normal range (the fp32 exponent range), plus at most 2**-134 where a remainder
falls below bf16's subnormals. An operand known to be exactly a bf16 value (the fp64
copy of a bf16 parameter or argument) is its own single piece. A product of two pieces (8
significant bits each) is exact in fp32; each piece pair ``(i, j)`` with ``i + j <= 2`` (0-based:
the terms down to ~2**-16 relative) is one bf16 GEMM accumulating in fp32 (``out_dtype=float32``
on CUDA; an fp32 matmul of the pieces elsewhere, whose products are equally exact), and the terms
are summed in fp64, smallest first.

Error per output element: truncation (pieces and dropped terms) ``<= 4 * 2**-24 * sum_k |a_ik
b_kj|`` plus fp32 accumulation, ``<= K * 2**-24 * sum_k |a_ik b_kj|`` at worst and about
``sqrt(K) * 2**-24`` relative in practice: ~1e-6 relative for K in the thousands, three orders of
magnitude below bf16's unit roundoff (2**-8 ~ 3.9e-3). So a verdict of ``same(eager, compiled, reference)`` (RMSE ratios) can change only
for an output within that margin of the threshold. Cost: 6 bf16 GEMMs per product (3 when one
side is exactly bf16, whose bf16 source is used as it is), which on an H200 is several times
cheaper than one fp64 GEMM, plus a few elementwise passes in fp32 and bf16.

`SplitMatmulMode` routes fp64 ``mm``/``bmm``/``addmm``/``baddbmm`` (what ``linear``, ``matmul`` and
the math path of ``scaled_dot_product_attention`` reach) through `split_matmul` while it is active;
every other op runs as it is.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_aten = torch.ops.aten
_PRODUCTS = frozenset({_aten.mm.default, _aten.bmm.default})
_BIASED = frozenset({_aten.addmm.default, _aten.baddbmm.default})


def split_bf16(x: torch.Tensor) -> list[torch.Tensor]:
    """Three bf16 tensors whose sum is `x` to within 2**-23 |x| (see the module docstring)."""
    x32 = x.float()
    first = x32.to(torch.bfloat16)
    rest = x32 - first  # exact in fp32: what an 8-bit rounding of a 24-bit value leaves
    second = rest.to(torch.bfloat16)
    return [first, second, (rest - second).to(torch.bfloat16)]


def _product_fp32(x: torch.Tensor, y: torch.Tensor, acc: torch.Tensor | None) -> torch.Tensor:
    """``x @ y (+ acc)`` of two bf16 tensors (2-D or batched 3-D) into fp32: products exact,
    accumulated in fp32; `acc` (fp32) is added in the GEMM's epilogue where torch can, in place."""
    mm, addmm = (torch.mm, torch.addmm) if x.dim() == 2 else (torch.bmm, torch.baddbmm)
    if x.is_cuda:
        try:
            if acc is None:
                return mm(x, y, out_dtype=torch.float32)
            return addmm(acc, x, y, out_dtype=torch.float32, out=acc)
        except (TypeError, RuntimeError):  # a torch without these out_dtype overloads
            pass
    term = mm(x.float(), y.float())
    return term if acc is None else acc.add_(term)


def split_matmul(
    a: torch.Tensor,
    b: torch.Tensor,
    a_pieces: list[torch.Tensor] | None = None,
    b_pieces: list[torch.Tensor] | None = None,
) -> torch.Tensor:
    """fp64 ``a @ b`` (2-D, or 3-D batched) from bf16 pieces, accumulated in fp32.

    `*_pieces` gives an operand's pieces when known (one bf16 tensor for an exactly-bf16 operand);
    else the operand is split with `split_bf16`. The piece products are added smallest first.
    """
    pa = a_pieces if a_pieces is not None else split_bf16(a)
    pb = b_pieces if b_pieces is not None else split_bf16(b)
    terms = sorted(
        ((i, j) for i in range(len(pa)) for j in range(len(pb)) if i + j <= 2),
        key=lambda ij: -(ij[0] + ij[1]),
    )
    out: torch.Tensor | None = None
    for i, j in terms:
        out = _product_fp32(pa[i], pb[j], out)
    assert out is not None
    return out.double()


class SplitMatmulMode(TorchDispatchMode):
    """While active, fp64 matmuls run as `split_matmul`.

    `exact` maps the storage pointer of each fp64 tensor that holds exactly bf16 values to its
    bf16 source, or to None where the source's layout differs (then the operand is converted);
    the caller keeps those tensors alive while the mode is on.
    """

    def __init__(self, exact: dict[int, torch.Tensor | None]) -> None:
        super().__init__()
        self.exact = exact
        # The pieces of the last two split operands, with the operand itself (held, so its memory
        # cannot be reused for another tensor of the same geometry; its version counter catches
        # in-place writes): q/k/v and gate/up projections read one activation.
        self._recent: list[tuple[tuple, torch.Tensor, list[torch.Tensor]]] = []

    def _split(self, t: torch.Tensor) -> list[torch.Tensor]:
        key = (t.untyped_storage().data_ptr(), t.shape, t.stride(), t.storage_offset(), t._version)
        for held_key, _held, pieces in self._recent:
            if held_key == key:
                return pieces
        pieces = split_bf16(t)
        self._recent = [*self._recent[-1:], (key, t, pieces)]
        return pieces

    def _pieces(self, t: torch.Tensor) -> list[torch.Tensor]:
        ptr = t.untyped_storage().data_ptr()
        if ptr not in self.exact:
            return self._split(t)
        source = self.exact[ptr]
        if source is None:
            return [t.to(torch.bfloat16)]
        return [source.as_strided(t.size(), t.stride(), t.storage_offset())]

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None
    ) -> Any:
        kwargs = kwargs or {}
        if func in _PRODUCTS or func in _BIASED:
            offset = 1 if func in _BIASED else 0
            a, b = args[offset], args[offset + 1]
            if a.dtype == torch.float64 and b.dtype == torch.float64:
                prod = split_matmul(a, b, self._pieces(a), self._pieces(b))
                if func in _PRODUCTS:
                    return prod
                beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
                prod = prod if alpha == 1 else prod * alpha
                return prod if beta == 0 else prod + (args[0] if beta == 1 else args[0] * beta)
        return func(*args, **kwargs)
