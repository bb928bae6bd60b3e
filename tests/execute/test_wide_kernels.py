"""Ops whose kernels reject fp64 (or fp32) get explicit decompositions (`roundoff.execute.wide_kernels`).

Oracles: the op itself in fp32 on exactly representable inputs (small integers: every product and
sum exact, so any correct evaluation is bit-equal), an fp64 computation written out here, torch's CPU
flash-attention kernel in fp64 (it has an fp64 kernel; the CUDA ones do not), and real eager.
"""

from __future__ import annotations

import pytest
import torch

from roundoff.analyze import check
from roundoff.capture import capture
from roundoff.execute import run_eager, run_oracle, run_plan
from roundoff.execute.wide_kernels import NoWideKernelError, call, cudnn_forward, efficient_backward, \
    efficient_forward, flash_backward, flash_forward, grouped_mm, scaled_mm
from roundoff.plan import plan
from tests.execute.hf_models import POLICIES, mixtral

aten = torch.ops.aten
OFFS = torch.tensor([2, 2, 5, 8], dtype=torch.int32)  # an empty group too


def _ints(*shape: int) -> torch.Tensor:
    return torch.randint(-4, 5, shape).float()


def _col_major(b: torch.Tensor) -> torch.Tensor:
    return b.transpose(-1, -2).contiguous().transpose(-1, -2)  # the layout _grouped_mm's kernel takes


@pytest.mark.parametrize("layout", ["2d3d", "3d2d", "2d2d", "3d3d"])
def test_grouped_mm_equals_the_kernel_on_exact_inputs(layout: str) -> None:
    torch.manual_seed(0)
    # sizes multiples of 4: the kernel wants 16-byte strides
    a, b = {"2d3d": (_ints(8, 8), _ints(4, 8, 4)), "3d2d": (_ints(4, 4, 8), _ints(8, 8)),
            "2d2d": (_ints(4, 8), _ints(8, 4)), "3d3d": (_ints(4, 4, 8), _ints(4, 8, 4))}[layout]
    offs = None if layout == "3d3d" else OFFS
    kernel = aten._grouped_mm.default(a, _col_major(b), offs)
    ours = grouped_mm(a.double(), b.double(), offs)
    assert ours.dtype == torch.float64 and ours.shape == kernel.shape
    assert torch.equal(ours, kernel.double())


def test_grouped_mm_fp64_equals_a_row_by_row_loop() -> None:
    torch.manual_seed(1)
    a, b = torch.randn(8, 6, dtype=torch.float64), torch.randn(4, 6, 5, dtype=torch.float64)
    group = torch.searchsorted(OFFS, torch.arange(8, dtype=torch.int32), right=True)
    rows = torch.stack([(a[i : i + 1] @ b[group[i]])[0] for i in range(8)])
    assert torch.allclose(call(aten._grouped_mm.default, (a, b, OFFS), {}), rows, rtol=1e-15, atol=1e-15)


def test_scaled_mm_equals_the_fp8_kernel_on_exact_inputs() -> None:
    torch.manual_seed(2)
    a = _ints(4, 8).to(torch.float8_e4m3fn)
    b = _col_major(_ints(8, 16).to(torch.float8_e4m3fn))
    sa, sb = torch.tensor(0.5), torch.tensor(2.0)
    kernel = aten._scaled_mm.default(a, b, sa, sb, out_dtype=torch.float32)
    assert torch.equal(scaled_mm(a.double(), b.double(), sa.double(), sb.double()), kernel.double())
    assert torch.equal(call(aten._scaled_mm.default, (a.double(), b.double(), sa.double(), sb.double()), {}),
                       kernel.double())


def _qkv(heads_kv: int = 2) -> tuple:
    torch.manual_seed(3)
    q = torch.randn(2, 2, 5, 8, dtype=torch.float64)
    k, v = (torch.randn(2, heads_kv, 7, 8, dtype=torch.float64) for _ in range(2))
    return q, k, v


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_matches_the_cpu_kernel_in_fp64(causal: bool) -> None:
    q, k, v = _qkv()
    out, lse = aten._scaled_dot_product_flash_attention_for_cpu.default(q, k, v, 0.0, causal)
    ours = flash_forward(q, k, v, 0.0, causal)
    assert torch.allclose(ours[0], out, rtol=1e-12, atol=1e-12) and torch.allclose(ours[1], lse, rtol=1e-12)
    grad = torch.randn_like(out)
    ref = aten._scaled_dot_product_flash_attention_for_cpu_backward.default(grad, q, k, v, out, lse, 0.0, causal)
    got = flash_backward(grad, q, k, v, out, lse, None, None, 5, 7, 0.0, causal, None, None)
    assert all(torch.allclose(g, r, rtol=1e-10, atol=1e-12) for g, r in zip(got, ref))


