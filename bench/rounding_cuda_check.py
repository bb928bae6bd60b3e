"""One-shot CUDA correctness check of round_to / fma against torch's CUDA casts, plus what tf32 does.

Usage: python bench/rounding_cuda_check.py [--device cuda] [--n 67108864] [--out FILE]
Prints one line per finding (and writes them to --out if given). Every check runs in its own try
block: a failing check prints its exception and the rest still run. Checks:
- fp32 -> each torch fp8/fp16/bf16 dtype: round_to eager / fused / auto vs x.to(dtype).to(fp32) on n
  random fp32 bit patterns (NaN/inf/subnormals included; any NaN equals any NaN);
- fp64 -> bf16/fp16/fp8: does torch's cast on this device round once (correctly) or twice through fp32?
  Counted on random fp64 patterns and shown on crafted double-rounding traps;
- fma on the device vs the CPU result (itself checked against C fmaf by the test suite);
- tf32: which conversion a TF32 matmul applies to its fp32 inputs. Batched 1xK @ Kx1 products with a
  single nonzero term (so accumulation order cannot matter, and the product of two 11-bit significands
  is exact in fp32) are compared with the fp64 product of the inputs rounded to tf32 with each mode.
Dry run on CPU: --device cpu --n 65536 (the tf32 check then reports that CPU matmuls stay fp32).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable

import torch

from roundoff.numerics import FORMATS, RoundingMode, fma, round_to, same_bits_mask
from roundoff.numerics.rounding import fused_status

LINES: list[str] = []


def say(line: str) -> None:
    LINES.append(line)
    print(line, flush=True)


def same(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return same_bits_mask(a, b)


def narrow_formats() -> list[str]:
    return [n for n, f in FORMATS.items() if f.torch_dtype is not None and f.mantissa_bits < 23]


def check_fp32_casts(dev: str, n: int) -> None:
    g = torch.Generator(device=dev).manual_seed(0)
    x = torch.randint(-(2**31), 2**31 - 1, (n,), dtype=torch.int32, device=dev, generator=g).view(
        torch.float32
    )
    for name in narrow_formats():
        ref = x.to(FORMATS[name].torch_dtype).to(torch.float32)
        for label, fused in (("eager", False), ("fused", True), ("auto", None)):
            try:
                bad = int((~same(round_to(x, name, fused=fused), ref)).sum())
                say(f"fp32->{name} {label}: {bad} mismatches of {n} vs torch {dev} cast")
            except Exception as e:  # noqa: BLE001 - reported, the other variants still run
                say(f"fp32->{name} {label}: FAILED {type(e).__name__}: {str(e)[:300]}")


def check_fp64_casts(dev: str, n: int) -> None:
    g = torch.Generator(device=dev).manual_seed(1)
    x = torch.randint(-(2**63), 2**63 - 1, (n,), dtype=torch.int64, device=dev, generator=g).view(
        torch.float64
    )
    near = (1 + torch.rand(n, dtype=torch.float64, device=dev, generator=g)) * 2.0**-20
    x = torch.cat([x, x * 2.0**-1000, near, -near])
    for name in narrow_formats():
        f = FORMATS[name]
        ref = x.to(f.torch_dtype).to(torch.float64)
        once = int((~same(round_to(x, name, fused=False), ref)).sum())
        twice = int((~same(round_to(x, name, torch_compatible=True, fused=False), ref)).sum())
        traps = _double_rounding_traps(f.mantissa_bits, dev, g)
        tref = traps.to(f.torch_dtype).to(torch.float64)
        t_once = int((~same(round_to(traps, name), tref)).sum())
        t_twice = int((~same(round_to(traps, name, torch_compatible=True), tref)).sum())
        verdict = (
            "rounds once"
            if t_once == 0
            else "rounds twice (via fp32)"
            if t_twice == 0
            else "neither"
        )
        say(
            f"fp64->{name}: torch {dev} cast differs from single rounding in {once}, from torch_compatible "
            f"(via fp32) in {twice}, of {x.numel()} random; on {traps.numel()} double-rounding traps in "
            f"{t_once} / {t_twice}: {verdict}"
        )
        k = int((~same(round_to(traps, name), tref)).int().argmax())
        say(
            f"  e.g. {traps[k].item()!r}: torch cast {tref[k].item()!r}, single rounding "
            f"{round_to(traps[k : k + 1], name).item()!r}, via fp32 {round_to(traps[k : k + 1], name, torch_compatible=True).item()!r}"
        )


def _double_rounding_traps(m: int, dev: str, g: torch.Generator, n: int = 4096) -> torch.Tensor:
    """fp64 values within 2**-30 (relative) of a tie of an m-bit mantissa: fp32 rounds them onto the tie."""
    k = 2 * torch.randint(0, 2**m, (n,), device=dev, generator=g).double() + 1
    tie = 1 + k * 2.0 ** -(m + 1)
    off = torch.where(torch.rand(n, device=dev, generator=g) < 0.5, -(2.0**-30), 2.0**-30)
    sign = torch.where(torch.rand(n, device=dev, generator=g) < 0.5, -1.0, 1.0).double()
    return (
        sign
        * (tie + off)
        * torch.exp2(torch.randint(-3, 4, (n,), device=dev, generator=g).double())
    )


def check_fma(dev: str, n: int) -> None:
    g = torch.Generator(device=dev).manual_seed(2)
    a, b, c = (torch.randn(n, device=dev, generator=g) * s for s in (1.0, 1.0, 1e-3))
    c = c - a * b
    bad = int((~same(fma(a, b, c).cpu(), fma(a.cpu(), b.cpu(), c.cpu()))).sum())
    say(f"fma {dev} vs CPU: {bad} mismatches of {n}")


def _allow_tf32() -> str:
    done = []
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        done.append("allow_tf32=True")
    except (AttributeError, RuntimeError) as e:
        done.append(f"allow_tf32 failed ({e})")
    try:
        torch.backends.cuda.matmul.fp32_precision = "tf32"
        done.append("fp32_precision='tf32'")
    except (AttributeError, RuntimeError) as e:
        done.append(f"fp32_precision failed ({e})")
    return ", ".join(done)


def _tf32_inputs(dev: str, batch: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator(device=dev).manual_seed(3)
    u = 2.0**-11  # half an ulp of tf32 at 1.0 (10 mantissa bits)
    crafted = [
        1 + u,
        -(1 + u),
        1 + 3 * u,
        1 + u + 2.0**-20,
        1 + 2.0**-12,
        1 + u - 2.0**-23,
        1 + 5 * u,
        3.0,
    ]
    a = torch.cat(
        [
            torch.tensor(crafted, device=dev),
            (1 + torch.rand(batch - len(crafted), device=dev, generator=g)) * 2.0**-3,
        ]
    )
    b = torch.cat(
        [
            torch.ones(len(crafted), device=dev),
            1 + torch.rand(batch - len(crafted), device=dev, generator=g),
        ]
    )
    return a, b


def check_tf32(dev: str, batch: int = 1 << 16, k: int = 8) -> None:
    """bmm of (batch, 1, k) @ (batch, k, 1), one nonzero term each (at position i % k)."""
    say(f"tf32 settings: {_allow_tf32()}")
    a, b = _tf32_inputs(dev, batch, k)
    pos = torch.arange(batch, device=dev) % k
    A = torch.zeros(batch, 1, k, device=dev)
    B = torch.zeros(batch, k, 1, device=dev)
    A[torch.arange(batch, device=dev), 0, pos] = a
    B[torch.arange(batch, device=dev), pos, 0] = b
    C = torch.bmm(A, B).reshape(-1)
    exact = (a.double() * b.double()).float()
    say(
        f"tf32 bmm: {int((C != exact).sum())} of {batch} single-term products differ from the fp32 product"
    )
    for mode in (RoundingMode.NEAREST_AWAY, RoundingMode.NEAREST_EVEN, RoundingMode.TOWARD_ZERO):
        ref = (round_to(a.double(), "tf32", mode) * round_to(b.double(), "tf32", mode)).float()
        say(
            f"  equals the product of inputs rounded {mode.name} to tf32 in {int(same(C, ref).sum())} of {batch}"
        )
    say(f"  crafted a (b = 1): {a[:8].tolist()} -> {C[:8].tolist()}")
    D = a.reshape(-1, 1)[:2048] @ torch.eye(1, device=dev)  # plain mm, too
    say(
        f"tf32 mm (2048x1 @ 1x1 identity) equals RNA in {int(same(D.reshape(-1), round_to(a[:2048], 'tf32')).sum())} "
        f"of 2048, RNE in {int(same(D.reshape(-1), round_to(a[:2048], 'tf32', RoundingMode.NEAREST_EVEN)).sum())}, "
        f"RZ in {int(same(D.reshape(-1), round_to(a[:2048], 'tf32', RoundingMode.TOWARD_ZERO)).sum())}"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--n", type=int, default=1 << 26, help="random fp32 patterns per format")
    p.add_argument("--out", default=None, help="also write the findings to this file")
    a = p.parse_args()
    say(
        f"# command: python {' '.join(sys.argv)}; torch {torch.__version__}; "
        f"{torch.cuda.get_device_name() if a.device == 'cuda' else a.device}"
    )
    checks: list[tuple[str, Callable[[], None]]] = [
        ("fp32 casts", lambda: check_fp32_casts(a.device, a.n)),
        ("fp64 casts", lambda: check_fp64_casts(a.device, a.n // 4)),
        ("fma", lambda: check_fma(a.device, min(a.n, 10_000_000))),
        ("tf32", lambda: check_tf32(a.device)),
    ]
    for name, check in checks:
        try:
            check()
        except Exception:  # noqa: BLE001 - one failing check must not stop the others
            say(f"CHECK {name} FAILED:\n{traceback.format_exc(limit=4)}")
    say(f"compiled-kernel status: {fused_status()}")
    if a.out:
        with open(a.out, "w") as fh:
            fh.write("\n".join(LINES) + "\n")


if __name__ == "__main__":
    main()
