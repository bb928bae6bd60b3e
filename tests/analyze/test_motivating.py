"""The motivating cases end to end: FMA cancellation, softmax-backward NaN, XLA bf16 mul."""

from __future__ import annotations

import json

import torch

from roundoff.analyze import check
from roundoff.capture import Program, capture
from roundoff.zoo import get_workload


def _zoo(name: str, **kw: object) -> tuple:
    w = get_workload(name)
    fn, xs = w.build(**kw), w.make_inputs(**kw)
    return fn, xs, capture(fn, *xs, backward=w.backward)


def _node(program: Program, target: object) -> str:
    return next(n.meta["roundoff_id"] for n in program.graph.nodes if n.target is target)


def test_fma_cancel_inductor_gpu_inf_with_origin_and_fma_named() -> None:
    _fn, xs, prog = _zoo("fma-cancel")
    oracle = torch.exp(xs[0].double() * xs[1].double() - xs[0].double() * xs[1].double())
    assert oracle.item() == 1.0  # independent fp64 run of the user's function
    r = check(prog, xs, "inductor-gpu")
    res = r.outputs[0]
    assert r.diverges and not res.passes and res.vs_oracle.inf == 1, "repro: check(zoo fma-cancel, 'inductor-gpu')"
    sub, exp = _node(prog, torch.ops.aten.sub.Tensor), _node(prog, torch.ops.aten.exp.default)
    assert r.nan_origin == exp  # first node making inf from finite inputs
    assert r.culprits[0] == sub  # ...but the accuracy is lost at the subtraction (local error)
    assert r.node(sub).fma and r.node(sub).local.max_bits > 20
    assert r.node(exp).local.max_bits == 0  # exp of the oracle's 0 is exact: its error is inherited
    assert any(sub in e and "FMA" in e and "inf" in e for e in r.explanations), r.explanations
    assert any(h.kind == "fma-cancellation" and h.node_id == sub for h in r.hazards)
    json.dumps(r.to_dict(), allow_nan=False)


def test_fma_cancel_eager_is_clean() -> None:
    _fn, xs, prog = _zoo("fma-cancel")
    r = check(prog, xs, "eager", against="oracle")
    assert not r.diverges and r.nan_origin is None and not r.hazards
    assert r.outputs[0].vs_oracle.max_ulp == 0


def test_softmax_backward_nan_matches_real_compile_and_names_origin() -> None:
    fn, xs, prog = _zoo("softmax-backward")
    x, y = (t.detach() for t in xs)
    y_real = y.clone().requires_grad_()
    torch.compile(fn)(x, y_real).sum().backward()  # real Inductor on CPU: no FMA, still NaN
    real_nan = y_real.grad.isnan()
    assert bool(real_nan.all()), "precondition: CPU Inductor gives NaN gradients"
    for policy in ("inductor-gpu", "inductor-cpu"):
        r = check(prog, (x, y), policy)
        grad = next(o for o in r.outputs if o.name == "grad_y")
        assert grad.vs_oracle.nan == real_nan.sum().item() and not grad.passes, f"repro: check(softmax-backward, {policy!r})"
        origin = prog.node(r.nan_origin)
        assert origin.target is torch.ops.aten.div.Tensor  # 0/0: the amax tie count is 0
        assert any(h.kind == "mixed-precision-comparison" for h in r.hazards)
        assert any(r.nan_origin in e and "is 0 where fp64 is not" in e for e in r.explanations), r.explanations
    eager = check(prog, (x, y), "eager", against="oracle")
    assert eager.nan_origin is None and not any(o.vs_oracle.nan for o in eager.outputs)


def test_xla_bf16_mul_per_layer() -> None:
    """2.9 (f32 mul, rounded) and 2.10 (native bf16 mul) are bit-identical: a bf16 x bf16 product is
    exact in fp32, so one rounding either way. They part only where XLA keeps f32 in a fusion
    (excess precision): then the 2.9 lowering (xla-neuron) is closer to fp64 at every layer."""
    a = torch.randn(1 << 16).bfloat16()
    b = torch.randn(1 << 16).bfloat16()
    assert torch.equal(a.float() * b.float(), (a.double() * b.double()).float())  # exact product
    _fn, xs, prog = _zoo("llama-block")
    old, new = (check(prog, xs, p, against="oracle", nodes="all") for p in ("xla-2.9", "xla-2.10"))
    assert old.by_source() == new.by_source()
    fused_old = check(prog, xs, "xla-neuron", against="oracle", nodes="all").by_source()
    fused_new = check(prog, xs, "xla-excess-precision", against="oracle", nodes="all").by_source()
    worse = {src: (fused_old[src], fused_new[src]) for src in fused_old if fused_old[src][1] > fused_new[src][1]}
    assert not worse, f"layers where the f32-mul lowering is further from fp64: {worse}"
    assert any(fused_old[s][1] < fused_new[s][1] for s in fused_old)
