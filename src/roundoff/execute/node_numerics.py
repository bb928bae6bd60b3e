"""How one FX node is evaluated under a plan (emulated numerics) or under the fp64 oracle.

Numeric contract of `PlanNumerics.evaluate` for a call_function node with decision ``d``:

1. Operands are read from the producers' values. A producer's value is re-rounded (RNE, via
   ``roundoff.numerics.round_to``) to the producer's storage format when ``d.rounded_inputs`` names
   it, or, with ``fresh=True`` (oracle inputs, for local error), also when the producer itself
   rounds its result. A value rounded to bf16 or fp16 is held in that dtype (torch's fp32 casts to
   them are exactly ``round_to``, see ``formats.HELD_NARROW``); other values of narrow formats (fp8,
   and bf16/fp16 values not rounded yet) are held in fp32 containers. Data movement whose float
   operands share one held dtype runs in it (exact); every other op reads its operands widened.
2. Tensor operands are rounded to ``d.input_format`` when set, and to ``d.compute_dtype`` when that
   is a narrow format (STORAGE compute); Python-float operands are rounded to ``d.scalar_format``
   when set (from their fp64 value, correctly rounded). Float ``dtype`` arguments (``_to_copy``,
   ``full``, ``sum(dtype=)``, ...) are rewritten to the container dtype, so a cast computes nothing
   and rounds only when the plan says so; except that a factory (``linspace``, ``arange``, ``full``: no
   tensor operand) held in its own dtype runs as written, by torch's kernel in that dtype, as eager does.
3. The op runs in the container dtype (fp32, or fp64 for fp64 programs); a matmul (mm, bmm) whose
   operands are both held in the storage dtype it rounds its result to runs in that dtype, with
   torch's own kernel, i.e. what eager runs (CPU: fp32 accumulation, one rounding; CUDA: cuBLAS under
   torch's matmul settings, e.g. ``allow_bf16_reduced_precision_reduction``), and so do a convolution
   and its backward (oneDNN, cuDNN: their own summation order); likewise an op whose
   eager kernel accumulates in its storage dtype (``NATIVE_STORAGE``: ``embedding_dense_backward``,
   ``index_put`` with ``accumulate=True``, CPU and CUDA; CPU LayerNorm backward and BatchNorm) runs that
   kernel under STORAGE compute. A contracted
   FMA site is computed as one correctly rounded ``numerics.fma`` of the multiply's operands (as the multiply
   reads them) and the other addend. Transcendental ops may run through another backend's kernel
   (`TranscendentalImpl`), so implementation differences can be told apart from policy differences.
   A negation with ``d.negation`` SUBTRACT_FROM_ZERO computes ``0.0 - x`` (``-(+0.0)`` is ``+0.0``).
4. The result is rounded to the compute format (STORAGE compute) and then, when ``d.rounds_result``,
   to the storage format. NaN, inf, -0.0 and subnormals are whatever torch's fp32 op and
   ``round_to`` make of them (round_to matches torch's casts bit for bit, overflow to inf).

`OracleNumerics` holds every float value in fp64, ignores casts and rounds nothing. Ops whose kernels
reject the dtype (fp64 attention/grouped matmul, fp32 flash attention) run as the explicit
decompositions of `roundoff.execute.wide_kernels`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.fx
from torch.fx.node import map_aggregate

from roundoff.capture.program import NODE_ID
from roundoff.execute.devices import relocated
from roundoff.execute.formats import HELD_NARROW, container_dtype, is_float
from roundoff.execute.native_kernels import (
    BATCH_NORMS,
    NATIVE_AS_HELD,
    NATIVE_ATTENTION,
    NATIVE_KERNELS,
    NATIVE_STORAGE,
    accumulates_in_storage,
    attention_native,
    one_narrow,
    rounds_results,
    storage_of,
)
from roundoff.execute.transcendental import TranscendentalImpl
from roundoff.execute.wide_kernels import call
from roundoff.numerics import get_format, is_low_precision, round_to
from roundoff.ops.classes import OpClass
from roundoff.plan.cache import GraphCache
from roundoff.plan.matmul_add import unpermuted
from roundoff.plan.model import NodeDecision, Plan
from roundoff.policy.model import FusionModel, Negation

Read = Callable[[torch.fx.Node], Any]
_aten = torch.ops.aten
_DIVS = (_aten.div.Tensor, _aten.div.Scalar)
CONVOLUTIONS = (_aten.convolution.default, _aten.convolution_backward.default)


def stride_free(target: Any) -> Any:
    """The op to run for FX `target`: ``aten.view`` runs as ``aten.reshape``.

    An emulated kernel (a rounding, an fp32 or fp64 attention, a decomposition) may return other strides
    than the kernel the graph was traced with, so a traced ``view`` of its result can be impossible; in
    a functional graph ``reshape`` gives the same values (the same view where one exists, else a copy).
    """
    return _aten.reshape.default if target is _aten.view.default else target


def _held_dtype(obj: Any) -> torch.dtype | None:
    """The one narrow dtype (bf16/fp16) every float tensor in `obj` is held in, else None."""
    dtypes: set[torch.dtype] = set()
    map_aggregate(obj, lambda a: dtypes.add(a.dtype) if is_float(a) else None)
    return next(iter(dtypes)) if len(dtypes) == 1 and dtypes <= set(HELD_NARROW) else None


def _rewrite_dtypes(obj: Any, to: torch.dtype) -> Any:
    """Replace every floating torch.dtype in `obj` (args/kwargs) by `to`."""
    return map_aggregate(obj, lambda a: to if isinstance(a, torch.dtype) and a.is_floating_point else a)


def round_value(value: Any, dtype: Any) -> Any:
    """Round a (possibly tuple) value to `dtype`'s format (RNE); wide formats pass unchanged.

    Values rounded to bf16/fp16 come back held in that dtype (from fp64 correctly rounded first, not
    by torch's double-rounding cast); values rounded to other narrow formats (fp8) stay in their
    container dtype.
    """
    if isinstance(value, (tuple, list)):
        dts = dtype if isinstance(dtype, tuple) else (dtype,) * len(value)
        return type(value)(round_value(v, d) for v, d in zip(value, dts))
    if is_float(value) and isinstance(dtype, torch.dtype) and is_low_precision(dtype):
        if value.dtype == dtype:
            return value  # held in its own format: already rounded
        if value.dtype == torch.float32 and dtype in HELD_NARROW:
            return value.to(dtype)  # RNE, == round_to (formats.HELD_NARROW)
        if value.dtype in HELD_NARROW:
            value = value.to(torch.float32)  # exact; then rounded to another narrow format
        rounded = round_to(value, get_format(dtype))  # fp64: correctly rounded, not torch's double rounding
        return rounded.to(dtype) if dtype in HELD_NARROW else rounded  # representable: the cast is exact
    return value


def _on_device(t: torch.Tensor | float, dev: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """`t` on `dev`: a Python number or 0-dim host tensor as a fill there (no host-to-device copy,
    which CUDA graph capture forbids; the same value), any other tensor moved."""
    if not isinstance(t, torch.Tensor):
        return torch.full((), t, dtype=dtype, device=dev)
    if t.dim() == 0 and t.device != dev and t.device.type == "cpu":
        return torch.full((), t.item(), dtype=t.dtype, device=dev)
    return t.to(dev)


def _python_reciprocal(x: float, dtype: torch.dtype) -> float:
    """``1/x`` of a Python number in fp64, rounded (RNE) to `dtype`; ``1/±0`` is ``±inf``."""
    r = math.copysign(math.inf, x) if x == 0 else 1.0 / x
    return float(torch.tensor(r, dtype=torch.float64).to(dtype))


def _round_scalar(x: float, fmt: str) -> float:
    return float(round_to(torch.tensor(x, dtype=torch.float64), fmt))


class OracleNumerics:
    """Every float value in fp64 (inputs upcast exactly), casts ignored, nothing rounded."""

    dtype = torch.float64
    relocate: tuple[torch.device, torch.device] | None = None  # captured -> run device (`Lockstep`)

    def load_input(self, node: torch.fx.Node, value: Any) -> Any:
        return value.to(self.dtype) if is_float(value) else value

    def evaluate(self, node: torch.fx.Node, read: Read, fresh: bool = False) -> Any:
        wide = self.dtype

        def conv(a: Any) -> Any:  # float tensors and float dtype arguments to fp64
            if is_float(a):
                return a if a.dtype == wide else a.to(wide)
            return wide if isinstance(a, torch.dtype) and a.is_floating_point else a

        args = map_aggregate(torch.fx.node.map_arg(node.args, read), conv)
        kwargs = map_aggregate(torch.fx.node.map_arg(relocated(node.kwargs, self.relocate), read), conv)
        return call(stride_free(node.target), args, kwargs)

    def finish_output(self, node: torch.fx.Node, value: Any) -> Any:
        return value


class _Static:
    """What `PlanNumerics` decides for one node: a pure function of the plan, made once per plan
    (`_statics`) so that a run does not decide it again per node and per side."""

    __slots__ = (
        "cdt",
        "channels_last",
        "compute_round",
        "d",
        "factory",
        "fmts",
        "fresh",
        "moves",
        "native",
        "plain",
        "scalar_fmt",
        "storage",
    )

    def __init__(self, node: torch.fx.Node, plan: Plan) -> None:
        d = self.d = plan.decisions.get(node.meta.get(NODE_ID, ""))
        self.storage = d.storage_dtype if d is not None and d.storage_dtype is not None else storage_of(node)
        dt = d.compute_dtype if d is not None and d.compute_dtype is not None else None
        if dt is None:
            dt = self.storage if isinstance(self.storage, torch.dtype) else torch.float32
        self.cdt = container_dtype(dt) if dt.is_floating_point else torch.float32
        low = d is not None and is_low_precision(d.compute_dtype)
        self.fmts = tuple(f for f in (d.input_format if d else None,) if f) + (
            (get_format(d.compute_dtype).name,) if low else ())
        self.scalar_fmt = d.scalar_format if d is not None else None
        self.moves = d is not None and d.op_class is OpClass.DATA_MOVEMENT and not self.fmts
        # a factory (linspace, arange, full) the plan holds in its own dtype makes its values by its own kernel
        # in that dtype, as eager does (torch's bf16 linspace sums a bf16 step: 2.25 where fp32's rounded is
        # 2.2656; trial 88's NeRF); an fp32 policy, holding it in fp32, makes it in fp32
        self.factory = (d is not None and d.op_class is OpClass.OTHER and not node.all_input_nodes
                        and d.storage_dtype == d.compute_dtype == getattr(node.meta.get("val"), "dtype", None))
        self.compute_round = d.compute_dtype if low else None
        st = self.storage
        self.native = node.target in NATIVE_AS_HELD or d is not None and (not node.kwargs and (
            accumulates_in_storage(node, d) or (
            node.target in NATIVE_KERNELS and rounds_results(node, d, plan) and one_narrow(st) is not None
            and d.compute_dtype == torch.float32 and not d.input_format)) or attention_native(node, d, plan))
        # Inductor's C++ backend lays a graph's convolutions out channels-last (``decide_layout_opt``: always
        # where oneDNN runs them) and calls the kernel on those copies, whose oneDNN path sums in another
        # order than eager's contiguous one (measured, torch 2.13: 4 of 8192 fp16 outputs differ); its
        # backward reads every operand channels-last: the incoming gradient, and the input and weight as the
        # forward's channels-last copies it saved (with those contiguous, oneDNN sums the weight gradient in
        # another order: 1 of 432 elements of a CNN's first weight gradient)
        self.channels_last = self.native and node.target in CONVOLUTIONS and plan.policy.fusion is FusionModel.POINTWISE_CPP
        self.plain: dict[torch.fx.Node, Any] = {}  # operand -> the storage dtype it is read rounded to
        self.fresh: dict[torch.fx.Node, Any] = {}  # the same, reading oracle inputs (``fresh=True``)

    def link(self, node: torch.fx.Node, table: dict[torch.fx.Node, _Static]) -> None:
        rounded = self.d.rounded_inputs if self.d is not None else frozenset()
        for p in node.all_input_nodes:
            pd = table[p].d
            if p.meta.get(NODE_ID) in rounded:
                self.plain[p] = self.fresh[p] = table[p].storage
            elif p.op == "placeholder" or (pd is not None and pd.rounds_result):
                self.fresh[p] = table[p].storage


_STATICS: GraphCache[dict[torch.fx.Node, _Static]] = GraphCache()


def _statics(plan: Plan) -> dict[torch.fx.Node, _Static]:
    """{node: `_Static`} of `plan`'s graph, cached per graph and decisions."""
    gm = plan.program.graph_module

    def build() -> dict[torch.fx.Node, _Static]:
        table = {n: _Static(n, plan) for n in gm.graph.nodes}
        for n, st in table.items():
            st.link(n, table)
        return table

    return _STATICS.get(gm, (gm.graph, plan.decisions), build)


class PlanNumerics:
    """Evaluates nodes the way `plan` says its backend does (see the module docstring)."""

    relocate: tuple[torch.device, torch.device] | None = None  # captured -> run device (`Lockstep`)

    def __init__(self, plan: Plan, transcendentals: TranscendentalImpl | None = None) -> None:
        self.plan = plan
        self.transcendentals = transcendentals
        self._nodes = {n.meta.get(NODE_ID): n for n in plan.program.graph.nodes}
        self._table = _statics(plan)
        self.transcendental_nodes = 0

    # -- decisions ------------------------------------------------------------------------------
    def _static(self, node: torch.fx.Node) -> _Static:
        st = self._table.get(node)
        if st is None:  # a node of another graph than the plan's (not cached)
            st = _Static(node, self.plan)
            st.link(node, {p: _Static(p, self.plan) for p in node.all_input_nodes})
        return st

    def decision(self, node: torch.fx.Node) -> NodeDecision | None:
        return self._static(node).d

    def storage(self, node: torch.fx.Node) -> Any:
        return self._static(node).storage

    def _compute(self, node: torch.fx.Node, d: NodeDecision | None) -> torch.dtype:
        return self._static(node).cdt

    # -- placeholder / output ---------------------------------------------------------------------
    def load_input(self, node: torch.fx.Node, value: Any) -> Any:
        if not is_float(value):
            return value
        st = self.storage(node)
        st = st if isinstance(st, torch.dtype) else value.dtype
        if value.dtype == st and st in HELD_NARROW:
            return value  # a bf16/fp16 input is exact in its own dtype
        return round_value(value.to(container_dtype(st)), st)

    def finish_output(self, node: torch.fx.Node, value: Any) -> Any:
        st = self.storage(node)
        if is_float(value) and isinstance(st, torch.dtype) and st.is_floating_point:
            return value.to(st)
        return value

    # -- call_function ----------------------------------------------------------------------------
    def _reader(self, node: torch.fx.Node, read: Read, fresh: bool) -> Read:
        """`read`, with the operands `node` reads rounded (contract step 1) rounded to their storage."""
        st = self._static(node)
        want = st.fresh if fresh else st.plain
        if not want:
            return read

        def arg(p: torch.fx.Node) -> Any:
            v = read(p)
            return round_value(v, want[p]) if p in want else v

        return arg

    def operands(self, node: torch.fx.Node, read: Read, fresh: bool) -> tuple[tuple, dict]:
        """`node`'s args and kwargs as its computation sees them (steps 1-2 of the contract)."""
        st = self._static(node)
        cdt, fmts, scalar_fmt = st.cdt, st.fmts, st.scalar_fmt
        arg = self._reader(node, read, fresh)
        raw_args = torch.fx.node.map_arg(node.args, arg)
        raw_kwargs = torch.fx.node.map_arg(relocated(node.kwargs, self.relocate), arg)
        if st.moves:
            held = _held_dtype((raw_args, raw_kwargs))
            if held is not None:  # exact: the moved values stay in their own format
                return raw_args, _rewrite_dtypes(raw_kwargs, held)

        def prep(a: Any) -> Any:
            if is_float(a):
                held = a.dtype
                a = a if held == cdt else a.to(cdt)
                for f in fmts:
                    if held not in HELD_NARROW or get_format(held).name != f:  # else already in f
                        a = round_to(a, f)
                return a
            if isinstance(a, float) and scalar_fmt:
                return _round_scalar(a, scalar_fmt)
            if isinstance(a, torch.dtype) and a.is_floating_point:
                return cdt
            return a

        return map_aggregate(raw_args, prep), map_aggregate(raw_kwargs, prep)

    def evaluate(self, node: torch.fx.Node, read: Read, fresh: bool = False) -> Any:
        st = self._static(node)
        d = st.d
        if d is not None and d.gemm is not None:
            out = self._addmm(node, d, read, fresh)
            return round_value(out, st.storage) if d.rounds_result else out
        native = self._native_kernel(node, read, fresh) if st.native else None
        if native is not None:
            return native
        if st.factory:
            return call(stride_free(node.target), node.args, relocated(node.kwargs, self.relocate))
        args, kwargs = self.operands(node, read, fresh)
        if d is not None and d.fma is not None and d.fma.contracted:
            out = self._fma(node, d, args, kwargs, read, fresh)
        elif d is not None and d.negation is Negation.SUBTRACT_FROM_ZERO:
            out = _aten.rsub.Scalar(args[0], 0.0)  # 0.0 - x: -(+0.0) is +0.0 (Triton's unary minus)
        elif (
            self.transcendentals is not None
            and d is not None
            and self.transcendentals.handles(node.target, d.op_class)
        ):
            self.transcendental_nodes += 1
            out = self.transcendentals(node.target, args, kwargs)
        else:
            out = call(stride_free(node.target), args, kwargs)
        if st.compute_round is not None:
            out = round_value(out, st.compute_round)
        if d is not None and d.rounds_result:
            out = round_value(out, st.storage)
        return out

    def _native_kernel(self, node: torch.fx.Node, read: Read, fresh: bool) -> Any:
        """The op `_Static.native` selects, run by torch's kernel in its storage dtype (step 3): a
        `NATIVE_KERNELS` op under fp32 compute, or a `NATIVE_STORAGE` op under STORAGE compute; None where
        the former's float operands are not all held in that dtype (the contract then needs the fp32 path)."""
        st = self.storage(node)
        args = torch.fx.node.map_arg(node.args, self._reader(node, read, fresh))
        if node.target in NATIVE_ATTENTION:  # each float operand as the program holds it: 16-bit, the fp32 logsumexp
            held = [p.meta.get("val") if isinstance(p, torch.fx.Node) else None for p in node.args]
            if not all(not is_float(a) or (isinstance(h, torch.Tensor) and a.dtype == h.dtype) for a, h in zip(args, held)):
                return None
            kwargs = torch.fx.node.map_arg(node.kwargs, self._reader(node, read, fresh))
            return node.target(*args, **kwargs)
        if node.target in NATIVE_STORAGE:  # its kernel adds its operands as that dtype holds them (Inductor's
            held = self._static(node).d.compute_dtype  # atomic_add stores an fp32 value in it)
            args = tuple(a.to(held) if is_float(a) else a for a in args)
            if node.target in BATCH_NORMS:  # it updates the running statistics it reads in place
                args = tuple(a.clone() if is_float(a) and i in (3, 4) else a for i, a in enumerate(args))
            return node.target(*args)
        floats = [a for a in args if is_float(a)]
        if node.target in NATIVE_AS_HELD:  # (in one dtype, as eager holds them; else the fp32 path)
            return call(node.target, args, {}) if len({a.dtype for a in floats}) == 1 else None
        if floats and all(isinstance(a, torch.Tensor) and a.dtype == one_narrow(st) for a in floats):
            if self._static(node).channels_last:  # a convolution's operands, as Inductor lays them out
                args = tuple(a.contiguous(memory_format=torch.channels_last) if is_float(a) and a.dim() == 4
                             else a for a in args)
            return node.target(*args)
        return None

    def _addmm(self, node: torch.fx.Node, d: NodeDecision, read: Read, fresh: bool) -> Any:
        """``addmm(x, a, b)`` for an add of matmul ``d.gemm``'s result and ``x`` (``MatmulAdd.ADDMM``):
        ``a``, ``b`` as that matmul reads them, ``x`` as the add reads it; torch's addmm kernel in their
        dtype where all three are held in the add's 16-bit storage dtype (the kernel Inductor's extern call
        runs: one fp32 accumulation, one rounding), else in the compute dtype (fp32 containers)."""
        mm = self._nodes[d.gemm]
        i = 0 if unpermuted(node.args[1]) is mm else 1  # the addend's argument index
        a, b = torch.fx.node.map_arg(tuple(mm.args[:2]), self._reader(mm, read, fresh))
        x = self._reader(node, read, fresh)(node.args[i])
        narrow = one_narrow(self.storage(node))
        if narrow is None or d.input_format or not all(t.dtype == narrow for t in (a, b, x)):
            a, b = self.operands(mm, read, fresh)[0][:2]
            x = self.operands(node, read, fresh)[0][i]
        return torch.addmm(x, a, b)

    def _reciprocal(self, b: torch.Tensor) -> torch.Tensor:
        """``R`` of a division folded into an FMA: the transcendental implementation's
        ``aten.reciprocal`` where it handles it (``"inductor"``: Inductor's own kernel; on CUDA
        Triton's ``div.full.f32(1, b)``, bit-equal to the ``R`` inside ``div.full.f32(a, b)``), else
        torch's correctly rounded fp32 ``1 / b``, which on CPU only approximates ``MUFU.RCP``."""
        impl, op = self.transcendentals, _aten.reciprocal.default
        if impl is not None and impl.handles(op, OpClass.POINTWISE_ARITHMETIC):
            return impl(op, (b,), {})
        return torch.reciprocal(b)

    def _fma(self, node: torch.fx.Node, d: NodeDecision, args: tuple, kwargs: dict, read: Read, fresh: bool) -> Any:
        """``fma(a, b, ±c)`` for an add/sub whose operand `d.fma.operand` is the product ``a*b``.

        A division ``a / b`` as the product (``Division.RECIPROCAL_MULTIPLY``) is ``a * R``: ``R`` from
        `_reciprocal` for a tensor divisor, or for a Python-number divisor ``1/b`` in fp64 rounded
        (RNE) to the compute dtype, the constant Inductor's GPU lowering multiplies by (``div_prim``);
        ``1/0`` is ``inf`` with the zero's sign. No rounding of ``a * R`` happens: one rounding of
        ``a*R ± c`` (overflow to inf, subnormals kept, NaN propagates as in ``numerics.fma``).
        """
        from roundoff.numerics import fma

        site = d.fma
        if node.target not in (_aten.add.Tensor, _aten.sub.Tensor) or kwargs.get("alpha", 1) != 1:
            raise ValueError(
                f"FMA site at node {site.node_id} ({node.target}) is not a plain add/sub; "
                "roundoff contracts only aten.add.Tensor / aten.sub.Tensor without alpha"
            )
        mul = self._nodes[site.mul_id]
        (a, b), _ = self.operands(mul, read, fresh)
        c = args[1 - site.operand]
        cdt = self._compute(node, d)
        divides_by_tensor = mul.target in _DIVS and isinstance(b, torch.Tensor)
        if mul.target in _DIVS and not divides_by_tensor:
            b = _python_reciprocal(b, cdt)
        # One device for all three: the device of the operand with most dimensions (a 0-dim CPU
        # constant may meet CUDA tensors, which torch's own ops allow but a fused FMA kernel does not).
        dev = max((t for t in (a, b, c) if isinstance(t, torch.Tensor)), key=lambda t: t.dim()).device
        a, b, c = (_on_device(t, dev, cdt) for t in (a, b, c))
        if divides_by_tensor:
            b = self._reciprocal(b.to(cdt))
        if node.target is _aten.sub.Tensor:
            if site.operand == 0:
                c = -c
            else:
                a = -a
        return fma(a.to(cdt), b.to(cdt), c.to(cdt))  # broadcasts itself, chunk by chunk
