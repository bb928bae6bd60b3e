"""`emulation_cause` on a buffer whose Inductor origins omit the computation (no compile needed).

The case is the H200 Llama run's RoPE-backward buffers (bench/results/observe-cuda-session3.md,
buf75/buf101): Inductor unrolls a sum over 2 heads into the consuming pointwise kernel and stores
only a transposed copy, whose origins are the layout ops alone. The plan now models the unrolling
(`roundoff.plan.loops.unrolled_terms`); with it switched off, it rounds the sum, as it did when that
run was made. Oracle for what the plan does: the plan's own decisions.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from roundoff.capture import capture
from roundoff.capture.program import NODE_ID
from roundoff.observed.buffers import Observed
from roundoff.observed.causes import emulation_cause, local_region
from roundoff.plan import plan
from roundoff.policy import get_policy
from roundoff.policy.model import FmaContraction, FusionModel


def head_sum_then_transposed_copy(g, c):
    s = g.sum(0)  # over 2 heads: Inductor computes it inside the consumer, unrounded
    y = s * c + s
    return y.t().contiguous()


def _setup():
    g = torch.randn(2, 8, 4, generator=torch.Generator().manual_seed(0)).bfloat16()
    c = torch.randn(8, 4, generator=torch.Generator().manual_seed(1)).bfloat16()
    program = capture(head_sum_then_transposed_copy, g, c)
    ids = {str(n.target): n.meta[NODE_ID] for n in program.nodes() if n.op == "call_function"}
    return program, ids


def test_a_sum_missing_from_the_origins_is_named_from_the_local_region(monkeypatch):
    program, ids = _setup()
    summed, copy = ids["aten.sum.dim_IntList"], ids["aten.clone.default"]
    layout = tuple(i for t, i in ids.items() if t in ("aten.t.default", "aten.clone.default"))
    obs = Observed("triton_poi_fused_add_mul_sum_0", "buf1", "pointwise", layout,
                   torch.empty(4, 8, dtype=torch.bfloat16), 0, 0)
    observed = {copy: obs}
    region = local_region(program, copy, obs, observed)
    assert set(ids.values()) <= set(region)  # every op back to the graph inputs

    modelled = plan(program, "inductor-gpu")
    assert not any(summed in d.rounded_inputs for d in modelled.decisions.values())  # unrolled: unrounded
    assert emulation_cause(program, copy, obs, modelled, observed) == "summation order"

    monkeypatch.setattr("roundoff.plan.loops.UNROLL_BELOW", 0)  # the plan of that run: the sum stored,
    # and read by a kernel of its own (no Triton reduction kernel computing its readers)
    the_plan = plan(program, dataclasses.replace(get_policy("inductor-gpu"), fusion=FusionModel.POINTWISE))
    assert any(summed in d.rounded_inputs for d in the_plan.decisions.values())  # the plan rounds the sum
    # from the origins alone nothing is known; from the region, the sum the plan rounds
    assert emulation_cause(program, copy, obs, the_plan) == "unmodelled decision"
    assert emulation_cause(program, copy, obs, the_plan, observed) == (
        f"unmodelled decision: the kernel keeps sum ({summed}) unrounded where the plan rounds it; "
        "also summation order"
    )


def test_the_region_stops_at_an_observed_operand():
    program, ids = _setup()
    summed, copy = ids["aten.sum.dim_IntList"], ids["aten.clone.default"]
    sum_obs = Observed("triton_red_fused_sum_0", "buf0", "reduction", (summed,),
                       torch.empty(8, 4, dtype=torch.bfloat16), 0, 0)
    obs = Observed("triton_poi_fused_add_mul_1", "buf1", "pointwise", (copy,),
                   torch.empty(4, 8, dtype=torch.bfloat16), 1, 1)
    region = local_region(program, copy, obs, {summed: sum_obs, copy: obs})
    assert summed not in region and ids["aten.mul.Tensor"] in region
    # the sum is a stored buffer the kernel reads (rounded, like the plan): no unrounded value to name
    cause = emulation_cause(program, copy, obs, plan(program, "inductor-gpu"), {summed: sum_obs, copy: obs})
    assert not cause.startswith("unmodelled decision: the kernel keeps")


def two_residual_norms(a, b, c):
    r1 = a + b  # launch 0: stored rounded for the next block, squared unrounded for its norm
    s1 = torch.rsqrt(r1.float().pow(2).mean(-1, keepdim=True) + 1e-6)
    r2 = r1 + c  # launch 1: reads r1 as stored (rounded); the same again
    s2 = torch.rsqrt(r2.float().pow(2).mean(-1, keepdim=True) + 1e-6)
    return s1, s2, r2


def test_a_value_stored_rounded_and_reused_unrounded_is_judged_per_launch():
    """The H200 Llama's partitioned forward (bench/results/observe-cuda-partitioned.md, buf48): each
    RMSNorm kernel stores the residual sum rounded to bf16 and squares it unrounded, and the next
    kernel reads the stored sum. Judged with both sums unrounded, as before, the second rsqrt was
    "diverging" 5,000x its fp32 rounding; read as the kernels read them it is within the limit.
    The kernels' values are computed here as Triton's code computes them (fp32 adds of the bf16
    operands, a bf16 store, the mean of squares of the fp32 sum)."""
    from roundoff.analyze.verdict import EXCESS_LIMIT
    from roundoff.observed.api import _compare

    g = torch.Generator().manual_seed(3)
    a, b, c = (torch.randn(4, 128, generator=g).bfloat16() * s for s in (1.0, 1.0, 1.0))
    program = capture(two_residual_norms, a, b, c)
    adds = [n.meta[NODE_ID] for n in program.nodes() if n.target is torch.ops.aten.add.Tensor
            and n.meta["val"].dtype == torch.bfloat16]
    rsqrts = [n.meta[NODE_ID] for n in program.nodes() if n.target is torch.ops.aten.rsqrt.default]
    r1u = a.float() + b.float()
    r1 = r1u.bfloat16()
    r2u = r1.float() + c.float()
    r2 = r2u.bfloat16()
    s1, s2 = ((x.pow(2).mean(-1, keepdim=True) + 1e-6).rsqrt() for x in (r1u, r2u))
    order = [n.meta[NODE_ID] for n in program.nodes() if n.op == "call_function"]
    norm = [tuple(order[order.index(add) + 1:order.index(rs) + 1]) for add, rs in zip(adds, rsqrts)]  # cast..rsqrt
    observed = {
        adds[0]: Observed("k0", "buf0", "pointwise", (adds[0],), r1, 0, 0),
        rsqrts[0]: Observed("k0", "buf1", "pointwise", norm[0], s1, 1, 0),
        adds[1]: Observed("k1", "buf2", "pointwise", (adds[1],), r2, 2, 1),
        rsqrts[1]: Observed("k1", "buf3", "pointwise", norm[1], s2, 3, 1),
    }
    # independent: fp64 from r2 as stored (the plan's reading) is far beyond fp32's rounding of s2
    from_stored = (r2.double().pow(2).mean(-1, keepdim=True) + 1e-6).rsqrt()
    assert float(((s2.double() - from_stored) / from_stored).abs().max()) > EXCESS_LIMIT * 2.0**-24
    reports = {r.node_id: r for r in _compare(program, observed, [a, b, c], "oracle", "inductor-gpu",
                                              0.0, "eager")[0]}
    assert reports[rsqrts[0]].excess <= EXCESS_LIMIT and reports[rsqrts[1]].excess <= EXCESS_LIMIT, (
        reports[rsqrts[0]].excess, reports[rsqrts[1]].excess)


def embed_then_scale(ids, w, c):
    h = torch.nn.functional.embedding(ids, w)  # a lookup of bf16 values: exact in bf16
    return h, (h * c).sum(-1)


def test_a_lookup_stored_and_read_by_the_same_kernel_is_not_named_kept_unrounded():
    """Trial 32: an embedding the kernel stores (bf16) and reads in the same call was named "kept
    unrounded where the plan rounds it"; its values are the weight's, exact in bf16 (oracle: the
    lookup's values equal the weight's rows bit for bit), so rounding it changes nothing."""
    ids = torch.tensor([[1, 3, 0, 2]])
    w = torch.randn(5, 8, generator=torch.Generator().manual_seed(0)).bfloat16()
    c = torch.randn(8, generator=torch.Generator().manual_seed(1)).bfloat16()
    assert torch.equal(torch.nn.functional.embedding(ids, w).view(torch.int16), w[ids].view(torch.int16))
    program = capture(embed_then_scale, ids, w, c)
    node_ids = {str(n.target): n.meta[NODE_ID] for n in program.nodes() if n.op == "call_function"}
    looked_up, summed = node_ids["aten.embedding.default"], node_ids["aten.sum.dim_IntList"]
    same_launch = {looked_up: Observed("cpp_fused_embedding_mul_sum_0", "buf0", "pointwise", (looked_up,),
                                       torch.empty(1, 4, 8, dtype=torch.bfloat16), 0, 0)}
    obs = Observed("cpp_fused_embedding_mul_sum_0", "buf1", "reduction", (node_ids["aten.mul.Tensor"], summed),
                   torch.empty(1, 4, dtype=torch.bfloat16), 1, 0)
    cause = emulation_cause(program, summed, obs, plan(program, "inductor-cpu"), {**same_launch, summed: obs})
    assert "embedding" not in cause and cause == "summation order"


def test_a_convolution_kernel_differs_by_summation_order_not_a_gemm_epilogue():
    """Trial 38: a bias-free convolution, nothing fused, was said to be "unmodelled decision: Inductor
    computes convolution inside the GEMM". A convolution's own value differs by summation order; an
    add a GEMM computes before its one rounding (``addmm`` for ``mm + add``) is still named."""
    w = torch.randn(4, 3, 3, 3).bfloat16()
    program = capture(lambda x: torch.nn.functional.conv2d(x, w), torch.randn(2, 3, 8, 8).bfloat16())
    conv = next(n.meta[NODE_ID] for n in program.nodes() if n.target is torch.ops.aten.convolution.default)
    obs = Observed("extern_kernels.convolution", "buf0", "extern", (conv,), torch.empty(2, 4, 6, 6), 0, 0)
    assert emulation_cause(program, conv, obs) == "summation order"
    b = torch.randn(4).bfloat16()
    program = capture(lambda x, y: x @ y + b, torch.randn(3, 5).bfloat16(), torch.randn(5, 4).bfloat16())
    add = next(n.meta[NODE_ID] for n in program.nodes() if n.target is torch.ops.aten.add.Tensor)
    obs = Observed("extern_kernels.addmm", "buf0", "matmul", (add,), torch.empty(3, 4), 0, 0)
    assert emulation_cause(program, add, obs).startswith("unmodelled decision: Inductor computes add")
    # the plan of a policy that computes it there too (inductor-cpu: ``matmul_add=addmm``): the GEMM's own order
    assert plan(program, "inductor-cpu").decisions[add].gemm is not None
    assert emulation_cause(program, add, obs, plan(program, "inductor-cpu")) == "summation order"


def stored_residual_then_norm(h, a):
    r = h + a  # an output: stored in fp16; the sum of squares runs its own loop and loads it
    return r, r.float().pow(2).mean(-1, keepdim=True)


def _stored_then_normed(h: torch.Tensor, a: torch.Tensor, kernel: str) -> tuple:
    """(program, the add's id, the mean's id, {id: Observed}) of `stored_residual_then_norm`, both buffers
    written by one call of `kernel`: the sum as stored, the mean of squares."""
    program = capture(stored_residual_then_norm, h, a)
    ids = {str(n.target): n.meta[NODE_ID] for n in program.nodes() if n.op == "call_function"}
    added, mean = ids["aten.add.Tensor"], ids["aten.mean.dim"]
    region = tuple(i for t, i in ids.items() if t != "aten.add.Tensor")
    stored = Observed(kernel, "buf0", "pointwise", (added,), torch.empty(h.shape, dtype=h.dtype), 0, 0)
    obs = Observed(kernel, "buf1", "reduction", region, torch.empty(h.shape[0], 1, dtype=torch.float32), 1, 0)
    return program, added, mean, {added: stored, mean: obs}


def test_a_cpp_reduction_loading_a_value_its_kernel_stored_is_not_named_kept_unrounded():
    """Observe's Llama table (partitioned): each RMSNorm's rsqrt was "unmodelled decision: the kernel keeps
    add unrounded", because the same kernel call stores the residual; the generated C++ loads it back in
    the reduction's own loop nest, rounded, as the plan's loop rule says. Oracle: real torch.compile, where
    the stored sum overflows fp16 and the mean of squares is inf (finite read unrounded)."""
    h, a = torch.full((64, 128), 40000.0).half(), torch.full((64, 128), 40000.0).half()
    torch._dynamo.reset()
    _, real_mean = torch.compile(stored_residual_then_norm, dynamic=False, fullgraph=True)(h, a)
    assert torch.isinf(real_mean).all()  # read rounded: 80000 is inf in fp16
    program, _, mean, observed = _stored_then_normed(h, a, "cpp_fused__to_copy_add_mean_pow_0")
    cause = emulation_cause(program, mean, observed[mean], plan(program, "inductor-cpu"), observed)
    assert not cause.startswith("unmodelled decision: the kernel keeps"), cause


def test_a_triton_reduction_reading_the_sum_its_kernel_stores_unrounded_as_the_plan_does_is_not_named_kept_unrounded():
    """The H100's partitioned Llama (bench/results/gpu-session29/run2): each RMSNorm's rsqrt, whose kernel stores
    the residual sum and squares it unrounded, was "unmodelled decision: the kernel keeps add unrounded where
    the plan rounds it", where the inductor-gpu plan fuses the sum into that reduction and reads it unrounded
    too (its 9-19 of 64 elements: the sum of squares' order). Oracle: the plan's own decisions, which read the
    sum unrounded; the plan that rounds it (fusion off) is still named."""
    h, a = (torch.randn(64, 128, generator=torch.Generator().manual_seed(i)).bfloat16() for i in (0, 1))
    program, added, mean, observed = _stored_then_normed(h, a, "triton_per_fused__to_copy_add_mean_pow_0")
    fused = plan(program, "inductor-gpu")
    assert not any(added in d.rounded_inputs for d in fused.decisions.values())  # read unrounded in its kernel
    cause = emulation_cause(program, mean, observed[mean], fused, observed)
    assert cause.startswith("summation order"), cause
    apart = plan(program, dataclasses.replace(get_policy("inductor-gpu"), fusion=FusionModel.NONE, fma=FmaContraction.NEVER))
    assert emulation_cause(program, mean, observed[mean], apart, observed).startswith(
        f"unmodelled decision: the kernel keeps add ({added}) unrounded")


def test_a_sum_read_unrounded_in_its_kernel_and_rounded_by_the_backwards_copies_is_not_named_kept_unrounded():
    """The H100's partitioned Llama again (bench/results/gpu-session29/run3): the convert that squares the
    residual sum has per-kernel copies in backward kernels, which load the saved sum rounded; that is no
    reading of the forward kernel's. Oracle: the plan's own decisions (the original reads the sum unrounded,
    a copy rounded), on a tiny transformers Llama's training step."""
    pytest.importorskip("transformers")
    from roundoff.plan.shared import plan_pair
    from tests.execute.hf_models import llama

    module, (ids,) = llama()
    program = capture(module, ids, backward=True)
    emulated, _ = plan_pair(program, "inductor-gpu", "eager")
    nodes = {n.meta[NODE_ID]: n for n in emulated.program.graph.nodes if NODE_ID in n.meta}
    mixed = [(cid, p.meta[NODE_ID]) for cid, n in nodes.items() if "@" in cid for p in n.all_input_nodes
             if p.meta[NODE_ID] in emulated.decisions[cid].rounded_inputs
             and p.meta[NODE_ID] not in emulated.decisions[cid.split("@")[0]].rounded_inputs
             and nodes[cid.split("@")[0]].target is torch.ops.prims.convert_element_type.default]
    assert mixed  # a copy reads the sum rounded where its original reads it unrounded
    copy, added = mixed[0]
    reader = copy.split("@")[0]
    stored = Observed("triton_per_fused_add_mean_pow_rsqrt_0", "buf0", "pointwise", (added,),
                      torch.empty(nodes[added].meta["val"].shape, dtype=torch.bfloat16), 0, 0)
    obs = Observed("triton_per_fused_add_mean_pow_rsqrt_0", "buf1", "pointwise", (reader.split(".")[0],),
                   torch.empty(1), 1, 0)
    cause = emulation_cause(program, reader.split(".")[0], obs, emulated, {added: stored})
    assert not cause.startswith("unmodelled decision: the kernel keeps"), cause


def rotary_then_repeated(q: torch.Tensor, c: torch.Tensor) -> tuple:
    k = q * c + q.flip(-1)
    return k, k[:, None].expand(-1, 2, -1).clone()  # repeat_kv's copy of the rotary k


def test_a_copy_of_a_value_its_kernel_stores_is_not_named_kept_unrounded():
    """The H100 Llama at hidden 1024 (bench/results/gpu-session30/run2): the ``repeat_kv`` clone of the rotary
    ``k`` was "unmodelled decision: the kernel keeps add unrounded", the same kernel call storing the add.
    A copy into the same format is the operand rounded either way. Oracle: torch, the copy of the fp32 sum
    rounded to bf16 and the copy of the bf16 sum have the same bits (a computing reader is still named:
    `test_a_triton_reduction_reading_the_sum_its_kernel_stores_unrounded_as_the_plan_does_is_not_named_kept_unrounded`)."""
    q, c = (torch.randn(64, 128, generator=torch.Generator().manual_seed(i)).bfloat16() for i in (0, 1))
    unrounded = (q.float() * c.float() + q.flip(-1).float())
    assert torch.equal(unrounded.bfloat16().view(torch.int16), unrounded.bfloat16().clone().view(torch.int16))
    program = capture(rotary_then_repeated, q, c)
    ids = {str(n.target): n.meta[NODE_ID] for n in program.nodes() if n.op == "call_function"}
    added, copied = ids["aten.add.Tensor"], ids["aten.clone.default"]
    kernel = "triton_poi_fused_add_clone_expand_flip_mul_0"
    stored = Observed(kernel, "buf0", "pointwise", (added,), torch.empty(64, 128, dtype=torch.bfloat16), 0, 0)
    obs = Observed(kernel, "buf1", "pointwise", (copied,), torch.empty(64, 2, 128, dtype=torch.bfloat16), 1, 0)
    apart = plan(program, dataclasses.replace(get_policy("inductor-gpu"), fusion=FusionModel.NONE, fma=FmaContraction.NEVER))
    assert any(added in d.rounded_inputs for d in apart.decisions.values())  # the plan reads the sum rounded
    cause = emulation_cause(program, copied, obs, apart, {added: stored, copied: obs})
    assert not cause.startswith("unmodelled decision: the kernel keeps"), cause


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_near_ties_are_told_from_rounding_decisions(dtype: torch.dtype) -> None:
    """`near_ties`: fp32 values a few fp32 ulps either side of a 16-bit rounding midpoint round (torch's own
    RNE cast, the oracle here) to the two neighbours; fp64 at the midpoint is 0 ulp from it. A difference of
    two ulps, or fp64 half an ulp from the midpoint, is no near tie."""
    from roundoff.observed.causes import NEAR_TIE, near_ties

    g = torch.Generator().manual_seed(0)
    low = (torch.rand(256, generator=g, dtype=torch.float64) + 0.5).to(dtype) * torch.where(
        torch.rand(256, generator=g) < 0.5, -1.0, 1.0).to(dtype)
    high = (low.view(torch.int16) + 1).view(dtype)  # one ulp further from 0 (sign and magnitude)
    mid = (low.double() + high.double()) / 2
    ulp32 = torch.finfo(torch.float32).eps * mid  # away from 0
    above, below = (mid + 3 * ulp32).float().to(dtype), (mid - 3 * ulp32).float().to(dtype)
    assert torch.equal(above.abs(), high.abs()) and torch.equal(below.abs(), low.abs())  # torch's casts round so
    off = near_ties(above, below, mid)
    assert off is not None and off <= 2.0**-10
    assert near_ties(above, above, mid) is None  # nothing differs
    assert near_ties(above, below, mid + (high.double() - low.double()) / 2) is None  # fp64 half an ulp away
    two = (high.view(torch.int16) + 1).view(dtype)  # two ulps from `low`
    assert near_ties(two, below, mid) is None
    assert near_ties(above.float(), below.float(), mid) is None  # only 16-bit buffers
    assert NEAR_TIE < 0.5


def test_an_accumulating_scatter_is_put_down_to_its_threads_atomic_adds() -> None:
    """Trial 91: a GNN's gather gradient (``index_put(accumulate=True)``) differed from the emulation in 2000
    elements with 2 threads and in none with ``OMP_NUM_THREADS=1``: Inductor's C++ kernel adds atomically from
    each thread, in no fixed order. observe called it "unmodelled decision: the kernel keeps scatter_add
    unrounded" from an unrelated fused read; the cause is the summation order of the atomic adds."""
    def gather_gradient(idx, rows, c):
        return torch.zeros(4, 8, dtype=rows.dtype).index_put_((idx,), rows, accumulate=True) * c

    g = torch.Generator().manual_seed(0)
    idx, rows = torch.randint(0, 4, (64,), generator=g), torch.randn(64, 8, generator=g).bfloat16()
    c = torch.randn(4, 8, generator=g).bfloat16()
    program = capture(gather_gradient, idx, rows, c)
    ids = {str(n.target): n.meta[NODE_ID] for n in program.nodes() if n.op == "call_function"}
    put = next(i for t, i in ids.items() if "index_put" in t)
    obs = Observed("cpp_fused_index_put_mul_0", "buf0", "reduction", (put,), torch.empty(4, 8, dtype=torch.bfloat16), 0, 0)
    cause = emulation_cause(program, put, obs, plan(program, "inductor-cpu"), {put: obs})
    assert cause.startswith("summation order: the kernel's threads add into the buffer atomically"), cause
    mul = ids["aten.mul.Tensor"]  # an op that adds nothing keeps the other causes
    obs_mul = dataclasses.replace(obs, fused=(mul,), kind="pointwise")
    assert "atomically" not in emulation_cause(program, mul, obs_mul, plan(program, "inductor-cpu"), {mul: obs_mul})


def test_an_observed_buffer_is_handed_to_the_sides_laid_out_as_the_program_lays_it_out():
    """Trial 97: in a Segformer's partitioned step the buffer holding the attention's query was kept with
    Inductor's layout (strides (1024, 1, 64, 2)); the eager and fp64 sides ran the CPU flash attention on it,
    which returns other values for a last dimension that is not unit-strided, and the matmul after it was
    judged 600x "wrong" (exit 1) on a healthy step. Oracle: torch's own flash attention on the two layouts,
    and the captured node's strides."""
    from roundoff.observed.compare import _laid_out

    g = torch.Generator().manual_seed(0)
    q = torch.as_strided(torch.randn(2048, generator=g).bfloat16(), (2, 2, 16, 32), (1024, 1, 64, 2))
    k, v = (torch.randn(2, 16, 2, 32, generator=g).bfloat16().transpose(1, 2) for _ in range(2))
    attention = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
    as_held = attention(q, k, v, 0.0, False, scale=32 ** -0.5)[0]
    as_laid_out = attention(q.transpose(1, 2).contiguous().transpose(1, 2), k, v, 0.0, False, scale=32 ** -0.5)[0]
    assert not torch.equal(as_held, as_laid_out)  # the layout changes the kernel's values

    program = capture(lambda x: x.view(2, 16, 2, 32).transpose(1, 2) * 2, torch.randn(2, 16, 64).bfloat16())
    node = next(n for n in program.graph.nodes if n.target is torch.ops.aten.transpose.int)
    laid = _laid_out(q, node)
    assert laid.stride() == node.meta["val"].stride() == (1024, 32, 64, 1) and torch.equal(laid, q)
    assert torch.equal(attention(laid, k, v, 0.0, False, scale=32 ** -0.5)[0], as_laid_out)
