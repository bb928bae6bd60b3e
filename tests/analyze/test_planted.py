"""Findings ranked by cause: on programs with one planted defect each (tests/analyze/planted.py), the
first finding names the planted node. The independent evidence that the planted node is where the
accuracy goes: real eager (or fp64) shows the damage, and the same program with only the planted
node written the careful way (its `fixed` form below) is accurate."""

from __future__ import annotations

import inspect

import pytest
import torch

from roundoff.analyze import check
from roundoff.capture import capture
from roundoff.capture.program import node_id, node_source
from tests.analyze.planted import PLANTED, Planted


def _planted_id(program, case: Planted) -> str:
    return [n for n in program.graph.nodes if n.target is case.op][case.occurrence].meta["roundoff_id"]


@pytest.mark.parametrize("case", PLANTED, ids=[c.name for c in PLANTED])
def test_first_finding_names_the_planted_node(case: Planted) -> None:
    xs = case.inputs()
    program = capture(case.fn, *xs, backward=case.backward)
    nid = _planted_id(program, case)
    r = check(program, xs, case.policy, against=case.against)
    assert r.diverges, f"precondition: the planted defect shows; repro: check({case.name})"
    # the planted node is the first finding, or the node that amplifies the first finding's rounding
    # (a bf16 `mul` before `exp`: the finding names the product first, then `exp`, in one sentence)
    amplified = len(r.culprits) > 1 and r.culprits[1] == nid and r.node(nid).amplifies_read is not None
    assert r.culprits and (r.culprits[0] == nid or amplified), f"culprits {r.culprits}, planted {nid}; repro: check({case.name})"
    first_cause = r.explanations[0]  # the report leads with the cause, the failing outputs after it
    assert f"({nid} " in first_cause or f"({nid})" in first_cause, r.explanations


def test_the_planted_defects_show_in_real_eager() -> None:
    """Independent evidence: real eager PyTorch on each program is far from its fp64 run."""
    for case in PLANTED:
        if case.backward or case.name == "bf16-positions":  # (its explicit bf16 cast stays in an fp64 eager run)
            continue
        xs = case.inputs()
        got = case.fn(*xs).double()
        want = case.fn(*(x.double() for x in xs))
        bad = ~got.isfinite() & want.isfinite()
        rel = float((got - want)[want.isfinite() & got.isfinite()].norm() / want[want.isfinite()].norm())
        assert bool(bad.any()) or rel > 1e-3 or case.policy != "eager", f"{case.name}: eager is accurate (rel {rel:.2g})"


@pytest.mark.parametrize("name", ["fma-cancellation-fp32", "user-softmax-backward"])
def test_blame_fix_contains_the_planted_node_or_its_operand(name: str) -> None:
    """Where blame's change space can express the fix (policy decisions, not the user's code)."""
    from roundoff.blame import blame

    case = next(c for c in PLANTED if c.name == name)
    xs = case.inputs()
    program = capture(case.fn, *xs, backward=case.backward)
    nid = _planted_id(program, case)
    node = program.node(nid)
    near = {nid} | {p.meta["roundoff_id"] for p in node.all_input_nodes}
    found = blame(program, case.policy, against=case.against, repro=False)
    assert found.status.value == "fixed" and {c.node_id for c in found.changes} & near, found.changes


def test_ranking_is_by_cause_not_by_bits() -> None:
    """A value near zero with many ULPs but tiny error must not outrank the planted cancellation."""
    case = next(c for c in PLANTED if c.name == "variance-by-moments")
    xs = case.inputs()
    program = capture(case.fn, *xs)
    r = check(program, xs, case.policy, against=case.against)
    sub = r.node(_planted_id(program, case))
    assert sub.node_id in r.culprits[:2] and sub.op.endswith("sub") and sub.own_excess > 100 * max(
        n.own_excess for n in r.nodes if n.node_id != sub.node_id
    )
    exact = case.fn(xs[0].double())
    assert float((case.fn(*xs).double() - exact).norm() / exact.norm()) > 1  # eager loses it all


#: Planted programs whose defect a precision decision fixes at the planted node itself; the others are
#: fixed by keeping its operands in fp32 for it (the planted node then computes from fp32 values).
_FIXED_AT_THE_NODE = ("eps-absorbed-fp16", "fma-cancellation-fp32", "softmax-no-max-fp16", "bf16-positions",
                      "fp16-norm-overflow", "tiny-reciprocal-fp16", "bf16-timesteps")
