"""The zoo registry and the motivating workloads, checked against the threads they come from."""

from __future__ import annotations

import pytest
import torch

from roundoff.zoo import Workload, get_workload, list_workloads

REQUIRED = {
    "fma-cancel",
    "softmax-backward",
    "bf16-chain",
    "thunder-matmul",
    "llama-block",
    "mixtral-block",
}


def test_required_workloads_are_registered_by_name() -> None:
    names = [w.name for w in list_workloads()]
    assert REQUIRED <= set(names) and names == sorted(names)
    for name in names:
        w = get_workload(name)
        assert isinstance(w, Workload) and get_workload(f"zoo:{name}") is w
        assert w.description and w.source


def test_unknown_name_lists_known_ones() -> None:
    with pytest.raises(
        KeyError, match="no workload 'zoo:gpt5'.*bf16-chain.*thunder-matmul"
    ) as info:
        get_workload("zoo:gpt5")
    assert str(info.value).startswith("no workload")  # plain message, not KeyError's quoted repr
    with pytest.raises(TypeError, match="must be a str"):
        get_workload(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", [w.name for w in list_workloads()])
def test_inputs_deterministic_typed_and_differentiable(name: str) -> None:
    w = get_workload(name)
    a, b = w.make_inputs(seed=0), w.make_inputs(seed=0)
    for x, y in zip(a, b):
        assert x.dtype == w.default_dtype and torch.equal(x, y), (
            f"get_workload({name!r}).make_inputs(0)"
        )
    assert any(x.requires_grad for x in a), "the backward needs at least one input requiring grad"
    if name not in ("fma-cancel",):  # its inputs are the thread's two numbers, whatever the seed
        c = w.make_inputs(seed=1)
        assert any(not torch.equal(x, y) for x, y in zip(a, c)), f"seed 1 equals seed 0 for {name}"
    assert all(x.dtype == torch.float32 for x in w.make_inputs(dtype=torch.float32))


def test_fma_cancel_is_the_threads_case() -> None:
    """Thread: eager prints tensor(1.); contracted into an FMA the subtraction returns the rounding
    error of x*scale (computed here exactly in fp64: 48-bit product of two fp32 values), whose exp
    is inf."""
    w = get_workload("fma-cancel")
    x, scale = w.make_inputs()
    assert x.item() == float(torch.tensor(1134139801600.000000))
    assert scale.item() == float(torch.tensor(0.180336877703666687))
    assert w.build()(x, scale).item() == 1.0
    exact_minus_rounded = x.double() * scale.double() - (x * scale).double()
    assert abs(exact_minus_rounded.item()) > 100
    assert torch.isinf(torch.exp(exact_minus_rounded.float())).item()


def test_softmax_backward_eager_gradient_matches_thread() -> None:
    """The thread prints eager y.grad as 9.765625e-04, 7.8201e-05, 0, -4.2725e-04 (bf16, CUDA);
    eager on CPU gives the same numbers (printed to the thread's 4 significant digits)."""
    w = get_workload("softmax-backward")
    assert w.backward
    x, y = w.make_inputs()
    assert x.shape == (2, 4, 4, 4) and y.shape == (4, 1, 1) and not x.requires_grad
    w.build()(x, y).sum().backward()
    assert y.grad is not None
    printed = [f"{v:.4e}" for v in y.grad.flatten().float().tolist()]
    assert printed == ["9.7656e-04", "7.8201e-05", "0.0000e+00", "-4.2725e-04"]


def test_bf16_chain_and_thunder_matmul_shapes() -> None:
    a, b, c, d = get_workload("bf16-chain").make_inputs()
    assert {t.shape for t in (a, b, c, d)} == {torch.Size([4096])}
    out = get_workload("bf16-chain").build()(a, b, c, d)
    assert torch.equal(out, ((a * b) + c) * d - a)
    a, b, w = get_workload("thunder-matmul").make_inputs()
    assert (a.shape, b.shape, w.shape) == ((8, 16), (16,), (16, 16))
    out32 = get_workload("thunder-matmul").build()(*(t.float() for t in (a, b, w)))
    assert out32.dtype == torch.float32 and out32.shape == (8, 16)
