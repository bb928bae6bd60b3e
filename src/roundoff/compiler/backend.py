"""The "roundoff" torch.compile backend and ``roundoff.compile``.

The backend is Inductor (``compile_fx``) with the policy's config patches (``settings``) applied
around the whole compilation and again around each inner (forward/backward) compile, which may run
lazily at the first backward call; the policy's overrides are placed on the aten graphs there
(``rewrite``). Nothing global is changed. When overrides are placed, AOTAutograd's cache is off
for that compilation (its key is taken before the rewrite). Where the installed Inductor's C++
``to_dtype`` or cast-chain pass would fail or drop ``emulate_precision_casts`` roundings (torch 2.9),
``emulate_casts`` repairs it for the compilation.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import operator
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from torch.utils._pytree import tree_leaves

from roundoff.capture.program import Program, graph_fingerprint, node_id, value_holders
from roundoff.capture.retrace import decomposition_table
from roundoff.compiler.checking import Checker
from roundoff.compiler.emulate_casts import emulated_casts_kept
from roundoff.compiler.errors import (
    RoundoffCheckingWarning,
    RoundoffCompileError,
    RoundoffEnforcementWarning,
    RoundoffPlacementError,
    warn_at_caller,
)
from roundoff.compiler.numbering import GraphNumbering, NodeKey
from roundoff.compiler.reference import Fp64Reference
from roundoff.compiler.rewrite import OverridePlacer, program_keys, sign_flip_negations
from roundoff.compiler.settings import (
    _CPP_CONTRACT,
    InductorSettings,
    has_config,
    inductor_settings,
)
from roundoff.compiler.storage_kernels import storage_kernel_items
from roundoff.plan import Plan, plan
from roundoff.policy import get_policy
from roundoff.policy.model import MatmulAdd, Negation, OpOverride, Policy

BACKEND_NAME = "roundoff"

#: Graphs compiled by roundoff backends so far, per policy name. Dynamo silently runs a frame
#: eagerly once its recompile limit is hit; this count lets callers (and tests) see that Inductor
#: really compiled under the policy.
compilations: collections.Counter[str] = collections.Counter()


def _device_type(example_inputs: Any) -> str:
    for x in example_inputs:
        if isinstance(x, torch.Tensor) and x.device.type != "cpu":
            return x.device.type
    return "cpu"


@contextlib.contextmanager
def _patched(settings: InductorSettings, no_autograd_cache: bool) -> Iterator[None]:
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    with contextlib.ExitStack() as stack:
        stack.enter_context(inductor_config.patch(dict(settings.patches)))
        if no_autograd_cache and hasattr(functorch_config, "enable_autograd_cache"):
            stack.enter_context(functorch_config.patch({"enable_autograd_cache": False}))
        if settings.emulates_casts:  # torch 2.9 drops or fails these roundings
            stack.enter_context(emulated_casts_kept())
        yield


def _forbid_fma_if_asked(
    policy: Policy, device: str, settings: InductorSettings
) -> InductorSettings:
    """On CPU, an override forbidding one FMA (``contract_fma=False``, what blame emits for the
    FMA cases) turns C++ contraction off for the whole compilation: a superset of the fix, noted in
    `unenforced` so the backend warns about it."""
    forbids = [
        k
        for k, o in {**policy.op_overrides, **policy.node_overrides}.items()
        if o.contract_fma is False
    ]
    if not forbids or device != "cpu" or settings.patches.get(_CPP_CONTRACT) != "fast":
        return settings
    note = (
        f"contract_fma=False on {', '.join(forbids)}: C++ FP contraction turned off for the whole "
        f"compilation (Inductor has no per-node switch)"
    )
    return dataclasses.replace(
        settings,
        patches={**settings.patches, _CPP_CONTRACT: "off"},
        unenforced=settings.unenforced + (note,),
    )


def make_backend(
    policy: Policy,
    node_keys: Callable[[], Mapping[str, tuple[NodeKey, int]]] | None = None,
    placements: list[str] | None = None,
    numbering: GraphNumbering | None = None,
    node_overrides: Callable[[], Mapping[str, OpOverride]] | None = None,
) -> Callable[..., Any]:
    """A torch.compile backend enforcing `policy`. `node_keys` supplies the placement keys of the
    policy's node overrides (see ``rewrite.program_keys``); it is called at compile time, as is
    `node_overrides`, the overrides to place where they are more than the policy's (`with_merged`). `numbering`
    numbers them across the graphs of one compilation; its ``finish`` is the caller's, once the graphs
    of a first call are compiled."""
    if policy.node_overrides and node_keys is None:
        raise RoundoffPlacementError(
            f"policy {policy.name!r} has node overrides ({', '.join(policy.node_overrides)}); their ids "
            f"refer to a capture of your callable, so use roundoff.compile(fn, policy=...) rather than "
            f"backend='roundoff'"
        )

    def backend(gm: torch.fx.GraphModule, example_inputs: list[Any], **_: Any) -> Any:
        from torch._inductor.compile_fx import compile_fx, compile_fx_inner

        compilations[policy.name] += 1
        if numbering is not None:
            numbering.compiled += 1
        device = _device_type(example_inputs)
        settings = _forbid_fma_if_asked(policy, device, inductor_settings(policy, device))
        for item in settings.unenforced:
            warn_at_caller(RoundoffEnforcementWarning(f"policy {policy.name!r}: {item}"))
        _warn_matmul_adds(policy, device, gm)
        for item in storage_kernel_items(policy, gm):
            warn_at_caller(RoundoffEnforcementWarning(f"policy {policy.name!r}: {item}"))
        keys = node_keys() if policy.node_overrides else {}
        fma_off = settings.patches.get(_CPP_CONTRACT) == "off" and device == "cpu"
        placer = OverridePlacer(
            policy.op_overrides, node_overrides() if node_overrides is not None else policy.node_overrides, keys,
            settings.emulates_casts, fma_off, numbering,
        )
        state = {"joint": False}
        # Triton computes -x as 0.0 - x; a sign-flip policy gets x * -1.0 instead (rewrite module)
        flip = device == "cuda" and policy.negation is Negation.SIGN_FLIP
        decompositions = _decompositions(policy, gm)
        # AOTAutograd's cache key is taken before rewrites, and does not see a decomposition table
        no_cache = not placer.empty or flip or decompositions is not None

        def place(graph: torch.fx.GraphModule | torch.fx.Graph, joint: bool, backward: bool = False) -> None:
            placed = placer.apply(graph, joint=joint, backward=backward)
            if placements is not None:
                placements.extend(placed)

        def joint_pass(graph: torch.fx.Graph) -> None:
            # a training step: overrides are placed before the partitioner chooses what the forward saves,
            # so a value kept in fp32 is saved in fp32 and the backward reads it so (the plan's model)
            state["joint"] = True
            place(graph, joint=True)

        def inner(graph: torch.fx.GraphModule, inputs: Any, **kwargs: Any) -> Any:
            with _patched(settings, no_cache):
                if flip:
                    sign_flip_negations(graph)
                if not placer.empty and not state["joint"]:  # (inference, or a torch without a joint pass)
                    place(graph, joint=False, backward=bool(kwargs.get("is_backward")))
                return compile_fx_inner(graph, inputs, **kwargs)

        joint = {} if placer.empty or not has_config("joint_custom_pre_pass") else {"joint_custom_pre_pass": joint_pass}
        with _patched(settings, no_cache), torch._inductor.config.patch(joint):
            return compile_fx(gm, example_inputs, inner_compile=inner, decompositions=decompositions)

    return backend


_MATMULS = frozenset({operator.matmul, torch.matmul, torch.mm, torch.Tensor.matmul, torch.Tensor.mm})
_LINEARS = frozenset({torch._C._nn.linear, torch.nn.functional.linear})
_ADDS = frozenset({operator.add, operator.iadd, torch.add, torch.Tensor.add})


def _matmul_adds(gm: torch.fx.GraphModule) -> int:
    """How many adds of Dynamo's graph `gm` Inductor's post-grad pattern ``addmm`` may fold into their matmul
    (``roundoff.plan.matmul_add``): a 2-D matmul (or bias-free linear) of 2-D operands whose one use is an add,
    without ``alpha``, of a tensor of its dtype. Read from Dynamo's graph, which every compile sees (Inductor's
    aten graphs are skipped on a cache hit); a backward's matmul adds are not in it."""

    def value(a: object) -> Any:
        return a.meta.get("example_value") if isinstance(a, torch.fx.Node) else None

    count = 0
    for n in gm.graph.nodes:
        target = getattr(torch.Tensor, n.target, None) if n.op == "call_method" else n.target
        if target in _LINEARS and (len(n.args) > 2 and n.args[2] is not None or n.kwargs.get("bias") is not None):
            continue
        operands = [value(a) for a in n.args[:2]]
        if (target not in _MATMULS | _LINEARS or len(n.users) != 1
                or not all(isinstance(t, torch.Tensor) and t.dim() == 2 for t in operands)):
            continue
        (user,) = n.users
        user_target = getattr(torch.Tensor, user.target, None) if user.op == "call_method" else user.target
        others = [value(a) for a in user.args[:2] if a is not n]
        if (user_target in _ADDS and not user.kwargs and len(others) == 1 and isinstance(others[0], torch.Tensor)
                and others[0].dtype == operands[0].dtype):
            count += 1
    return count


