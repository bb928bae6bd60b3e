"""Session 25 (H200): session 24's fusion rules on Triton. Each program of
tests/plan/test_plan_inductor_oracle.py (CPU there) compiled by real torch.compile on CUDA and emulated
under ``inductor-gpu``: elements whose bits differ, per output, with the rule as planned and with it
off (so that a zero means the rule was tested, not idle). Integer fp16 terms keep fp32 sums exact.

    python bench/gpu/session25_rules.py
"""

from __future__ import annotations

import sys

import torch

sys.path.insert(0, "tests/plan")
from test_plan_inductor_oracle import _normalizer, _program, _reused_small_sums, _small_sums

from roundoff.capture import capture
from roundoff.execute import run_plan
from roundoff.numerics import bits_differ
from roundoff.plan import loops, plan, realize

DEV = "cuda" if torch.cuda.is_available() else "cpu"  # cpu: a dry run under inductor-cpu
POLICY = "inductor-gpu" if DEV == "cuda" else "inductor-cpu"


def _linear_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    s = torch.zeros(16, 16, dtype=q.dtype, device=q.device)
    z, out = torch.zeros(16, dtype=q.dtype, device=q.device), []
    for t in range(q.shape[0]):
        kf, qf = torch.exp(k[t]), torch.exp(q[t])
        s = 0.97 * s + torch.outer(kf, v[t])
        z = 0.97 * z + kf
        out.append((qf @ s) / (qf @ z))
    return torch.stack(out)


def _differ(fn, args, policy: str = POLICY) -> tuple[list[int], list[int]]:
    torch._dynamo.reset()
    real = torch.compile(fn, dynamic=False, fullgraph=True)(*args)
    real = real if isinstance(real, tuple) else (real,)
    emulated = run_plan(plan(capture(fn, *args), policy), args)
    return [bits_differ(e, r) for e, r in zip(emulated, real)], [int((~r.isfinite()).sum()) for r in real]


def main() -> None:
    g = torch.Generator().manual_seed(0)
    bf = lambda *s: torch.randn(*s, generator=g).to(torch.bfloat16).to(DEV)
    ints = lambda *s: torch.randint(-30000, 30000, s, generator=g).half().to(DEV)
    cases = {
        "program (bf16 reuse)": (_program, tuple(bf(32, 64) for _ in range(4))),
        "small sums (unroll)": (_small_sums, (ints(64, 4), ints(64, 8), ints(4), ints(4, 64))),
        "reused small sums (loads > 4)": (_reused_small_sums, tuple(ints(64, 4) for _ in range(3))),
        "normalizer (recurrence)": (_normalizer, (
            (torch.rand(8, 4, 16, generator=g) + 0.5).half().to(DEV), torch.randn(8, 4, 16, generator=g).half().to(DEV),
            (torch.randn(16, 16, generator=g) * 0.1).half().to(DEV))),
        "linear attention (trial 62)": (_linear_attention, (
            torch.randn(16, 16, generator=g).half().to(DEV), (torch.randn(16, 16, generator=g) + 5.0).half().to(DEV),
            torch.randn(16, 16, generator=g).half().to(DEV))),
    }
    for name, (fn, args) in cases.items():
        try:
            on, nonfinite = _differ(fn, args)
            saved = loops.UNROLL_BELOW, realize.REALIZE_READS, dict(realize.REALIZE_ACC_READS)
            loops.UNROLL_BELOW, realize.REALIZE_READS = 0, 100
            realize.REALIZE_ACC_READS.update({False: 100, True: 100})
            try:
                off, _ = _differ(fn, args)
            finally:
                loops.UNROLL_BELOW, realize.REALIZE_READS = saved[0], saved[1]
                realize.REALIZE_ACC_READS.clear()
                realize.REALIZE_ACC_READS.update(saved[2])
            print(f"{name}: bits differing per output, rules on {on}, rules off {off}; real non-finite {nonfinite}")
        except Exception as e:  # report and go on: one case must not hide the others
            print(f"{name}: {type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
