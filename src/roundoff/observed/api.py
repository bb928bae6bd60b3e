"""observe_compiled(): the real compiled program's kernel-boundary values, judged at the user's lines.

The program is captured (`roundoff.capture`, forward and, with `backward`, its backward in one aten
graph), compiled once by the real backend (Inductor: the kernels torch.compile generates for that
graph), run once with every kernel tapped to learn where each kernel's buffers are
(`roundoff.observed.taps`, `roundoff.observed.replay`), then run observed: each buffer that holds a
Program node's value is kept as soon as its kernel returns (CPU: the buffer itself, or a copy where
the program later writes over it; CUDA: on the device, up to twice the compiled step's peak memory
(`replay.DEVICE_KEEP`), and past that a non-blocking copy to pinned host memory). Then one lock-step run of
the graph (eager, fp64, the emulated policy) judges each buffer locally
(`roundoff.observed.compare`), reading the buffers where they were kept.
"""

from __future__ import annotations

import functools
import math
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from roundoff.analyze.check import MAX_REPLAYS
from roundoff.analyze.observe import rmse
from roundoff.analyze.output_floor import OutputFloors
from roundoff.analyze.output_verdicts import oracle_limit_floors
from roundoff.analyze.selections import flip_matters
from roundoff.analyze.verdict import (
    EXCESS_LIMIT,
    Rule,
    Verdict,
    judge,
    oracle_output_passes,
    path_dtypes,
)
from roundoff.capture import capture
from roundoff.capture.program import NODE_ID, Program, Specialization, node_source
from roundoff.execute.interpreter import Lockstep
from roundoff.execute.narrow_oracle import NarrowHeldOracle
from roundoff.execute.node_numerics import OracleNumerics
from roundoff.execute.run import complete_inputs, plan_numerics
from roundoff.numerics import get_format, round_to
from roundoff.observed.compare import (
    GLOBAL,
    KernelObserver,
    KernelReport,
    Observed,
    better,
    substitution_nodes,
)
from roundoff.observed.compile_errors import compiler_error
from roundoff.observed.output_rule import (
    CompiledOutput,
    OutputFailure,
    SelectionFlip,
    flagged_on_path,
    moved_by_wrong_kernels,
    range_losses_moving_nothing,
)
from roundoff.observed.partition import Stage, Staged, compile_staged
from roundoff.observed.real_step import TorchCompileOutput, departures, real_outputs
from roundoff.observed.replay import (
    Keeping,
    TapPlan,
    bitwise_equal,
    device_budget,
    learning_run,
    run_planned,
)
from roundoff.observed.reuse import stored_and_reused, unrounded_reads
from roundoff.observed.taps import ObserveError
from roundoff.ops import short_name
from roundoff.plan import plan
from roundoff.plan.shared import plan_pair
from roundoff.policy.model import Policy

BACKENDS = ("inductor",)
REFERENCES = {"oracle": "oracle", "fp64": "oracle", "eager": "eager"}
KINDS = ("pointwise", "reduction", "matmul", "template", "extern")
REPEATS = 3  # default timed runs of the compiled and of the tapped step (the fastest is reported)


@dataclass(frozen=True)
class UnmappedBuffer:
    """A buffer a kernel wrote that holds no Program node's whole value (not judged): its kernel and the
    Program nodes it was computed for ("n12 native_layer_norm": an intermediate of its decomposition)."""

    buffer: str
    kernel: str
    part_of: tuple[str, ...]


