"""Which implementation evaluates a transcendental op (exp, log, tanh, ...).

Eager CPU and Inductor CPU evaluate fp32 ``exp`` etc. with different kernels (``exp`` differs in
~10% of elements by 1 ulp). That is an *implementation* difference, not a precision-policy one. To
compare policies bit for bit, the emulator can evaluate each transcendental node with the target
backend's own fp32 kernel: `TranscendentalImpl("inductor")` runs the op alone through
``torch.compile`` (one compiled function per op, argument shapes and constants, cached).
`TranscendentalImpl("eager")` is plain eager (the default when no impl is given).

Which nodes an implementation evaluates: ``handles(target, op_class)``. Both evaluate every
transcendental node; "inductor" also evaluates the IEEE ops of `INDUCTOR_APPROXIMATED`, which eager
computes as one correctly rounded operation but Inductor's Triton backend lowers, by default, to a
PTX approximation: fp32 ``a / b`` becomes ``div.full.f32`` (not correctly rounded: measured on an
H200, 1 element in 65,536 of a random graph differs by 1 ulp, see bench/results/gpu_README.md)
unless ``torch._inductor.config.eager_numerics.division_rounding`` is on (then ``div_rn``).
On CPU Inductor's C++ ``/`` is IEEE, so evaluating these through Inductor there changes no bit.
The kernel is compiled under whatever Inductor config is current when a node is first met.

`TranscendentalImpl("triton-model")` predicts on any device what Inductor's Triton code computes,
for the ops `roundoff.execute.triton_models` models (``tl.sigmoid``); every other op it leaves to
torch, like "eager". `TranscendentalImpl("correctly-rounded")` evaluates every transcendental op
in fp64 on its operands and casts the result back to the operands' dtype (one rounding for fp32,
the dtype the emulator computes transcendentals in; an fp64 op is evaluated as is): the
hypothesis that a backend's kernel is correctly rounded. Two options serve attribution:
``device`` evaluates each op on that device (operands moved there, the result moved back: a CPU
emulation can take one op's values from the GPU's Inductor kernel); ``targets`` restricts the ops
the implementation claims (the rest run as plain torch).
"""

from __future__ import annotations

import itertools
import types
from collections.abc import Callable
from typing import Any

import torch

from roundoff.execute.triton_models import TRITON_MODELS
from roundoff.ops.classes import OpClass

_aten = torch.ops.aten
#: Correctly rounded in eager, approximated by Inductor's Triton lowering (see the module docstring).
INDUCTOR_APPROXIMATED = frozenset({_aten.div.Tensor, _aten.div.Scalar, _aten.reciprocal.default})
IMPLEMENTATIONS = ("eager", "inductor", "triton-model", "correctly-rounded")
_TENSOR = "<tensor>"  # placeholder for a tensor argument in the cache key
_COUNTER = itertools.count()


class TranscendentalImpl:
    """Callable ``(target, args, kwargs) -> value`` evaluating one transcendental op."""

    def __init__(
        self,
        name: str = "eager",
        *,
        device: str | torch.device | None = None,
        targets: frozenset | None = None,
    ) -> None:
        if name not in IMPLEMENTATIONS:
            raise ValueError(
                f"unknown transcendental implementation {name!r}; accepted: {IMPLEMENTATIONS}"
            )
        self.name = name
        self.device = None if device is None else torch.device(device)
        self.targets = targets
        self._cache: dict[tuple, Callable[..., Any]] = {}

    def handles(self, target: Any, op_class: OpClass) -> bool:
        """Whether this implementation evaluates a node of `target` / `op_class` (else: plain torch)."""
        if self.targets is not None and target not in self.targets:
            return False
        if self.name == "triton-model":
            return target in TRITON_MODELS
        if op_class is OpClass.POINTWISE_TRANSCENDENTAL:
            return True
        return self.name == "inductor" and target in INDUCTOR_APPROXIMATED

    def __call__(self, target: Any, args: tuple, kwargs: dict) -> Any:
        if self.device is None:
            return self._evaluate(target, args, kwargs)
        home = next((a.device for a in args if isinstance(a, torch.Tensor)), self.device)
        moved = tuple(a.to(self.device) if isinstance(a, torch.Tensor) else a for a in args)
        out = self._evaluate(target, moved, kwargs)
        return out.to(home) if isinstance(out, torch.Tensor) else out

    def _evaluate(self, target: Any, args: tuple, kwargs: dict) -> Any:
        if self.name == "eager":
            return target(*args, **kwargs)
        if self.name == "triton-model":
            return TRITON_MODELS[target](*args, **kwargs)
        if self.name == "correctly-rounded":
            return _in_fp64(target, args, kwargs)
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        consts = tuple(_TENSOR if isinstance(a, torch.Tensor) else a for a in args)
        key = (
            target,
            consts,
            tuple(sorted(kwargs.items(), key=lambda kv: kv[0])),
            tuple((t.shape, t.dtype, t.stride(), t.device) for t in tensors),
        )
        fn = self._cache.get(key)
        if fn is None:
            fn = self._cache[key] = _compile_one(target, consts, dict(kwargs))
        return fn(*tensors)


def _in_fp64(target: Any, args: tuple, kwargs: dict) -> Any:
    """`target` on the floating operands widened to fp64, the result cast back to their dtype."""
    dtype = next((a.dtype for a in args if isinstance(a, torch.Tensor) and a.is_floating_point()), None)
    wide = tuple(a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args)
    out = target(*wide, **kwargs)
    return out.to(dtype) if isinstance(out, torch.Tensor) and dtype is not None and out.is_floating_point() else out


def _compile_one(target: Any, consts: tuple, kwargs: dict) -> Callable[..., Any]:
    def one_op(*tensors: torch.Tensor) -> Any:
        it = iter(tensors)
        args = [next(it) if c is _TENSOR else c for c in consts]
        return target(*args, **kwargs)

    # Dynamo caches compiled code per code object (and stops recompiling after
    # `recompile_limit`): give every (op, constants, shapes) its own code object.
    code = one_op.__code__.replace(
        co_name=f"roundoff_{getattr(target, '__name__', 'op')}_{next(_COUNTER)}"
    )
    fresh = types.FunctionType(code, one_op.__globals__, code.co_name, None, one_op.__closure__)
    return torch.compile(fresh, dynamic=False, fullgraph=True)
