"""capture keeps an op eager runs as one backend kernel as one node, on every torch (capture.fused)."""

from __future__ import annotations

import torch
import torch._ops
from capture_helpers import assert_bitwise_equal, eager_outputs
from torch.fx.experimental.proxy_tensor import make_fx

from roundoff.capture import capture
from roundoff.capture.fused import eager_kernels_kept, tracer_decomposes_fused_kernels

aten = torch.ops.aten
REPRO = "capture(lambda x: F.silu(x) * x, x_bf16[8, 64], backward=True)"


def _silu_mul(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.silu(x) * x


def _inputs() -> torch.Tensor:
    g = torch.Generator().manual_seed(3)
    return torch.randn(8, 64, generator=g).to(torch.bfloat16).requires_grad_()


def test_silu_backward_stays_one_node_and_matches_eager() -> None:
    x = _inputs()
    program = capture(_silu_mul, x, backward=True)
    targets = [n.target for n in program.graph_module.graph.nodes]
    assert aten.silu_backward.default in targets, f"{targets}; repro: {REPRO}"
    got = program.graph_module(*program.example_inputs)
    for name, g, w in zip(program.output_names, got, eager_outputs(_silu_mul, (x,), True)):
        assert_bitwise_equal(g, w, f"{REPRO}  # output {name}")


def test_plain_make_fx_shows_the_cause_where_detected() -> None:
    """Without the shim, make_fx on a torch flagged by `tracer_decomposes_fused_kernels` records
    silu_backward's CompositeImplicitAutograd decomposition, whose per-op bf16 roundings differ from
    eager's fused kernel; elsewhere it keeps the op. With the shim, both keep it."""
    x, go = _inputs().detach(), torch.randn(8, 64).to(torch.bfloat16)

    def f(go: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return aten.silu_backward.default(go, x)

    plain = make_fx(f, tracing_mode="fake")(go, x)
    with eager_kernels_kept():
        kept = make_fx(f, tracing_mode="fake")(go, x)
    plain_targets = [n.target for n in plain.graph.nodes if n.op == "call_function"]
    kept_targets = [n.target for n in kept.graph.nodes if n.op == "call_function"]
    assert kept_targets == [aten.silu_backward.default], kept_targets
    want = aten.silu_backward.default(go, x)
    assert_bitwise_equal(kept(go, x), want, "make_fx(silu_backward) under eager_kernels_kept")
    if tracer_decomposes_fused_kernels():
        assert aten.silu_backward.default not in plain_targets, plain_targets
        differ = (plain(go, x).view(torch.int16) != want.view(torch.int16)).sum().item()
        assert differ > 0, "the decomposition was expected to round differently from the kernel"
    else:
        assert plain_targets == [aten.silu_backward.default], plain_targets


def test_decompose_is_restored_and_composite_only_ops_still_decompose() -> None:
    before = torch._ops.OpOverload.decompose
    x = torch.randn(4, 8)
    w = torch.randn(3, 8)
    with eager_kernels_kept():
        gm = make_fx(lambda x, w: aten.linear.default(x, w), tracing_mode="fake")(x, w)
    assert torch._ops.OpOverload.decompose is before
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert aten.linear.default not in targets, targets  # no CPU kernel: decomposed, as in eager
    torch.testing.assert_close(gm(x, w), torch.nn.functional.linear(x, w), rtol=0, atol=0)
