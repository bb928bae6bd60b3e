"""Hazard lint: numeric traps in a plan, each with a message a user can act on.

Each rule reads one node of the plan (graph + decisions); rules marked *dynamic* also read the
oracle's per-node value ranges (`Ranges`: max |x| and max x of every node in the fp64 run).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.fx

from roundoff.analyze.naming import op_name
from roundoff.analyze.result import Hazard
from roundoff.analyze.verdict import EXCESS_LIMIT
from roundoff.capture.program import NODE_ID, node_source, value_inputs
from roundoff.numerics import FORMATS, get_format, is_low_precision, round_to
from roundoff.ops.classes import OpClass
from roundoff.plan.cache import GraphCache
from roundoff.plan.fma import is_division
from roundoff.plan.model import NodeDecision, Plan

_aten = torch.ops.aten
_EXP_LOG = {_aten.exp.default, _aten.log.default, _aten.exp2.default, _aten.expm1.default, _aten.log1p.default}
_ADD_SUB = {_aten.add.Tensor, _aten.sub.Tensor}
_MAX = {_aten.amax.default, _aten.max.default, _aten.max.dim}
_EQ = {_aten.eq.Tensor, _aten.ne.Tensor, _aten.ge.Tensor, _aten.le.Tensor}
_SUMS = {_aten.sum.default, _aten.sum.dim_IntList, _aten.mean.default, _aten.mean.dim}
_FP16_MAX = FORMATS["fp16"].max_finite
_EXP_LIMIT = {torch.float16: math.log(_FP16_MAX), torch.bfloat16: 88.7, torch.float32: 88.7}
_UNIT = {d: get_format(d).eps / 2 for d in (torch.bfloat16, torch.float16, torch.float32)}  # unit roundoff


def finite_range(values: torch.Tensor) -> torch.Tensor:
    """[min, max] of `values`' finite elements, not read (+inf, -inf where none is finite): the
    non-finite ones masked to each side's neutral value (boolean indexing would read the host)."""
    lo = torch.nan_to_num(values, nan=math.inf, posinf=math.inf, neginf=math.inf).amin()
    hi = torch.nan_to_num(values, nan=-math.inf, posinf=-math.inf, neginf=-math.inf).amax()
    return torch.stack([lo, hi])


@dataclass(frozen=True)
class Ranges:
    """Oracle value ranges per node id (dynamic rules are skipped for nodes not listed)."""

    absmax: dict[str, float] = field(default_factory=dict)
    max: dict[str, float] = field(default_factory=dict)


def _nid(n: object) -> str:
    return n.meta.get(NODE_ID, n.name) if isinstance(n, torch.fx.Node) else ""


def _dtype(n: torch.fx.Node) -> torch.dtype | None:
    v = n.meta.get("val")
    return v.dtype if isinstance(v, torch.Tensor) else None


def _held(n: torch.fx.Node, d: NodeDecision | None) -> torch.dtype | None:
    """The dtype the plan holds `n`'s result in: its storage dtype where it rounds the result there,
    else its compute dtype (a node a fixed policy keeps in fp32 no longer overflows fp16)."""
    if d is not None and not d.rounds_result and d.compute_dtype is not None:
        return d.compute_dtype
    return d.storage_dtype if d is not None and d.storage_dtype is not None else _dtype(n)


def _numel(n: torch.fx.Node) -> int:
    v = n.meta.get("val")
    return v.numel() if isinstance(v, torch.Tensor) else 0


def _reads_rounded(d: NodeDecision | None, p: torch.fx.Node, plan: Plan) -> bool:
    """Whether a consumer with decision `d` sees producer `p` rounded to its storage dtype; a value made from
    no floating value (a ``full``, an ``arange``) is, and so is a view, select or copy of rounded values
    (trial 62: an RWKV step's ``exp(u + k[t])`` of two inputs)."""
    pd = plan.decisions.get(_nid(p))
    if not is_low_precision(_dtype(p)):
        return True
    if p.op == "placeholder" or (pd is not None and pd.rounds_result) or (d is not None and _nid(p) in d.rounded_inputs):
        return True
    sources = [a for a in value_inputs(p) if isinstance(_dtype(a), torch.dtype) and _dtype(a).is_floating_point]
    if not sources:  # made in its dtype from no floating value (``full(-1e4, dtype=bf16)``: trial 63, under eager;
        # ``full_like(k, -1e38)``, which reads k's shape only: trial 94)
        return True
    return bool(pd is not None and pd.op_class is OpClass.DATA_MOVEMENT
                and all(_reads_rounded(pd, a, plan) for a in sources))


