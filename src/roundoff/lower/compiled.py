"""A lowered plan compiled with torch.compile (Inductor, CPU and CUDA).

`compile_lowered(gm, inputs)`:

- ``primitives="expanded"`` (default): ``round_to`` / ``fma`` are first written out as the same
  numerics code in plain aten ops (``primitives.EXPANSIONS``: integer operations on bit patterns; the
  fp64 round-to-odd FMA), so Inductor fuses them into the kernels around them. Integer arithmetic
  is exact and the FMA's fp64 product is exact, so no float rewrite can change their bits (a
  contraction of ``x*y + z`` in fp64 rounds the exact product once, as the two steps do).
- ``primitives="opaque"``: the two custom ops stay extern calls (Python, one per call).

Compiled under Inductor's defaults, pinned so that the plain fp32 ops of the lowered graph keep
eager's one-rounding-per-op semantics:

- CPU: C++ built without FP contraction (``cpp.enable_floating_point_contract_flag="off"``) and
  without unsafe math (``cpp.enable_unsafe_math_opt_flag=False``);
- CUDA (Triton): ``emulate_precision_casts=True``, which also compiles every kernel with Triton's
  ``enable_fp_fusion=False`` (no ``a*b + c`` contracted to an FMA by ptxas);
  ``eager_numerics.division_rounding=True`` (fp32 ``/`` as ``div_rn``, IEEE, not ``div.full``'s
  approximation); ``eager_numerics.disable_ftz=True`` (subnormals kept). Inductor's ``sqrt`` is
  ``sqrt_rn`` already.

What changes against the interpreted emulation: transcendentals are Inductor's kernels (as
``run_plan(..., transcendentals="inductor")``; on CUDA libdevice's), and Inductor's reductions and
matmuls may sum in another order (bit-identical only where they do not: measured in
bench/results/lowered-cpu.md). Pointwise graphs are bit-identical (tests/lower/test_compiled.py, and
tests/lower/test_compiled_cuda.py on a CUDA device).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx

from roundoff.lower.primitives import DIRECT, EXPANSIONS

__all__ = ["compile_lowered", "direct_primitives", "expand_primitives"]

_CPU_CONFIG = {"cpp.enable_floating_point_contract_flag": "off", "cpp.enable_unsafe_math_opt_flag": False}
#: Triton: no FP contraction (``emulate_precision_casts`` sets ``enable_fp_fusion=False``), IEEE
#: division, no flush to zero (module docstring).
CUDA_CONFIG = {"emulate_precision_casts": True, "eager_numerics.division_rounding": True,
               "eager_numerics.disable_ftz": True}
#: Of `CUDA_CONFIG`, what no Inductor may lack: without these, Triton contracts and approximates.
_CUDA_REQUIRED = ("emulate_precision_casts", "eager_numerics.division_rounding")


def expand_primitives(gm: torch.fx.GraphModule, inputs: Sequence[Any]) -> torch.fx.GraphModule:
    """`gm` with every ``roundoff::round_to`` / ``roundoff::fma`` call written out as aten ops."""
    return make_fx(gm, decomposition_table=EXPANSIONS, tracing_mode="real")(*inputs)


def direct_primitives(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm` (changed in place) calling the primitives' kernels as plain Python functions, not through
    the dispatcher (a custom op call costs about 0.2 ms of Python): the same values, for running a
    lowered graph interpreted."""
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target in DIRECT:
            n.target = DIRECT[n.target]
    gm.recompile()
    return gm


def compile_lowered(
    gm: torch.fx.GraphModule, inputs: Sequence[Any], *, primitives: str = "expanded"
) -> Callable[..., Any]:
    """``torch.compile`` of lowered plan `gm` for `inputs` (CPU or CUDA tensors); see the module docstring."""
    if primitives not in ("expanded", "opaque"):
        raise ValueError(f"primitives must be 'expanded' or 'opaque', got {primitives!r}")
    devices = {x.device.type for x in inputs if isinstance(x, torch.Tensor)}
    if devices - {"cpu", "cuda"}:
        raise ValueError(f"compile_lowered runs on CPU or CUDA tensors; got {sorted(devices - {'cpu', 'cuda'})}")
    config = {k: v for k, v in _CPU_CONFIG.items() if _has(k)}
    if "cuda" in devices:
        missing = [k for k in _CUDA_REQUIRED if not _has(k)]
        if missing:
            raise ValueError(
                f"compile_lowered on CUDA needs Inductor config {', '.join(missing)} (this torch {torch.__version__} "
                "lacks it): without it Triton contracts a*b + c and approximates division; run on CPU instead")
        config |= {k: v for k, v in CUDA_CONFIG.items() if _has(k)}
    target = expand_primitives(gm, inputs) if primitives == "expanded" else gm
    compiled = torch.compile(target, backend="inductor")

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
