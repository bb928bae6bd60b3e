"""Compile a captured program with real Inductor and read every buffer its kernels write.

Why this hook (torch 2.9-2.13): Inductor's own ways to see intermediate values change the program
they observe. ``config.generate_intermediate_hooks`` and
``aot_inductor.debug_intermediate_value_printer`` insert calls into the generated wrapper, and
marking every value as a graph output (Polygraphy's way) changes what Inductor fuses. Instead:

- *Which values*: while Inductor lowers the graph, `GraphLowering.run_node` is wrapped to keep (not
  change) what each FX node lowers to; once the module is generated, the buffer that result was
  realized in is the node's value (a partial result, such as the sum inside a mean, is not). Every
  node of the graph handed to Inductor carries its roundoff id in ``node.meta["custom"]``, which AOTAutograd and Inductor copy
  to the nodes they make from it (decompositions and pattern replacements included), so a buffer
  maps to the Program node whose value it holds. The FX graph cache is off for this compile (a
  cache hit would skip lowering); the generated code does not depend on it.
- *The values*: the generated wrapper calls its kernels through module globals (``cpp_fused_*`` on
  CPU, ``triton_*`` objects' ``.run`` on CUDA, ``extern_kernels.mm(..., out=buf)``) and looks them
  up at call time, so while the observed run lasts those globals are replaced by wrappers that call
  the real kernel, then read the buffers it wrote from the caller's frame: every ``bufN`` local
  passed to the kernel that no earlier kernel wrote. The module's code, and so the kernels, their
  count and their launch order, stay exactly what Inductor generated (tests compare the source).

Fallback kernels whose result the wrapper assigns (``buf3 = torch.ops.aten.x(...)``) are not tapped:
their results are read at the next kernel given them, credited to the fallback op (`fallback_results`).
Buffers whose origin node has no roundoff id are not read.
"""

from __future__ import annotations

import contextlib
import copy
import re
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch
import torch.fx

from roundoff.capture.program import Program
from roundoff.capture.uninitialised import packet_name
from roundoff.execute.node_numerics import stride_free
from roundoff.observed.compile_errors import (
    codegen_compiler,
    codegen_failed,
    compiler_error,
    custom_ops,
)
from roundoff.ops.classes import OpClass
from roundoff.ops.classify import classify
from roundoff.plan.partitioner import custom_id, label

#: Set on the nodes of a Program node with several outputs (``native_batch_norm_backward``'s three
#: gradients): no one buffer holds its value, and Inductor's last node made from it is one of the
#: outputs (or an intermediate) of a decomposition whose order is Inductor's own
MULTI_OUTPUT_KEY = "roundoff_multi_output"
#: ``meta["custom"]`` key of a node that is a step of a Program node's decomposition, not the last node made
#: from it (`mark_decomposition_steps`): a part of a partitioned step may hold such a step alone (a backward
#: recomputing ``hardtanh``'s fp32 upcast of its input for ``hardtanh_backward``), which is not the node's value
DECOMPOSITION_STEP_KEY = "roundoff_decomposition_step"
_BUF = re.compile(r"buf\d+$")
#: ``buf20 = buf7; del buf7  # reuse``, ``buf37 = reinterpret_tensor(buf28, ...); del buf28  # reuse``: a
#: buffer made in the memory of a dead one (its own name, not a returned result's)
_REUSE = re.compile(r"^\s*(buf\d+) = [^\n]*; del buf\d+\s+# reuse", re.MULTILINE)
_FALLBACK = re.compile(r"^\s*(buf\d+) = (torch\.ops\.[\w.]+)\(", re.MULTILINE)
_ITEM = re.compile(r"^\s*(buf\d+) = (buf\d+)\[\d+\]", re.MULTILINE)
_KERNEL = re.compile(r"(cpp_fused|triton_|cpp_|cuda_fused)\w*$")


class ObserveError(ValueError):
    """Bad input to observe (backend, device, reference) or a program the backend cannot compile."""


class CompileError(ObserveError):
    """Inductor failed on roundoff's captured graph of the program (not on the user's input)."""