def _where(n: torch.fx.Node) -> str:
    src = node_source(n)
    return f"`{op_name(n)}` ({_nid(n)}{' at ' + src if src else ''})"


def _half_ulp(x: float, dtype: torch.dtype | None) -> float:
    """Half an ulp of |x| in `dtype` (fp32 when unknown): the largest rounding error at x."""
    unit = _UNIT.get(dtype or torch.float32, 2.0**-24)  # 2^-p: half the spacing at 1.0
    return 2.0 ** math.floor(math.log2(x)) * unit if x > 0 else 0.0


Rule = Callable[[torch.fx.Node, "NodeDecision | None", Plan, Ranges], "str | None"]


def product_words(mul: torch.fx.Node) -> str:
    """How a report names an FMA site's product: a division's is ``a * (1/b)`` (see plan.fma)."""
    return "the product `a * (1/b)` inside `div`" if is_division(mul) else f"`{op_name(mul)}`"


def _significant_bits(x: float) -> int:
    """Bits of `x`'s significand from its leading to its last 1 bit (0 for 0; 53 for non-finite)."""
    if not math.isfinite(x):
        return 53
    n, _ = abs(float(x)).as_integer_ratio()
    return (n >> ((n & -n).bit_length() - 1)).bit_length() if n else 0


def _operand_bits(a: object, d: NodeDecision | None, plan: Plan) -> int:
    """Significand bits the multiply `d` reads operand `a` with: a Python number's own (or those of its
    rounding to `d.scalar_format`), a tensor's storage format's when read rounded, else its compute's."""
    if isinstance(a, bool):
        return 1
    if isinstance(a, (int, float)):
        bits = _significant_bits(a)
        return min(bits, get_format(d.scalar_format).mantissa_bits + 1) if d is not None and d.scalar_format else bits
    if not isinstance(a, torch.fx.Node):
        return 53
    dt = _dtype(a)
    if dt is None or not dt.is_floating_point:
        return 53
    if d is not None and d.input_format:
        return get_format(d.input_format).mantissa_bits + 1
    held = dt if _reads_rounded(d, a, plan) else (plan.decisions[_nid(a)].compute_dtype if _nid(a) in plan.decisions else dt)
    held = held if isinstance(held, torch.dtype) and held.is_floating_point else torch.float32
    return get_format(held).mantissa_bits + 1 if held != torch.float64 else 53


def fma_can_err(plan: Plan, d: NodeDecision | None) -> bool:
    """Whether the contracted FMA at `d` can differ from the unfused add: False where the product is
    exact in the accumulation format (its operands' significands fit in it together, e.g. bf16 x bf16
    in fp32: 8 + 8 <= 24 bits; overflow and underflow of the product aside), or no FMA is contracted."""
    if d is None or d.fma is None or not d.fma.contracted:
        return False
    mul = plan.program.node(d.fma.mul_id)
    if is_division(mul):
        return True  # a * (1/b): the reciprocal is not exact
    md = plan.decisions.get(d.fma.mul_id)
    acc = d.compute_dtype if isinstance(d.compute_dtype, torch.dtype) else torch.float32
    acc_bits = 53 if acc == torch.float64 else get_format(acc).mantissa_bits + 1
    return sum(_operand_bits(a, md, plan) for a in mul.args[:2]) > acc_bits


def _fma_cancellation(n: torch.fx.Node, d: NodeDecision | None, plan: Plan, r: Ranges) -> str | None:
    if not fma_can_err(plan, d):
        return None
    assert d is not None and d.fma is not None
    mul = plan.program.node(d.fma.mul_id)
    other = n.args[1 - d.fma.operand]
    same_product = isinstance(other, torch.fx.Node) and other.target == mul.target and other.args == mul.args
    feeds = [u for u in n.users if u.target in _EXP_LOG]
    size, result = r.absmax.get(d.fma.mul_id), r.absmax.get(_nid(n))
    cancels = size is not None and result is not None and result < size * 2.0**-8
    if not (same_product or feeds or cancels):
        return None
    err = f" (up to {_half_ulp(size, _dtype(mul)):.2g} here)" if size else ""
    return (
        f"{_where(n)}: FMA contraction computes {product_words(mul)} ({d.fma.mul_id}) exactly but its other operand "
        f"rounded, so the result keeps the product's rounding error{err} instead of cancelling"
        + (" (both sides are the same product: the exact answer is 0)" if same_product else "")
        + (f"; `{op_name(feeds[0])}` amplifies it" if feeds else "")
        + ". Fix: forbid contraction here (OpOverride(contract_fma=False)) or compute the product once."
    )


