"""User-defined differentiable ops capture and reproduce eager: a custom ``torch.autograd.Function``
(which used to abort the process with backward=True) and a ``torch.library`` custom op."""

from __future__ import annotations

import torch
from capture_helpers import assert_matches_eager

from roundoff.capture import capture, node_source


class ScaledSquare(torch.autograd.Function):
    """x * x * s with a hand-written backward; reads a device and a Python number from a tensor,
    the calls that reached roundoff's source recorder with no tracer active."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor) -> torch.Tensor:
        scale = torch.tensor(1.5, device=x.device)
        ctx.save_for_backward(x, scale)
        return x * x * scale

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, g: torch.Tensor) -> torch.Tensor:
        x, scale = ctx.saved_tensors  # type: ignore[attr-defined]
        return g * 2 * x * scale


def uses_function(x: torch.Tensor) -> torch.Tensor:
    return ScaledSquare.apply(torch.tanh(x)).sum(-1)


@torch.library.custom_op("roundoff_test::softclip", mutates_args=())
def softclip(x: torch.Tensor) -> torch.Tensor:
    return x / (1 + x.abs())


@softclip.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def _softclip_backward(ctx: object, g: torch.Tensor) -> torch.Tensor:
    x = ctx.x  # type: ignore[attr-defined]
    return g / (1 + x.abs()) ** 2


def _softclip_setup(ctx: object, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
    ctx.x = inputs[0]  # type: ignore[attr-defined]


softclip.register_autograd(_softclip_backward, setup_context=_softclip_setup)


def uses_custom_op(x: torch.Tensor) -> torch.Tensor:
    return softclip(x * 3) * 2


def test_autograd_function_with_backward() -> None:
    x = torch.randn(4, 6).to(torch.bfloat16).requires_grad_()
    program = capture(uses_function, x, backward=True)
    assert_matches_eager(program, uses_function, (x,), "capture(uses_function, x, backward=True)")
    assert all(node_source(n) for n in program.nodes() if n.op == "call_function"
               and n.target is torch.ops.aten.tanh.default)


def test_library_custom_op_with_autograd() -> None:
    x = torch.randn(4, 6, requires_grad=True)
    program = capture(uses_custom_op, x, backward=True)
    targets = {str(n.target) for n in program.nodes()}
    assert "roundoff_test.softclip.default" in targets
    assert_matches_eager(program, uses_custom_op, (x,), "capture(uses_custom_op, x, backward=True)")
