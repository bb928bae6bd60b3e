"""A 16-bit value whose rounding alone takes a training step's gradients beyond the limit, though no
op amplifies it 16x (trial 48: a diffusion UNet's GroupNorm with its mean stored in fp16, 50x off in
the gradients, passed as ill-conditioned with nothing named): named first, as a finding. Oracle: the fp64 step with only that mean rounded to fp16
by hand, and the real fp16 eager step, both against the fp64 step."""

from __future__ import annotations

import copy
import math

import torch

from roundoff.analyze import check


class GroupNorm(torch.nn.Module):
    """GroupNorm as research code writes it: two-pass variance, the mean kept in the input's format;
    `held`: the mean rounded to fp16 and back (the fp64 replay of the test's oracle)."""

    def __init__(self, groups: int, channels: int) -> None:
        super().__init__()
        self.groups, self.held = groups, False
        self.weight = torch.nn.Parameter(torch.ones(channels))
        self.bias = torch.nn.Parameter(torch.zeros(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        x = x.reshape(b, self.groups, -1)
        mean = x.mean(-1, keepdim=True)
        if self.held:
            mean = mean.half().to(x.dtype)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        x = ((x - mean) / torch.sqrt(var + 1e-5)).reshape(b, c, h, w)
        return x * self.weight[None, :, None, None] + self.bias[None, :, None, None]


class Attention(torch.nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.norm = GroupNorm(8, c)
        self.qkv = torch.nn.Conv2d(c, 3 * c, 1)
        self.proj = torch.nn.Conv2d(c, c, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(b, 3, c, h * w).unbind(1)
        scores = torch.einsum("bci,bcj->bij", q, k) / math.sqrt(c)
        p = (scores - scores.max(dim=-1, keepdim=True).values).exp()
        p = p / p.sum(dim=-1, keepdim=True)
        return x + self.proj(torch.einsum("bij,bcj->bci", p, v).reshape(b, c, h, w))


def test_a_rounding_no_op_amplifies_16x_that_moves_the_gradients_is_named_first():
    torch.manual_seed(0)
    model = Attention(32)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 32, 8, 8, generator=g) * 0.5 + 6.0  # un-normalised features: mean 6, std 0.5
    noise = torch.randn(2, 32, 8, 8, generator=g)

    def grads(m: torch.nn.Module, dtype: torch.dtype, held: bool = False) -> dict[str, torch.Tensor]:
        m = copy.deepcopy(m).to(dtype)
        m.norm.held = held
        (m(x.to(dtype)).float() - noise.float()).pow(2).mean().backward()
        return {k: p.grad.double() for k, p in m.named_parameters()}

    exact, held, real = grads(model, torch.float64), grads(model, torch.float64, held=True), grads(model, torch.float16)

    def times(got: dict[str, torch.Tensor], k: str) -> float:
        return float((got[k] - exact[k]).norm() / (exact[k].half().double() - exact[k]).norm())

    moved = {k for k in exact if times(held, k) > 16}
    assert moved == {"norm.weight", "qkv.weight", "proj.weight"}, {k: times(held, k) for k in exact}
    assert all(times(real, k) > 16 for k in moved)  # fp16 eager is that far off too
    fp16 = copy.deepcopy(model)

    def step(x, noise):
        return (fp16(x).float() - noise.float()).pow(2).mean()

    r = check(step, (x.half(), noise.half()), "eager", against="oracle", backward=True)
    over = {o.name.removeprefix("grad_fp16.") for o in r.outputs if o.rmse_result > 16 * o.rmse_reference}
    assert over == moved and not r.diverges  # (no node flagged: a finding, the verdict kept)
    (cause,) = r.rounding_causes
    line = GroupNorm.forward.__code__.co_firstlineno + 3
    assert r.culprits[0] == cause and r.node(cause).op == "mean" and r.node(cause).source.endswith(f":{line}")
    assert "rounded to float16, and fp64 run again with only that rounding moves outputs" in r.explanations[0]
    strict = check(step, (x.half(), noise.half()), "eager", against="oracle", backward=True, by_values=True)
    failing = {o.name.removeprefix("grad_fp16.") for o in strict.outputs if not o.passes}
    assert failing == moved and strict.rounding_causes == (cause,) and strict.culprits[0] == cause  # (--by-values:
    # the same rounding named as the cause of the outputs it now fails, in words that say so: trial 86)
    assert "those outputs fail by their values" in strict.explanations[0] and "pass" not in strict.explanations[0]


def test_where_an_output_fails_its_causes_come_before_a_rounding_that_moves_passing_ones():
    """Trial 72: a rounding that moves passing gradients was listed above the fp16 overflow that made the
    loss inf. The GroupNorm step above with a term whose fp16 square overflows (detached: the gradients
    keep their rounding cause): real fp16 eager's loss is inf, and its overflow leads the causes."""
    torch.manual_seed(0)
    fp16 = copy.deepcopy(Attention(32)).half()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 32, 8, 8, generator=g) * 0.5 + 6.0
    noise = torch.randn(2, 32, 8, 8, generator=g)

    def step(x, noise):
        return (fp16(x).float() - noise.float()).pow(2).mean() + (x.detach() * 300).pow(2).mean().float()

    with torch.no_grad():
        assert step(x.half(), noise.half()).isinf()  # real eager: the fp16 square overflows
    r = check(step, (x.half(), noise.half()), "eager", against="oracle", backward=True)
    (cause,) = r.rounding_causes
    assert r.diverges and r.node(r.culprits[0]).op == "pow" and cause in r.culprits[1:]


class _Alibi(torch.nn.Module):
    """Trial 67's ALiBi attention without 1/sqrt(d): fp16 scores near 680 (an ulp of 0.5); `held`: the
    biased, masked scores rounded to fp16 and back (the fp64 replay of the test's oracle)."""

    def __init__(self, t: int = 32, d: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads, self.held = heads, False
        self.qkv = torch.nn.Linear(d, 3 * d, bias=False)
        self.o = torch.nn.Linear(d, d, bias=False)
        slopes = torch.tensor([2 ** (-8 * (i + 1) / heads) for i in range(heads)])
        pos = torch.arange(t)
        self.register_buffer("bias", -(slopes[:, None, None] * (pos[None, :] - pos[:, None]).abs()[None]))
        self.register_buffer("mask", torch.full((t, t), float("-inf")).triu(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        s = q @ k.transpose(-1, -2) + self.bias.to(x.dtype) + self.mask.to(x.dtype)
        if self.held:
            s = s.half().to(x.dtype)
        e = torch.exp(s - s.max(-1, keepdim=True).values)
        return self.o(((e / e.sum(-1, keepdim=True)) @ v).transpose(1, 2).reshape(b, t, d))


def test_a_rounding_an_exp_amplifies_through_a_cancellation_is_named():
    """Trial 67: check passed the fp16 step, its qkv gradient 86x its reference with no flagged node and
    nothing named, though rounding the scores alone moves it 57x: the candidates were the values the
    amplifying ops read (`s - max(s)`, near 0 where it matters, barely rounded), not the scores it is
    computed from. Oracle: the fp64 step with only the scores rounded to fp16, by hand."""
    torch.manual_seed(0)
    model = _Alibi().half()
    with torch.no_grad():
        model.qkv.weight.mul_(10.0)  # (in fp16, as the trial's code)
    x = torch.randn(2, 32, 64, generator=torch.Generator().manual_seed(1))
    w = torch.randn(32, 64, generator=torch.Generator().manual_seed(2))

    def grad(held: bool) -> torch.Tensor:
        m = copy.deepcopy(model).double()
        m.held = held
        (m(x.half().double()) * w.double()).mean().backward()
        return m.qkv.weight.grad

    exact = grad(False)
    limit = 16 * float((exact.half().double() - exact).pow(2).mean().sqrt())
    assert float((grad(True) - exact).pow(2).mean().sqrt()) > limit  # the scores' rounding alone

    fp16 = copy.deepcopy(model)
    r = check(lambda x: (fp16(x).float() * w).mean(), (x.half(),), "eager", against="oracle", backward=True)
    assert not r.diverges and r.rounding_causes, r.explanations
    named = {n.node_id: n for n in r.nodes}
    assert all(named[c].source.endswith(f":{_SCORES_LINE}") for c in r.rounding_causes), r.rounding_causes
    assert "fp64 run again with only that rounding" in r.explanations[0]


_SCORES_LINE = _Alibi.forward.__code__.co_firstlineno + 3



_G107 = torch.Generator().manual_seed(0)  # trial 107's draws, in its order: the weights, the features, the batch
_PARAMS = {k: (torch.randn(32, 32, generator=_G107) * 1.7 / 32 ** 0.5).bfloat16().requires_grad_()
           for k in ("wq", "wk", "wv", "wo")}
_FEATURES = torch.randn(32, 64, generator=_G107).bfloat16()
_BATCH = tuple(torch.randn(2, 32, 32, generator=_G107).bfloat16() for _ in range(2))


def _performer(x: torch.Tensor, params: dict[str, torch.Tensor], den_held: bool = False) -> torch.Tensor:
    """Trial 107's linear attention, research style: positive random features ``exp(xW - |x|^2/2)`` (no
    temperature); `den_held`: the normalizer rounded to bf16 and back (the fp64 replay of the test's oracle)."""
    w = _FEATURES.to(x.dtype)

    def phi(t: torch.Tensor) -> torch.Tensor:
        return torch.exp(t @ w - (t * t).sum(-1, keepdim=True) / 2) / 8.0

    qp, kp, v = phi(x @ params["wq"]), phi(x @ params["wk"]), x @ params["wv"]
    den = qp @ kp.sum(1).unsqueeze(-1)
    if den_held:
        den = den.bfloat16().to(x.dtype)
    return ((qp @ (kp.transpose(-1, -2) @ v)) / den) @ params["wo"] + x


_PHI_LINE = _performer.__code__.co_firstlineno + 6


def test_a_value_the_policy_keeps_in_fp32_is_not_named_as_rounded():
    """Trial 107: under blame's fix, which keeps the random features' `sub` (and what it is computed from) in fp32,
    check named that `sub` as "rounded to bfloat16 ... keep it in fp32". A value kept unrounded is read through
    to the 16-bit values it is computed from; the rounding named is one the policy makes. Oracle: the fp64 step
    with only the named value (the normalizer) rounded to bf16 by hand."""
    import dataclasses

    from roundoff.capture import capture
    from roundoff.plan import plan
    from roundoff.policy import OpOverride, get_policy

    x, y = _BATCH

    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return ((_performer(x, _PARAMS) - y) ** 2).mean()

    program = capture(step, x, y, backward=True)
    kept = {d.node_id for d in plan(program, "eager").decisions.values() if (d.source or "").endswith(f":{_PHI_LINE}")
            and d.op.startswith(("aten.mm.", "aten.mul.", "aten.sum.", "aten.div.", "aten.sub.")) and d.rounds_result}
    policy = dataclasses.replace(get_policy("eager"), node_overrides={n: OpOverride(round_result=False) for n in kept})
    assert {d.op for n, d in plan(program, policy).decisions.items() if n in kept} >= {"aten.sub.Tensor"}
    r = check(program, (x, y), policy, against="oracle", nodes="all")
    assert r.rounding_causes and not set(r.rounding_causes) & kept, (r.rounding_causes, r.explanations[:1])
    den_line = f":{_performer.__code__.co_firstlineno + 9}"
    assert any(r.node(c).source.endswith(den_line) for c in r.rounding_causes), r.rounding_causes

    def grads(held: bool) -> dict[str, torch.Tensor]:
        p64 = {k: p.detach().double().requires_grad_() for k, p in _PARAMS.items()}
        ((_performer(x.double(), p64, den_held=held) - y.double()) ** 2).mean().backward()
        return {k: p.grad for k, p in p64.items()}

    exact, held = grads(False), grads(True)
    moved = {k: float((held[k] - exact[k]).norm() / (exact[k].bfloat16().double() - exact[k]).norm()) for k in exact}
    assert max(moved.values()) > 16, moved
