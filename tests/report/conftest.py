"""A hand-built report document shaped like the fma-cancel case, for the renderer tests.

Its numbers are the renderers' *inputs* (what a check would report), not expected results: the
tests assert that each renderer shows them, and that the document validates against the schema.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from roundoff.report.json_report import make_document, make_run, metrics, node_ref, output_entry


def _sample() -> dict[str, Any]:
    nodes_gpu = [
        {
            "id": "n2",
            "op": "aten.mul.Tensor",
            "op_class": "pointwise_arithmetic",
            "source": "model.py:11",
            "group": 0,
            "verdict": "ok",
            "metrics": metrics(
                max_ulp=0,
                bits=0.0,
                max_abs=0.0,
                max_rel=0.0,
                mismatch=0.0,
                sqnr_db=math.inf,
                nan=0,
                inf=0,
                local_bits=0.0,
                inherited_bits=0.0,
            ),
        },
        {
            "id": "n3",
            "op": "aten.sub.Tensor",
            "op_class": "pointwise_arithmetic",
            "source": "model.py:12",
            "group": 0,
            "verdict": "diverges",
            "metrics": metrics(
                max_ulp=1.2e9,
                bits=30.2,
                max_abs=7916.0,
                max_rel=math.inf,
                mismatch=1.0,
                sqnr_db=-math.inf,
                nan=0,
                inf=0,
                local_bits=30.2,
                inherited_bits=0.0,
            ),
        },
        {
            "id": "n4",
            "op": "aten.exp.default",
            "op_class": "pointwise_transcendental",
            "source": "model.py:12",
            "group": 0,
            "verdict": "nonfinite",
            "metrics": metrics(
                max_ulp=math.inf,
                bits=math.inf,
                max_abs=math.inf,
                max_rel=math.inf,
                mismatch=1.0,
                sqnr_db=None,
                nan=0,
                inf=1,
                local_bits=0.5,
                inherited_bits=math.inf,
            ),
        },
    ]
    nodes_eager = [
        dict(
            n,
            group=None,
            verdict="ok",
            metrics=metrics(max_ulp=0, bits=0.0, mismatch=0.0, nan=0, inf=0),
        )
        for n in nodes_gpu
    ]
    gpu = make_run(
        "inductor-gpu",
        [output_entry("out0", "diverges", math.inf, 0.0, 2.0)],
        nodes_gpu,
        first_divergent=node_ref("n3", "aten.sub.Tensor", "model.py:12"),
        nan_origin=node_ref(
            "n4",
            "aten.exp.default",
            "model.py:12",
            "exp of the FMA-kept rounding error 7916.0 overflows fp32",
        ),
        hazards=[
            {
                "kind": "fma_cancellation",
                "node": "n3",
                "source": "model.py:12",
                "message": "FMA contraction keeps the rounding error of x*scale; exp turns it "
                "into inf",
            }
        ],
        explanations=["`sub` at model.py:12: FMA contraction keeps the rounding error of x*scale"],
        groups=[{"id": 0, "kind": "pointwise", "nodes": ["n2", "n3", "n4"]}],
        notes=["reductions are bounded against fp64, not bit-exact"],
        trace="def f(x, scale):\n    # kernel 0\n    t2 = x * scale  # fp32\n",
        blame={
            "changes": [
                {
                    "node": "n3",
                    "change": "contract_fma=false",
                    "source": "model.py:12",
                    "explanation": "do not contract the subtraction",
                }
            ],
            "evaluations": 3,
            "overrides_toml": "[node_overrides.n3]\ncontract_fma = false\n",
        },
    )
    eager = make_run(
        "eager",
        [output_entry("out0", "ok", 0.0, 0.0, 2.0)],
        nodes_eager,
    )
    return make_document("zoo:fma-cancel", "eager", [gpu, eager])


@pytest.fixture
def sample_document() -> dict[str, Any]:
    return _sample()
