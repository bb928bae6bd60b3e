"""ddmin versus Polygraphy's `debug precision` answer (a prefix of layers) on a zoo transformer block.

Case: llama-block built in fp16 under ``thunder-autocast`` (matmul operands downcast to bf16),
against real eager fp16. Oracles: the real eager run of the block and its fp64 run, judged with
PyTorch's own rule ``torch._dynamo.utils.same``; each change set is re-checked by a full emulated
run outside the blame evaluator (no cached node values).
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch._dynamo.utils import same

from roundoff.blame import BlameStatus, ChangeKind, apply_changes, blame, candidate_changes
from roundoff.capture import capture
from roundoff.execute import run_plan
from roundoff.plan import plan
from roundoff.policy import get_policy
from roundoff.zoo import get_workload

POLICY = "thunder-autocast"


@pytest.fixture(scope="module")
def block():
    w = get_workload("llama-block")
    fn = w.build(dtype=torch.float16)
    xs = tuple(x.detach() for x in w.make_inputs(dtype=torch.float16))
    return fn, xs, capture(fn, *xs, name="llama-block-fp16")


def _passes(block, changes) -> bool:
    """PyTorch's verdict on a full emulated run of the policy with `changes`, against real eager."""
    fn, xs, program = block
    (emu,) = run_plan(plan(program, apply_changes(get_policy(POLICY), changes)), xs)
    with torch.no_grad():
        real, fp64 = fn(*xs), copy.deepcopy(fn).double()(*(x.double() for x in xs))
    return bool(same(real, emu, fp64_ref=fp64, tol=1e-4))


def test_autocast_downcast_offers_one_change_per_matmul(block) -> None:
    _, _, program = block
    base = plan(program, POLICY)
    kinds = {
        c.node_id for c in candidate_changes(base, "eager") if c.kind is ChangeKind.NO_DOWNCAST
    }
    mms = {
        nid
        for nid, d in base.decisions.items()
        if d.op_class.value == "matmul" and d.input_format == "bf16"
    }
    assert mms and kinds == mms, (
        f"repro: candidate_changes(plan(llama-block fp16, {POLICY!r})): {kinds} vs {mms}"
    )


def test_ddmin_finds_strictly_smaller_set_than_best_prefix(block) -> None:
    _, xs, program = block
    assert not _passes(block, ()), f"llama-block fp16 under {POLICY} does not diverge from eager"
    dd = blame(program, POLICY, xs, against="eager", search="ddmin", repro=False, whole_lines=False)
    pre = blame(program, POLICY, xs, against="eager", search="prefix-linear", repro=False, whole_lines=False)
    repro = f"blame(capture(llama-block fp16), {POLICY!r}, against='eager', search=...)"
    assert dd.status is BlameStatus.FIXED and pre.status is BlameStatus.FIXED, repro
    assert dd.candidates == pre.candidates  # same change space, topological order
    assert _passes(block, dd.changes), f"ddmin's set does not fix on a full re-run: {repro}"
    assert _passes(block, pre.changes), f"the best prefix does not fix on a full re-run: {repro}"
    assert len(dd.changes) < len(pre.changes), (
        f"ddmin {len(dd.changes)} ({dd.evaluations} runs) vs prefix {len(pre.changes)} "
        f"({pre.evaluations} runs): {repro}"
    )
    assert all(c.kind is ChangeKind.NO_DOWNCAST for c in dd.changes), [c.label for c in dd.changes]
    assert all("as stored" in e and "bf16" in e for e in dd.explanations), dd.explanations[0]


def test_merging_a_change_keeps_the_nodes_other_override_fields() -> None:
    from roundoff.blame.changes import Change, merge_overrides
    from roundoff.policy import ComputePrecision, OpOverride, ScalarMixing

    base = {"n5": OpOverride(scalars=ScalarMixing.ROUND_TO_STORAGE, contract_fma=True)}
    merged = merge_overrides(base, [Change(0, "n5", ChangeKind.NO_DOWNCAST, "aten.mm.default")])
    assert merged["n5"] == OpOverride(
        compute=ComputePrecision.OPMATH,
        contract_fma=True,
        scalars=ScalarMixing.ROUND_TO_STORAGE,
    ), merged
