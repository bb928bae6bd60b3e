"""A node override ``compute=OPMATH`` takes one matmul out of an autocast policy's input downcast.

Oracle: torch's own casts and matmul — the autocast matmul is ``mm(x.to(bf16), w.to(bf16))`` in fp32
rounded to the output dtype; the overridden one is ``mm(x, w)`` on the stored fp16 operands.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from roundoff.capture import capture
from roundoff.execute import run_plan
from roundoff.plan import plan
from roundoff.policy import ComputePrecision, OpOverride, get_policy

OPMATH = OpOverride(compute=ComputePrecision.OPMATH)


def _two_matmuls(
    x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    return x @ w1, x @ w2


def _inputs() -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(16, 32, generator=g).half()
    return x, torch.randn(32, 8, generator=g).half(), torch.randn(32, 8, generator=g).half()


def _mm_ids(p) -> list[str]:
    return [nid for nid, d in p.decisions.items() if d.op.startswith("aten.mm")]


def _mm(x: torch.Tensor, w: torch.Tensor, via: torch.dtype | None) -> torch.Tensor:
    if via is not None:
        x, w = x.to(via), w.to(via)
    return (x.float() @ w.float()).half()


def test_node_override_opmath_keeps_one_matmul_as_stored() -> None:
    xs = _inputs()
    program = capture(_two_matmuls, *xs)
    base = plan(program, "thunder-autocast")
    first, second = _mm_ids(base)
    assert [base.decisions[i].input_format for i in (first, second)] == ["bf16", "bf16"]
    policy = replace(get_policy("thunder-autocast"), node_overrides={first: OPMATH})
    p = plan(program, policy)
    assert p.decisions[first].input_format is None, (
        "repro: thunder-autocast + {first: compute=opmath}"
    )
    assert p.decisions[second].input_format == "bf16"
    assert p.decisions[first].compute_dtype == torch.float32  # accumulation per matmul_accumulate
    assert not any(first in note for note in p.notes), (
        p.notes
    )  # the trace no longer says it narrows
    got_first, got_second = run_plan(p, xs)
    x, w1, w2 = xs
    assert torch.equal(got_first, _mm(x, w1, None)), (
        "repro: overridden mm vs (x.float() @ w1.float()).half()"
    )
    assert torch.equal(got_second, _mm(x, w2, torch.bfloat16)), (
        "repro: autocast mm vs bf16-rounded operands"
    )
    assert not torch.equal(_mm(x, w1, None), _mm(x, w1, torch.bfloat16)), (
        "inputs do not exercise the downcast"
    )


def test_op_override_and_storage_override_on_matmul() -> None:
    xs = _inputs()
    program = capture(_two_matmuls, *xs)
    everywhere = replace(get_policy("thunder-autocast"), op_overrides={"aten.mm": OPMATH})
    p = plan(program, everywhere)
    assert all(p.decisions[i].input_format is None for i in _mm_ids(p)), (
        "repro: op_overrides aten.mm opmath"
    )
    storage = OpOverride(compute=ComputePrecision.STORAGE)
    p = plan(program, replace(get_policy("thunder-autocast"), op_overrides={"aten.mm": storage}))
    assert all(p.decisions[i].input_format == "bf16" for i in _mm_ids(p)), (
        "STORAGE keeps the autocast format"
    )
    p = plan(program, replace(get_policy("eager"), op_overrides={"aten.mm": storage}))
    assert all(p.decisions[i].input_format == "fp16" for i in _mm_ids(p)), (
        "STORAGE without autocast: storage format"
    )


def test_a_view_of_a_matmul_kept_in_fp32_keeps_its_fp32_value() -> None:
    """Trial 102: a BART cross-attention's fp16 ``bmm`` kept in fp32 (``round_result=False``, blame's candidate)
    reached 8.1e4, beyond fp16; the ``view`` after it computed in its graph dtype, converted the kept value to
    fp16 (inf), and the scaling after it, within fp16's range in fp64, stayed inf: blame found no fix. Oracle:
    torch's fp32 bmm and multiply of the fp16 operands, rounded to fp16 once at the output."""
    g = torch.Generator().manual_seed(0)
    q, k = (torch.randn(2, 8, 16, generator=g) * 80).half(), (torch.randn(2, 16, 8, generator=g) * 80).half()

    def scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return torch.bmm(q, k).view(2, 1, 8, 8) * 0.25

    exact = torch.bmm(q.double(), k.double())
    assert exact.abs().max() > 65504 > (exact * 0.25).abs().max()  # the bmm overflows fp16, the scores do not
    program = capture(scores, q, k)
    (bmm,) = [nid for nid, d in plan(program, "inductor-cpu").decisions.items() if d.op.startswith("aten.bmm")]
    policy = get_policy("inductor-cpu")
    kept = replace(policy, name="keep-bmm", node_overrides={bmm: OpOverride(round_result=False)})
    (got,) = run_plan(plan(program, kept), (q, k))
    want = (torch.bmm(q.float(), k.float()).view(2, 1, 8, 8) * 0.25).half()
    assert bool(got.isfinite().all()) and torch.equal(got, want)
