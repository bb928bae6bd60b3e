"""Programs with one planted numeric defect each, and the node where it is planted.

Each `Planted` names the program, its inputs (seeded), the policy and reference it is checked
under, and the aten op (and occurrence, in graph order) of the planted node. The defects are the
classic mixed-precision traps; every program is otherwise written as a careful user would, so the
planted node is the one place a fix belongs. Used by tests/analyze/test_planted.py and by
bench/planted_defects.py (ranks before/after).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

aten = torch.ops.aten


@dataclass(frozen=True)
class Planted:
    name: str
    fn: Callable[..., torch.Tensor]
    inputs: Callable[[], tuple[torch.Tensor, ...]]
    op: object  # aten overload of the planted node
    policy: str = "eager"
    against: str = "oracle"
    occurrence: int = 0  # which node of `op`, in graph order
    backward: bool = False


def _g(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# 1. An epsilon that fp16 cannot hold: sqrt(v) + 1e-8 is 0 where v is 0, and m / 0 is inf.
def eps_absorbed_fp16(m: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return m / (torch.sqrt(v) + 1e-8)


def _eps_inputs() -> tuple[torch.Tensor, ...]:
    m = (torch.rand(256, generator=_g()) * 1e-5).half()
    v = torch.where(torch.arange(256) % 4 == 0, 0.0, torch.rand(256, generator=_g(1)) * 1e-4).half()
    return m, v


# 2. Variance as E[x^2] - E[x]^2 in bf16: two large, equal-looking numbers cancel.
def variance_by_moments(x: torch.Tensor) -> torch.Tensor:
    return (x * x).mean(-1) - x.mean(-1) ** 2


def _moments_inputs() -> tuple[torch.Tensor, ...]:
    return ((100 + torch.randn(8, 64, generator=_g())).bfloat16(),)


# 3. exp of a large argument held in bf16: the argument's rounding (up to 0.25) is amplified by exp.
def large_argument_exp(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.exp(a * b) * 1e-30


def _exp_inputs() -> tuple[torch.Tensor, ...]:
    return ((60 + 10 * torch.rand(256, generator=_g())).bfloat16(), (1 + torch.rand(256, generator=_g(1)) / 8).bfloat16())


# 4. Cancellation under FMA in fp32 (pytorch issue "fma can cause drastically worse precision").
def fma_cancellation(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    return torch.exp(x * s - x * s)


def _fma_inputs() -> tuple[torch.Tensor, ...]:
    x = 1134139801600.0 * torch.exp2(torch.rand(256, generator=_g(), dtype=torch.float64) * 8 - 4)
    s = torch.rand(256, generator=_g(1), dtype=torch.float64) * 0.95 + 0.05
    return x.float(), s.float()


# 5. Softmax without max-subtraction in fp16: exp overflows, inf / inf is NaN.
def softmax_no_max_fp16(x: torch.Tensor) -> torch.Tensor:
    e = torch.exp(x)
    return e / e.sum(-1, keepdim=True)


def _softmax_inputs() -> tuple[torch.Tensor, ...]:
    return ((torch.rand(8, 32, generator=_g()) * 14).half(),)


# 6. A bf16 position index: positions above 256 round to even numbers, angles are off by radians.
def bf16_positions(freq: torch.Tensor) -> torch.Tensor:
    pos = torch.arange(1024, dtype=torch.float32).to(torch.bfloat16)
    return torch.cos(pos.float()[:, None] * freq[None, :])


def _positions_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.rand(8, generator=_g()) * 0.5 + 0.5,)


# 7. log(1 + x) for tiny x in bf16: 1 + x rounds to 1, log gives 0 (log1p keeps it).
def log_one_plus_tiny(x: torch.Tensor) -> torch.Tensor:
    return torch.log(1 + x) * 1000


def _log1p_inputs() -> tuple[torch.Tensor, ...]:
    return ((torch.rand(256, generator=_g()) * 1e-3).bfloat16(),)


# 8. A bf16 difference of nearly equal values: x - mean(x) after a large shift.
def centered_after_shift(x: torch.Tensor) -> torch.Tensor:
    y = x + 1000.0
    return (y - y.mean(-1, keepdim=True)) * 10


def _center_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(8, 64, generator=_g()).bfloat16(),)


# 9. log(sigmoid(x)) in bf16 for very negative x: sigmoid underflows to 0, log gives -inf
#    (logsigmoid keeps it).
def log_of_sigmoid(x: torch.Tensor) -> torch.Tensor:
    return torch.log(torch.sigmoid(x))


def _logsigmoid_inputs() -> tuple[torch.Tensor, ...]:
    return ((torch.rand(256, generator=_g()) * 60 - 120).bfloat16(),)


# 10. fp16 squares overflow in a norm: sqrt(sum(x^2)) with |x| ~ 300.
def fp16_norm_overflow(x: torch.Tensor) -> torch.Tensor:
    return torch.sqrt((x * x).sum(-1)) / 1000


def _norm_inputs() -> tuple[torch.Tensor, ...]:
    return ((200 + 200 * torch.rand(4, 64, generator=_g())).half(),)


# 11. 1 - cos(x) for small x in bf16: cancellation (2 sin^2(x/2) keeps it).
def one_minus_cos(x: torch.Tensor) -> torch.Tensor:
    return (1 - torch.cos(x)) * 100


def _cos_inputs() -> tuple[torch.Tensor, ...]:
    return ((torch.rand(256, generator=_g()) * 0.05 + 0.01).bfloat16(),)


# 12. The nanoGPT-style hand-written softmax, backward under Inductor with FMA (inductor-gpu): the
#     amax backward compares x with its max at different precisions and divides by a zero count.
def user_softmax(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    z = x * y
    m = torch.amax(z, dim=-1, keepdim=True)
    e = torch.exp(z - m)
    return e / e.sum(-1, keepdim=True)


def _user_softmax_inputs() -> tuple[torch.Tensor, ...]:
    x = torch.randn(4, 16, generator=_g()).bfloat16()
    y = (torch.randn(4, 16, generator=_g(1)) * 3).bfloat16().requires_grad_()
    return x, y


# 13. A reciprocal of a tiny fp16 value: 1/x overflows fp16 although x * (1/x) is 1.
def tiny_reciprocal_fp16(x: torch.Tensor) -> torch.Tensor:
    return (1 / x) * x


def _recip_inputs() -> tuple[torch.Tensor, ...]:
    return ((torch.rand(256, generator=_g()) * 1e-5 + 1e-6).half(),)


# 14. The variance-by-moments defect inside a bf16 MLP, forward and backward: dozens of noise nodes
#     (values near zero, many ULPs, rounding-level error) around one planted cancellation.
def mlp_with_moment_norm(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    h = x @ w1
    var = (h * h).mean(-1, keepdim=True) - h.mean(-1, keepdim=True) ** 2
    h = (h - h.mean(-1, keepdim=True)) * torch.rsqrt(var.abs() + 1e-5)
    return (torch.nn.functional.gelu(h) @ w2).square().mean()


def _mlp_inputs() -> tuple[torch.Tensor, ...]:
    x = torch.randn(16, 32, generator=_g()).bfloat16()
    w1 = (torch.randn(32, 32, generator=_g(1)) / 6 + 2).bfloat16().requires_grad_()
    w2 = (torch.randn(32, 32, generator=_g(2)) / 6).bfloat16().requires_grad_()
    return x, w1, w2


# 15. Diffusion timesteps held in bf16 (917 -> 916) before an fp32 sinusoidal embedding that is kept in
#     bf16: the cast and every node are correct in their format (sin and cos are judged in bf16, the
#     format their values are kept in), but sin/cos amplify the cast's rounding ~100x; only the
#     outputs (the time MLP's gradients) show it (a new user's MLP-Mixer, round 2 trial 18).
def bf16_timesteps(t: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    freqs = torch.exp(-9.21 * torch.arange(16, dtype=torch.float32) / 16)
    args = t[:, None].to(torch.bfloat16).float() * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1).to(torch.bfloat16)
    return (emb @ w).float().square().mean()


def _timesteps_inputs() -> tuple[torch.Tensor, ...]:
    t = torch.tensor([3.0, 917.0, 601.0, 45.0])
    return t, (torch.randn(32, 32, generator=_g()) / 6).bfloat16().requires_grad_()


PLANTED: tuple[Planted, ...] = (
    Planted("eps-absorbed-fp16", eps_absorbed_fp16, _eps_inputs, aten.add.Tensor),
    Planted("variance-by-moments", variance_by_moments, _moments_inputs, aten.sub.Tensor),
    Planted("large-argument-exp", large_argument_exp, _exp_inputs, aten.exp.default),
    Planted("fma-cancellation-fp32", fma_cancellation, _fma_inputs, aten.sub.Tensor, policy="inductor-gpu", against="eager"),
    Planted("softmax-no-max-fp16", softmax_no_max_fp16, _softmax_inputs, aten.exp.default),
    Planted("bf16-positions", bf16_positions, _positions_inputs, aten._to_copy.default),
    Planted("log-one-plus-tiny", log_one_plus_tiny, _log1p_inputs, aten.log.default),
    Planted("center-after-shift", centered_after_shift, _center_inputs, aten.sub.Tensor),
    Planted("log-of-sigmoid", log_of_sigmoid, _logsigmoid_inputs, aten.sigmoid.default),
    Planted("fp16-norm-overflow", fp16_norm_overflow, _norm_inputs, aten.mul.Tensor),
    Planted("one-minus-cos", one_minus_cos, _cos_inputs, aten.rsub.Scalar),
    Planted("user-softmax-backward", user_softmax, _user_softmax_inputs, aten.eq.Tensor, policy="inductor-gpu",
            against="eager", backward=True),
    Planted("tiny-reciprocal-fp16", tiny_reciprocal_fp16, _recip_inputs, aten.reciprocal.default),
    Planted("mlp-with-moment-norm", mlp_with_moment_norm, _mlp_inputs, aten.sub.Tensor, backward=True),
    Planted("bf16-timesteps", bf16_timesteps, _timesteps_inputs, aten._to_copy.default, backward=True),
)



def running_total(x: torch.Tensor, start: float = 0.0) -> torch.Tensor:
    """A loop's ``total = total + x[t].sum()`` held in `x`'s dtype from `start` (the narrow-running-sum
    hazard's pattern; not a planted case: how badly it fails depends on the terms)."""
    total = torch.full((), start, dtype=x.dtype)
    for t in range(x.shape[0]):
        total = total + x[t].sum()
    return total


def lost_increments(x: torch.Tensor) -> torch.Tensor:
    """An error grown over many roundings, none beyond the limit and none alone moving the output: a bf16
    value multiplied by 1 + 2**-10 forty times, each product correctly rounded back to it (fp64 grows
    4%): 23x bf16's rounding at the output, with no node flagged (ill-conditioned in the format)."""
    for _ in range(40):
        x = x * 1.0009765625
    return x
