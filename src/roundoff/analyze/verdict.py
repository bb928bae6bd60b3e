"""What a verdict of `check` means: the one place that defines when a node or an output fails.

**Scale-aware figures.** A node's error is judged by its normwise relative error against the fp64
oracle, ``||x - x64||_2 / ||x64||_2`` over the elements finite on both sides (`Metrics.norm_rel`),
never by ULPs: values near zero (sign changes, tiny gradients) give huge ULP counts for errors far
below the tensor's own scale.

**Excess over the format.** The best any run can return in a format ``w`` is the fp64 value
correctly rounded to ``w`` (`round_to`, RNE). A value's *excess* in ``w`` is

    excess = norm_rel(x vs x64) / max(norm_rel(round_w(x64) vs x64), u_w / 4)

with ``u_w = eps_w / 2`` the unit roundoff (the floor ``u_w / 4`` keeps a value the format holds
exactly, such as integers or zeros, from making any error infinitely excessive). A sum or mean is
also allowed the error its terms' own rounding causes (`reduction_floor`; for a matmul, the
rounding of its two operands, `matmul_floor`): a bias gradient that
cancels to 0 in exact arithmetic (BERT's key bias) is judged against its terms, not its tiny result. An excess of 1 is
a correctly rounded value; a clean bf16 eager run measures up to about 4 (`EXCESS_LIMIT`'s note).

**Node verdict against the oracle** (``against="oracle"``, also spelled ``"fp64"``):

- `Verdict.NONFINITE` when some element is NaN/inf where fp64 is finite (`Metrics.new_nonfinite`).
  Elements where fp64 is NaN or +-inf too (an attention mask built from ``-inf``, ``0/0`` in the
  user's code) are never held against the node. Nor, at first, is an infinity where fp64 is finite
  but beyond the node's format (`nonfinite_counts`: GPT-Neo's mask ``finfo(fp32).min`` plus another
  large negative value): such a node is judged `NONFINITE`, and named the origin, only when a later
  node that reads its infinity fails (an fp16 ``exp`` or ``sum`` that overflows before a softmax's
  division: NaN, or 0 where fp64 is finite).
- `Verdict.DIVERGES` when the node's *own* error is excessive: its local value (recomputed under
  the policy from fp64 operands, read as the plan reads them) has an excess above `EXCESS_LIMIT`
  in the node's *working format* (the lowest-precision float format among its storage format, its
  float operands' storage formats, the format the plan reads its operands in, the decision's
  ``input_format``: an fp32 upcast of a bf16 value, or an fp32 matmul whose operands an autocast
  policy rounds to bf16, is held to bf16's rounding; and the format its value is kept in downstream,
  `demanded_dtypes`: an fp32 ``sin`` of a large phase cast to bf16 before any use is held to bf16's
  rounding, since no error below it can reach an output).
  Without a local value (``local=False``) the node's total error is judged the same way.
  When the format's *range* cannot hold the node's values (fp64 correctly rounded to it is itself
  more than `EXCESS_LIMIT` roundings off: an epsilon that underflows in fp16, say), the node is
  judged against the format's precision alone (`own_excess`): it diverges when it loses them too.
- `Verdict.DIVERGES` also for a node whose value is 0 where fp64 is not and from which a later node
  makes NaN/inf (divides by it, takes its log): normwise figures hide a few such elements (an
  epsilon that fp16 rounds to 0 where the rest of the tensor is large), the NaN/inf does not.
- `Verdict.OK` otherwise. Inherited error never fails a node: the node that creates it does.

**Node verdict against a reference run** (``against="eager"`` or a policy): `Verdict.NONFINITE`
as above, else the chosen `Rule` between the node's value and the reference's, in the node's
storage dtype, over the elements where fp64 is finite.

**Output verdict**: an output fails when any element is NaN/inf where fp64 is finite, whatever the
reference does there (a reference that overflows too does not excuse it). Otherwise, against a
reference run, by the `Rule` over the elements where fp64 is finite. Against the oracle with the
default rule, an output is judged by its values (`oracle_output_passes`: its error in the narrowest
float format on its path, `path_dtype`, within `EXCESS_LIMIT` times the larger of that format's
rounding and, for an output a reduction, matmul or normalisation makes or one that is structurally
zero, the error its last op takes from its operands' rounding: `roundoff.analyze.output_floor`)
wherever a node on its path is flagged: it diverges (its own error beyond the limit), is not finite
where fp64 is (an ``exp`` overflowing in a sigmoid the loss absorbs fails the gradients it makes NaN,
not the loss), or *amplifies* an error beyond its format (a pointwise node whose total error is beyond
the limit in its working format and more than `EXCESS_LIMIT` times the largest error it reads: a
``cos`` of timesteps a correctly rounded bf16 cast made 916 instead of 917; see
`roundoff.analyze.culprits.amplifies`). With no flagged node on its path an output passes: its total
error alone cannot judge it, since a bf16 backward through a normalisation ends many roundings away
from the correctly rounded value with no defect anywhere (BatchNorm's weight gradient 27x, measured).
A flagged node whose effect stays within the limit at every output is a finding, not a failure.
`roundoff.blame`, which measures no nodes, judges the outputs `check` fails by the same value rule and
every other output only no worse than twice the policy's own error (`no_worse_than`): so the two agree
on what fails, and a program whose only divergence does not reach an output beyond the limit is found
within tolerance by `blame`. With `allclose`/`bitwise`,
by that rule against fp64 correctly rounded to the output's dtype.
Elements NaN in fp64 too are counted (`OutputVerdict.nan_in_fp64`) and reported, never failed.

`Rule.SAME` (default) is ``torch._dynamo.utils.same(ref, res, fp64_ref=x64, tol)``: RMSE against
fp64 within a multiplier of the reference's, with ``same``'s ``allclose`` taken at the output's own
scale where its values are all below 1 (`order_one_scale`, `same_rule`). `Rule.ALLCLOSE` is ``torch.allclose`` with
``torch.testing.assert_close``'s default rtol/atol for the dtype. `Rule.BITWISE` fails on any
differing bit (NaN payloads aside; -0.0 differs from 0.0).
"""

