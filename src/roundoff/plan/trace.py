"""A Plan printed as runnable-looking Python, in the spirit of Thunder's traces.

One line per node, ``t5 = aten.mul.Tensor(x_f32, y_f32)  # n5 bf16[8, 16] compute=f32 model.py:12``,
with every precision change made explicit as its own line: ``x_f32 = convert_element_type(x, float32)``
where a stored value is widened for an opmath computation, ``t5_bf16 = round(t5, bf16)`` where a
value is rounded (RNE) to its storage format (after the op, at a kernel boundary, or as a graph
output). Kernels are headed ``# kernel 2 (pointwise): n3 n4 n5``; contracted FMA sites print as
``fma(a, b, -c)`` (a division folded under ``Division.RECIPROCAL_MULTIPLY`` as
``fma(a, aten.reciprocal.default(b), -c)``); CSE'd nodes, uncontracted FMA candidates and unmodeled
ops are comments. A tensor constant of the graph (``get_attr``) prints as ``t7 = constant('_tensor_constant0')``.
"""

from __future__ import annotations

import itertools
import keyword
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import torch
import torch.fx

from roundoff.capture.program import node_id
from roundoff.numerics import get_format
from roundoff.ops.classes import OpClass
from roundoff.plan import _dtypes as dt
from roundoff.plan.model import NodeDecision, Plan
from roundoff.policy.model import Negation

_UPCASTING = frozenset(
    {
        OpClass.POINTWISE_ARITHMETIC,
        OpClass.POINTWISE_TRANSCENDENTAL,
        OpClass.REDUCTION,
        OpClass.NORMALIZATION,
    }
)
_ACCUMULATING = frozenset(
    {OpClass.REDUCTION, OpClass.MATMUL, OpClass.CONVOLUTION, OpClass.ATTENTION}
)


@dataclass
class _Block:
    """Lines printed for one key (a node id, or "header"/"return"/"notes")."""

    key: str
    lines: list[str] = field(default_factory=list)
    anchor: int = 0  # index of the node's own line, aligned across columns side by side


def _shape(node: torch.fx.Node, dtype: torch.dtype | None) -> str:
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        return f"{dt.short(dtype or val.dtype)}{list(val.shape)}"
    if isinstance(val, (tuple, list)):
        return "(" + ", ".join(_shape_of(v) for v in val) + ")"
    return ""


def _shape_of(v: object) -> str:
    return f"{dt.short(v.dtype)}{list(v.shape)}" if isinstance(v, torch.Tensor) else repr(v)