def _warn_matmul_adds(policy: Policy, device: str, gm: torch.fx.GraphModule) -> None:
    """Where Inductor computes `gm`'s 2-D matmul adds otherwise than `policy` (``MatmulAdd``), say so: its CPU
    post-grad pattern ``addmm`` folds every one into its GEMM (one rounding), and no setting turns that
    pattern off alone; on a GPU it folds only where a user of the add is not pointwise."""
    sites = _matmul_adds(gm)
    if not sites:
        return
    if device == "cpu" and policy.matmul_add is MatmulAdd.SEPARATE:
        item = (f"matmul_add=separate on cpu: Inductor's post-grad pattern computes {sites} 2-D matmul add(s) "
                "of this graph as one addmm each (the addend in the GEMM's fp32 accumulator, one rounding) where "
                "the policy rounds the matmul's result first; those adds can differ from the policy's by that "
                "rounding, as plain torch.compile's do (`check --policy inductor-cpu` predicts them)")
    elif device != "cpu" and policy.matmul_add is MatmulAdd.ADDMM:
        item = (f"matmul_add=addmm on {device}: Inductor folds a 2-D matmul add into one addmm only where a user "
                f"of the add is not pointwise, so of this graph's {sites} some may round the matmul first")
    else:
        return
    warn_at_caller(RoundoffEnforcementWarning(f"policy {policy.name!r}: {item}"))


