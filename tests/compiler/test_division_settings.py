"""``policy.division`` -> Inductor's ``eager_numerics.division_rounding``.

On CUDA the knob picks Triton's division: ``div_rn`` (IEEE) or ``div.full.f32`` (reciprocal-multiply).
The mapping is checked on CPU; the CUDA test (skipped without CUDA) checks what it does against real
outputs: an IEEE policy's compiled ``a / b`` equals eager CUDA's correctly rounded division bit for
bit, a reciprocal-multiply policy's equals plain ``torch.compile``.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch._dynamo

from roundoff.compiler import has_config, inductor_settings
from roundoff.numerics import bits_differ
from roundoff.policy import Division, FmaContraction, get_policy

_KNOB = "eager_numerics.division_rounding"
needs_knob = pytest.mark.skipif(not has_config(_KNOB), reason=f"this torch has no {_KNOB}")

CUDA_SPEC = {  # preset -> division_rounding on cuda
    "eager": True,
    "eager-cuda": True,
    "inductor-cpu": True,
    "thunder-nvfuser": True,
    "inductor-gpu": False,
    "inductor-emulate": False,
}


@needs_knob
def test_division_rounding_follows_policy_division_on_cuda() -> None:
    got = {
        name: inductor_settings(get_policy(name), "cuda").patches.get(_KNOB) for name in CUDA_SPEC
    }
    diff = {k: (CUDA_SPEC[k], v) for k, v in got.items() if v != CUDA_SPEC[k]}
    assert not diff, (
        f"(spec, got) differ: {diff}; repro: inductor_settings(get_policy(name), 'cuda')"
    )


@needs_knob
def test_cpu_keeps_the_per_op_mapping_and_reports_what_it_cannot_do() -> None:
    assert inductor_settings(get_policy("eager"), "cpu").patches[_KNOB] is True
    gpu_on_cpu = inductor_settings(get_policy("inductor-gpu"), "cpu")
    assert gpu_on_cpu.patches[_KNOB] is False
    assert any("division=reciprocal_multiply" in u for u in gpu_on_cpu.unenforced), gpu_on_cpu
    no_fma = dataclasses.replace(get_policy("inductor-gpu"), fma=FmaContraction.NEVER)
    assert not any("division" in u for u in inductor_settings(no_fma, "cpu").unenforced)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (Triton's div.full.f32)")
@needs_knob
def test_cuda_division_is_ieee_or_triton_as_the_policy_says() -> None:
    import roundoff

    g = torch.Generator().manual_seed(0)
    a, b = (torch.randn(1 << 20, generator=g).cuda() for _ in range(2))
    base = get_policy("inductor-gpu")
    ieee = dataclasses.replace(base, name="gpu-ieee", division=Division.IEEE)
    torch._dynamo.reset()
    plain = torch.compile(lambda x, y: x / y)(a, b)
    for policy, want, label in ((ieee, a / b, "eager a / b"), (base, plain, "torch.compile")):
        torch._dynamo.reset()
        got = roundoff.compile(lambda x, y: x / y, policy=policy)(a, b)
        bad = bits_differ(got, want)
        assert bad == 0, f"{policy.name}: {bad} elements differ from {label}; repro: this test"
    assert bits_differ(plain, a / b) > 0, (
        "div.full.f32 equals div_rn everywhere: test tells nothing"
    )
