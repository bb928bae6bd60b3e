"""TOML round trip (presets and hypothesis-drawn policies) and rejection of bad policies.

Oracle for the round trip: the Policy itself (dataclass equality over every field) and tomllib's
independent parse of the emitted text.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roundoff.ops import OpClass
from roundoff.policy import (
    PRESETS,
    ComputePrecision,
    Division,
    FmaContraction,
    FusionModel,
    Negation,
    OpOverride,
    Policy,
    PolicyError,
    RoundingPoint,
    ScalarMixing,
    get_policy,
    list_policies,
    load_policy,
    policy_from_toml,
    policy_to_dict,
    policy_to_toml,
    save_policy,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

COMPUTING = [c for c in OpClass if c.computes]


@pytest.mark.parametrize("name", list(PRESETS))
def test_preset_round_trip(name: str) -> None:
    policy = PRESETS[name]
    text = policy_to_toml(policy)
    back = policy_from_toml(text)
    assert back == policy, f"round trip changed {name}; repro: roundoff policy show {name}"
    assert tomllib.loads(text) == policy_to_dict(policy)
    assert policy_to_toml(back) == text


def test_override_tables_use_documented_layout() -> None:
    policy = Policy(**{**_fields(PRESETS["xla-2.10"]),
                       "node_overrides": {"n12": OpOverride(contract_fma=False)}})  # fmt: skip
    data = tomllib.loads(policy_to_toml(policy))
    assert data["op_overrides"] == {"aten.mul": {"compute": "storage"}}
    assert data["node_overrides"] == {"n12": {"contract_fma": False}}
    eager = tomllib.loads(policy_to_toml(PRESETS["eager"]))
    assert eager["op_overrides"]["aten.add"] == {"scalars": "round_to_storage"}


def _fields(policy: Policy) -> dict:
    return {f: getattr(policy, f) for f in Policy.__dataclass_fields__}


_one_line = st.text(
    st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30
).filter(lambda s: s.strip())
_override = st.builds(
    OpOverride,
    compute=st.none() | st.sampled_from(ComputePrecision),
    round_result=st.none() | st.booleans(),
    contract_fma=st.none() | st.booleans(),
    scalars=st.none() | st.sampled_from(ScalarMixing),
).filter(lambda o: not o.is_empty())
_op_keys = st.sampled_from(
    ["aten.mul", "aten.mul.Tensor", "aten.add.Tensor", "aten.exp", "aten.mm.default", "prims.fma"]
)
_node_keys = st.from_regex(r"n[0-9]{1,4}(\.[0-9]{1,2})?", fullmatch=True)
_formats = st.sampled_from(["fp64", "fp32", "bf16", "fp16", "fp8_e4m3fn", "fp8_e5m2"])
_accumulations = st.sampled_from(["fp64", "fp32"])  # narrower accumulations are refused (not emulated)


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    fusion = draw(st.sampled_from(FusionModel))
    fused = fusion is not FusionModel.NONE
    rounding = draw(st.sampled_from(RoundingPoint)) if fused else RoundingPoint.EVERY_OP
    fma = draw(st.sampled_from(FmaContraction)) if fused else FmaContraction.NEVER
    return Policy(
        name=draw(_one_line),
        description=draw(_one_line),
        source=draw(_one_line),
        compute={c: draw(st.sampled_from(ComputePrecision)) for c in COMPUTING},
        rounding=rounding,
        fusion=fusion,
        fma=fma,
        scalars=draw(st.sampled_from(ScalarMixing)),
        division=draw(st.sampled_from(Division)),
        negation=draw(st.sampled_from(Negation)),
        storage=draw(st.none() | _formats),
        matmul_input=draw(st.none() | _formats | st.just("tf32")),
        matmul_accumulate=draw(_accumulations),
        reduction_accumulate=draw(_accumulations),
        decompositions=draw(st.sampled_from([(), ("inductor",)])),
        op_overrides=draw(st.dictionaries(_op_keys, _override, max_size=3)),
        node_overrides=draw(st.dictionaries(_node_keys, _override, max_size=3)),
    )


@settings(max_examples=100, deadline=None)
@given(policies())
def test_generated_policy_round_trip(policy: Policy) -> None:
    text = policy_to_toml(policy)
    assert policy_from_toml(text) == policy, f"round trip failed for TOML:\n{text}"


def _eager_data() -> dict:
    return policy_to_dict(PRESETS["eager"])


def _toml_with(**changes: object) -> str:
    import tomli_w

    data = _eager_data()
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return tomli_w.dumps(data)


BAD = {
    "unknown field": ({"colour": "red"}, ["'colour'", "allowed"]),
    "unknown op class": ({"compute": {**_eager_data()["compute"], "tensor_cores": "opmath"}},
                         ["compute.tensor_cores", "'tensor_cores'"]),
    "non-computing class": ({"compute": {**_eager_data()["compute"], "data_movement": "opmath"}},
                            ["compute.data_movement", "remove it"]),
    "missing class": ({"compute": {"matmul": "opmath"}}, ["'compute'", "pointwise_arithmetic"]),
    "unknown rounding": ({"rounding": "sometimes"}, ["'rounding'", "'every_op'"]),
    "unknown division": ({"division": "approximate"}, ["'division'", "'reciprocal_multiply'"]),
    "unknown negation": ({"negation": "xor"}, ["'negation'", "'subtract_from_zero'"]),
    "unknown compute value": ({"compute": {**_eager_data()["compute"], "matmul": "fp32"}},
                              ["compute.matmul", "'opmath'"]),
    "fusion none + boundary rounding": ({"rounding": "fusion_boundary"},
                                        ["'rounding'", "fusion = 'pointwise'"]),
    "fma within fusion + no fusion": ({"fma": "within_fusion"}, ["'fma'", "fma = 'never'"]),
    "unknown matmul_input": ({"matmul_input": "bf17"}, ["'matmul_input'", "bf16"]),
    "unknown accumulate": ({"reduction_accumulate": "fp128"}, ["'reduction_accumulate'"]),
    "narrow accumulate": ({"matmul_accumulate": "bf16"}, ["'matmul_accumulate'", "not emulated", "'fp32'"]),
    "tf32 storage": ({"storage": "tf32"}, ["'storage'", "matmul_input"]),
    "unknown decomposition": ({"decompositions": ["xla"]}, ["'decompositions'", "inductor"]),
    "decompositions not a list": ({"decompositions": "inductor"}, ["'decompositions'", "list"]),
    "unknown op override": ({"op_overrides": {"aten.mull": {"compute": "storage"}}},
                            ["op_overrides.aten.mull", "no op"]),
    "bad op key": ({"op_overrides": {"mul": {"compute": "storage"}}}, ["op_overrides.mul"]),
    "unknown override field": ({"op_overrides": {"aten.mul": {"precision": "storage"}}},
                               ["op_overrides.aten.mul", "'precision'"]),
    "unknown override scalars": ({"op_overrides": {"aten.add": {"scalars": "sometimes"}}},
                                 ["op_overrides.aten.add.scalars", "'round_to_storage'"]),
    "empty override": ({"node_overrides": {"n3": {}}}, ["node_overrides.n3", "sets nothing", "scalars"]),
    "bad node id": ({"node_overrides": {"x12": {"contract_fma": False}}},
                    ["node_overrides.x12", "'n12'"]),
    "non-bool flag": ({"node_overrides": {"n12": {"contract_fma": "no"}}},
                      ["node_overrides.n12.contract_fma", "true or false"]),
    "missing required": ({"fusion": None}, ["missing", "fusion"]),
    "empty name": ({"name": " "}, ["'name'", "non-empty"]),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD))
def test_bad_policy_rejected_with_field_and_fix(case: str) -> None:
    changes, fragments = BAD[case]
    text = _toml_with(**changes)
    with pytest.raises(PolicyError) as err:
        policy_from_toml(text)
    message = str(err.value)
    missing = [f for f in fragments if f not in message]
    assert not missing, f"{case}: message {message!r} lacks {missing}"
    assert isinstance(err.value, ValueError)


def test_a_partial_policy_names_its_bad_value_before_its_missing_fields() -> None:
    """Trial 62: ``name = "x"`` and ``fma = "sometimes"`` got only "missing field(s) ..."."""
    with pytest.raises(PolicyError, match=r"field 'fma': unknown value 'sometimes'; use one of 'never', 'within_fusion'"):
        policy_from_toml('name = "x"\nfma = "sometimes"\n')
    with pytest.raises(PolicyError, match=r"missing field\(s\) description, .*roundoff policy show inductor-cpu"):
        policy_from_toml('name = "x"\n')


def test_unparseable_toml() -> None:
    with pytest.raises(PolicyError, match="does not parse"):
        policy_from_toml("name = [")


def test_save_load_and_get_policy_by_path(tmp_path: Path) -> None:
    custom = Policy(**{**_fields(PRESETS["inductor-gpu"]), "name": "mine",
                       "node_overrides": {"n7": OpOverride(contract_fma=False)}})  # fmt: skip
    path = save_policy(custom, tmp_path / "mine.toml")
    assert load_policy(path) == custom
    assert get_policy(str(path)) == custom
    assert get_policy(path) == custom


def test_get_policy_names_and_errors(tmp_path: Path) -> None:
    assert get_policy("xla-2.9") is PRESETS["xla-2.9"]
    assert get_policy(PRESETS["fp64"]) is PRESETS["fp64"]
    assert [p.name for p in list_policies()] == list(PRESETS)
    with pytest.raises(PolicyError, match=r"unknown policy 'xla-3.0'.*eager"):
        get_policy("xla-3.0")
    with pytest.raises(PolicyError, match=r"unknown policy 'inductor-cpuu': did you mean 'inductor-cpu'\?"):
        get_policy("inductor-cpuu")  # (trial 61: the CLI suggested, the library did not)
    with pytest.raises(PolicyError, match="cannot read policy file"):
        get_policy(str(tmp_path / "absent.toml"))
    with pytest.raises(TypeError, match="preset name"):
        get_policy(42)  # type: ignore[arg-type]
    bad = tmp_path / "bad.toml"
    bad.write_text(_toml_with(fma="within_fusion"))
    with pytest.raises(PolicyError, match=r"bad\.toml.*'fma'"):
        get_policy(str(bad))


def test_hand_built_policy_with_wrong_types_rejected() -> None:
    bad = Policy(**{**_fields(PRESETS["eager"]), "rounding": "every_op"})
    with pytest.raises(PolicyError, match="'rounding'.*RoundingPoint"):
        get_policy(bad)
    bad = Policy(**{**_fields(PRESETS["eager"]),
                    "op_overrides": {"aten.add": OpOverride(scalars="round_to_storage")}})  # type: ignore[arg-type]  # fmt: skip
    with pytest.raises(PolicyError, match=r"op_overrides\.aten\.add\.scalars.*ScalarMixing"):
        get_policy(bad)


def test_division_key_is_optional_and_round_trips() -> None:
    """Oracle: tomllib's parse of the emitted text; an older file without the key reads as ieee."""
    gpu = PRESETS["inductor-gpu"]
    assert tomllib.loads(policy_to_toml(gpu))["division"] == "reciprocal_multiply"
    assert policy_from_toml(policy_to_toml(gpu)) == gpu
    without = _toml_with(division=None)
    assert "division" not in tomllib.loads(without)
    assert policy_from_toml(without).division is Division.IEEE
    bad = Policy(**{**_fields(PRESETS["eager"]), "division": "ieee"})
    with pytest.raises(PolicyError, match="'division'.*Division"):
        get_policy(bad)