#: the eager decomposition sets (`roundoff.capture.retrace.DECOMPOSITION_SETS`): ops eager runs as rounded steps
_EAGER_SETS = ("eager", "eager-cpu")
#: ops whose derivative calls one of those sets' ops: rsqrt's is ``-0.5 * grad * result.pow(3)``
_DERIVATIVES_CALLING = {"eager-cpu": ("rsqrt",)}


def _decompositions(policy: Policy, gm: torch.fx.GraphModule) -> dict[Any, Any] | None:
    """Inductor's decomposition table with the policy's eager sets over it, where Dynamo's graph `gm` calls
    one of their ops or an op whose derivative does (an op eager runs as rounded steps, such as ``logsumexp``
    or CPU bf16 ``x ** 3``, decomposed into those steps, which per-op rounding then rounds as eager does);
    None (Inductor's own) otherwise."""
    eager = [d for d in policy.decompositions if d in _EAGER_SETS]
    if not eager:
        return None
    names = {op.overloadpacket.__name__ for op in decomposition_table(eager)}
    names.update(n for d in eager for n in _DERIVATIVES_CALLING.get(d, ()))
    if not any(name in str(getattr(n.target, "__name__", n.target)) for n in gm.graph.nodes for name in names):
        return None
    return decomposition_table(_compiler_tables(policy))


def _compiler_tables(policy: Policy) -> list[str]:
    """The decomposition sets the compiler applies under `policy`: Inductor's, the eager sets over it."""
    return ["inductor", *(d for d in policy.decompositions if d in _EAGER_SETS)]


def _registered_backend(
    gm: torch.fx.GraphModule, example_inputs: list[Any], options: Mapping | None = None, **_: Any
) -> Any:
    """``torch.compile(m, backend="roundoff", options={"policy": "eager"})``."""
    options = dict(options or {})
    policy = get_policy(options.pop("policy", "eager"))
    if options:
        raise ValueError(
            f"backend 'roundoff' accepts options {{'policy': ...}} only, got {sorted(options)}"
        )
    return make_backend(policy)(gm, example_inputs)


def register() -> None:
    """Register the "roundoff" backend with torch._dynamo (idempotent)."""
    from torch._dynamo.backends.registry import _BACKENDS, register_backend

    if BACKEND_NAME not in _BACKENDS:
        register_backend(name=BACKEND_NAME)(_registered_backend)


