"""Standalone repro scripts: the captured program as plain PyTorch, run before and after a fix.

`repro_script` writes a Python file that needs only torch. It holds the inputs bit for bit
(base64 of their raw bytes), the program as straight-line aten calls (one line per node, with the
user's source line as a comment), and two decision tables — the policy as planned, and the policy
with blame's overrides — evaluated by `repro_runtime` (copied in verbatim) with explicit casts and
an fp64 round-to-odd FMA. It prints, for each table, the error against an fp64 run of the same
graph, and the verdict of PyTorch's own accuracy rule against the chosen reference, as the lines
``VERDICT before: DIVERGES|OK`` and ``VERDICT after: DIVERGES|OK``.
"""

from __future__ import annotations

import base64
import inspect
import math
import operator
from typing import Any

import torch
import torch.fx

from roundoff.blame import repro_runtime
from roundoff.capture.program import Program, node_id, node_source
from roundoff.plan.model import Plan

_FORMAT_DTYPES = {
    "fp64": torch.float64,
    "fp32": torch.float32,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "fp8_e4m3fn": torch.float8_e4m3fn,
    "fp8_e5m2": torch.float8_e5m2,
}


class ReproError(ValueError):
    """The program or plan holds something a plain-PyTorch repro cannot express."""


def _format_dtype(fmt: str | None, where: str) -> torch.dtype | None:
    if fmt is None:
        return None
    try:
        return _FORMAT_DTYPES[fmt]
    except KeyError:
        raise ReproError(
            f"{where}: format {fmt!r} has no torch dtype, so a plain-PyTorch repro cannot round to "
            f"it; formats a repro can express: {', '.join(_FORMAT_DTYPES)}"
        ) from None


def _literal(obj: Any) -> str:
    """Python source for an FX argument (node references become ``R("id")``)."""
    if isinstance(obj, torch.fx.Node):
        return f"R({node_id(obj)!r})"
    if isinstance(obj, bool) or obj is None or isinstance(obj, (int, str)):
        return repr(obj)
    if isinstance(obj, float):
        return repr(obj) if math.isfinite(obj) else f"float({str(obj)!r})"
    if isinstance(obj, (torch.dtype, torch.layout, torch.memory_format)):
        return str(obj)
    if isinstance(obj, torch.device):
        return f"torch.device({str(obj)!r})"
    if isinstance(obj, tuple):
        inner = ", ".join(_literal(x) for x in obj)
        return f"({inner},)" if len(obj) == 1 else f"({inner})"
    if isinstance(obj, list):
        return "[" + ", ".join(_literal(x) for x in obj) + "]"
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{k!r}: {_literal(v)}" for k, v in obj.items()) + "}"
    raise ReproError(f"cannot write argument {obj!r} ({type(obj).__name__}) into a repro script")


def _target(target: Any) -> str:
    if isinstance(target, torch._ops.OpOverload):
        return f"torch.ops.{target.namespace}.{target._opname}.{target._overloadname}"
    if getattr(operator, getattr(target, "__name__", ""), None) is target:
        return f"operator.{target.__name__}"
    raise ReproError(f"cannot write call target {target!r} into a repro script (aten ops only)")


def _tensor_source(t: torch.Tensor) -> str:
    t = t.detach().cpu().contiguous()
    raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
    return f"load({base64.b64encode(raw).decode()!r}, {t.dtype}, {tuple(t.shape)!r})"


def _storage(plan: Plan, n: torch.fx.Node) -> Any:
    d = plan.decisions.get(node_id(n))
    if d is not None and d.storage_dtype is not None:
        return d.storage_dtype
    val = n.meta.get("val")
    if isinstance(val, (tuple, list)):
        return tuple(v.dtype if isinstance(v, torch.Tensor) else None for v in val)
    return val.dtype if isinstance(val, torch.Tensor) else None


def _table(plan: Plan) -> str:
    """The plan's decisions as a literal dict, one entry per call_function node."""
    rows = []
    for n in plan.program.nodes():
        if n.op != "call_function":
            continue
        nid = node_id(n)
        d = plan.decisions.get(nid)
        st = _storage(plan, n)
        comp = d.compute_dtype if d is not None and d.compute_dtype is not None else st
        comp = comp if isinstance(comp, torch.dtype) else torch.float32
        cdt = repro_runtime.container(comp) if comp.is_floating_point else torch.float32
        narrow = comp if comp in repro_runtime.NARROW else None
        fma = None
        if d is not None and d.fma is not None and d.fma.contracted:
            negate = "none"
            if n.target is torch.ops.aten.sub.Tensor:
                negate = "c" if d.fma.operand == 0 else "a"
            divides = n.args[d.fma.operand].target in (torch.ops.aten.div.Tensor, torch.ops.aten.div.Scalar)
            fma = (d.fma.mul_id, d.fma.operand, negate, divides)
        entry = {
            "cdt": cdt,
            "narrow": narrow,
            "rounds": bool(d.rounds_result) if d is not None else False,
            "rounded_inputs": tuple(sorted(d.rounded_inputs)) if d is not None else (),
            "input_format": _format_dtype(d.input_format if d else None, f"node {nid}"),
            "scalar_format": _format_dtype(d.scalar_format if d else None, f"node {nid}"),
            "fma": fma,
        }
        rows.append(f"    {nid!r}: {_literal(entry)},")
    return "{\n" + "\n".join(rows) + "\n}"


