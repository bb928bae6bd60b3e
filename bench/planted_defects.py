"""Rank of the planted node among `check`'s findings, and whether `blame`'s fix contains it.

For each program of tests/analyze/planted.py: capture, `check` under its policy and reference, the
1-based rank of the planted node in `CheckResult.culprits` (the findings ranked by cause; "-" when
absent), its verdict, and `blame`'s change set. Runs against whatever roundoff is on PYTHONPATH, so
the same script measures the branch base and the branch:

    PYTHONPATH=<checkout>/src python bench/planted_defects.py [--no-blame] [NAME ...]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import torch

from roundoff.analyze import check
from roundoff.capture import capture

HERE = Path(__file__).resolve().parent


def _planted():
    spec = importlib.util.spec_from_file_location("planted", HERE.parent / "tests" / "analyze" / "planted.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["planted"] = mod
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod.PLANTED


def planted_id(program, case) -> str:
    nodes = [n for n in program.graph.nodes if n.target is case.op]
    if len(nodes) <= case.occurrence:
        ops = sorted({str(n.target) for n in program.graph.nodes if n.op == "call_function"})
        raise SystemExit(f"{case.name}: no node {case.op} #{case.occurrence}; ops: {ops}")
    return nodes[case.occurrence].meta["roundoff_id"]


def measure(case, with_blame: bool) -> dict:
    xs = case.inputs()
    program = capture(case.fn, *xs, backward=case.backward)
    nid = planted_id(program, case)
    t0 = time.perf_counter()
    r = check(program, xs, case.policy, against=case.against, nodes="all")
    row = {
        "name": case.name, "planted": nid, "rank": r.culprits.index(nid) + 1 if nid in r.culprits else None,
        "culprits": list(r.culprits), "verdict": str(getattr(r.node(nid).verdict, "value", r.node(nid).verdict))
        if any(n.node_id == nid for n in r.nodes) else "-", "diverges": r.diverges,
        "first": r.explanations[0] if r.explanations else "", "check_s": time.perf_counter() - t0,
    }
    if with_blame:
        from roundoff.blame import blame

        b = blame(program, case.policy, against=case.against, repro=False)
        row["blame"] = [f"{c.node_id}:{c.kind.value}" for c in b.changes]
        row["blame_status"] = b.status.value
        row["blame_has_planted"] = any(c.node_id == nid for c in b.changes)
        node = program.node(nid)
        near = {nid} | {p.meta.get("roundoff_id") for p in node.all_input_nodes}
        row["blame_at_planted_or_operand"] = any(c.node_id in near for c in b.changes)
        row["blame_on_planted_line"] = any(c.source == node.meta.get("roundoff_source") for c in b.changes)
        row["blame_affects_planted"] = nid in b.affects
    return row


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--no-blame", action="store_true")
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    for case in _planted():
        if args.names and case.name not in args.names:
            continue
        try:
            row = measure(case, not args.no_blame)
        except Exception as exc:  # the branch base may not run every program
            row = {"name": case.name, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"}
        print(row, flush=True)


if __name__ == "__main__":
    sys.exit(main())
