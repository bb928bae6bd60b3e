"""The fp64 reference run of checking mode, made cheap to repeat.

Contract: the reference is the user's callable evaluated in fp64 on fp64 copies of its
floating-point arguments and of a module's floating-point parameters and buffers, including those of
the modules a plain callable reads through its closure or its globals (``lambda ids: model(ids).loss``),
and through those of the helper functions it calls.
Every bf16, fp16, fp8 and fp32 value (subnormals, +-inf, NaN, -0.0 included) is exactly an fp64 value,
so these copies are exact; in the eager reference every other floating tensor an op reads (captured by
closure, a global, made with a narrow ``dtype=``) is read as its fp64 copy too (`KeepFp64`); non-floating
tensors stay as they are. fp64 rounding error (unit roundoff 2^-53 ~ 1.1e-16) is far below that of any
format compared against it (fp32: 6e-8, bf16: 3.9e-3), so which kernels evaluate the fp64 run (eager or
Inductor, fused or not, summation order) does not change a verdict of ``same(eager, compiled, fp64_ref)``. Where the
callable itself casts to a narrower floating dtype (``logits.float()`` before a loss, an RMSNorm that
normalises in ``x.float()``), the eager reference keeps fp64 (`KeepFp64`: a fp32 "fp64" output made
``same`` skip its RMSE test, trial 63); the compiled one evaluates that part at that precision, and
there may differ from the eager one at that precision (7.4e-7 absolute on the outputs of the d=4096
Llama block, measured on an H200: bench/results/compile_gpu_large_sample_profile.json).

`Fp64Reference` keeps, for a module, one fp64 *shadow* copy built on the first run and refreshed in
place (``copy_``, exact) from the live parameters and buffers before every run, so a training step
that changed the weights is seen; with ``compile=True`` the shadow's forward is compiled once with
plain ``torch.compile`` (Inductor defaults; its compile is paid on the first sampled call). The
shadow costs fp64 memory for every floating parameter and buffer (4x a bf16 model, 2x an fp32 one)
for as long as the checker lives; ``cache=False`` instead converts the parameters on every run
(the same peak at the sampled call, nothing held between samples, no compile). A plain callable
has no state to cache: only its arguments are converted, and ``compile`` compiles it once.
Every run is under ``torch.no_grad``.

``split_matmul=True`` (eager runs only) evaluates the fp64 run's matmuls as sums of exact bf16
products accumulated in fp32 (``roundoff.compiler.split_matmul``: about 1e-5 relative error
instead of fp64's 1e-16, still two orders of magnitude below fp16's rounding and more below
bf16's), because on a GPU the fp64 GEMMs are most of the reference's cost; it refuses a program
with fp32/fp64 tensors, which that error could not judge. ``"auto"`` splits exactly when the
program is bf16/fp16 and on CUDA, and runs plain fp64 otherwise. Copies of bf16 parameters and
arguments are recognised as exactly bf16, which halves the GEMMs they take part in.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from roundoff.capture.closure import target_state
from roundoff.compiler.split_matmul import SplitMatmulMode


def to_fp64(x: Any) -> Any:
    """An fp64 copy of a floating-point tensor (exact, detached); anything else unchanged."""
    return x.detach().double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x


def _state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {**dict(module.named_parameters()), **dict(module.named_buffers())}


def _clone_float(x: Any) -> Any:
    """A detached copy, in its own dtype, of a floating-point tensor; anything else unchanged."""
    return x.detach().clone() if isinstance(x, torch.Tensor) and x.is_floating_point() else x


def _fp64_noting_exact(tree: Any, exact: dict[int, torch.Tensor | None]) -> Any:
    """`to_fp64` over a pytree; records in `exact` each copy made from bf16 (storage pointer ->
    the bf16 source where it has the copy's layout, else None; see ``SplitMatmulMode``)."""

    def convert(x: Any) -> Any:
        y = to_fp64(x)
        if y is not x and x.dtype == torch.bfloat16:
            same_layout = x.stride() == y.stride() and x.storage_offset() == y.storage_offset() == 0
            exact[y.untyped_storage().data_ptr()] = x.detach() if same_layout else None
        return y

    return pytree.tree_map(convert, tree)


#: Programs whose values carry at best these formats' precision are judged well enough by a reference
#: with split matmuls (~1e-5 relative against bf16's 3.9e-3 and fp16's 4.9e-4 unit roundoff).
_SPLIT_DTYPES = (torch.bfloat16, torch.float16)


def _wide(t: torch.Tensor) -> torch.Tensor:
    """An fp64 copy of a narrower floating-point tensor (exact); an fp64 or non-floating one itself."""
    return t.double() if t.is_floating_point() and t.dtype != torch.float64 else t


class KeepFp64(TorchDispatchMode):
    """Casts to a narrower floating dtype made inside the fp64 run (``x.float()``, ``.half()``,
    ``.to(torch.bfloat16)``) return fp64 copies, and every narrower floating tensor an op reads (one the
    run did not make: a closed-over constant, research code's dict of parameters, a factory's
    ``dtype=torch.bfloat16``) is read as its fp64 copy: exact, so the run stays fp64 from end to end
    (trial 85: a closed-over fp16 weight made the reference fail, and checking mode checked nothing). An
    in-place write into such a tensor writes its copy, never the caller's tensor."""

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        dtype = kwargs.get("dtype")
        if func is torch.ops.aten._to_copy.default and isinstance(dtype, torch.dtype) and dtype.is_floating_point:
            kwargs = {**kwargs, "dtype": torch.float64}
        args, kwargs = pytree.tree_map_only(torch.Tensor, _wide, (args, kwargs))
        return func(*args, **kwargs)


class ReadMixedAsFp64(TorchFunctionMode):
    """A torch function that reads fp64 and narrower floating tensors together reads the narrower as
    fp64 copies (exact), before torch's own checks: a convolution compares its input's dtype with its
    weight's and bias's before any dispatch mode sees the call (trial 110: "Input type (double) and
    bias type (c10::BFloat16) should be the same" for a bf16 Conv2d the fp64 run did not convert).
    A call of one dtype is passed on untouched (a `.dtype` read, a cast)."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        floats = set()
        for a in (*args, *kwargs.values()):  # (tensors and lists of them: a pytree walk per op costs 4x)
            for t in (a if isinstance(a, (list, tuple)) else (a,)):
                if isinstance(t, torch.Tensor) and t.is_floating_point():
                    floats.add(t.dtype)
        if torch.float64 in floats and len(floats) > 1:
            args, kwargs = pytree.tree_map_only(torch.Tensor, _wide, (args, kwargs))
        return func(*args, **kwargs)


def _fp64_modes(split: bool, exact: dict[int, torch.Tensor | None]) -> contextlib.ExitStack:
    """The eager fp64 run's modes: `ReadMixedAsFp64` at the torch function level; below it split
    matmuls where `split`, and `KeepFp64` inside it (the innermost dispatch mode sees the user's ops
    first; the split's own bf16 pieces pass below it)."""
    stack = contextlib.ExitStack()
    stack.enter_context(ReadMixedAsFp64())
    if split:
        stack.enter_context(SplitMatmulMode(exact))
    stack.enter_context(KeepFp64())
    return stack


def read_modules(fn: Callable[..., Any]) -> list[torch.nn.Module]:
    """The modules a plain callable reads, outermost only, found as capture finds a target's state
    (`roundoff.capture.closure`: a bound method's object, closure cells, defaults and the globals its
    code names, and so on through the helper functions found on the way: trial 110, a training step
    calling a helper that reads the global `model`); none for a module itself."""
    if isinstance(fn, torch.nn.Module):
        return []
    found = target_state(fn).modules
    inner = {id(sub) for m in found for sub in m.modules() if sub is not m}
    return [m for m in found if id(m) not in inner]


def _modules_in_fp64(modules: list[torch.nn.Module], exact: dict[int, torch.Tensor | None]) -> contextlib.ExitStack:
    """For the run, each of `modules` reads fp64 copies of its floating parameters and buffers (its own
    tensors untouched)."""
    from torch.nn.utils.stateless import _reparametrize_module

    stack = contextlib.ExitStack()
    for m in modules:
        stack.enter_context(_reparametrize_module(m, _fp64_noting_exact(_state(m), exact)))
    return stack


def run_fp64(
    fn: Callable[..., Any],
    args: tuple,
    kwargs: dict,
    state: dict[str, Any] | None = None,
    split: bool = False,
) -> Any:
    """`fn` on fp64 copies of the arguments (and of a module's parameters and buffers, or of
    `state`, a copy of them taken earlier), built anew; `split`: matmuls as
    ``split_matmul.split_matmul`` (see ``SplitMatmulMode``)."""
    exact: dict[int, torch.Tensor | None] = {}
    args64, kwargs64 = _fp64_noting_exact((args, kwargs), exact)
    with torch.no_grad():
        if isinstance(fn, torch.nn.Module):
            state64 = _fp64_noting_exact(_state(fn) if state is None else state, exact)
            with _fp64_modes(split, exact):
                return torch.func.functional_call(fn, state64, args64, kwargs64)
        with _modules_in_fp64(read_modules(fn), exact), _fp64_modes(split, exact):
            return fn(*args64, **kwargs64)


class Fp64Reference:
    """Callable ``(args, kwargs) -> fp64 outputs`` of `fn`; see the module docstring."""

    def __init__(
        self,
        fn: Callable[..., Any],
        cache: bool = True,
        compile: bool = False,
        split_matmul: bool | str = False,
    ) -> None:
        if compile and not cache and isinstance(fn, torch.nn.Module):
            raise ValueError(
                "Fp64Reference(compile=True, cache=False) for a module is not supported: the compiled "
                "forward needs the cached fp64 shadow module; pass cache=True or compile=False"
            )
        if split_matmul not in (False, True, "auto"):
            raise ValueError(f"split_matmul={split_matmul!r} is not accepted; use False, True or 'auto'")
        if compile and split_matmul is True:
            raise ValueError(
                "Fp64Reference(compile=True, split_matmul=True) is not supported: split matmuls are "
                "routed by a dispatch mode, which a compiled forward does not pass through"
            )
        self.fn, self.cache, self.compile, self.split = fn, cache, compile, split_matmul
        self._exact_shadow: dict[int, torch.Tensor | None] = {}
        self._shadow: torch.nn.Module | None = None
        self._pairs: tuple[list[torch.Tensor], list[torch.Tensor]] = ([], [])
        self._run: Callable[..., Any] | None = None

    def _build(self) -> Callable[..., Any]:
        fn = self.fn
        if isinstance(fn, torch.nn.Module) and self.cache:
            with torch.no_grad():
                shadow = copy.deepcopy(fn)
                for t in _state(shadow).values():
                    if t.is_floating_point():
                        t.data = t.data.double()
                for p in shadow.parameters():
                    p.grad = None  # deepcopy copied the live gradients
                shadow.requires_grad_(False)
            live, mine = _state(fn), _state(shadow)
            if live.keys() != mine.keys():
                raise RuntimeError(
                    "internal: the fp64 shadow copy of the module has different parameter names"
                )
            self._pairs = ([mine[k] for k in live], [live[k] for k in live])
            # None: the live bf16 tensor may change before a snapshot's run; convert the shadow's copy
            self._exact_shadow = {
                mine[k].untyped_storage().data_ptr(): None
                for k in live
                if live[k].dtype == torch.bfloat16
            }
            self._shadow = fn = shadow
        elif isinstance(fn, torch.nn.Module):
            return lambda *a, **k: run_fp64(self.fn, a, k, split=self.split_for(a, k))
        return torch.compile(fn) if self.compile else fn

    def split_for(self, args: tuple, kwargs: dict) -> bool:
        """Whether this run's matmuls are split (see the module docstring): never for a compiled
        reference; with "auto", when the program is low precision (every floating-point argument,
        parameter and buffer bf16 or fp16; tensors captured by a closure are not seen) and runs on
        CUDA, where fp64 GEMMs are the cost."""
        if self.compile or self.split is False:
            return False
        state = _state(self.fn) if isinstance(self.fn, torch.nn.Module) else {}
        floats = [
            t
            for t in [*pytree.tree_leaves((args, kwargs)), *state.values()]
            if isinstance(t, torch.Tensor) and t.is_floating_point()
        ]
        low = all(t.dtype in _SPLIT_DTYPES for t in floats)
        if self.split == "auto":
            return low and any(t.is_cuda for t in floats)
        if not low:
            wide = sorted({str(t.dtype) for t in floats if t.dtype not in _SPLIT_DTYPES})
            raise ValueError(
                f"check_reference='split-matmul' is accurate to about 1e-5 relative, enough to judge "
                f"bf16/fp16 programs but not this one (it has {', '.join(wide)} tensors); use "
                f"check_reference='eager' or 'compiled'"
            )
        return True

    def refresh(self) -> None:
        """Copy the live parameters and buffers into the fp64 shadow (exact; no-op without one)."""
        dst, src = self._pairs
        if dst:
            with torch.no_grad():
                torch._foreach_copy_(dst, src)

    def __call__(self, args: tuple, kwargs: dict) -> Any:
        if self._run is None:
            self._run = self._build()
        self.refresh()
        return self._run_prepared(args, kwargs)

    def _run_prepared(self, args: tuple, kwargs: dict) -> Any:
        assert self._run is not None
        if self._shadow is None and isinstance(self.fn, torch.nn.Module):
            return self._run(*args, **kwargs)  # run_fp64 converts (and splits) itself
        exact = dict(self._exact_shadow)
        args64, kwargs64 = _fp64_noting_exact((args, kwargs), exact)
        modes = contextlib.nullcontext() if self.compile else _fp64_modes(self.split_for(args, kwargs), exact)
        with torch.no_grad(), _modules_in_fp64(read_modules(self.fn), exact), modes:
            return self._run(*args64, **kwargs64)

    def snapshot(self, args: tuple, kwargs: dict) -> Callable[[], Any]:
        """Freeze what the fp64 run reads *now* and return a callable that runs it later.

        Taken in stream order (no host synchronisation): the floating-point arguments are copied
        in their own dtype; a module's state is copied into the fp64 shadow (exact) where there is
        one, else copied in its own dtype and converted when run. So parameters an optimizer
        updates in place after this call do not reach the reference. With a shadow, only the
        latest snapshot is valid (the shadow holds one state): run it before taking another.
        """
        if self._run is None:
            self._run = self._build()
        frozen = pytree.tree_map(_clone_float, (args, kwargs))
        if self._shadow is not None or not isinstance(self.fn, torch.nn.Module):
            self.refresh()
            return lambda: self._run_prepared(*frozen)
        state = {k: _clone_float(v) for k, v in _state(self.fn).items()}
        split = self.split_for(*frozen)
        return lambda: run_fp64(self.fn, *frozen, state=state, split=split)