from __future__ import annotations

import enum
import functools
import logging
import math
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from roundoff.analyze.metrics import Metrics, rounding_norms
from roundoff.capture.program import value_inputs
from roundoff.numerics import get_format, same_bits
from roundoff.numerics.chunks import slices


class Verdict(str, enum.Enum):
    """A node's verdict (see the module docstring)."""

    OK = "ok"
    DIVERGES = "diverges"
    NONFINITE = "nonfinite"


class Rule(str, enum.Enum):
    """How a value is compared with a reference value (see the module docstring)."""

    SAME = "same"
    ALLCLOSE = "allclose"
    BITWISE = "bitwise"

    @classmethod
    def parse(cls, value: Rule | str) -> Rule:
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"unknown rule {value!r}; choose one of {', '.join(r.value for r in cls)}") from None


#: A node's local error may be this many times the rounding of its working format. Measured on
#: transformers Llama, GPT-2 and BERT (bf16, eager, forward+backward against the oracle): the largest
#: local excess of any node is 4.3 (bench/results/clean-models.md); the planted defects of
#: tests/analyze/planted.py that are judged by their excess measure 88 to inf at the planted node
#: (bench/results/planted-defects.md).
EXCESS_LIMIT = 16.0


#: Hazard kinds (`roundoff.analyze.hazards`) that say a node's values overflow its format.
OVERFLOW_HAZARDS = frozenset({"fp16-overflow", "exp-overflow"})


@functools.cache  # called several times per node: looked up once per dtype
def unit_roundoff(dtype: torch.dtype) -> float:
    """``eps / 2`` of `dtype`'s format; fp32's for dtypes roundoff has no format for."""
    try:
        return get_format(dtype).eps / 2
    except ValueError:
        return 2.0**-24


def working_dtype(storage: torch.dtype, operands: list[torch.dtype]) -> torch.dtype:
    """The lowest-precision float dtype among `storage` and the float `operands` (by unit roundoff)."""
    floats = [d for d in (storage, *operands) if isinstance(d, torch.dtype) and d.is_floating_point]
    return max(floats, key=unit_roundoff, default=storage)


