"""What Triton makes of fp32 ``c - a / b`` on the GPU: the SASS and a numeric test (issue 6).

Inductor emits ``a / b`` for fp32 division; Triton lowers it to PTX ``div.full.f32`` (an
approximation: not correctly rounded). random:17 of ``bench/gpu_validation.py`` (``x2 - x2 / (|x0|
+ 1)``) differed from the emulation in 1 element of 65,536, and the value matched the emulation
with Triton's FP fusion off: so ptxas contracts part of ``div.full.f32``'s expansion into the
subtraction. This script records the evidence to emulate it:

1. the SASS of a Triton kernel computing ``a / b``, ``1 / b`` and ``c - a / b`` (Triton's bundled
   ``cuobjdump``), to see the instruction sequence;
2. on 2**24 random fp32 triples (several exponent ranges), real ``c - a/b`` from ``torch.compile``
   against hypotheses built from Inductor's own ``1/b`` (R) and ``a/b`` (Q):
   H_fma: ``fma(-a, R, c)`` correctly rounded (the product inside ``div.full.f32`` folded into the sub);
   H_sep: ``c - Q`` (no contraction); and whether ``Q == fl(a * R)`` (div.full.f32 is a multiply by R).

Usage: ``python bench/gpu_div_contraction.py --out DIR``; writes DIR/gpu_div_contraction.{json,txt}.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

from roundoff.numerics import same_bits_mask


def _fma(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    from roundoff.numerics import fma

    return fma(a, b, c)


def sass_of_triton_kernel() -> dict[str, str]:
    """SASS of the three division kernels (empty strings where cuobjdump is missing)."""
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(a_ptr, b_ptr, c_ptr, q_ptr, r_ptr, s_ptr, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < n
        a = tl.load(a_ptr + i, m)
        b = tl.load(b_ptr + i, m)
        c = tl.load(c_ptr + i, m)
        tl.store(q_ptr + i, a / b, m)
        tl.store(r_ptr + i, 1.0 / b, m)
        tl.store(s_ptr + i, c - a / b, m)

    n = 1024
    t = [torch.rand(n, device="cuda") + 0.5 for _ in range(6)]
    compiled = kernel[(1,)](*t, n, BLOCK=1024)
    out: dict[str, str] = {"ptx_div_lines": ""}
    ptx = compiled.asm.get("ptx", "")
    out["ptx_div_lines"] = "\n".join(
        ln for ln in ptx.splitlines() if any(k in ln for k in ("div", "rcp", "fma", "sub.f32", "mul.f32"))
    )
    cubin = compiled.asm.get("cubin")
    tools = glob.glob(os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/cuobjdump"))
    if cubin is None or not tools:
        out["sass"] = f"(no cuobjdump: {tools})"
        return out
    path = Path("/tmp/div_probe.cubin")
    path.write_bytes(cubin)
    res = subprocess.run([tools[0], "-sass", str(path)], capture_output=True, text=True, check=False)
    out["sass"] = res.stdout[-20000:] + res.stderr[-2000:]
    return out


def numeric_test(n: int = 1 << 24) -> dict[str, Any]:
    """Counts of elements where each hypothesis reproduces real Inductor ``c - a/b``."""
    g = torch.Generator(device="cuda").manual_seed(0)
    rows: dict[str, Any] = {}
    ranges = {"unit": (0, 0), "wide": (-30, 30), "huge_b": (100, 126), "tiny_b": (-126, -110)}
    sub = torch.compile(lambda a, b, c: c - a / b)
    div = torch.compile(lambda a, b: a / b)
    rcp = torch.compile(lambda b: 1.0 / b)
    for name, (lo, hi) in ranges.items():
        a = torch.randn(n, device="cuda", generator=g)
        c = torch.randn(n, device="cuda", generator=g) * 2
        e = torch.randint(lo, hi + 1, (n,), device="cuda", generator=g).float()
        b = (torch.rand(n, device="cuda", generator=g) + 1.0) * torch.exp2(e)
        b = torch.where(torch.rand(n, device="cuda", generator=g) < 0.5, -b, b)
        if name == "huge_b":
            a = a * 2.0**100
        real, q, r = sub(a, b, c), div(a, b), rcp(b)
        h_fma = _fma(-a, r, c)
        h_sep = c - q
        q_is_mul = same_bits_mask(q, a * r)
        rows[name] = {
            "elements": n,
            "real_eq_fma(-a,R,c)": int(same_bits_mask(real, h_fma).sum()),
            "real_eq_c-Q": int(same_bits_mask(real, h_sep).sum()),
            "Q_eq_fl(a*R)": int(q_is_mul.sum()),
            "Q_eq_correctly_rounded": int(same_bits_mask(q, (a.double() / b.double()).float()).sum()),
            "neither": int((~same_bits_mask(real, h_fma) & ~same_bits_mask(real, h_sep)).sum()),
        }
        bad = (~same_bits_mask(real, h_fma)).nonzero()[:3].flatten().tolist()
        rows[name]["first_fma_misses"] = [
            {k: float(v[i]) for k, v in {"a": a, "b": b, "c": c, "real": real, "fma": h_fma, "sep": h_sep}.items()}
            for i in bad
        ]
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    import triton

    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "command": " ".join(sys.argv),
    }
    result["numeric"] = numeric_test()
    print(json.dumps(result["numeric"], indent=1), flush=True)
    try:
        result.update(sass_of_triton_kernel())
    except (ImportError, OSError, RuntimeError, KeyError, AttributeError) as err:  # the numeric test is the main evidence
        result["sass"] = f"failed: {type(err).__name__}: {err}"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_div_contraction.json").write_text(json.dumps(result, indent=1))
    text = json.dumps({k: v for k, v in result.items() if k not in ("sass", "ptx_div_lines")}, indent=1)
    text += "\n== PTX lines\n" + result.get("ptx_div_lines", "") + "\n== SASS\n" + result.get("sass", "")
    (args.out / "gpu_div_contraction.txt").write_text(text)
    print(text[-6000:], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
