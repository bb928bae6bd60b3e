"""CPU models of Triton's fp32 ``exp`` / ``tl.sigmoid`` against independent computations.

Oracles: numpy's float32 arithmetic (IEEE, one rounding per operation) for the fp32 steps and
Python's ``2.0 ** p`` / ``math.exp`` in fp64 for the exact values; the error bound of the model
(fp32 rounding of ``t * log2(e)`` plus the final rounding) against ``exp`` in fp64.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from roundoff.capture import capture
from roundoff.execute import TranscendentalImpl, run_plan
from roundoff.execute.triton_models import LOG2E_F32, tl_exp, tl_sigmoid
from roundoff.numerics import bits_differ
from roundoff.plan import plan


def _sample(n: int = 4096, lo: float = -60.0, hi: float = 60.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(3)
    return (torch.rand(n, generator=g, dtype=torch.float64) * (hi - lo) + lo).float()


def test_tl_exp_equals_numpy_float32_steps_and_python_power() -> None:
    t = _sample()
    p = (t.numpy() * np.float32(LOG2E_F32)).astype(np.float32)  # numpy fp32 multiply: one rounding
    want = torch.tensor([2.0 ** float(v) for v in p], dtype=torch.float64).float()
    assert LOG2E_F32 == float(np.float32(1.4426950408889634))
    assert bits_differ(tl_exp(t), want) == 0, "repro: tl_exp(_sample()) vs 2.0 ** fl32(t * log2e)"


def test_tl_exp_error_bound_and_difference_from_expf() -> None:
    t = _sample()
    exact = torch.tensor([math.exp(float(v)) for v in t], dtype=torch.float64)
    rel = ((tl_exp(t).double() - exact) / exact).abs()
    # p = fl(t * LOG2E_F32) is off from t*log2(e) by the constant's error |t| |LOG2E_F32 - log2 e|
    # and the product's rounding (<= |p| 2**-24); 2**p moves by that times ln 2; one final rounding
    const_err = abs(LOG2E_F32 - 1 / math.log(2))
    bound = t.double().abs() * (1.4426950408889634 * 2.0**-24 + const_err) * math.log(2) + 2.0**-24
    assert bool((rel <= bound * 1.001).all()), f"repro: tl_exp error bound, worst {float((rel / bound).max())}"
    assert bits_differ(tl_exp(t), torch.exp(t)) > len(t) // 10  # the product's rounding shows (|t| > 4)


def test_tl_sigmoid_equals_numpy_float32_composition() -> None:
    x = torch.cat([_sample(lo=-100.0, hi=100.0), torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan")])])
    xs = x.numpy()
    n = np.float32(0.0) - xs
    p = (n * np.float32(LOG2E_F32)).astype(np.float32)
    with np.errstate(over="ignore"):
        e = np.exp2(p.astype(np.float64)).astype(np.float32)
        want = np.float32(1.0) / (np.float32(1.0) + e)
    assert bits_differ(tl_sigmoid(x), torch.from_numpy(want.astype(np.float32))) == 0, "repro: tl_sigmoid vs numpy"


def test_triton_model_impl_claims_only_modelled_ops() -> None:
    def fn(a: torch.Tensor) -> torch.Tensor:
        return torch.exp(torch.sigmoid(a * 3.0))

    a = (_sample(512, -8.0, 8.0)).to(torch.bfloat16)
    p = plan(capture(fn, a), "inductor-gpu")
    got = run_plan(p, (a,), transcendentals=TranscendentalImpl("triton-model"))[0]
    want = torch.exp(tl_sigmoid(a.float() * 3.0)).to(torch.bfloat16)  # fused fp32, one final rounding
    assert bits_differ(got, want) == 0, "repro: inductor-gpu plan of exp(sigmoid(3a)) with triton-model"
    only_exp = TranscendentalImpl("triton-model", targets=frozenset({torch.ops.aten.exp.default}))
    assert not only_exp.handles(torch.ops.aten.sigmoid.default, p.decisions[next(iter(p.decisions))].op_class)
    routed = TranscendentalImpl("eager", device="cpu")  # the device option: operands moved and back
    assert bits_differ(routed(torch.ops.aten.exp.default, (a.float(),), {}), torch.exp(a.float())) == 0


def test_correctly_rounded_impl_against_python_math() -> None:
    """Oracle: Python's math in fp64, rounded once to fp32 by numpy."""
    x = _sample(512, -10.0, 10.0)
    got = TranscendentalImpl("correctly-rounded")(torch.ops.aten.tanh.default, (x,), {})
    want = torch.from_numpy(np.array([math.tanh(float(v)) for v in x], dtype=np.float64).astype(np.float32))
    assert got.dtype == torch.float32 and bits_differ(got, want) == 0, "repro: correctly-rounded tanh"
