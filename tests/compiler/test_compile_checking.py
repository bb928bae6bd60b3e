"""Checking mode: warns/raises on a divergent policy, silent on a faithful one, samples calls."""

from __future__ import annotations

import warnings

import pytest
import torch
from compile_helpers import eager

import roundoff
from roundoff.compiler import RoundoffDivergenceError, RoundoffDivergenceWarning
from roundoff.policy import get_policy


def cancel(x: torch.Tensor, y: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    return torch.exp(x * s - y * s)


def _cancel_inputs() -> tuple[torch.Tensor, ...]:
    # y == x but a distinct tensor, so Inductor cannot CSE the products; |x*s| ~ 1e10 makes one
    # product's rounding error (~600) survive an FMA, and exp turns it into inf or 0.
    x = torch.randn(4096, generator=torch.Generator().manual_seed(0)) * 1e4
    return x, x.clone(), torch.tensor(1e6)


def test_divergent_policy_warns_with_output_and_metrics() -> None:
    f = roundoff.compile(cancel, policy=get_policy("inductor-gpu"), check="warn")
    with pytest.warns(
        RoundoffDivergenceWarning, match=r"output: rmse vs fp64.*non-finite compiled=[1-9]"
    ):
        out = f(*_cancel_inputs())
    assert torch.isinf(out).any(), "repro: inductor-gpu FMA policy on CPU, exp(x*s - y*s)"
    assert (cancel(*_cancel_inputs()) == 1).all()


def test_divergent_policy_raises() -> None:
    f = roundoff.compile(cancel, policy=get_policy("inductor-gpu"), check="raise")
    with pytest.raises(RoundoffDivergenceError) as info:
        f(*_cancel_inputs())
    assert info.value.report and not info.value.report[0].passed


def test_faithful_policy_is_silent_and_samples_every_nth_call() -> None:
    f = roundoff.compile(cancel, policy=eager(), check="raise", sample_every=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(7):
            out = f(*_cancel_inputs())
    assert (out == 1).all()
    history = f.roundoff_state.checker.history
    assert [call for call, _ in history] == [1, 4, 7]
    assert all(c.passed and c.mismatch_fraction == 0.0 for _, checks in history for c in checks)
    # bit-identical to eager: same()'s allclose test decides, so the fp64 run was skipped
    assert all(c.rmse_compiled is None for _, checks in history for c in checks)
    assert "rmse vs fp64 not computed (allclose to eager" in history[0][1][0].describe()  # trial 71: "nan"


def test_module_is_checked_with_its_parameters() -> None:
    torch.manual_seed(0)
    lin = torch.nn.Linear(16, 16).to(torch.bfloat16)
    m = roundoff.compile(lin, policy=eager(), check="raise")
    assert isinstance(m, torch.nn.Module)
    assert list(m.parameters()) == list(lin.parameters())
    m(torch.randn(8, 16, dtype=torch.bfloat16))
    ((_, checks),) = m._roundoff.checker.history
    assert checks[0].passed


def _sync_history(policy: str) -> tuple:
    f = roundoff.compile(cancel, policy=get_policy(policy), check="warn", check_async=False)
    with pytest.warns(RoundoffDivergenceWarning):
        f(*_cancel_inputs())
    return f.roundoff_state.checker.history


def test_asynchronous_warning_arrives_at_the_next_call_with_the_synchronous_verdict() -> None:
    f = roundoff.compile(
        cancel, policy=get_policy("inductor-gpu"), check="warn", sample_every=10, check_async=True
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f(*_cancel_inputs())  # sampled; the verdict is pending
    assert not [w for w in caught if issubclass(w.category, RoundoffDivergenceWarning)]
    assert f.roundoff_state.checker.history == []
    with pytest.warns(RoundoffDivergenceWarning, match=r"call 1 diverges"):
        f(*_cancel_inputs())  # call 2 is not sampled but delivers call 1's verdict
    assert f.roundoff_state.checker.history == _sync_history("inductor-gpu")


def test_asynchronous_raise_and_flush() -> None:
    f = roundoff.compile(cancel, policy=get_policy("inductor-gpu"), check="raise", check_async=True)
    f(*_cancel_inputs())
    with pytest.raises(RoundoffDivergenceError, match=r"call 1 diverges"):
        f.flush_checks()
    f.flush_checks()  # nothing pending any more
    assert len(f.roundoff_state.checker.history) == 1


def test_a_sample_due_while_one_is_pending_waits_for_it() -> None:
    f = roundoff.compile(cancel, policy=eager(), check="warn", sample_every=1, check_async=True)
    for _ in range(3):
        f(*_cancel_inputs())
    f.flush_checks()
    assert [call for call, _ in f.roundoff_state.checker.history] == [1, 2, 3]


@pytest.mark.parametrize("cache", [False, True])
def test_asynchronous_sample_uses_the_parameters_of_its_call(cache: bool) -> None:
    from roundoff.compiler import Checker, Fp64Reference

    torch.manual_seed(0)
    lin = torch.nn.Linear(32, 16).to(torch.bfloat16)
    x = torch.randn(8, 32, dtype=torch.bfloat16)
    # a "compiled" callable 1 bf16 ulp away from eager, so the fp64 run is needed
    checker = Checker(
        lin,
        lambda t: lin(t) * (1 + 2**-7),
        "warn",
        1,
        Fp64Reference(lin, cache=cache),
        asynchronous=True,
    )
    with torch.no_grad():
        out = checker(x)
        ref64 = torch.nn.functional.linear(x.double(), lin.weight.double(), lin.bias.double())
        lin.weight.add_(1.0)  # an optimizer step after the call, before the verdict
        x.add_(1.0)
    with pytest.warns(RoundoffDivergenceWarning, match=r"call 1 diverges"):
        checker.flush()
    ((call, (check,)),) = checker.history
    expected = torch.sqrt(torch.mean((out.double() - ref64) ** 2)).item()
    assert call == 1 and check.rmse_compiled == pytest.approx(expected, rel=1e-12), (
        f"repro: async Checker on bf16 Linear, cache={cache}"
    )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_warn_is_asynchronous_by_default_and_agrees_with_synchronous() -> None:
    inputs = [t.cuda() for t in _cancel_inputs()]
    verdicts = []
    for check_async in (None, False):
        f = roundoff.compile(
            cancel, policy=get_policy("inductor-gpu"), check="warn", check_async=check_async
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            f(*inputs)
            pending = not [w for w in caught if issubclass(w.category, RoundoffDivergenceWarning)]
            f.flush_checks()
        assert pending == (check_async is None), "repro: roundoff.compile(..., check='warn') on CUDA"
        verdicts.append(f.roundoff_state.checker.history)
    assert verdicts[0] == verdicts[1]


def test_overflow_eager_also_makes_is_reported_once_and_never_raised() -> None:
    """An fp16 exp that overflows in eager and compiled alike, finite in fp64 (trial 44: silent)."""
    from roundoff.compiler import RoundoffOverflowWarning

    x = torch.linspace(0.0, 14.0, 64).to(torch.float16)  # exp(x) > 65504 for x > 11.09
    expected = int((~torch.exp(x.double()).to(torch.float16).isfinite()).sum())  # torch's own cast
    assert expected > 0 and torch.exp(x.double()).isfinite().all()
    f = roundoff.compile(torch.exp, policy=eager(), check="raise", sample_every=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            out = f(x)
    assert not torch.isfinite(out).all()
    overflow = [w for w in caught if issubclass(w.category, RoundoffOverflowWarning)]
    assert len(overflow) == 1 and f"{expected} NaN/inf element(s)" in str(overflow[0].message)
    checks = [c for _, cs in f.roundoff_state.checker.history for c in cs]
    assert [c.overflow for c in checks] == [expected, expected] and all(c.passed for c in checks)


def test_a_mode_is_refused_not_ignored() -> None:
    """Trial 57: ``roundoff.compile(f, mode="bogus")`` ran, torch.compile ignoring a mode given with a
    backend of its own (a valid one too, silently)."""
    with pytest.raises(ValueError, match="does not take mode='max-autotune'"):
        roundoff.compile(torch.exp, mode="max-autotune")


def test_a_passing_check_keeps_its_verdicts_where_the_readme_says() -> None:
    """Trial 57: checking mode is silent while samples pass, and its verdicts were reachable only
    through an undocumented attribute (on a module, another one). Oracle: the README's own words, and
    the sampled calls (1 and 3 of 3, `sample_every=2`)."""
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    assert "fast.roundoff_state.checker.history" in readme
    torch._dynamo.reset()
    module = torch.nn.Linear(8, 8).bfloat16()
    x = torch.randn(4, 8).bfloat16()
    fast = roundoff.compile(module, policy="eager", check="raise", sample_every=2)
    for _ in range(3):
        fast(x)
    fast.flush_checks()
    history = fast.roundoff_state.checker.history
    assert [call for call, _ in history] == [1, 3] and all(c.passed for _, checks in history for c in checks), history


def _scaled_linear(lin: torch.nn.Module, t: torch.Tensor) -> torch.Tensor:
    return lin(t[:, None] * torch.full((4,), 0.37, dtype=t.dtype)).float().mean()


def _true_fp64(lin: torch.nn.Module, t: torch.Tensor) -> torch.Tensor:
    """The program run in fp64 by hand: the module's fp64 copy, its constant made in the input's dtype
    (fp64), no cast to fp32 on the way."""
    import copy

    lin64 = copy.deepcopy(lin).double()
    return lin64(t.double()[:, None] * torch.full((4,), 0.37, dtype=torch.float64)).mean()


@pytest.mark.parametrize("form", ["closure", "module"])
def test_a_float32_output_and_a_closure_over_a_module_are_judged_against_true_fp64(form: str) -> None:
    """Trial 63: checking mode raised "diverges" on an output the program casts to fp32 (its fp64 run was
    cast to fp32 too, and `same` skips its RMSE test for a fp32 reference), and crashed (Double and Half)
    on a closure over an fp16 module, whose parameters the fp64 run did not convert. Oracle: PyTorch's own
    `same(eager, compiled, fp64_ref)` with the fp64 program made by hand."""
    from torch._dynamo.utils import same

    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 4).half()
    t = torch.tensor([917.0, 433.0]).half()
    fn = (lambda t: _scaled_linear(lin, t)) if form == "closure" else _Wrapped(lin)
    with torch.no_grad():
        eager_out = fn(t)
        compiled = roundoff.compile(fn, policy="inductor-cpu", check="raise")
        out = compiled(t)  # raises RoundoffDivergenceError where the verdict is "diverges"
    assert not torch.equal(out, eager_out), "the case needs a compiled output that differs from eager"
    assert same(eager_out, out, fp64_ref=_true_fp64(lin, t))
    ((_, checks),) = compiled.roundoff_state.checker.history
    assert [c.passed for c in checks] == [True] and checks[0].rmse_compiled == pytest.approx(
        abs(out.double() - _true_fp64(lin, t)).item(), rel=1e-6)


class _Wrapped(torch.nn.Module):
    def __init__(self, lin: torch.nn.Module) -> None:
        super().__init__()
        self.lin = lin

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        return _scaled_linear(self.lin, t)


def test_a_reference_that_cannot_run_in_fp64_warns_once_and_never_raises() -> None:
    """Trial 63: a failing fp64 run raised inside the user's step. Code that reads fp16's own bits (a view
    as int16) cannot be run in fp64 (the view has 4x the elements there): the call is returned unchecked with
    one warning, even under check="raise". Oracle: the compiled output equals plain torch.compile's."""
    from roundoff.compiler import RoundoffCheckingWarning

    w = (torch.randn(4, 4, generator=torch.Generator().manual_seed(0)) * 30).half()

    def fn(t: torch.Tensor) -> torch.Tensor:
        parity = (t.view(torch.int16) & 1).to(t.dtype)  # fp16's last mantissa bit
        return (t[:, None] * torch.full((4,), 0.37, dtype=t.dtype)) @ w + parity[:, None]

    t = torch.tensor([917.0, 433.0]).half()
    compiled = roundoff.compile(fn, policy="inductor-cpu", check="raise")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = [compiled(t) for _ in range(2)]
    torch._dynamo.reset()
    assert all(torch.equal(o, torch.compile(fn)(t)) for o in outs)
    assert not torch.equal(outs[0], fn(t)), "the case needs a call whose check runs the fp64 reference"
    (warned,) = [w for w in caught if issubclass(w.category, RoundoffCheckingWarning)]
    assert "not checked" in str(warned.message) and "its fp64 reference failed" in str(warned.message)


def test_a_step_that_calls_backward_and_its_optimizer_is_returned_unchecked_and_updated_once() -> None:
    """Trial 111: `roundoff.compile(step, check="warn")` of a step that calls .backward() and steps its
    optimizer raised from the check ("element 0 of tensors does not require grad": the function run again
    eagerly under no_grad), after the compiled step had run. Now the call is returned unchecked with one
    warning, even under check="raise". Oracle: the same steps under plain torch.compile give the same losses
    and parameters bit for bit (the parameters are updated once a step)."""
    from roundoff.compiler import RoundoffCheckingWarning

    def trained(compile_step):  # type: ignore[no-untyped-def]
        torch.manual_seed(0)
        lin = torch.nn.Linear(8, 4).to(torch.bfloat16)
        opt = torch.optim.SGD(lin.parameters(), lr=0.1)
        x = torch.randn(16, 8, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)

        def step(x: torch.Tensor) -> torch.Tensor:
            opt.zero_grad()
            loss = lin(x).float().square().mean()
            loss.backward()
            opt.step()
            return loss.detach()

        compiled = compile_step(step)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            losses = [compiled(x) for _ in range(3)]
        return losses, [p.detach().clone() for p in lin.parameters()], caught

    torch._dynamo.reset()
    losses, params, caught = trained(lambda f: roundoff.compile(f, policy="inductor-cpu", check="raise"))
    torch._dynamo.reset()
    want_losses, want_params, _ = trained(torch.compile)
    assert all(torch.equal(a, b) for a, b in zip(losses, want_losses)), (losses, want_losses)
    assert all(torch.equal(a, b) for a, b in zip(params, want_params))
    (warned,) = [w for w in caught if issubclass(w.category, RoundoffCheckingWarning)
                 and "not checked" in str(w.message)]
    assert "running the function again eagerly" in str(warned.message) and ".backward()" in str(warned.message)


def test_the_reference_reads_closed_over_16_bit_tensors_in_fp64() -> None:
    """Trial 85: research code's parameters, a closed-over dict of fp16 leaf tensors, stayed fp16 in the
    fp64 reference, which failed (double @ half), so checking mode checked nothing. Oracle: the same ops
    run by hand on fp64 copies; and a compiled call checked without a warning."""
    from roundoff.compiler import RoundoffCheckingWarning
    from roundoff.compiler.reference import Fp64Reference

    g = torch.Generator().manual_seed(0)
    params = {"w": (torch.randn(4, 4, generator=g) * 0.5).half().requires_grad_()}
    bias = torch.randn(4, generator=g).to(torch.bfloat16)  # a closed-over constant of another format

    def fn(x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x @ params["w"] + bias) * torch.full((4,), 0.37, dtype=x.dtype)

    x = torch.randn(3, 4, generator=g).half()
    got = Fp64Reference(fn, cache=False)((x,), {})
    want = torch.tanh(x.double() @ params["w"].detach().double() + bias.double()) * torch.full((4,), 0.37,
                                                                                                 dtype=torch.float64)
    assert got.dtype == torch.float64 and torch.equal(got, want)
    assert params["w"].dtype == torch.float16 and params["w"].grad is None  # the caller's tensor untouched
    compiled = roundoff.compile(fn, policy="inductor-cpu", check="warn")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.no_grad():
            compiled(x)
    torch._dynamo.reset()
    assert not [w for w in caught if issubclass(w.category, RoundoffCheckingWarning)], [str(w.message) for w in caught]


class _Ema(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("ema", torch.zeros(4, dtype=torch.float16))
        self.lin = torch.nn.Linear(4, 4).half()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x * 3.1)
        self.ema.mul_(0.9).add_(0.1 * y.detach().mean(0))
        return y.float().sum()


def _counting(x: torch.Tensor, buf: torch.Tensor) -> torch.Tensor:
    buf.add_(1)
    x.mul_(2)
    return (x * buf).float().sum()


def test_a_sampled_call_updates_buffers_and_inputs_once_as_the_compiled_step_does() -> None:
    """Trial 64: checking mode ran eager (and fp64) on the inputs and modules the compiled step had already
    updated, so a sampled call updated an EMA buffer twice and an in-place input twice, silently. Oracle:
    plain torch.compile's state after the same call."""
    states = []
    for check in (None, "warn"):
        torch._dynamo.reset()
        torch.manual_seed(0)
        model = _Ema()
        x, buf = torch.ones(4, dtype=torch.float16), torch.zeros(4, dtype=torch.float16)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if check is None:
                torch.compile(model)(torch.ones(2, 4, dtype=torch.float16))
                torch.compile(_counting)(x, buf)
            else:
                roundoff.compile(model, policy="inductor-cpu", check=check)(torch.ones(2, 4, dtype=torch.float16))
                roundoff.compile(_counting, policy="inductor-cpu", check=check)(x, buf)
        states.append((model.ema.clone(), x.clone(), buf.clone()))
    (ema, x, buf), (ema_checked, x_checked, buf_checked) = states
    assert torch.equal(ema, ema_checked) and torch.equal(x, x_checked) and torch.equal(buf, buf_checked), states
    assert x.tolist() == [2.0] * 4 and buf.tolist() == [1.0] * 4


def _scaled_row_maxima(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    r = x / y
    hit = (r == r.amax(-1, keepdim=True)).to(r.dtype)  # a tie mask: inductor-cpu compares r unrounded
    return ((r * hit).sum(-1) * 1e-5).float()


def test_a_small_output_far_off_is_not_passed_by_an_absolute_tolerance() -> None:
    """Trial 64: the compiled row maxima, 96% off fp64 at a 1e-5 scale, passed every sample: allclose's
    atol 1e-4 holds anything that small. Taken at eager's scale, it is not close, and `same_rule` fails
    it. Oracle: the compiled output itself against an fp64 run, and eager's."""
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(64, 32, generator=g).bfloat16(), (torch.rand(64, 32, generator=g) + 0.5).bfloat16()
    exact = _scaled_row_maxima(x.double(), y.double()).double()
    torch._dynamo.reset()
    f = roundoff.compile(_scaled_row_maxima, policy="inductor-cpu", check="raise", sample_every=1)
    with pytest.raises(RoundoffDivergenceError) as info:
        f(x, y)
    compiled = torch.compile(_scaled_row_maxima)(x, y).double()
    assert float((compiled - exact).norm() / exact.norm()) > 0.5  # it is wrong
    assert float((_scaled_row_maxima(x, y).double() - exact).norm() / exact.norm()) < 0.01  # eager is not
    (check,) = info.value.report
    assert not check.passed and check.rmse_compiled > 100 * check.rmse_eager


def test_a_call_whose_output_requires_grad_says_once_that_gradients_are_not_checked() -> None:
    """Trial 70: checking mode recorded ``passed=True`` on a training step whose gradients were NaN; the README
    says it judges the returned loss only, the run said nothing. Oracle: the check's own history (the first
    call sampled and judged, every call counted) and one warning, none for a call made under ``torch.no_grad``."""
    import warnings

    from roundoff.compiler import RoundoffCheckingWarning

    torch.manual_seed(0)
    lin = torch.nn.Linear(16, 16).to(torch.bfloat16)
    m = roundoff.compile(lin, policy=eager(), check="raise")
    x = torch.randn(8, 16, dtype=torch.bfloat16)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", RoundoffCheckingWarning)
        m(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m(x).float().sum().backward()
        m(x)
    said = [str(w.message) for w in caught if issubclass(w.category, RoundoffCheckingWarning)]
    assert len(said) == 1 and "not the gradients" in said[0], said
    assert len(m._roundoff.checker.history) == 1 and m._roundoff.checker.calls == 3


class _ScaledByABuffer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8, 8, generator=torch.Generator().manual_seed(0)))
        self.register_buffer("scale", torch.full((8,), 0.5))  # saved for the backward: grad_w reads it

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x @ self.w) * self.scale).sum()


def test_a_sampled_training_step_leaves_the_buffers_its_backward_saved_untouched() -> None:
    """Trial 71: a sampled call put every module buffer back by copying, which advanced the version of a
    rotary ``inv_freq`` the compiled step had saved, and its backward raised "modified by an inplace
    operation". Oracle: the eager module's gradient, where the backward now runs."""
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(1))
    model = _ScaledByABuffer()
    model(x).backward()
    expected, model.w.grad = model.w.grad.clone(), None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        roundoff.compile(model, policy="eager", check="warn")(x).backward()
    assert torch.allclose(model.w.grad, expected)


def test_a_records_repr_says_what_its_figures_cover() -> None:
    """Trials 89 and 91: checking mode's history printed as the dataclass's fields, `max_abs_diff=0.0` beside
    `rmse_eager=inf` (a VAE whose compiled loss is finite where eager's overflows) read as a contradiction: the
    largest difference is over the elements finite in both, which the record now says. Oracle: the loss
    computed by hand in fp64, and eager's own inf."""
    from roundoff.compiler.checking import compare_outputs

    compiled = torch.tensor([40672.0, 1.5], dtype=torch.float16)
    eager = torch.tensor([float("inf"), 1.5], dtype=torch.float16)
    fp64 = torch.tensor([40604.6, 1.5], dtype=torch.float64)
    (record,) = compare_outputs(compiled, eager, fp64)
    assert record.passed and record.max_abs_diff == 0.0 and record.nonfinite == (0, 1)
    text = repr(record)
    assert text.startswith("OutputCheck(passed: output: ") and "where both are finite" in text, text
    assert "non-finite compiled=0 eager=1" in text and "max_abs_diff=" not in text, text


class _RecurrentDecoder(torch.nn.Module):
    """Trial 92's shape: an nn.GRU (a Dynamo graph break) called inside a loop, which Dynamo cannot resume after,
    so it skips the whole frame and torch.compile runs the module eagerly."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = torch.nn.GRU(4, 4, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x[:, 0]
        for t in range(3):
            h = h + self.rnn(x)[0][:, t]
        return h.sum()


def test_checking_says_when_torch_compile_compiled_nothing() -> None:
    """Trial 92: a GRU encoder-decoder that torch.compile ran wholly eagerly was "checked" (compiled == eager,
    passed) with no word that nothing was compiled. Oracle: plain torch.compile returns eager's bits and
    its backend is never called."""
    import warnings

    import roundoff
    from roundoff.compiler import RoundoffCheckingWarning

    torch.manual_seed(0)
    model, x = _RecurrentDecoder(), torch.randn(2, 3, 4)
    graphs = []
    torch._dynamo.reset()
    plain = torch.compile(model, backend=lambda gm, ex: graphs.append(gm) or gm.forward)(x)
    assert not graphs and torch.equal(plain, model(x))
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = roundoff.compile(model, policy="inductor-cpu", check="warn", sample_every=1)
        compiled(x)
        compiled(x)
    said = [w for w in caught if issubclass(w.category, RoundoffCheckingWarning) and "compiled no graph" in str(w.message)]
    assert len(said) == 1 and "_RecurrentDecoder" in str(said[0].message) and said[0].filename == __file__, said
