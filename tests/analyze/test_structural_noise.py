"""Trial 50: CLIP pooled at a token that attends only to itself; its q/k gradients are 0 in exact
arithmetic, fp64 gives ~1e-16 of noise and fp16 0 (or its own noise). check named them first ("below
float16's range: use GradScaler"), and blame found no fix because any wider format made that noise
"worse". Oracle: fp64 autograd (the gradient is noise: 1e-12 of the others') and the same step whose
loss reads a token that sees others (its q/k gradients are real and judged)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from roundoff.analyze import check
from roundoff.analyze.verdict import EXCESS_LIMIT
from roundoff.blame import blame
from roundoff.capture import capture
from roundoff.execute import run_plan
from roundoff.plan import plan


def _inputs() -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 8, 32, generator=g).half()
    return (x, *((torch.randn(32, 32, generator=g) / 6).half().requires_grad_() for _ in range(3)))


def _attention(x: torch.Tensor, wq: torch.Tensor, wk: torch.Tensor, wv: torch.Tensor) -> torch.Tensor:
    q, k, v = ((x @ w).view(2, 8, 2, 16).transpose(1, 2) for w in (wq, wk, wv))
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def first_token(x: torch.Tensor, wq: torch.Tensor, wk: torch.Tensor, wv: torch.Tensor) -> torch.Tensor:
    return _attention(x, wq, wk, wv)[:, :, 0].float().square().sum()  # token 0 attends only to itself


def last_token(x: torch.Tensor, wq: torch.Tensor, wk: torch.Tensor, wv: torch.Tensor) -> torch.Tensor:
    return _attention(x, wq, wk, wv)[:, :, -1].float().square().sum()


def _fp64_grads(fn) -> tuple[torch.Tensor, ...]:
    x, *w = (t.detach().double().requires_grad_(t.requires_grad) for t in _inputs())
    return torch.autograd.grad(fn(x, *w), w)


def test_gradients_fp64_holds_only_as_noise_are_not_findings_and_blame_has_nothing_to_fix():
    gq, gk, gv = _fp64_grads(first_token)
    assert float(gq.norm()) < 1e-12 * float(gv.norm()) and float(gk.norm()) < 1e-12 * float(gv.norm())

    # real eager's CPU attention kernel (which emulated eager runs, bit for bit) makes noise of its own there,
    # ~1e-5, beyond half a quantum per element of fp64: the screen sends it to every node, which judges it noise
    x, wq, wk, wv = _inputs()
    real = torch.autograd.grad(first_token(x, wq, wk, wv), (wq, wk))
    emulated = run_plan(plan(capture(first_token, *_inputs(), backward=True), "eager"), _inputs())[1:3]
    assert all(torch.equal(e, r) for e, r in zip(emulated, real)) and float(real[0].float().norm()) > 0
    screened = check(first_token, _inputs(), "eager", against="oracle", backward=True)
    assert not screened.diverges
    r = check(first_token, _inputs(), "eager", against="oracle", backward=True, nodes="all")  # noise is found there
    outs = {o.name: o for o in r.outputs}
    assert not r.diverges and not r.culprits, r.explanations
    assert outs["grad_wq"].noise_only and outs["grad_wk"].noise_only and not outs["grad_wv"].noise_only
    assert not any("GradScaler" in e for e in r.explanations), r.explanations
    found = blame(capture(first_token, *_inputs(), backward=True), "eager", against="oracle", repro=False)
    assert found.status.value == "already_ok", found.status


def test_gradients_with_a_value_are_judged():
    gq, _, gv = _fp64_grads(last_token)
    assert float(gq.norm()) > 1e-3 * float(gv.norm())  # a real gradient
    r = check(last_token, _inputs(), "eager", against="oracle", backward=True)
    assert not any(o.noise_only for o in r.outputs), [o.name for o in r.outputs if o.noise_only]


def planted_first_token(x: torch.Tensor, wq: torch.Tensor, wk: torch.Tensor, wv: torch.Tensor) -> torch.Tensor:
    total = (_attention(x, wq, wk, wv)[:, :, 0] * 64).square().sum()  # an fp16 sum beyond 65504
    return total.float() / 4096


def test_blame_fixes_a_real_defect_beside_gradients_fp64_holds_only_as_noise():
    """Trial 51: with an fp16 overflow planted beside those q/k gradients, blame said no change fixes
    it, holding the noise to "no worse than fp16's 0". Oracle: the same sum in fp32, in real code."""
    x, wq, wk, wv = _inputs()
    exact = planted_first_token(x.double(), wq.double(), wk.double(), wv.double())
    assert torch.isfinite(exact) and not torch.isfinite(planted_first_token(x, wq, wk, wv))
    program = capture(planted_first_token, x, wq, wk, wv, backward=True)
    assert check(program, program.example_inputs, "eager", against="oracle").diverges
    found = blame(program, "eager", against="oracle", repro=False)
    assert found.status.value == "fixed", found.notes


class _ClsHead(torch.nn.Module):
    """Trial 51's shape: a causal attention read at token 0 (a CLS token), then an RMS norm and a head."""

    def __init__(self) -> None:
        super().__init__()
        self.inp, self.q, self.k, self.v, self.o = (torch.nn.Linear(32, 32) for _ in range(5))
        self.head = torch.nn.Linear(32, 10)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = F.gelu(self.inp(x))
        q, k, v = (m(h).view(2, 16, 2, 16).transpose(1, 2) for m in (self.q, self.k, self.v))
        cls = self.o(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(2, 16, 32))[:, 0]
        cls = cls * torch.rsqrt(cls.pow(2).mean(-1, keepdim=True) + 1e-6)
        return F.cross_entropy(self.head(cls).float(), y)


