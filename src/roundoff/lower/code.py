"""A lowered graph as Python: the printed trace, and standalone source for a repro script.

`format_lowered(plan)` is what ``roundoff trace --lowered`` prints: a header and `lowered_code`.
`lowered_code(gm)` is the graph's own FX code (runnable with roundoff imported), with a comment line
opening each plan node's ops: ``# n5 aten.sub.Tensor  [kernel 2: pointwise]``.

`standalone_source(gm, name)` is a class ``name`` whose ``forward`` is that code and whose tensor
constants are stored bit for bit, calling the primitives as plain functions ``roundoff_round_to`` / ``roundoff_fma``;
`primitives_source()` is the source of those two functions, taken verbatim from
``roundoff.numerics`` (the one implementation), so a script holding both needs only torch.
"""

from __future__ import annotations

import base64
import importlib
import inspect
import re
import types

import torch
import torch.fx

from roundoff.lower.lower import META, LoweredFrom, lower
from roundoff.numerics import _eager, _kernels, compile_after, formats, rounding
from roundoff.plan.model import Plan

__all__ = [
    "format_lowered", "load_tensor", "lowered_code", "primitives_source", "standalone_source", "tensor_source",
]

#: The modules of roundoff.numerics that `round_to` and `fma` are made of, in dependency order.
_PRIMITIVE_MODULES: tuple[types.ModuleType, ...] = (
    formats, _kernels, _eager, compile_after, rounding, importlib.import_module("roundoff.numerics.fma"))
_ROUNDOFF_IMPORT = re.compile(r"^from roundoff\.[\w.]+ import (\([^)]*\)|[^\n]*)\n", re.MULTILINE)
_ASSIGN = re.compile(r"^    (\w+) = ")


def _origin_comment(o: LoweredFrom) -> str:
    kernel = f"  [kernel {o.kernel}: {o.kernel_kind}]" if o.kernel is not None else ""
    return f"# {o.node_id} {o.op}{kernel}"


def lowered_code(gm: torch.fx.GraphModule) -> str:
    """The lowered graph's Python code, each plan node's ops opened by a comment naming it."""
    origin = {n.name: n.meta.get(META) for n in gm.graph.nodes}
    lines, last = [], None
    for line in gm.code.strip("\n").splitlines():
        m = _ASSIGN.match(line)
        o = origin.get(m.group(1)) if m else None
        if o is not None and o != last:
            lines.append("    " + _origin_comment(o))
            last = o
        lines.append(line)
    return "\n".join(lines) + "\n"


def format_lowered(plan: Plan) -> str:
    """`plan` lowered (``roundoff.lower.lower`` on the capture's example inputs), printed as Python."""
    p = plan.policy
    head = [
        f"# roundoff lowered plan of {plan.program.name!r} under policy {p.name!r}: {p.description}",
        "# every rounding is roundoff::round_to(x, fmt), every contracted FMA roundoff::fma(a, b, c);",
        "# a value no round_to touches is kept in its compute dtype. Executing this is the emulation.",
    ]
    return "\n".join(head) + "\n" + lowered_code(lower(plan))


def primitives_source() -> str:
    """Source of ``round_to`` and ``fma`` with what they use, copied from roundoff.numerics."""
    parts = []
    for mod in _PRIMITIVE_MODULES:
        src = inspect.getsource(mod).replace("from __future__ import annotations\n", "", 1)
        src = _ROUNDOFF_IMPORT.sub("", src)
        parts.append(f"# ---- {mod.__name__} (roundoff's source, verbatim but for its imports) ----\n{src.strip()}\n")
    return "\n\n".join(parts)


def load_tensor(b64: str, dtype: torch.dtype, shape: tuple[int, ...]) -> torch.Tensor:
    """A tensor from its raw little-endian bytes (base64), bit for bit."""
    raw = bytearray(base64.b64decode(b64))
    if not raw:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(raw, dtype=torch.uint8).view(dtype).reshape(shape).clone()


def tensor_source(t: torch.Tensor) -> str:
    """A ``load_tensor(...)`` call recreating CPU tensor `t` bit for bit."""
    t = t.detach().cpu().contiguous()
    raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
    return f"load_tensor({base64.b64encode(raw).decode()!r}, {t.dtype}, {tuple(t.shape)!r})"


def standalone_source(gm: torch.fx.GraphModule, name: str) -> str:
    """Class `name` whose ``forward(*inputs)`` runs `gm`, with the primitives called as the plain
    functions ``roundoff_round_to(x, fmt)`` / ``roundoff_fma(a, b, c)`` (names no FX node takes)."""
    consts = []
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            value = getattr(gm, n.target)
            if not isinstance(value, torch.Tensor):
                raise ValueError(f"lowered graph attribute {n.target!r} is a {type(value).__name__}, not a tensor")
            consts.append(f"        self.{n.target} = {tensor_source(value)}")
    code = lowered_code(gm)
    code = code.replace("torch.ops.roundoff.round_to.default(", "roundoff_round_to(")
    code = code.replace("torch.ops.roundoff.fma.default(", "roundoff_fma(")
    body = "\n".join("    " + line if line else line for line in code.splitlines())
    init = "\n".join(["    def __init__(self):", *consts, "        pass"])
    return f"class {name}:\n{init}\n\n{body}\n"