def _exp_of_difference(n: torch.fx.Node, d: NodeDecision | None, plan: Plan, r: Ranges) -> str | None:
    if n.target not in _EXP_LOG or not n.args or not isinstance(n.args[0], torch.fx.Node):
        return None
    src = n.args[0]
    sd = plan.decisions.get(_nid(src))
    if src.target not in _ADD_SUB or sd is None:
        return None
    ops = [a for a in src.args[:2] if isinstance(a, torch.fx.Node)]
    fma = fma_can_err(plan, sd)
    mixed = len(ops) == 2 and _reads_rounded(sd, ops[0], plan) != _reads_rounded(sd, ops[1], plan)
    if not (mixed or fma):
        return None
    how = "FMA-contracted" if fma else "one rounded to storage, one not"
    fix = ("forbid contraction here (OpOverride(contract_fma=False))" if fma else
           "read both operands the same way: keep the rounded one in fp32 where it is stored (a change blame "
           "--against oracle tries, keeping it where it fixes an output), or round the other one to the same format "
           "in the code")
    return (
        f"{_where(n)} of {_where(src)}, whose operands are held at different precisions ({how}): a "
        f"difference that should be small or 0 can come out large, and `{op_name(n)}` magnifies it. "
        f"Fix: {fix}."
    )


def _only_in_denominators(n: torch.fx.Node) -> bool:
    """Whether every use of `n` is an addition whose every use divides by it (``x / (1 + exp(-x))``, the
    sigmoid and SiLU of Inductor's decompositions): an inf there makes the quotient 0, its limit."""
    adds = list(n.users)
    return bool(adds) and all(
        a.target in (_aten.add.Tensor, _aten.add.Scalar) and a.users and all(
            (q.target is _aten.div.Tensor and len(q.args) > 1 and q.args[1] is a and q.args[0] is not a)
            or q.target is _aten.reciprocal.default for q in a.users)
        for a in adds)


def _exp_overflow(n: torch.fx.Node, d: NodeDecision | None, plan: Plan, r: Ranges) -> str | None:
    if n.target is not _aten.exp.default or not isinstance(n.args[0], torch.fx.Node):
        return None
    if _only_in_denominators(n):  # (trial 72: F.silu of large negative values, an overflow losing nothing)
        return None
    top = r.max.get(_nid(n.args[0]))
    held = _held(n, d) or torch.float32
    limit = _EXP_LIMIT.get(held, 88.7)
    if top is None or top <= limit:
        return None
    others = ("subtract the maximum first (x - amax(x)) where its values are normalised, as softmax does (a log of "
              "them is F.log_softmax's to take: in 16 bits small ones underflow to 0), or use an op that stays in "
              "range (torch.sigmoid, F.logsigmoid, logsumexp)")
    arg = _held(n.args[0], plan.decisions.get(_nid(n.args[0])))
    # exp turns its argument's absolute rounding into its relative error: an argument near `top` held in 16 bits
    # makes exp `top` times that format's rounding off, beyond the limit past 16 (trial 103: an fp16 attention's
    # scores near 40, exp taken in fp32 as advised, 44x fp16's rounding off fp64)
    wider = (f" Its argument is held in {arg} as well, whose rounding near {top:.3g} exp multiplies by about "
             f"{top:.3g}: compute the argument in fp32 too (the ops that make it), or subtract the maximum first."
             if arg in _UNIT and arg != torch.float32 and top > EXCESS_LIMIT else "")
    return (  # the fix that always applies first where it suffices (trial 74: a VAE's KL term, `logvar.exp()`)
        f"{_where(n)}: its argument reaches {top:.3g} in the fp64 oracle, beyond {limit:.3g} where exp overflows "
        f"in {held}. " + (f"Compute it in fp32 (`x.float().exp()`), where it fits; or {others}.{wider}"
                          if top <= _EXP_LIMIT[torch.float32] else f"fp32 overflows there too: {others}.")
    )