def test_the_screen_does_not_call_a_structural_zero_an_underflow():
    """Trial 51: fp16 gives these q/k gradients exactly 0 (fp64 1e-17): every output passes the screen,
    whose only finding was "below float16's range: use GradScaler". Oracle: fp64 autograd of the same
    model (its q gradient 1e-12 of its v gradient)."""
    torch.manual_seed(0)
    model = _ClsHead().half()
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(2, 16, 32, generator=g).half(), torch.randint(0, 10, (2,), generator=g)
    exact = _ClsHead().double()
    exact.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
    exact(x.double(), y).backward()
    assert float(exact.q.weight.grad.norm()) < 1e-12 * float(exact.v.weight.grad.norm())
    r = check(model, (x, y), "eager", against="oracle", backward=True)
    outs = {o.name: o for o in r.outputs}
    assert not r.diverges and outs["grad_q.weight"].noise_only and not outs["grad_q.weight"].below_range
    assert not any("GradScaler" in e for e in r.explanations), r.explanations


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_an_output_one_quantum_off_a_structural_zero_passes(dtype: torch.dtype) -> None:
    """Trial 63: a DeBERTa-v2 fp16 bias gradient, 0 by structure (fp64's noise ~1e-22), that eager rounds
    to one subnormal quantum in one element failed at 500x its reference (fp64 rounded to fp16: 0, off by
    1e-22). The least absolute error per element an output is held to is half the format's quantum. Oracle:
    the format's smallest positive value from torch (nextafter(0, 1)); 20 quanta in every element fail."""
    from roundoff.analyze.verdict import oracle_output_passes, quantum_floor

    quantum = float(torch.nextafter(torch.zeros((), dtype=dtype), torch.ones((), dtype=dtype)))
    assert quantum_floor(dtype) == quantum / 2
    fp64 = torch.randn(64, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 1e-50
    one_off = torch.zeros(64, dtype=dtype)
    one_off[3] = quantum
    assert oracle_output_passes(one_off, fp64, dtype)
    assert not oracle_output_passes(torch.full((64,), 20 * quantum, dtype=dtype), fp64, dtype)


def _time_mix(k: torch.Tensor, v: torch.Tensor, u: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """An RWKV time-mix written as research code writes it: state from zeros, a Python loop over steps."""
    a, b, outs = torch.zeros_like(k[:, 0]), torch.zeros_like(k[:, 0]), []
    for t in range(k.shape[1]):
        kt, vt = k[:, t], v[:, t]
        ek = torch.exp(u + kt)
        outs.append((a + ek * vt) / (b + ek))
        ew, ek2 = torch.exp(w), torch.exp(kt)
        a, b = ew * a + ek2 * vt, ew * b + ek2
    return torch.stack(outs, 1).float().square().sum()


def test_a_zero_by_structure_has_the_same_own_excess_against_eager_as_against_fp64():
    """Trial 71: the gradient of the first step's ``a + ek * vt`` is 0 by structure (its state starts at 0),
    fp64's noise: against fp64 its own excess is ~1e-14, against eager it was 1024, topping the nodes table,
    and ``--rule bitwise`` named it as a cause. The node's figures are the same whatever the reference.
    Oracle: the check against fp64, node for node."""
    g = torch.Generator().manual_seed(0)
    k, v = (torch.randn(2, 6, 16, generator=g).bfloat16().requires_grad_() for _ in range(2))
    u = torch.full((16,), 0.5).bfloat16().requires_grad_()
    w = -torch.exp(torch.linspace(-3, 1, 16)).bfloat16().requires_grad_()
    xs = (k, v, u, w)
    vs_eager = {r.node_id: r for r in check(_time_mix, xs, "inductor-cpu", against="eager", backward=True,
                                               nodes="all").nodes}
    zeros = [r for r in check(_time_mix, xs, "inductor-cpu", against="oracle", backward=True, nodes="all").nodes
             if r.own_excess <= EXCESS_LIMIT and r.vs_oracle.norm_rel >= 0.5]  # nothing like fp64: its noise
    assert zeros
    assert [(r.node_id, vs_eager[r.node_id].own_excess) for r in zeros
            if vs_eager[r.node_id].own_excess > EXCESS_LIMIT] == []


class _BatchNormTail(torch.nn.Module):
    """Trial 93's PointNet tail: a BatchNorm whose bias gradient is 0 by structure (what reads it is
    centred over the batch by a second BatchNorm in training mode)."""

    def __init__(self) -> None:
        super().__init__()
        self.bn, self.fc, self.bn2 = torch.nn.BatchNorm1d(16), torch.nn.Linear(16, 8), torch.nn.BatchNorm1d(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.bn2(self.fc(self.bn(x).max(2)[0]))).square().sum()  # (amax: NaN under Inductor)


def test_a_structural_zero_cast_after_a_decomposed_batch_norm_is_noise_under_inductor():
    """Trial 93: under inductor-cpu the BatchNorm backward is decomposed, its bias gradient an fp32 `sum`
    (fp64's noise, judged so) cast to fp16; the cast was judged on its own and the output called an
    underflow, "5e13% off fp64", with GradScaler advised. Oracle: fp64 autograd of the same model."""
    torch.manual_seed(0)
    model = _BatchNormTail().half().train()
    x = torch.randn(8, 16, 32, generator=torch.Generator().manual_seed(1)).half()
    exact = _BatchNormTail().double().train()
    exact.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
    exact(x.double()).backward()
    assert float(exact.bn.bias.grad.norm()) < 1e-12 * float(exact.bn.weight.grad.norm())
    r = check(model, (x,), "inductor-cpu", against="eager", backward=True)
    outs = {o.name: o for o in r.outputs}
    assert outs["grad_bn.bias"].noise_only and not outs["grad_bn.weight"].noise_only
    assert not any("GradScaler" in e for e in r.explanations), r.explanations
