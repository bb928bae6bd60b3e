"""Observe a compiled program cheaply: learn once where each buffer is, then keep only that.

`roundoff.observed.taps.tapped` finds a kernel's buffers by scanning its caller's locals after every
kernel call, which costs more Python per kernel than a small kernel takes to run. The generated
wrapper has no branches, so which buffers each kernel call writes, and through which argument, is
the same on every run: `plan_taps` learns it in one scanning run (at compile time) and
`run_planned` replays it with one list lookup per kernel call.

What a replayed run keeps of each buffer that holds a Program node's value (buffers holding none
are not kept at all), right after the kernel that wrote it returns:

- on CPU, the buffer itself (a reference: no copy, no memory beyond what the program allocated)
  unless the learning run saw its storage written again later (Inductor reuses a dead buffer's
  memory: ``buf18 = buf12; del buf12  # reuse``; kernels update buffers in place through
  ``in_out_ptr``; fallback ops mutate), in which case a copy in its own dtype;
- on CUDA, up to a budget of device bytes (`Keeping.device_bytes`), the buffer itself where no later
  call may write it, else a copy on the device; past the budget, a copy into a pinned host buffer
  allocated once per buffer, issued ``non_blocking``. Both are issued on the kernel's stream, so they
  run after that kernel and before any later kernel reuses the memory; the step synchronizes once,
  at its end. Device memory grows by at most the budget. (A step's kept buffers can be several times
  its peak memory; a host copy crosses PCIe at ~50 GB/s, which at a transformer's size made the
  observed step 2.4-3.2x the compiled one: bench/results/gpu-session31/.)

The generated module's code is not changed (its kernel globals are wrapped for the run, as by
`tapped`), and every replayed call checks that the kernel is the one the plan expects there.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from roundoff.observed.taps import _KERNEL, CompiledProgram, ObserveError, _storage, tapped

_CPP_SIGNATURE = re.compile(r"^(\w+) = async_compile\.cpp_pybinding\(\[([^\]]*)\]", re.MULTILINE)


@dataclass(frozen=True)
class Capture:
    """One buffer to keep right after one kernel call."""

    buffer: str  # "buf3"
    kernel: str  # the kernel credited with writing it
    launch: int  # that kernel call's index in the run
    arg: int | str | None  # the call's positional index or keyword that is the buffer; None: its result
    local: bool  # a view of it was passed: read the buffer from the caller's locals by name
    copy: bool  # written again later in the run (CPU): keep a copy, not the buffer


@dataclass(frozen=True)
class TapPlan:
    """What each kernel call of the compiled program writes that observe keeps, learned once."""

    kernels: tuple[str, ...]  # the kernel called at each launch
    captures: tuple[tuple[Capture, ...], ...]  # per launch: the buffers to keep after it ran
    unmapped: tuple[str, ...]  # buffers written that hold no Program node's value (not kept)
    # buffers a tapped kernel wrote first and an op observe does not tap finished afterwards (an
    # in-place fallback such as ``aten.scatter_add_``): what a tap sees is not their node's value (not kept)
    untapped: tuple[str, ...] = ()
    unmapped_kernels: tuple[str, ...] = ()  # the kernel that wrote each of `unmapped`


def _written_args(source: str) -> dict[str, tuple[bool, ...]]:
    """{C++ kernel name: per argument, whether the kernel may write it} from the generated wrapper
    (``cpp_pybinding(['const float*', 'float*', ...])``: a pointer not to const is an output)."""
    table = {}
    for name, types in _CPP_SIGNATURE.findall(source):
        args = [t.strip().strip("'\"") for t in types.split(",") if t.strip()]
        table[name] = tuple(not a.startswith("const") and a.endswith("*") for a in args)
    return table


def _written_tensors(kernel: str, args: tuple, kwargs: dict, out: Any, signatures: dict) -> list[torch.Tensor]:
    """The tensors the call may have written: C++ kernels' non-const pointers, extern kernels' ``out=``
    and result, and every tensor argument of any other kernel (Triton: conservative)."""
    if kernel in signatures:
        tensors = [a for a, w in zip(args, signatures[kernel]) if w]
    elif kernel.startswith("extern_kernels."):
        tensors = [kwargs.get("out"), out]
    else:
        tensors = [*args, *kwargs.values()]
    return [t for t in tensors if isinstance(t, torch.Tensor)]


def _span(t: torch.Tensor) -> tuple[int, int, int]:
    """(storage, first byte, end byte) of the memory `t` addresses (its elements' extent)."""
    start = t.data_ptr()
    end = start + t.element_size() * (1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride()) if n)) if t.numel() else start
    return _storage(t), start, end


