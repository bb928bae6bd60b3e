"""Unsupported programs and bad arguments: CaptureError naming the construct and the user's line."""

from __future__ import annotations

import inspect

import pytest
import torch

from roundoff.capture import CaptureError, capture


def _line_of(fn: object, text: str) -> str:
    """``"test_errors.py:LINE"`` of the first line of `fn` containing `text` (oracle: inspect)."""
    lines, start = inspect.getsourcelines(fn)  # type: ignore[arg-type]
    offset = next(i for i, line in enumerate(lines) if text in line)
    return f"test_errors.py:{start + offset}"


def mutates_input(x: torch.Tensor) -> torch.Tensor:
    y = x * 2
    x.add_(1)
    return y


def returns_float(x: torch.Tensor) -> float:
    return 3.0


def returns_dict_with_label(x: torch.Tensor) -> dict:  # trial 59: the str was dropped, the tensor checked
    return {"y": x * 2, "label": "run 1"}


def divides_by_zero(x: torch.Tensor) -> torch.Tensor:
    return x * (1 / 0)


def bad_shapes(x: torch.Tensor) -> torch.Tensor:
    return x @ torch.ones(3, 3)


CASES = [
    (mutates_input, "in-place mutation of an input", "x.add_(1)"),
    (returns_float, "non-tensor output", "def returns_float"),
    (returns_dict_with_label, "non-tensor output", "def returns_dict_with_label"),
    (divides_by_zero, "error in the program", "1 / 0"),
    (bad_shapes, "error in the program", "x @ torch.ones"),
]


@pytest.mark.parametrize("fn,construct,text", CASES, ids=[c[0].__name__ for c in CASES])
def test_error_names_construct_and_line(fn: object, construct: str, text: str) -> None:
    with pytest.raises(CaptureError) as info:
        capture(fn, torch.randn(8))  # type: ignore[arg-type]
    err = info.value
    repro = f"capture({fn.__name__}, torch.randn(8))"  # type: ignore[attr-defined]
    assert err.construct == construct, f"{err}; repro: {repro}"
    assert err.source == _line_of(fn, text), f"{err}; repro: {repro}"
    message = str(err)
    assert construct in message and err.source in message and "Traceback" not in message
    assert len(message.splitlines()) == 1, message
    assert isinstance(err, ValueError)


def steps_itself(x: torch.Tensor) -> torch.Tensor:
    loss = (x * x).sum()
    loss.backward()
    return loss


def steps_through_autograd(x: torch.Tensor) -> torch.Tensor:
    loss = (x * x).sum()
    torch.autograd.backward(loss)
    return loss


@pytest.mark.parametrize("fn,text", [(steps_itself, "loss.backward()"),
                                     (steps_through_autograd, "torch.autograd.backward")])
@pytest.mark.parametrize("backward", [False, True])
def test_a_function_running_its_own_backward_is_told_to_return_the_loss(
    fn: object, text: str, backward: bool
) -> None:
    """Unguarded, the first call fails inside autograd ("does not require grad") and the second,
    under backward=True, with torch's "backward through the graph a second time" at <string>:1."""
    with pytest.raises(CaptureError) as info:
        capture(fn, torch.randn(8, requires_grad=backward), backward=backward)  # type: ignore[arg-type]
    err = info.value
    assert err.construct == "backward inside the function", err
    assert err.source == _line_of(fn, text), err
    assert "return the loss" in str(err) and "--backward" in str(err)


@pytest.mark.parametrize("fn,text", [(steps_itself, "loss.backward()"),
                                     (steps_through_autograd, "torch.autograd.backward")])
def test_its_own_backward_is_named_before_nothing_requiring_grad(fn: object, text: str) -> None:
    """Trial 49: weights made inside the function that runs its own backward, under backward=True, got
    "no input requires grad" first; fixing that only led to this error. The cause of both comes first."""
    with pytest.raises(CaptureError) as info:
        capture(fn, torch.randn(8), backward=True)  # type: ignore[arg-type]
    assert info.value.construct == "backward inside the function", info.value
    assert info.value.source == _line_of(fn, text), info.value


