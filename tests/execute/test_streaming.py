"""Streaming frees values after their last use; keep mode and partial re-runs give the same numbers."""

from __future__ import annotations

import torch

from roundoff.capture import Program, capture, node_id
from roundoff.execute import Lockstep, OracleNumerics, plan_numerics, run_eager, run_keep, run_plan
from roundoff.execute.interpreter import is_random
from roundoff.plan import plan
from roundoff.plan.model import Plan
from roundoff.zoo import get_workload
from tests.execute.graphs import same_bits


def _chain(x: torch.Tensor) -> torch.Tensor:
    for i in range(150):
        x = torch.tanh(x * 1.5) + 0.25 if i % 2 else torch.sigmoid(x) * 2.0
    return x


def _live_peak(prog: Program, p: Plan, keep: bool) -> int:
    peak = 0

    def on_node(node: torch.fx.Node, vals: tuple, ls: Lockstep) -> None:
        nonlocal peak
        peak = max(peak, len(ls.env))

    Lockstep(prog, [plan_numerics(p), OracleNumerics()], on_node=on_node, keep=keep).run_inputs(prog.example_inputs)
    return peak


def test_streaming_keeps_a_constant_number_of_values() -> None:
    x = torch.randn(256).bfloat16()
    prog = capture(_chain, x)
    p = plan(prog, "inductor-cpu")
    n = sum(1 for _ in prog.graph.nodes)
    assert n > 300
    assert _live_peak(prog, p, keep=False) <= 4, "streaming: only the values still needed stay alive"
    assert _live_peak(prog, p, keep=True) == n - 1


def test_fma_operands_outlive_the_multiply_when_streaming() -> None:
    w = get_workload("fma-cancel-vector")
    xs = tuple(t.detach() for t in w.make_inputs())
    p = plan(capture(w.build(), *xs), "inductor-gpu")
    assert any(s.contracted for s in p.fma_sites)
    (streamed,) = run_plan(p, xs)
    (kept,), _ = run_keep(p, xs)
    assert same_bits(streamed, kept) and bool(streamed.isinf().any())


def test_partial_rerun_from_initial_env_equals_full_run() -> None:
    w = get_workload("bf16-chain")
    xs = w.make_inputs()
    p = plan(capture(w.build(), *xs), "eager")
    full, env = run_keep(p, xs)
    nodes = [n for n in p.program.graph.nodes if n.op == "call_function"]
    seed = {n: v for n, v in env.items() if n.op == "placeholder" or n in nodes[: len(nodes) // 2]}
    partial, env2 = run_keep(p, xs, initial_env=seed)
    assert same_bits(partial[0], full[0])
    assert all(env2[n] is env[n] for n in seed)  # reused, not recomputed


def test_inductor_transcendentals_survive_many_shapes() -> None:
    """One compiled kernel per (op, shape): more than Dynamo's recompile limit (8) must still work."""
    from roundoff.execute import TranscendentalImpl

    impl = TranscendentalImpl("inductor")
    for n in range(1, 10):  # 9 shapes: one past the limit
        x = torch.linspace(-3, 3, n)
        # Inductor's and eager's fp32 sigmoid agree bit for bit (measured on 1M inputs).
        assert torch.equal(impl(torch.ops.aten.sigmoid.default, (x,), {}), torch.sigmoid(x)), f"repro: n={n}"


def _dropout(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.dropout(x @ w, 0.5, training=True).sum(-1)


def _is_draw(node: torch.fx.Node) -> bool:
    """A dropout mask: eager's draw pinned as a constant by capture, or a random node where one remains."""
    return is_random(node) or (node.op == "get_attr" and str(node.target).startswith("eager_random"))


def test_random_nodes_are_drawn_once_for_every_side() -> None:
    """Dropout's bernoulli sample is shared by the policy, reference and oracle runs (each drawing its
    own would compare two masks), and its uninitialised input is not compared."""
    from roundoff.analyze import check

    g = torch.Generator().manual_seed(5)
    x = torch.randn(8, 64, generator=g).bfloat16()
    w = torch.randn(64, 32, generator=g).bfloat16().requires_grad_()
    torch.manual_seed(11)
    prog = capture(_dropout, x, w, backward=True)
    p = plan(prog, "eager")
    seen: dict[str, list] = {"policy": [], "oracle": []}

    def on_node(node: torch.fx.Node, vals: tuple, ls: Lockstep) -> None:
        if _is_draw(node):
            seen["policy"].append(vals[0].double())
            seen["oracle"].append(vals[1])

    Lockstep(p.program, [plan_numerics(p), OracleNumerics()], on_node=on_node).run_inputs(p.program.example_inputs)
    assert len(seen["oracle"]) == 1, "one dropout mask"
    (mask,), (oracle_mask,) = seen["policy"], seen["oracle"]
    assert torch.equal(mask, oracle_mask) and 0 < float(oracle_mask.mean()) < 1
    assert set(oracle_mask.unique().tolist()) == {0.0, 1.0}  # a mask, before dropout's 1/(1-p) scale
    torch.manual_seed(11)  # the mask the sides saw is the one eager draws under the capture's seed
    real = _dropout(x, w).detach()
    assert torch.equal(((x @ w).detach() * (mask.bfloat16() / 0.5)).sum(-1), real)
    assert torch.equal(run_eager(prog, (x, w))[0], real)
    draw = next(n for n in prog.graph.nodes if _is_draw(n))
    # the mask and its first use (clone, then mask / (1 - p)): 0 or 2, so two masks would differ by 2
    near = {draw, *draw.users, *(u for d in draw.users for u in d.users)}
    first_use = {node_id(n) for n in near if n.op == "call_function"}
    for against in ("oracle", "eager"):
        res = check(prog, (x, w), "eager", against=against, nodes="all")
        rows = [r for r in res.nodes if r.node_id in first_use]
        assert rows and all(r.vs_oracle.max_abs == 0.0 for r in rows), f"against {against}"
        assert not any(r.op in ("empty_like", "empty") for r in res.nodes)  # bernoulli_'s input
    assert all(o.passes for o in check(prog, (x, w), "eager", against="eager").outputs)