def narrower(a: torch.dtype, b: torch.dtype) -> torch.dtype:
    """The lower-precision of two dtypes (by unit roundoff)."""
    return max((a, b), key=unit_roundoff)


def demanded_dtypes(graph: torch.fx.Graph, storage: Callable[[torch.fx.Node], Any]) -> dict[torch.fx.Node, torch.dtype]:
    """Per node, the precision its value is kept in downstream: over every path to an output, the
    narrowest float format on it (`storage(node)`: the format a node stores its value in), and of the
    paths the widest. An error below what every later rounding throws away cannot reach an output (an
    fp32 ``sin`` of a large phase, cast to bf16 before use: its fp32 error is a hundredth of a bf16 ulp),
    so a node is held to this format when it is narrower than its own. An output, and a value a
    non-float node reads (a comparison, an index), demand the node's own format."""
    demand: dict[torch.fx.Node, torch.dtype] = {}
    for n in reversed(graph.nodes):
        own = storage(n)
        own = own if isinstance(own, torch.dtype) and own.is_floating_point else None
        needs = []
        for u in n.users:
            need = demand.get(u) if u.op != "output" and _holds_float(storage(u)) else None
            needs.append(need if need is not None else own)
        needs = [d for d in needs if d is not None]
        widest = min(needs, key=unit_roundoff) if needs else own
        if own is not None or widest is not None:
            demand[n] = narrower(own, widest) if own is not None and widest is not None else (own or widest)
    return demand


def _holds_float(stored: Any) -> bool:
    """A node's stored format(s) (a dtype, or a tuple of them for a multi-output op) include a float."""
    parts = stored if isinstance(stored, tuple) else (stored,)
    return any(isinstance(d, torch.dtype) and d.is_floating_point for d in parts)


def excess(value: Metrics, floor: Metrics | float, dtype: torch.dtype, terms_rmse: float = 0.0) -> float:
    """`value`'s normwise relative error over `floor`'s (fp64 correctly rounded to `dtype`; its figures
    or its normwise relative error), the floor
    at least ``u / 4``; 0 for no error, inf when fp64 is all zeros and the value is not. A reduction
    passes `terms_rmse`, the RMS error its result inherits from its terms' own rounding (see
    `reduction_floor`): a sum that cancels to (nearly) 0 is held to that, not to its tiny result."""
    if value.rmse == 0.0:
        return 0.0
    if 0.0 < value.norm_rel < math.inf:
        rms = value.rmse / value.norm_rel  # of fp64's values
        floor_rel = floor if isinstance(floor, float) else floor.norm_rel
        return value.rmse / max(floor_rel * rms, unit_roundoff(dtype) / 4 * rms, terms_rmse)
    return value.rmse / terms_rmse if terms_rmse > 0 else math.inf


def reduction_floor(terms: torch.Tensor, numel: int, dtype: torch.dtype, mean: bool) -> float:
    """RMS error over a reduction's `numel` results that rounding each of its fp64 `terms` to `dtype`
    causes (random signs: ``u / 2 * ||terms||_2 / sqrt(numel)``, divided by the terms per result for
    a mean)."""
    if not numel or not terms.numel():
        return 0.0
    return reduction_floor_from(float(reduction_norm(terms)), terms.numel(), numel, dtype, mean)


def rounded_terms_floor(terms: torch.Tensor, numel: int, dtype: torch.dtype, mean: bool) -> float:
    """`reduction_floor`, or the RMS error the terms' actual rounding to `dtype` causes where that is larger
    (random signs: ``||round(terms) - terms||_2 / sqrt(numel)``, per term per result for a mean): a term
    below `dtype`'s normal range loses up to half its spacing there, far more than ``u/2`` of itself (trial
    102: a BART step's key-bias gradient, 0 by structure, summed the fp16 key gradients an attention's
    backward stores at 1e-6, its own rounding 77x ``u/2`` of those terms)."""
    floor = reduction_floor(terms, numel, dtype, mean)
    if not numel or not terms.numel() or not terms.is_floating_point():
        return floor
    lost, _ = rounding_norms(terms, get_format(dtype))
    return max(floor, lost / math.sqrt(numel) / (terms.numel() / numel if mean else 1.0))