def compile(
    model_or_fn: Callable[..., Any],
    policy: Policy | str = "eager",
    check: str | None = None,
    sample_every: int = 100,
    check_reference: str = "auto",
    check_async: bool | None = None,
    **torch_compile_kwargs: Any,
) -> Callable[..., Any]:
    """``torch.compile(model_or_fn, ...)`` with Inductor enforcing `policy`.

    Returns what torch.compile returns when `check` is None and the policy has no node overrides;
    otherwise a wrapper (for a module: an ``nn.Module`` sharing the original's parameters) that
    captures the callable on its first call to place node overrides, and, with `check` "warn" or
    "raise", compares every `sample_every`-th call (the first included) with eager and fp64 runs
    (see ``roundoff.compiler.checking``). `check_reference` says how the fp64 run is evaluated:
    "auto" (the default: "split-matmul" for a bf16/fp16 program on CUDA, else "eager"),
    "eager" (fp64 copies made anew on each sampled call, nothing held between samples) or
    "compiled" (a cached fp64 copy of the module, refreshed in place and compiled once with plain
    torch.compile: cheaper samples, a compile on the first, fp64 parameters held) or
    "split-matmul" (as "eager", but matmuls are sums of exact bf16 products accumulated in fp32,
    ~1e-5 relative, so refused for programs with fp32/fp64 tensors: much cheaper on a GPU; see
    ``roundoff.compiler.reference``). The verdict rule is the same for all. `check_async` (None:
    asynchronous for ``check="warn"`` on a GPU) queues a sample's checking work without
    synchronising the host; its verdict arrives at a later call or at ``flush_checks()`` of the
    returned wrapper (see ``roundoff.compiler.checking.Checker``).
    """
    if not callable(model_or_fn):
        raise TypeError(
            f"roundoff.compile expects a callable or nn.Module, got {type(model_or_fn).__name__}"
        )
    if "backend" in torch_compile_kwargs:
        raise ValueError(
            "roundoff.compile sets the backend itself; pass policy=... instead of backend=..."
        )
    if "mode" in torch_compile_kwargs:  # (torch.compile ignores a mode given with a backend of its own)
        raise ValueError(
            f"roundoff.compile does not take mode={torch_compile_kwargs['mode']!r}: it compiles with Inductor under "
            "the policy's settings, and torch.compile would ignore a mode given with that backend; set Inductor "
            "options with torch._inductor.config.patch(...) around the call instead"
        )
    pol = get_policy(policy)
    reference = reference_for(model_or_fn, check_reference)
    Checker(
        model_or_fn, model_or_fn, check, sample_every, asynchronous=check_async
    )  # validates check / sample_every / check_async up front
    if check is None and not pol.node_overrides:
        return torch.compile(model_or_fn, backend=make_backend(pol), **torch_compile_kwargs)
    state = _Compiled(
        model_or_fn, pol, check, sample_every, torch_compile_kwargs, reference, check_async
    )
    return state.wrapper()


CHECK_REFERENCES = ("auto", "eager", "compiled", "split-matmul")


def reference_for(fn: Callable[..., Any], check_reference: str) -> Fp64Reference:
    """The fp64 reference of checking mode for `check_reference` (one of `CHECK_REFERENCES`)."""
    if check_reference not in CHECK_REFERENCES:
        raise ValueError(
            f"check_reference={check_reference!r} is not accepted; use 'auto' ('split-matmul' for a "
            f"bf16/fp16 program on CUDA, else 'eager'), 'eager' (fp64 copies made per sampled "
            f"call), 'compiled' (cached fp64 copy, compiled once) or 'split-matmul' (as 'eager', "
            f"with matmuls from exact bf16 products accumulated in fp32)"
        )
    if check_reference == "compiled":
        return Fp64Reference(fn, cache=True, compile=True)
    split = {"auto": "auto", "eager": False, "split-matmul": True}[check_reference]
    return Fp64Reference(fn, cache=False, split_matmul=split)


def kept_aliases(program: Program, policy: Policy, planned: Plan | None = None) -> dict[str, str]:
    """{override id a plan of `program` made: the captured node it is placed on} for each node override
    that keeps in fp32 (``round_result=False`` alone) the node holding a decomposed node's value
    (``n7.3``, the cast that ends a 16-bit mean's decomposition: blame's fix for the mean): keeping
    that value is keeping ``n7``'s, what ``keep_unrounded`` does to ``n7``."""
    present = {node_id(n) for n in program.nodes()}
    if all(i in present for i in policy.node_overrides):
        return {}
    holder_of = value_holders((planned or plan(program, policy)).program.graph)
    return {i: holder_of[i] for i, o in policy.node_overrides.items()
            if i not in present and i in holder_of and o == OpOverride(round_result=False)}


