"""Checking mode's overhead, measured against the very same compiled program (issue 15).

``m = roundoff.compile(module, policy="eager", check="warn", sample_every=N)`` is timed against
``m``'s own unchecked compiled callable (``m._roundoff.checker.compiled``: the same torch.compile
object, the same kernels), forward+backward, interleaved in ABBA order over `--rounds` rounds of
`--steps` steps each, each checked round ending with ``flush_checks()`` (its pending sample counted).
What differs is only the checker: its per-call bookkeeping and one sampled call per N steps. Prints
the per-round ratios, their median and the ratio of the total times.

    python bench/checking_overhead.py [--model llama|block] [--rounds 12] [--steps 100] [--sample-every 100]

``llama`` is bench/compile.py's issue-15 transformers Llama (hidden 1024, 4 layers, seq 512, bf16, SDPA;
needs CUDA and transformers); ``block`` the zoo's Llama block (runs anywhere).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import roundoff  # noqa: E402
from compile import build, build_llama, step_fn, time_steps  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=("llama", "block"), default="llama")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--sample-every", type=int, default=100)
    args = ap.parse_args()
    module, x, size = build_llama(args.device) if args.model == "llama" else build(False, args.device)
    torch._dynamo.config.recompile_limit = 64
    m = roundoff.compile(module, policy="eager", check="warn", sample_every=args.sample_every)
    checked, plain = step_fn(m, module, x), step_fn(m._roundoff.checker.compiled, module, x)
    for _ in range(3):  # compile both entry points, and the first (sampled) call's reference
        checked(), plain()
    m.flush_checks()

    def checked_round() -> float:
        t = time_steps(checked, args.steps, args.device)
        m.flush_checks()
        return t

    ratios, tc, tp = [], 0.0, 0.0
    for r in range(args.rounds):
        if r % 2 == 0:
            a = checked_round(); b = time_steps(plain, args.steps, args.device)
        else:
            b = time_steps(plain, args.steps, args.device); a = checked_round()
        ratios.append(a / b); tc += a; tp += b
        print(f"round {r}: checked {a:.3f} ms/step, unchecked {b:.3f} ms/step, ratio {a / b:.4f}", flush=True)
    samples = m._roundoff.checker.sample_seconds
    print(f"model {args.model} {size} on {torch.cuda.get_device_name() if args.device == 'cuda' else 'cpu'}, "
          f"torch {torch.__version__}, sample_every={args.sample_every}, {args.rounds} rounds x {args.steps} steps")
    print(f"median ratio {statistics.median(ratios):.4f} (+{(statistics.median(ratios) - 1) * 100:.1f}%); "
          f"total ratio {tc / tp:.4f} (+{(tc / tp - 1) * 100:.1f}%); samples taken {len(samples)}, "
          f"host seconds per sample median {statistics.median(samples) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