def reduction_norm(terms: torch.Tensor) -> torch.Tensor:
    """``||terms||_2`` over the finite terms, in fp64, not read (`reduction_floor_from` finishes it)."""
    t = terms.double()
    return torch.linalg.vector_norm(t.masked_fill(~t.isfinite(), 0.0))


def reduction_floor_from(norm: float, terms: int, numel: int, dtype: torch.dtype, mean: bool) -> float:
    """`reduction_floor` from the terms' norm (`reduction_norm`) and count."""
    if not numel or not terms:
        return 0.0
    return unit_roundoff(dtype) / 2 * norm / math.sqrt(numel) / (terms / numel if mean else 1.0)


def matmul_floor(a: torch.Tensor, b: torch.Tensor, numel: int, dtype: torch.dtype) -> float:
    """RMS error over a matmul's `numel` results that rounding both fp64 operands `a` (..., m, k) and
    `b` (..., k, n) to `dtype` causes (random signs, each product off by two roundings:
    ``sqrt(2) * u / 2 * ||{a_ik b_kj}||_2 / sqrt(numel)``, where the products' norm squared is
    ``sum_k (sum_i a_ik^2)(sum_j b_kj^2)``, per batch): the `reduction_floor` of a dot product."""
    if not numel or a.dim() < 2 or b.dim() < 2:
        return 0.0
    return matmul_floor_from(float(matmul_norm_squared(a, b)), numel, dtype)


