"""capture(): a callable or nn.Module -> Program (aten FX graph, stable ids, user source lines)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx

from roundoff.capture.errors import CaptureError
from roundoff.capture.fused import eager_kernels_kept
from roundoff.capture.inputs import CaptureInputs, collect_inputs, definition_source
from roundoff.capture.program import NODE_ID, NODE_SOURCE, Program
from roundoff.capture.retrace import TRACER_ERRORS, copy_sources_from_origin, retrace, trace_fake
from roundoff.capture.sources import SourceRecorder, traceback_source

aten = torch.ops.aten


def capture(
    fn_or_module: Callable[..., Any],
    *example_inputs: torch.Tensor,
    backward: bool = False,
    cotangents: Sequence[torch.Tensor] | torch.Tensor | None = None,
    name: str | None = None,
) -> Program:
    """Trace `fn_or_module` at the aten level (make_fx with fake tensors) into a `Program`.

    Graph inputs, in order: the example inputs; for an ``nn.Module`` its parameters then buffers, named
    by qualified name (``"mlp.up.weight"``) and fed like any input; then the cotangents, if given.
    Outputs: the forward outputs (a tensor, a flat tuple/list of tensors, or a flat dict of tensors,
    named ``out`` / ``out0..`` / by key), then with `backward` one gradient per floating-point input
    that requires grad (module parameters: those with ``requires_grad``), named ``grad_<input>``.
    The backward differentiates ``o0.sum() + o1.sum() + ...`` over the floating-point outputs that
    depend on such inputs, or, with `cotangents` (one per floating-point output), the vector-Jacobian
    product with them. A gradient autograd reports as unused is returned as zeros. Tracing does not
    compute: the graph, run on the example inputs, reproduces eager autograd bit for bit on CPU
    (an op eager runs as one backend kernel stays one node, on torch 2.9 too: `capture.fused`).
    In-place ops are functionalized; in-place mutation of an input is a `CaptureError`.
    """
    spec = collect_inputs(fn_or_module, example_inputs, backward, cotangents)
    forward_names: list[str] = []
    traced = _traced_function(fn_or_module, spec, backward, forward_names)
    try:
        with eager_kernels_kept():
            gm = trace_fake(traced, spec.tensors)
    except CaptureError:
        raise
    except TRACER_ERRORS as exc:  # the tracer's error becomes one line naming construct and source
        raise _explain(exc) from None
    _strip_detach(gm)
    _check_static(gm)
    if any(_is_mutating(n) for n in gm.graph.nodes):
        with eager_kernels_kept():
            gm = _functionalize(gm, spec)
    gm.graph.eliminate_dead_code()
    for i, n in enumerate(gm.graph.nodes):
        n.meta[NODE_ID] = f"n{i}"
        n.meta.setdefault(NODE_SOURCE, None)
    gm.recompile()
    grad_names = tuple(f"grad_{n}" for n, w in zip(spec.names, spec.wants_grad) if w)
    return Program(
        graph_module=gm,
        example_inputs=spec.tensors,
        input_names=spec.names,
        output_names=tuple(forward_names) + grad_names,
        num_forward_outputs=len(forward_names),
        backward=backward,
        grad_input_names=tuple(n for n, w in zip(spec.names, spec.wants_grad) if w),
        name=name or getattr(fn_or_module, "__name__", type(fn_or_module).__name__),
    )


def _traced_function(
    fn: Callable[..., Any], spec: CaptureInputs, backward: bool, forward_names: list[str]
) -> Callable[..., tuple[torch.Tensor, ...]]:
    state_names = spec.names[spec.num_user : spec.num_user + spec.num_state]

    def call(flat: Sequence[torch.Tensor]) -> Any:
        user = tuple(flat[: spec.num_user])
        if isinstance(fn, torch.nn.Module):
            state = dict(zip(state_names, flat[spec.num_user : spec.num_user + spec.num_state]))
            return torch.func.functional_call(fn, state, user)
        return fn(*user)

    def traced(*flat_in: torch.Tensor) -> tuple[torch.Tensor, ...]:
        recorder = SourceRecorder()
        flat = list(flat_in)
        with torch.enable_grad() if backward else torch.no_grad():
            if backward:
                flat = [
                    t.detach().requires_grad_(True) if w else t
                    for t, w in zip(flat, spec.wants_grad)
                ]
            with recorder:
                result = call(flat)
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
        items: list[tuple[str, Any]] = [("out", result)]
    elif isinstance(result, (tuple, list)):
        items = [(f"out{i}", r) for i, r in enumerate(result)]
    elif isinstance(result, dict):
        items = [(str(k), v) for k, v in result.items()]
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
    """Turn a tracer exception into a CaptureError naming the construct and the user's line."""
    source = traceback_source(exc.__traceback__)
    kind = type(exc).__name__
    first = (str(exc).strip().splitlines() or [""])[0][:200]
    if kind in (
        "GuardOnDataDependentSymNode",
        "DataDependentOutputException",
        "PendingUnbackedSymbolNotFound",
    ):
        return CaptureError(
            "the program branches on (or converts to Python) a value computed from tensor data; "
            "roundoff captures one static graph: use torch.where instead of `if`, keep values as tensors",
            construct="data-dependent control flow",
            source=source,
        )
    if kind == "DynamicOutputShapeException":
        return CaptureError(
            f"{first}; an op whose output shape depends on tensor values (nonzero, boolean-mask indexing, "
            "unique) cannot be captured statically: use a mask with torch.where instead",
            construct="data-dependent output shape",
            source=source,
        )
    return CaptureError(f"{kind}: {first}", construct="untraceable operation", source=source)


