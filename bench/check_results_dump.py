"""Every figure `check` reports, dumped to JSON, to compare two commits field by field (a speed change
must not move any).

Cases: corpus models (forward+backward; screen and every node; against eager and the oracle; policy
inductor-gpu) and the planted defects of tests/analyze/planted.py (screen and every node). Floats are
written by repr, so equal JSON means equal bits (NaN written as "nan").

    PYTHONPATH=<checkout A>/src python bench/check_results_dump.py a.json
    PYTHONPATH=<checkout B>/src python bench/check_results_dump.py b.json
    python bench/check_results_dump.py --diff a.json b.json
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import torch

MODELS = ("meta-llama/Llama-3.2-1B", "DistillGPT2", "nanogpt-manual", "cnn-bn", "openai/gpt-oss-20b")
HERE = Path(__file__).resolve().parent


def _norm(o: Any) -> Any:
    if isinstance(o, float) and math.isnan(o):
        return "nan"
    if isinstance(o, dict):
        return {k: _norm(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_norm(v) for v in o]
    return o


def dump(path: str) -> None:
    from roundoff import corpus
    from roundoff.analyze import check
    from roundoff.capture import capture

    torch.set_num_threads(1)
    out = {}
    for name in MODELS:
        t = corpus.build(name)
        prog = capture(t.fn, *t.inputs, backward=True)
        for against in ("eager", "oracle"):
            for nodes in ("screen", "all"):
                r = check(prog, prog.example_inputs, "inductor-gpu", against=against, nodes=nodes)
                out[f"{name}/{against}/{nodes}"] = _norm(r.to_dict())
    from planted_defects import _planted  # bench/ is this script's directory

    for p in _planted():
        prog = capture(p.fn, *p.inputs(), backward=p.backward)
        for nodes in ("screen", "all"):
            r = check(prog, prog.example_inputs, p.policy, against=p.against, nodes=nodes)
            out[f"planted/{p.name}/{nodes}"] = _norm(r.to_dict())
    Path(path).write_text(json.dumps(out, indent=0, sort_keys=True))
    print(f"{len(out)} cases -> {path}")


def diff(a_path: str, b_path: str) -> int:
    a, b = json.loads(Path(a_path).read_text()), json.loads(Path(b_path).read_text())
    bad = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    for k in bad:
        fields = [f for f in (a.get(k) or {}) if (b.get(k) or {}).get(f) != a[k][f]]
        print(f"DIFF {k}: {', '.join(fields) or 'missing'}")
    print(f"{len(a)} cases, {len(bad)} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--diff"]:
        sys.exit(diff(sys.argv[2], sys.argv[3]))
    dump(sys.argv[1])