def _max_subtraction_mismatch(n: torch.fx.Node, d: NodeDecision | None, plan: Plan, r: Ranges) -> str | None:
    if n.target is not _aten.sub.Tensor or not isinstance(n.args[1], torch.fx.Node) or n.args[1].target not in _MAX:
        return None
    m, x = n.args[1], n.args[0]
    if not isinstance(x, torch.fx.Node) or not m.args or m.args[0] is not x:
        return None
    word = {True: "rounded", False: "unrounded"}
    x_here, m_here = _reads_rounded(d, x, plan), _reads_rounded(d, m, plan)
    x_there = _reads_rounded(plan.decisions.get(_nid(m)), x, plan)
    if x_here == m_here == x_there:
        return None
    return (
        f"{_where(n)}: `x - amax(x)` reads x {word[x_here]} and the max {word[m_here]} (amax itself read x "
        f"{word[x_there]}): x can exceed its own max, so the difference can be > 0 and a following exp can "
        f"exceed 1 or overflow. Fix: round x and its max the same way before subtracting."
    )


def _mixed_comparison(n: torch.fx.Node, d: NodeDecision | None, plan: Plan, r: Ranges) -> str | None:
    ops = [a for a in n.args[:2] if isinstance(a, torch.fx.Node)]
    if n.target not in _EQ or len(ops) != 2:
        return None
    if _reads_rounded(d, ops[0], plan) == _reads_rounded(d, ops[1], plan) or _never_tied(ops, r):
        return None
    consequence = (
        "In a max/amax backward this empties the tie mask, the gradient is divided by a zero count and becomes NaN."
        if _counted(n) else  # (trial 95: a `maximum`'s backward was said to make NaN; a tie there moves gradient)
        "A tie decided otherwise moves what is computed from it (in a maximum/minimum's backward, the gradient "
        "between the two operands).")
    return (
        f"{_where(n)} compares {_where(ops[0])} and {_where(ops[1])} at different precisions (one rounded to "
        f"storage, one not): values that are equal in the program can compare unequal. {consequence} Fix: round "
        f"both operands the same way here (keep the max and its input in one format)."
    )


def _never_tied(ops: list[torch.fx.Node], r: Ranges) -> bool:
    """Whether a comparison of `ops` cannot tie in the fp64 oracle's run by a margin no rounding closes: one is
    a single value and every value of the other is far smaller in magnitude (trial 98: T5's fp16 clamp at
    +-(65504 - 1000) flagged on activations near 5)."""
    single = [o for o in ops if _numel(o) == 1]
    if len(single) != 1:
        return False
    other = ops[1 - ops.index(single[0])]
    bound, top = r.max.get(_nid(single[0])), r.absmax.get(_nid(other))
    return bound is not None and top is not None and top < abs(bound) * (1 - 2.0**-6)


def _counted(n: torch.fx.Node, hops: int = 4) -> bool:
    """Whether comparison `n`'s outcome is summed (through casts and views): a count of ties, which a max's
    backward divides by."""
    frontier = [n]
    for _ in range(hops):
        frontier = [u for f in frontier for u in f.users]
        if any(u.target in _SUMS for u in frontier):
            return True
    return False


def _fp16_overflow(n: torch.fx.Node, d: NodeDecision | None, plan: Plan, r: Ranges) -> str | None:
    if _held(n, d) != torch.float16:  # (checked first: the screen probes only the ranges a rule reads)
        return None
    top = r.absmax.get(_nid(n))
    if top is None or top <= _FP16_MAX:
        return None
    if r.max.get(_nid(n), math.inf) <= _FP16_MAX and any(_is_mask(p, r) for p in n.all_input_nodes):
        return None  # a mask at fp16's lowest value pushed lower: -inf there means what the mask means
    fix = ("scale the values down or compute this node in bf16/fp32" if top <= torch.finfo(torch.float32).max
           else "fp32 and bf16 cannot hold it either: rewrite it to stay in range (subtract the max before exp, "
           "work in log space, rescale)")
    return f"{_where(n)}: reaches {top:.3g} in the fp64 oracle, beyond fp16's 65504: it becomes inf in fp16. Fix: {fix}."