@dataclass(frozen=True)
class ObserveResult:
    """Every observed kernel buffer of one compiled run, in the order the kernels ran."""

    program: str
    backend: str
    device: str
    against: str
    policy: str  # the emulated policy compared bit for bit
    kernels: tuple[KernelReport, ...]
    launches: int  # kernel calls the compiled program made (extern kernels included)
    unmapped: tuple[str, ...]  # buffers written that hold no Program node's value
    step_seconds: float  # one unobserved run of the compiled program (warm, fastest of `REPEATS`)
    observed_seconds: float  # one observed run (buffers kept, host copies included, fastest of `REPEATS`)
    compare_seconds: float  # the lock-step comparison
    outputs_identical: bool  # the tapped run's outputs equal the unobserved run's, bit for bit
    stages: tuple[str, ...] = ("",)  # the compiled programs: ("",) one joint graph, or ("forward", "backward")
    rule: str = "same"  # how a buffer is compared with eager's (or, not `same`, with fp64 rounded to its dtype)
    source: str = field(default="", repr=False)  # the generated wrapper module
    outputs: tuple[torch.Tensor, ...] = field(default=(), repr=False)  # the tapped run's, on host
    untapped: tuple[str, ...] = ()  # buffers an op observe does not tap finished (`TapPlan.untapped`): not judged
    #: Against the oracle: the compiled program's outputs that fail check's output rule against the fp64
    #: run of the whole program (`OutputFailure`: NaN/inf where fp64 is finite, or over the limit with a
    #: flagged kernel on their path, or over the limit of their own format where the values of the
    #: kernels that diverge beyond the limit, put into fp64's run, move them beyond it too: a wrong
    #: kernel is not excused by a narrower format elsewhere on the path, such as Falcon's bf16 alibi in an
    #: fp16 model, trial 48); against eager, those that fail the rule against real eager's.
    failing_outputs: tuple[OutputFailure, ...] = ()
    #: Every floating-point output of the compiled program, measured (trial 76: passing outputs' figures were
    #: nowhere, so observe's could not be set beside check's prediction)
    outputs_measured: tuple[CompiledOutput, ...] = ()
    #: Against the oracle: outputs over the limit by value alone whose path has no flagged kernel (none
    #: diverges, is NaN/inf or amplifies an error it reads): an error grown over many roundings, none
    #: beyond the limit, so they pass, as `check` passes them (a fp16 BatchNorm net's gradients, 200x)
    unflagged_outputs: tuple[OutputFailure, ...] = ()
    unmapped_detail: tuple[UnmappedBuffer, ...] = ()  # `unmapped`, each with its kernel and what it is part of
    #: Selections (topk, sort, max over a dim, argmax) that, from the operands the compiled program gave
    #: them, choose other indices than fp64 of the whole program where that choice moves an output
    #: beyond the limit (a router's expert: `roundoff.analyze.selections`); they flag the outputs after them
    selection_flips: tuple[SelectionFlip, ...] = ()
    #: Against eager: (output, elements where real eager's output is NaN/inf and fp64's finite, of those
    #: where the compiled program's is NaN/inf too): where it is finite eager is wrong, not the compiled
    #: program (trial 73's fp16 ``mse_loss``); where it is not, both are (trial 76's fp16 scan)
    eager_nonfinite_outputs: tuple[tuple[str, int, int], ...] = ()
    #: (module, source) of modules torch.compile runs eagerly (`Program.dynamo_fallbacks`), which observe
    #: compiles with the rest of the captured program, as with ``torch._dynamo.config.allow_rnn``
    dynamo_fallbacks: tuple[tuple[str, str | None], ...] = ()
    #: The captured program's graph breaks (`Program.specializations`): the compiled graph holds the value eager
    #: computed there, so the verdict holds for these inputs only, as check says (trial 101)
    specializations: tuple[Specialization, ...] = ()
    #: Where torch.compile's own step of the user's function ran beside (`observe_compiled`'s `torch_compiled`):
    #: the outputs it computes otherwise than the step observe compiled, bit for bit (`real_step`); whether
    #: it was compared, and why not where it could not be
    torch_compile: tuple[TorchCompileOutput, ...] = ()
    torch_compile_compared: bool = False
    torch_compile_not_compared: str | None = None

    @property
    def first_divergent(self) -> KernelReport | None:
        """The first buffer (in run order) that diverges, passing over those whose loss moves no output
        (`KernelReport.moves_no_output`); the first of those only where no output fails (then it is all
        there is to name)."""
        diverging = [k for k in self.kernels if k.verdict is not Verdict.OK]
        mattering = next((k for k in diverging if not k.moves_no_output), None)
        if mattering is not None or self.failing_outputs:
            return mattering
        return next(iter(diverging), None)

    @property
    def harmless(self) -> tuple[KernelReport, ...]:
        """The diverging buffers whose loss moves no output (`KernelReport.moves_no_output`), in run order."""
        return tuple(k for k in self.kernels if k.verdict is not Verdict.OK and k.moves_no_output)

    @property
    def amplified_at(self) -> KernelReport | None:
        """Where outputs fail but no kernel diverges: the first kernel that computes a node which
        amplifies an error it reads beyond its format (`KernelReport.amplifying`: more than
        `EXCESS_LIMIT` times its format's rounding away from fp64 of the whole program, and more than
        `EXCESS_LIMIT` times the error of what it reads), where a carried error grows past the limit."""
        if not self.failing_outputs or self.first_divergent is not None:
            return None
        return next((k for k in self.kernels if k.amplifying), None)

    def range_only(self, k: KernelReport) -> bool:
        """Whether `k` diverges against fp64 only because its format cannot hold its values (its excess
        within the limit, `KernelReport.format_loss`): as `check` lists such a node, it fails only the
        outputs it moves (trial 48: a Bloom fp16 step's attention-score gradients, eager losing them alike)."""
        return self.against == "oracle" and k.verdict is Verdict.DIVERGES and k.excess <= EXCESS_LIMIT

    @property
    def diverges(self) -> bool:
        """An output fails, a buffer diverges other than only by its format's range (`range_only`), or
        torch.compile's own step computes an output wrong where observe's step does not (`torch_compile`)."""
        return bool(self.failing_outputs) or any(k.verdict is not Verdict.OK and not self.range_only(k)
                                                 for k in self.kernels) or any(o.fails for o in self.torch_compile)

    def agreement(self) -> dict[str, tuple[int, int]]:
        """{kernel kind: (buffers bit-identical to the emulated policy, buffers)}."""
        table: dict[str, tuple[int, int]] = {}
        for k in self.kernels:
            same, total = table.get(k.kind, (0, 0))
            table[k.kind] = (same + k.emulated_identical, total + 1)
        return table


