"""The lowered plan under torch.compile (Inductor, CPU) equals the interpreted emulation bit for bit.

round_to and fma either stay opaque custom ops or are expanded into integer / exact fp64 aten ops
that Inductor fuses; the aten ops around them are Inductor's kernels, so transcendentals are
Inductor's: the oracle for graphs with exp is ``run_plan(..., transcendentals="inductor")``.
Two small compiles.
"""

from __future__ import annotations

import torch

from roundoff.capture import capture
from roundoff.execute import run_plan
from roundoff.lower import compile_lowered, lower
from roundoff.numerics import same_bits_mask
from roundoff.plan import plan
from roundoff.zoo import get_workload


def test_compiled_lowered_plan_equals_emulation() -> None:
    cases = (("bf16-chain", "inductor-gpu", "eager", "opaque"), ("fma-cancel-vector", "inductor-gpu", "inductor", "expanded"))
    for name, policy, transcendentals, primitives in cases:
        w = get_workload(name)
        xs = tuple(x.detach() for x in w.make_inputs())
        p = plan(capture(w.build(), *xs), policy)
        gm = lower(p)
        assert any(n.target is torch.ops.roundoff.fma.default for n in gm.graph.nodes), "no FMA site to keep"
        got = compile_lowered(gm, xs, primitives=primitives)(*xs)
        want = run_plan(p, xs, transcendentals=transcendentals)
        for g, r in zip(got, want):
            same = same_bits_mask(g, r)
            assert bool(same.all()), (
                f"{int((~same).sum())} of {r.numel()} elements differ; repro: "
                f"compile_lowered(lower(plan(zoo:{name}, {policy!r})), primitives={primitives!r}) vs run_plan(transcendentals={transcendentals!r})")
