"""Session 22 (H200): the overflowed-operand rule of `check` on CUDA, graphed every-node against the
interpreter, and on real Inductor (Triton) observe's dropped-store rule on the gated MLP backward.

    python bench/gpu/session22_overflow_reads.py
"""

from __future__ import annotations

import sys
import time

import torch

sys.path.insert(0, "tests/analyze")
sys.path.insert(0, "tests/observed")
from test_culprits import _attention_no_max
from test_observe import _gated_mlp

from roundoff.analyze import check
from roundoff.observed import observe_compiled


def main() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 16, 32, generator=g).half()
    wq, wk = (torch.randn(32, 32, generator=g) * 0.33).half(), (torch.randn(32, 32, generator=g) * 0.33).half()
    wv = (torch.randn(32, 32, generator=g) / 32 ** 0.5).half()
    inputs = tuple(t.cuda() for t in (x, wq, wk, wv))
    results = {}
    for how in ("auto", "interpreter"):
        t0 = time.perf_counter()
        r = check(_attention_no_max, inputs, "inductor-gpu", against="oracle", nodes="all", nodes_with=how)
        results[how] = r
        print(f"nodes_with={how}: {time.perf_counter() - t0:.2f} s, examined_with={r.examined_with}, diverges={r.diverges}")
        print("  first finding:", r.explanations[0][:200])
        div = next(n for n in r.nodes if n.op == "div")
        print(f"  div own excess {div.own_excess:.3g}, verdict {div.verdict.value}")
    a, b = results["auto"], results["interpreter"]
    print("same explanations:", a.explanations == b.explanations, "same node reports:", a.nodes == b.nodes)

    gen = torch.Generator().manual_seed(0)
    xm = torch.randn(64, 32, generator=gen).half()
    w1, w2 = (torch.randn(32, 64, generator=gen) * 0.6).half(), (torch.randn(32, 64, generator=gen) / 32 ** 0.5).half()
    w3 = (torch.randn(64, 32, generator=gen) / 8).half()
    res = observe_compiled(_gated_mlp, xm.cuda(), *(t.cuda().requires_grad_() for t in (w1, w2, w3)),
                           backward=True, partitioned=True, repeats=1)
    print("gated MLP on CUDA: first divergent", res.first_divergent and (res.first_divergent.buffer, res.first_divergent.op),
          "ops judged", sorted({k.op for k in res.kernels}), "unmapped", res.unmapped)


if __name__ == "__main__":
    main()
