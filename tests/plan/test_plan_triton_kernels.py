"""inductor-gpu's reduction kernels (`roundoff.plan.triton_kernels`) against real Inductor on Triton.

Oracles: the H200 run of ``bench/reduction_loop_reads.py`` recorded in
``bench/results/h200-session25/reduction-loop-reads-cuda.json`` (real torch.compile on CUDA, torch 2.11,
Triton 3.6: whether each reduction read the stored fp16 ``exp`` rounded, inf, or as computed, finite), replayed
here by the CPU emulation of the ``inductor-gpu`` plan; and, where CUDA is present, real torch.compile on
Triton bit for bit, on integer-valued fp16 data whose fp32 sums are exact in any order (a bit that differs is
a rounding placed differently, not summation order)."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re
import sys

import pytest
import torch

from roundoff.capture import capture
from roundoff.capture.program import node_id
from roundoff.execute import run_plan
from roundoff.numerics import bits_differ
from roundoff.plan import plan, realize
from roundoff.policy import get_policy
from roundoff.policy.model import FusionModel

ROOT = pathlib.Path(__file__).resolve().parents[2]
RECORDED = ROOT / "bench/results/h200-session25/reduction-loop-reads-cuda.json"
H = torch.float16
#: inductor-gpu as planned before Triton's reduction kernels were modelled (every reduction ends its kernel)
WITHOUT = dataclasses.replace(get_policy("inductor-gpu"), fusion=FusionModel.POINTWISE)


def _patterns():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from reduction_loop_reads import _read, patterns
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return patterns, _read


def test_reduction_reads_are_the_ones_real_triton_made_on_the_h200() -> None:
    """24 of the 25 patterns read the stored fp16 value as computed in the reduction's kernel (finite); the
    one read through a slice loads it (inf). The plan without Triton's reduction kernels agrees on fewer."""
    patterns, read = _patterns()
    recorded = {r["pattern"]: r["real"] for r in json.loads(RECORDED.read_text())["rows"]}
    x = (torch.rand(16, 32, generator=torch.Generator().manual_seed(1)) + 11.5).to(H)
    agree = {"inductor-gpu": 0, "without": 0}
    wrong = []
    for name, (_, fn) in patterns("cpu").items():
        program = capture(fn, x)
        got = read(run_plan(plan(program, "inductor-gpu"), (x,))[1])
        agree["inductor-gpu"] += got == recorded[name]
        agree["without"] += read(run_plan(plan(program, WITHOUT), (x,))[1]) == recorded[name]
        if got != recorded[name]:
            wrong.append(f"{name}: H200 {recorded[name]}, plan {got}")
    assert len(recorded) == 25 and agree["inductor-gpu"] == 25, wrong
    assert agree["without"] < 25  # the counterfactual is told apart (5 agreed when recorded; 1 since a value a
    # matmul reads through a view is stored, which its reductions then load rounded)


