"""Outputs are named after the captured function's ``return`` statement (trial 75: an AdamW step's
``return p, m, v`` was reported as ``out0``, ``out1``, ``out2``)."""

from __future__ import annotations

import torch

from roundoff.analyze import check
from roundoff.capture import capture


def adam_step(p: torch.Tensor, g: torch.Tensor, m: torch.Tensor, v: torch.Tensor):  # type: ignore[no-untyped-def]
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    p = p - 1e-3 * m / (v.sqrt() + 1e-8)
    return p, m, v


def _xs(n: int = 4) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return [torch.randn(16, generator=g).half() for _ in range(n)]


def test_a_tuple_of_variables_is_named_by_them_and_check_reports_those_names() -> None:
    program = capture(adam_step, *_xs())
    assert program.output_names == ("p", "m", "v")
    assert [o.name for o in check(program, program.example_inputs, "inductor-cpu").outputs] == ["p", "m", "v"]


def test_one_returned_variable_or_attribute_chain_is_its_name() -> None:
    def loss_of(x: torch.Tensor) -> torch.Tensor:
        loss = (x.float() ** 2).mean()
        return loss

    class Head(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(16, 4).half()

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            self.last = self.proj(x)
            return self.last, self.proj.weight * 2

    assert capture(loss_of, _xs(1)[0]).output_names == ("loss",)
    assert capture(Head(), _xs(1)[0]).output_names == ("self.last", "out1")


def test_expressions_disagreeing_returns_repeats_and_unreadable_sources_keep_positional_names() -> None:
    def mixed(a: torch.Tensor, b: torch.Tensor):  # type: ignore[no-untyped-def]
        c = a + b
        return a * b, c, self_call(c)

    def self_call(c: torch.Tensor) -> torch.Tensor:
        return c.exp()

    def two_returns(a: torch.Tensor, b: torch.Tensor, swap: bool = False):  # type: ignore[no-untyped-def]
        def inner() -> tuple[torch.Tensor, torch.Tensor]:
            return b, a  # a nested function's return says nothing of the outer one's
        x, y = a + 1, b + 1
        if swap:
            return y, x
        return x, y

    def twice(a: torch.Tensor, b: torch.Tensor):  # type: ignore[no-untyped-def]
        s = a + b
        return s, s

    a, b = _xs(2)
    assert capture(mixed, a, b).output_names == ("out0", "c", "out2")
    assert capture(two_returns, a, b).output_names == ("out0", "out1")
    assert capture(twice, a, b).output_names == ("out0", "out1")
    assert capture(lambda a, b: (a + b, a * b), a, b).output_names == ("out0", "out1")


def test_a_name_a_gradient_would_take_stays_positional() -> None:
    def f(a: torch.Tensor):  # type: ignore[no-untyped-def]
        grad_a = a * 2
        y = a.exp()
        return y, grad_a

    a = _xs(1)[0].requires_grad_()
    assert capture(f, a, backward=True).output_names == ("y", "out1", "grad_a")