class _Printer:
    """Walks the plan's program once, naming values and emitting the explicit casts."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.d = plan.decisions
        self.names: dict[str, str] = {}
        self.stored_name: dict[str, str] = {}  # node id -> var holding its value in storage format
        self.var_dtype: dict[str, torch.dtype | None] = {}
        self.cache: dict[tuple[str, str], str] = {}
        self.mul_operands: dict[str, list[str]] = {}
        self.blocks: list[_Block] = []
        self.kernels_seen: set[int] = set()
        self.current_group: int | None = None
        self.cse_by_kept: dict[str, list[str]] = {}
        for removed, kept in sorted(plan.cse.items()):
            self.cse_by_kept.setdefault(kept, []).append(removed)
        self.groups = {g.id: g for g in plan.groups}

    # -- names ---------------------------------------------------------------------------------
    def _name_placeholders(self, placeholders: list[torch.fx.Node]) -> None:
        """Each input is named after its program input name (``model.l0.weight`` ->
        ``model_l0_weight``), made a unique identifier; the placeholder name when there is none."""
        names = list(self.plan.program.input_names)
        taken: set[str] = set()
        for i, p in enumerate(placeholders):
            base = _ident(names[i]) if len(names) == len(placeholders) else p.name
            if keyword.iskeyword(base) or re.fullmatch(r"t\d+(_\w*)?", base):
                base = f"in_{base}"  # never a Python keyword nor one of the printer's own t-names
            name, k = base, 1
            while name in taken:
                name, k = f"{base}_{k}", k + 1
            taken.add(name)
            self.names[node_id(p)] = name

    def input_name(self, p: torch.fx.Node) -> str | None:
        """The program input name of placeholder `p` when its variable name does not spell it."""
        names = self.plan.program.input_names
        placeholders = [n for n in self.plan.program.nodes() if n.op == "placeholder"]
        if len(names) != len(placeholders):
            return None
        name = names[placeholders.index(p)]
        return None if name == self.names.get(node_id(p)) else name

    def _var(self, nid: str) -> str:
        return self.names.setdefault(nid, "t" + nid.lstrip("n").replace(".", "_").replace("@", "_"))

    def _emit_cast(
        self, lines: list[str], var: str, target: torch.dtype, fmt: str, rounding: bool
    ) -> str:
        key = (var, fmt)
        if key not in self.cache:
            new = f"{var}_{dt.short(target) if fmt != 'tf32' else 'tf32'}"
            if rounding:
                lines.append(f"{new} = round({var}, {fmt})")
            else:
                lines.append(
                    f"{new} = convert_element_type({var}, {str(target).removeprefix('torch.')})"
                )
            self.cache[key] = new
            self.var_dtype[new] = target
        return self.cache[key]

    def _read(self, lines: list[str], p: torch.fx.Node, c: NodeDecision) -> str:
        """The variable consumer `c` reads producer `p` from, emitting rounds/upcasts as needed."""
        pid = node_id(p)
        pd = self.d.get(pid)
        var = self._var(pid)
        if pd is not None and pid in self.stored_name:
            var = self.stored_name[pid]
        elif pd is not None and pid in c.rounded_inputs and dt.is_float(pd.storage_dtype):
            var = self._emit_cast(
                lines, var, pd.storage_dtype, get_format(pd.storage_dtype).name, True
            )
        dtype = self.var_dtype.get(var, pd.compute_dtype if pd else None)
        if not dt.is_float(dtype):
            return var
        if c.input_format is not None:
            target = dt.dtype_of_format(c.input_format, "input_format")
            if c.input_format == "tf32" or dt.wider(dtype, target) is dtype and dtype != target:
                return self._emit_cast(lines, var, target, c.input_format, True)
            if dtype != target:
                return self._emit_cast(lines, var, target, c.input_format, False)
            return var
        widens = dt.is_float(c.compute_dtype) and dtype != c.compute_dtype
        if (
            c.op_class in _UPCASTING
            and widens
            and dt.wider(dtype, c.compute_dtype) is c.compute_dtype
        ):
            return self._emit_cast(
                lines, var, c.compute_dtype, get_format(c.compute_dtype).name, False
            )
        return var

    def _moves_stored(self, p: torch.fx.Node, pd: NodeDecision) -> bool:
        """Whether `p` only moves values already held in its storage format (a bf16 slice of a bf16
        tensor): rounding it to that format is no step (trial 76: `round(t4, bf16)` lines in eager's trace)."""
        if pd.op_class is not OpClass.DATA_MOVEMENT:
            return False
        floats = [q for q in p.all_input_nodes if dt.is_float(getattr(q.meta.get("val"), "dtype", None))]
        return bool(floats) and all(  # an input, or a value it reads rounded to that format
            getattr(q.meta["val"], "dtype", None) == pd.storage_dtype
            and (q.op in ("placeholder", "get_attr") or node_id(q) in pd.rounded_inputs) for q in floats)

    def _arg(self, lines: list[str], a: object, c: NodeDecision) -> str:
        if isinstance(a, torch.fx.Node):
            return self._read(lines, a, c)
        if isinstance(a, (list, tuple)):
            inner = ", ".join(self._arg(lines, x, c) for x in a)
            return f"[{inner}]" if isinstance(a, list) else f"({inner}{',' if len(a) == 1 else ''})"
        if isinstance(a, float) and c.scalar_format:
            return f"round({a!r}, {c.scalar_format})"
        if isinstance(a, torch.dtype):
            return str(a).removeprefix("torch.")
        return repr(a)

    # -- nodes ---------------------------------------------------------------------------------
    def _kernel_header(self, block: _Block, d: NodeDecision) -> None:
        g = d.group
        if g is None or g == self.current_group or self.groups[g].kind == "single":
            return
        self.current_group = g
        group = self.groups[g]
        if g in self.kernels_seen:
            block.lines.append(f"# (kernel {g} continued)")
            return
        self.kernels_seen.add(g)
        again = [m for m in group.node_ids if self.d[m].group != g]
        extra = f"  (recomputed here: {' '.join(again)})" if again else ""
        block.lines.append(f"# kernel {g} ({group.kind}): {' '.join(group.node_ids)}{extra}")

    def node(self, n: torch.fx.Node) -> _Block:
        nid = node_id(n)
        d = self.d[nid]
        block = _Block(nid)
        if n.op == "placeholder":
            self.stored_name[nid] = self._var(nid)
            self.var_dtype[self._var(nid)] = d.storage_dtype
            return block
        if n.op == "get_attr":  # a tensor constant of the graph, stored in its own dtype
            var = self._var(nid)
            block.lines.append(f"{var} = constant({str(n.target)!r})  # {self._comment(n, d)}")
            self.stored_name[nid] = var
            self.var_dtype[var] = d.storage_dtype
            return block
        self._kernel_header(block, d)
        lines = block.lines
        var = self._var(nid)
        comment = self._comment(n, d)
        if d.fma is not None and d.fma.contracted:
            rhs = self._fma_rhs(lines, n, d)
            comment += f"  FMA contraction of {d.fma.mul_id} into {nid}"
        else:
            args = [self._arg(lines, a, d) for a in n.args]
            args += [f"{k}={self._arg(lines, v, d)}" for k, v in n.kwargs.items()]
            rhs = (
                f"{args[0]}[{', '.join(args[1:])}]"
                if d.op == "operator.getitem"
                else f"{d.op}({', '.join(args)})"
            )
            if d.negation is Negation.SUBTRACT_FROM_ZERO:
                rhs = f"aten.rsub.Scalar({args[0]}, 0.0)"
                comment += "  neg as 0.0 - x (Triton's unary minus): -(+0.0) is +0.0"
            if d.gemm is not None:
                comment += f"  computed in {d.gemm}'s GEMM as addmm: its fp32 accumulator takes the addend, one rounding"
            if n.target in (torch.ops.aten.mul.Tensor, torch.ops.aten.mul.Scalar):
                self.mul_operands[nid] = args
            elif n.target in (torch.ops.aten.div.Tensor, torch.ops.aten.div.Scalar) and len(args) > 1:
                # a division folded into an FMA is a * R, R the (approximate) reciprocal of b
                self.mul_operands[nid] = [args[0], f"aten.reciprocal.default({args[1]})"]
            if d.fma is not None:
                alt = f"; alternative {', '.join(d.fma.alternatives)}" if d.fma.alternatives else ""
                comment += f"  FMA candidate: {d.fma.mul_id} into {nid}, not contracted{alt}"
        block.anchor = len(lines)
        lines.append(f"{var} = {rhs}  # {comment}")
        self.var_dtype[var] = d.compute_dtype
        if self._moves_stored(n, d):  # its values are held in its storage format already: no round to print
            self.var_dtype[var] = d.storage_dtype
            self.stored_name[nid] = var
        elif d.rounds_result and dt.is_float(d.storage_dtype) and d.compute_dtype != d.storage_dtype:
            self.stored_name[nid] = self._emit_cast(
                lines, var, d.storage_dtype, get_format(d.storage_dtype).name, True
            )
        elif d.compute_dtype == d.storage_dtype or not dt.is_float(d.storage_dtype):
            self.stored_name[nid] = var
        for removed in self.cse_by_kept.get(nid, []):
            lines.append(f"# {removed}: merged into {nid} by common-subexpression elimination")
        return block

    def _fma_rhs(self, lines: list[str], n: torch.fx.Node, d: NodeDecision) -> str:
        site = d.fma
        a, b = self.mul_operands.get(site.mul_id, ["?", "?"])[:2]
        other = n.args[1 - site.operand]
        c = self._arg(lines, other, d)
        if n.target is torch.ops.aten.sub.Tensor:
            if site.operand == 0:
                return f"fma({a}, {b}, -{c})"
            return f"fma(-{a}, {b}, {c})"
        return f"fma({a}, {b}, {c})"

    def _comment(self, n: torch.fx.Node, d: NodeDecision) -> str:
        parts = [f"{d.node_id} {_shape(n, d.storage_dtype)}".rstrip()]
        if dt.is_float(d.compute_dtype) and d.op_class.computes:
            parts.append(
                f"{'acc' if d.op_class in _ACCUMULATING else 'compute'}={dt.short(d.compute_dtype)}"
            )
        if d.input_format is not None:
            parts.append(f"inputs={d.input_format}")
        narrowing = dt.is_float(d.storage_dtype) and d.compute_dtype != d.storage_dtype
        if d.op_class is OpClass.CAST and narrowing and not d.rounds_result:
            parts.append(f"cast not applied in the kernel: value stays {dt.short(d.compute_dtype)}")
        if d.node_id in self.plan.copies:
            parts.append(f"copy of {self.plan.copies[d.node_id]} recomputed in this kernel")
        if d.op_class is OpClass.UNMODELED:
            parts.append("UNMODELED: numerics not known to roundoff")
        if d.source:
            parts.append(d.source)
        return " ".join(parts)

    def output(self, n: torch.fx.Node) -> _Block:
        block = _Block("return")
        refs: list[str] = []
        for p in _flatten(n.args[0]):
            if not isinstance(p, torch.fx.Node):
                refs.append(repr(p))
                continue
            pid = node_id(p)
            pd = self.d[pid]
            if pid in self.stored_name:
                refs.append(self.stored_name[pid])
            elif dt.is_float(pd.storage_dtype):
                fmt = get_format(pd.storage_dtype).name
                refs.append(
                    self._emit_cast(block.lines, self._var(pid), pd.storage_dtype, fmt, True)
                )
                block.lines[-1:] = (
                    [block.lines[-1] + "  # graph output stored"] if block.lines else []
                )
            else:
                refs.append(self._var(pid))
        block.lines.append(f"return ({', '.join(refs)}{',' if len(refs) == 1 else ''})")
        return block


def _flatten(a: object) -> Iterable[object]:
    if isinstance(a, (list, tuple)):
        for x in a:
            yield from _flatten(x)
    else:
        yield a


def _header(plan: Plan, printer: _Printer, placeholders: list[torch.fx.Node]) -> _Block:
    p = plan.policy
    block = _Block("header")
    block.lines.append(
        f"# roundoff plan of {plan.program.name!r} under policy {p.name!r}: {p.description}"
    )
    block.lines.append(f"# source: {p.source}")
    block.lines.append(
        f"# rounding={p.rounding.value} fusion={p.fusion.value} fma={p.fma.value} scalars={p.scalars.value}"
        f" division={p.division.value} negation={p.negation.value} matmul_add={p.matmul_add.value}"
        + (f" storage={p.storage}" if p.storage else "")
        + (f" matmul_input={p.matmul_input}" if p.matmul_input else "")
    )
    args = ", ".join(printer._var(node_id(n)) for n in placeholders)
    block.lines.append(f"def {_ident(plan.program.name)}({args}):")
    for n in placeholders:
        shape = _shape(n, plan.decisions[node_id(n)].storage_dtype)
        line = f"  # {printer._var(node_id(n))}: {shape}"
        original = printer.input_name(n)
        block.lines.append(line + (f" (input {original})" if original else ""))
    return block


def _ident(name: str) -> str:
    s = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name) or "program"
    return s if s[0].isalpha() or s[0] == "_" else f"_{s}"


