"""`check(..., nodes="all")` with every figure gathered during the run and read once
(`roundoff.analyze.deferred`) against the interpreted observer, which reads each node's figures as
the run reaches it: the oracle here is that independent path. Same verdicts, figures, first
divergence and NaN origin; where a decision needs values, the interpreter's result (fallback)."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from roundoff.analyze import check
from roundoff.analyze.deferred import NeedsValues, observe_deferred
from roundoff.analyze.observe import NodeObserver
from roundoff.analyze.verdict import Rule
from roundoff.capture import capture
from roundoff.execute.interpreter import Lockstep
from roundoff.execute.node_numerics import OracleNumerics
from roundoff.execute.run import complete_inputs, plan_numerics
from roundoff.plan.shared import plan_pair
from roundoff.zoo.registry import get_workload
from tests.execute.hf_models import LossOf

transformers = pytest.importorskip("transformers")


def differences(a: object, b: object, path: str = "") -> list[str]:
    """Where two results differ: floats beyond fp64 summation order (1e-9 relative), anything else exactly."""
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        return [d for f in dataclasses.fields(a) for d in differences(getattr(a, f.name), getattr(b, f.name),
                                                                        f"{path}.{f.name}")]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [f"{path}: {len(a)} != {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float):
        same = a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-9 * max(abs(a), abs(b))
        return [] if same else [f"{path}: {a!r} != {b!r}"]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


FELL_BACK = "every node was examined with the interpreter: "


def _same_but_how(interpreted: object, deferred: object) -> list[str]:
    """Differences but how the nodes were examined (`examined_with`, and the note of a fallback)."""
    def how_aside(r: object) -> object:
        return dataclasses.replace(r, examined_with="-", notes=tuple(n for n in r.notes if not n.startswith(FELL_BACK)))
    return differences(how_aside(interpreted), how_aside(deferred))


def _llama(device: str) -> tuple:
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64,
    )
    model = LossOf(transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).train().to(device))
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(0)).to(device)
    program = capture(model, ids, backward=True)
    return program, tuple(t.detach() for t in program.example_inputs)


@pytest.fixture(scope="module")
def llama() -> tuple:
    return _llama("cpu")


@pytest.mark.parametrize(("policy", "against", "rule"), [
    ("inductor-gpu", "eager", "same"),
    ("inductor-gpu", "eager", "allclose"),  # (the rule decided from a gathered flag where the two differ)
    ("eager", "oracle", "allclose"),
])
def test_deferred_every_node_check_equals_the_interpreted_one_on_a_transformers_llama(
    llama: tuple, policy: str, against: str, rule: str,
) -> None:
    program, inputs = llama
    interpreted = check(program, inputs, policy, against, nodes="all", rule=rule, nodes_with="interpreter")
    deferred = check(program, inputs, policy, against, nodes="all", rule=rule, nodes_with="deferred")
    assert (interpreted.examined_with, deferred.examined_with) == ("interpreter", "deferred")
    assert len(deferred.nodes) > 200
    assert _same_but_how(interpreted, deferred) == []


def test_a_decision_that_needs_values_falls_back_to_the_interpreter() -> None:
    """The softmax backward NaN: the first non-finite node needs its values (which elements are new)."""
    w = get_workload("softmax-backward")
    fn, xs = w.build(), w.make_inputs()
    program = capture(fn, *xs, backward=w.backward)
    interpreted = check(program, xs, "inductor-gpu", "eager", nodes="all", nodes_with="interpreter")
    deferred = check(program, xs, "inductor-gpu", "eager", nodes="all", nodes_with="deferred")
    assert interpreted.nan_origin is not None
    assert deferred.examined_with == "interpreter"
    assert deferred.notes[-1].startswith(FELL_BACK + "deferred figures were tried, but at `exp` (")
    assert _same_but_how(interpreted, deferred) == []
    plan_a, plan_b = plan_pair(program, "inductor-gpu", "eager")
    sides = [plan_numerics(plan_a), OracleNumerics(), plan_numerics(plan_b)]
    with pytest.raises(NeedsValues):
        observe_deferred(plan_a.program, sides, xs, lambda cls: cls(sides[0], has_reference=True, tol=1e-4),
                         recompute=True, graphed=False)


class _Pooled(torch.nn.Module):
    """A bf16 max over rows whose winners fp64 picks differently (close scores): selection flips."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values, _ = self.proj(x).max(dim=1)
        return values.float().square().mean()


