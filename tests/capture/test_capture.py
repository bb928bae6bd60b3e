"""capture() on small programs: source lines, cotangents, dict outputs, unused inputs."""

from __future__ import annotations

import inspect

import pytest
import torch
from capture_helpers import assert_bitwise_equal, eager_outputs

from roundoff.capture import capture, node_id, node_source

aten = torch.ops.aten


def scaled_diff(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    max_scaled = x * scale
    return torch.exp(max_scaled - x * scale)


def _line(fn: object, text: str) -> str:
    lines, start = inspect.getsourcelines(fn)  # type: ignore[arg-type]
    return f"test_capture.py:{start + next(i for i, s in enumerate(lines) if text in s)}"


def test_forward_and_backward_nodes_map_to_the_line_that_made_them() -> None:
    """Forward ops carry their own line; backward ops carry the line of the forward op they
    differentiate (exp's backward multiplies by exp's output: that mul gets exp's line)."""
    x = torch.tensor(3.0, requires_grad=True)
    s = torch.tensor(0.5, requires_grad=True)
    program = capture(scaled_diff, x, s, backward=True)
    first, second = _line(scaled_diff, "max_scaled = x"), _line(scaled_diff, "torch.exp(")
    by_target: dict[str, list[str | None]] = {}
    for n in program.nodes():
        by_target.setdefault(str(n.target), []).append(node_source(n))
    assert by_target["aten.mul.Tensor"][:2] == [first, second]
    assert by_target["aten.sub.Tensor"] == [second] and by_target["aten.exp.default"] == [second]
    exp = next(n for n in program.nodes() if n.target is aten.exp.default)
    grad_of_exp = [u for u in exp.users if u.target is aten.mul.Tensor]
    assert grad_of_exp and all(node_source(u) == second for u in grad_of_exp)
    assert {node_source(n) for n in program.nodes()} <= {first, second, None}


def test_nodes_of_an_nn_sequential_name_the_module_that_made_them() -> None:
    """Trial 98: every op of a MobileNet built from ``nn.Sequential`` was made in its one ``self.features(x)``
    line; each node also names the module whose call made it, forward and backward, by attribute path from the
    outermost module called (the root: no name). Oracle: the modules' own names (``named_modules``)."""
    from roundoff.capture.program import node_module

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.features = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Sequential(torch.nn.Tanh(), torch.nn.Linear(8, 2)))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.features(x).sum()

    net = Net()
    names = {m: name for name, m in net.named_modules()}
    program = capture(lambda x: net(x) * 2, torch.randn(3, 4), backward=True)
    modules = {node_module(n) for n in program.nodes() if n.op == "call_function"}
    assert modules == {names[net.features[0]], names[net.features[1][0]], names[net.features[1][1]], None}, modules
    tanh = next(n for n in program.nodes() if n.target is aten.tanh.default)
    assert node_module(tanh) == "features.1.0"
    assert any(node_module(n) == "features.1.0" for n in program.nodes() if n.target is aten.tanh_backward.default)
    mm = [n for n in program.nodes() if n.target is aten.mm.default]  # (the backward's matmuls too)
    assert {node_module(n) for n in mm} == {"features.0", "features.1.1"}
    assert node_module(next(n for n in program.nodes() if n.target is aten.sum.default)) is None  # the root's own op
    seq = torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.ReLU())  # a root indexing its layers
    program = capture(seq, torch.randn(3, 4))
    assert {node_module(n) for n in program.nodes() if n.op == "call_function"} == {"Sequential.0", "Sequential.1"}


def test_a_layer_called_through_a_slice_keeps_its_path_and_a_module_made_on_the_fly_adds_nothing() -> None:
    """Trial 100: transformers runs its decoder layers as ``self.layers[: n]`` (a new ModuleList holding them), and
    every Qwen2 node was named ``model.Qwen2DecoderLayer...`` (no layer index); a module its caller makes on
    the fly added ``Func.Func``. Oracle: the modules' names in the root's tree (``named_modules``)."""
    from roundoff.capture.program import node_module

    class Stack(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for layer in self.layers[:2]:
                x = torch.nn.Tanh()(layer(x))  # (a Tanh made on the fly, in no module's tree)
            return x.sum()

    net = Stack()
    names = {m: name for name, m in net.named_modules()}
    program = capture(net, torch.randn(3, 4))
    mms = [n for n in program.nodes() if n.target in (aten.addmm.default, aten.mm.default)]
    assert [node_module(n) for n in mms] == [names[net.layers[0]], names[net.layers[1]]] == ["layers.0", "layers.1"]
    assert {node_module(n) for n in program.nodes() if n.target is aten.tanh.default} == {None}  # the root's call


def test_cotangents_are_inputs_and_match_eager_vjp() -> None:
    def f(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return a * b, torch.tanh(a) + b

    g = torch.Generator().manual_seed(1)
    a, b = (torch.randn(16, generator=g).to(torch.bfloat16).requires_grad_() for _ in range(2))
    cots = [torch.randn(16, generator=g).to(torch.bfloat16) for _ in range(2)]
    program = capture(f, a, b, backward=True, cotangents=cots)
    assert program.input_names == ("a", "b", "cotangent0", "cotangent1")
    assert program.output_names == ("out0", "out1", "grad_a", "grad_b")
    want = eager_outputs(f, (a, b), True, cotangents=cots)
    for name, got, w in zip(
        program.output_names, program.graph_module(*program.example_inputs), want
    ):
        assert_bitwise_equal(got, w, f"capture(f, a, b, backward=True, cotangents=cots)  # {name}")


def test_dict_outputs_and_unused_input_gradient() -> None:
    """Dict outputs are named by key; an input the outputs do not use gets a zero gradient."""

    def f(x: torch.Tensor, unused: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"sq": x * x, "neg": -x}

    x = torch.randn(8, requires_grad=True)
    unused = torch.randn(8, requires_grad=True)
    program = capture(f, x, unused, backward=True, name="dicty")
    assert program.name == "dicty" and program.num_forward_outputs == 2
    assert program.output_names == ("sq", "neg", "grad_x", "grad_unused")
    sq, _, gx, gu = program.graph_module(x, unused)
    assert_bitwise_equal(sq, x * x, "capture(dict f)")
    assert_bitwise_equal(
        gx, torch.autograd.grad((x * x).sum() + (-x).sum(), x)[0], "capture(dict f) grad"
    )
    assert torch.equal(gu, torch.zeros(8))


def test_program_node_lookup() -> None:
    program = capture(scaled_diff, torch.tensor(3.0), torch.tensor(0.5))
    assert node_id(program.node("n2")) == "n2"
    with pytest.raises(KeyError, match="no node with id 'n99'"):
        program.node("n99")