#: log-of-sigmoid has no precision fix: sigmoid(x) for x < -103 underflows fp32 too (logsigmoid keeps it).
_NO_PRECISION_FIX = ("log-of-sigmoid",)


@pytest.mark.parametrize("name", [c.name for c in PLANTED if c.name not in _NO_PRECISION_FIX])
def test_blames_fix_changes_the_planted_node_and_passes_the_oracle(name: str) -> None:
    from roundoff.analyze.output_floor import oracle_floors
    from roundoff.analyze.verdict import oracle_output_passes, path_dtype
    from roundoff.blame import blame
    from roundoff.execute import run_plan
    from roundoff.plan import plan
    from roundoff.policy.serialize import policy_from_toml

    case = next(c for c in PLANTED if c.name == name)
    xs = case.inputs()
    program = capture(case.fn, *xs, backward=case.backward)
    nid = _planted_id(program, case)
    b = blame(program, case.policy, against=case.against, repro=False)
    assert b.fixed and nid in b.affects, ([c.label for c in b.changes], b.affects)
    if name in _FIXED_AT_THE_NODE:
        assert nid in {c.node_id for c in b.changes}, [c.label for c in b.changes]
    if case.against != "oracle":
        return
    fixed = run_plan(plan(program, policy_from_toml(b.policy_toml)), xs)  # the policy blame saves
    exact, floors = oracle_floors(program, xs)
    out = program.output_args()
    for i, (value, oracle, node) in enumerate(zip(fixed, exact, out)):  # the fixed plan, judged by fp64 directly
        assert oracle_output_passes(value, oracle, path_dtype(node), floors.get(i, 0.0))


def test_a_kept_fp32_value_and_an_unrounded_scalar_are_what_the_careful_eager_program_computes() -> None:
    """blame's eps-absorbed fix (keep sqrt and the add in fp32, add 1e-8 unrounded) equals real eager of
    the program written the careful way, ``m / (sqrt(v.float()) + 1e-8)`` then ``.half()``, bit for bit."""
    import torch

    from roundoff.blame.changes import Change, ChangeKind, apply_changes
    from roundoff.execute import run_plan
    from roundoff.plan import plan
    from roundoff.policy.registry import get_policy

    case = next(c for c in PLANTED if c.name == "eps-absorbed-fp16")
    m, v = case.inputs()
    program = capture(case.fn, m, v)
    sqrt, add = (_planted_id(program, c) for c in (
        Planted("", case.fn, case.inputs, torch.ops.aten.sqrt.default), case))
    changes = [Change(0, sqrt, ChangeKind.KEEP_FP32, "sqrt"), Change(1, add, ChangeKind.KEEP_FP32, "add"),
               Change(1, add, ChangeKind.SCALAR_FP32, "add")]
    (emu,) = run_plan(plan(program, apply_changes(get_policy("eager"), changes)), (m, v))
    careful = (m / (torch.sqrt(v.float()) + 1e-8)).half()
    assert torch.equal(emu, careful) and bool(emu.isfinite().all())


def test_a_kept_value_stays_fp32_through_views_as_the_real_fp32_tensor_would() -> None:
    """keep_fp32 on a matmul whose result is viewed (transpose, as a ViT's patch embedding is) keeps
    the view unrounded too: the emulation equals real eager of the program written with .float()."""
    import torch

    from roundoff.blame.changes import Change, ChangeKind, apply_changes
    from roundoff.execute import run_plan
    from roundoff.plan import plan
    from roundoff.policy.registry import get_policy

    g = torch.Generator().manual_seed(0)
    a, b = (torch.randn(16, 8, generator=g) + 8).bfloat16(), torch.randn(8, 16, generator=g).bfloat16()

    def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        x = (a @ b).t()
        return x - x.mean(-1, keepdim=True)

    program = capture(f, a, b)
    mm, mean = (next(n.meta["roundoff_id"] for n in program.graph.nodes if n.target is op)
                for op in (torch.ops.aten.mm.default, torch.ops.aten.mean.dim))
    kept = [Change(0, mm, ChangeKind.KEEP_FP32, "mm"), Change(1, mean, ChangeKind.KEEP_FP32, "mean")]
    (emu,) = run_plan(plan(program, apply_changes(get_policy("eager"), kept)), (a, b))
    x = (a.float() @ b.float()).t()
    assert torch.equal(emu, (x - x.mean(-1, keepdim=True)).bfloat16())


