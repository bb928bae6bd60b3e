"""The graphed screen's verdicts against the interpreted screen's on bench/check.py's transformers Llama (CUDA).

    PYTHONPATH=$PWD/src:$PWD:$PWD/bench python bench/gpu/screen_equivalence.py [--size 1024:512:1:4]

For each reference and rule: ``check(..., screen_with="graphed")`` and ``screen_with="interpreter"``;
prints whether every output verdict (every figure, repr) is the same, the notes of the graphed one
(a fallback says so) and the CUDA memory each leaves and peaks at.
"""

from __future__ import annotations

import argparse
import json
import sys

import check as bench  # bench/check.py
import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="1024:512:1:4")
    args = ap.parse_args()
    from roundoff.analyze import check

    fns = bench._setup("llama", args.size, "cuda")
    program, inputs = fns["_program"](), fns["_inputs"]()
    rows = []
    for against, rule in (("eager", "same"), ("eager", "allclose"), ("oracle", "same")):
        got = {}
        for how in ("graphed", "interpreter"):
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            r = check(program, inputs, "inductor-gpu", against=against, rule=rule, screen_with=how)
            torch.cuda.synchronize()
            got[how] = (r, torch.cuda.max_memory_allocated())
        g, i = got["graphed"][0], got["interpreter"][0]
        rows.append({"against": against, "rule": rule, "same_outputs": repr(g.outputs) == repr(i.outputs),
                     "mode": [g.mode, i.mode], "passes": all(o.passes for o in g.outputs), "outputs": len(g.outputs),
                     "graphed_notes": [n for n in g.notes if "screen" in n],
                     "peak_bytes": [got["graphed"][1], got["interpreter"][1]]})
        print(json.dumps(rows[-1]), flush=True)
    sys.exit(0 if all(r["same_outputs"] for r in rows) else 1)


if __name__ == "__main__":
    main()