def _diff_comment(before: Plan, after: Plan) -> str:
    changed = [nid for nid, d in after.decisions.items() if before.decisions.get(nid) != d]
    return f"# AFTER differs from BEFORE at: {', '.join(changed) or 'nothing'}\n"


def _program_body(program: Program) -> tuple[list[str], list[str]]:
    lines: list[str] = []
    outputs: list[str] = []
    inputs = 0
    for n in program.nodes():
        nid = node_id(n)
        if n.op == "placeholder":
            lines.append(f"    run.input({nid!r}, INPUTS[{inputs}])  # {n.name}")
            inputs += 1
        elif n.op == "call_function":
            src = node_source(n)
            call = (f"    run.node({nid!r}, {_target(n.target)}, {_literal(tuple(n.args))}, "
                    f"{_literal(dict(n.kwargs))})")
            lines.append(call + (f"  # {src}" if src else ""))
        elif n.op == "output":
            flat: list[torch.fx.Node] = []
            torch.fx.node.map_arg(n.args, flat.append)
            outputs = [node_id(x) for x in flat]
        else:
            raise ReproError(f"node {nid} is a {n.op!r} node; a repro writes aten graphs only")
    return lines, outputs


def _storage_map(plan: Plan) -> str:
    rows = [f"    {node_id(n)!r}: {_literal(_storage(plan, n))}," for n in plan.program.nodes()
            if n.op in ("placeholder", "call_function")]
    return "{\n" + "\n".join(rows) + "\n}"


_MAIN = """

def program(run):
{body}
    return run.outputs({outputs!r})


def main():
    eager = program(Run("eager", STORAGE))
    fp64 = program(Run("fp64", STORAGE))
    print(f"reference: {{REFERENCE}}; fp64 oracle of the same graph; tolerance {{TOL}}, rmse ratio {{RATIO or 'as torch._dynamo.utils.same'}}")
    for name, table in (("before", BEFORE), ("after", AFTER)):
        res = program(Run(table, STORAGE))
        ok = verdict(eager, res, fp64, REFERENCE, TOL, RATIO)
        print(f"{{name}} ({{LABELS[name]}}): {{describe(res, fp64)}}")
        print(f"VERDICT {{name}}: {{'OK' if ok else 'DIVERGES'}}")


if __name__ == "__main__":
    main()
"""


def _docstring_safe(text: str) -> str:
    """`text` inside a triple-quoted docstring: backslashes and double quotes escaped, so a policy
    or program name holding ``\"\"\"`` cannot end the docstring (names go into code as repr)."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def repro_script(
    program: Program,
    before: Plan,
    after: Plan,
    inputs: tuple[torch.Tensor, ...],
    *,
    reference: str = "eager",
    tol: float = 1e-4,
    rmse_ratio: float | None = None,
    title: str = "",
    notes: tuple[str, ...] = (),
) -> str:
    """Source of a standalone repro.py (see the module docstring); needs only torch to run.

    `before` and `after` must be plans of `program` (the policy, and the policy with the fix).
    Raises ReproError when the graph or plan holds something plain PyTorch cannot express here.
    """
    if reference not in ("eager", "oracle"):
        raise ValueError(f"reference must be 'eager' or 'oracle', got {reference!r}")
    placeholders = [n for n in program.nodes() if n.op == "placeholder"]
    if len(placeholders) != len(inputs):
        raise ValueError(
            f"program {program.name!r} takes {len(placeholders)} inputs, {len(inputs)} given"
        )
    ids = [node_id(n) for n in program.nodes()]
    for p in (before, after):
        if [node_id(n) for n in p.program.nodes()] != ids:
            raise ReproError(
                f"plan of policy {p.policy.name!r} is of a different graph than the program given; "
                "pass plans of the same (planned) program"
            )
    body, outputs = _program_body(program)
    runtime = inspect.getsource(repro_runtime).split("from __future__ import annotations", 1)[1]
    header = [
        '"""roundoff repro: ' + _docstring_safe(title or program.name) + ".",
        "",
        "Plain PyTorch (no roundoff needed): run `python repro.py`. It evaluates the captured aten",
        "graph eagerly, in fp64, and under two precision plans written out as decision tables",
        "(BEFORE: the policy as planned; AFTER: with the fix), and prints PyTorch's own accuracy",
        "verdict (torch._dynamo.utils.same, RMSE against fp64) for each.",
    ]
    header += [""] + [f"  {_docstring_safe(line)}" for line in notes] if notes else []
    header.append('"""')
    parts = [
        "\n".join(header),
        "from __future__ import annotations\n\nimport operator  # noqa: F401 (getitem nodes)",
        runtime.strip(),
        f"REFERENCE = {reference!r}\nTOL = {tol!r}\nRATIO = {rmse_ratio!r}",
        f"LABELS = {{'before': {before.policy.name!r}, 'after': {after.policy.name + ' + fix'!r}}}",
        "INPUTS = [\n" + "".join(f"    {_tensor_source(t)},\n" for t in inputs) + "]",
        f"STORAGE = {_storage_map(before)}",
        f"BEFORE = {_table(before)}",
        _diff_comment(before, after) + f"AFTER = {_table(after)}",
    ]
    return "\n\n\n".join(parts) + _MAIN.format(body="\n".join(body), outputs=outputs)