def test_blame_says_why_log_of_sigmoid_has_no_precision_fix() -> None:
    """No change fixes it, and blame names the planted node with the count of values fp32 cannot hold:
    where torch's cast of fp64's sigmoid to fp32 is 0 and fp64's is not (real fp32 sigmoid loses more:
    its exp(-x) overflows below x = -88.7)."""
    import re

    import torch

    from roundoff.blame import blame

    case = next(c for c in PLANTED if c.name == "log-of-sigmoid")
    (x,) = case.inputs()
    program = capture(case.fn, x)
    b = blame(program, case.policy, against=case.against, repro=False)
    exact = torch.sigmoid(x.double())
    lost = int(((exact.float() == 0) & (exact != 0)).sum())
    assert b.status.value == "no_fix" and lost > 0
    note = next(n for n in b.notes if "fp32 cannot hold" in n)
    assert f"({_planted_id(program, case)})" in note and re.search(rf"\b{lost} value\(s\)", note), note


def test_an_op_amplifying_its_bf16_operand_names_that_operand() -> None:
    """exp of a bf16 product: exp is exact for the value it reads; its 88x error is the product's bf16
    rounding, amplified (recomputed from the unrounded product it is correctly rounded). So the first
    finding names the product, where blame's fix keeps precision, then exp (a new user read
    "`exp` loses accuracy itself" as a fault of exp)."""
    import torch

    from roundoff.blame import blame

    case = next(c for c in PLANTED if c.name == "large-argument-exp")
    xs = case.inputs()
    a, b = (x.double() for x in xs)
    exact = torch.exp(a * b) * 1e-30
    for product, within in (((a * b).bfloat16().double(), False), (a * b, True)):  # independent of roundoff
        value = (torch.exp(product) * 1e-30).bfloat16().double()
        rel = float((value - exact).norm() / exact.norm())
        floor = float((exact.bfloat16().double() - exact).norm() / exact.norm())
        assert (rel <= 16 * floor) == within, (rel, floor)
    program = capture(case.fn, *xs)
    r = check(program, xs, case.policy, against=case.against)
    mul = next(n for n in program.graph.nodes if n.target is torch.ops.aten.mul.Tensor).meta["roundoff_id"]
    exp = next(n for n in program.graph.nodes if n.target is torch.ops.aten.exp.default).meta["roundoff_id"]
    assert r.culprits[:2] == (mul, exp) and r.node(exp).amplifies_read == mul
    first = next(e for e in r.explanations if not e.startswith("output "))
    assert first.startswith(f"`mul` ({mul} at ") and f"`exp` ({exp} at " in first and "amplifies" in first
    assert mul in {c.node_id for c in blame(program, case.policy, against=case.against, repro=False).changes}


@pytest.mark.parametrize("name", ["softmax-no-max-fp16", "fp16-norm-overflow", "tiny-reciprocal-fp16"])
def test_an_overflow_is_said_once_not_at_every_node_it_reaches(name: str) -> None:
    """Trial 27: one fp16 exp overflow gave the cause's sentence, then "reaches ... beyond fp16's 65504:
    it becomes inf" for the exp and for each node downstream (masked_fill, sum). Those fp16-overflow
    hazards stay in the hazard list; the findings say the overflow once, at its cause."""
    case = next(c for c in PLANTED if c.name == name)
    xs = case.inputs()
    program = capture(case.fn, *xs, backward=case.backward)
    r = check(program, xs, case.policy, against=case.against)
    assert any(h.kind == "fp16-overflow" for h in r.hazards)  # precondition: the hazard rule fires
    assert sum("overflows float16" in e for e in r.explanations) == 1, r.explanations
    assert not any("it becomes inf in fp16" in e for e in r.explanations), r.explanations


