"""`check`'s shortcuts give the figures the long way gives: local error of a node fed only exact
values (no recompute), the cached plans of a second check, and the tables cached per plan."""

from __future__ import annotations

import torch

from roundoff.analyze import check, measure
from roundoff.analyze.check import _PLANS
from roundoff.capture import capture


def _fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.exp(x * y + x)


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(512, generator=g).to(torch.bfloat16) for _ in range(2))  # type: ignore[return-value]


def test_local_error_of_a_node_reading_inputs_is_eager_bf16_mul_vs_fp64() -> None:
    x, y = _inputs()
    program = capture(_fn, x, y)
    res = check(program, (x, y), "eager", against="oracle", nodes="all")
    mul = next(r for r in res.nodes if r.op == "mul")
    # Independent oracle: torch's own bf16 multiply (fp32 opmath, one rounding) against the fp64 product.
    want = measure((x * y).float(), x.double() * y.double(), torch.bfloat16)
    assert mul.local == want and mul.vs_oracle == want, "repro: check(capture(_fn, x, y), (x, y), 'eager', 'oracle')"
    assert mul.inherited_bits == 0.0


def test_second_check_reuses_the_plan_and_gives_the_same_result() -> None:
    x, y = _inputs()
    program = capture(_fn, x, y)
    first = check(program, (x, y), "inductor-cpu", against="eager")
    (planned,) = _PLANS[program.graph_module].values()
    second = check(program, (x, y), "inductor-cpu", against="eager")
    assert next(iter(_PLANS[program.graph_module].values())) is planned
    assert first.to_dict() == second.to_dict(), "repro: check(program, ...) twice with 'inductor-cpu' vs 'eager'"


def test_second_check_against_a_policy_reuses_the_pair_of_plans_where_the_policy_copies_nodes(monkeypatch) -> None:
    """inductor-gpu computes two nodes of softmax-backward again as per-kernel copies, so the
    reference is planned on a graph without them, made for the pair: made once per program and
    pair of policies, not per check (it was made per check: the corpus Llama's screen took twice
    as long), and the second result is the first's, field for field."""
    import importlib

    from roundoff.analyze.check import _plan
    from roundoff.zoo import get_workload

    work = get_workload("softmax-backward")
    xs = tuple(t.detach() for t in work.make_inputs())
    program = capture(work.build(), *xs)
    assert _plan(program, "inductor-gpu").copies  # the case: a plan with per-kernel copies
    check_module = importlib.import_module("roundoff.analyze.check")  # (the package exports the function)
    made = []
    real = check_module.plan_pair
    monkeypatch.setattr(check_module, "plan_pair", lambda *args: made.append(args) or real(*args))
    first = check(program, xs, "inductor-gpu", against="eager")
    second = check(program, xs, "inductor-gpu", against="eager")
    assert len(made) == 1
    assert first.to_dict() == second.to_dict()


def test_node_verdicts_read_off_the_figures_equal_torch_same(monkeypatch) -> None:
    """Where `implied_pass` decides a node's verdict without calling torch's ``same``, ``same`` agrees:
    every node of the Llama block fwd+bwd under three policies (against eager and the oracle), judged both ways."""
    from roundoff.analyze import observe
    from roundoff.zoo import get_workload

    work = get_workload("llama-block")
    xs = tuple(t.detach() for t in work.make_inputs())
    program = capture(work.build(), *xs, backward=True)
    calls = {"implied": 0}
    real = observe.implied_pass

    def counting(*args: object) -> bool:
        ok = real(*args)
        calls["implied"] += ok
        return ok

    for policy, against in (("inductor-gpu", "eager"), ("xla-2.10", "eager"), ("thunder-autocast", "oracle")):
        monkeypatch.setattr(observe, "implied_pass", counting)
        fast = check(program, xs, policy, against=against, nodes="all")
        monkeypatch.setattr(observe, "implied_pass", lambda *a: False)
        slow = check(program, xs, policy, against=against, nodes="all")
        got = {r.node_id: r.verdict for r in fast.nodes}
        want = {r.node_id: r.verdict for r in slow.nodes}
        assert got == want, (
            f"{policy} vs {against}: {[k for k in got if got[k] != want[k]]} differ; repro: check(llama-block fwd+bwd)"
        )
    assert calls["implied"] > 20, calls  # the shortcut decided real nodes, so the comparison means something


def test_implied_pass_never_contradicts_same() -> None:
    """On random bf16 pairs around an fp64 oracle with every RMSE ratio from 0.5 to 4."""
    from roundoff.analyze.metrics import measure_each
    from roundoff.analyze.observe import implied_pass
    from roundoff.analyze.verdict import same_rule

    g = torch.Generator().manual_seed(3)
    decided = 0
    for i in range(60):
        o = torch.randn(4096, generator=g, dtype=torch.float64)
        r = (o + 2e-3 * torch.randn(4096, generator=g, dtype=torch.float64)).to(torch.bfloat16)
        s = (o + (0.5 + i / 15) * 2e-3 * torch.randn(4096, generator=g, dtype=torch.float64)).to(torch.bfloat16)
        m_s, m_r = measure_each([s, r], o, torch.bfloat16)
        if implied_pass(m_s, m_r):
            decided += 1
            assert same_rule(r, s, o, 1e-4), f"implied_pass but same() fails at i={i}; repro: seed 3"
    assert 10 < decided < 60, decided  # both outcomes occur


def _mlp(x: torch.Tensor, w: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return (torch.softmax(x @ w, -1) * v + x).float().square().mean()


def test_per_plan_tables_are_caches_of_what_a_fresh_check_computes() -> None:
    """The tables made once per plan and graph (the Lockstep schedule, PlanNumerics' node decisions,
    lint's range-independent findings) are filled by other plans of the same graph, then emptied: every
    check gives what it gives with empty tables (FMA sites and recomputed activations included)."""
    from roundoff.analyze.hazards import _TABLES
    from roundoff.execute.interpreter import _SCHEDULES
    from roundoff.execute.node_numerics import _STATICS

    g = torch.Generator().manual_seed(1)
    x, w, v = (torch.randn(s, generator=g).to(torch.bfloat16).requires_grad_() for s in ((128, 128),) * 3)
    program = capture(_mlp, x, w, v, backward=True)
    runs = [("inductor-gpu", "eager", "all"), ("eager", "oracle", "all"), ("inductor-gpu", "oracle", "screen")]
    cached = [check(program, program.example_inputs, p, against=a, nodes=n).to_dict() for p, a, n in runs]
    for p, a, n in runs:  # now a hit for every plan
        cached.append(check(program, program.example_inputs, p, against=a, nodes=n).to_dict())
    assert _SCHEDULES and _STATICS and _TABLES
    fresh = []
    for p, a, n in runs:
        for cache in (_SCHEDULES, _STATICS, _TABLES):
            cache.clear()
        fresh.append(check(program, program.example_inputs, p, against=a, nodes=n).to_dict())
    assert any(r["nodes"] and any(nd["fma"] for nd in r["nodes"]) for r in fresh)  # FMA sites were emulated
    assert cached == fresh + fresh