def _is_mask(p: torch.fx.Node, r: Ranges) -> bool:
    """Whether operand `p` reaches fp16's lowest finite value (an additive attention mask, finfo.min)
    and nothing near its largest: its large magnitudes are all negative."""
    low, high = r.absmax.get(_nid(p)), r.max.get(_nid(p))
    return low is not None and high is not None and low >= _FP16_MAX and high < low and high <= _FP16_MAX


def _narrow_reduction(n: torch.fx.Node, d: NodeDecision | None, plan: Plan, r: Ranges) -> str | None:
    if n.target not in _SUMS or d is None or not n.args or not isinstance(n.args[0], torch.fx.Node):
        return None
    terms = _numel(n.args[0]) // max(_numel(n), 1)
    acc = d.compute_dtype
    if not is_low_precision(acc) or terms < 256:
        return None
    unit = get_format(acc).eps / 2
    return (
        f"{_where(n)}: sums {terms} terms accumulating in {acc}: once the sum is ~{int(1 / unit)} times a "
        f"term, each new term falls below half an ulp and is lost. Fix: accumulate in fp32."
    )


def _absorbed_epsilon(n: torch.fx.Node, d: NodeDecision | None, plan: Plan, r: Ranges) -> str | None:
    """``x + eps`` where eps itself rounds to 0 in the format the op reads it in or rounds its result
    to: where x is 0 (a zero variance) the epsilon no longer keeps a later sqrt/division finite. An
    epsilon merely below half an ulp of large x is harmless (fp64 does not see it there either)."""
    if n.target is not _aten.add.Tensor or not isinstance(n.args[1], float) or not isinstance(n.args[0], torch.fx.Node):
        return None
    eps = abs(n.args[1])
    formats = [f for f in ((d.scalar_format if d is not None else None), _dtype(n) if d is not None and d.rounds_result else None) if f]
    lost = next((f for f in formats if eps > 0 and float(round_to(torch.tensor([eps], dtype=torch.float64), f)[0]) == 0.0), None)
    if lost is None:
        return None
    name = lost if isinstance(lost, str) else str(lost).removeprefix("torch.")
    return (
        f"{_where(n)}: adds {eps:g}, which rounds to 0 in {name}: where the other operand is 0 (a zero "
        f"variance, an empty mask's count) the epsilon vanishes and a later sqrt or division sees 0. Fix: use "
        f"an epsilon {name} can hold, or clamp the denominator (`count.clamp_min(1)`); adding it in fp32 "
        f"(`x.float() + {eps:g}`) keeps the forward finite, but a gradient divided by so small an epsilon can "
        f"still overflow when it is cast back to {name}."
    )


def _running_sum(n: torch.fx.Node, d: NodeDecision | None, plan: Plan, r: Ranges) -> str | None:
    """The last of a chain of adds at one source line, each reading the one before (a loop's ``total =
    total + x``), held in bf16/fp16: every addition rounds the running total to that format, an error
    that grows with the total where each add alone is correctly rounded. Said for chains of
    `_RUNNING` adds or more, at the chain's end."""
    held = _held(n, d)
    src = node_source(n)
    if n.target is not _aten.add.Tensor or not is_low_precision(held) or src is None:
        return None
    if n not in _FORWARD.get(plan.program.graph_module, (plan.program.graph,), lambda: _forward(plan.program)):
        return None  # autograd summing the gradients of a loop's slices: its adds, not the user's total
    if any(u.target is _aten.add.Tensor and node_source(u) == src and n in u.args for u in n.users):
        return None  # not the chain's end
    length, cur = 1, n
    while (prev := next((a for a in cur.args if isinstance(a, torch.fx.Node) and a.target is _aten.add.Tensor
                         and node_source(a) == src), None)) is not None:
        length, cur = length + 1, prev
    if length < _RUNNING:
        return None
    fmt = str(held).removeprefix("torch.")
    return (
        f"{_where(n)}: a running total of {length} additions held in {fmt} (a loop's `total = total + x`): "
        f"every addition rounds the total to {fmt}, an error that grows with the total. Fix: accumulate in "
        "fp32 (`total = total.float() + x`) or sum the stacked terms (`torch.stack(xs).sum(0, dtype=torch.float32)`)."
    )


