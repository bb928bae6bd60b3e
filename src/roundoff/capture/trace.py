"""capture(): a callable or nn.Module -> Program (aten FX graph, stable ids, user source lines)."""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import get_proxy_mode
from torch.utils._pytree import tree_leaves

from roundoff.capture.closure import name_constants
from roundoff.capture.errors import CaptureError
from roundoff.capture.fused import eager_kernels_kept
from roundoff.capture.inputs import CaptureInputs, collect_inputs, definition_source
from roundoff.capture.program import NODE_ID, NODE_SOURCE, Program
from roundoff.capture.retrace import copy_sources_from_origin, retrace, trace_real
from roundoff.capture.returns import return_names
from roundoff.capture.sources import SourceRecorder, is_user_file, traceback_source
from roundoff.capture.specialize import EagerValues, pin_eager_values
from roundoff.capture.uninitialised import packet_name, uninitialised_read

aten = torch.ops.aten


def capture(
    fn_or_module: Callable[..., Any],
    *example_inputs: torch.Tensor,
    backward: bool = False,
    cotangents: Sequence[torch.Tensor] | torch.Tensor | None = None,
    name: str | None = None,
) -> Program:
    """Trace `fn_or_module` at the aten level into a `Program`, running it once on `example_inputs`.

    Graph inputs, in order: the example inputs; the parameters then buffers the target reads (an
    ``nn.Module``'s own, and those of modules a function closes over, reaches through globals, a bound
    ``self`` or a ``functools.partial``), named by qualified name (``"mlp.up.weight"``,
    ``"lin.weight"``: `roundoff.capture.closure`) and fed like any input; then the cotangents, if
    given. Outputs: the forward outputs (a tensor, a flat tuple/list of tensors, or a dict of
    tensors such as a transformers ``ModelOutput``, whose non-tensor entries are left out; named
    ``out`` / ``out0..`` / by key), then with `backward` one gradient per floating-point input that
    requires grad (parameters: those with ``requires_grad``), named ``grad_<input>``.
    The backward differentiates ``o0.sum() + o1.sum() + ...`` over the floating-point outputs that
    depend on such inputs, or, with `cotangents` (one per floating-point output), the vector-Jacobian
    product with them. A gradient autograd reports as unused is returned as zeros.

    The function runs once, as eager runs it (make_fx on the real inputs; side effects happen once,
    buffers such as BatchNorm's running statistics update once, the graph keeps their values from
    before the run). Graph breaks (``.item()``, ``if tensor:``, boolean masks, ``nonzero``, random
    draws) hold the value eager computed there (`Program.specializations`, `capture.specialize`).
    The graph, run on the example inputs, reproduces eager autograd bit for bit on CPU (an op eager
    runs as one backend kernel stays one node, on torch 2.9 too: `capture.fused`). In-place ops are
    functionalized; in-place mutation of an input is a `CaptureError`.
    """
    spec = collect_inputs(fn_or_module, example_inputs, backward, cotangents)
    forward_names: list[str] = []
    found: dict[str, Any] = {}
    traced = _traced_function(fn_or_module, spec, backward, forward_names, found)
    try:
        with eager_kernels_kept():
            gm = trace_real(traced, spec.trace_tensors)
    except CaptureError:
        raise
    except Exception as exc:  # the error becomes one line naming construct and source
        raise _explain(exc) from None
    _strip_detach(gm)
    specializations = found["reads"] + pin_eager_values(gm, found["values"])
    name_constants(gm, spec.constant_names)
    gm.graph.eliminate_dead_code()  # value reads (eager's values are baked into their users)
    _out_of_place_on_fresh_values(gm)
    if any(_is_mutating(n) for n in gm.graph.nodes):
        with eager_kernels_kept():
            gm = _functionalize(gm, spec)
    gm.graph.eliminate_dead_code()
    _require_float(gm, spec, fn_or_module)
    _refuse_uninitialised_reads(gm)
    for i, n in enumerate(gm.graph.nodes):
        n.meta[NODE_ID] = f"n{i}"
        n.meta.setdefault(NODE_SOURCE, None)
    gm.recompile()
    grad_names = tuple(f"grad_{n}" for n, w in zip(spec.names, spec.wants_grad) if w)
    forward_names[:] = [f"out{i}" if n in grad_names else n for i, n in enumerate(forward_names)]
    return Program(
        graph_module=gm,
        example_inputs=spec.tensors,
        input_names=spec.names,
        output_names=tuple(forward_names) + grad_names,
        num_forward_outputs=len(forward_names),
        backward=backward,
        grad_input_names=tuple(n for n, w in zip(spec.names, spec.wants_grad) if w),
        name=name or getattr(fn_or_module, "__name__", type(fn_or_module).__name__),
        specializations=tuple(specializations),
        dynamo_fallbacks=tuple(found["fallbacks"]),
        example_versions=tuple(t._version for t in spec.tensors),
        user_inputs=spec.num_user,
        trainable=spec.trainable,
    )


