"""Code torch.compile runs with a graph break is captured across it: the graph holds the value eager
computed there, reproduces real eager bit for bit, records where, and refuses other inputs."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
import torch
from capture_helpers import assert_matches_eager

from roundoff.capture import SpecializationKind, capture
from roundoff.capture.errors import CaptureError
from roundoff.execute import run_eager, run_oracle

ITEM, BRANCH, SHAPE, RANDOM = (
    SpecializationKind.ITEM,
    SpecializationKind.BRANCH,
    SpecializationKind.SHAPE,
    SpecializationKind.RANDOM,
)


def _line_of(fn: object, text: str) -> str:
    lines, start = inspect.getsourcelines(fn)  # type: ignore[arg-type]
    return f"test_graph_breaks.py:{start + next(i for i, s in enumerate(lines) if text in s)}"


def branchy(x: torch.Tensor) -> torch.Tensor:
    if x.sum() > 0:
        return torch.tanh(x) * 2
    return x * x


def itemy(x: torch.Tensor) -> torch.Tensor:
    return x / x.abs().max().item()


def masky(x: torch.Tensor) -> torch.Tensor:
    return (x[x > 0] * 3).exp()


def nonzeroy(x: torch.Tensor) -> torch.Tensor:
    rows = (x > 0).nonzero()[:, 0]
    return x.index_select(0, rows).sin()


def selecty(x: torch.Tensor) -> torch.Tensor:
    return x.masked_select(x < 0).cos()


def county(x: torch.Tensor) -> torch.Tensor:
    return x * x[x > 0].numel()  # only the selection's size reaches the output


def listy(x: torch.Tensor) -> torch.Tensor:
    first = x[0].tolist()
    return x * first[1]


def dropouty(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.dropout(torch.sigmoid(x), 0.4, training=True) + torch.randn_like(x)


CASES: list[tuple[Callable[..., Any], list[tuple[SpecializationKind, str]]]] = [
    (branchy, [(BRANCH, "if x.sum() > 0")]),
    (itemy, [(ITEM, ".item()")]),
    (masky, [(SHAPE, "x[x > 0]")]),
    (nonzeroy, [(SHAPE, ".nonzero()")]),
    (selecty, [(SHAPE, "masked_select(")]),
    (county, [(SHAPE, "x[x > 0].numel()")]),
    (listy, [(ITEM, ".tolist()")]),
    (dropouty, [(RANDOM, "dropout("), (RANDOM, "dropout(")]),
]


@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize("fn,expected", CASES, ids=[c[0].__name__ for c in CASES])
def test_captured_across_the_break_matches_eager(
    fn: Callable[..., Any], expected: list[tuple[SpecializationKind, str]], backward: bool
) -> None:
    x = torch.randn(6, 5, generator=torch.Generator().manual_seed(2)).to(torch.bfloat16)
    x.requires_grad_(backward)
    torch.manual_seed(7)
    program = capture(fn, x, backward=backward)
    repro = f"torch.manual_seed(7); capture({fn.__name__}, x, backward={backward})"
    got = sorted((s.kind.value, s.source) for s in program.specializations)
    want = sorted((k.value, _line_of(fn, text)) for k, text in expected)
    assert got == want, repro
    for s in program.specializations:
        assert s.source and s.source in s.describe() and "graph break" in s.describe()
    assert_matches_eager(program, fn, (x,), repro, seed=7)


@pytest.mark.parametrize("fn", [masky, selecty, nonzeroy], ids=lambda f: f.__name__)
def test_selections_pin_indices_and_keep_the_data_flowing(fn: Callable[..., Any]) -> None:
    """Only which elements are selected is eager's (integer index constants); the selected values
    still come from the input, so an emulated run computes them under its own policy."""
    x = torch.randn(6, 5, generator=torch.Generator().manual_seed(2))
    program = capture(fn, x)
    gm = program.graph_module
    constants = [getattr(gm, str(n.target)) for n in program.nodes() if n.op == "get_attr"]
    assert constants and all(c.dtype == torch.int64 for c in constants)
    doubled = program.graph_module(x * 2)[0]  # the same selection (signs unchanged), other values
    assert torch.equal(doubled, fn(x * 2))


@pytest.mark.parametrize("fn", [branchy, itemy, masky, county], ids=lambda f: f.__name__)
def test_specialized_program_refuses_other_inputs(fn: Callable[..., Any]) -> None:
    x = torch.randn(6, 5, generator=torch.Generator().manual_seed(2))
    program = capture(fn, x)
    with pytest.raises(ValueError, match="runs only on its capture inputs") as info:
        run_eager(program, (x + 1,))
    assert str(program.specializations[0].source) in str(info.value)
    assert len(run_eager(program, (x.clone(),))) == 1  # the same values are fine


def test_random_draws_do_not_tie_a_program_to_its_inputs() -> None:
    """A random draw is pinned to eager's sample, but it does not depend on the inputs: other
    inputs run, and the graph stays a pure function (two runs agree)."""
    x = torch.randn(6, 5)
    program = capture(dropouty, x)
    seeded = torch.Tag.nondeterministic_seeded
    drawing = [n for n in program.graph.nodes if seeded in getattr(n.target, "tags", ())]
    assert not drawing, "every draw is a constant holding eager's sample"
    assert sum(n.op == "get_attr" for n in program.graph.nodes) == 2  # dropout's mask, randn_like's draw
    y = torch.randn(6, 5)
    assert torch.equal(run_eager(program, (y,))[0], run_eager(program, (y,))[0])


def test_function_runs_once() -> None:
    calls: list[int] = []

    def f(x: torch.Tensor) -> torch.Tensor:
        calls.append(1)
        return x * x.max().item()

    capture(f, torch.randn(4, requires_grad=True), backward=True)
    assert calls == [1]


def test_numpy_round_trip_is_a_value_read() -> None:
    """A value computed in numpy is a graph break too: the graph holds eager's result."""

    def f(x: torch.Tensor) -> torch.Tensor:
        return x * torch.from_numpy(x.numpy() * 2)

    x = torch.randn(5)
    program = capture(f, x)
    assert [(s.kind, s.source) for s in program.specializations] == [
        (ITEM, _line_of(f, "x.numpy()"))
    ]
    assert_matches_eager(program, f, (x,), "capture(f, x)  # numpy round trip")


