"""Ties and small outputs (trial 64): an equality test that a rounding flips, and an output whose values
are all below ``same``'s absolute tolerance. Oracles: PyTorch's own ``same`` at order 1, real
torch.compile on CPU, and fp64 runs."""

from __future__ import annotations

import math

import pytest
import torch
from torch._dynamo.utils import same

from roundoff.analyze import check
from roundoff.analyze.verdict import order_one_scale, same_rule
from roundoff.blame.repro_runtime import within
from roundoff.capture import capture

BF16 = torch.bfloat16


def _scaled_row_maxima(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    r = x / y
    m = r.amax(-1, keepdim=True)
    hit = (r == m).to(r.dtype)  # the row's maximum, picked by a tie mask
    return ((r * hit).sum(-1) * 1e-5).float()


def _tie_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return torch.randn(64, 32, generator=g).to(BF16), (torch.rand(64, 32, generator=g) + 0.5).to(BF16)


@pytest.mark.parametrize("exponent", [-3, -17, -40, -70])
def test_same_rule_takes_allclose_at_a_small_outputs_own_scale(exponent: int) -> None:
    """An output below 1 is close to its reference where ``allclose`` at tol holds once it is scaled by a
    power of two to order 1 (exact); `same`'s RMSE rule stays as it is. Oracles: `same` itself at order 1,
    and its RMSE rule computed here (rmse(res) <= 3 rmse(ref) + tol/10 for bf16)."""
    g = torch.Generator().manual_seed(exponent)
    small = math.ldexp(1.0, exponent)
    for spread in (1e-3, 0.3):
        fp64 = torch.randn(256, generator=g, dtype=torch.float64)
        fp64 = fp64 * (1.5 / fp64.abs().max())  # largest in [1, 2): `same_rule` takes it as it is
        ref = fp64.to(BF16)
        res = (fp64 * (1 + spread * torch.randn(256, generator=g, dtype=torch.float64))).to(BF16)
        at_one = bool(same(ref, res, fp64_ref=fp64, tol=1e-4))
        assert order_one_scale(fp64 * small, ref * small) == math.ldexp(1.0, min(-exponent, 64))
        got = same_rule(ref * small, res * small, fp64 * small, 1e-4)
        res_rmse, ref_rmse = (float((a.double() * small - fp64 * small).pow(2).mean().sqrt()) for a in (res, ref))
        assert got == (at_one or res_rmse <= 3 * ref_rmse + 1e-5), (spread, got)
        assert within(ref * small, res * small, fp64 * small, 1e-4, None) == got  # a repro.py's verdict too
        if spread == 0.3:  # far off: failed while its RMS error is over the RMSE rule's slack tol/10 (2**-3)
            assert not at_one and got == (exponent != -3) and bool(
                same(ref * small, res * small, fp64_ref=fp64 * small, tol=1e-4)) == (exponent <= -17)


def test_same_rules_rmse_slack_still_passes_a_small_gradient_a_few_times_eagers_error() -> None:
    """The corpus's OPTForCausalLM: a q_proj weight gradient (values ~1e-3) emulated at 3.04x eager's error
    against fp64, where real torch.compile is 0.98x: `same`'s RMSE slack tol/10 passes it, as it does in
    PyTorch. Oracle: `same` itself, unscaled."""
    g = torch.Generator().manual_seed(7)
    fp64 = torch.randn(512, generator=g, dtype=torch.float64) * 1e-3
    ref = (fp64 * (1 + 2.0**-9 * torch.randn(512, generator=g, dtype=torch.float64))).to(BF16)
    res = (fp64 * (1 + 4 * 2.0**-9 * torch.randn(512, generator=g, dtype=torch.float64))).to(BF16)
    assert order_one_scale(fp64, ref) > 1 and bool(same(ref, res, fp64_ref=fp64, tol=1e-4))
    assert not torch.allclose(ref * 1024, res * 1024, atol=1e-4, rtol=1e-4)  # not close at its own scale
    assert same_rule(ref, res, fp64, 1e-4) and within(ref, res, fp64, 1e-4, None)


def test_an_output_its_reference_does_not_resolve_is_left_to_same() -> None:
    """A gradient that is 0 by the model's structure (the corpus's RobertaForQuestionAnswering: layer 1's
    query gradient): fp64's noise of 1e-20, eager's 0, a fused fp32 kernel's 1e-13. No format resolves it,
    so its units are not scaled away: PyTorch's `same` judges it as it is. Oracle: `same` itself."""
    g = torch.Generator().manual_seed(5)
    fp64 = torch.randn(64, 32, generator=g, dtype=torch.float64) * 1e-20
    eager = torch.zeros(64, 32, dtype=BF16)
    fused = (torch.randn(64, 32, generator=g) * 6e-13).to(BF16)
    assert order_one_scale(fp64, eager) == 1.0
    assert same_rule(eager, fused, fp64, 1e-4) == bool(same(eager, fused, fp64_ref=fp64, tol=1e-4)) is True
    assert within(eager, fused, fp64, 1e-4, None)


def test_a_flipped_tie_mask_fails_check_as_it_fails_compiled() -> None:
    """Trial 64: ``(r == amax(r)) * r`` under inductor-cpu compares the unrounded r with its stored max,
    so the mask is empty in most rows; the 1e-5-scale output, 96% off, passed check on `same`'s absolute
    tolerance and no node was named. Oracle: real torch.compile's output against fp64."""
    x, y = _tie_inputs()
    fp64 = _scaled_row_maxima(x.double(), y.double()).double()
    torch._dynamo.reset()
    compiled = torch.compile(_scaled_row_maxima, dynamic=False, fullgraph=True)(x, y).double()
    assert float((compiled - fp64).norm() / fp64.norm()) > 0.5  # real torch.compile loses the maxima
    result = check(capture(_scaled_row_maxima, x, y), (x, y), "inductor-cpu", against="eager")
    assert result.diverges and not result.outputs[0].passes
    (flip,) = result.selection_flips  # the eq, named: its mask differs from fp64's where compiled's does
    mask64 = (x.double() / y.double()) == (x.double() / y.double()).amax(-1, keepdim=True)
    assert flip[2] == mask64.numel() and flip[1] >= (compiled == 0).sum().item()
    assert any(e.startswith("`eq`") and "compares otherwise than fp64" in e for e in result.explanations), result.explanations
    eager = check(capture(_scaled_row_maxima, x, y), (x, y), "eager", against="oracle")
    assert not eager.diverges  # eager compares two rounded values: its mask is fp64's


def test_an_ordered_comparison_and_an_integer_one_are_not_named() -> None:
    """A ReLU's mask (``le`` in its backward) flips wherever its input's error crosses 0, and ``topi == e``
    compares integers (it flips only where topk did): neither is a decision of its own. Oracle: the flips
    exist (fp64 against eager's own bf16 values)."""
    g = torch.Generator().manual_seed(2)
    x, y = (torch.randn(64, 16, generator=g).to(BF16) for _ in range(2))
    z = (x.double() * y.double()).to(BF16)  # the product correctly rounded: eager's x*y - z is 0, fp64's is not
    w = torch.randn(16, 16, generator=g).to(BF16).requires_grad_()

    def f(x, y, z, w):
        h = torch.relu(x * y - z) @ w
        picked = (h.argmax(-1, keepdim=True) == torch.arange(16)).to(h.dtype)
        return (h * picked).sum() + (h * h).sum()

    assert ((x * y - z > 0) != (x.double() * y.double() - z.double() > 0)).any()
    result = check(f, (x, y, z, w), "eager", against="oracle", nodes="all", backward=True)
    assert not any("compares otherwise" in e for e in result.explanations), result.explanations


def test_a_selection_after_a_named_cause_names_it_and_the_scores_own_rounding() -> None:
    """Trial 95's VQ-VAE: the codebook distances ``|x|^2 - 2 x.c + |c|^2`` cancel in bf16 and the argmin
    flips; the sentence said "downstream of the cause(s) above ... Fix those first", where the causes above
    included the straight-through `add` after the argmin, and fixing the encoder upstream does not stop the
    flips. Oracle: the same argmin with the distances computed in fp32 from the same bf16 values (no flips
    against fp64)."""
    from roundoff.analyze import check

    torch.manual_seed(0)
    enc = torch.nn.Sequential(torch.nn.Linear(128, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64)).bfloat16()
    dec = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128)).bfloat16()
    codes = (torch.rand(512, 64) * 2 / 512 - 1 / 512).bfloat16().requires_grad_()
    inp = torch.randn(64, 128, generator=torch.Generator().manual_seed(1)).bfloat16()

    def idx(x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return (x.pow(2).sum(1, keepdim=True) - 2 * x @ c.t() + c.pow(2).sum(1)).argmin(1)

    def loss(inp: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
        x = enc(inp)
        q = codes[idx(x, codes)]
        rec = dec(x + (q - x).detach())
        return torch.nn.functional.mse_loss(rec, inp) + torch.nn.functional.mse_loss(q, x.detach())

    with torch.no_grad():
        x, codes_ = enc(inp), codes.detach()
        exact = idx(x.double(), codes_.double())
        assert int((idx(x, codes_) != exact).sum()) > 8 and int((idx(x.float(), codes_.float()) != exact).sum()) == 0
    result = check(loss, (inp, codes), "eager", against="oracle", backward=True)
    (said,) = [e for e in result.explanations if e.startswith("`argmin`")]
    assert "compute the scores in fp32" in said and "Fix those first" not in said, said
    if "downstream of" in said:  # only causes upstream of the argmin are named there, not the later `add`
        assert "`add`" not in said.split("(named above)")[0], said