def with_merged(planned: Plan, policy: Policy) -> dict[str, OpOverride]:
    """`policy`'s node overrides, and for each node its plan `planned` merges by common-subexpression
    elimination into one they override (the second of two ``torch.exp(logits)``), the same override:
    the compiled graph holds both, and the one without it would be computed as the unfixed policy does
    (trial 85: blame kept one fp16 ``exp`` of a contrastive loss in fp32, the plan merged the other into
    it, and the compiled loss stayed inf through the other)."""
    overrides = dict(policy.node_overrides)
    merged = planned.cse
    overrides.update({removed: overrides[kept] for removed, kept in merged.items()
                      if kept in policy.node_overrides and removed not in overrides})
    return overrides


def _check_made_for(program: Program, policy: Policy) -> None:
    """RoundoffPlacementError where `policy`'s node overrides were recorded as made for another program
    (blame's --save-policy records its graph): its ids name other nodes here (trial 60: a fix for one
    function placed on another's n4, n8, n9, silently; the CLI refused the same policy)."""
    if policy.made_for_graph and (mine := graph_fingerprint(program)) != policy.made_for_graph:
        raise RoundoffPlacementError(
            f"the node overrides of policy {policy.name!r} were made for program {policy.made_for!r} (graph "
            f"{policy.made_for_graph}), not for {program.name!r} (graph {mine}, captured "
            f"{'with' if program.backward else 'without'} its backward): "
            + ("the same name, another graph: another function of that name, or this one called with inputs of other "
               "shapes or dtypes, or with other inputs requiring grad (under torch.no_grad(), none do)"
               if policy.made_for == program.name else
               f"compile the function blame was run on ({policy.made_for!r}: blame my_step.py:loss makes a fix for "
               "`roundoff.compile(loss, ...)`, not for the model it calls)")
            + ". Node ids differ between programs, "
            "between a training step and its forward alone, and between training steps whose inputs require "
            "grad differently (the backward computes other gradients); run roundoff blame on this program (with "
            "--backward for a training step, its inputs as they are here) for a policy of its own"
            + ("; or, for the forward alone (a fix blame made without --backward), call the compiled function "
               "under torch.no_grad(): inputs or parameters that require grad make it a training step"
               if program.backward else ""))


def _as_compiled(program: Program, policy: Policy, aliases: dict[str, str]) -> Program | None:
    """`program` decomposed as the compiler decomposes it (Inductor's table, and the policy's ``eager``
    set, `_decompositions`) where a node override names a node that table decomposes (blame's fix
    keeping a ``clamp`` with tensor bounds, or a ``.to``, in fp32: trial 58; or, through `aliases`
    (`kept_aliases`), the cast that ends a bf16 softmax's decomposition: trial 64); None where none does."""
    from roundoff.capture.rewrite import decompose

    names = _compiler_tables(policy)
    table = decomposition_table(names)
    named = {aliases.get(i, i) for i in policy.node_overrides}
    if not any(n.target in table for n in program.nodes() if node_id(n) in named):
        return None
    return decompose(program, names, lowerings=False)


def _capture_as_checked(fn: Callable, args: tuple) -> Program:
    """The capture whose node ids a policy for `fn` names: with its backward (``check --backward``, blame's
    training-step fixes) where gradients are taken, else the forward alone. The two number nodes apart
    (trial 44: ``n218`` was a ``sum`` in the one and an ``unsqueeze`` in the other)."""
    from roundoff.capture import CaptureError, capture

    if torch.is_grad_enabled():
        try:
            return capture(fn, *args, backward=True)
        except CaptureError:  # nothing requires grad: an inference step
            pass
    return capture(fn, *args)


def _uncompiled(fn: Callable) -> str:
    """What a first call that compiled no graph of `fn` means."""
    return (f"torch.compile compiled no graph of {getattr(fn, '__name__', type(fn).__name__)} and ran it eagerly "
            "(Dynamo skipped the frame: a graph break inside a loop, or code it does not trace)")


