"""`check` against one eager forward+backward, interleaved in one process (a ratio a loaded machine keeps).

The transformers Llama of roundoff.corpus at corpus size, forward+backward; per round: the eager
step, the default check (screen; the interpreter on CPU), the screen on the lowered graph, every
node examined (all ``check(program, inputs, "inductor-gpu", against="eager")``); medians of ROUNDS
rounds after two warm-up calls each, of wall time and of the thread's CPU time (``time.thread_time``: one
intra-op thread, so this is the work done; on a loaded machine it moves less than wall time).

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
    cpu: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            t0, c0 = time.perf_counter(), time.thread_time()
            f()
            cpu[k].append(time.thread_time() - c0)
            times[k].append(time.perf_counter() - t0)
    e, ec = statistics.median(times["eager"]), statistics.median(cpu["eager"])
    print(f"{'':15s} {'wall':>8s}     {'x eager':>7s}  {'cpu':>8s}     {'x eager':>7s}")
    for k, v in times.items():
        m, c = statistics.median(v), statistics.median(cpu[k])
        print(f"{k:15s} {m * 1e3:8.1f} ms  {m / e:6.1f}x  {c * 1e3:8.1f} ms  {c / ec:6.1f}x  (min wall {min(v) * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