def test_efficient_and_cudnn_attention_with_bias_match_the_cpu_kernel() -> None:
    q, k, v = _qkv()
    bias = torch.randn(2, 2, 5, 7, dtype=torch.float64)
    out, lse = aten._scaled_dot_product_flash_attention_for_cpu.default(q, k, v, attn_mask=bias)
    ours, ours_lse, _, _ = efficient_forward(q, k, v, bias, True)
    assert ours_lse.shape[-1] == 32  # the CUDA kernel's padded logsumexp (5 rows -> 32)
    assert torch.allclose(ours, out, rtol=1e-12, atol=1e-12) and torch.allclose(ours_lse[..., :5], lse, rtol=1e-12)
    assert torch.allclose(cudnn_forward(q, k, v, bias, True)[1], lse.unsqueeze(-1), rtol=1e-12)
    grad = torch.randn_like(out)
    ref = aten._scaled_dot_product_flash_attention_for_cpu_backward.default(
        grad, q, k, v, out, lse, 0.0, False, attn_mask=bias)
    gq, gk, gv, gb = efficient_backward(grad, q, k, v, bias, out, lse, None, None, 0.0, [True, True, True, True])
    assert all(torch.allclose(g, r, rtol=1e-10, atol=1e-12) for g, r in zip((gq, gk, gv), ref))
    # the bias gradient: d loss / d scores, computed by autograd through torch's own math attention
    b = bias.clone().requires_grad_()
    torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=b).backward(grad)
    assert torch.allclose(gb, b.grad, rtol=1e-10, atol=1e-12)


def test_attention_backward_works_inside_inference_mode() -> None:
    """check runs its emulation under ``torch.inference_mode``; the backward decompositions differentiate
    through autograd, which needs their tensors copied out of it (on the H200 a Llama's check failed
    with 'does not require grad'). Oracle: torch's CPU flash-attention backward kernel in fp64."""
    q, k, v = _qkv()
    bias = torch.randn(2, 2, 5, 7, dtype=torch.float64)
    out, lse = aten._scaled_dot_product_flash_attention_for_cpu.default(q, k, v, attn_mask=bias)
    grad = torch.randn_like(out)
    ref = aten._scaled_dot_product_flash_attention_for_cpu_backward.default(
        grad, q, k, v, out, lse, 0.0, False, attn_mask=bias)
    with torch.inference_mode():
        args = [t.clone() for t in (grad, q, k, v, bias, out, lse)]  # inference tensors, as check's are
        got = efficient_backward(*args[:6], args[6], None, None, 0.0, [True, True, True, True])
    assert all(torch.allclose(g, r, rtol=1e-10, atol=1e-12) for g, r in zip(got[:3], ref))


def test_grouped_query_attention_repeats_kv_heads() -> None:
    q, k, v = _qkv(heads_kv=1)
    out, _ = aten._scaled_dot_product_flash_attention_for_cpu.default(q, k.expand(2, 2, 7, 8), v.expand(2, 2, 7, 8))
    assert torch.allclose(flash_forward(q, k, v)[0], out, rtol=1e-12, atol=1e-12)


def test_attention_dropout_is_refused_with_a_workaround() -> None:
    q, k, v = _qkv()
    with pytest.raises(NoWideKernelError, match=r"_scaled_dot_product_flash_attention.*dropout.*attention_dropout=0"):
        call(aten._scaled_dot_product_flash_attention.default, (q, k, v, 0.1), {})


def test_an_op_without_fp64_kernel_nor_decomposition_is_refused_by_name() -> None:
    w = torch.randint(-5, 5, (4, 8), dtype=torch.int8)
    with pytest.raises(NoWideKernelError, match=r"aten\._weight_int8pack_mm\.default cannot be evaluated in float64"):
        call(aten._weight_int8pack_mm.default, (torch.randn(2, 8, dtype=torch.float64), w,
                                                 torch.ones(4, dtype=torch.float64)), {})


@pytest.fixture(scope="module")
def mixtral_program() -> tuple:
    module, inputs = mixtral()
    program = capture(module, *inputs, backward=True)
    assert any(n.target is aten._grouped_mm.default for n in program.graph.nodes), "no _grouped_mm captured"
    return module, inputs, program


def test_mixtral_oracle_and_eager(mixtral_program: tuple) -> None:
    module, inputs, program = mixtral_program
    emu = run_plan(plan(program, "eager"), inputs)
    assert all(torch.equal(a, b) for a, b in zip(emu, run_eager(program, inputs)))
    loss = module(*inputs).detach()
    assert torch.equal(emu[0], loss)
    oracle = run_oracle(program, inputs)
    assert all(o.dtype == torch.float64 for o in oracle)
    assert abs(oracle[0].item() - loss.item()) < 2e-2 * abs(loss.item())  # bf16 loss vs fp64


@pytest.mark.parametrize("policy", POLICIES)
def test_mixtral_grouped_mm_every_policy(mixtral_program: tuple, policy: str) -> None:
    _, inputs, program = mixtral_program
    res = check(program, inputs, policy, against="eager", local=False)
    assert res.outputs[0].name == "out" and abs(res.outputs[0].rmse_result) < 0.1


def test_attention_kernels_decompose_in_fp32_too() -> None:
    """CUDA-only kernels, called with CPU fp32 tensors: the decomposition runs (the kernel would not)."""
    q, k, v = (t.float() for t in _qkv())
    out = call(aten._scaled_dot_product_cudnn_attention.default, (q, k, v, None, True, 0.0, True), {})
    ref, _ = aten._scaled_dot_product_flash_attention_for_cpu.default(q.double(), k.double(), v.double(), 0.0, True)
    assert out[0].dtype == torch.float32 and torch.allclose(out[0].double(), ref, rtol=1e-5, atol=1e-6)
