"""Oracles for capture tests: real eager runs of the same callable, compared bit for bit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

_INT_OF = {
    torch.float64: torch.int64,
    torch.float32: torch.int32,
    torch.bfloat16: torch.int16,
    torch.float16: torch.int16,
}


def assert_bitwise_equal(got: torch.Tensor, want: torch.Tensor, repro: str) -> None:
    """Same dtype, shape and bit pattern (NaN payloads included); message carries `repro`."""
    assert got.dtype == want.dtype and got.shape == want.shape, (
        f"{got.dtype}{tuple(got.shape)} != {want.dtype}{tuple(want.shape)}; repro: {repro}"
    )
    if got.dtype in _INT_OF:
        g, w = (
            got.detach().contiguous().view(_INT_OF[got.dtype]),
            want.detach().contiguous().view(_INT_OF[got.dtype]),
        )
    else:
        g, w = got.detach(), want.detach()
    bad = (g != w).sum().item()
    assert bad == 0, f"{bad} of {g.numel()} elements differ bitwise; repro: {repro}"


def eager_outputs(
    fn: Callable[..., Any],
    inputs: Sequence[torch.Tensor],
    backward: bool,
    cotangents: Sequence[torch.Tensor] | None = None,
    params: Sequence[torch.Tensor] | None = None,
) -> list[torch.Tensor]:
    """Eager forward outputs, then (with `backward`) gradients w.r.t. inputs requiring grad, then
    `params` (default: a module's parameters) requiring grad, by plain autograd on ``sum of output
    sums`` or the cotangents."""
    xs = [x.detach().requires_grad_(x.requires_grad) for x in inputs]
    with torch.enable_grad() if backward else torch.no_grad():
        result = fn(*xs)
    outs = (
        [v for v in result.values() if isinstance(v, torch.Tensor)]
        if isinstance(result, dict)
        else (list(result) if isinstance(result, (tuple, list)) else [result])
    )
    if not backward:
        return outs
    wrt = [x for x in xs if x.requires_grad]
    if params is None and isinstance(fn, torch.nn.Module):
        params = list(fn.parameters())
    wrt += [p for p in params or () if p.requires_grad]
    floats = [o for o in outs if o.is_floating_point() and o.requires_grad]
    if cotangents is not None:
        grads = torch.autograd.grad(floats, wrt, grad_outputs=list(cotangents), allow_unused=True)
    else:
        loss = floats[0].sum()
        for o in floats[1:]:
            loss = loss + o.sum()
        grads = torch.autograd.grad(loss, wrt, allow_unused=True)
    return outs + [g if g is not None else torch.zeros_like(x) for g, x in zip(grads, wrt)]


_CACHE: dict[tuple[str, bool, torch.dtype | None], tuple[Any, tuple[torch.Tensor, ...], Any]] = {}


def captured(
    name: str, backward: bool, dtype: torch.dtype | None = None
) -> tuple[Any, tuple[torch.Tensor, ...], Any]:
    """(callable, inputs, program) for a zoo workload, captured once per test session."""
    from roundoff.capture import capture
    from roundoff.zoo import get_workload

    key = (name, backward, dtype)
    if key not in _CACHE:
        w = get_workload(name)
        fn, xs = w.build(dtype=dtype), w.make_inputs(dtype=dtype)
        _CACHE[key] = (fn, xs, capture(fn, *xs, backward=backward))
    return _CACHE[key]


def zoo_repro(name: str, backward: bool) -> str:
    return (
        f"w=get_workload({name!r}); p=capture(w.build(), *w.make_inputs(), backward={backward}); "
        "p.graph_module(*p.example_inputs)"
    )


def assert_matches_eager(
    program: Any,
    fn: Callable[..., Any],
    inputs: Sequence[torch.Tensor],
    repro: str,
    params: Sequence[torch.Tensor] | None = None,
    seed: int | None = None,
) -> None:
    """`run_eager` of `program` on its example inputs equals a fresh eager run of `fn` (outputs and
    gradients, bit for bit); with `seed`, the eager run draws its random numbers from that seed."""
    from roundoff.execute import run_eager

    if seed is not None:
        torch.manual_seed(seed)
    want = eager_outputs(fn, inputs, program.backward, params=params)
    got = run_eager(program, program.example_inputs)
    assert len(got) == len(want) == len(program.output_names), (program.output_names, len(want))
    for name, g, w in zip(program.output_names, got, want):
        assert_bitwise_equal(g, w, f"{repro}  # output {name}")
