"""A lowered plan compiled with torch.compile (Inductor, CPU).

`compile_lowered(gm, inputs)`:

- ``primitives="expanded"`` (default): ``round_to`` / ``fma`` are first written out as the same
  numerics code in plain aten ops (``primitives.EXPANSIONS``: integer operations on bit patterns; the
  fp64 round-to-odd FMA), so Inductor fuses them into the kernels around them. Integer arithmetic
  is exact and the FMA's fp64 product is exact, so no float rewrite can change their bits.
- ``primitives="opaque"``: the two custom ops stay extern calls (Python, one per call).

Compiled under Inductor's CPU defaults, pinned: C++ built without FP contraction
(``cpp.enable_floating_point_contract_flag="off"``) and without unsafe math
(``cpp.enable_unsafe_math_opt_flag=False``), so the emulated ops are not contracted either.

What changes against the interpreted emulation: transcendentals are Inductor's kernels (as
``run_plan(..., transcendentals="inductor")``), and Inductor's reductions and matmuls may sum in
another order (bit-identical only where they do not: measured in bench/results/lowered-cpu.md).
CUDA is refused: Triton contracts fp32 ``a*b + c`` and approximates division unless configured
otherwise, which has not been validated here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx

from roundoff.lower.primitives import EXPANSIONS

__all__ = ["compile_lowered", "expand_primitives"]

_CPU_CONFIG = {"cpp.enable_floating_point_contract_flag": "off", "cpp.enable_unsafe_math_opt_flag": False}


def expand_primitives(gm: torch.fx.GraphModule, inputs: Sequence[Any]) -> torch.fx.GraphModule:
    """`gm` with every ``roundoff::round_to`` / ``roundoff::fma`` call written out as aten ops."""
    return make_fx(gm, decomposition_table=EXPANSIONS, tracing_mode="real")(*inputs)


def compile_lowered(
    gm: torch.fx.GraphModule, inputs: Sequence[Any], *, primitives: str = "expanded"
) -> Callable[..., Any]:
    """``torch.compile`` of lowered plan `gm` for `inputs` (CPU tensors); see the module docstring."""
    if primitives not in ("expanded", "opaque"):
        raise ValueError(f"primitives must be 'expanded' or 'opaque', got {primitives!r}")
    if any(isinstance(x, torch.Tensor) and x.device.type != "cpu" for x in inputs):
        raise ValueError("compile_lowered runs on CPU tensors only (CUDA is not validated yet: issue 15)")
    target = expand_primitives(gm, inputs) if primitives == "expanded" else gm
    compiled = torch.compile(target, backend="inductor")
    config = {k: v for k, v in _CPU_CONFIG.items() if _has(k)}

    def run(*args: Any) -> Any:
        with torch._inductor.config.patch(config):
            return compiled(*args)

    return run


def _has(key: str) -> bool:
    obj: Any = torch._inductor.config
    for part in key.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True