def _sum_epilogue(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    s = x.sum(-1)
    return s, s * 1.5


def _full_epilogue(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    s = x.sum(-1, keepdim=True)
    return s, x - s


def _prologue(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    y = x * 3
    return y, y.sum(-1, dtype=torch.float32)


def _two_reductions(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    y = x * 3
    return y, y.sum(-1, dtype=torch.float32) + y.float().amax(-1)


def _column_epilogue(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    s = x.sum(0)
    return s, x - s


CASES = {  # name: (program, highest integer of the fp16 data, rows, columns, the counterfactual plan that must
    # differ: "without" Triton's reduction kernels, or "unsplit", a split reduction planned as one kernel)
    "sum read by *1.5 (reduced shape)": (_sum_epilogue, 60, 64, 512, "without"),
    "sum read by x - s (full size)": (_full_epilogue, 60, 64, 512, "without"),
    "stored 3x summed (prologue)": (_prologue, 2000, 64, 512, "without"),
    "stored 3x, sum and amax": (_two_reductions, 2000, 64, 512, "without"),
    "split: sum read by *1.5": (_sum_epilogue, 4, 64, 16384, "without"),
    "split: sum read by x - s": (_full_epilogue, 4, 64, 16384, "unsplit"),
    "split, columns: sum read by x - s": (_column_epilogue, 60, 512, 64, "unsplit"),
}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (real Triton)")
@pytest.mark.parametrize("name", list(CASES))
def test_inductor_gpu_plan_matches_torch_compile_on_triton_bit_for_bit(name: str, monkeypatch) -> None:
    """Split or not (`triton_kernels.split`), as real Inductor compiles it; a counterfactual must differ: the
    reduction ending its kernel, or a split one planned as one kernel."""
    fn, high, rows, cols, counterfactual = CASES[name]
    x = torch.randint(0, high, (rows, cols), generator=torch.Generator().manual_seed(0)).to(H).cuda()
    torch._dynamo.reset()
    real = torch.compile(fn, dynamic=False, fullgraph=True)(x)
    program = capture(fn, x)
    differ = [bits_differ(e, r) for e, r in zip(run_plan(plan(program, "inductor-gpu"), (x,)), real)]
    assert differ == [0] * len(real), f"{name}: elements differing per output {differ}"
    if counterfactual == "unsplit":
        monkeypatch.setattr("roundoff.plan.triton_kernels.split", lambda *_: False)
    other = plan(program, "inductor-gpu" if counterfactual == "unsplit" else WITHOUT)
    assert sum(bits_differ(e, r) for e, r in zip(run_plan(other, (x,)), real)) > 0


def _reused_chain(k: int):
    def chain(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        v = x
        for _ in range(k):
            v = v * 1.01 + 0.5
        return v.sum(0), v.sum(1)  # two reduction kernels read v: recomputed, or loaded rounded if stored

    return chain


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (real Triton)")
def test_a_reused_value_of_many_ops_is_stored_where_triton_realizes_it(monkeypatch) -> None:
    """Inductor stores a reused pointwise value whose inner function has more than 30 ops on Triton
    (``has_large_inner_fn``; 50 on C++, tests/execute/test_inductor_fidelity.py), so both reductions load it
    rounded to bf16. Oracle: real torch.compile bit for bit on each side of the threshold; the plan with the
    op count unbounded (loads only: the H100 Llama's residual gradient, bench/results/gpu-session29/run4)
    differs from it somewhere in the range."""
    x = (torch.randn(64, 256, generator=torch.Generator().manual_seed(0)).bfloat16() / 4).cuda()
    differ, unbounded = {}, {}
    for k in range(12, 18):  # 2k + 3 ops around 30
        torch._dynamo.reset()
        real = torch.compile(_reused_chain(k), dynamic=False, fullgraph=True)(x)
        program = capture(_reused_chain(k), x)
        differ[k] = [bits_differ(e, r) for e, r in zip(run_plan(plan(program, "inductor-gpu"), (x,)), real)]
        with monkeypatch.context() as m:
            m.setitem(realize.REALIZE_OPS, False, 10**6)
            unbounded[k] = sum(bits_differ(e, r) for e, r in zip(run_plan(plan(program, "inductor-gpu"), (x,)), real))
    assert all(d == [0, 0] for d in differ.values()), differ
    assert any(unbounded.values()), unbounded


def _fused_result_count(code: str) -> int:
    """The result count (``xnumel``) of the generated Triton kernel that stores two buffers: the chain's value
    and a reduction's results, fused."""
    for kernel in code.split("def triton_")[1:]:
        if kernel.count("tl.store(") == 2:
            return int(re.search(r"xnumel = (\d+)", kernel).group(1))
    raise AssertionError("no kernel stores two buffers")


def test_a_stored_value_two_reductions_read_is_fused_into_the_one_reading_it_in_order(monkeypatch) -> None:
    """A stored bf16 value read by ``v.sum(0)`` and ``v.sum(1)`` is fused into one reduction kernel only, the
    one whose index is the value's own (rows summed over contiguous columns); the column sum loads it, rounded.
    Oracle: the H100's generated code (torch 2.11, `bench/gpu/session30_chain.py cuda 14`, recorded in
    bench/results/gpu-session30/run2/chain-cuda.log). Graph order alone fused it into the column sum."""
    code = (ROOT / "bench/results/gpu-session30/run2/chain-cuda.log").read_text().split("===== k=14")[1]
    rows_fused = _fused_result_count(code)
    x = torch.randn(64, 256, generator=torch.Generator().manual_seed(0)).bfloat16() / 4
    program = capture(_reused_chain(14), x)
    *_, v, columns, rows = [n for n in program.graph.nodes if n.op == "call_function"]

    def fused(p) -> int:
        with_v = next(s for s in (rows, columns) if p.decisions[node_id(s)].group == p.decisions[node_id(v)].group)
        return with_v.meta["val"].numel()

    assert rows_fused == rows.meta["val"].numel() == 64
    p = plan(program, "inductor-gpu")
    assert fused(p) == rows_fused and node_id(v) in p.decisions[node_id(columns)].rounded_inputs
    monkeypatch.setattr("roundoff.plan.triton_kernels._in_order", lambda *_: True)
    assert fused(plan(program, "inductor-gpu")) != rows_fused
