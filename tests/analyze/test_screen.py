"""`check`'s screen (outputs and checkpoints first, nodes only where they fail) against every node.

The oracle of every test is the full per-node check (``nodes="all"``), computed independently in the
same test, or torch's own fp16 ``exp`` against fp64. One small compile (the lowered screen).
"""

from __future__ import annotations

import pytest
import torch

from roundoff.analyze import check
from roundoff.analyze.check import _plan
from roundoff.analyze.screen import Screened, checkpoints, range_nodes, screen
from roundoff.capture import capture
from roundoff.execute import plan_numerics
from roundoff.execute.node_numerics import OracleNumerics
from roundoff.zoo import get_workload

ZOO = ("bf16-chain", "fma-cancel", "fma-cancel-vector", "softmax-backward", "thunder-matmul", "llama-block")


def _zoo(name: str) -> tuple:
    w = get_workload(name)
    xs = w.make_inputs()
    return xs, capture(w.build(), *xs, backward=w.backward)


@pytest.mark.parametrize("name", ZOO)
def test_screen_gives_every_nodes_verdict_origin_and_causes(name: str) -> None:
    xs, prog = _zoo(name)
    for policy in ("eager", "inductor-gpu"):
        for against in ("eager", "oracle"):
            full = check(prog, xs, policy, against=against, nodes="all")
            fast = check(prog, xs, policy, against=against)
            what = f"repro: check(zoo:{name}, {policy!r}, against={against!r}) screen vs nodes='all'"
            assert full.mode == "every-node" and len(full.examined) == len(full.nodes) > 0
            assert fast.diverges == full.diverges, what
            if full.diverges:  # examined again, every node: the same findings
                assert fast.mode == "every-node", what
                assert (fast.first_divergent, fast.nan_origin, fast.culprits) == (
                    full.first_divergent, full.nan_origin, full.culprits), what
                assert fast.explanations == full.explanations, what
            else:
                assert fast.mode == "screen" and fast.examined == () and fast.checkpoints, what
                assert [o.passes for o in fast.outputs] == [o.passes for o in full.outputs], what


def _masked_overflow(x: torch.Tensor) -> torch.Tensor:
    """exp overflows fp16 for x > 11.1 (fp64 does not); the output masks it: finite everywhere."""
    y = torch.exp(x)
    return torch.where(torch.isinf(y), torch.zeros_like(y), y) * 0.5


def _masked_inputs() -> tuple[torch.Tensor]:
    return (torch.tensor([1.0, 12.0, -3.0, 11.5], dtype=torch.float16),)


