"""blame's evaluator reuses values (base run, earlier change sets) and stops at the first failing
output: its verdicts must be those of a full run judged at the end.

Oracle: an `Evaluator(..., incremental=False)`, which runs every change set from the inputs through
every node and judges all outputs afterwards (the path without any reuse or early exit), and
brute force for 1-minimality on the nanoGPT case.
"""

from __future__ import annotations

import dataclasses
import functools

import pytest
import torch

from roundoff import corpus
from roundoff.blame import BlameStatus, ChangeKind, Evaluator, blame, candidate_changes, ddmin
from roundoff.blame.reuse import ValueCache
from roundoff.capture import capture
from roundoff.corpus import handwritten
from roundoff.zoo import get_workload
from tests.analyze.planted import PLANTED


def _zoo_softmax():
    w = get_workload("softmax-backward")
    return capture(w.build(), *w.make_inputs(), backward=True), "inductor-gpu", "eager"


def _planted(name: str):
    p = next(p for p in PLANTED if p.name == name)
    return capture(p.fn, *p.inputs(), backward=p.backward), p.policy, p.against


CASES = {
    "zoo-softmax-backward": _zoo_softmax,
    "user-softmax-backward": functools.partial(_planted, "user-softmax-backward"),
    "mlp-with-moment-norm": functools.partial(_planted, "mlp-with-moment-norm"),  # against the oracle
}


def _asked(ev: Evaluator, changes) -> list[tuple]:
    """The change sets ddmin asks for, in order, plus random ones."""
    asked: list[tuple] = []
    ddmin(changes, lambda s: asked.append(s) or ev.fixes(s))
    g = torch.Generator().manual_seed(0)
    asked += [tuple(c for c in changes if torch.rand((), generator=g) < p) for p in (0.1, 0.3, 0.6)]
    return asked


@pytest.mark.parametrize("name", list(CASES))
def test_reused_runs_give_the_verdicts_of_full_runs(name: str) -> None:
    program, policy, against = CASES[name]()
    inc = Evaluator(program, policy, program.example_inputs, reference=against)
    base_only = Evaluator(program, policy, program.example_inputs, reference=against, reuse_budget=0)
    full = Evaluator(program, policy, program.example_inputs, reference=against, incremental=False)
    changes = candidate_changes(inc.base_plan, against)
    asked = _asked(full, changes)
    assert len(asked) > 4, [len(s) for s in asked]
    for s in asked:
        want = full.fixes(s)
        assert inc.fixes(s) == want == base_only.fixes(s), f"{name}: {[c.label for c in s]}"
    assert any(full.fixes(s) for s in asked) and not all(full.fixes(s) for s in asked), name
    # each set asked once of each: reuse across sets saves on top of the base run's values
    assert inc.cost().nodes_recomputed < base_only.cost().nodes_recomputed, (inc.cost(), base_only.cost())
    assert base_only.cost().nodes_recomputed < base_only.cost().nodes_full, base_only.cost()
    # after all that caching, the values are still the full run's, bit for bit
    for s in asked[-3:]:
        for a, b in zip(inc.outputs(s), full.outputs(s)):
            assert torch.equal(a.view(-1).view(torch.uint8), b.view(-1).view(torch.uint8)), name


def test_value_cache_keeps_the_base_and_drops_the_oldest_beyond_its_budget() -> None:
    cache = ValueCache(budget_bytes=2 * 4 * 10)  # two fp32 tensors of 10 elements
    x = torch.zeros(10)
    cache.store(0, (x,), pinned=True)
    for k in (1, 2, 3):
        cache.store(k, (torch.full((10,), float(k)),))
    assert 0 in cache and 1 not in cache and 2 in cache and 3 in cache
    cache.store(4, (torch.zeros(100),))  # larger than the whole budget: not kept, nothing dropped
    assert 4 not in cache and 2 in cache and 3 in cache


@pytest.mark.slow
def test_nanogpt_hand_written_softmax_fix_is_one_minimal() -> None:
    """The corpus nanoGPT with 2 heads (bench/blame.py's case): NaN gradients under inductor-gpu,
    finite in eager; blame's fix removes them and is 1-minimal by full runs."""
    entry = corpus.get("nanogpt-manual")
    build = functools.partial(handwritten._build, handwritten.GPT, flash=False, n_head=2)
    target = dataclasses.replace(entry, build_model=build).build("module")
    program = capture(target.fn, *target.inputs, backward=True)
    r = blame(program, "inductor-gpu", against="eager", repro=False)
    assert r.status is BlameStatus.FIXED and r.changes, r.to_dict()
    assert all(c.kind is ChangeKind.ROUND for c in r.changes), [c.label for c in r.changes]
    full = Evaluator(program, "inductor-gpu", program.example_inputs, incremental=False)
    assert any(bool(torch.isnan(o).any()) for o in full.outputs(()) if o.is_floating_point())
    assert not any(bool(torch.isnan(o).any()) for o in full.eager if o.is_floating_point())
    assert full.fixes(r.changes)
    for i in range(len(r.changes)):
        assert not full.fixes(r.changes[:i] + r.changes[i + 1:]), r.changes[i].label
