"""Why Inductor failed to build a program: its compiler's own error line, generated code its C++/Triton
compiler rejects (torch's bug), or a custom op it cannot compile (the program's)."""

from __future__ import annotations

import torch
import torch.fx


def compiler_error(exc: BaseException) -> str:
    """The line of an Inductor error that says what failed: the C++/Triton compiler's own ``error:``
    line when there is one (Inductor's first line only names the exception), else the first line."""
    text = str(exc).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    compiler = next((ln for ln in lines if "error:" in ln), None)
    return (compiler or (lines[0] if lines else type(exc).__name__))[:300]


def codegen_failed(exc: BaseException) -> bool:
    """Whether Inductor's generated code failed in the C++/Triton compiler (``CppCompileError``, maybe
    wrapped in Inductor's own error), not in lowering."""
    return codegen_compiler(exc) is not None


def codegen_compiler(exc: BaseException) -> str | None:
    """``"C++"`` or ``"CUDA"``: the compiler that rejected Inductor's generated code; None for another error."""
    seen: BaseException | None = exc
    while seen is not None:
        if type(seen).__name__ in ("CppCompileError", "CUDACompileError"):
            return "C++" if type(seen).__name__ == "CppCompileError" else "CUDA"
        seen = seen.__cause__ or seen.__context__
    return "C++" if str(exc) and "CppCompileError" in str(exc).splitlines()[0] else None


_TORCH_NAMESPACES = frozenset({"aten", "prims", "quantized", "_c10d_functional", "c10d_functional", "inductor"})


def custom_ops(gm: torch.fx.GraphModule) -> list[str]:
    """The names of the operators `gm` calls from libraries other than torch's own (custom ops)."""
    names = {
        n.target.name().split(".")[0] for n in gm.graph.nodes
        if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)
        and n.target.namespace not in _TORCH_NAMESPACES
    }
    return sorted(names)
