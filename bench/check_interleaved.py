"""`check` against one eager forward+backward, interleaved in one process (a ratio a loaded machine keeps).

The transformers Llama of roundoff.corpus at corpus size, forward+backward; per round: the eager
step, the default check (screen; the interpreter on CPU), the screen on the lowered graph, every
node examined (all ``check(program, inputs, "inductor-gpu", against="eager")``); medians of ROUNDS
rounds after two warm-up calls each.

    python bench/check_interleaved.py [ROUNDS]
"""

from __future__ import annotations

import statistics
import sys
import time

import torch

from roundoff import corpus
from roundoff.analyze import check
from roundoff.capture import capture
from roundoff.execute.cpu_allocator import retain_freed_memory


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    retain_freed_memory()
    torch.set_num_threads(1)
    t = corpus.build("meta-llama/Llama-3.2-1B")
    prog = capture(t.fn, *t.inputs, backward=True)
    xs = prog.example_inputs

    def eager() -> None:
        t.fn(*t.inputs).backward()
        t.model.zero_grad(set_to_none=True)

    fns = {
        "eager": eager,
        "screen": lambda: check(prog, xs, "inductor-gpu", against="eager"),
        "screen-lowered": lambda: check(prog, xs, "inductor-gpu", against="eager", screen_with="lowered"),
        "every-node": lambda: check(prog, xs, "inductor-gpu", against="eager", nodes="all"),
    }
    for f in fns.values():
        f()
        f()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    e = statistics.median(times["eager"])
    for k, v in times.items():
        m = statistics.median(v)
        print(f"{k:15s} {m * 1e3:8.1f} ms  {m / e:6.1f}x  (min {min(v) * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