@dataclass(frozen=True)
class BufferInfo:
    """One buffer Inductor materialises: the Program node whose value it holds, what wrote it."""

    name: str  # "buf3"
    node_id: str  # roundoff id of the origin node
    kind: str  # "pointwise", "reduction", "matmul" (extern kernel), "template" (matmul + epilogue)
    fused: tuple[str, ...]  # roundoff ids of every Program node fused into it, graph order
    divisor: int = 1  # the buffer holds the node's value times this: the sum inside a mean (`_mean_sums`)
    #: A concatenation (``cat``/``stack``) whose slices the kernels making them write in place: the
    #: buffers of those slices. It is whole only where one kernel writes every slice (a scan's steps
    #: stacked in one fused loop); where a later kernel writes into it, the learning run drops it
    #: (`roundoff.observed.replay`: after the first writer most of it is still unwritten memory)
    slices: tuple[str, ...] = ()
    #: The node is a constant fill (`_FILLS`: ``new_zeros``, ``full``, ...): a buffer holding anything else
    #: after its kernel holds what ops fused into that kernel wrote into it, not the node's value
    #: (`roundoff.observed.replay`: not judged, as a buffer an untapped op finishes)
    fill: bool = False
    #: An op made for another Program node writes into it in place (Inductor's mutation of this buffer):
    #: afterwards it holds that node's value, not its own (trial 94: DeepseekV3's ``new_empty`` key filled by
    #: slice copies; the slices' backward zeroes, in place, the key gradient's columns the second copy
    #: overwrote). Kept from the kernel that wrote it, before that write; not judged where that op is in the
    #: same kernel (`roundoff.observed.replay`). (A mutation made for its own node finishes its value: an
    #: ``index_put`` accumulating into the zeros an earlier kernel wrote, trial 49.)
    overwritten: bool = False


@dataclass
class CompiledProgram:
    """The wrapper module Inductor generated for a program, its callable and its buffers."""

    module: types.ModuleType
    run: Callable[[list[Any]], Any]
    buffers: dict[str, BufferInfo]
    #: buffers that hold no Program node's whole value -> the roundoff ids of the nodes they were
    #: computed for (an intermediate of Inductor's decomposition: a LayerNorm's mean, a softmax's sum)
    partials: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: buffers codegen never stores (every reader is in the kernel that computes them), though that kernel
    #: may take their memory: an ``in_out_ptr`` reusing a dead input's (trial 55: a saved ``mm`` passed as
    #: the ``exp`` it would have held); what that memory holds after the kernel is not their value
    unstored: frozenset[str] = frozenset()

    @property
    def source(self) -> str:
        """The generated wrapper's Python source (kernels included, as Inductor wrote it)."""
        with open(self.module.__file__) as f:
            return f.read()


def _kind(buf: Any, node: torch.fx.Node | None = None) -> str:
    """The buffer's kind as observe reports it: Inductor's IR kind, except that the value of a
    reduction op (a mean: Inductor's sum, then a pointwise division in the same kernel) is a reduction."""
    from torch._inductor import ir

    extern = isinstance(buf, ir.ExternKernel | ir.TemplateBuffer)
    if not extern and node is not None and node.op == "call_function" and (
            classify(node.target).op_class is OpClass.REDUCTION):
        return "reduction"
    if isinstance(buf, ir.TemplateBuffer):
        return "template"
    if isinstance(buf, ir.ExternKernel):
        return "matmul" if "mm" in str(getattr(buf, "python_kernel_name", "")) else "extern"
    data = getattr(buf, "data", None)
    return "reduction" if isinstance(data, ir.Reduction) else "pointwise"


def _held_buffer(value: Any) -> Any:
    """The buffer a lowered FX node's result is stored in, if it is realized as its own buffer (not a
    view, not an input, not inlined into its users)."""
    from torch._inductor import ir

    for _ in range(2):  # TensorBox -> StorageBox -> buffer
        if isinstance(value, (ir.TensorBox, ir.StorageBox)):
            value = value.data
    return value if isinstance(value, ir.Buffer) and not isinstance(value, ir.InputBuffer) else None


_MEANS = (torch.ops.aten.mean.dim, torch.ops.aten.mean.default)