def test_in_place_on_intermediate_is_functionalized() -> None:
    """In-place ops on values the program made are fine: the graph holds their functional form and
    gives eager's bits."""

    def f(x: torch.Tensor) -> torch.Tensor:
        y = x * 3
        y.mul_(x)
        y.add_(1)
        return y

    x = torch.randn(64, dtype=torch.bfloat16)
    program = capture(f, x)
    targets = {str(n.target) for n in program.nodes() if n.op == "call_function"}
    assert not any(t.split(".")[1].endswith("_") for t in targets), targets
    (out,) = program.graph_module(x)
    assert torch.equal(out.view(torch.int16), f(x.clone()).view(torch.int16))


@pytest.mark.parametrize(
    "args,kwargs,construct",
    [
        ((torch.randn(2), 3.0), {}, "non-tensor example input"),
        ((torch.randn(2, device="meta"),), {}, "meta-device example input"),
        ((torch.arange(4),), {}, "no floating-point value"),
        ((torch.randn(2),), {"backward": True}, "nothing to differentiate"),
        ((torch.randn(2),), {"cotangents": torch.ones(2)}, "cotangents without backward"),
        (
            (torch.randn(2, requires_grad=True),),
            {"backward": True, "cotangents": [torch.ones(3)]},
            "cotangent shape mismatch",
        ),
    ],
)
def test_bad_arguments(args: tuple[object, ...], kwargs: dict[str, object], construct: str) -> None:
    with pytest.raises(CaptureError) as info:
        capture(lambda *xs: xs[0] * 2, *args, **kwargs)  # type: ignore[arg-type]
    assert info.value.construct == construct, str(info.value)


def test_a_list_of_tensors_is_told_to_be_passed_as_the_tensors() -> None:
    with pytest.raises(CaptureError, match=r"example input 0 is a list of 2 tensor\(s\); pass the tensors themselves"):
        capture(lambda x, y: x * y, [torch.randn(200), torch.randn(200)])


@pytest.mark.parametrize("target,inputs", [
    (lambda x, w: x @ w, (torch.randn(2, 2),)),
    (torch.nn.Linear(2, 2), (torch.randn(2, 2), torch.randn(2))),
])
def test_a_wrong_number_of_example_inputs_is_named_before_tracing(target, inputs) -> None:  # type: ignore[no-untyped-def]
    """Trial 63: a missing argument was "untraceable operation at <string>:1"."""
    with pytest.raises(CaptureError) as info:
        capture(target, *inputs)
    assert info.value.construct == "wrong number of example inputs" and "<string>" not in str(info.value)


def test_not_callable() -> None:
    with pytest.raises(CaptureError, match="pass a function or torch.nn.Module"):
        capture(42, torch.randn(2))  # type: ignore[arg-type]


def penalized(x: torch.Tensor) -> torch.Tensor:
    y = (x * x).tanh().sum()
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    return y + g.pow(2).sum()


def test_autograd_grad_inside_the_function_asks_for_the_backward() -> None:
    """Trial 38: torch.autograd.grad in a function captured without its backward failed inside autograd
    ("element 0 of tensors does not require grad") with no advice. It is refused at its line with the
    advice; with the backward the same function (a gradient penalty) is captured, and its value is
    eager's (oracle: the function run by eager)."""
    x = torch.randn(8, requires_grad=True)
    with pytest.raises(CaptureError) as info:
        capture(penalized, x)
    assert info.value.construct == "gradients inside the function"
    assert info.value.source == _line_of(penalized, "torch.autograd.grad") and "--backward" in str(info.value)
    program = capture(penalized, x, backward=True)
    assert torch.equal(program.graph_module(x.detach())[0], penalized(x).detach())
