"""Per-op scalar mixing (OpOverride.scalars): the eager preset's plan reproduces real eager CPU bit for bit.

Oracle: the real eager CPU kernels on bf16/fp16 tensors with Python scalars whose rounding to the
tensor's dtype changes results (0.1, -0.3, 1.7 are not representable in bf16/fp16).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from roundoff.capture import capture
from roundoff.execute import run_plan
from roundoff.plan import plan
from roundoff.policy import OpOverride, ScalarMixing, get_policy, override_for, scalar_mixing

OPS: dict[str, Callable[..., torch.Tensor]] = {
    "add": lambda x, y, s: x + s,
    "sub": lambda x, y, s: x - s,
    "rsub": lambda x, y, s: s - x,
    "add_alpha": lambda x, y, s: torch.add(x, y, alpha=s),
    "mul": lambda x, y, s: x * s,
    "div": lambda x, y, s: x / s,
    "pow_exponent": lambda x, y, s: x.abs().pow(s),
    "pow_base": lambda x, y, s: torch.pow(abs(s), x),
    "fmod": lambda x, y, s: torch.fmod(x, s),
    "remainder": lambda x, y, s: torch.remainder(x, s),
    "addcmul": lambda x, y, s: torch.addcmul(x, x, y, value=s),
    "addcdiv": lambda x, y, s: torch.addcdiv(x, x, y, value=s),
    "lerp": lambda x, y, s: torch.lerp(x, y, s),
    "clamp": lambda x, y, s: x.clamp(min=s),
}


def _inputs(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return tuple((torch.randn(2048, generator=g) * 4).to(dtype) for _ in range(2))  # type: ignore[return-value]


def _bits_differ(a: torch.Tensor, b: torch.Tensor) -> int:
    same = (a.view(torch.int16) == b.view(torch.int16)) | (a.isnan() & b.isnan())
    return int((~same).sum())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_eager_preset_scalars_match_real_eager_cpu(name: str, dtype: torch.dtype) -> None:
    for s in (0.1, -0.3, 1.7):

        def fn(x: torch.Tensor, y: torch.Tensor, s: float = s) -> torch.Tensor:
            return OPS[name](x, y, s)

        xs = _inputs(dtype)
        (emu,) = run_plan(plan(capture(fn, *xs), "eager"), xs)
        real = fn(*xs)
        assert _bits_differ(emu, real) == 0, (
            f"{_bits_differ(emu, real)} of {real.numel()} differ; repro: OPS[{name!r}] with s={s} on "
            f"_inputs({dtype}) under 'eager'"
        )


def test_eager_cuda_keeps_every_scalar_unrounded() -> None:
    xs = _inputs(torch.bfloat16)
    p = plan(capture(lambda x, y: (x + 0.1) * 0.3, *xs), "eager-cuda")
    assert all(d.scalar_format is None for d in p.decisions.values()), (
        "repro: eager-cuda, (x+0.1)*0.3"
    )
    p = plan(capture(lambda x, y: (x + 0.1) * 0.3, *xs), "eager")
    formats = {d.op: d.scalar_format for d in p.decisions.values() if d.op.startswith("aten.")}
    assert formats == {"aten.add.Tensor": "bf16", "aten.mul.Tensor": None}, (
        f"repro: eager, {formats}"
    )


def test_scalar_override_resolution_node_over_overload_over_packet() -> None:
    rnd, unr = ScalarMixing.ROUND_TO_STORAGE, ScalarMixing.OPMATH_UNROUNDED
    pol = get_policy("eager-cuda")
    from dataclasses import replace

    pol = replace(
        pol,
        op_overrides={
            "aten.mul": OpOverride(scalars=rnd),
            "aten.mul.Scalar": OpOverride(scalars=unr),
        },
        node_overrides={"n3": OpOverride(scalars=unr)},
    )
    assert scalar_mixing(pol, "aten.mul.Tensor") is rnd
    assert scalar_mixing(pol, "aten.mul.Scalar") is unr
    assert scalar_mixing(pol, "aten.mul.Tensor", "n3") is unr
    assert scalar_mixing(pol, "aten.add.Tensor") is pol.scalars
    assert override_for(pol, "aten.mul.Tensor", "n3").scalars is unr