def _mean_sums(buffers: list[Any], graph: torch.fx.Graph, table: dict[str, BufferInfo]) -> dict[str, BufferInfo]:
    """The reduction buffers that hold the sum inside a mean no buffer holds (Inductor lowers
    ``mean`` as a sum and a division it fuses into the readers): each maps to the mean's node with the
    reduced count as `divisor`. A kernel may take that sum from values it never stored rounded (an
    RMSNorm's mean of squares of an unrounded residual sum); observing it lets the readers be judged
    from what they read."""
    from torch._inductor import ir

    order = {n: i for i, n in enumerate(graph.nodes)}
    held = {info.node_id for info in table.values()}
    found = {}
    for buf in buffers:
        name = buf.get_name()
        if name in table or not isinstance(getattr(buf, "data", None), ir.Reduction):
            continue
        origins = sorted(getattr(buf, "origins", ()) or (), key=lambda n: order.get(n, -1))
        means = [n for n in origins if n.target in _MEANS and custom_id(n) not in held]
        val, src = (means[-1].meta.get("val"), means[-1].args[0].meta.get("val")) if means else (None, None)
        if not means or not isinstance(val, torch.Tensor) or not isinstance(src, torch.Tensor) or not val.numel():
            continue
        fused = tuple(dict.fromkeys(i for n in origins if (i := custom_id(n)) is not None))
        found[name] = BufferInfo(name, custom_id(means[-1]), "reduction", fused, divisor=src.numel() // val.numel())
    return found


#: Ops whose result is a constant fill of a new tensor: no arithmetic to judge, and Inductor may write
#: later ops' values into their buffer in place (trial 84: a Swin pooler's gradient scattered into its
#: `new_zeros`, judged against fp64's zeros as "a wrong value").
_FILLS = frozenset({"new_zeros", "new_ones", "new_full", "new_empty", "zeros", "ones", "full", "empty",
                    "zeros_like", "ones_like", "full_like", "empty_like", "scalar_tensor"})


def _table(lowered: list[tuple[Any, Any]], graph: torch.fx.Graph) -> dict[str, BufferInfo]:
    """{buffer name: BufferInfo} for the buffers that hold a Program node's value: the buffer a node's
    lowering returned (so not a partial result such as the sum inside a mean), for the last node made
    from that Program node (an intermediate of a decomposition is not its value); a concatenation with
    the buffers of its slices (`BufferInfo.slices`: kept only where one kernel writes them all)."""
    nodes = list(graph.nodes)
    order = {n: i for i, n in enumerate(nodes)}
    last = {nid: n for n in nodes if (nid := custom_id(n)) is not None}
    table = {}
    from torch._inductor import ir

    for node, value in lowered:
        nid = custom_id(node)
        buf = _held_buffer(value)
        custom = node.meta.get("custom") or {}
        if (nid is None or buf is None or last.get(nid) is not node or custom.get(MULTI_OUTPUT_KEY)
                or custom.get(DECOMPOSITION_STEP_KEY)):
            continue
        slices = tuple(i.get_name() for i in buf.inputs if isinstance(i, ir.Buffer)) if isinstance(
            buf, ir.ConcatKernel) else ()
        origins = sorted(getattr(buf, "origins", ()) or (), key=lambda n: order.get(n, -1))
        fused = tuple(dict.fromkeys(i for n in origins if (i := custom_id(n)) is not None))
        table[buf.get_name()] = BufferInfo(buf.get_name(), nid, _kind(buf, node), fused, slices=slices,
                                           fill=packet_name(node) in _FILLS)
    return table


def mark_decomposition_steps(gm: torch.fx.GraphModule) -> None:
    """Mark (`DECOMPOSITION_STEP_KEY`) each node of `gm`, a whole labelled graph retraced through a decomposition
    table, made from a Program node but not the last node made from it: the graphs it is split into keep the
    mark, and a buffer holding such a node alone is not taken for the Program node's value (trial 98: a bf16
    MobileNet's backward recomputed ``hardtanh``'s fp32 upcast of a BatchNorm's output, mapped to ``hardtanh``
    and substituted for it: its means judged 647x "a wrong value")."""
    last = {nid: n for n in gm.graph.nodes if (nid := custom_id(n)) is not None}
    for n in gm.graph.nodes:
        if (nid := custom_id(n)) is not None and last[nid] is not n:
            n.meta["custom"] = {**n.meta["custom"], DECOMPOSITION_STEP_KEY: True}


def _partials(buffers: list[Any], table: dict[str, BufferInfo], graph: torch.fx.Graph) -> dict[str, tuple[str, ...]]:
    """{buffer name: roundoff ids of its origins, in graph order} for the buffers `table` does not map."""
    order = {n: i for i, n in enumerate(graph.nodes)}
    return {b.get_name(): tuple(dict.fromkeys(
                i for n in sorted(getattr(b, "origins", ()) or (), key=lambda n: order.get(n, -1))
                if (i := custom_id(n)) is not None))
            for b in buffers if b.get_name() not in table}


def _overwritten(buffers: list[Any], table: dict[str, BufferInfo]) -> dict[str, BufferInfo]:
    """`table` with `BufferInfo.overwritten` set where a buffer made for another node mutates the buffer."""
    made_for: dict[str, set[str | None]] = {}  # mutated buffer -> the nodes its mutations were made for
    for b in buffers:
        for target in b.get_mutation_names():
            made_for.setdefault(target, set()).update(custom_id(n) for n in getattr(b, "origins", ()) or ())
    return {k: replace(v, overwritten=True) if k in made_for and v.node_id not in made_for[k] else v
            for k, v in table.items()}


@contextlib.contextmanager
def _recording(found: list[tuple[types.ModuleType, dict[str, BufferInfo], dict[str, tuple[str, ...]], frozenset[str]]]) -> Iterator[None]:
    """Wrap `GraphLowering.run_node`/`compile_to_module` (read only) for the duration."""
    from torch._inductor.graph import GraphLowering

    run_node, to_module = GraphLowering.run_node, GraphLowering.compile_to_module
    lowered: dict[int, list[tuple[Any, Any]]] = {}

    def recorded_run_node(self: Any, n: torch.fx.Node) -> Any:
        result = run_node(self, n)
        lowered.setdefault(id(self), []).append((n, result))  # realized later, in place
        return result

    def recorded_to_module(self: Any, *args: Any, **kwargs: Any) -> Any:
        module = to_module(self, *args, **kwargs)
        if hasattr(module, "call"):
            unstored = frozenset((*self.removed_buffers, *self.inplaced_to_remove))  # `CompiledProgram.unstored`
            buffers = [b for b in self.buffers if b.get_name() not in unstored]
            table = {k: v for k, v in _table(lowered.get(id(self), []), self.module.graph).items() if k not in unstored}
            table = {**table, **_mean_sums(buffers, self.module.graph, table)}
            table = _overwritten(self.buffers, table)
            found.append((module, table, _partials(buffers, table, self.module.graph), unstored))
        return module

    GraphLowering.run_node = recorded_run_node
    GraphLowering.compile_to_module = recorded_to_module
    try:
        yield
    finally:
        GraphLowering.run_node, GraphLowering.compile_to_module = run_node, to_module


def labelled_graph(program: Program, device: torch.device) -> torch.fx.GraphModule:
    """A copy of the program's graph with each node's roundoff id in ``meta["custom"]``, its tensor
    constants and factory ops' ``device=`` on `device`, and ``aten.view`` as ``aten.reshape`` (what a
    user's ``reshape`` is before tracing: Inductor lowers it to the same view where the layout allows)."""
    gm = copy.deepcopy(program.graph_module).to(device)
    label(gm)
    for n in gm.graph.nodes:
        if isinstance(n.meta.get("val"), (tuple, list)):
            n.meta["custom"][MULTI_OUTPUT_KEY] = True
        if n.op == "call_function":  # a view traced on eager's layout, where Inductor's retrace may hold another
            n.target = stride_free(n.target)  # (Phi3's GQA expand): reshape, the same view where one exists
        if isinstance(n.kwargs.get("device"), torch.device) and n.kwargs["device"] != device:
            n.kwargs = {**n.kwargs, "device": device}
        if n.op == "get_attr":  # plain tensor attributes (not buffers) are not moved by .to()
            value = getattr(gm, n.target, None)
            if isinstance(value, torch.Tensor) and value.device != device:
                setattr(gm, n.target, value.to(device))
    gm.recompile()
    return gm


def compile_program(program: Program, inputs: Sequence[torch.Tensor], backend: str = "inductor") -> CompiledProgram:
    """Compile `program`'s graph with Inductor (``compile_fx``, the default torch.compile backend) and
    return its wrapper module with the buffer table; the program runs as one inference graph."""
    if backend != "inductor":
        raise ObserveError(f"backend {backend!r}: observe supports 'inductor' only")
    device = next((x.device for x in inputs if isinstance(x, torch.Tensor)), torch.device("cpu"))
    return compile_graph(labelled_graph(program, device), inputs, program.name)


def compile_graph(
    gm: torch.fx.GraphModule, inputs: Sequence[torch.Tensor], name: str,
    compiler: Callable[[torch.fx.GraphModule, list], Callable[..., Any]] | None = None,
) -> CompiledProgram:
    """Compile a labelled graph (`labelled_graph`, or a part of one) with Inductor: by `compiler`
    (``compiler(gm, inputs)`` returns a callable of the inputs), by default ``compile_fx`` as one
    inference graph; `name` names the program in errors."""
    import torch._inductor.config as inductor_config
    from torch._inductor.compile_fx import compile_fx

    found: list[tuple[types.ModuleType, dict[str, BufferInfo], dict[str, tuple[str, ...]], frozenset[str]]] = []
    try:
        with _recording(found), inductor_config.patch(fx_graph_cache=False), torch.no_grad():
            compiled = (compiler or compile_fx)(gm, list(inputs))
    except Exception as exc:  # Inductor's errors are long: one line naming the program and cause
        if custom := custom_ops(gm):  # the user's own op: torch.compile fails on it just the same
            raise ObserveError(
                f"Inductor could not compile program {name!r}, which calls the custom op(s) "
                f"{', '.join(custom)}: {type(exc).__name__}: {compiler_error(exc)} (torch.compile of "
                "your function fails the same way: make the op compilable, e.g. register its fake impl)"
            ) from exc
        if codegen_failed(exc):  # Inductor wrote code its own C++/Triton compiler rejects: torch's bug
            raise ObserveError(
                f"Inductor generated code for program {name!r} that its C++/Triton compiler rejects: "
                f"{compiler_error(exc)} (a torch.compile bug, not your program's nor roundoff's: "
                "torch.compile of your function most likely fails the same way; check that, and report it to "
                "PyTorch; observe needs a program Inductor can build"
                + ("; C++ code that fails on its vectorized loops often builds unvectorized: --inductor-config "
                   "cpp.simdlen=1 (observe_compiled under torch._inductor.config.patch({'cpp.simdlen': 1}))"
                   if codegen_compiler(exc) == "C++" else "") + ")"
            ) from exc
        raise CompileError(
            f"Inductor could not compile roundoff's captured aten graph of program {name!r}: "
            f"{type(exc).__name__}: {compiler_error(exc)} (where torch.compile compiles your function, this "
            "is a roundoff bug: report it with --debug's traceback; else a torch bug or an unsupported op)"
        ) from exc
    if not found and not any(n.op == "call_function" for n in gm.graph.nodes):  # (trial 75: said "partitions")
        raise ObserveError(f"program {name!r} computes nothing (it returns its inputs or constants): no kernel to "
                           "observe")
    if len(found) != 1:
        raise ObserveError(
            f"Inductor produced {len(found)} wrapper modules for program {name!r}; observe "
            "expects one (a graph Inductor splits into partitions is not supported yet)"
        )
    module, buffers, partials, unstored = found[0]
    return CompiledProgram(module, compiled, buffers, partials, unstored)


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


Sink = Callable[[str, int, str, torch.Tensor], None]  # (kernel name, launch index, buffer name, value)


class _Tap:
    """Calls the real kernel, then hands each buffer it wrote (by the caller's local name) to `sink`.

    A kernel that returns its result (``buf2 = extern_kernels.convolution(...)``) has not bound it to
    the caller's name yet when it returns: its storage is remembered in `returned` with this kernel's
    name and launch, and the buffer is credited to it when a later tap first finds it."""

    def __init__(
        self, kernel: Any, name: str, sink: Sink, seen: set[str], launches: list[int],
        returned: dict[int, tuple[str, int]], reused: frozenset[str] = frozenset(),
        fallbacks: dict[str, str] | None = None,
    ) -> None:
        self.kernel, self.name, self.sink, self.seen, self.launches = kernel, name, sink, seen, launches
        self.returned, self.reused, self.fallbacks = returned, reused, fallbacks or {}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self.kernel(*args, **kwargs)
        self.note_returned(out, args, kwargs, self.after(sys._getframe(1), args, kwargs))
        return out

    def note_returned(self, out: Any, args: tuple, kwargs: dict, launch: int) -> None:
        if isinstance(out, torch.Tensor) and not any(  # a new result, not its `out=` argument
            isinstance(a, torch.Tensor) and _storage(a) == _storage(out) for a in (*args, *kwargs.values())
        ):
            self.returned[_storage(out)] = (self.name, launch)

    def run(self, *args: Any, **kwargs: Any) -> Any:  # Triton kernels are launched by `.run`
        out = self.kernel.run(*args, **kwargs)
        self.after(sys._getframe(1), args, kwargs)
        return out

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.kernel, attr)

    def after(self, frame: types.FrameType, args: tuple, kwargs: dict) -> int:
        launch = self.launches[0]
        self.launches[0] += 1
        passed = None  # the storages of the call's tensor arguments, computed when first needed
        for local, value in frame.f_locals.items():
            if local in self.seen or not local.startswith("buf") or not isinstance(value, torch.Tensor):
                continue
            if passed is None:
                passed = {_storage(a) for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)}
            if _BUF.match(local) and (key := _storage(value)) in passed:
                self.seen.add(local)
                # a returned result: its kernel's; a buffer made in its memory later (`reused`): this one's
                name, at = (self.name, launch) if local in self.reused else self.returned.pop(key, (self.name, launch))
                self.sink(self.fallbacks.get(local, name), at, local, value)  # a fallback's result: that op's
        return launch


