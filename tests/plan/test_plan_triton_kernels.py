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
import sys

import pytest
import torch

from roundoff.capture import capture
from roundoff.execute import run_plan
from roundoff.numerics import bits_differ
from roundoff.plan import plan
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
    one read through a slice loads it (inf). The plan without Triton's reduction kernels agreed on 5."""
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
    assert agree["without"] == 5  # the table recorded on the H200 with the plan of that time


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