def _writes_a_slice(span: tuple[int, int, int], later: Sequence[Sequence[tuple[int, int, int]]]) -> bool:
    """Whether a later call writes part of the memory `span` covers, not all of it: a slice of a
    concatenation another kernel fills (memory reused as a whole for another buffer is not)."""
    storage, start, end = span
    return any(s == storage and start <= a and b <= end and (a, b) != (start, end)
               for call in later for s, a, b in call)


def _where(value: torch.Tensor, args: tuple, kwargs: dict, out: Any) -> tuple[int | str | None, bool]:
    """The argument of the call that *is* `value` (else: read it from the caller's locals)."""
    if out is value:
        return None, False
    for i, a in enumerate(args):
        if a is value:
            return i, False
    for k, a in kwargs.items():
        if a is value:
            return k, False
    return None, True


class _Learner:
    """The learning run's bookkeeping: every kernel call, where each mapped buffer was found, and
    which storages each call wrote (to decide which buffers a CPU run must copy)."""

    def __init__(self, compiled: CompiledProgram) -> None:
        self.compiled, self.signatures = compiled, _written_args(compiled.source)
        self.kernels: list[str] = []
        self.writes: list[set[int]] = []  # per call: the storages it may have written
        self.spans: list[list[tuple[int, int, int]]] = []  # per call: the memory of each tensor it may have written
        self.current: tuple[tuple, dict, Any] = ((), {}, None)  # the call being scanned
        self.found: list[tuple[Capture, torch.Tensor, torch.Tensor, int]] = []  # capture, buffer, copy, version
        self.unmapped_kernels: dict[str, str] = {}  # unmapped buffer -> the kernel that wrote it (run order)
        self.mutated: set[str] = set()  # buffers an op between two kernel calls changed (an in-place fallback)

    def call(self, kernel: str, args: tuple, kwargs: dict, out: Any) -> None:
        """Record a kernel call that has just run."""
        self.kernels.append(kernel)
        written = _written_tensors(kernel, args, kwargs, out, self.signatures)
        self.writes.append({_storage(t) for t in written})
        # a found buffer whose version moved since its tap, and that this call does not write, was changed
        # by an op no tap sees (trial 54: ``aten.scatter_reduce_.two`` finishing buf0 between two kernels,
        # whose memory a later kernel reuses: the end-of-run check alone took that for the later kernel's)
        for i, (c, value, copy, version) in enumerate(self.found):
            if value._version != version:
                if _storage(value) in self.writes[-1]:  # this call's own write (an extern's out=)
                    self.found[i] = (c, value, copy, value._version)
                else:
                    self.mutated.add(c.buffer)
        self.spans.append([_span(t) for t in written])
        self.current = (args, kwargs, out)

    def sink(self, kernel: str, launch: int, buffer: str, value: torch.Tensor) -> None:
        if buffer in self.compiled.unstored:
            return
        if buffer not in self.compiled.buffers:
            self.unmapped_kernels[buffer] = kernel
            return
        # found after the call that wrote it, or (a result bound to its name after the call) later
        arg, local = _where(value, *self.current) if launch == len(self.kernels) - 1 else (None, False)
        capture = Capture(buffer, kernel, launch, arg, local, copy=False)
        self.found.append((capture, value, value.detach().to("cpu", copy=True), value._version))

    def rewritten(self, kernel: str, launch: int, names: dict[str, Any]) -> None:
        """A buffer found at an earlier call that this call changes again under its own name (`names`:
        the wrapper's locals; trial 49: Inductor's ``index_put(accumulate=True)`` adding into the zeros
        an earlier kernel wrote, whose tap saw the zeros): its node's value is the one after this call,
        so it is kept here and credited to this kernel (a concatenation whose slices several kernels write
        is not: `plan` leaves it unjudged). Only where the call's written arguments are known
        (C++ and extern kernels: a Triton kernel's may be any argument; reading one changes nothing, but
        telling the two apart needs a copy per argument per call). A buffer an extern kernel wrote holds its
        node's whole value there: a later kernel writing it mutates it into another node's value (trial 61:
        a ``slice`` copy's backward zeroes half of the ``mm`` gradient it is given, in place), so it stays
        credited to the extern kernel, copied before that write; so does a buffer an op made for another
        node writes into (`BufferInfo.overwritten`, trial 94: the same zeroing, of a copy a C++ kernel made)."""
        if kernel not in self.signatures and not kernel.startswith("extern_kernels."):
            return
        for i, (c, value, copy, _) in enumerate(self.found):
            rewritten_here = (c.launch < launch and names.get(c.buffer) is value
                              and not c.kernel.startswith("extern_kernels.")
                              and not self.compiled.buffers[c.buffer].slices
                              and not self.compiled.buffers[c.buffer].overwritten  # (another node's value)
                              and _storage(value) in self.writes[launch])
            if rewritten_here and not bitwise_equal(value.detach().cpu(), copy):
                arg, local = _where(value, *self.current)
                self.found[i] = (replace(c, kernel=kernel, launch=launch, arg=arg, local=local), value,
                                 value.detach().to("cpu", copy=True), value._version)

    def written(self) -> set[int]:
        """The storages any call of the run may have written."""
        return set().union(*self.writes)

    def plan(self, written_later: set[int] | frozenset[int] = frozenset()) -> TapPlan:
        """The plan; `written_later`: storages a later program of the same step may write (a backward
        reuses the memory of the activations the forward saved for it: AOTAutograd's donated buffers)."""
        captures: list[list[Capture]] = [[] for _ in self.kernels]
        untapped, unmapped, kept_slices = [], dict(self.unmapped_kernels), set()
        for c, value, copy, version in self.found:
            later = _storage(value) in set().union(written_later, *self.writes[c.launch + 1:])
            slices = self.compiled.buffers[c.buffer].slices
            if slices and _writes_a_slice(_span(value), self.spans[c.launch + 1:]):  # never whole at one tap
                unmapped[c.buffer] = c.kernel
                continue
            kept_slices.update(slices)  # (judged as the whole)
            changed = value._version != version or not bitwise_equal(value.detach().cpu(), copy)
            if c.buffer in self.mutated or changed and not later or (  # finished by an op no tap sees: the tap
                    self.compiled.buffers[c.buffer].fill and not _one_value(copy)) or (  # saw its first state only;
                    self.compiled.buffers[c.buffer].overwritten and not later):  # or a fill's buffer its own
                untapped.append(c.buffer)  # kernel wrote other values into (trial 84), or one an op of its own
                continue  # kernel wrote another node's value into (trial 94)
            captures[c.launch].append(replace(c, copy=later or changed))
        names = [b for b in unmapped if b not in kept_slices]
        return TapPlan(tuple(self.kernels), tuple(tuple(c) for c in captures), tuple(names), tuple(untapped),
                       tuple(unmapped[b] for b in names))