def _masked_division(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """y * 1e-4 underflows fp16 to 0 where y = 1e-4 (fp64: 1e-8), so x / it is inf where fp64's 1e4
    fits fp16; the output masks the inf: finite everywhere."""
    r = x / (y * 1e-4)
    return torch.where(torch.isinf(r), torch.zeros_like(r), r) * 0.5


def test_a_checkpoint_catches_nan_inf_the_output_hides() -> None:
    """Policy and reference lose the value alike, so the outputs agree; fp64 is finite and fits fp16
    there: a NaN/inf origin that only a checkpoint at the division can see."""
    xs = (torch.tensor([1e-4, 1.0, 2.0, 1e-4], dtype=torch.float16), torch.tensor([1e-4, 1.0, 3.0, 1e-4], dtype=torch.float16))
    exact = xs[0].double() / (xs[1].double() * 1e-4)
    assert bool(torch.isinf(xs[0] / (xs[1] * 1e-4)).any()) and bool(exact.half().isfinite().all())
    prog = capture(_masked_division, *xs)
    full = check(prog, xs, "eager", against="eager", nodes="all")
    assert not full.diverges and full.nan_origin is not None
    assert prog.node(full.nan_origin).target is torch.ops.aten.div.Tensor
    caught = check(prog, xs, "eager", against="eager", every=1)  # every node a checkpoint
    assert caught.mode == "every-node" and caught.nan_origin == full.nan_origin
    assert (caught.first_divergent, caught.culprits) == (full.first_divergent, full.culprits)
    missed = check(prog, xs, "eager", against="eager", every=1000)  # the last node only: masked there
    assert missed.mode == "screen" and not missed.diverges and missed.nan_origin is None


def test_screen_figures_stay_tensors_until_read() -> None:
    """Per-checkpoint counts and oracle ranges are one device tensor (no host read per node), equal to
    torch's own fp16 exp overflow count and fp64 range."""
    xs = _masked_inputs()
    prog = capture(_masked_overflow, *xs)
    p = _plan(prog, "eager")
    s = screen(p, [plan_numerics(p), OracleNumerics()], xs, every=1)
    assert isinstance(s, Screened) and isinstance(s.figures, torch.Tensor)
    assert s.figures.dtype == torch.float64 and s.figures.shape == (len(s.probed),)
    assert len([p for p in s.probed if p[1] == "nonfinite"]) == len(checkpoints(prog, 1))
    exp_id = next(n.meta["roundoff_id"] for n in prog.graph.nodes if n.target is torch.ops.aten.exp.default)
    x64 = xs[0].double()
    expected = int((torch.exp(xs[0]).isinf() & torch.exp(x64).isfinite()).sum())
    assert expected == 2  # exp(12) and exp(11.5) exceed fp16's 65504
    assert s.nonfinite_counts()[(exp_id, 0)] == expected
    assert exp_id in range_nodes(p)  # the fp16-overflow rule reads exp's range
    assert s.ranges().absmax[exp_id] == float(torch.exp(x64).abs().max())


def test_screen_keeps_value_hazards() -> None:
    """A clean screened run lists the same hazards as every node examined (oracle ranges probed): fp16
    exp overflows where the program masks it (fp64's exp reaches 1.6e5, beyond fp16's 65504)."""
    xs = _masked_inputs()
    prog = capture(_masked_overflow, *xs)
    full = check(prog, xs, "eager", against="eager", nodes="all")
    fast = check(prog, xs, "eager", against="eager", every=1000)
    assert fast.mode == "screen" and {"exp-overflow", "fp16-overflow"} & {h.kind for h in full.hazards}
    assert fast.hazards == full.hazards


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return bool(((a == b) | (a.isnan() & b.isnan())).all()) and a.dtype == b.dtype


def test_lowered_and_compiled_screens_equal_the_interpreter() -> None:
    """Lowered (a trace of the same emulator): bit for bit the interpreter's values and figures.
    Compiled, transcendentals are Inductor's: compared with the interpreter using Inductor's exp."""
    xs, prog = _zoo("fma-cancel-vector")
    p = _plan(prog, "inductor-gpu")
    runs = {
        ("interpreter", "eager"): screen(p, [plan_numerics(p), OracleNumerics()], xs, every=1),
        ("lowered", "eager"): screen(p, [plan_numerics(p), OracleNumerics()], xs, every=1, how="lowered"),
        ("interpreter", "inductor"): screen(p, [plan_numerics(p, "inductor"), OracleNumerics()], xs, every=1),
        ("compiled", "inductor"): screen(p, [plan_numerics(p), OracleNumerics()], xs, every=1, how="compiled",
                                         key=("test",)),
    }
    assert runs["interpreter", "eager"].nonfinite_counts()  # the FMA's inf is seen
    for want, got in ((("interpreter", "eager"), ("lowered", "eager")),
                      (("interpreter", "inductor"), ("compiled", "inductor"))):
        a, b = runs[want], runs[got]
        assert b.how == got[0] and a.probed == b.probed and _same_bits(a.figures, b.figures), got
        for side_a, side_b in zip(a.outputs, b.outputs):
            assert all(_same_bits(x, y) for x, y in zip(side_a, side_b)), got


def test_the_interpreted_screen_holds_the_oracles_parameters_as_stored_with_the_same_figures(monkeypatch) -> None:
    """check's screen on CPU runs the oracle as `NarrowHeldOracle` (no fp64 copy of a weight or of its
    transpose held from the forward to the backward): its figures and outputs are bit for bit those of
    `OracleNumerics`, the fp64 run converting every input (two zoo Llama blocks' training step, every
    node a checkpoint, against emulated eager)."""
    from roundoff.execute.narrow_oracle import NarrowHeldOracle
    from roundoff.plan.shared import plan_pair
    from tests.execute.test_recompute import _stack

    prog, xs = _stack(2)
    p, ref = plan_pair(prog, "inductor-gpu", "eager", _plan)
    wide = screen(p, [plan_numerics(p), OracleNumerics(), plan_numerics(ref)], xs, every=1)
    narrow = screen(p, [plan_numerics(p), NarrowHeldOracle(), plan_numerics(ref)], xs, every=1)
    assert wide.probed == narrow.probed and wide.nonfinite_counts() == {}
    assert _same_bits(wide.figures, narrow.figures)
    for side_w, side_n in zip(wide.outputs, narrow.outputs):
        assert all(a.dtype == b.dtype and _same_bits(a, b) for a, b in zip(side_w, side_n))
    loaded = []
    real = NarrowHeldOracle.load_input
    monkeypatch.setattr(NarrowHeldOracle, "load_input", lambda self, n, v: loaded.append(v.dtype) or real(self, n, v))
    assert check(prog, xs, "inductor-gpu", against="eager").mode == "screen"
    assert torch.bfloat16 in loaded  # check's screen is the one tested above


def test_bad_nodes_option_is_one_line() -> None:
    xs, prog = _zoo("bf16-chain")
    with pytest.raises(ValueError, match="nodes='some'"):
        check(prog, xs, "eager", nodes="some")


def test_a_screen_that_cannot_lower_falls_back_to_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    from roundoff import lower

    def refuse(*_a: object, **_k: object) -> None:
        raise RuntimeError("no lowering here\nsecond line")

    monkeypatch.setattr(lower, "lower_sides", refuse)
    xs, prog = _zoo("bf16-chain")
    got = check(prog, xs, "inductor-gpu", screen_with="lowered", every=3)
    want = check(prog, xs, "inductor-gpu", screen_with="interpreter", every=3)
    assert got.mode == want.mode == "screen" and [o.passes for o in got.outputs] == [o.passes for o in want.outputs]
    assert any("lowered screen failed (RuntimeError: no lowering here)" in n for n in got.notes), got.notes


def test_a_graphed_screen_needs_cuda_and_falls_back_to_the_interpreter() -> None:
    xs, prog = _zoo("bf16-chain")
    p = _plan(prog, "eager")
    with pytest.raises(ValueError, match="needs CUDA inputs"):
        screen(p, [plan_numerics(p), OracleNumerics()], xs, how="graphed")
    got = check(prog, xs, "eager", screen_with="graphed", every=3)
    assert got.mode == "screen" and any("graphed screen failed (ValueError" in n for n in got.notes), got.notes


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("name", ZOO)
def test_graphed_screen_equals_the_interpreter_on_cuda(name: str) -> None:
    """The interpreter's run replayed as a CUDA graph: bit for bit the interpreter's outputs and
    figures, on the capture inputs and on new ones (a replay reads the new values)."""
    w = get_workload(name)
    fn = w.build()
    fn = fn.cuda() if isinstance(fn, torch.nn.Module) else fn
    xs = tuple(x.detach().cuda().requires_grad_(x.requires_grad) for x in w.make_inputs())
    prog = capture(fn, *xs, backward=w.backward)
    p = _plan(prog, "inductor-gpu")
    sides = [plan_numerics(p), OracleNumerics(), plan_numerics(_plan(prog, "eager"))]
    other = tuple((x * 1.5).to(x.dtype) if x.is_floating_point() else x for x in xs)
    for inputs in (xs, other, xs):
        a = screen(p, sides, inputs, every=1)
        b = screen(p, sides, inputs, every=1, how="graphed", key=("test", name))
        assert b.how == "graphed" and a.probed == b.probed and _same_bits(a.figures, b.figures), name
        for side_a, side_b in zip(a.outputs, b.outputs):
            assert all(_same_bits(x, y) for x, y in zip(side_a, side_b)), name


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("name", ["fma-cancel-vector", "softmax-backward", "llama-block"])
def test_compiled_screen_on_cuda_gives_every_nodes_verdict(name: str) -> None:
    """On CUDA the default screen is graphed; it and the compiled one (Triton pinned:
    tests/lower/test_compiled_cuda.py) must run (no fallback note) and agree with every node examined."""
    w = get_workload(name)
    fn = w.build()
    fn = fn.cuda() if isinstance(fn, torch.nn.Module) else fn
    xs = tuple(x.detach().cuda().requires_grad_(x.requires_grad) for x in w.make_inputs())
    prog = capture(fn, *xs, backward=w.backward)
    for policy in ("eager", "inductor-gpu"):
        full = check(prog, xs, policy, nodes="all")
        for how in ("auto", "compiled"):
            fast = check(prog, xs, policy, screen_with=how)
            what = f"repro: check(zoo:{name} on CUDA, {policy!r}, screen_with={how!r}) screen vs nodes='all'"
            assert not any("screen failed" in n for n in fast.notes), (what, fast.notes)
            assert fast.diverges == full.diverges, what
            assert (fast.first_divergent, fast.nan_origin) == (full.first_divergent, full.nan_origin) or not full.diverges


def test_a_failing_screen_says_why_every_node_was_examined() -> None:
    xs, prog = _zoo("fma-cancel")
    r = check(prog, xs, "inductor-gpu", against="eager")
    assert r.mode == "every-node" and r.diverges
    nan_at = r.nan_origin  # exp's inf: the checkpoint at or after it trips the screen before the output
    assert nan_at is not None
    assert any(n.startswith("screened (") and "turned NaN/inf" in n and "every node was examined" in n for n in r.notes)
    from tests.analyze.planted import PLANTED

    case = next(c for c in PLANTED if c.name == "variance-by-moments")  # wrong by value, no NaN/inf
    xs = case.inputs()
    r = check(capture(case.fn, *xs), xs, "eager", against="oracle")
    assert r.mode == "every-node" and r.nan_origin is None
    failing = [o.name for o in r.outputs if not o.passes]
    assert failing and any(f"output `{failing[0]}`" in n and "by its values" in n for n in r.notes)
    assert not any("so it passes" in n for n in r.notes)  # it fails: the note does not say it passes


def test_an_output_the_screen_sends_to_every_node_that_then_passes_says_so() -> None:
    """Forty bf16 products, each correctly rounded and none amplifying nor alone moving the output, take
    it beyond 16x bf16's rounding against fp64 (ill-conditioned, not computed wrongly): the screen
    examines every node, the output passes, and the note says why, not only "beyond the limit"."""
    from tests.analyze.planted import lost_increments

    x = (torch.rand(4096, generator=torch.Generator().manual_seed(0)) + 1.0).to(torch.bfloat16)
    prog = capture(lost_increments, x)
    r = check(prog, (x,), "eager", against="oracle")
    assert r.mode == "every-node" and all(o.passes for o in r.outputs) and not r.diverges
    note = next(n for n in r.notes if n.startswith("screened ("))
    assert "by its values" in note and "no node on its path is flagged, so it passes" in note


def test_an_output_within_its_operand_floor_says_so_not_ill_conditioned() -> None:
    """A bf16 dot product whose terms cancel (trial 27's q_norm gradient, 13.7x its reference in the
    table after the screen's note said 'beyond the limit'): the screen holds the sum to fp64 correctly
    rounded; the every-node pass adds the terms' rounding (its operand floor), within which it passes.
    The note says which of the two made it pass. Oracle: the output's own figures."""
    g = torch.Generator().manual_seed(0)
    x = (1 + 0.01 * torch.randn(4096, generator=g)).bfloat16()
    y = (1.3 * torch.tensor([1.0, -1.0]).repeat(2048)).bfloat16()
    r = check(capture(lambda x, y: (x * y).sum(), x, y), (x, y), "eager", against="oracle")
    (o,) = r.outputs
    assert r.mode == "every-node" and o.passes and o.rmse_result <= 16 * o.rmse_reference
    note = next(n for n in r.notes if n.startswith("screened ("))
    assert "once the error its last op takes from its operands' rounding is counted" in note, note
    assert "ill-conditioned" not in note
    from roundoff.report.notes import shorten

    assert shorten(note) == note  # whole in a terminal (trial 107: cut before "counted", the verdict's reason)


def test_checkpoints_leave_out_uninitialised_memory_and_its_slices() -> None:
    """Trial 61: DeepseekV3's key states are ``new_empty`` filled slice by slice; the screen took the
    allocation's memory (NaN there, by chance) for a run turning NaN/inf and examined every node. Oracle:
    torch's semantics: ``new_empty`` and what slicing or filling part of it makes hold arbitrary bytes."""
    def filled(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        k = a.new_empty(*a.shape[:-1], 16)
        k[..., :8].copy_(a)
        k[..., 8:].copy_(b)
        return k * 2

    a, b = torch.randn(2, 4, 8).bfloat16(), torch.randn(2, 4, 8).bfloat16()
    program = capture(filled, a, b)
    picked = [str(n.target) for n in checkpoints(program, 1)]
    assert picked == ["aten.mul.Tensor"], picked
    assert len(checkpoints(capture(lambda x: (x * 2).sin() + 1, a), 1)) == 3  # nothing left out otherwise


def test_the_screens_reference_rmse_leaves_out_the_operand_floor_and_says_so() -> None:
    """Trial 70: one output showed two reference rmse figures, with and without --every-node. The screen
    judges against fp64 correctly rounded alone, a check of every node adds a matmul output's operand
    floor (`roundoff.analyze.output_floor`): never below the screen's, larger for some, and the screen's
    note says which is which. Oracle: the every-node check's own figures."""
    pytest.importorskip("transformers")
    from tests.execute.hf_models import llama

    module, xs = llama()
    prog = capture(module, *xs, backward=True)
    full = check(prog, xs, "eager", against="oracle", nodes="all")
    fast = check(prog, xs, "eager", against="oracle")
    assert fast.mode == "screen" and not full.diverges
    pairs = [(f.rmse_reference, s.rmse_reference) for f, s in zip(full.outputs, fast.outputs)]
    assert all(f >= s for f, s in pairs) and any(f > s for f, s in pairs), pairs
    assert any("operand floor" in n and "larger reference rmse" in n for n in fast.notes)
