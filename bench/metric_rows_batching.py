"""Whether batching every node's metric rows into one pass per format would speed up the every-node check on CPU.

The every-node check's per-node figures (`numerics._metric_rows._eager_rows`: error, ULP and bit sums of
k actuals against a reference) were thought to cost their calls, not their arithmetic (session 36). This
records the rows one deferred every-node check of the corpus Llama asks for (forward+backward,
``nodes_with="deferred"``, one thread), then times, in one process and interleaved: the rows one request at
a time (as the check computes them), all requests of a format in one pass (`torch.segment_reduce` per
field), and the same in chunks of about 256K elements; and prints each against the first.

    python bench/metric_rows_batching.py [ROUNDS]
"""

from __future__ import annotations

import math
import statistics
import sys
import time

import torch

from roundoff import corpus
from roundoff.analyze import check, deferred
from roundoff.capture import capture
from roundoff.numerics._metric_rows import _eager_rows
from roundoff.numerics.ulps import _fast_ordinal


def _requests() -> list[tuple[list[torch.Tensor], torch.Tensor, object]]:
    t = corpus.build("meta-llama/Llama-3.2-1B")
    prog = capture(t.fn, *t.inputs, backward=True)
    asked, unread = [], deferred.unread_stats

    def spy(actuals, r, f):  # type: ignore[no-untyped-def]
        asked.append(([a.clone() for a in actuals], r.clone(), f))
        return unread(actuals, r, f)

    deferred.unread_stats = spy
    try:
        check(prog, prog.example_inputs, "inductor-gpu", against="eager", nodes="all", nodes_with="deferred")
    finally:
        deferred.unread_stats = unread
    return asked


def _batched(reqs: list) -> torch.Tensor:
    """The rows of every request in `reqs` (one format) in one pass: fields reduced per row by segment."""
    f = reqs[0][2]
    dtypes = {t.dtype for a, _, _ in reqs for t in a}
    a = torch.cat([t for acts, _, _ in reqs for t in acts]).to(f.torch_dtype if dtypes == {f.torch_dtype} else torch.float32)
    r = torch.cat([ref for acts, ref, _ in reqs for _ in acts]).to(torch.float64)
    lengths = torch.tensor([t.numel() for acts, _, _ in reqs for t in acts])

    def seg(x: torch.Tensor, how: str) -> torch.Tensor:
        return torch.segment_reduce(x, how, lengths=lengths, unsafe=True)

    ulps = _fast_ordinal(a, f).sub_(_fast_ordinal(r, f)).abs_()
    err = a.to(torch.float64).sub_(r).abs_()
    zero = r == 0
    u64 = ulps.to(torch.float64)
    cols = [seg(err, "max"), None, seg(r * r, "sum"), seg(err * err, "sum"), seg(u64, "sum"), None, seg(u64, "max"),
            seg((ulps != 0).to(torch.float64), "sum"), seg(((err != 0) & zero).to(torch.float64), "sum")]
    cols[5] = seg(u64.add_(1).log2_(), "sum")
    cols[1] = seg(err.div_(r.abs().masked_fill_(zero, math.inf)), "max")
    return torch.stack(cols, 1)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    torch.set_num_threads(1)
    reqs = _requests()
    groups: dict[str, list] = {}
    for q in reqs:
        groups.setdefault(q[2].name, []).append(q)

    def chunked(limit: int = 1 << 18) -> list[torch.Tensor]:
        out = []
        for g in groups.values():
            cur, size = [], 0
            for q in g:
                cur.append(q)
                size += len(q[0]) * q[0][0].numel()
                if size >= limit:
                    out.append(_batched(cur))
                    cur, size = [], 0
            if cur:
                out.append(_batched(cur))
        return out

    fns = {"one request at a time": lambda: [_eager_rows(a, r, f) for a, r, f in reqs],
           "one pass per format": lambda: [_batched(g) for g in groups.values()],
           "passes of ~256K elements": chunked}
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            t0 = time.thread_time()
            fn()
            times[k].append(time.thread_time() - t0)
    print(f"{len(reqs)} requests, {sum(len(a) * a[0].numel() for a, _, _ in reqs)} elements; thread time, median of {rounds}")
    base = statistics.median(times["one request at a time"])
    for k, v in times.items():
        print(f"{k:26s} {statistics.median(v) * 1e3:8.1f} ms  {statistics.median(v) / base:5.2f}x")


if __name__ == "__main__":
    main()