_RUNNING = 16  # adds in a chain before `_running_sum` says it
_FORWARD: GraphCache[frozenset[torch.fx.Node]] = GraphCache()


def _forward(program: object) -> frozenset[torch.fx.Node]:
    """The nodes the program's forward outputs are computed from (its backward's are the rest)."""
    outs = [a for a in program.output_args()[: program.num_forward_outputs] if isinstance(a, torch.fx.Node)]
    seen: set[torch.fx.Node] = set()
    while outs:
        n = outs.pop()
        if n not in seen:
            seen.add(n)
            outs.extend(n.all_input_nodes)
    return frozenset(seen)

#: Hazards that accumulate rounding over many correctly rounded ops: a node with one is flagged on its
#: outputs' paths (an output beyond the limit there fails, as where a node diverges).
ACCUMULATION_HAZARDS = frozenset({"narrow-reduction", "narrow-running-sum"})
#: Hazards of a comparison that rounding decides (a tie with a stored maximum, one side read unrounded): where
#: it turns out otherwise the result is NaN or another choice, whatever the figures say.
ROUNDING_DECIDED_HAZARDS = frozenset({"mixed-precision-comparison", "max-subtraction-mismatch"})

RULES: dict[str, Rule] = {
    "fma-cancellation": _fma_cancellation,
    "exp-of-difference": _exp_of_difference,
    "exp-overflow": _exp_overflow,
    "max-subtraction-mismatch": _max_subtraction_mismatch,
    "mixed-precision-comparison": _mixed_comparison,
    "fp16-overflow": _fp16_overflow,
    "narrow-reduction": _narrow_reduction,
    "absorbed-epsilon": _absorbed_epsilon,
    "narrow-running-sum": _running_sum,
}


def lint(plan: Plan, ranges: Ranges | None = None) -> tuple[Hazard, ...]:
    """Every hazard `RULES` find in `plan`; with oracle `ranges` also the value-dependent ones."""
    ranges = ranges or Ranges()
    out = []
    for n, d, kind, rule, found in _table(plan)[0]:
        if rule is None:
            out.append(found)
        elif (msg := rule(n, d, plan, ranges)) is not None:
            out.append(Hazard(kind, _nid(n), op_name(n), node_source(n), msg))
    return tuple(out)


def ranged_ids(plan: Plan) -> frozenset[str]:
    """Ids of the nodes whose oracle range some rule of `lint(plan, ranges)` reads."""
    return _table(plan)[1]


class _Asking(dict):
    """A `Ranges` field that records the ids a rule reads (and has none of them)."""

    def __init__(self, asked: set[str]) -> None:
        super().__init__()
        self.asked = asked

    def get(self, key: object, default: object = None) -> object:
        self.asked.add(key)  # type: ignore[arg-type]
        return default


_Entry = tuple[torch.fx.Node, "NodeDecision | None", str, "Rule | None", "Hazard | None"]
_TABLES: GraphCache[tuple[tuple[_Entry, ...], frozenset[str]]] = GraphCache()


def _table(plan: Plan) -> tuple[tuple[_Entry, ...], frozenset[str]]:
    """Per (node, rule) in lint's order, what does not depend on ranges, once per plan (its graph and
    decisions): a rule that read no range is a fixed `Hazard` (kept) or None (left out); one that read a
    range is kept to run again on the ranges given. Also the ids the rules read."""
    gm = plan.program.graph_module
    return _TABLES.get(gm, (gm.graph, plan.decisions), lambda: _build_table(plan))


def _build_table(plan: Plan) -> tuple[tuple[_Entry, ...], frozenset[str]]:
    entries: list[_Entry] = []
    ids: set[str] = set()
    for n in plan.program.graph.nodes:
        if n.op != "call_function":
            continue
        d = plan.decisions.get(_nid(n))
        for kind, rule in RULES.items():
            asked: set[str] = set()
            msg = rule(n, d, plan, Ranges(absmax=_Asking(asked), max=_Asking(asked)))
            if asked:
                ids |= asked
                entries.append((n, d, kind, rule, None))
            elif msg is not None:
                entries.append((n, d, kind, None, Hazard(kind, _nid(n), op_name(n), node_source(n), msg)))
    return tuple(entries), frozenset(ids)
