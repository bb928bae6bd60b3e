"""The fp64 reference of checking mode: exact fp64 copies, refreshed after training steps, and a
compiled variant that agrees with the eager fp64 run to fp64 precision."""

from __future__ import annotations

import copy

import pytest
import torch

import roundoff
from roundoff.compiler import Fp64Reference, RoundoffDivergenceError
from roundoff.compiler.checking import run_fp64
from roundoff.policy import get_policy


def _mlp(dtype: torch.dtype) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 8), torch.nn.LayerNorm(8)
    ).to(dtype)


def _independent_fp64(module: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Oracle: a deep copy of the module converted with ``.double()``, run on ``x.double()``."""
    with torch.no_grad():
        return copy.deepcopy(module).double()(x.double())


def _sgd_step(module: torch.nn.Module, x: torch.Tensor) -> None:
    module(x).float().square().sum().backward()
    with torch.no_grad():
        for p in module.parameters():
            p -= 0.5 * p.grad.to(p.dtype)
            p.grad = None


@pytest.mark.parametrize("cache", [True, False])
def test_eager_reference_is_the_fp64_run_and_follows_training(cache: bool) -> None:
    m = _mlp(torch.bfloat16)
    x = torch.randn(16, 32).to(torch.bfloat16)
    ref = Fp64Reference(m, cache=cache)
    for step in range(3):
        got, want = ref((x,), {}), _independent_fp64(m, x)
        assert got.dtype == torch.float64
        assert torch.equal(got, want), (
            f"repro: Fp64Reference(mlp bf16, cache={cache}) after {step} SGD steps != deepcopy().double()"
        )
        _sgd_step(m, x)
    # the live module is untouched: still bf16, still trainable
    assert all(p.dtype == torch.bfloat16 and p.requires_grad for p in m.parameters())


def test_plain_callable_reference_reads_closed_over_tensors_in_fp64() -> None:
    w = torch.randn(8, 8)  # captured by closure: read as its fp64 copy (summed in fp64)

    def f(a: torch.Tensor) -> torch.Tensor:
        return torch.tanh(a @ a.T) + w.sum()

    a = torch.randn(8, 8).to(torch.bfloat16)
    got = Fp64Reference(f)((a,), {})
    want = torch.tanh(a.double() @ a.double().T) + w.double().sum()
    assert torch.equal(got, want), "repro: Fp64Reference(tanh(a@a.T)+w.sum()) on bf16 a"
    assert w.dtype == torch.float32


def test_compiled_reference_agrees_to_fp64_precision_without_recompiling() -> None:
    m = _mlp(torch.float32)  # no internal casts: the whole reference is fp64
    x = torch.randn(16, 32)
    ref = Fp64Reference(m, compile=True)
    graphs_before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    for step in range(2):
        got, want = ref((x,), {}), _independent_fp64(m, x)
        scale = want.abs().max().item()
        err = (got - want).abs().max().item()
        assert err <= 1e-12 * scale, (
            f"repro: compiled Fp64Reference(mlp fp32) step {step}: max |diff| {err:.3g} vs eager fp64"
        )
        _sgd_step(m, x)
    # weights changed in place between calls: one compiled graph served both
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"] - graphs_before
    assert graphs == 1, f"repro: compiled Fp64Reference across an SGD step compiled {graphs} graphs"


def test_bad_reference_options_are_refused() -> None:
    with pytest.raises(ValueError, match="check_reference='fp32'.*'eager'.*'compiled'"):
        roundoff.compile(torch.sin, check="warn", check_reference="fp32")
    with pytest.raises(ValueError, match="compile=True, cache=False"):
        Fp64Reference(_mlp(torch.float32), cache=False, compile=True)


def test_compiled_reference_keeps_the_verdict() -> None:
    """The FMA cancellation case diverges under inductor-gpu's contraction: the compiled reference
    raises as the eager one does."""
    x = torch.randn(4096, generator=torch.Generator().manual_seed(0)) * 1e4

    def cancel(x: torch.Tensor, y: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        return torch.exp(x * s - y * s)

    f = roundoff.compile(
        cancel, policy=get_policy("inductor-gpu"), check="raise", check_reference="compiled"
    )
    with pytest.raises(RoundoffDivergenceError) as info:
        f(x, x.clone(), torch.tensor(1e6))
    ref = run_fp64(cancel, (x, x.clone(), torch.tensor(1e6)), {})
    assert (ref == 1).all()
    assert not info.value.report[0].passed


_CONV = torch.nn.Conv2d(3, 4, 3, padding=1).to(torch.bfloat16)  # a global read by a helper only
_KERNEL = {"w": torch.randn(4, 3, 3, 3).to(torch.bfloat16)}  # research code's dict of tensors


def _features(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.silu(_CONV(x))


def _step(x: torch.Tensor) -> torch.Tensor:
    """A step that reads the global module only through the helper it calls, and a bf16 kernel tensor."""
    return (_features(x) + torch.nn.functional.conv2d(x, _KERNEL["w"], padding=1)).float().square().mean()


def test_a_module_a_helper_reads_and_a_16_bit_convolution_kernel_are_read_in_fp64() -> None:
    """Trial 110: a diffusion step calling a helper that reads the global `model`: the reference converted
    only what the step itself names, so the bf16 Conv2d met an fp64 input and torch refused it ("Input
    type (double) and bias type (c10::BFloat16) should be the same"); checking mode checked nothing.
    Oracle: the same step computed by hand from fp64 copies (``deepcopy().double()``)."""
    x = torch.randn(2, 3, 8, 8).to(torch.bfloat16)
    got = Fp64Reference(_step)((x,), {})
    with torch.no_grad():
        conv = copy.deepcopy(_CONV).double()
        xd = x.double()
        want = (torch.nn.functional.silu(conv(xd))
                + torch.nn.functional.conv2d(xd, _KERNEL["w"].double(), padding=1)).square().mean()
    assert got.dtype == torch.float64 and torch.equal(got, want), (got, want)
    assert _CONV.weight.dtype == _KERNEL["w"].dtype == torch.bfloat16
