"""The emulation does not depend on strides its own kernels do not produce.

fp16 SDPA over transposed views, then ``view`` of the transposed result: under thunder-autocast the
rounded (contiguous) operands gave the CPU attention kernel's output other strides than traced, and the
traced ``aten.view`` failed. Oracle: attention written out in fp64 in the test.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from roundoff.analyze import check
from roundoff.capture import SpecializationKind, capture
from roundoff.execute import Lockstep, OracleNumerics, plan_numerics, run_eager, run_oracle, run_plan
from roundoff.execute.interpreter import is_random
from roundoff.plan import plan
from tests.execute.hf_models import POLICIES, llama

B, S, H, D = 2, 8, 4, 16


def _attn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
    return o.transpose(1, 2).contiguous().view(B, S, -1)


def _attn_fp64(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-1, -2) / math.sqrt(D)
    scores = scores.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), -math.inf)
    return (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, S, -1)


@pytest.fixture(scope="module")
def program_and_inputs() -> tuple:
    torch.manual_seed(0)
    xs = [torch.randn(B, S, H, D, dtype=torch.float16, requires_grad=True) for _ in range(3)]
    return capture(_attn, *xs, backward=True), [x.detach() for x in xs]


def test_oracle_is_attention_in_fp64(program_and_inputs: tuple) -> None:
    program, xs = program_and_inputs
    out = run_oracle(program, xs)[0]
    assert torch.allclose(out, _attn_fp64(*xs), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("policy", POLICIES)
def test_sdpa_over_transposed_views_every_policy(program_and_inputs: tuple, policy: str) -> None:
    program, xs = program_and_inputs
    out = run_plan(plan(program, policy), xs)[0]
    ref = _attn_fp64(*xs)
    # fp16 storage; thunder-autocast rounds attention operands to bf16 (2^-9 relative each)
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-2


def test_llama_sdpa_under_thunder_autocast() -> None:
    module, inputs = llama("sdpa")
    program = capture(module, *inputs, backward=True)
    outs = run_plan(plan(program, "thunder-autocast"), inputs)
    loss = module(*inputs).detach().double()
    assert abs(outs[0].double() - loss) / loss < 2e-2  # the bf16 loss, as the model computes it


def test_lockstep_oracle_computes_attention_itself_without_dropout(program_and_inputs: tuple) -> None:
    """SDPA kernels carry torch's ``nondeterministic_seeded`` tag (for dropout); with dropout_p == 0 they
    draw nothing, so the oracle must compute them in fp64, not take the first side's value."""
    program, xs = program_and_inputs
    attn = next(n for n in program.graph.nodes if "attention" in str(n.target) and "backward" not in str(n.target))
    assert torch.Tag.nondeterministic_seeded in attn.target.tags and not is_random(attn)
    emulated, oracle = Lockstep(program, [plan_numerics(plan(program, "eager")), OracleNumerics()]).run_inputs(xs)
    assert torch.allclose(oracle[0], _attn_fp64(*xs), rtol=1e-12, atol=1e-12)
    assert not torch.equal(oracle[0], emulated[0].double())


def _attn_dropout(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, dropout_p=0.5, is_causal=True)


def test_attention_with_dropout_is_drawn_once_as_eager_draws() -> None:
    """SDPA with dropout_p > 0 on CPU (transformers models in train mode) runs eager's math path; the
    graph holds eager's dropout mask, so a replay of the graph is real eager under the same seed,
    forward and backward, bit for bit. (The CPU flash kernel itself refuses dropout, in eager too.)"""
    g = torch.Generator().manual_seed(1)
    xs = [torch.randn(2, 3, 5, 8, generator=g, requires_grad=True) for _ in range(3)]
    torch.manual_seed(7)
    program = capture(_attn_dropout, *xs, backward=True)
    torch.manual_seed(7)
    out = _attn_dropout(*xs)
    real = (out, *torch.autograd.grad(out.sum(), xs))
    replay = run_eager(program, [x.detach() for x in xs])
    assert len(replay) == 4 and all(torch.equal(a, b) for a, b in zip(replay, real))
    assert [s.kind for s in program.specializations] == [SpecializationKind.RANDOM]
    torch.manual_seed(8)  # another seed draws another mask: the replay is not dropout-free by chance
    assert not torch.equal(_attn_dropout(*xs), real[0])
    assert not any(is_random(n) for n in program.graph.nodes)  # the draw is a constant


def test_llama_in_train_mode_with_attention_dropout_replays_eager() -> None:
    """transformers' SDPA attention passes dropout_p > 0 in train mode: on CPU the captured graph
    holds eager's masks, and its replay is real eager under the same seed (loss and every gradient)."""
    module, inputs = llama("sdpa", attention_dropout=0.3)
    torch.manual_seed(3)
    program = capture(module, *inputs, backward=True)
    torch.manual_seed(3)
    loss = module(*inputs)
    real = (loss, *torch.autograd.grad(loss, list(module.parameters())))
    replay = run_eager(program, inputs)
    assert len(replay) == len(real) and all(torch.equal(a, b) for a, b in zip(replay, real))
    assert [s.kind for s in program.specializations] == [SpecializationKind.RANDOM]  # one layer, one mask


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_llama_cuda_sdpa_every_side_runs() -> None:
    """On CUDA, SDPA runs fused kernels (cuDNN on an H200) that have no fp64 (flash, efficient) or no
    trustworthy fp32 path: the oracle and the fp32 emulation decompose them. Measured on the H200
    (torch 2.11): emulated eager-cuda loss 4.894959, real eager 4.895262, oracle 4.894818."""
    module, inputs = llama("sdpa")
    module, inputs = module.cuda(), tuple(x.cuda() for x in inputs)
    program = capture(module, *inputs, backward=True)
    real = module(*inputs).item()
    emulated = run_plan(plan(program, "eager-cuda"), inputs)[0].item()
    oracle = run_oracle(program, inputs)[0].item()
    assert abs(emulated - real) < 2e-2 * abs(real) and abs(oracle - real) < 2e-2 * abs(real)
    for against in ("eager", "oracle", "inductor-gpu"):
        assert check(program, inputs, "eager-cuda", against=against, local=False).outputs


def test_dropout_scaling_in_place_keeps_fused_backward_kernels() -> None:
    """Dropout writes its mask's scaling in place (``clone(mask).div_(1 - p)``); capture rewrites that
    one op out of place instead of functionalizing the graph, in which torch 2.9 decomposes
    ``silu_backward`` (eager runs its fused kernel: one bf16 ulp apart). Oracle: eager autograd."""
    g = torch.Generator().manual_seed(0)
    x, w = (torch.randn(16, 16, generator=g).bfloat16().requires_grad_() for _ in range(2))

    def f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return F.dropout(F.silu(x @ w), 0.3).float().sum()

    torch.manual_seed(5)
    program = capture(f, x, w, backward=True)
    torch.manual_seed(5)
    out = f(x, w)
    real = (out, *torch.autograd.grad(out, (x, w)))
    replay = run_eager(program, [x.detach(), w.detach()])
    assert all(torch.equal(a, b) for a, b in zip(replay, real))
    targets = [n.target for n in program.graph.nodes if n.op == "call_function"]
    assert torch.ops.aten.silu_backward.default in targets
    assert not any(t._schema.is_mutable for t in targets if hasattr(t, "_schema"))