def test_parameter_changed_in_place_after_capture_is_refused() -> None:
    """The graph holds a branch eager took with the parameter's old values: a training step since
    the capture makes the program stale, even though its example input aliases the parameter."""
    lin = torch.nn.Linear(4, 4)

    def f(x: torch.Tensor) -> torch.Tensor:
        y = lin(x)
        return y * 2 if y.sum() > 0 else -y

    x = torch.randn(3, 4)
    program = capture(f, x)
    assert len(run_eager(program, (x,))) == 1
    with torch.no_grad():
        lin.weight.mul_(-1)
    with pytest.raises(ValueError, match="'lin.weight' .* changed in place since the capture"):
        run_eager(program, (x,))


def ctc(logits: torch.Tensor, labels: torch.Tensor, wide: torch.dtype = torch.float32) -> torch.Tensor:
    log_probs = torch.log_softmax(logits, -1, dtype=wide).transpose(0, 1)  # (as transformers' CTC heads)
    mask = labels >= 0
    lengths = torch.full((logits.shape[0],), logits.shape[1], dtype=torch.long)
    return torch.nn.functional.ctc_loss(log_probs, labels.masked_select(mask), lengths, mask.sum(-1))


def binned(logits: torch.Tensor, labels: torch.Tensor, wide: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.bincount(labels.flatten(), weights=logits[:, : labels.shape[1], 0].flatten().to(wide))


@pytest.mark.parametrize("fn", [ctc, binned], ids=lambda f: f.__name__)
def test_shape_from_integers_is_computed_by_every_run(fn: Callable[..., Any]) -> None:
    """A CTC loss's (and a weighted bincount's) shape follows from integer operands alone: the graph
    keeps the op, so the fp64 oracle computes it from its own operands (pinned to eager's value, the
    oracle's loss was the bf16 run's: trial 88's Wav2Vec2)."""
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(2, 12, 6, generator=g).to(torch.bfloat16)
    labels = torch.randint(1, 6, (2, 4), generator=g)
    program = capture(fn, logits, labels)
    assert not [s for s in program.specializations if "ctc" in s.detail or "bincount" in s.detail]
    oracle = run_oracle(program, (logits, labels))[0]
    assert oracle.dtype == torch.float64
    assert torch.equal(oracle, fn(logits.double(), labels, torch.float64))  # fp64 by hand: the same ops
    assert torch.equal(run_eager(program, (logits, labels))[0], fn(logits, labels))


def _load_balance(probs: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
    """A switch-style load-balancing loss: the experts' share of top-2 choices, ``F.one_hot`` with its class count."""
    frac = torch.nn.functional.one_hot(chosen, 8).to(probs.dtype).sum(1).mean(0) / 2
    return 8 * (frac * probs.mean(0)).sum()


def test_one_hot_with_its_class_count_is_no_graph_break() -> None:
    """Trial 108: an MoE's ``F.one_hot(topi, E)`` was reported as a graph break ("item: one_hot"), and blame said
    torch.compile compiles the step as several graphs: eager's ``one_hot`` reads the classes' minimum and maximum
    into Python to check them, where torch.compile traces its decomposition. Oracles: torch._dynamo.explain (one
    graph, no break), real eager's values and gradients, and eager's error for a class out of range."""
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(32, 8, generator=g), -1).bfloat16().requires_grad_()
    chosen = torch.topk(probs.detach(), 2, dim=-1).indices
    explained = torch._dynamo.explain(_load_balance)(probs, chosen)
    assert explained.graph_count == 1 and explained.graph_break_count == 0
    program = capture(_load_balance, probs, chosen, backward=True)
    assert not program.specializations, program.specializations
    assert_matches_eager(program, _load_balance, (probs, chosen), repro="F.one_hot(chosen, 8) load balance")
    assert program.check_inputs((probs, torch.topk(-probs.detach(), 2, dim=-1).indices)) is None  # no value pinned
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        _load_balance(probs, chosen + 7)
    with pytest.raises(CaptureError, match="test_graph_breaks.py:.*Class values must be smaller than num_classes"):
        capture(_load_balance, probs, chosen + 7)