def test_selection_flips_from_gathered_counts_equal_the_interpreted_ones() -> None:
    torch.manual_seed(0)
    model = _Pooled().to(torch.bfloat16)
    x = torch.randn(64, 48, 32, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)
    program = capture(model, x, backward=True)
    interpreted = check(program, (x,), "inductor-gpu", "oracle", nodes="all", rule="allclose", nodes_with="interpreter")
    deferred = check(program, (x,), "inductor-gpu", "oracle", nodes="all", rule="allclose", nodes_with="deferred")
    assert deferred.examined_with == "deferred"
    assert _same_but_how(interpreted, deferred) == []
    plan = plan_pair(program, "inductor-gpu", "eager")[0]
    sides = [plan_numerics(plan), OracleNumerics()]
    inputs = complete_inputs(plan.program, (x,))

    def make(cls: type[NodeObserver]) -> NodeObserver:
        return cls(sides[0], has_reference=False, tol=1e-4, rule=Rule.ALLCLOSE)

    gathered, *_ = observe_deferred(plan.program, sides, inputs, make, recompute=True, graphed=False)
    observer = make(NodeObserver)
    with torch.inference_mode():
        Lockstep(plan.program, sides, on_node=observer).run_inputs(inputs)
    assert observer.flips, "the max must choose other rows than fp64 somewhere for this test to mean anything"
    assert gathered.flips == observer.flips
    assert all(torch.equal(a, b) for k in observer.flips for a, b in zip(gathered.flip_values[k], observer.flip_values[k]))


def test_nodes_with_names_its_choices() -> None:
    w = get_workload("bf16-chain")
    with pytest.raises(ValueError, match="nodes_with='cuda-graph': choose one of auto, interpreter, deferred, graphed"):
        check(w.build(), w.make_inputs(), "inductor-gpu", nodes="all", nodes_with="cuda-graph")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="a CUDA graph needs CUDA")
def test_graphed_every_node_check_equals_the_interpreted_one_on_cuda() -> None:
    program, inputs = _llama("cuda")
    screened = check(program, inputs, "inductor-gpu", "eager")  # the graphed screen: its captured run first
    interpreted = check(program, inputs, "inductor-gpu", "eager", nodes="all", nodes_with="interpreter")
    graphed = check(program, inputs, "inductor-gpu", "eager", nodes="all")  # (auto: graphed on CUDA)
    again = check(program, inputs, "inductor-gpu", "eager", nodes="all")  # a replay of the captured run
    assert (graphed.examined_with, again.examined_with) == ("graphed", "graphed")
    assert _same_but_how(interpreted, graphed) == []
    assert _same_but_how(interpreted, again) == []
    assert screened.mode == "screen" and not any("screen failed" in n for n in screened.notes)
    assert differences(check(program, inputs, "inductor-gpu", "eager"), screened) == []  # captured anew


@pytest.mark.parametrize("scale", [1e-6, 0.3, 1.0, 40.0])
@pytest.mark.parametrize("noise", [0.0, 1e-3, 0.49, 0.51, 3.0])
def test_scale_decision_from_figures_equals_order_one_scale(scale: float, noise: float) -> None:
    """The deferred `same` decides `order_one_scale(fp64, ref) == 1` from its gathered figures (fp64's
    largest magnitude from its range, the two norms from the reference's row): the values' own test
    is the oracle, on values around its 0.5-of-the-norm threshold and its 1.0 magnitude one."""
    from roundoff.analyze.hazards import finite_range
    from roundoff.analyze.verdict import order_one_scale, unscaled

    g = torch.Generator().manual_seed(int(noise * 100) + int(scale * 7))
    fp64 = torch.randn(257, dtype=torch.float64, generator=g) * scale
    ref = (fp64 + noise * fp64.norm() / math.sqrt(fp64.numel()) * torch.randn(257, dtype=torch.float64, generator=g))
    ref = ref.to(torch.bfloat16)
    lo, hi = finite_range(fp64).tolist()
    by_figures = unscaled(max(-lo, hi), float((ref.double() - fp64).norm()), float(fp64.norm()))
    assert by_figures == (order_one_scale(fp64, ref) == 1.0)


def test_finite_range_leaves_out_nan_and_infinities() -> None:
    """[min, max] over the finite elements, (+inf, -inf) where none is: boolean indexing is the oracle."""
    g = torch.Generator().manual_seed(3)
    from roundoff.analyze.hazards import finite_range

    for dtype in (torch.float64, torch.float32, torch.bfloat16):
        v = torch.randn(1000, generator=g).to(dtype) * 100
        v[torch.randint(0, 1000, (50,), generator=g)] = math.nan
        v[torch.randint(0, 1000, (20,), generator=g)] = math.inf
        v[torch.randint(0, 1000, (20,), generator=g)] = -math.inf
        finite = v[v.isfinite()]
        assert finite_range(v).tolist() == [finite.min().item(), finite.max().item()]
    none = torch.tensor([math.nan, math.inf, -math.inf], dtype=torch.float64)
    assert finite_range(none).tolist() == [math.inf, -math.inf]
