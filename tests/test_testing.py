"""`roundoff.testing.assert_numerics`: passes where check passes, raises AssertionError with the
verdict and first finding where it diverges; oracles: eager torch, an fp64 run, libm's fmaf."""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from roundoff.analyze import check
from roundoff.testing import assert_numerics
from roundoff.zoo import get_workload

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _chain(a, b, c):
    return (a * b + c) * b - a


def _chain_inputs():
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(256, generator=g).to(torch.bfloat16) for _ in range(3))


def test_eager_policy_passes_and_returns_figures_matching_an_fp64_run():
    inputs = _chain_inputs()
    result = assert_numerics(_chain, inputs, policy="eager", against="eager")
    eager = _chain(*inputs).double()
    fp64 = _chain(*(t.double() for t in inputs))
    expected = torch.sqrt(torch.mean((eager - fp64) ** 2)).item()
    assert not result.diverges
    assert result.outputs[0].rmse_result == pytest.approx(expected, rel=1e-12)


def test_fma_cancel_under_inductor_gpu_raises_with_the_verdict_and_finding():
    w = get_workload("fma-cancel")
    x, s = w.make_inputs()
    # the oracle: eager gives exp(0) = 1; a contracted FMA keeps the product's rounding error
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.fmaf.restype = ctypes.c_float
    libm.fmaf.argtypes = [ctypes.c_float] * 3
    prod = (x * s).flatten()[0].item()
    err = libm.fmaf(x.flatten()[0].item(), s.flatten()[0].item(), -prod)
    assert w.build()(x, s).flatten()[0].item() == 1.0
    assert torch.exp(torch.tensor(err)).item() == math.inf
    with pytest.raises(AssertionError) as info:
        assert_numerics(w.build(), (x, s), policy="inductor-gpu", against="eager")
    head, finding = str(info.value).splitlines()
    assert "under inductor-gpu diverges from eager" in head and "RMSE vs fp64 inf" in head
    assert finding.startswith("first finding:") and "FMA" in finding
    # the same verdict as analyze.check itself, and the eager policy of the same program passes
    assert check(w.build(), (x, s), "inductor-gpu", "eager").diverges
    assert_numerics(w.build(), (x, s), policy="eager", against="eager")


def test_rule_is_passed_through():
    """Inductor-CPU's fused bf16 chain is as accurate as eager (`same` passes) but not bit-identical
    (`bitwise` fails), as real torch.compile on CPU differs from eager in ~36% of elements."""
    args = _chain_inputs()
    same = assert_numerics(_chain, args, policy="inductor-cpu", rule="same")
    assert not all(o.vs_reference.exact for o in same.outputs)  # the bits differ somewhere
    with pytest.raises(AssertionError, match="bitwise"):
        assert_numerics(_chain, args, policy="inductor-cpu", rule="bitwise")


def test_usable_from_pytest_the_failure_message_reaches_the_report(tmp_path):
    (tmp_path / "test_user.py").write_text(textwrap.dedent("""
        from roundoff.testing import assert_numerics
        from roundoff.zoo import get_workload

        def test_fma():
            w = get_workload("fma-cancel")
            assert_numerics(w.build(), w.make_inputs(), policy="inductor-gpu")
    """))
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "AssertionError" in proc.stdout and "diverges from eager" in proc.stdout
    assert "raise AssertionError(failure_message(result))" not in proc.stdout  # the user's line, not ours (trial 83)


def test_oracle_failure_names_the_oracle_rule_not_same():
    # oracle: check's own verdict against the oracle, and the fp64 run (exp overflows where fp64 is finite)
    w = get_workload("fma-cancel")
    x, s = w.make_inputs()
    assert check(w.build(), (x, s), "inductor-gpu", "oracle").diverges
    with pytest.raises(AssertionError) as info:
        assert_numerics(w.build(), (x, s), policy="inductor-gpu", against="oracle")
    head = str(info.value).splitlines()[0]
    assert "diverges from oracle by the oracle rule" in head and "`same`" not in head


def _fma_cancel_findings():  # type: ignore[no-untyped-def]
    """The real check of the FMA-cancellation workload, its NaN origin (else first divergence) and the findings
    that name it."""
    w = get_workload("fma-cancel")
    x, s = w.make_inputs()
    result = check(w.build(), (x, s), "inductor-gpu", "eager")
    origin = result.nan_origin or result.first_divergent
    at_origin = [e for e in result.explanations if f"({origin} " in e or f"({origin})" in e or f"({origin}," in e]
    assert origin and at_origin, result.explanations
    return result, origin, at_origin


def test_the_finding_named_is_the_one_at_the_origin_not_the_first_listed():
    """Trial 79: assert_numerics gave as its "first finding" an unrelated underflow note listed before the
    finding at the node it blamed. Oracle: the real check's NaN origin, named by its own finding."""
    import dataclasses

    from roundoff.testing import failure_message

    result, origin, at_origin = _fma_cancel_findings()
    unrelated = "`mul` (n99 at elsewhere.py:1) computes values below float16's normal range: ..."
    message = failure_message(dataclasses.replace(result, explanations=(unrelated, *result.explanations)))
    assert message.splitlines()[1] == f"first finding: {at_origin[0]}", message


def test_a_line_listing_more_nodes_of_a_finding_is_not_quoted_as_the_finding():
    """Trial 111: assert_numerics quoted "3 more `bmm` node(s) ... are flagged as well; the nodes table has them."
    as its first finding (it names the origin's id among the others), where an AssertionError has no nodes table.
    The finding it stands for, the one before it, is quoted. Oracle: the real check's own finding at its origin."""
    import dataclasses

    from roundoff.analyze.explain import FLAGGED_AS_WELL
    from roundoff.testing import failure_message

    result, origin, at_origin = _fma_cancel_findings()
    listing = f"2 more `mul` node(s) of elsewhere.py:1 ({origin}, n98) {FLAGGED_AS_WELL}"
    first = "`mul` (n97 at elsewhere.py:1) loses accuracy itself: ..."
    said = (first, listing, *[e for e in result.explanations if e not in at_origin])
    message = failure_message(dataclasses.replace(result, explanations=said))
    assert message.splitlines()[1] == f"first finding: {first}", message


def test_a_failure_says_where_the_reference_itself_is_nan() -> None:
    """Trial 82: `assert_numerics` said "diverges from eager ... (RMSE vs fp64 nan, reference nan)" where
    eager was NaN at the same elements; the CLI said so, the assertion did not. Oracle: fp64 is finite
    (exp(100)/sum is 1 there) and real eager's fp16 result is NaN."""
    x = torch.tensor([100.0, 1.0, -3.0], dtype=torch.float16)

    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.exp(x) / torch.exp(x).sum()

    assert torch.isnan(f(x)).any() and torch.isfinite(f(x.double())).all()
    with pytest.raises(AssertionError, match=r"eager itself is NaN/inf where fp64 is finite at \d+ element"):
        assert_numerics(f, (x,), "inductor-cpu")
