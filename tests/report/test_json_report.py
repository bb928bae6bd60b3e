"""The JSON report validates against its own published schema, and is strict JSON."""

from __future__ import annotations

import copy
import json
import math

import pytest

from roundoff.report.json_report import SCHEMA, SCHEMA_VERSION, dumps, jsonable, metrics, number

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the test extra")


def _validate(doc: dict) -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)


def test_sample_document_round_trips_through_strict_json_and_validates(sample_document):
    text = dumps(sample_document)
    back = json.loads(text)  # strict JSON: no bare Infinity/NaN tokens
    assert "Infinity" not in text and "NaN" not in text, "repro: dumps(sample_document)"
    _validate(back)
    assert back["schema_version"] == SCHEMA_VERSION
    assert back["verdict"] == "diverges"
    assert back["runs"][0]["nodes"][2]["metrics"]["bits"] == "inf"


@pytest.mark.parametrize(
    "mutate, what",
    [
        (lambda d: d.pop("schema_version"), "missing schema_version"),
        (lambda d: d.update(schema="roundoff.blame"), "another command's schema"),
        (lambda d: d.update(verdict="maybe"), "unknown verdict"),
        (lambda d: d["runs"][0]["nodes"][0]["metrics"].update(bits="lots"), "bad metric"),
        (lambda d: d["runs"][0]["nodes"][0]["metrics"].pop("bits"), "missing metric"),
        (lambda d: d["runs"][0].update(extra=1), "unknown run key"),
    ],
)
def test_schema_rejects_malformed_documents(sample_document, mutate, what):
    doc = copy.deepcopy(sample_document)
    mutate(doc)
    with pytest.raises(jsonschema.ValidationError):
        _validate(doc)


def test_strict_dumps_refuses_a_raw_float_inf(sample_document):
    sample_document["runs"][0]["outputs"][0]["rmse"] = math.inf  # bypassing jsonable
    with pytest.raises(ValueError):
        dumps(sample_document)


@pytest.mark.parametrize("x", [0.0, -0.0, 1.5, 3, math.inf, -math.inf, math.nan, None])
def test_jsonable_and_number_are_inverse(x):
    back = number(jsonable(x))
    if x is None:
        assert back is None
    elif isinstance(x, float) and math.isnan(x):
        assert back is not None and math.isnan(back)
    else:
        assert back == x and math.copysign(1, back) == math.copysign(1, x), (
            f"repro: number(jsonable({x!r}))"
        )


def test_metrics_names_unknown_keys():
    with pytest.raises(ValueError, match="ulps"):
        metrics(ulps=1)


def test_each_output_carries_its_error_as_a_multiple_of_the_references() -> None:
    """`x_reference` is rmse / ref_rmse, the terminal's "x reference" column (trial 74: in the terminal, not
    the JSON); null where a figure is missing, inf (a string) where the reference has no error. Oracle:
    the document's own rmse and ref_rmse, from a real check of the zoo's bf16 chain."""
    from roundoff.analyze import check
    from roundoff.capture import capture
    from roundoff.report.from_check import document_from_checks, run_from_check
    from roundoff.report.json_report import output_entry
    from roundoff.zoo import get_workload

    w = get_workload("bf16-chain")
    program = capture(w.build(), *w.make_inputs())
    doc = json.loads(dumps(document_from_checks("t", "oracle", [run_from_check(
        check(program, program.example_inputs, "inductor-cpu", against="oracle"))])))
    _validate(doc)
    (out,) = doc["runs"][0]["outputs"]
    assert out["x_reference"] == out["rmse"] / out["ref_rmse"] and out["x_reference"] > 0
    assert output_entry("o", "ok", 1.0, None, None)["x_reference"] is None
    assert output_entry("o", "ok", 1.0, 0.0, None)["x_reference"] == "inf"
