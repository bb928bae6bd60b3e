"""Ops that Inductor's decompositions and autograd really emit are all modeled.

Oracle: the graph torch itself produces — a forward+backward traced with make_fx under Inductor's
decomposition table (select_decomp_table), and the same without decompositions (eager-level ops).
"""

from __future__ import annotations

import pytest
import torch
import torch._inductor.lowering
import torch.nn.functional as F
from torch._inductor.decomposition import select_decomp_table
from torch.fx.experimental.proxy_tensor import make_fx

from roundoff.ops import OpClass, classify, op_name


def _block(x: torch.Tensor, w: torch.Tensor, ln_w: torch.Tensor, emb: torch.Tensor,
           idx: torch.Tensor, conv_w: torch.Tensor) -> torch.Tensor:  # fmt: skip
    h = F.layer_norm(x, (x.shape[-1],), ln_w) + emb[idx]
    h = F.gelu(h @ w) * torch.sigmoid(h) + F.silu(h) - torch.tanh(h) * 0.5
    q = h.unsqueeze(0).unsqueeze(0)
    a = F.scaled_dot_product_attention(q, q, q, is_causal=True).squeeze(0).squeeze(0)
    s = torch.softmax(a, dim=-1) + torch.log_softmax(h, dim=-1).exp() * h.rsqrt().abs()
    r = s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + 1e-6)
    c = F.conv1d(r.t().unsqueeze(0), conv_w, padding=1).squeeze(0).t()
    m = F.max_pool1d(c.t().unsqueeze(0), 2).sum()
    return torch.where(r > 0, r, F.relu(-r)).amax() + c.var() + m + F.cross_entropy(r, idx)


def _fwd_bwd(*args: torch.Tensor) -> tuple[torch.Tensor, ...]:
    out = _block(*args)
    grads = torch.autograd.grad(out, [a for a in args if a.requires_grad])
    return (out, *grads)


def _inputs(dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    n, d = 8, 16
    x = torch.randn(n, d, generator=g).to(dtype).requires_grad_()
    w = torch.randn(d, d, generator=g).to(dtype).requires_grad_()
    ln_w = torch.randn(d, generator=g).to(dtype).requires_grad_()
    emb = torch.randn(n, d, generator=g).to(dtype).requires_grad_()
    conv_w = torch.randn(d, d, 3, generator=g).to(dtype).requires_grad_()
    idx = torch.arange(n) % d
    return x, w, ln_w, emb, idx, conv_w


@pytest.mark.parametrize("decomposed", [True, False], ids=["inductor-decomp", "eager-ops"])
def test_forward_backward_ops_all_modeled(decomposed: bool) -> None:
    table = select_decomp_table() if decomposed else {}
    gm = make_fx(_fwd_bwd, decomposition_table=table)(*_inputs(torch.bfloat16))
    targets = {n.target for n in gm.graph.nodes if n.op == "call_function"}
    assert len(targets) > 20, f"traced graph suspiciously small: {sorted(map(op_name, targets))}"
    unmodeled = sorted(op_name(t) for t in targets if classify(t).op_class is OpClass.UNMODELED)
    assert not unmodeled, (
        f"ops emitted ({'with' if decomposed else 'without'} Inductor decompositions) but UNMODELED: "
        f"{unmodeled}; repro: pytest tests/ops/test_ops_emitted.py -k {decomposed}"
    )