def _one_value(t: torch.Tensor) -> bool:
    """Whether every element of `t` has one bit pattern (what a fill leaves)."""
    bits = t.reshape(-1).view(_BITS[t.element_size()]) if t.element_size() in _BITS and t.numel() else None
    return bits is None or bool((bits == bits[0]).all())


_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same dtype, shape and bits (NaN payloads included), whatever the strides (a strided buffer, a NeRF's
    ``t[..., 1:] - t[..., :-1]``, cannot be viewed as bytes in place: trial 88)."""
    return a.shape == b.shape and a.dtype == b.dtype and bool(
        torch.equal(a.reshape(-1).contiguous().view(torch.uint8), b.reshape(-1).contiguous().view(torch.uint8)))


class _Recording:
    """A kernel wrapper for the learning run: records the call, then lets `tapped`'s tap scan."""

    def __init__(self, tap: Any, learner: _Learner) -> None:
        self.tap, self.learner = tap, learner

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self.tap.kernel(*args, **kwargs)
        self.learner.call(self.tap.name, args, kwargs, out)
        frame = sys._getframe(1)
        launch = self.tap.after(frame, args, kwargs)
        self.tap.note_returned(out, args, kwargs, launch)
        self.learner.rewritten(self.tap.name, launch, frame.f_locals)
        return out

    def run(self, *args: Any, **kwargs: Any) -> Any:
        out = self.tap.kernel.run(*args, **kwargs)
        self.learner.call(self.tap.name, args, kwargs, None)
        self.tap.after(sys._getframe(1), args, kwargs)
        return out

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.tap.kernel, attr)