def test_two_overflowing_exps_are_worded_alike() -> None:
    """Trial 28 (a hand-written CLIP logsumexp in both directions, fp16, no max): the first `exp` read
    "overflows float16", the identical second one "makes inf itself". Oracle: fp64's exp is beyond
    fp16's range at both (torch)."""
    g = torch.Generator().manual_seed(0)
    logits = (torch.randn(8, 8, generator=g) * 4 + 8).half()
    assert float(logits.double().exp().max()) > 65504

    def lse_both(x):
        return torch.log(torch.exp(x).sum(1)).mean() + torch.log(torch.exp(x.t()).sum(1)).mean()

    r = check(capture(lse_both, logits), (logits,), "eager", against="oracle")
    assert sum(e.startswith("`exp`") and "overflows float16" in e for e in r.explanations) == 2, r.explanations
    assert not any("makes inf itself" in e for e in r.explanations), r.explanations  # the log reads the overflow


def test_values_below_fp16s_normal_range_are_said_so_not_amplified() -> None:
    """Trial 28 (a VAE's KL term in fp16, std ~1e-3): `var = std * std` falls below fp16's normal range,
    where subnormals hold fewer bits; the report said `mul` "amplifies that error about 16.5x", which
    a product cannot do. Oracle: fp64's var correctly rounded to fp16 is itself off by more than 4 units
    of fp16's rounding (torch's cast)."""
    g = torch.Generator().manual_seed(0)
    logstd = (torch.randn(64, 16, generator=g) * 0.3 - 7).half().requires_grad_()
    var64 = logstd.detach().double().exp() ** 2
    assert float((var64.half().double() - var64).norm() / var64.norm()) > 4 * 2**-11

    def kl(logstd):
        std = torch.exp(logstd)
        var = std * std
        return (0.5 * (var - 1.0 - torch.log(var))).sum(-1).mean()

    r = check(capture(kl, logstd, backward=True), (logstd,), "eager", against="oracle")
    said = [e for e in r.explanations if e.startswith("`mul`") and "below float16's normal range" in e]
    assert len(said) == 1, r.explanations
    assert not any(e.startswith("`exp`") and "amplifies" in e for e in r.explanations), r.explanations


def naive_norm_tiny_eps(x: torch.Tensor) -> torch.Tensor:
    mu = x.mean(-1, keepdim=True)
    var = (x * x).mean(-1, keepdim=True) - mu * mu
    return (x - mu) / torch.sqrt(var + 1e-12)


def test_zeros_an_epsilon_cannot_rescue_are_traced_to_the_cancellation_that_makes_them() -> None:
    """Trial 37: a naive fp16 variance plus eps=1e-12 (0 in fp16) was reported at the `add` of the
    epsilon, "computed from `sub`" with no line, and the epsilon fix alone leaves the NaN. The add's
    sentence names the `sub` at its line as where the zeros come from. Oracle: eager fp16 (its
    variance is <= 0 where fp64's is positive, with eps 1e-5 too) and fp64."""
    g = torch.Generator().manual_seed(1)
    x = (0.95 + 0.003 * torch.randn(64, 48, generator=g)).half()
    wide = x.double()
    var64 = (wide * wide).mean(-1) - wide.mean(-1) ** 2
    var16 = (x * x).mean(-1) - x.mean(-1) * x.mean(-1)
    assert bool((var64 > 0).all()) and bool((var16 <= 0).any())  # an epsilon fp16 holds does not help:
    assert not bool(torch.isfinite((x - x.mean(-1, keepdim=True)) / torch.sqrt(var16[:, None] + 1e-5)).all())
    program = capture(naive_norm_tiny_eps, x)
    r = check(program, (x,), "eager", against="oracle")
    sub = next(n for n in program.graph.nodes if n.target is torch.ops.aten.sub.Tensor
               and n.args[0].target is torch.ops.aten.mean.dim)
    line = f"{sub.meta['roundoff_id']} at {sub.meta['roundoff_source']}"
    add = next(e for e in r.explanations if e.startswith("`add` ("))
    assert f"the zeros come from `sub` ({line})" in add and "an epsilon alone does not fix it" in add, add


def naive_variance_norm(x: torch.Tensor) -> torch.Tensor:
    mu = x.mean(-1, keepdim=True)
    var = (x * x).mean(-1, keepdim=True) - mu * mu
    return (x - mu) / torch.sqrt(var + 1e-5)


