"""Functions that close over a model: parameters become named graph inputs with gradients, and the
captured graph reproduces real eager outputs and gradients bit for bit."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest
import torch
from capture_helpers import assert_matches_eager

from roundoff.capture import CaptureError, capture


class Block(torch.nn.Module):
    """A tiny MLP block with a buffer, in bf16."""

    def __init__(self, d: int = 8) -> None:
        super().__init__()
        self.up = torch.nn.Linear(d, 2 * d)
        self.down = torch.nn.Linear(2 * d, d, bias=False)
        self.register_buffer("scale", torch.full((d,), 0.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.nn.functional.silu(self.up(x))) * self.scale.to(x.dtype)


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([Block(), Block()])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = x + layer(x)
        return x


torch.manual_seed(0)
NET = Net().to(torch.bfloat16)  # a module-level global, reached by name from `uses_global`
FREE = torch.nn.Parameter(torch.randn(8, 8).to(torch.bfloat16))


def uses_global(x: torch.Tensor) -> torch.Tensor:
    return NET(x)


def helper_then_global(x: torch.Tensor) -> torch.Tensor:
    return uses_global(x) @ FREE  # a helper function's globals are searched too


class Trainer:
    """A plain object holding a model; its bound method is the target."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model

    def step(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x).square()


def _x() -> torch.Tensor:
    return torch.randn(4, 8, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)


def _net_names(prefix: str) -> list[str]:
    dot = f"{prefix}." if prefix else ""
    return [dot + n for n, _ in NET.named_parameters()] + [dot + n for n, _ in NET.named_buffers()]


def _closure_target() -> tuple[Callable[..., Any], list[str]]:
    lin = torch.nn.Linear(8, 8).to(torch.bfloat16)

    def f(x: torch.Tensor) -> torch.Tensor:
        return lin(x)

    return f, ["lin.weight", "lin.bias"]


def _research_style_target() -> tuple[Callable[..., Any], list[str], list[torch.Tensor]]:
    """Parameters as research code keeps them (trial 83): plain leaf tensors that require grad, in a dict."""
    g = torch.Generator().manual_seed(5)
    params = {"w1": torch.randn(8, 16, generator=g).to(torch.bfloat16).requires_grad_(),
              "b1": torch.zeros(16, dtype=torch.bfloat16, requires_grad=True),
              "w2": torch.randn(16, 8, generator=g).to(torch.bfloat16).requires_grad_()}

    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(x @ params["w1"] + params["b1"]) @ params["w2"]

    return f, ["params.w1", "params.b1", "params.w2"], list(params.values())


def _cases() -> list[tuple[str, Callable[..., Any], list[str], list[torch.Tensor]]]:
    f, f_names = _closure_target()
    lin = f.__closure__[0].cell_contents  # type: ignore[index]
    layers = [torch.nn.Linear(8, 8).to(torch.bfloat16) for _ in range(2)]
    return [
        ("closure cell", f, f_names, list(lin.parameters())),
        ("global", uses_global, _net_names("NET"), list(NET.parameters())),
        (
            "helper function's global and a free Parameter",
            helper_then_global,
            [*_net_names("NET")[:-2], "FREE", *_net_names("NET")[-2:]],
            [*NET.parameters(), FREE],
        ),
        ("bound method of a module", NET.forward, _net_names(""), list(NET.parameters())),
        ("bound method of an object", Trainer(NET).step, _net_names("model"), list(NET.parameters())),
        (
            "lambda over a list of modules",
            lambda x: layers[1](layers[0](x)),
            ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"],
            [p for m in layers for p in m.parameters()],
        ),
        (
            "functools.partial",
            functools.partial(lambda x, m: m(x), m=NET),
            _net_names("partial.kw.m"),
            list(NET.parameters()),
        ),
        ("dict of leaf tensors that require grad", *_research_style_target()),
    ]


CASES = _cases()


@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize("label,fn,names,params", CASES, ids=[c[0] for c in CASES])
def test_closed_over_parameters_are_named_inputs_with_eager_gradients(
    label: str, fn: Callable[..., Any], names: list[str], params: list[torch.Tensor], backward: bool
) -> None:
    x = _x().requires_grad_(backward)
    program = capture(fn, x, backward=backward)
    repro = f"capture(<{label}>, x, backward={backward})"
    assert program.input_names[1:] == tuple(names), repro
    assert not [n for n in program.nodes() if n.op == "get_attr"], f"constants left: {repro}"
    if backward:
        want_grads = ("x", *[n for n in names if not n.endswith("scale")])
        assert program.grad_input_names == want_grads, repro
    assert_matches_eager(program, fn, (x,), repro, params=params)


def test_token_ids_with_float_parameters() -> None:
    """A function of integer ids only is a valid program: the embedding's weights are its floats."""
    emb = torch.nn.Embedding(16, 8).to(torch.bfloat16)
    head = torch.nn.Linear(8, 16, bias=False).to(torch.bfloat16)

    def lm(ids: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(head(emb(ids)).flatten(0, 1).float(), ids.flatten())

    ids = torch.randint(0, 16, (2, 5), generator=torch.Generator().manual_seed(1))
    program = capture(lm, ids, backward=True)
    assert program.grad_input_names == ("emb.weight", "head.weight")
    params = [emb.weight, head.weight]
    assert_matches_eager(program, lm, (ids,), "capture(lm, ids, backward=True)", params=params)


def test_nothing_floating_point_is_refused() -> None:
    with pytest.raises(CaptureError, match="nothing in the program is floating point") as info:
        capture(lambda ids: ids * 2 + 1, torch.arange(4))
    assert info.value.construct == "no floating-point value"


def test_name_collision_and_closed_over_constant() -> None:
    """A state name equal to an argument name gets a suffix; a closed-over plain tensor stays a
    constant, named after its variable."""
    weight = torch.nn.Parameter(torch.randn(4))
    mask = torch.tensor([1.0, 0.0, 1.0, 1.0])

    def f(w: torch.Tensor) -> torch.Tensor:
        return w * weight * mask

    g = functools.partial(f)
    x = torch.randn(4, requires_grad=True)
    program = capture(lambda weight: g(weight), x, backward=True)
    assert program.input_names == ("weight", "weight@2")
    assert {str(n.target) for n in program.nodes() if n.op == "get_attr"} == {"mask"}
    assert_matches_eager(program, lambda w: g(w), (x,), "capture(collision)", params=[weight])


def test_batchnorm_running_stats_update_once_and_graph_keeps_old_values() -> None:
    """Train-mode BatchNorm updates its buffers during the one capture run (as eager would); the
    graph leaves the update out and holds the buffers' values from before the run."""
    bn = torch.nn.BatchNorm1d(4).train()
    before = bn.running_mean.clone()
    calls = []

    def f(x: torch.Tensor) -> torch.Tensor:
        calls.append(1)
        return bn(x)

    x = torch.randn(6, 4, requires_grad=True)
    program = capture(f, x, backward=True)
    assert len(calls) == 1, "the user's function must run exactly once per capture"
    assert bn.num_batches_tracked.item() == 1 and not torch.equal(bn.running_mean, before)
    index = program.input_names.index("bn.running_mean")
    assert torch.equal(program.example_inputs[index], before)
    bn.running_mean.copy_(before)
    bn.num_batches_tracked.zero_()
    repro = "capture(bn f, x, backward=True)"
    assert_matches_eager(program, f, (x,), repro, params=list(bn.parameters()))
