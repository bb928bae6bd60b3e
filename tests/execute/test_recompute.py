"""Streaming with recomputation: the same numbers as keeping every value, with far fewer bytes alive.

Oracle: the same Lockstep run with nothing dropped (``keep=True`` or ``recompute=()``); a recomputed
value must equal the dropped one bit for bit on CPU.
"""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from roundoff.analyze import check
from roundoff.capture import Program, capture
from roundoff.capture.program import NODE_ID
from roundoff.execute import Lockstep, OracleNumerics, plan_numerics
from roundoff.execute.interpreter import DROPPED, is_random
from roundoff.execute.recompute import plan_recompute
from roundoff.plan import plan
from roundoff.zoo import blocks, get_workload
from tests.execute.graphs import same_bits


def _stack(
    layers: int, d: int = blocks.DIM, seq: int = blocks.SEQ, device: str = "cpu"
) -> tuple[Program, tuple[torch.Tensor, ...]]:
    """`layers` zoo Llama blocks (width `d`, `d/16` heads) in sequence, forward+backward, bf16."""
    def block(seed: int) -> torch.nn.Module:
        b = blocks.Block(blocks.SwiGLU(d, 2 * d))
        b.input_layernorm, b.post_attention_layernorm = blocks.RMSNorm(d), blocks.RMSNorm(d)
        b.self_attn = blocks.Attention(d, d // 16, seq)
        return blocks._initialise(b, seed, device, torch.bfloat16)

    model = torch.nn.Sequential(*[block(i) for i in range(layers)])
    x = torch.randn(blocks.BATCH, seq, d, generator=torch.Generator().manual_seed(7)).bfloat16().to(device)
    x.requires_grad_()
    prog = capture(model, x, backward=True)
    return prog, tuple(t.detach() for t in prog.example_inputs)


def _run(prog: Program, inputs: tuple, recompute: tuple[int, ...], policy: str = "inductor-gpu") -> tuple[tuple, int, Lockstep]:
    """Outputs of (policy, oracle, eager) in lockstep, and the peak bytes of live float values."""
    p = plan(prog, policy)  # its program is the decomposed graph every side runs
    sides = [plan_numerics(p), OracleNumerics(), plan_numerics(plan(p.program, "eager"))]
    peak = 0

    def on_node(node: torch.fx.Node, vals: tuple, ls: Lockstep) -> None:
        nonlocal peak
        seen: set[int] = set()
        total = 0
        for v in [*(x for e in ls.env.values() for x in e), *vals, *(x for c in ls._cache.values() for x in c.values())]:
            if isinstance(v, torch.Tensor) and v.untyped_storage().data_ptr() not in seen:
                seen.add(v.untyped_storage().data_ptr())
                total += v.untyped_storage().nbytes()
        peak = max(peak, total)

    ls = Lockstep(p.program, sides, on_node=on_node, recompute=recompute, recompute_min_numel=0)
    with torch.no_grad():
        outs = ls.run_inputs(inputs)
    return outs, peak, ls


def test_recomputed_runs_equal_kept_runs_and_hold_far_fewer_bytes() -> None:
    prog, inputs = _stack(4)
    kept, peak_kept, _ = _run(prog, inputs, recompute=())
    redone, peak_redone, ls = _run(prog, inputs, recompute=(0, 1, 2))
    assert ls.recomputed > 0 and ls._recompute is not None and ls._recompute.dropped
    for side_kept, side_redone in zip(kept, redone):
        assert len(side_kept) == len(side_redone)
        for a, b in zip(side_kept, side_redone):
            assert same_bits(a, b)
    # The stack's forward activations are read again by its backward: without recomputation all three
    # sides hold every layer's; with it, about one layer's (plus the weight gradients, held to the end).
    assert peak_redone < 0.6 * peak_kept, (peak_redone, peak_kept)


def test_recomputing_one_side_releases_the_others_on_time() -> None:
    """Only the oracle recomputes: a checkpoint it still needs lives on for it alone, and the other
    sides' values of it are released at their last use (they would otherwise be held to the end)."""
    prog, inputs = _stack(3)
    kept, peak_kept, _ = _run(prog, inputs, recompute=())
    redone, peak_redone, ls = _run(prog, inputs, recompute=(1,))
    assert ls._recompute is not None and ls._recompute.extend and ls._release_after
    assert ls.recomputed > 0 and peak_redone < peak_kept
    for side_kept, side_redone in zip(kept, redone):
        assert all(same_bits(a, b) for a, b in zip(side_kept, side_redone))


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs CUDA"))])
def test_check_reports_are_the_same_with_and_without_recomputation(monkeypatch, device: str) -> None:
    prog, inputs = _stack(2, d=128, seq=64, device=device)  # activations of 2**14 elements: dropped by default
    made: list[Lockstep] = []
    init = Lockstep.__init__

    def spy(self: Lockstep, *a: object, **k: object) -> None:
        init(self, *a, **k)
        made.append(self)

    monkeypatch.setattr(Lockstep, "__init__", spy)
    for against in ("eager", "oracle"):
        streamed = check(prog, inputs, "inductor-gpu", against=against)
        assert made[-1].recomputed > 0
        kept = check(prog, inputs, "inductor-gpu", against=against, stream=False)
        assert streamed.nodes == kept.nodes and streamed.outputs == kept.outputs, f"against {against}"
        assert streamed.nan_origin == kept.nan_origin and streamed.culprits == kept.culprits
        assert streamed.hazards == kept.hazards


def test_a_substituted_value_recomputes_as_substituted() -> None:
    """An observer replaces forward values on every side (as `observe` puts a real kernel's buffer in
    place of a node) and pins them: a side that drops one and reads it again in the backward must read
    the substitute, not its own evaluation of the node. Oracle: the same run with nothing dropped."""
    prog, inputs = _stack(2)
    swapped = set()

    def run(recompute: tuple[int, ...], pin: bool) -> tuple:
        def substitute(node: torch.fx.Node, vals: tuple, ls: Lockstep) -> tuple | None:
            if node.target is not torch.ops.aten.mul.Tensor or not isinstance(vals[0], torch.Tensor) or not vals[0].is_floating_point():
                return None
            swapped.add(node)
            new = vals[0].mul(3).to(torch.bfloat16)  # not the value any side computes
            if pin:
                ls.pin(node, {i: (lambda v=v: new.to(v.dtype)) for i, v in enumerate(vals)})
            return tuple(new.to(v.dtype) for v in vals)

        p = plan(prog, "inductor-gpu")
        sides = [plan_numerics(p), OracleNumerics(), plan_numerics(plan(p.program, "eager"))]
        ls = Lockstep(p.program, sides, on_node=substitute, recompute=recompute, recompute_min_numel=0)
        with torch.no_grad():
            outs = ls.run_inputs(inputs)
        assert not recompute or ls.recomputed > 0
        return outs

    kept = run((), pin=False)
    assert swapped
    for side_kept, side_redone in zip(kept, run((0, 1, 2), pin=True)):
        assert all(same_bits(a, b) for a, b in zip(side_kept, side_redone))
    unpinned = run((0, 1, 2), pin=False)  # the test's own check: a recomputation does read a substituted value
    assert not all(same_bits(a, b) for sk, su in zip(kept, unpinned) for a, b in zip(sk, su))


def test_fma_sites_recompute_their_multiplys_operands() -> None:
    """Under inductor-gpu an FMA node reads its multiply's operands too; those must be recomputable."""
    w = get_workload("softmax-backward")
    xs = tuple(t.detach().requires_grad_() for t in w.make_inputs())
    prog = capture(w.build(), *xs, backward=True)
    p = plan(prog, "inductor-gpu")
    assert any(s.contracted for s in p.fma_sites)
    inputs = tuple(t.detach() for t in prog.example_inputs)
    kept, _, _ = _run(prog, inputs, recompute=())
    redone, _, _ = _run(prog, inputs, recompute=(0, 1, 2))
    for side_kept, side_redone in zip(kept, redone):
        assert all(same_bits(a, b) for a, b in zip(side_kept, side_redone))


def _dropout_mlp(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Six dropout layers, forward then backward, with the draws left in the graph: capture pins a
    draw to eager's sample (tests/capture/test_graph_breaks.py), but fused attention or dropout
    kernels (CUDA) still draw inside a graph."""
    w1, w2 = w1.detach().requires_grad_(), w2.detach().requires_grad_()
    with torch.enable_grad():
        h = x
        for _ in range(6):
            keep = torch.ops.aten.bernoulli.p(torch.empty_like(h), 0.7)  # h @ w1's shape
            h = torch.tanh((h @ w1) * keep / 0.7) @ w2
        loss = h.sum()
        return (loss, *torch.autograd.grad(loss, (w1, w2)))


def _program_with_draws(*inputs: torch.Tensor) -> Program:
    """`_dropout_mlp` traced by make_fx itself (not `capture`), so its bernoulli nodes stay random."""
    gm = make_fx(_dropout_mlp, tracing_mode="fake")(*inputs)
    for i, n in enumerate(gm.graph.nodes):
        n.meta[NODE_ID] = f"n{i}"
    return Program(gm, inputs, ("x", "w1", "w2"), ("loss", "grad_w1", "grad_w2"), 3, name="dropout_mlp")


def test_random_draws_and_what_depends_on_them_are_never_dropped() -> None:
    g = torch.Generator().manual_seed(3)
    x = torch.randn(16, 32, generator=g).bfloat16()
    w1 = (torch.randn(32, 32, generator=g) / 6).bfloat16()
    w2 = (torch.randn(32, 32, generator=g) / 6).bfloat16()
    prog = _program_with_draws(x, w1, w2)
    nodes = list(prog.graph.nodes)
    interp = torch.fx.Interpreter(prog.graph_module)
    rp = plan_recompute(nodes, interp.user_to_last_uses, {}, is_random, budget=1.0, window=4)
    small = plan_recompute(nodes, interp.user_to_last_uses, {}, is_random, budget=1.0, window=4, min_numel=32 * 32 + 1)
    assert not small.dropped  # no value here has that many elements
    randoms = {n for n in nodes if is_random(n)}
    assert len(randoms) == 6 and rp.dropped  # something is dropped, and there are draws to protect

    def descends_from_random(n: torch.fx.Node, seen: set) -> bool:
        if n in randoms:
            return True
        seen.add(n)
        return any(descends_from_random(p, seen) for p in n.all_input_nodes if p not in seen)

    assert not any(descends_from_random(n, set()) for n in rp.dropped)
    torch.manual_seed(0)
    (pol_a, ora_a), _, _ = _run_two(prog, recompute=())
    torch.manual_seed(0)
    (pol_b, ora_b), _, ls = _run_two(prog, recompute=(0, 1))
    assert ls.recomputed > 0
    assert all(same_bits(a, b) for a, b in zip(pol_a + ora_a, pol_b + ora_b))
    torch.manual_seed(1)  # another draw gives other outputs: the comparison above is not vacuous
    (pol_c, _), _, _ = _run_two(prog, recompute=())
    assert not same_bits(pol_a[0], pol_c[0])


def _run_two(prog: Program, recompute: tuple[int, ...]) -> tuple[tuple, int, Lockstep]:
    p = plan(prog, "eager")
    ls = Lockstep(p.program, [plan_numerics(p), OracleNumerics()], recompute=recompute, recompute_budget=1.0,
                  recompute_min_numel=0)
    with torch.no_grad():
        return ls.run_inputs(tuple(t.detach() for t in prog.example_inputs)), 0, ls


def test_a_bad_recompute_side_is_refused() -> None:
    prog, _ = _stack(1)
    try:
        Lockstep(prog, [OracleNumerics()], recompute=(1,))
    except ValueError as e:
        assert "only 1 sides" in str(e)
    else:
        raise AssertionError("recompute=(1,) with one side must be refused")


def test_dropped_marker_never_leaks_into_outputs() -> None:
    prog, inputs = _stack(1)
    outs, _, _ = _run(prog, inputs, recompute=(0, 1, 2))
    assert all(o is not DROPPED for side in outs for o in side)
