"""Every node's figures computed during the run and read once: `check(..., nodes="all")` on a device.

`NodeObserver` reads each node's figures as the run reaches it: on CUDA a host sync per node, and
its Python and small kernels between the run's own. Here the run only *gathers* (`Gathering`, the
Lockstep's `on_node`): at every node it launches the computations of every figure the observer's
decisions can need there on a clean node, whatever the values (the policy's, the reference's and
the local recomputation's error rows against fp64 and the policy's against the reference, the
floors' norms, the terms' norm, fp64's range, equal-bits flags, the rule's closeness flag,
stored-overflow counts, a multi-output op's `unlike` norms, a selection's flip count), and reads none
of them; a decision that a gathered figure implies takes it from there (whether the policies differ:
the pair row's max |res - ref|; `same`'s scale: fp64's range and the reference's row). So the run can
be captured once as a CUDA graph (`execute.graphed`) and replayed. After the run every figure is
read at once, and `DeferredObserver` takes `NodeObserver`'s own decisions node by node from them,
on metadata-only (meta) tensors.

Numeric contract: the reports are the interpreted observer's, from the same figures computed by the
same functions; only fp64 sums may differ in their last bits (rows computed for more values in one
pass). A decision the gathered figures do not cover (a NaN/inf, a node beyond the limit, the `same`
rule on two values that differ and are not implied to pass, a structural zero, an fp64 node, a
tensor too large for one metric pass) needs the values themselves: it raises `NeedsValues`, and the
caller runs the interpreted check instead. Nothing here guesses a figure.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch.utils._pytree import tree_map

from roundoff.analyze.captured_outputs import CapturedOutputJudge, NeedsValues, close_flag
from roundoff.analyze.hazards import finite_range
from roundoff.analyze.metrics import (
    Metrics,
    _ulp_format,
    exact_metrics,
    from_stats,
    norm_figures,
    norm_rels_from,
)
from roundoff.analyze.noise import stored_overflow_count, unlike_from, unlike_norms
from roundoff.analyze.observe import (
    _UNINITIALIZED,
    ORACLE,
    POLICY,
    REFERENCE,
    NodeObserver,
    _fmt,
    _judged_pair,
    terms_norm,
)
from roundoff.analyze.screen import input_signature
from roundoff.analyze.selections import differing_count, is_selection
from roundoff.analyze.verdict import Rule, unscaled
from roundoff.capture.program import NODE_ID, output_op_name
from roundoff.execute.formats import HELD_NARROW, is_float
from roundoff.execute.interpreter import Lockstep, chained, is_random
from roundoff.execute.native_kernels import SUMS_IN_STORAGE
from roundoff.execute.node_numerics import round_value
from roundoff.numerics import round_to
from roundoff.numerics._metric_rows import unread_stats
from roundoff.numerics.formats import Overflow
from roundoff.numerics.metrics import ErrorAccumulator, elements_per_update
from roundoff.ops.classes import OpClass

__all__ = ["DeferredObserver", "Gathering", "NeedsValues"]


@dataclass
class _Record:
    """One node as gathered: its values as meta tensors, the meta stand-ins of the values the observer
    computes from them, and its figures (device tensors, or floats already read)."""

    node: torch.fx.Node
    stubs: Any
    ref: torch.Tensor | None = None
    local: torch.Tensor | None = None
    names: tuple[str, ...] = ()  # the rows of figures["rows"], in order
    formats: tuple[torch.dtype, torch.dtype] | None = None  # `NodeObserver._formats` (static)
    figures: dict[str, Any] = field(default_factory=dict)
    finish_terms: Callable[[float], float] | None = None
    unlike: dict[tuple[int, int], int] = field(default_factory=dict)  # (id(stub), id(stub)) -> figures index
    flip_value: Any = None  # a selection's policy value (held: a flip is replayed with it)


def _meta(value: Any) -> Any:
    return tree_map(lambda t: torch.empty(t.shape, dtype=t.dtype, device="meta") if isinstance(t, torch.Tensor) else t,
                    value)


class Gathering:
    """`on_node` callback: each node's figures launched, none read (module doc). `records` in run order."""

    def __init__(self, observer: NodeObserver) -> None:
        """`observer`: a fresh `NodeObserver` of the check (its static methods; its state stays empty,
        so what it skips for exact operands is computed here whatever they are)."""
        self.obs = observer
        self.records: list[_Record] = []

    def __call__(self, node: torch.fx.Node, vals: tuple, ls: Any) -> None:
        obs, rec = self.obs, _Record(node, _meta(vals))
        self.records.append(rec)
        fig = rec.figures
        if node.op == "placeholder" and is_float(vals[ORACLE]):
            policy, oracle = vals[POLICY], vals[ORACLE]
            if isinstance(policy, torch.Tensor) and policy.shape == oracle.shape:
                fig["exact"] = (policy.double() == oracle).all()
            if oracle.numel():
                fig["range"] = finite_range(oracle)
        if (is_selection(node)
                and (count := differing_count(vals[POLICY], vals[ORACLE])) is not None):
            fig["flip"], fig["flip_of"], rec.flip_value = count[0], count[1], vals[POLICY]
        obs._recompute_whole(node, vals, ls)
        if node.op == "call_function" and isinstance(vals[ORACLE], (tuple, list)) and not obs.has_reference:
            for i, (r, o) in enumerate(zip(vals[POLICY], vals[ORACLE])):
                if (norms := unlike_norms(r, o)) is not None:
                    fig[f"unlike{i}"] = norms
                    rec.unlike[(id(rec.stubs[POLICY][i]), id(rec.stubs[ORACLE][i]))] = i
        if node.op != "call_function" or not is_float(vals[POLICY]) or node.target in _UNINITIALIZED:
            return
        d = obs.side.decision(node)
        if d is not None and d.op_class is OpClass.DATA_MOVEMENT and node.target is not operator.getitem:
            return
        self._figures(rec, node, vals, ls)

    def _figures(self, rec: _Record, node: torch.fx.Node, vals: tuple, ls: Any) -> None:
        obs, fig = self.obs, rec.figures
        dtype, work = rec.formats = obs._formats(node, vals)
        res, oracle = vals[POLICY], vals[ORACLE]
        ref = vals[REFERENCE] if obs.has_reference else round_value(oracle, dtype)
        rec.ref = _meta(ref)
        if obs.has_reference and ref.shape != res.shape:
            raise NeedsValues(f"{_where(node)}: its reference has another shape")
        local = obs._local_value(node, ls)
        rec.local = _meta(local)
        values = {"policy": res, "reference": ref if obs.has_reference else None, "local": local}
        pair = _judged_pair(res, ref, dtype) if obs.has_reference else None
        if pair is not None:
            values["judged_res"] = pair[0] if pair[0] is not res else None
            values["judged_ref"] = pair[1] if pair[1] is not ref else None
        rec.names = tuple(k for k, v in values.items() if v is not None)
        f = _ulp_format(dtype)
        flat = [values[k].detach().reshape(-1) for k in rec.names]
        r = oracle.detach().reshape(-1)
        if (f.overflow is Overflow.NAN or not r.numel() or any(v.dtype == oracle.dtype for v in flat)
                or r.numel() > elements_per_update(flat, r, f)):
            raise NeedsValues(f"{_where(node)}: its figures need its values (fp64 or fp8 values, or too many)")
        fig["rows"] = unread_stats(flat, r, f)
        if obs.has_reference:
            fig["pair"] = unread_stats((res.detach().reshape(-1),), ref.detach().reshape(-1), f)
        rounded = ref if not obs.has_reference and ref.dtype == dtype else round_to(oracle, _fmt(dtype))
        fig["floors"] = norm_figures((rounded, round_to(oracle, _fmt(work))) if work != dtype else (rounded,), oracle)
        if (terms := terms_norm(node, ls, ORACLE, oracle.numel(), work)) is not None:
            fig["terms"], rec.finish_terms = terms
        fig["range"] = finite_range(oracle)
        if dtype in HELD_NARROW and res.dtype != dtype and obs._stored(node, node.meta.get(NODE_ID, node.name)):
            fig["stored_overflow"] = stored_overflow_count(res, oracle, dtype)
        if pair is not None and obs.rule is Rule.ALLCLOSE:
            fig["close"] = close_flag(obs.rule, pair[1], pair[0], oracle, obs.tol)  # (both in `dtype` already)
        elif pair is not None and obs.rule is Rule.SAME:  # (`same`'s scale: from the rows and the range, read)
            fig["close"] = torch.isclose(pair[1], pair[0], rtol=obs.tol, atol=obs.tol).all()

    def tensors(self) -> list[torch.Tensor]:
        """Every figure not yet read, in record order."""
        return [t for rec in self.records for t in rec.figures.values() if isinstance(t, torch.Tensor)]

    def read(self, flat: list[float]) -> list[dict[str, Any]]:
        """Per record, its figures as floats (lists), from `tensors()` read in order into `flat`."""
        out, at = [], 0
        for rec in self.records:
            got: dict[str, Any] = {}
            for name, t in rec.figures.items():
                if isinstance(t, torch.Tensor):
                    got[name], at = flat[at : at + t.numel()], at + t.numel()
                else:
                    got[name] = t
            out.append(got)
        return out


