"""Every decomposition set works in a fresh process (no earlier import may hide a lazy one).

Inductor's max-pool decomposition reads ``torch._inductor.lowering`` as an attribute without
importing it; the CNN below (Conv2d, BatchNorm2d, ReLU, MaxPool2d, AdaptiveAvgPool2d, Linear; bf16,
forward+backward) is captured and run under every preset in a new interpreter, and each emulated
run is compared with the module run in fp64 by torch (outputs and gradients): no emulated run may be
farther from it than real bf16 eager autograd is. (Emulated eager is not bit-equal to real eager
here: CPU bf16 ``addmm``/conv accumulate in another order than the fp32 kernels the emulator runs.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

_SCRIPT = r'''
import json, sys, torch, torch.nn as nn
from roundoff.capture import capture, decompose
from roundoff.execute import run_plan
from roundoff.plan import plan
from roundoff.policy.registry import list_policies

class CNN(nn.Module):
    def __init__(s):
        super().__init__()
        s.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)  # a bias before BatchNorm has gradient 0
        s.bn = nn.BatchNorm2d(8, track_running_stats=False)  # train-mode batch statistics, no buffer writes
        s.pool, s.avg, s.fc = nn.MaxPool2d(2), nn.AdaptiveAvgPool2d(1), nn.Linear(8, 4)
    def forward(s, x):
        return s.fc(s.avg(s.pool(torch.relu(s.bn(s.conv(x))))).flatten(1))

torch.manual_seed(0)
m = CNN().to(torch.bfloat16).train()
x = torch.randn(2, 3, 8, 8, dtype=torch.bfloat16)
program = capture(m, x, backward=True)
for table in (["inductor"], ["core_aten"]):
    decompose(program, table)
ref = CNN().double().train()
ref.load_state_dict({k: v.double() for k, v in m.state_dict().items()})
out = ref(x.double())
grads = torch.autograd.grad(out.sum(), list(ref.parameters()))
fp64 = [out, *grads]
real = m(x)
real = [real, *torch.autograd.grad(real.sum(), list(m.parameters()))]  # real eager bf16 autograd
errors = {"real-eager": max(((g.double() - r).norm() / r.norm()).item() for g, r in zip(real, fp64))}
for p in list_policies():
    got = run_plan(plan(program, p.name), [x])
    errors[p.name] = max(((g.double() - r).norm() / r.norm()).item() for g, r in zip(got, fp64))
print(json.dumps(errors))
'''


def test_cnn_under_every_preset_in_a_fresh_process() -> None:
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    errors = json.loads(proc.stdout.strip().splitlines()[-1])
    real = errors.pop("real-eager")
    assert len(errors) >= 13
    # every preset as close to torch's fp64 run as real bf16 eager is (BatchNorm's backward cancels:
    # eager's own relative error is large), within a small margin
    bad = {k: v for k, v in errors.items() if not v <= 1.05 * real + 1e-3}
    assert not bad, f"emulated runs farther than real eager ({real:.3g}) from torch's fp64 run: {bad}"