def _blocks(plan: Plan) -> list[_Block]:
    printer = _Printer(plan)
    nodes = list(plan.program.nodes())
    placeholders = [n for n in nodes if n.op == "placeholder"]
    printer._name_placeholders(placeholders)
    blocks = [_header(plan, printer, placeholders)]
    for n in nodes:
        block = printer.output(n) if n.op == "output" else printer.node(n)
        block.lines = ["  " + line for line in block.lines]
        blocks.append(block)
    notes = _Block("notes")
    notes.lines.extend(f"# note: {text}" for text in plan.notes)
    blocks.append(notes)
    return blocks


def format_trace(plan: Plan) -> str:
    """The plan as a Thunder-style trace (see the module docstring)."""
    if not isinstance(plan, Plan):
        raise TypeError(
            f"format_trace() takes a roundoff Plan (from roundoff.plan.plan), got {type(plan).__name__}"
        )
    return "\n".join(line for b in _blocks(plan) for line in b.lines) + "\n"


def format_side_by_side(plan_a: Plan, plan_b: Plan, width: int = 0) -> str:
    """Two plans of one program as two columns, aligned node by node (``|`` between them).

    `width`: column width of the left plan (0: its longest line). Nodes present in one plan only
    (decompositions, CSE) get an empty cell on the other side.
    """
    for name, p in (("plan_a", plan_a), ("plan_b", plan_b)):
        if not isinstance(p, Plan):
            raise TypeError(
                f"format_side_by_side() {name} must be a roundoff Plan, got {type(p).__name__}"
            )
    a, b = _blocks(plan_a), _blocks(plan_b)
    b_by_key = {blk.key: blk for blk in b}
    a_by_key = {blk.key: blk for blk in a}
    order = _merge_orders([blk.key for blk in a], [blk.key for blk in b])
    col = width or max((len(line) for blk in a for line in blk.lines), default=0)
    rows: list[str] = []
    for key in order:
        left = a_by_key[key].lines if key in a_by_key else []
        right = b_by_key[key].lines if key in b_by_key else []
        if left and right:  # the nodes' own lines side by side, casts above and below them
            pad = a_by_key[key].anchor - b_by_key[key].anchor
            left, right = [""] * max(-pad, 0) + left, [""] * max(pad, 0) + right
        for la, lb in itertools.zip_longest(left, right, fillvalue=""):
            rows.append(f"{la[:col]:<{col}} | {lb}".rstrip())
    return "\n".join(rows) + "\n"


def _merge_orders(a: list[str], b: list[str]) -> list[str]:
    """Keys of `a` in order, with keys only in `b` inserted after their predecessor in `b`."""
    out = list(a)
    seen = set(a)
    last = "header"
    for key in b:
        if key not in seen:
            out.insert(out.index(last) + 1, key)
            seen.add(key)
        last = key
    return out
