"""Tensor constants in the graph (``get_attr``, e.g. ``_tensor_constant0``) under every policy.

Oracles: real eager PyTorch (the emulated ``eager`` policy equals it bit for bit) and an fp64 run of the
same arithmetic written out in the test.
"""

from __future__ import annotations

import pytest
import torch

from roundoff.analyze import check
from roundoff.capture import capture
from roundoff.execute import run_eager, run_oracle, run_plan
from roundoff.plan import format_trace, plan
from tests.execute.hf_models import POLICIES, llama

_SCALE = (1.5, -2.0, 0.3)


def _scaled(x: torch.Tensor) -> torch.Tensor:
    """A function whose graph holds a tensor constant (``torch.tensor`` of Python numbers)."""
    return torch.exp(x * torch.tensor(_SCALE, dtype=torch.bfloat16)) + 1.0


def _program() -> tuple:
    torch.manual_seed(0)
    x = torch.randn(4, 3, dtype=torch.bfloat16)
    program = capture(_scaled, x)
    assert any(n.op == "get_attr" for n in program.graph.nodes), "no tensor constant in the graph"
    return program, x


@pytest.mark.parametrize("policy", POLICIES)
def test_constant_runs_under_every_policy(policy: str) -> None:
    program, x = _program()
    (out,) = run_plan(plan(program, policy), [x])
    assert torch.allclose(out.double(), _by_hand_fp64(x), rtol=2**-6, atol=0)  # bf16 error of 3 ops at most
    res = check(program, [x], policy, against="oracle")
    assert len(res.outputs) == 1


def _by_hand_fp64(x: torch.Tensor) -> torch.Tensor:
    return torch.exp(x.double() * torch.tensor(_SCALE, dtype=torch.bfloat16).double()) + 1.0


def test_constant_eager_bitwise_and_oracle_in_fp64() -> None:
    program, x = _program()
    (emu,) = run_plan(plan(program, "eager"), [x])
    assert torch.equal(emu, _scaled(x)), "emulated eager differs from real eager"
    (fp64,) = run_oracle(program, [x])
    assert torch.equal(fp64, _by_hand_fp64(x))


def test_constant_prints_in_the_trace() -> None:
    program, _ = _program()
    target = next(n.target for n in program.graph.nodes if n.op == "get_attr")
    assert f"constant({target!r})" in format_trace(plan(program, "xla-2.10"))


@pytest.fixture(scope="module")
def llama_program() -> tuple:
    module, inputs = llama("eager")
    return module, inputs, capture(module, *inputs, backward=True)


def test_llama_kv_cache_constants_eager_equals_real_eager(llama_program: tuple) -> None:
    module, inputs, program = llama_program
    assert any(n.op == "get_attr" for n in program.graph.nodes), "transformers left no tensor constant"
    emu = run_plan(plan(program, "eager"), inputs)
    real = run_eager(program, inputs)
    assert all(torch.equal(a, b) for a, b in zip(emu, real))
    assert torch.equal(emu[0], module(*inputs).detach())  # the loss, as the model itself computes it


@pytest.mark.parametrize("policy", POLICIES)
def test_llama_kv_cache_constants_every_policy(llama_program: tuple, policy: str) -> None:
    _, inputs, program = llama_program
    res = check(program, inputs, policy, against="eager", local=False)
    assert res.outputs and all(torch.isfinite(torch.tensor(o.rmse_result)) for o in res.outputs)
    if policy == "eager":
        assert all(o.passes for o in res.outputs)  # one emulation compared with itself


def test_llama_eager_against_oracle(llama_program: tuple) -> None:
    _, inputs, program = llama_program
    res = check(program, inputs, "eager", against="oracle")
    assert res.outputs[0].name == "out" and res.outputs[0].passes  # the loss is within same()'s bound


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("policy", ["eager-cuda", "inductor-gpu", "xla-2.10", "thunder-autocast"])
def test_llama_constants_follow_cuda_inputs(llama_program: tuple, policy: str) -> None:
    """Captured on CPU (constants on CPU), run on CUDA inputs: constants follow the inputs' device."""
    _, inputs, program = llama_program
    cuda_inputs = [x.cuda() for x in program.example_inputs[: len(inputs)]]
    cuda_inputs += [x.detach().cuda() for x in program.example_inputs[len(inputs):]]
    outs = run_plan(plan(program, policy), cuda_inputs)
    assert all(o.device.type == "cuda" for o in outs if isinstance(o, torch.Tensor))
    real = run_eager(program, cuda_inputs)
    assert torch.isfinite(real[0]) and torch.allclose(outs[0].float(), real[0].float(), rtol=0.05)
