"""A node that computes in fp32 but reads, across a kernel boundary, an fp16 value below fp16's normal range
is said to lose that value to the format's range, not to amplify a rounding by "a cancellation" (trial 76: a
hand-written fp16 selective scan under inductor-cpu, the gradient of ``dt * A`` near 1e-9, all 0 in fp16)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from roundoff.analyze import check
from roundoff.capture import capture

D, N, L, B = 32, 8, 16, 2


class Scan(torch.nn.Module):
    """Trial 76's scan (the new user's code, trimmed): a large step size ``dt`` and a strong decay ``A`` make
    ``exp(dt * A)`` underflow fp16 for most states, and the gradient of ``dt * A`` with it."""

    def __init__(self) -> None:
        super().__init__()
        self.in_proj = torch.nn.Linear(D, 2 * D, bias=False)
        self.dt_proj = torch.nn.Linear(D, D)
        self.B_proj = torch.nn.Linear(D, N, bias=False)
        self.C_proj = torch.nn.Linear(D, N, bias=False)
        self.out_proj = torch.nn.Linear(D, D, bias=False)
        self.A_log = torch.nn.Parameter(torch.log(4.0 * torch.arange(1, N + 1).float()).repeat(D, 1))
        self.D = torch.nn.Parameter(torch.ones(D))
        with torch.no_grad():
            self.dt_proj.bias.fill_(3.0)

    def project(self, u: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x, z = self.in_proj(u).chunk(2, dim=-1)
        x = F.silu(x)
        return x, z, F.softplus(self.dt_proj(x)), -torch.exp(self.A_log), self.B_proj(x), self.C_proj(x)

    def forward(self, u: torch.Tensor, hook=None) -> torch.Tensor:  # type: ignore[no-untyped-def]
        x, z, dt, A, Bm, Cm = self.project(u)
        dtA = dt.unsqueeze(-1) * A
        if hook is not None:
            dtA.register_hook(hook)
        dA = torch.exp(dtA)
        dBx = dt.unsqueeze(-1) * Bm.unsqueeze(2) * x.unsqueeze(-1)
        h = torch.zeros_like(dBx[:, 0])
        ys = []
        for t in range(u.shape[1]):
            h = dA[:, t] * h + dBx[:, t]
            ys.append((h * Cm[:, t].unsqueeze(1)).sum(-1))
        return self.out_proj((torch.stack(ys, dim=1) + x * self.D) * F.silu(z))


def test_a_read_below_the_formats_normal_range_is_named_as_such() -> None:
    torch.manual_seed(0)
    model = Scan()
    gen = torch.Generator().manual_seed(1)
    u, target = torch.randn(B, L, D, generator=gen), torch.randn(B, L, D, generator=gen)
    grads: list[torch.Tensor] = []  # the oracle: fp64's gradient of dt * A, below fp16's normal range
    F.mse_loss(model.double()(u.double(), hook=grads.append), target.double()).backward()
    assert float(grads[0].abs().max()) < torch.finfo(torch.float16).smallest_normal
    model = model.half()

    def step(u: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.mse_loss(model(u), target)

    program = capture(step, u.half(), target.half(), backward=True)
    said = check(program, program.example_inputs, "inductor-cpu", against="oracle").explanations
    below = [e for e in said if "rounded to float16 (a kernel boundary), whose values lie below float16's normal range" in e]
    assert below, said
    assert not [e for e in said if "cancellation of rounded operands" in e], said


class CumsumScan(Scan):
    """Trial 76's parallel form of the scan, ``exp(cs) * cumsum(exp(-cs) * dBx)``: ``exp(-cs)`` passes 65504
    in fp16, and everything after it is NaN where fp64 is finite."""

    def forward(self, u: torch.Tensor, hook=None) -> torch.Tensor:  # type: ignore[no-untyped-def]
        x, z, dt, A, Bm, Cm = self.project(u)
        dBx = dt.unsqueeze(-1) * Bm.unsqueeze(2) * x.unsqueeze(-1)
        cs = torch.cumsum(dt.unsqueeze(-1) * A, dim=1)
        h = torch.exp(cs) * torch.cumsum(torch.exp(-cs) * dBx, dim=1)
        return self.out_proj(((h * Cm.unsqueeze(2)).sum(-1) + x * self.D) * F.silu(z))


def test_a_node_nan_where_fp64_is_finite_is_not_said_to_sit_below_the_normal_range() -> None:
    """Trial 76: "`cumsum` (n96) computes values below float16's normal range ... its own result equals fp64's
    here" of a node NaN in all of its 8192 elements. Oracle: fp64 of the same step, finite everywhere."""
    torch.manual_seed(0)
    Scan()  # (the trial made its other model first: the same random state)
    model = CumsumScan()
    with torch.no_grad():
        model.dt_proj.bias.zero_()
        model.A_log.copy_(torch.log(0.5 * torch.arange(1, N + 1).float()).repeat(D, 1))
    gen = torch.Generator().manual_seed(1)
    u, target = torch.randn(B, L, D, generator=gen), torch.randn(B, L, D, generator=gen)
    model64 = CumsumScan().double()
    model64.load_state_dict(model.state_dict())
    assert torch.isfinite(F.mse_loss(model64(u.double()), target.double()))
    model = model.half()

    def step(u: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.mse_loss(model(u), target)

    program = capture(step, u.half(), target.half(), backward=True)
    result = check(program, program.example_inputs, "inductor-cpu", against="oracle")
    by_id = {r.node_id: r for r in result.nodes}
    assert result.nan_origin is not None
    below = [e for e in result.explanations if "computes values below float16's normal range" in e]
    for sentence in below:
        node = sentence.split("(", 1)[1].split()[0]
        m = by_id[node].vs_oracle
        assert m.nonfinite <= m.ref_nan + m.ref_inf, sentence


def _stable_softmax_nll(z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    e = torch.exp(z - z.amax(-1, keepdim=True))
    p = e / e.sum(-1, keepdim=True)
    return -torch.log(p.gather(-1, y[:, None])).float().mean()


def test_a_log_of_an_underflowed_probability_is_told_to_compute_the_log_directly() -> None:
    """Trial 104: an fp16 softmax with its maximum subtracted (as the exp-overflow advice said) underflowed
    probabilities to 0, and the finding for the log's -inf said what happened, not what to do. Oracle: real eager
    (-inf), fp64 by hand (finite), and F.log_softmax in fp16 (finite): the advice works."""
    z = torch.tensor([[0.0, 20.0, 1.0], [3.0, 0.0, -15.0]]).half()
    y = torch.tensor([0, 2])
    assert torch.isinf(_stable_softmax_nll(z, y)) and torch.isfinite(_stable_softmax_nll(z.double(), y))
    assert torch.isfinite(-F.log_softmax(z, -1).gather(-1, y[:, None]).float().mean())
    r = check(_stable_softmax_nll, (z, y), "eager", against="oracle")
    (said,) = [e for e in r.explanations if e.startswith("`log`")]
    assert "is 0 where fp64 is not" in said and "compute the log directly (F.log_softmax" in said, said
