"""roundoff.compile(policy="eager") equals eager bit for bit where plain torch.compile does not."""

from __future__ import annotations

import pytest
import torch
from compile_helpers import bf16_inputs, differing

import roundoff
import roundoff.compiler  # importing it registers the "roundoff" backend
from roundoff.compiler.backend import compilations
from roundoff.zoo import get_workload


def chain(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    return ((a * b) + c) * d - a


def test_bf16_chain_plain_compile_differs_roundoff_compile_does_not() -> None:
    xs = bf16_inputs(200_000, 4)
    ref = chain(*xs)
    plain = torch.compile(chain)(*xs)
    before = compilations["eager"]
    ours = roundoff.compile(chain, policy="eager")(*xs)
    assert compilations["eager"] == before + 1, "Dynamo ran the roundoff-compiled chain eagerly"
    repro = (
        "repro: roundoff.compile(chain, policy='eager')(*bf16 randn(200000) x4, seed 0) vs eager"
    )
    assert differing(plain, ref) > 0.2, (
        f"plain torch.compile should round only at kernel end; {repro}"
    )
    assert differing(ours, ref) == 0.0, repro


def test_registered_backend_name() -> None:
    xs = bf16_inputs(50_000, 4, seed=1)
    out = torch.compile(chain, backend="roundoff", options={"policy": "eager"})(*xs)
    assert differing(out, chain(*xs)) == 0.0, "repro: torch.compile(chain, backend='roundoff')"


@pytest.mark.parametrize("name", ["bf16-chain", "fma-cancel"])
def test_zoo_pointwise_graphs_equal_eager(name: str) -> None:
    work = get_workload(name)
    fn, inputs = work.build(), work.make_inputs()
    before = compilations["eager"]
    with torch.no_grad():
        ref = fn(*inputs)
        out = roundoff.compile(fn, policy="eager")(*inputs)
    assert compilations["eager"] > before, f"Dynamo ran zoo {name!r} eagerly"
    for i, (o, r) in enumerate(
        zip(torch.utils._pytree.tree_leaves(out), torch.utils._pytree.tree_leaves(ref))
    ):
        assert differing(o, r) == 0.0, (
            f"output {i}; repro: roundoff.compile(zoo {name!r}, policy='eager')"
        )


def test_bad_arguments_say_what_to_do() -> None:
    with pytest.raises(ValueError, match="check="):
        roundoff.compile(chain, check="loud")
    with pytest.raises(ValueError, match="sample_every"):
        roundoff.compile(chain, check="warn", sample_every=0)
    with pytest.raises(ValueError, match="sample_every"):  # trial 64: a bool is an int to isinstance
        roundoff.compile(chain, check="warn", sample_every=True)
    with pytest.raises(ValueError, match="policy=..."):
        roundoff.compile(chain, backend="inductor")
    with pytest.raises(TypeError, match="callable"):
        roundoff.compile(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Policy"):
        roundoff.compile(chain, policy=3)  # type: ignore[arg-type]


def test_a_bf16_rms_norms_backward_compiled_under_eager_equals_eager() -> None:
    """Trial 70: ``roundoff.compile(policy="eager")`` differed from eager in 285 of 16384 elements of a bf16
    RMSNorm's input gradient, silently: rsqrt's derivative ``pow(r, 3)``, which eager computes as ``(r * r) * r``
    in bf16, was compiled as one rounding. The compiler applies the eager-cpu decompositions where the graph
    calls rsqrt. Oracle: real eager's gradients, bit for bit."""
    from tests.execute.test_eager_fidelity import _rms_norm_loss

    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 256, generator=g).bfloat16().requires_grad_()
    w = torch.randn(256, generator=g).bfloat16().requires_grad_()
    _rms_norm_loss(x, w).backward()
    eager = (x.grad.clone(), w.grad.clone())
    x.grad = w.grad = None
    torch._dynamo.reset()
    roundoff.compile(_rms_norm_loss, policy="eager")(x, w).backward()
    assert torch.equal(x.grad.view(torch.int16), eager[0].view(torch.int16))
    assert torch.equal(w.grad.view(torch.int16), eager[1].view(torch.int16))