def _where(node: torch.fx.Node) -> str:
    return f"`{output_op_name(node)}` ({node.meta.get(NODE_ID, node.name)})"


class _NoValues:
    """The Lockstep a deferred decision sees: any read of a value means the figures do not suffice."""

    @property
    def env(self) -> Any:
        raise NeedsValues("a decision reads the run's values")

    def reader(self, side: int) -> Callable[[torch.fx.Node], Any]:
        raise NeedsValues("a decision reads the run's values (its operands')")


class DeferredObserver(NodeObserver):
    """`NodeObserver` whose decisions come from a `Gathering`'s figures, read once (module doc)."""

    def decide(self, gathering: Gathering, figures: list[dict[str, Any]]) -> None:
        """Replay the observer over `gathering`'s records with `figures` (`Gathering.read`); raises
        `NeedsValues` where a decision needs values (then nothing here is to be used)."""
        if self.floors is not None:
            raise NeedsValues("output floors are recorded from values")
        no_values = _NoValues()
        for rec, got in zip(gathering.records, figures):
            self._rec, self._got = rec, got
            try:
                self(rec.node, rec.stubs, no_values)
            except (RuntimeError, NotImplementedError) as e:  # a meta tensor read: values needed
                raise NeedsValues(f"{_where(rec.node)}: a decision reads its values") from e
            except NeedsValues as e:
                raise NeedsValues(f"{_where(rec.node)}: {e}") from e

    def _value(self, name: str) -> list[float]:
        if name not in self._got:
            raise NeedsValues(f"no gathered figure {name!r}")
        return self._got[name]

    def _row(self, name: str) -> list[float]:
        """The row of figures of `name` (a row of ``figures["rows"]``, or the ``"pair"`` figure), read."""
        if name != "pair" and name not in self._rec.names:
            raise NeedsValues(f"no gathered row {name!r}")
        got = self._value("rows" if name != "pair" else "pair")
        flat = [x for row in got for x in row] if isinstance(got[0], list) else got
        if name == "pair":
            return flat
        width = len(flat) // len(self._rec.names)
        i = self._rec.names.index(name)
        return flat[i * width : (i + 1) * width]

    def _formats(self, node: torch.fx.Node, vals: tuple) -> tuple[torch.dtype, torch.dtype]:
        return self._rec.formats if self._rec.formats is not None else super()._formats(node, vals)

    def _placeholder_exact(self, policy: torch.Tensor, oracle: torch.Tensor) -> bool:
        return "exact" in self._got and bool(self._got["exact"][0])

    def _flip(self, policy: Any, oracle: Any) -> tuple[tuple[int, int], Any] | None:
        if "flip" not in self._got:
            return None
        count = int(self._value("flip")[0])
        return ((count, self._got["flip_of"]), self._rec.flip_value) if count else None

    def _rounded_oracle(self, oracle: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return self._rec.ref

    def _differs(self, ref: torch.Tensor, res: torch.Tensor) -> bool:
        largest = self._row("pair")[0]  # max |res - ref| in fp64, exact: 0 where `torch.equal` holds
        if not math.isfinite(largest):
            raise NeedsValues("NaN/inf among its values")
        return largest != 0.0

    def _equal_as(self, ref: torch.Tensor, res: torch.Tensor, dtype: torch.dtype) -> bool:
        return not self._differs(ref, res)  # (equal before, equal converted; where they differ, `_judge`)

    def _judge(self, ref: torch.Tensor, res: torch.Tensor, oracle: torch.Tensor, dtype: torch.dtype) -> bool:
        # (every value finite here: `_measured` needed values otherwise; so `judge` is the rule itself)
        close = "close" in self._got and bool(self._value("close")[0])
        if self.rule is Rule.ALLCLOSE and "close" in self._got:
            return close
        if close:  # `same`'s allclose passed unscaled: so does `same`, where it takes them unscaled
            lo, hi = self._value("range")
            ref_row = self._row("judged_ref" if "judged_ref" in self._rec.names else "reference")
            close = unscaled(max(-lo, hi), math.sqrt(ref_row[3]), math.sqrt(ref_row[2]))
        if self.rule is Rule.SAME and close:
            return True
        raise NeedsValues(f"the {self.rule.value} rule needs the values of two that differ")

    def _local_value(self, node: torch.fx.Node, ls: Any) -> torch.Tensor | None:
        if not self.local or is_random(node) or all(p in self.exact for p in node.all_input_nodes):
            return None
        return self._rec.local

    def _without_overflowed_reads(self, local: Any, oracle: Any, reads: list, ls: Any) -> Any:
        raise NeedsValues("a pointwise node reads an operand's format overflow (its own error is judged without it)")

    def _recompute_whole(self, node: torch.fx.Node, vals: tuple, ls: Any) -> None:
        # gathered only where some operand is inexact; of exact operands the op's own value is its local value
        if (self.local and node.target in SUMS_IN_STORAGE and isinstance(vals[POLICY], (tuple, list))
                and all(p in self.exact for p in node.all_input_nodes)):
            raise NeedsValues("a multi-output op of exact operands")

    def _measured(
        self, values: dict[str, torch.Tensor], oracle: torch.Tensor, dtype: torch.dtype, rounded: torch.Tensor | None,
        work: torch.dtype, pair: tuple[str, str] | None,
    ) -> tuple[dict[str, Metrics], float, float]:
        n, f = oracle.numel(), _ulp_format(dtype)

        def metrics(name: str) -> Metrics:
            row = self._row(name)
            if not math.isfinite(row[0]):
                raise NeedsValues("NaN/inf among its values")
            return from_stats(ErrorAccumulator.of_row(row, n, f))

        out = {name: metrics(name) for name in values}
        if pair is not None:
            out["vs_reference"] = metrics("pair")
        floors = norm_rels_from(self._value("floors"))
        if floors is None:
            raise NeedsValues("NaN/inf in fp64's rounding")
        return out, floors[0], floors[-1] if work != dtype else floors[0]

    def _terms_floor(self, node: torch.fx.Node, ls: Any, oracle: torch.Tensor, dtype: torch.dtype) -> float:
        if self._rec.finish_terms is None:
            return 0.0
        return self._rec.finish_terms(self._value("terms")[0])

    def _stored_overflow(self, res: torch.Tensor, oracle: torch.Tensor, dtype: torch.dtype) -> int:
        return int(self._value("stored_overflow")[0])

    def _exact_metrics(self, res: torch.Tensor) -> Metrics:
        return exact_metrics(res, infinities=0)  # (every value finite, or `_measured` needed values)

    def _unlike(self, res: Any, oracle: Any) -> bool:
        i = self._rec.unlike.get((id(res), id(oracle)))
        return i is not None and unlike_from(self._value(f"unlike{i}"))

    def _oracle_range(self, oracle: torch.Tensor, m: Metrics | None) -> tuple[float, float]:
        lo, hi = self._value("range")
        return lo, hi


def observe_deferred(
    program: Any, sides: list[Any], inputs: tuple, make_observer: Callable[[type[NodeObserver]], NodeObserver],
    recompute: bool, graphed: bool, key: tuple = (), outputs: Callable[[tuple], Any] | None = None,
    judge: CapturedOutputJudge | None = None,
) -> tuple[DeferredObserver, tuple, Any, dict | None]:
    """Every node of `program` run by `sides` on `inputs`, figures gathered and read once, decisions
    taken by a `DeferredObserver` (module doc): (that observer, the run's outputs, the outputs'
    figures). `make_observer` makes the check's observer of a given class. `outputs(outs)`: launches
    the outputs' figure passes at the end of the run (`output_verdicts.output_figures`), read with the
    rest: returned as (what it returned, its tensors read). `graphed`: the run captured as a CUDA graph
    on the first call for `key` and replayed (the outputs are the graph's own, valid until its next
    replay). `judge`: judges the outputs as the run makes them and releases them (`CapturedOutputJudge`;
    the last item returned is what it settled, None without it; `outputs` then sees the rest). Raises
    `NeedsValues` where the figures do not suffice (nothing is then to be used)."""
    made: list[Any] = []

    def run(*xs: Any) -> tuple:
        made[:] = [Gathering(make_observer(NodeObserver))]
        if judge is not None:
            judge.begin()
        ls = Lockstep(program, sides, on_node=chained(made[0], judge), recompute=range(len(sides)) if recompute else ())
        with torch.inference_mode():
            outs = ls.run_inputs(xs)
            made.append(outputs(outs) if outputs is not None else None)
        made.append(judge)
        parts = [*made[0].tensors(), *(made[1].tensors() if made[1] is not None else ()),
                 *(judge.tensors() if judge is not None else ())]
        dev = next((p.device for p in parts), None)
        flat = torch.cat([p.detach().reshape(-1).to(dev, torch.float64) for p in parts]) if parts else torch.zeros(0)
        return (*outs, flat)

    if graphed:
        from roundoff.execute.graphed import CudaGraphed, captured_once

        full = (*key, recompute, "every node", judge.key if judge is not None else None, input_signature(inputs))
        try:
            replay, (gathering, launched, judged) = captured_once(
                program.graph_module, full, lambda: (CudaGraphed(run, inputs, clone_outputs=False), made))
        except RuntimeError as e:  # (a host read in the run: the capture is invalidated)
            raise NeedsValues(f"the run cannot be captured as a CUDA graph: {str(e).splitlines()[0]}") from e
        *outs, flat = replay(*inputs)
    else:
        *outs, flat = run(*inputs)
        gathering, launched, judged = made
    values = flat.tolist()  # the one read
    observer = make_observer(DeferredObserver)
    assert isinstance(observer, DeferredObserver)
    observer.decide(gathering, gathering.read(values))
    at = sum(t.numel() for t in gathering.tensors())

    def split(tensors: list[torch.Tensor]) -> list[list[float]]:
        nonlocal at
        read = []
        for t in tensors:
            read.append(values[at : at + t.numel()])
            at += t.numel()
        return read

    figures = (launched, split(launched.tensors())) if launched is not None else None
    settled = judged.settle(split(judged.tensors())) if judged is not None else None
    return observer, tuple(outs), figures, settled
