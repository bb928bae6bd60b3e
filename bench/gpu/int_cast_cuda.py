"""Integer -> bf16 cast inside a Triton kernel: emulated inductor-gpu vs real torch.compile, bit for bit."""
import torch
from roundoff.capture import capture
from roundoff.execute import TranscendentalImpl, run_plan
from roundoff.plan import plan


def positions(inv):
    t = torch.arange(8192, 8224, device=inv.device).type_as(inv)
    return torch.outer(t, inv).cos()


inv = (1.0 / (10000 ** (torch.arange(0, 16, 2).float() / 16))).bfloat16().cuda()
real = torch.compile(positions)(inv)
emu = run_plan(plan(capture(positions, inv), "inductor-gpu"), (inv,), transcendentals=TranscendentalImpl("inductor"))[0]
print("bits differ (emulated inductor-gpu vs torch.compile, H200):", int((emu.view(torch.int16) != real.view(torch.int16)).sum()), "of", real.numel())
print("torch.compile == eager:", torch.equal(real, positions(inv)))