def _strip_detach(gm: torch.fx.GraphModule) -> None:
    """``aten.detach`` nodes (autograd bookkeeping) are identities for values: drop them."""
    for n in list(gm.graph.nodes):
        if n.op == "call_function" and n.target is aten.detach.default:
            n.replace_all_uses_with(n.args[0])
            gm.graph.erase_node(n)


def _check_static(gm: torch.fx.GraphModule) -> None:
    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        if n.target is aten._local_scalar_dense.default:
            raise CaptureError(
                "a tensor value is converted to a Python number (.item(), .tolist(), float(t)); keep it "
                "a tensor so the graph stays static",
                construct="data-dependent value",
                source=n.meta.get(NODE_SOURCE),
            )
        val = n.meta.get("val")
        if isinstance(val, torch.Tensor) and any(isinstance(d, torch.SymInt) for d in val.shape):
            raise CaptureError(
                f"{n.target} makes a tensor whose shape depends on tensor values (nonzero, boolean-mask "
                "indexing, unique); use a mask with torch.where instead",
                construct="data-dependent output shape",
                source=n.meta.get(NODE_SOURCE),
            )


def _is_mutating(n: torch.fx.Node) -> bool:
    schema = getattr(n.target, "_schema", None)
    return n.op == "call_function" and schema is not None and schema.is_mutable


def _functionalize(gm: torch.fx.GraphModule, spec: CaptureInputs) -> torch.fx.GraphModule:
    """Replace in-place ops by their functional forms; reject a write into a graph input."""
    new = retrace(gm, spec.tensors, functionalize=True)
    placeholders = [n for n in new.graph.nodes if n.op == "placeholder"]
    copy_sources_from_origin(new)
    for n in new.graph.nodes:
        if n.op == "call_function" and n.target is aten.copy_.default and n.args[0] in placeholders:
            index = placeholders.index(n.args[0])
            value = n.args[1]
            raise CaptureError(
                f"the program writes into input {spec.names[index]!r} in place; roundoff replays the graph "
                "on the same inputs, so compute a new tensor instead (x = x + 1, not x.add_(1))",
                construct="in-place mutation of an input",
                source=value.meta.get(NODE_SOURCE) if isinstance(value, torch.fx.Node) else None,
            )
    return new
