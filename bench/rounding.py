"""Benchmark: round_to (eager, fused, auto) against torch's cast round trip, ml_dtypes, pychop and qtorch.

Usage: python bench/rounding.py [--n N] [--repeat 7] [--device cpu|cuda] [--out bench/results] [--threads 1]
(--n defaults to 2**22 on CPU, 2**28 on CUDA). Prints a table (time per element, elements/s, ratio to
torch's round trip, disagreements with torch's cast; on CUDA also achieved bandwidth, bytes read +
written / time, as a fraction of a measured device-to-device copy of the same tensor) and writes
<out>/rounding-<device>.json and .txt with the command that made them. Disagreements are counted on
2**22 random fp32 bit patterns (NaN/inf/subnormal included, any NaN equals any NaN) plus the timing data.
The libraries other than torch and roundoff are optional; a missing one is reported as a row.
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from roundoff.numerics import FORMATS, bits_differ, round_to
from roundoff.numerics.rounding import fused_status

try:  # optional: plain text without it
    from rich.console import Console
    from rich.table import Table
except ImportError:
    Console = Table = None  # type: ignore[assignment,misc]

FMTS = ["bf16", "fp16", "fp8_e4m3fn", "fp8_e5m2"]
LAYOUT = {"bf16": (8, 7), "fp16": (5, 10), "fp8_e4m3fn": (4, 3), "fp8_e5m2": (5, 2)}


def _timer(device: str) -> Callable[[Callable[[], object], int], float]:
    def best(fn: Callable[[], object], repeat: int) -> float:
        fn()
        times = []
        for _ in range(repeat):
            if device == "cuda":
                torch.cuda.synchronize()
            t = time.perf_counter()
            fn()
            if device == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t)
        return min(times)

    return best


def _libraries(device: str) -> dict[str, Callable[[torch.Tensor, str], torch.Tensor] | str]:
    """name -> rounding function, or a string saying why the library is unavailable."""
    libs: dict[str, Callable[[torch.Tensor, str], torch.Tensor] | str] = {
        "torch cast round trip": lambda x, f: x.to(FORMATS[f].torch_dtype).to(x.dtype),
        "roundoff eager": lambda x, f: round_to(x, f, fused=False),
        "roundoff fused": lambda x, f: round_to(x, f, fused=True),
        "roundoff auto (default)": lambda x, f: round_to(x, f),
    }
    if device != "cpu":
        return libs
    try:
        import ml_dtypes

        np_types = {
            "bf16": ml_dtypes.bfloat16,
            "fp16": np.float16,
            "fp8_e4m3fn": ml_dtypes.float8_e4m3fn,
            "fp8_e5m2": ml_dtypes.float8_e5m2,
        }

        def ml(x: torch.Tensor, f: str) -> torch.Tensor:
            with np.errstate(over="ignore", invalid="ignore"):  # overflow/NaN casts are the point
                return torch.from_numpy(x.numpy().astype(np_types[f]).astype(np.float32))

        libs["ml_dtypes"] = ml
    except ImportError as e:
        libs["ml_dtypes"] = f"not installed ({e})"
    try:
        import pychop

        pychop.backend("torch")
        chops = {f: pychop.Chop(exp_bits=e, sig_bits=m, rmode=1) for f, (e, m) in LAYOUT.items()}
        libs["pychop"] = lambda x, f: chops[f](x)
    except Exception as e:  # noqa: BLE001 - a third-party library failing to set up is recorded, not fatal
        libs["pychop"] = f"unavailable: {type(e).__name__}: {e}"
    try:
        from qtorch.quant import float_quantize

        float_quantize(
            torch.ones(4), exp=8, man=7, rounding="nearest"
        )  # JIT-builds the C++ extension
        libs["qtorch"] = lambda x, f: float_quantize(
            x, exp=LAYOUT[f][0], man=LAYOUT[f][1], rounding="nearest"
        )
    except Exception as e:  # noqa: BLE001 - e.g. its C++ JIT build failing: recorded, not fatal
        libs["qtorch"] = f"unavailable: {type(e).__name__}: {str(e)[:200]}"
    return libs


def _disagreements(
    fn: Callable[[torch.Tensor, str], torch.Tensor], xs: list[torch.Tensor], f: str
) -> int:
    bad = 0
    for x in xs:
        ref = x.to(FORMATS[f].torch_dtype).to(x.dtype)
        got = fn(x, f).to(x.dtype)
        bad += bits_differ(got, ref)
    return bad


def _copy_bandwidth(
    x: torch.Tensor, best: Callable[[Callable[[], object], int], float], repeat: int
) -> float:
    """Bytes per second of a device-to-device copy (read + write) of x."""
    out = torch.empty_like(x)
    t = best(lambda: out.copy_(x), repeat)
    return 2 * x.numel() * x.element_size() / t


def run(n: int, repeat: int, device: str) -> dict:
    best = _timer(device)
    g = torch.Generator(device=device).manual_seed(0)
    data = torch.randn(n, generator=g, device=device)
    data *= torch.exp2(torch.randint(-12, 12, (n,), generator=g, device=device).float())
    patterns = torch.randint(
        -(2**31), 2**31 - 1, (1 << 22,), dtype=torch.int32, generator=g, device=device
    ).view(torch.float32)
    libs = _libraries(device)
    rows = []
    copy_bw = _copy_bandwidth(data, best, repeat)
    for f in FMTS:
        t0 = time.perf_counter()
        try:
            round_to(data[:1024], f, fused=True)
        except Exception as e:  # noqa: BLE001 - recorded in the fused row below, the rest still runs
            print(f"{f}: fused=True failed to compile: {type(e).__name__}: {e}", file=sys.stderr)
        compile_s = time.perf_counter() - t0
        base = best(lambda f=f: libs["torch cast round trip"](data, f), repeat)  # type: ignore[operator,misc]
        for name, fn in libs.items():
            if isinstance(fn, str):
                rows.append({"format": f, "library": name, "status": fn})
                continue
            try:
                t = (
                    base
                    if name == "torch cast round trip"
                    else best(lambda fn=fn, f=f: fn(data, f), repeat)
                )
                bad = _disagreements(fn, [patterns, data], f)
            except Exception as e:  # noqa: BLE001 - one failing variant must not stop the others
                rows.append(
                    {
                        "format": f,
                        "library": name,
                        "status": f"FAILED {type(e).__name__}: {e}"[:300],
                    }
                )
                continue
            row = {
                "format": f,
                "library": name,
                "seconds": t,
                "ns_per_element": t / n * 1e9,
                "elements_per_s": n / t,
                "time_vs_torch": t / base,
                "disagreements_with_torch": bad,
                "checked_elements": patterns.numel() + n,
            }
            if name == "roundoff fused":
                row["first_call_compile_s"] = compile_s
            if copy_bw:
                row["bytes_per_s"] = 2 * n * data.element_size() / t  # fp32 read + fp32 written
                row["fraction_of_copy_bandwidth"] = row["bytes_per_s"] / copy_bw
            rows.append(row)
    return {
        "command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
        "device": torch.cuda.get_device_name()
        if device == "cuda"
        else platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "n": n,
        "repeat": repeat,
        "copy_bandwidth_bytes_per_s": copy_bw,
        "rows": rows,
        "fused_status": fused_status(),
        "note": "best of `repeat` runs; CPU numbers were taken on a shared, loaded 2-core machine",
    }


COLUMNS = (
    "format",
    "library",
    "ns/elem",
    "Melem/s",
    "time / torch",
    "disagree",
    "GB/s",
    "of copy BW",
    "note",
)


def rows_text(result: dict) -> list[tuple[str, ...]]:
    out = []
    for r in result["rows"]:
        if "status" in r:
            out.append((r["format"], r["library"], "-", "-", "-", "-", "-", "-", r["status"][:60]))
            continue
        note = f"compile {r['first_call_compile_s']:.1f}s" if "first_call_compile_s" in r else ""
        bw = f"{r['bytes_per_s'] / 1e9:.0f}" if "bytes_per_s" in r else "-"
        frac = (
            f"{r['fraction_of_copy_bandwidth']:.2f}" if "fraction_of_copy_bandwidth" in r else "-"
        )
        out.append(
            (
                r["format"],
                r["library"],
                f"{r['ns_per_element']:.3f}",
                f"{r['elements_per_s'] / 1e6:.0f}",
                f"{r['time_vs_torch']:.2f}x",
                f"{r['disagreements_with_torch']}/{r['checked_elements']}",
                bw,
                frac,
                note,
            )
        )
    return out


def render(result: dict) -> str:
    title = f"round_to vs others on {result['device']} (n={result['n']}, torch {result['torch']})"
    if result["copy_bandwidth_bytes_per_s"]:
        title += f"; device-to-device copy {result['copy_bandwidth_bytes_per_s'] / 1e9:.0f} GB/s"
    lines = [*rows_text(result)]
    footer = [f"compiled-kernel status: {result['fused_status']}", f"command: {result['command']}"]
    if Table is None:
        widths = [max(len(c), *(len(r[k]) for r in lines)) for k, c in enumerate(COLUMNS)]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        return (
            "\n".join([title, fmt.format(*COLUMNS), *(fmt.format(*r) for r in lines), *footer])
            + "\n"
        )
    t = Table(title=title)
    for col in COLUMNS:
        t.add_column(col)
    for r in lines:
        t.add_row(*r)
    console = Console(record=True, width=160)
    console.print(t)
    for line in footer:
        console.print(line, markup=False)
    return console.export_text()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--n", type=int, default=None, help="elements (default 2**22 on CPU, 2**28 on CUDA)"
    )
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--out", default="bench/results")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (default 1: on a shared, loaded machine every multi-threaded op waits "
        "for a descheduled worker, which swamps the measurement)",
    )
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    n = a.n if a.n is not None else (1 << 22 if a.device == "cpu" else 1 << 28)
    result = run(n, a.repeat, a.device)
    text = render(result)
    if Table is None:
        sys.stdout.write(text)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"rounding-{a.device}.json").write_text(json.dumps(result, indent=2))
    (out / f"rounding-{a.device}.txt").write_text(text)


if __name__ == "__main__":
    main()