def test_a_subnormal_difference_of_normal_values_is_called_a_possible_cancellation() -> None:
    """Trial 38: a naive fp16 variance of near-constant rows (about 1e-6, subnormal in fp16) was told
    "GradScaler or compute it in bf16/fp32"; bf16 left it 168-676x off. Its sentence says it may be a
    cancellation of values that are not small. Oracle: fp64 (the variance is below fp16's normal
    range, the means it subtracts are not)."""
    g = torch.Generator().manual_seed(2)
    level = 0.9 + 0.1 * torch.rand(64, 1, generator=g)
    x = (level + 1e-3 * torch.randn(64, 48, generator=g)).half()
    wide = x.double()
    var = (wide * wide).mean(-1) - wide.mean(-1) ** 2
    tiny = torch.finfo(torch.float16).tiny
    assert bool((var < tiny).all()) and bool(((wide * wide).mean(-1) > tiny).all())
    r = check(capture(naive_variance_norm, x), (x,), "eager", against="oracle")
    said = [e for e in r.explanations if "below float16's" in e and e.startswith("`sub`")]
    assert said and "may be a cancellation" in said[0], r.explanations


class _ResidualBlock(torch.nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(d, 2 * d), torch.nn.Linear(2 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.layer_norm(x.float(), (x.shape[-1],)).type_as(x)  # the user's fp32 LayerNorm
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(y)))  # RESIDUAL: stored in bf16, near 64


def test_a_cast_that_only_reads_a_stored_value_names_the_node_that_made_it() -> None:
    """Trial 41: a bf16 residual stream near 64 is stored by one block and read by the next block's
    ``x.float()``; the finding named that cast ("correctly rounded in bfloat16" at the LayerNorm's line,
    where nothing rounds) instead of the residual add that made the value. Oracle: the add's own line."""
    torch.manual_seed(0)
    inp = torch.nn.Linear(32, 32).bfloat16()
    blocks = torch.nn.Sequential(_ResidualBlock(32), _ResidualBlock(32)).bfloat16()

    def step(x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return ((blocks(inp(x) + 64.0).float() - 64.0 - target) ** 2).mean()

    g = torch.Generator().manual_seed(1)
    x, target = torch.randn(16, 32, generator=g).bfloat16(), torch.randn(16, 32, generator=g) * 0.5
    result = check(step, (x, target), "inductor-cpu", against="oracle", backward=True)
    lines, start = inspect.getsourcelines(_ResidualBlock.forward)
    residual = start + next(i for i, text in enumerate(lines) if "RESIDUAL" in text)
    first = result.explanations[0]
    assert first.startswith("`add` (") and f"test_planted.py:{residual} in Sequential.0), read in bfloat16 by `convert_element_type`" in first, first  # (the first block's)


def test_an_overflowing_operand_is_not_called_a_finite_input() -> None:
    """Trial 52: "makes inf from finite inputs: its operand `sum` exceeds the range" contradicts itself:
    the operand is inf as stored; what is finite is fp64's value of it."""
    case = next(c for c in PLANTED if c.name == "fp16-norm-overflow")
    r = check(case.fn, case.inputs(), case.policy, case.against, backward=case.backward)
    said = next(e for e in r.explanations if e.startswith("`sqrt`"))
    assert "inf where fp64 is finite" in said and "fp64's values are finite, the stored ones inf" in said
    assert "from finite inputs" not in said


def test_a_division_that_makes_nan_names_its_zero_divisor_not_its_zero_numerator() -> None:
    """Trial 92: a GAT's ``div(max_grad, tie_count)`` made NaN where its tie count came out 0; the finding named
    the numerator (a gradient 0 by the model's structure, fp64's noise not 0), which was 0 too. Here both
    operands lose a small addend in bf16: 0 / 0. Oracle: torch's bf16 arithmetic makes both 0, fp64 neither,
    and the fp64 quotient is finite."""
    def ratio(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        numerator = (x + 1e-6) - x
        return numerator / ((y + 1e-3) - y)

    x, y = torch.full((8,), 4.0).bfloat16(), torch.full((8,), 16.0).bfloat16()
    assert bool((((x + 1e-6) - x) == 0).all()) and bool((((y + 1e-3) - y) == 0).all())
    assert bool(ratio(x.double(), y.double()).isfinite().all())
    subs = {node_source(n): node_id(n) for n in capture(ratio, x, y).nodes() if str(n.target) == "aten.sub.Tensor"}
    divisor = subs[f"test_planted.py:{ratio.__code__.co_firstlineno + 2}"]
    result = check(ratio, (x, y), "eager", against="oracle")
    said = next(e for e in result.explanations if "makes NaN" in e)
    assert f"its operand `sub` ({divisor}) is 0 where fp64 is not" in said, said
