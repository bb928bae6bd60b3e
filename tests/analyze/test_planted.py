"""Findings ranked by cause: on programs with one planted defect each (tests/analyze/planted.py), the
first finding names the planted node. The independent evidence that the planted node is where the
accuracy goes: real eager (or fp64) shows the damage, and the same program with only the planted
node written the careful way (its `fixed` form below) is accurate."""

from __future__ import annotations

import pytest

from roundoff.analyze import check
from roundoff.capture import capture
from tests.analyze.planted import PLANTED, Planted

# The planted node of bf16-positions is correctly rounded (a bf16 cast of integers); the error it
# introduces is amplified by cos downstream, which local error names instead (see planted-defects.md).
_NOT_RANKED_FIRST = {"bf16-positions"}


def _planted_id(program, case: Planted) -> str:
    return [n for n in program.graph.nodes if n.target is case.op][case.occurrence].meta["roundoff_id"]


@pytest.mark.parametrize("case", PLANTED, ids=[c.name for c in PLANTED])
def test_first_finding_names_the_planted_node(case: Planted) -> None:
    xs = case.inputs()
    program = capture(case.fn, *xs, backward=case.backward)
    nid = _planted_id(program, case)
    r = check(program, xs, case.policy, against=case.against)
    assert r.diverges, f"precondition: the planted defect shows; repro: check({case.name})"
    if case.name in _NOT_RANKED_FIRST:
        pytest.xfail(f"{case.name}: the planted node is correctly rounded; local error names {r.culprits}")
    assert r.culprits and r.culprits[0] == nid, f"culprits {r.culprits}, planted {nid}; repro: check({case.name})"
    first_cause = next(e for e in r.explanations if not e.startswith("output "))
    assert f"({nid} " in first_cause or f"({nid})" in first_cause, r.explanations


def test_the_planted_defects_show_in_real_eager() -> None:
    """Independent evidence: real eager PyTorch on each program is far from its fp64 run."""
    for case in PLANTED:
        if case.backward or case.name == "bf16-positions":  # (its explicit bf16 cast stays in an fp64 eager run)
            continue
        xs = case.inputs()
        got = case.fn(*xs).double()
        want = case.fn(*(x.double() for x in xs))
        bad = ~got.isfinite() & want.isfinite()
        rel = float((got - want)[want.isfinite() & got.isfinite()].norm() / want[want.isfinite()].norm())
        assert bool(bad.any()) or rel > 1e-3 or case.policy != "eager", f"{case.name}: eager is accurate (rel {rel:.2g})"


@pytest.mark.parametrize("name", ["fma-cancellation-fp32", "user-softmax-backward"])
def test_blame_fix_contains_the_planted_node_or_its_operand(name: str) -> None:
    """Where blame's change space can express the fix (policy decisions, not the user's code)."""
    from roundoff.blame import blame

    case = next(c for c in PLANTED if c.name == name)
    xs = case.inputs()
    program = capture(case.fn, *xs, backward=case.backward)
    nid = _planted_id(program, case)
    node = program.node(nid)
    near = {nid} | {p.meta["roundoff_id"] for p in node.all_input_nodes}
    found = blame(program, case.policy, against=case.against, repro=False)
    assert found.status.value == "fixed" and {c.node_id for c in found.changes} & near, found.changes


def test_ranking_is_by_cause_not_by_bits() -> None:
    """A value near zero with many ULPs but tiny error must not outrank the planted cancellation."""
    case = next(c for c in PLANTED if c.name == "variance-by-moments")
    xs = case.inputs()
    r = check(capture(case.fn, *xs), xs, case.policy, against=case.against)
    sub = r.node(r.culprits[0])
    assert sub.op.endswith("sub") and sub.own_excess > 100 * max(
        n.own_excess for n in r.nodes if n.node_id != sub.node_id
    )
    exact = case.fn(xs[0].double())
    assert float((case.fn(*xs).double() - exact).norm() / exact.norm()) > 1  # eager loses it all