class _Compiled:
    """State behind a roundoff.compile wrapper: lazy capture for node keys, then a Checker."""

    def __init__(
        self,
        fn: Callable,
        policy: Policy,
        check: str | None,
        sample_every: int,
        kwargs: dict,
        reference: Fp64Reference | None = None,
        check_async: bool | None = None,
    ) -> None:
        self.fn, self.policy = fn, policy
        self.keys: Mapping[str, tuple[NodeKey, int]] | None = None
        self.placements: list[str] = []
        self.numbering = GraphNumbering()
        self.placed = not policy.node_overrides  # (checked once the first call has compiled its graphs)
        self.said_uncompiled = False
        self.forward_only = False  # node overrides placed for a capture without its backward (first call)
        self.overrides: dict[str, OpOverride] = dict(policy.node_overrides)  # (`with_merged`, at the first call)
        compiled = torch.compile(
            fn, backend=make_backend(policy, self._node_keys, self.placements, self.numbering, lambda: self.overrides),
            **kwargs,
        )
        self.checker = Checker(fn, compiled, check, sample_every, reference, check_async)

    def _node_keys(self) -> Mapping[str, tuple[NodeKey, int]]:
        if self.keys is None:
            raise RoundoffPlacementError(
                "internal: node keys requested before the first call captured them"
            )
        return self.keys

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.keys is None and self.policy.node_overrides:

            if kwargs:
                raise RoundoffPlacementError(
                    "node overrides need positional tensor inputs to capture the callable"
                )
            program = _capture_as_checked(self.fn, args)
            _check_made_for(program, self.policy)
            self.forward_only = not program.backward
            planned = plan(program, self.policy)  # (once, for both)
            aliases = kept_aliases(program, self.policy, planned)
            self.overrides = with_merged(planned, self.policy)
            self.keys = program_keys(program, self.overrides, aliases,
                                     decomposed=_as_compiled(program, self.policy, aliases))
        try:
            out = self.checker(*args, **kwargs)
        except Exception as err:  # dynamo wraps backend errors; surface roundoff's own
            cause = getattr(err, "inner_exception", None) or err.__cause__
            if isinstance(cause, RoundoffCompileError):
                raise cause from None
            raise
        if self.forward_only and torch.is_grad_enabled() and any(
                isinstance(t, torch.Tensor) and t.requires_grad for t in tree_leaves(out)):
            raise RoundoffPlacementError(
                f"the node overrides of policy {self.policy.name!r} were placed for the forward alone (the first "
                "call took no gradients), but this call takes them (its output requires grad): torch.compile "
                "compiles it as a training step, where those overrides are not enforced; call the compiled function "
                "under torch.no_grad(), or run roundoff blame with --backward for a training step's fix")
        if not self.said_uncompiled and not self.numbering.compiled and self.checker.mode is not None:
            self.said_uncompiled = True  # (trial 92: a GRU decoder Dynamo skipped; checking said "passed")
            warn_at_caller(RoundoffCheckingWarning(
                f"roundoff.compile: {_uncompiled(self.fn)}, so checking compares eager with itself: move the loop "
                "into a function of its own, or remove the graph break (TORCH_LOGS=graph_breaks says where). "
                "Said once."))
        if not self.placed:
            self.placed = True
            if not self.numbering.compiled:
                raise RoundoffPlacementError(
                    f"{_uncompiled(self.fn)}, so the node overrides of policy {self.policy.name!r} are not enforced: "
                    "move the loop into a function of its own, or remove the graph break (TORCH_LOGS=graph_breaks says "
                    "where)")
            self.numbering.finish()
        return out

    def wrapper(self) -> Callable[..., Any]:
        if isinstance(self.fn, torch.nn.Module):
            return _CompiledModule(self.fn, self)

        @functools.wraps(self.fn)
        def compiled(*args: Any, **kwargs: Any) -> Any:
            return self(*args, **kwargs)

        compiled.roundoff_state = self  # type: ignore[attr-defined]
        compiled.flush_checks = self.checker.flush  # type: ignore[attr-defined]
        return compiled


class _CompiledModule(torch.nn.Module):
    """nn.Module face of a roundoff.compile wrapper; `_orig_mod` holds the user's module."""

    def __init__(self, module: torch.nn.Module, state: _Compiled) -> None:
        super().__init__()
        self._orig_mod = module
        object.__setattr__(self, "_roundoff", state)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._roundoff(*args, **kwargs)

    def flush_checks(self) -> None:
        """Deliver the verdict of a pending asynchronous sample (waits for its GPU work)."""
        self._roundoff.checker.flush()

    @property
    def roundoff_state(self) -> _Compiled:
        """The compile's state, as on a compiled function: ``.checker.history`` holds the verdicts."""
        return self._roundoff