def _traced_function(
    fn: Callable[..., Any],
    spec: CaptureInputs,
    backward: bool,
    forward_names: list[str],
    found: dict[str, Any],
) -> Callable[..., tuple[torch.Tensor, ...]]:
    """The function make_fx traces: the user's call (state read through the tensors themselves, so
    they are the graph's state inputs), then the backward; `found` receives the recorded value reads
    and eager values."""

    def traced(*flat_in: torch.Tensor) -> tuple[torch.Tensor, ...]:
        recorder = SourceRecorder()
        values = EagerValues(get_proxy_mode().tracer)  # type: ignore[union-attr]
        found.update(reads=recorder.value_reads, values=values, fallbacks=recorder.dynamo_fallbacks)
        flat = list(flat_in)
        with torch.enable_grad() if backward else torch.no_grad(), values:
            if backward:
                flat[: spec.num_user] = [
                    t.detach().requires_grad_(True) if w else t
                    for t, w in zip(flat[: spec.num_user], spec.wants_grad)
                ]
            with recorder:
                result = fn(*flat[: spec.num_user])
            outs, names = _flatten_outputs(result, fn)
            forward_names[:] = names
            if not backward:
                return tuple(outs)
            diff_inputs = [t for t, w in zip(flat, spec.wants_grad) if w]
            cots = flat[len(flat) - spec.num_cotangents :] if spec.num_cotangents else []
            with recorder.backward_sources():
                grads = _gradients(outs, diff_inputs, cots, fn)
        return tuple(outs) + tuple(grads)

    return traced


def _flatten_outputs(result: Any, fn: Callable[..., Any]) -> tuple[list[torch.Tensor], list[str]]:
    if isinstance(result, torch.Tensor):
        items: list[tuple[str, Any]] = [(return_names(fn, None)[0] or "out", result)]
    elif isinstance(result, (tuple, list)):
        named = return_names(fn, len(result))
        items = [(named[i] or f"out{i}", r) for i, r in enumerate(result)]
    elif isinstance(result, dict):  # a transformers ModelOutput's cache object is no output; a Python value
        items = [(str(k), v) for k, v in result.items()  # is refused as in a tuple (trial 59: a str was dropped)
                 if isinstance(v, (torch.Tensor, str, bytes, int, float, complex))]
        items = items or [(str(k), v) for k, v in result.items()]
    else:
        items = [("out", result)]
    for key, value in items:
        if not isinstance(value, torch.Tensor):
            raise CaptureError(
                f"output {key!r} is {type(value).__name__}; return a tensor, or a flat tuple, list or "
                "dict of tensors (compute Python numbers as 0-d tensors)",
                construct="non-tensor output",
                source=definition_source(fn),
            )
    if not items:
        raise CaptureError(
            "the function returned nothing", construct="no output", source=definition_source(fn)
        )
    return [v for _, v in items], [k for k, _ in items]


def _gradients(
    outs: list[torch.Tensor],
    diff_inputs: list[torch.Tensor],
    cots: Sequence[torch.Tensor],
    fn: Callable[..., Any],
) -> list[torch.Tensor]:
    floats = [o for o in outs if o.is_floating_point()]
    if cots and len(cots) != len(floats):
        raise CaptureError(
            f"got {len(cots)} cotangents for {len(floats)} floating-point outputs; pass one per output",
            construct="cotangent count mismatch",
            source=definition_source(fn),
        )
    for o, c in zip(floats, cots):
        if o.shape != c.shape:
            raise CaptureError(
                f"a cotangent has shape {tuple(c.shape)} but its output has {tuple(o.shape)}",
                construct="cotangent shape mismatch",
                source=definition_source(fn),
            )
    pairs = [(o, c) for o, c in zip(floats, cots or [None] * len(floats)) if o.requires_grad]
    if not pairs:
        raise CaptureError(
            "no floating-point output depends on an input that requires grad",
            construct="nothing to differentiate",
            source=definition_source(fn),
        )
    if cots:
        grads = torch.autograd.grad(
            [o for o, _ in pairs],
            diff_inputs,
            grad_outputs=[c for _, c in pairs],
            allow_unused=True,
        )
    else:
        loss = pairs[0][0].sum()
        for o, _ in pairs[1:]:
            loss = loss + o.sum()
        grads = torch.autograd.grad(loss, diff_inputs, allow_unused=True)
    return [g if g is not None else torch.zeros_like(x) for g, x in zip(grads, diff_inputs)]


def _explain(exc: Exception) -> CaptureError:
    """Turn an exception raised while the program ran under tracing into one line naming the
    construct and the user's line."""
    source = traceback_source(exc.__traceback__)
    kind = type(exc).__name__
    first = (str(exc).strip().splitlines() or [""])[0][:200]
    frames = traceback.extract_tb(exc.__traceback__)
    last = frames[-1].filename if frames else ""
    # raised by the user's code or by an op's kernel: eager would raise it too
    in_program = is_user_file(last) or last.endswith(os.path.join("torch", "_ops.py"))
    construct = "error in the program" if in_program else "untraceable operation"
    return CaptureError(f"{kind}: {first}", construct=construct, source=source)