def _device(requested: str | torch.device | None, inputs: tuple) -> torch.device:
    if requested is None:
        return next((x.device for x in inputs if isinstance(x, torch.Tensor)), torch.device("cpu"))
    try:
        device = torch.device(requested)
    except RuntimeError:
        raise ObserveError(f"device {requested!r}: not a torch device; use cpu or cuda") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ObserveError("device cuda: CUDA is not available here (torch.cuda.is_available() is "
                           "False); run on a machine with a CUDA GPU or use --device cpu")
    if device.type not in ("cpu", "cuda"):
        raise ObserveError(f"device {requested!r}: observe runs on cpu or cuda")
    return device


def _timed(fn: Callable[[], Any], device: torch.device) -> tuple[Any, float]:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    out = fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return out, time.perf_counter() - start


def _same_bits(a: Any, b: Any) -> bool:
    """Same dtype, shape and bits (NaN payloads included), whatever the strides."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return bitwise_equal(a, b)
    return type(a) is type(b)


def learn(staged: Staged, inputs: list[torch.Tensor]) -> dict[str, TapPlan]:
    """{stage label: what to keep after each of its kernel calls}, learned in one scanning run per
    stage (`roundoff.observed.replay.plan_taps`); also the warm-up of every stage. A buffer a later
    stage writes (the backward reusing a saved activation's memory) is copied when kept."""
    learners: dict[str, Any] = {}

    def call(stage: Stage, xs: list) -> Any:
        learners[stage.label], outs = learning_run(stage.compiled, xs)
        return outs

    try:
        staged.run(inputs, call)
    except Exception as exc:  # the compiled program itself may fail: then it is torch.compile's bug
        if (failure := _fails_unobserved(staged, inputs)) is None:
            raise
        raise ObserveError(failure) from exc
    plans: dict[str, TapPlan] = {}
    later: set[int] = set()
    for label in reversed(list(learners)):
        plans[label] = learners[label].plan(later)
        later |= learners[label].written()
    return {label: plans[label] for label in learners}


def _fails_unobserved(staged: Staged, inputs: list[torch.Tensor]) -> str | None:
    """Why the compiled program fails when run as Inductor built it, without taps (trial 50: its fp16
    ``_weight_norm_interface_backward`` fallback raises, as torch.compile of the model does), or None
    where it runs: then the failure is roundoff's."""
    try:
        with torch.no_grad():
            staged.run(inputs, lambda st, xs: st.compiled.run(*xs))
    except Exception as exc:  # noqa: BLE001 (whatever the compiled program raises is what to report)
        files = {getattr(st.compiled.module, "__file__", None) for st in staged.stages}
        lines = [f.line for f in traceback.extract_tb(exc.__traceback__) if f.filename in files and f.line]
        where = f" at `{lines[-1].strip()}`" if lines else ""
        return (f"the program Inductor compiled fails when it runs, without roundoff's taps too: "
                f"{type(exc).__name__}: {compiler_error(exc)}{where} (a torch.compile bug, not your program's nor "
                "roundoff's: torch.compile of your function most likely fails the same way; check that, and "
                "report it to PyTorch; observe needs a compiled program that runs)")
    return None


def run_observed(
    staged: Staged, inputs: list[torch.Tensor], device: torch.device, plans: dict[str, TapPlan],
    pinned: dict[str, torch.Tensor], device_bytes: int = 0,
) -> tuple[dict[str, Observed], float, tuple]:
    """One observed run, replaying `plans` (`roundoff.observed.replay`): ({node id: Observed}, seconds,
    outputs). CUDA buffers are kept on the device up to `device_bytes` for the whole step, the rest
    in `pinned` host buffers (kept from run to run); the seconds include keeping them (copies
    synchronized). A buffer of the backward stage is named ``backward:bufN``; a value the backward
    recomputes keeps the forward's buffer."""
    kept: dict[str, dict[str, torch.Tensor]] = {}
    keeping = Keeping(device_bytes, pinned)

    def call(stage: Stage, xs: list) -> Any:
        keeping.stage = stage.label
        kept[stage.label], outs = run_planned(stage.compiled, xs, plans[stage.label], keeping)
        return outs

    outs, seconds = _timed(lambda: staged.run(inputs, call), device)
    observed: dict[str, Observed] = {}
    offset = 0
    for stage in staged.stages:
        plan, prefix = plans[stage.label], f"{stage.label}:" if stage.label == "backward" else ""
        for c in (c for launch in plan.captures for c in launch):
            info = stage.compiled.buffers[c.buffer]
            if info.node_id not in observed:
                value = kept[stage.label][c.buffer]
                value = value / info.divisor if info.divisor != 1 else value  # a mean's sum: the kernel's own division
                observed[info.node_id] = Observed(c.kernel, prefix + c.buffer, info.kind, info.fused,
                                                  value, len(observed), offset + c.launch)
        offset += len(plan.kernels)
    return observed, seconds, tuple(outs)


def observe_compiled(
    fn_or_module: Callable[..., Any] | Program,
    *inputs: torch.Tensor,
    backend: str = "inductor",
    against: str = "oracle",
    backward: bool = False,
    device: str | torch.device | None = None,
    policy: str | Policy | None = None,
    tol: float = 1e-4,
    transcendentals: str = "eager",
    repeats: int = REPEATS,
    partitioned: bool = False,
    rule: Rule | str = Rule.SAME,
    torch_compiled: Callable[..., Any] | bool = False,
) -> ObserveResult:
    """Compile `fn_or_module` with the real `backend`, run it on `inputs` (on `device`, by default
    theirs) and judge every buffer its kernels write against `against` (``"oracle"``/``"fp64"`` or
    ``"eager"``), each from the operands the compiled program gave it; also bit for bit against the
    emulated `policy` (default ``inductor-cpu`` on CPU, ``inductor-gpu`` on CUDA). A `Program`
    (already captured) may be passed instead of a callable; its example inputs are used.
    ``transcendentals="inductor"`` evaluates the emulation's exp/erf/sin/... with Inductor's own fp32
    kernels (as `roundoff.analyze.check` can; one small compile per op and shape), so that what still
    differs is not the transcendental implementation. The compiled step and the tapped step are each
    run `repeats` times, alternately; the fastest of each is reported. With `partitioned` (a program
    with a backward), forward and backward are split by AOTAutograd's partitioner and compiled as
    two programs, as torch.compile compiles a training step (`roundoff.observed.partition`); else
    the joint graph is compiled as one. `rule` (``"same"``, ``"allclose"``, ``"bitwise"``,
    `roundoff.analyze.verdict.Rule`) is how a buffer is compared with eager's value against eager;
    against the oracle any rule but ``same`` compares it with fp64 correctly rounded to its dtype.
    `torch_compiled`: also run the user's function compiled by torch.compile itself on the same inputs
    (True: `fn_or_module`; or the function a `Program` was captured from) and compare its outputs with
    the step observe compiled (`roundoff.observed.real_step`: torch.compile differentiates another
    graph; `ObserveResult.torch_compile`); costs one more compile."""
    if backend not in BACKENDS:
        raise ObserveError(f"backend {backend!r}: observe supports {', '.join(BACKENDS)}")
    if against not in REFERENCES:
        raise ObserveError(f"against {against!r}: choose oracle (also spelled fp64) or eager")
    try:
        rule = Rule.parse(rule)
    except ValueError as exc:
        raise ObserveError(str(exc)) from None
    program = fn_or_module if isinstance(fn_or_module, Program) else capture(fn_or_module, *inputs, backward=backward)
    if torch_compiled is True and isinstance(fn_or_module, Program):
        raise ObserveError("torch_compiled=True needs the function itself: pass it as torch_compiled=fn")
    user_fn = fn_or_module if torch_compiled is True else (torch_compiled or None)
    host = complete_inputs(program, program.example_inputs)
    where = _device(device, host)
    on_device = [x.to(where) if isinstance(x, torch.Tensor) else x for x in host]
    policy = policy or ("inductor-gpu" if where.type == "cuda" else "inductor-cpu")
    staged = compile_staged(program, on_device, backend, partitioned)
    plans = learn(staged, on_device)  # also the tapped step's warm-up: first-call work is not the step's time
    with torch.no_grad():  # and the compiled step's
        device_bytes = device_budget(where, lambda: staged.run(on_device, lambda st, xs: st.compiled.run(*xs)))
    # Inductor's compile workers (processes, started by a cold compile) take the cores the timed steps use
    # (trial 69: a 0.001 s step timed at 0.285 s)
    from torch._inductor import async_compile

    async_compile.shutdown_compile_workers()
    pinned: dict[str, torch.Tensor] = {}  # CUDA: host buffers past the device budget, allocated once, reused by every run
    step = seconds = float("inf")
    for _ in range(max(1, repeats)):  # interleaved, so a burst of load hits both alike
        with torch.no_grad():
            reference, took = _timed(lambda: staged.run(on_device, lambda st, xs: st.compiled.run(*xs)), where)
        step = min(step, took)
        observed = {}  # the previous run's copies are freed before the next run makes its own
        observed, took, outs = run_observed(staged, on_device, where, plans, pinned, device_bytes)
        seconds = min(seconds, took)
    identical = len(outs) == len(reference) and all(_same_bits(a, b) for a, b in zip(outs, reference))
    start = time.perf_counter()
    finite = all(bool(o.isfinite().all()) for o in outs if isinstance(o, torch.Tensor) and o.is_floating_point())
    reports, judged_outputs, flips, moved, measure = _compare(program, observed, on_device, REFERENCES[against], policy,
                                                              tol, transcendentals, rule, finite, joint=not partitioned)
    eager_lost: list[tuple[str, int, int]] = []
    eager_outs = None
    if REFERENCES[against] == "eager":  # real eager's outputs of the captured program, judged by `rule`
        with torch.no_grad():
            eager_outs = tuple(program.graph_module(*on_device))
        failing = judged_outputs(outs, eager_outs, eager_lost)
        unflagged: tuple[OutputFailure, ...] = ()
    else:
        failing, unflagged = flagged_on_path(program, judged_outputs(outs) if rule is Rule.SAME else (), reports,
                                              flips)
        if rule is Rule.SAME:
            failing += moved(outs, reports, {f.name for f in failing})
            unflagged = tuple(u for u in unflagged if u.name not in {f.name for f in failing})
    measured = measure(outs, eager_outs)
    real = real_outputs(user_fn, program, on_device, backend) if user_fn is not None else None
    departed: tuple[TorchCompileOutput, ...] = ()
    if isinstance(real, tuple):
        names = program.output_labels()
        mine = {o.name: (o.rmse, o.nonfinite) for o in measured}
        theirs = {o.name: (o.rmse, o.reference_rmse, o.nonfinite) for o in measure(real, eager_outs)}
        departed = departures(real, outs, names, theirs, mine)
    return ObserveResult(
        program=program.name, backend=backend, device=str(where), against=REFERENCES[against],
        policy=policy if isinstance(policy, str) else policy.name, kernels=tuple(sorted(reports, key=lambda k: observed[k.node_id].order)),
        launches=sum(len(p.kernels) for p in plans.values()),
        unmapped=tuple(f"{label}:{b}" if label == "backward" else b for label, p in plans.items() for b in p.unmapped),
        untapped=tuple(f"{label}:{b}" if label == "backward" else b for label, p in plans.items() for b in p.untapped),
        step_seconds=step, observed_seconds=seconds,
        compare_seconds=time.perf_counter() - start, outputs_identical=identical, source=staged.source,
        stages=tuple(st.label for st in staged.stages), rule=rule.value,
        outputs=tuple(o.detach().cpu() for o in outs if isinstance(o, torch.Tensor)),
        failing_outputs=failing, unflagged_outputs=unflagged, unmapped_detail=_unmapped_detail(program, staged, plans),
        selection_flips=flips, eager_nonfinite_outputs=tuple(eager_lost), dynamo_fallbacks=program.dynamo_fallbacks,
        specializations=tuple(program.specializations),
        outputs_measured=tuple(replace(o, passes=o.name not in {f.name for f in failing}) for o in measured),
        torch_compile=departed, torch_compile_compared=isinstance(real, tuple),
        torch_compile_not_compared=real if isinstance(real, str) else None,
    )


def _rmses(res: torch.Tensor, ref: torch.Tensor, fp64: torch.Tensor) -> tuple[float, float]:
    """RMSE against `fp64` of `res` and of its reference `ref`, over the elements finite on all three; NaN
    (JSON null, not a perfect 0) where none is."""
    both = res.isfinite() & fp64.isfinite() & ref.isfinite()
    if not bool(both.any()):
        return math.nan, math.nan
    return rmse(res[both], fp64[both]), rmse(ref[both], fp64[both])


def _unmapped_detail(program: Program, staged: Staged, plans: dict[str, TapPlan]) -> tuple[UnmappedBuffer, ...]:
    """Each buffer written that holds no Program node's whole value: its kernel and what it is part of."""
    ops = {n.meta.get(NODE_ID): short_name(n.target) for n in program.nodes() if n.op == "call_function"}
    found = []
    for stage in staged.stages:
        plan = plans[stage.label]
        for buffer, kernel in zip(plan.unmapped, plan.unmapped_kernels):
            ids = stage.compiled.partials.get(buffer, ())
            found.append(UnmappedBuffer(f"backward:{buffer}" if stage.label == "backward" else buffer, kernel,
                                        tuple(f"{i} {ops[i]}" for i in ids if i in ops)))
    return tuple(found)


def _compare(
    program: Program, observed: dict[str, Observed], inputs: list, against: str, policy: str | Policy,
    tol: float, transcendentals: str, rule: Rule = Rule.SAME, outputs_finite: bool = True, joint: bool = False,
) -> tuple[list[KernelReport], Callable[[tuple], tuple[OutputFailure, ...]], tuple[SelectionFlip, ...],
           Callable[[tuple, list[KernelReport], set[str]], tuple[OutputFailure, ...]],
           Callable[[tuple, tuple | None], tuple[CompiledOutput, ...]]]:
    """Each buffer's report, a function judging the compiled program's outputs against the fp64
    run of the whole program (`OutputFailure`), and the selections whose choice from the compiled
    program's operands differs from fp64's and matters (`SelectionFlip`; `selections.flip_matters`). Where an operand is stored rounded and may be used
    unrounded in the same launch (`stored_and_reused`), the run is repeated with those users reading
    the operand computed unrounded from its own operands (`unrounded_reads`), every other user still
    the stored buffer, and the report that explains the kernel better is kept (`better`); and a function
    giving the outputs the wrong kernels move (`output_rule.moved_by_wrong_kernels`), and one measuring every
    compiled output against fp64 and its reference (real eager's outputs, given; else fp64 correctly
    rounded to its judged format: `CompiledOutput`). Against the
    oracle, where the compiled outputs are finite (`outputs_finite`), a buffer diverging only because its
    format cannot hold its values is marked when that loss moves no output
    (`output_rule.range_losses_moving_nothing`). `joint`: the program was compiled as one graph, forward
    and backward together (the plan's `joint`: no value saved for a backward)."""
    # the emulated policy as the compiled program was compiled: a training step's joint graph as one program
    emulated, eager = plan_pair(program, policy, "eager", functools.partial(plan, joint=joint) if joint else plan)
    judged = path_dtypes(emulated.program.graph)
    floors = OutputFloors(emulated.program, judged)
    exact: list[Any] = []
    flips: dict[str, tuple[tuple[int, int], object]] = {}

    def run(record: bool) -> dict[str, KernelReport]:
        # the local oracle holds inputs and substituted buffers as stored; every side's long-lived values
        # are recomputed when read again (`Lockstep`'s recompute), a substituted one as observed (`pin`)
        sides = [plan_numerics(eager), NarrowHeldOracle(), plan_numerics(emulated, transcendentals), OracleNumerics()]
        targets = substitution_nodes(emulated.program.graph, set(observed))
        observer = KernelObserver(program, observed, targets, against, tol, emulated, rule, floors if record else None,
                                  keep_outputs=record)
        with torch.no_grad():
            outs = Lockstep(emulated.program, sides, on_node=observer, recompute=range(len(sides))).run_inputs(inputs)
        if record:
            exact.extend(outs[GLOBAL] if isinstance(outs[GLOBAL], (tuple, list)) else (outs[GLOBAL],))
            flips.update(observer.flips)
        return {r.node_id: r for r in observer.reports}

    def float_outputs(compiled: tuple) -> Iterator[tuple[int, str, str, torch.Tensor, torch.Tensor, torch.dtype]]:
        """(index, name, node id, compiled value, fp64's, judged dtype) of each floating-point output."""
        for i, (name, arg, res, fp64) in enumerate(zip(emulated.program.output_labels(), emulated.program.output_args(),
                                                       compiled, exact)):
            if isinstance(res, torch.Tensor) and res.is_floating_point() and isinstance(fp64, torch.Tensor):
                node = isinstance(arg, torch.fx.Node)
                yield (i, name, arg.meta.get(NODE_ID, "") if node else "", res.detach().to(fp64.device), fp64.detach(),
                       judged.get(arg, res.dtype) if node else res.dtype)

    def judge_outputs(compiled: tuple, eager_outs: tuple | None = None,
                      eager_lost: list[tuple[str, int, int]] | None = None) -> tuple[OutputFailure, ...]:
        """The failing compiled outputs: by check's output rule against fp64, or with `eager_outs` (real
        eager's outputs of the same program) by `rule` against them, fp64 as the reference's reference;
        `eager_lost` gets (output, elements where eager is NaN/inf and fp64 finite, of them where the compiled
        output is NaN/inf too)."""
        failures = []
        for i, name, nid, res, fp64, work in float_outputs(compiled):
            if eager_outs is None:
                if oracle_output_passes(res, fp64, work, floors.floors.get(i, 0.0)):
                    continue
                ref = round_to(fp64, get_format(work)).double()
            else:
                ref = eager_outs[i].detach().to(res.device)
                wrong = ~ref.isfinite() & fp64.isfinite()
                if eager_lost is not None and bool(wrong.any()):
                    eager_lost.append((name, int(wrong.sum()), int((wrong & ~res.isfinite()).sum())))
                if judge(rule, ref.to(res.dtype), res, fp64, tol):
                    continue
            failures.append(OutputFailure(name, nid, *figures(i, res, ref, fp64, work, eager_outs is None),
                                          int((~res.isfinite() & fp64.isfinite()).sum())))
        return tuple(failures)

    def figures(i: int, res: torch.Tensor, ref: torch.Tensor, fp64: torch.Tensor, work: torch.dtype,
                vs_oracle: bool) -> tuple[float, float]:
        """(RMSE of output `i`, its reference's) against fp64; against the oracle the reference's is the one
        check's outputs table shows (`oracle_limit_floors`: the headline and the table say one figure, trial 85)."""
        got, ref_rmse = _rmses(res, ref, fp64)
        if vs_oracle and not math.isnan(ref_rmse):
            ref_rmse = max(ref_rmse, *oracle_limit_floors(fp64, work, floors.floors.get(i, 0.0)))
        return got, ref_rmse

    def measure(compiled: tuple, eager_outs: tuple | None) -> tuple[CompiledOutput, ...]:
        """Every floating-point compiled output's figures (`CompiledOutput`; `passes` left to the caller)."""
        found = []
        for i, name, nid, res, fp64, work in float_outputs(compiled):
            ref = eager_outs[i].detach().to(res.device) if eager_outs is not None else round_to(fp64, get_format(work))
            found.append(CompiledOutput(name, nid, *figures(i, res, ref, fp64, work, eager_outs is None),
                                        int((~res.isfinite() & fp64.isfinite()).sum())))
        return tuple(found)

    def moved(compiled: tuple, kernels: list[KernelReport], failing: set[str]) -> tuple[OutputFailure, ...]:
        return moved_by_wrong_kernels(program, emulated.program, inputs, observed, exact, compiled, kernels, failing)

    reused = stored_and_reused(program, observed)
    again: dict[str, KernelReport] = {}
    if reused:  # the same launch's users read the value unrounded; later kernels still read the buffer
        with unrounded_reads(emulated.program.graph, reused):  # (first: fp64's outputs are not held yet)
            again = run(record=False)
    reports = run(record=True)
    reports = {nid: better(r, again[nid]) if nid in again else r for nid, r in reports.items()}
    mattering = []
    for nid, ((n, of), chosen) in list(flips.items())[:MAX_REPLAYS]:  # (one fp64 run each)
        if flip_matters(emulated.program, inputs, nid, chosen, exact)[0]:
            node = emulated.program.node(nid)
            mattering.append(SelectionFlip(nid, short_name(node.target), node_source(node), n, of))
    if against == "oracle" and outputs_finite:
        ordered = sorted(reports.values(), key=lambda r: observed[r.node_id].order)
        harmless = range_losses_moving_nothing(emulated.program, inputs, ordered, exact)
        reports = {nid: replace(r, moves_no_output=True) if nid in harmless else r for nid, r in reports.items()}
    return list(reports.values()), judge_outputs, tuple(mattering), moved, measure
