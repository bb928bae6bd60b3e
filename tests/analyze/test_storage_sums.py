"""Trial 49: a bf16 mixture-of-experts step whose expert weights are gathered per token (``w1[idx]``):
eager CPU's gradient, ``index_put(accumulate=True)``, adds each token's row into the bf16 result one at
a time, ~100x bf16's rounding off fp64, and check passed it (emulated as one rounding of an fp32 sum).
Oracle: the real bf16 eager step against the fp64 step, by hand."""

from __future__ import annotations

import torch

from roundoff.analyze import check


def test_a_gradient_summed_in_16_bits_by_its_kernel_fails_and_is_named_with_its_fix():
    g = torch.Generator().manual_seed(0)
    w = torch.randn(2, 16, generator=g).bfloat16()
    idx = torch.randint(0, 2, (4000,), generator=g)
    x = (torch.randn(4000, 16, generator=g) + 1).bfloat16()

    def step(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return (w[idx] * x).float().sum()  # the gradient of w[idx]: index_put(accumulate=True)

    def grad(dtype: torch.dtype) -> torch.Tensor:
        leaf = w.to(dtype).requires_grad_()
        step(leaf, x.to(dtype)).backward()
        return leaf.grad.double()

    exact, real = grad(torch.float64), grad(torch.bfloat16)
    limit = 16 * float((exact.bfloat16().double() - exact).norm())
    assert float((real - exact).norm()) > limit  # real eager is that far off

    r = check(step, (w, x), "eager", against="oracle", backward=True)
    (out,) = [o for o in r.outputs if o.name.startswith("grad")]
    assert not out.passes and r.diverges
    first = next(n for n in r.nodes if n.node_id == r.culprits[0])
    assert first.op == "index_put", r.culprits
    assert "adds each term into its bfloat16 result one at a time" in r.explanations[0], r.explanations[0]
