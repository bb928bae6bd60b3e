"""`roundoff observe`'s JSON document from an `ObserveResult` (`report.observed` renders it on a terminal)."""

from __future__ import annotations

import math
from typing import Any

from roundoff.observed import KernelReport, ObserveResult
from roundoff.observed.api import OutputFailure
from roundoff.report.from_check import break_entries
from roundoff.report.json_report import held_for_these_inputs


def _kernel(k: KernelReport) -> dict[str, Any]:
    return {
        "kernel": k.kernel, "buffer": k.buffer, "kind": k.kind, "node": k.node_id, "op": k.op,
        "source": k.source, "module": k.module, "fused_ops": list(k.fused_ops), "fused_nodes": list(k.fused_ids), "dtype": k.dtype,
        "judged_in": k.judged_in or k.dtype, "verdict": k.verdict.value,
        "excess": k.excess if math.isfinite(k.excess) else str(k.excess), "vs_oracle": k.vs_oracle.to_dict(), "vs_eager": k.vs_eager.to_dict(),
        "vs_fp64_total": k.vs_fp64_total.to_dict(),
        "emulated_identical": k.emulated_identical, "emulated_mismatch": k.emulated_mismatch,
        "emulation_cause": k.cause,
        "total_excess": k.total_excess if math.isfinite(k.total_excess) else str(k.total_excess),
        "format_loss": k.format_loss,
        "made_at": dict(zip(("node", "op", "source"), k.made_at)) if k.made_at else None,
        "amplifying": [dict(zip(("node", "op", "source"), a)) for a in k.amplifying],
        "reads_narrow": list(k.reads_narrow),
        "moves_no_output": k.moves_no_output,
    }


#: Version of `observe_document`'s layout (raised when a key changes meaning or goes away).
OBSERVE_SCHEMA_VERSION = 1


def observe_document(result: ObserveResult, label: str | None = None) -> dict[str, Any]:
    """The report document (plain JSON types; non-finite floats as strings by `Metrics.to_dict`), with the
    version keys `check`'s and `blame`'s documents have."""
    from roundoff import __version__

    first = result.first_divergent
    document = {
        "schema": "roundoff.observe", "schema_version": OBSERVE_SCHEMA_VERSION, "roundoff_version": __version__,
        "program": label or result.program, "backend": result.backend, "device": result.device,
        "against": result.against, "policy": result.policy, "rule": result.rule,
        "verdict": "diverges" if result.diverges else "ok",
        "first_divergent": _kernel(first) if first is not None else None,
        "amplified_at": _kernel(amp) if (amp := result.amplified_at) is not None else None,
        "failing_outputs": [_output(o) for o in result.failing_outputs],
        "outputs": [{"name": o.name, "node": o.node_id, "rmse_vs_fp64": _number(o.rmse),
                     "reference_rmse": _number(o.reference_rmse), "nonfinite": o.nonfinite, "passes": o.passes}
                    for o in result.outputs_measured],
        "unflagged_outputs": [_output(o) for o in result.unflagged_outputs],
        "selection_flips": [{"node": f.node_id, "op": f.op, "source": f.source, "differing": f.differing, "of": f.of}
                            for f in result.selection_flips],
        "eager_nonfinite_outputs": [{"name": name, "nonfinite": n, "compiled_too": both}
                                    for name, n, both in result.eager_nonfinite_outputs],
        "dynamo_fallbacks": [{"module": module, "source": source} for module, source in result.dynamo_fallbacks],
        "torch_compile": {"compared": result.torch_compile_compared, "not_compared": result.torch_compile_not_compared,
                          "departures": [o.to_dict() for o in result.torch_compile]},
        "compiled_as": "forward and backward apart" if result.stages == ("forward", "backward") else "one graph",
        "launches": result.launches, "buffers": len(result.kernels), "unmapped": list(result.unmapped),
        "unmapped_detail": [{"buffer": u.buffer, "kernel": u.kernel, "part_of": list(u.part_of)}
                            for u in result.unmapped_detail],
        "untapped": list(result.untapped),
        "outputs_identical_to_unobserved": result.outputs_identical,
        "seconds": {"compiled_step": result.step_seconds, "observed_step": result.observed_seconds,
                    "comparison": result.compare_seconds},
        "agreement": {kind: {"identical": s, "buffers": n} for kind, (s, n) in result.agreement().items()},
        "kernels": [_kernel(k) for k in result.kernels],
    }
    if result.specializations:  # (the keys check's document has: the captured graph holds eager's value there)
        texts, breaks = break_entries(result.specializations)
        document["specializations"], document["graph_breaks"] = held_for_these_inputs(texts), breaks
    return document


def _output(o: OutputFailure) -> dict[str, Any]:
    return {"name": o.name, "node": o.node_id, "rmse_vs_fp64": _number(o.rmse),
            "reference_rmse": _number(o.reference_rmse), "nonfinite": o.nonfinite, "moved_by": list(o.moved_by)}


def _number(x: float) -> float | None:
    """`x`, or None (JSON null) where it is NaN: no element to take it over."""
    return None if math.isnan(x) else x
