"""Trial 100: a bf16 ResNet whose one BatchNorm input carries a 4096 offset (a forward pre-hook, as research code
plants one): under inductor-cpu the BatchNorm backward's ``x - mean``, computed in fp32 from the bf16 sum of the
offset and the signal, is flagged for growing the error it reads; its finding said "is on the path of an output
that fails the `same` rule ... what the rule does not allow there is that format's rounding itself", a reason
for the bitwise rule, not this one. Oracle: the fp64 figures of the node and of what it reads, from the check."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from roundoff.analyze import check
from roundoff.capture import capture
from roundoff.plan import plan


class _Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential() if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class _ResNet(nn.Module):
    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width)
        self.layers = nn.Sequential(_Block(width, width, 1), _Block(width, 2 * width, 2), _Block(2 * width, 4 * width, 2),
                                    _Block(4 * width, 8 * width, 2))
        self.fc = nn.Linear(8 * width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.layers(F.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(out, 1), 1))


def test_a_node_flagged_for_growing_what_it_reads_says_so() -> None:
    torch.manual_seed(0)
    model = _ResNet().to(torch.bfloat16).train()
    model.layers[2].bn2.register_forward_pre_hook(lambda m, args: (args[0] + 4096,))
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(4, 3, 16, 16, generator=g).to(torch.bfloat16), torch.randint(0, 10, (4,), generator=g)

    def step(x: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(model(x), y)

    program = capture(step, x, backward=True)
    r = check(program, (x,), "inductor-cpu", against="oracle", nodes="all")
    said = [e for e in r.explanations if "grows an error it reads" in e]
    assert said and not any("does not allow there" in e for e in r.explanations), r.explanations
    nid = said[0].split("(")[1].split(" ")[0]
    node, by_id = r.node(nid), {n.node_id: n for n in r.nodes}
    assert node.own_excess <= 16 and "in layers.2.bn2" in said[0]
    reads = [by_id[p.meta["roundoff_id"]] for p in plan(program, "inductor-cpu").program.node(nid).all_input_nodes
             if p.meta.get("roundoff_id") in by_id]
    assert reads and all(node.vs_oracle.norm_rel > 16 * p.vs_oracle.norm_rel for p in reads), (node, reads)
    assert f"{node.vs_oracle.norm_rel:.2g} off fp64" in said[0]
