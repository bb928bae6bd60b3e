"""How much of the test suite's time is Inductor compiling: a pytest plugin and its summary.

Each test's wall time and the seconds spent inside Inductor's ``fx_codegen_and_compile`` (a graph compiled,
not one found in the FX graph cache: lowering, scheduling, code generation and the C++ build), per xdist
worker, written as JSON to ``$COMPILE_TIME_OUT/compile-time-<worker>.json``; then summed per file and per
test function::

    COMPILE_TIME_OUT=/tmp/ct PYTHONPATH=$PWD/bench python -m pytest -q -n 2 -p pytest_compile_time
    python bench/pytest_compile_time.py /tmp/ct [--top 40]

Dynamo's tracing and AOTAutograd are not counted, so the share printed is a lower bound.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import time
from pathlib import Path

import pytest

_now = {"seconds": 0.0, "graphs": 0}
_rows: list[tuple[str, float, float, int]] = []


def pytest_configure(config: pytest.Config) -> None:
    import torch._inductor.compile_fx as compile_fx

    compiling = compile_fx.fx_codegen_and_compile

    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return compiling(*args, **kwargs)
        finally:
            _now["seconds"] += time.perf_counter() - t0
            _now["graphs"] += 1

    compile_fx.fx_codegen_and_compile = timed


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    _now.update(seconds=0.0, graphs=0)
    t0 = time.perf_counter()
    yield
    _rows.append((item.nodeid, time.perf_counter() - t0, _now["seconds"], _now["graphs"]))


def pytest_unconfigure(config: pytest.Config) -> None:
    out = Path(os.environ.get("COMPILE_TIME_OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    if _rows:
        (out / f"compile-time-{worker}.json").write_text(json.dumps(_rows))


def main() -> None:
    ap = argparse.ArgumentParser(description="Sum the plugin's rows per file and per test function.")
    ap.add_argument("folder", type=Path)
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args()
    rows = [r for f in sorted(args.folder.glob("compile-time-*.json")) for r in json.loads(f.read_text())]
    total, compiling, graphs = (sum(r[i] for r in rows) for i in (1, 2, 3))
    print(f"{len(rows)} tests, {total:.0f} s in all (summed over workers), {compiling:.0f} s "
          f"({compiling / total:.0%}) compiling {graphs} graphs")
    for level, key in (("file", lambda nid: nid.split("::")[0]), ("test", lambda nid: nid.split("[")[0])):
        sums: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0])
        for nid, t, c, g in rows:
            s = sums[key(nid)]
            s[0], s[1], s[2] = s[0] + t, s[1] + c, s[2] + g
        print(f"\n| {level} | seconds | compiling | graphs |\n|---|---:|---:|---:|")
        for name, (t, c, g) in sorted(sums.items(), key=lambda kv: -kv[1][0])[:args.top]:
            print(f"| {name} | {t:.1f} | {c:.1f} | {g} |")


if __name__ == "__main__":
    main()