def plan_taps(compiled: CompiledProgram, inputs: Sequence[Any]) -> TapPlan:
    """Run `compiled` once with every kernel tapped and scanned (`tapped`) and return the plan of
    what to keep after each kernel call (see the module docstring). Costs one slow observed run."""
    return learn_taps(compiled, inputs)[0]


def learn_taps(compiled: CompiledProgram, inputs: Sequence[Any]) -> tuple[TapPlan, Any]:
    """`plan_taps`, and the outputs of that run."""
    learner, outs = learning_run(compiled, inputs)
    return learner.plan(), outs


def learning_run(compiled: CompiledProgram, inputs: Sequence[Any]) -> tuple[_Learner, Any]:
    """One scanning run of `compiled`: what it learned (``.plan()`` is `plan_taps`) and its outputs."""
    learner = _Learner(compiled)
    with tapped(compiled.module, learner.sink, wrap=lambda tap: _Recording(tap, learner), source=compiled.source), \
            torch.no_grad():
        outs = compiled.run(*inputs)
    if any(value.is_cuda for _, value, _, _ in learner.found):
        torch.cuda.synchronize()
    return learner, outs


class _Replay:
    """A kernel wrapper for a replayed run: calls the kernel, then keeps what the plan says."""

    def __init__(self, kernel: Any, name: str, state: _ReplayState) -> None:
        self.kernel, self.name, self.state = kernel, name, state

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self.kernel(*args, **kwargs)
        self.state.keep(self.name, args, kwargs, out)
        return out

    def run(self, *args: Any, **kwargs: Any) -> Any:  # Triton kernels are launched by `.run`
        out = self.kernel.run(*args, **kwargs)
        self.state.keep(self.name, args, kwargs, None)
        return out

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.kernel, attr)


class _ReplayExtern:
    def __init__(self, inner: Any, state: _ReplayState) -> None:
        self._inner, self._state = inner, state

    def __getattr__(self, attr: str) -> Any:
        return _Replay(getattr(self._inner, attr), f"extern_kernels.{attr}", self._state)


@dataclass
class Keeping:
    """Where one replayed step keeps the CUDA buffers it reads (a CPU run keeps them as the module doc
    says): on the device while their bytes stay within `device_bytes`, the rest in `pinned` host
    buffers, which persist from step to step (pass the same dict to each step's `Keeping`)."""

    device_bytes: int = 0
    pinned: dict[str, torch.Tensor] = field(default_factory=dict)  # "stage:bufN" -> its host buffer
    stage: str = ""  # the program being run (a backward's buffers have names of their own)
    used: int = 0  # device bytes kept so far in this step