class _ExternTaps:
    """``extern_kernels`` with each kernel function tapped."""

    def __init__(self, inner: Any, make: Callable[[Any, str], Any]) -> None:
        self._inner, self._make = inner, make

    def __getattr__(self, attr: str) -> Any:
        return self._make(getattr(self._inner, attr), f"extern_kernels.{attr}")


def fallback_results(source: str) -> dict[str, str]:
    """{buffer: the fallback op whose result it is, or an item of (``buf6 =
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(...)``, ``buf7 = buf6[0]``)},
    from the wrapper's `source`: no tap sees such a call, and the next kernel given the buffer did not
    write it (trial 50: an attention Inductor's pattern rewrite made, credited to the addmm reading it)."""
    made = {m.group(1): m.group(2) for m in _FALLBACK.finditer(source)}
    for m in _ITEM.finditer(source):  # in source order: an item of an item follows its parent
        if m.group(2) in made:
            made[m.group(1)] = made[m.group(2)]
    return made


@contextlib.contextmanager
def tapped(module: types.ModuleType, sink: Sink, wrap: Callable[[_Tap], Any] | None = None,
           source: str = "") -> Iterator[list[int]]:
    """For the duration, every kernel the wrapper `module` calls reports the buffers it wrote to
    ``sink(kernel_name, launch, buffer_name, tensor)`` right after it ran (`launch` counts kernel
    calls from 0; the tensor is the live buffer: copy what you keep). Yields ``[launches so far]``.
    `wrap`, if given, wraps each tap (`roundoff.observed.replay` records the calls through it).
    `source`: the wrapper's code, whose ``# reuse`` lines name the buffers made in a dead one's memory
    (credited to the kernel that writes them, not to the one that returned that memory).
    The module's globals are restored on exit."""
    seen: set[str] = set()
    launches = [0]
    returned: dict[int, tuple[str, int]] = {}
    reused = frozenset(m.group(1) for m in _REUSE.finditer(source))
    fallbacks = fallback_results(source)

    def make(kernel: Any, name: str) -> Any:
        tap = _Tap(kernel, name, sink, seen, launches, returned, reused, fallbacks)
        return wrap(tap) if wrap is not None else tap

    saved = {name: value for name, value in vars(module).items()
             if _KERNEL.match(name) and (callable(value) or hasattr(value, "run"))}
    for name, value in saved.items():
        setattr(module, name, make(value, name))
    saved["extern_kernels"] = module.extern_kernels
    module.extern_kernels = _ExternTaps(module.extern_kernels, make)
    try:
        yield launches
    finally:
        for name, value in saved.items():
            setattr(module, name, value)