def _require_float(gm: torch.fx.GraphModule, spec: CaptureInputs, fn: Callable[..., Any]) -> None:
    """CaptureError unless some value of the program (input, parameter, constant or intermediate)
    is floating point: token ids are fine when the parameters are float."""
    for n in gm.graph.nodes:
        vals = tree_leaves(n.meta.get("val"))
        if any(isinstance(v, torch.Tensor) and v.is_floating_point() for v in vals):
            return
    kinds = ", ".join(str(t.dtype).removeprefix("torch.") for t in spec.tensors) or "none"
    raise CaptureError(
        f"nothing in the program is floating point (inputs and parameters: [{kinds}], and no float "
        "constant or intermediate value); roundoff studies floating-point rounding",
        construct="no floating-point value",
        source=definition_source(fn),
    )


def _refuse_uninitialised_reads(gm: torch.fx.GraphModule) -> None:
    """CaptureError where the program computes with memory it never initialised (`uninitialised_read`)."""
    found = uninitialised_read(gm)
    if found is None:
        return
    alloc, reader = found
    op, what = packet_name(alloc), packet_name(reader) or str(reader.target)
    where = alloc.meta.get(NODE_SOURCE)
    raise CaptureError(
        f"`{what}` reads memory `{op}` left uninitialised{f' (allocated at {where})' if where else ''}: its values are "
        "whatever memory held, so every run of the program differs by chance; create it with torch.zeros (or "
        "torch.full), or write all of it (copy_, fill_) before reading it",
        construct="uninitialised memory read",
        source=reader.meta.get(NODE_SOURCE) or where,
    )


def _strip_detach(gm: torch.fx.GraphModule) -> None:
    """``aten.detach`` nodes (autograd bookkeeping) are identities for values: drop them."""
    for n in list(gm.graph.nodes):
        if n.op == "call_function" and n.target is aten.detach.default:
            n.replace_all_uses_with(n.args[0])
            gm.graph.erase_node(n)


def _out_of_place_on_fresh_values(gm: torch.fx.GraphModule) -> None:
    """Rewrite ``x.op_(...)`` as ``op(x, ...)`` where `x` is a fresh value nothing else reads or aliases
    (dropout's ``clone(mask).div_(1 - p)``): the same values, without functionalizing the whole graph
    (a retrace, in which torch 2.9 decomposes fused backward kernels such as ``silu_backward``)."""
    for n in list(gm.graph.nodes):
        if not _is_mutating(n) or not n.args or not isinstance(n.args[0], torch.fx.Node):
            continue
        base, name = n.args[0], n.target._schema.name  # type: ignore[union-attr]
        packet = getattr(aten, name.removeprefix("aten::").removesuffix("_"), None) if name.endswith("_") else None
        functional = getattr(packet, n.target._overloadname, None) if packet is not None else None  # type: ignore[union-attr]
        fresh = (base.op == "call_function" and not _is_mutating(base) and list(base.users) == [n]
                 and not _returns_alias(base))
        if functional is None or not fresh or functional._schema.is_mutable:
            continue
        with gm.graph.inserting_after(n):
            out = gm.graph.call_function(functional, n.args, n.kwargs)
        out.meta.update(n.meta)
        n.replace_all_uses_with(out)
        gm.graph.erase_node(n)
    gm.recompile()


def _returns_alias(n: torch.fx.Node) -> bool:
    """`n` returns a view of an operand (its schema marks the result aliased), or its schema is unknown."""
    schema = getattr(n.target, "_schema", None)
    return schema is None or any(r.alias_info is not None for r in schema.returns)


def _is_mutating(n: torch.fx.Node) -> bool:
    schema = getattr(n.target, "_schema", None)
    return n.op == "call_function" and schema is not None and schema.is_mutable


def _functionalize(gm: torch.fx.GraphModule, spec: CaptureInputs) -> torch.fx.GraphModule:
    """Replace in-place ops by their functional forms; reject a write into a user input (a write into
    a module buffer, such as BatchNorm's running statistics, is left out of the graph: it changes
    no output)."""
    new = retrace(gm, spec.tensors, functionalize=True)
    placeholders = [n for n in new.graph.nodes if n.op == "placeholder"]
    copy_sources_from_origin(new)
    for n in list(new.graph.nodes):
        if n.op == "call_function" and n.target is aten.copy_.default and n.args[0] in placeholders:
            index = placeholders.index(n.args[0])
            end = spec.num_user + spec.num_state
            if end - spec.num_buffers <= index < end:
                new.graph.erase_node(n)  # a buffer update (running statistics): not an output
                continue
            value = n.args[1]
            raise CaptureError(
                f"the program writes into input {spec.names[index]!r} in place; roundoff replays the graph "
                "on the same inputs, so compute a new tensor instead (x = x + 1, not x.add_(1))",
                construct="in-place mutation of an input",
                source=value.meta.get(NODE_SOURCE) if isinstance(value, torch.fx.Node) else None,
            )
    return new