class _ReplayState:
    def __init__(self, plan: TapPlan, keeping: Keeping) -> None:
        self.plan, self.keeping, self.launch = plan, keeping, 0
        self.kept: dict[str, torch.Tensor] = {}
        self.cuda = False

    def keep(self, name: str, args: tuple, kwargs: dict, out: Any) -> None:
        launch, plan = self.launch, self.plan
        if launch >= len(plan.kernels) or plan.kernels[launch] != name:
            expected = plan.kernels[launch] if launch < len(plan.kernels) else "no kernel"
            raise ObserveError(f"kernel call {launch} is {name}, where the learning run saw {expected}: "
                               "the compiled program does not run the same kernels each time; observe cannot replay it")
        self.launch += 1
        for c in plan.captures[launch]:
            if c.local:
                value = sys._getframe(2).f_locals[c.buffer]  # keep <- _Replay.__call__ <- the wrapper
            else:
                value = out if c.arg is None else args[c.arg] if isinstance(c.arg, int) else kwargs[c.arg]
            self.kept[c.buffer] = self._held(c, value)

    def _held(self, c: Capture, value: torch.Tensor) -> torch.Tensor:
        if not value.is_cuda:
            return value.detach().clone() if c.copy else value.detach()
        self.cuda, keeping = True, self.keeping
        size = value.numel() * value.element_size() if c.copy else value.untyped_storage().nbytes()
        if keeping.used + size <= keeping.device_bytes:
            keeping.used += size
            return value.detach().clone() if c.copy else value.detach()
        key = f"{keeping.stage}:{c.buffer}"
        host = keeping.pinned.get(key)
        if host is None or host.shape != value.shape or host.dtype != value.dtype:
            host = keeping.pinned[key] = torch.empty_like(value, device="cpu", pin_memory=True)
        return host.copy_(value.detach(), non_blocking=True)


@contextlib.contextmanager
def replaying(compiled: CompiledProgram, plan: TapPlan, keeping: Keeping) -> Iterator[_ReplayState]:
    """For the duration, the wrapper's kernels keep what `plan` says in ``state.kept`` ({buffer:
    tensor}), CUDA buffers where `keeping` says. Globals are restored on exit."""
    module, state = compiled.module, _ReplayState(plan, keeping)
    saved = {name: value for name, value in vars(module).items()
             if _KERNEL.match(name) and (callable(value) or hasattr(value, "run"))}
    saved["extern_kernels"] = module.extern_kernels
    for name, value in saved.items():
        setattr(module, name, _ReplayExtern(value, state) if name == "extern_kernels" else _Replay(value, name, state))
    try:
        yield state
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


def run_planned(compiled: CompiledProgram, inputs: Sequence[Any], plan: TapPlan,
                keeping: Keeping | None = None) -> tuple[dict[str, torch.Tensor], Any]:
    """One replayed run: ({buffer: kept value}, the program's outputs). CUDA buffers are kept where
    `keeping` says (default: all on the host, in new pinned buffers); the copies are complete when
    this returns (one synchronize at the end of the step)."""
    with replaying(compiled, plan, keeping or Keeping()) as state, torch.no_grad():
        outs = compiled.run(*inputs)
    if state.cuda:
        torch.cuda.synchronize()
    if state.launch != len(plan.kernels):
        raise ObserveError(f"the compiled program made {state.launch} kernel calls where the learning run "
                           f"made {len(plan.kernels)}: observe cannot replay it")
    return state.kept, outs


#: Device memory an observed CUDA step may add to keep buffers, in units of the compiled step's peak
#: (so observing peaks at no more than 1 + this times the compiled step's, issue 16's memory target: 3x)
DEVICE_KEEP = 2.0


def device_budget(device: torch.device, step: Callable[[], Any]) -> int:
    """Run `step` (the compiled step, unobserved) and return the device bytes an observed step may
    keep buffers in: `DEVICE_KEEP` times the step's peak allocated memory (inputs and weights
    included), less what the device cannot spare beside that peak (10% of it held back); 0 on CPU."""
    if device.type != "cuda":
        step()
        return 0
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    step()
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device)
    free, total = torch.cuda.mem_get_info(device)
    spare = free + torch.cuda.memory_reserved(device) - peak - total // 10
    return int(max(0, min(DEVICE_KEEP * peak, spare)))