def matmul_norm_squared(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The norm squared of a matmul's products (`matmul_floor`), in fp64, not read."""
    a2 = a.double().nan_to_num(0.0, 0.0, 0.0).square().sum(-2)  # (..., k)
    b2 = b.double().nan_to_num(0.0, 0.0, 0.0).square().sum(-1)  # (..., k)
    return (a2 * b2).sum()


def matmul_floor_from(norm_squared: float, numel: int, dtype: torch.dtype) -> float:
    """`matmul_floor` from `matmul_norm_squared` read."""
    return math.sqrt(2.0) * unit_roundoff(dtype) / 2 * math.sqrt(norm_squared) / math.sqrt(numel) if numel else 0.0


def own_excess(own: Metrics, format_loss: float, dtype: torch.dtype, terms_rmse: float = 0.0) -> float:
    """The score a node's own error is judged and ranked by: `own.excess`, or, where the format's range
    cannot hold the node's values (`format_loss`, the normwise relative error of fp64 correctly rounded
    to `dtype`, above ``EXCESS_LIMIT * u``: underflow or overflow) and the node loses them too, its
    error over the format's precision alone, ``norm_rel / (u / 4)``. A sum or matmul whose error stays
    within `EXCESS_LIMIT` times what its terms' rounding causes (`terms_rmse`) is judged by `own.excess`
    alone: a gradient that cancels to a value fp16 cannot hold is noise of its terms, not a loss."""
    u = unit_roundoff(dtype)
    score = own.excess or 0.0
    within_terms = terms_rmse > 0 and own.rmse <= EXCESS_LIMIT * terms_rmse
    if format_loss > EXCESS_LIMIT * u and own.norm_rel > EXCESS_LIMIT * u and not within_terms:
        score = max(score, own.norm_rel / (u / 4))
    return score


def format_overflow(value: torch.Tensor, oracle: torch.Tensor) -> torch.Tensor:
    """Mask of the elements +-inf in `value` where fp64 is finite and fp64 correctly rounded to
    `value`'s format is that same infinity: the format cannot hold the value, whatever the run does."""
    from roundoff.numerics import round_to

    inf = value.isinf() & oracle.isfinite()
    if not bool(inf.any()) or value.dtype == torch.float64:
        return torch.zeros_like(inf)
    try:
        fmt = get_format(value.dtype)
    except ValueError:
        return torch.zeros_like(inf)
    return inf & (round_to(oracle.double(), fmt) == value.double())


def nonfinite_counts(value: torch.Tensor, oracle: torch.Tensor) -> tuple[int, int]:
    """(new, overflow): elements NaN/inf in `value` where `oracle` is finite, less the `overflow`
    ones, +-inf where fp64 is finite but beyond `value`'s format (fp64 correctly rounded to it is the
    same infinity: an attention mask written as ``finfo.min + finfo.min``). An overflowing node is no
    NaN/inf origin by itself; it is when a later node reading that infinity fails
    (`roundoff.analyze.observe`). Host tensors are tested a slice at a time (`chunks.slices`)."""
    new = overflow = 0
    for v, o in slices(value, oracle):
        lost = ~v.isfinite() & o.isfinite()
        if bool(lost.any()):
            forced = format_overflow(v, o)
            new, overflow = new + int((lost & ~forced).sum()), overflow + int(forced.sum())
    return new, overflow


def new_nonfinite(value: torch.Tensor, oracle: torch.Tensor) -> int:
    """Elements NaN/inf in `value` where `oracle` is finite, less the format's overflows
    (`nonfinite_counts`)."""
    return nonfinite_counts(value, oracle)[0]


def widen_fp8(t: torch.Tensor) -> torch.Tensor:
    """fp8 values as bf16, which holds every fp8 value exactly (torch's comparisons take no fp8)."""
    return t.to(torch.bfloat16) if t.is_floating_point() and t.element_size() == 1 else t


#: `order_one_scale` scales by at most this power of two (an output below 2**-64 is judged as if it were 2**-64).
MAX_SCALE_EXPONENT = 64


def order_one_scale(fp64: torch.Tensor, reference: torch.Tensor) -> float:
    """The power of two that brings the largest finite magnitude of `fp64` into [1, 2) where it is
    below 1 (at most ``2**MAX_SCALE_EXPONENT``) and `reference` resolves it (its error, over the elements
    finite in both, is under half of fp64's norm); else 1.

    ``same``'s `tol` is an absolute tolerance as well as a relative one (``allclose``'s atol, and the
    RMSE slack ``tol/10``): made for losses and logits of order 1, it passes any output whose values
    are all smaller than it (trial 64: the row maxima of a bf16 program scaled by 1e-5, 96% wrong
    under inductor-cpu, passed). `same_rule` takes ``allclose`` on such an output as if it were scaled
    by this factor, so that closeness does not depend on its units. An output the reference does not resolve
    (a gradient that is 0 by the model's structure: fp64's noise of 1e-20, eager's 0, a fused fp32
    kernel's 1e-13) is left to ``same``'s absolute tolerance. A power of two scales every float
    format's values exactly (where the product stays in range)."""
    if reference.shape != fp64.shape or not fp64.numel():
        return 1.0
    finite = fp64.isfinite() & reference.isfinite()
    largest = float(torch.where(finite, fp64.abs(), 0).max())
    if largest == 0.0 or largest >= 1.0:  # (most values: no copy of the elements is made)
        return 1.0
    exact = fp64[finite].double()
    if not float((reference[finite].double() - exact).norm()) < 0.5 * float(exact.norm()):
        return 1.0
    return math.ldexp(1.0, min(1 - math.frexp(largest)[1], MAX_SCALE_EXPONENT))


def unscaled_flag(fp64: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """`order_one_scale(fp64, reference) == 1`, not read (a device bool), for finite values."""
    if not fp64.numel():
        return torch.ones((), dtype=torch.bool, device=fp64.device)
    exact = fp64.double()
    largest = exact.abs().amax()
    resolved = (reference.double() - exact).norm() < 0.5 * exact.norm()
    return (largest >= 1) | (largest == 0) | ~resolved


def unscaled(largest: float, error_norm: float, fp64_norm: float) -> bool:
    """`order_one_scale(...) == 1` from figures read (`unscaled_flag`'s test, for finite values): the
    largest magnitude of fp64, the norm of the reference's difference from it, and fp64's norm."""
    return largest >= 1.0 or largest == 0.0 or not error_norm < 0.5 * fp64_norm


def same_rule(ref: torch.Tensor, res: torch.Tensor, fp64_ref: torch.Tensor, tol: float) -> bool:
    """PyTorch's own accuracy rule: ``torch._dynamo.utils.same`` with an fp64 reference, silenced, with
    its ``allclose`` taken at the output's own scale (`order_one_scale`: an output whose values are all
    below 1, and which `ref` resolves, is not close to a wrong value within `tol` of 0). ``same`` is
    ``allclose`` or its RMSE rule ``rmse(res) <= m * rmse(ref) + tol/10``; the RMSE rule is kept as
    ``same`` has it (`same_rmse_rule`: its absolute slack passes a small gradient a few times eager's
    error, the level of summation-order noise).

    fp8 values (which ``same``'s ``allclose`` cannot take) are compared as bf16, exactly; ``same``
    then applies its low-precision RMSE multiplier (computed in fp64)."""
    from torch._dynamo.utils import same

    ref, res = widen_fp8(ref), widen_fp8(res)
    scale = order_one_scale(fp64_ref, ref)
    log = logging.getLogger("torch._dynamo.utils")  # its "Found nan in reference" warnings: ours to report
    was = log.disabled  # (not setLevel: that clears every logger's cache, ~0.2 ms a call)
    log.disabled = True
    try:
        if scale == 1.0:
            return bool(same(ref, res, fp64_ref=fp64_ref, tol=tol, log_error=lambda *a, **k: None))
        # scaled, same's RMSE rule has a smaller slack: where it passes, the unscaled rule does too
        return bool(same(ref * scale, res * scale, fp64_ref=fp64_ref * scale, tol=tol, log_error=lambda *a, **k: None)
                    ) or same_rmse_rule(ref, res, fp64_ref, tol)
    finally:
        log.disabled = was


def same_multiplier(dtype: torch.dtype) -> float:
    """``same``'s RMSE multiplier for results of `dtype`: 3 for fp16/bf16, else 2 (torch 2.9-2.13)."""
    return 3.0 if dtype in (torch.float16, torch.bfloat16) else 2.0


def same_rmse_rule(ref: torch.Tensor, res: torch.Tensor, fp64_ref: torch.Tensor, tol: float) -> bool:
    """``same``'s second test as torch 2.9-2.13 apply it by default: ``rmse(res, fp64) <= m * rmse(ref,
    fp64) + tol/10``, ``m`` the `same_multiplier` of the result's dtype."""
    multiplier = same_multiplier(res.dtype)
    res_error = float(torch.sqrt(torch.mean(torch.square(fp64_ref.double() - res.double()))))
    ref_error = float(torch.sqrt(torch.mean(torch.square(fp64_ref.double() - ref.double()))))
    return res_error <= multiplier * ref_error + tol / 10.0


def _close(rule: Rule, ref: torch.Tensor, res: torch.Tensor, oracle: torch.Tensor, tol: float) -> bool:
    ref, res = widen_fp8(ref), widen_fp8(res)
    if rule is Rule.BITWISE:
        return same_bits(ref.to(res.dtype), res)
    if rule is Rule.ALLCLOSE:
        from torch.testing._comparison import default_tolerances

        rtol, atol = default_tolerances(res.dtype)
        return bool(torch.allclose(res, ref.to(res.dtype), rtol=rtol, atol=atol, equal_nan=True))
    return torch.equal(ref, res) or same_rule(ref, res, oracle, tol)


def judge(rule: Rule, ref: torch.Tensor, res: torch.Tensor, oracle: torch.Tensor, tol: float) -> bool:
    """Does `res` pass `rule` against `ref` (same dtype), with fp64 `oracle`? Elements where the oracle
    is not finite are left out; NaN/inf in `res` where it is finite always fails (see module docstring)."""
    ref, res = widen_fp8(ref), widen_fp8(res)
    finite = oracle.isfinite()
    if bool((~res.isfinite() & finite).any()):
        return False
    if rule is Rule.BITWISE:
        return _close(rule, ref, res, oracle, tol)
    if not bool(finite.all()):
        ref, res, oracle = ref[finite], res[finite], oracle[finite]
    if not res.numel():
        return True
    return _close(rule, ref, res, oracle, tol)


def path_dtype(node: torch.fx.Node) -> torch.dtype:
    """The lowest-precision float dtype among `node` and every node whose values it is computed from
    (`value_inputs`; meta["val"])."""
    seen: set[torch.fx.Node] = set()
    todo, dtypes = [node], []
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        v = n.meta.get("val")
        if isinstance(v, torch.Tensor):
            dtypes.append(v.dtype)
        todo.extend(value_inputs(n))
    return working_dtype(torch.float64, dtypes)


def path_dtypes(graph: torch.fx.Graph) -> dict[torch.fx.Node, torch.dtype]:
    """`path_dtype` of every node of `graph`, in one pass in graph order."""
    out: dict[torch.fx.Node, torch.dtype] = {}
    for n in graph.nodes:
        v = n.meta.get("val")
        own = [v.dtype] if isinstance(v, torch.Tensor) else []
        out[n] = working_dtype(torch.float64, own + [out[p] for p in value_inputs(n)])
    return out


def oracle_output_passes(res: torch.Tensor, oracle: torch.Tensor, work: torch.dtype, operand_floor: float = 0.0) -> bool:
    """An output's verdict against the oracle from its values: no NaN/inf where fp64 is finite and its
    error within `EXCESS_LIMIT` times the larger of fp64's rounding to `work` (`path_dtype` of the
    output) and `operand_floor` (`roundoff.analyze.output_floor`): see `excess_within`."""
    from roundoff.numerics import round_to

    return excess_within(res, oracle, work, round_to, EXCESS_LIMIT, operand_floor)


def excess_within(res: torch.Tensor, fp64: torch.Tensor, work: torch.dtype, round_fn: Callable, limit: float,
                  operand_floor: float = 0.0) -> bool:
    """`oracle_output_passes` in plain torch (blame's repro scripts embed this source, with roundoff's
    `round_to` as `round_fn`): False if `res` is NaN/inf where `fp64` is finite; else over the elements
    finite on both sides, ``||res - fp64||_2 <= limit * max(||fp64||_2 * max(norm_rel(round_fn(fp64,
    work)), u / 4), operand_floor)`` (`excess`; the rounding over the elements whose rounding is finite;
    `operand_floor`: the error the output's last op takes from its operands held in `work`)."""
    wide = res.double()
    if bool((~wide.isfinite() & fp64.isfinite()).any()):
        return False
    both = wide.isfinite() & fp64.isfinite()
    x, x64 = wide[both], fp64[both]
    err, scale = float((x - x64).norm()), float(x64.norm())
    if err == 0.0:
        return True
    rounded = round_fn(x64, work).double()
    held = rounded.isfinite()
    floor = float((rounded - x64)[held].norm()) / max(float(x64[held].norm()), 1e-300)
    return err <= limit * max(scale * max(floor, lucky_rounding_floor(work)), operand_floor,
                              quantum_floor(work) * x.numel() ** 0.5)


def lucky_rounding_floor(dtype: torch.dtype) -> float:
    """A quarter of `dtype`'s unit roundoff: the least relative rounding error an output is held to, so
    that a scalar fp64 happens to round almost exactly is not held to that luck."""
    return torch.finfo(dtype).eps / 8


def quantum_floor(dtype: torch.dtype) -> float:
    """Half of `dtype`'s smallest positive value (its subnormal quantum): the least absolute error per
    element an output is held to, so that a value 0 by the model's structure (fp64's noise, 2e-22) that
    the program rounds to one quantum instead of 0 is no error (trial 63: a DeBERTa-v2 fp16 bias gradient,
    one subnormal ulp off, failed at 500x its reference)."""
    info = torch.finfo(dtype)
    return info.smallest_normal * info.eps / 2


def no_worse_than(res: torch.Tensor, fp64: torch.Tensor, base: torch.Tensor, factor: float) -> bool:
    """How `roundoff.blame` holds an output `check` passes (blame's repro scripts embed this source):
    False if `res` is NaN/inf where `fp64` is finite; else its error's 2-norm against `fp64`, over the
    elements finite on both sides, at most `factor` times that of `base` (the policy's own output)."""
    wide, ok = res.double(), fp64.isfinite()
    if bool((~wide.isfinite() & ok).any()):
        return False

    def err(x: torch.Tensor) -> float:
        both = x.isfinite() & ok
        return float((x[both] - fp64[both]).norm())

    return err(wide) <= factor * err(base.double())


def nan_or_inf(nan: int, inf: int) -> str:
    """``"NaN"``, ``"inf"`` or ``"NaN and inf"`` for counts of each."""
    return "NaN and inf" if nan and inf else ("NaN" if nan else "inf")


