"""CPU checks of two causes named in observe-cuda-session3.md (CPU capture ids; H200 id = CPU id + 10).

Run from the repository root: `python bench/results/observe-cuda-session3-causes.py` (~35 s on CPU).
The emulated inductor-gpu plan of the same Llama graph, evaluated on CPU: (1) as planned against the
plan with one GQA head sum read unrounded (Inductor unrolls a reduction over < 8 elements into the
consuming pointwise kernel); (2) the RMSNorm backward of layer 1 with the residual x and its mean of
squares read rounded or not (Inductor: x rounded from buf38, mean of squares of the unrounded x).
"""
import dataclasses
import sys

sys.path.insert(0, "bench")
import torch
from real_model_fidelity import build
from roundoff.capture import capture
from roundoff.capture.program import NODE_ID
from roundoff.plan import plan
from roundoff.execute.interpreter import Lockstep
from roundoff.execute.run import plan_numerics, complete_inputs
from roundoff.observed.compare import bit_mismatch

torch.manual_seed(0)
module, ids = build(128, 2, 64, "eager", "cpu")
program = capture(module, ids, backward=True, name="llama")
p = plan(program, "inductor-gpu")
def unrounded(sq):
    """The plan with the GQA head sum read by `sq` (its squeeze) unrounded, as Inductor's unrolled sum."""
    d = dict(p.decisions)
    d[sq] = dataclasses.replace(d[sq], rounded_inputs=frozenset(), compute_dtype=torch.float32)
    return dataclasses.replace(p, decisions=d)
want = {"n415", "n567", "n224", "n302.0", "n329", "n19", "n349"}
got = {}
def on_node(node, vals, ls):
    nid = node.meta.get(NODE_ID)
    if nid in want:
        got[nid] = tuple(v.detach().clone() if isinstance(v, torch.Tensor) else v for v in vals)
    return None
inputs = complete_inputs(p.program, program.example_inputs)
with torch.no_grad():
    Lockstep(p.program, [plan_numerics(p), plan_numerics(unrounded("n384")), plan_numerics(unrounded("n536"))],
             on_node=on_node).run_inputs(inputs)
for nid, side, h200 in (("n415", 1, "n425/buf75"), ("n567", 2, "n577/buf101")):
    a, b = (got[nid][i].to(torch.bfloat16) for i in (0, side))
    print(f"{h200}: head sum rounded (plan) vs unrounded (Inductor): {bit_mismatch(a, b)} of {a.numel()} bf16 elements differ")

# buf64 (H200 n359 = CPU n349): RMSNorm backward with x and the mean of squares read rounded or not
x_u = got["n224"][0].float()             # residual add, fp32 as the forward kernel computes it
x_r = x_u.to(torch.bfloat16).float()     # as stored (buf38) and read back by the backward kernel
g = (got["n329"][0].float() * got["n19"][0].float())   # grad * weight, kept in fp32 (n331/n335)
up = got["n302.0"][0].to(torch.bfloat16).float()          # incoming gradient, stored bf16 (buf57)
def rms_bwd(x, mean):
    r = torch.rsqrt(mean + 1e-6)
    s = (g * x).sum(-1, keepdim=True)
    return (up + (g * r + (s * -0.5 * r ** 3 / 128) * (2 * x))).to(torch.bfloat16)
ms = lambda x: (x * x).mean(-1, keepdim=True)
mix = rms_bwd(x_r, ms(x_u))   # Inductor: x from buf38 (rounded), mean from buf39 (unrounded)
print(f"n359/buf64: Inductor's mix vs x and mean both rounded: {bit_mismatch(mix, rms_bwd(x_r, ms(x_r)))} of {mix.numel()}")
print(f"n359/buf64: Inductor's mix vs x and mean both unrounded: {bit_mismatch(mix, rms_bwd(x_u, ms(x_u)))} of {mix.numel()}")
