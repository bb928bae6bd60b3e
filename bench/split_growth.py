"""How much the planner's splitting (`roundoff.plan.remat`) grows each corpus model's program, per Inductor
policy: the nodes after splitting over the nodes before (after the policy's rewrite). `_MAX_SPLIT_GROWTH`
stops splitting beyond a multiple of this; the table shows how far the real models are from it, and
(last) trial 89's unrolled BiGRU, whose split program doubled each round, with its planning time.

    PYTHONPATH=src:. python bench/split_growth.py > bench/results/split-growth-sessionN.txt
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from torch import nn

import roundoff.plan.planner as planner
from roundoff import corpus
from roundoff.capture.trace import capture


class _ConvBiGruCtc(nn.Module):
    """Trial 89's speech model: two strided Conv1d, a 2-layer bidirectional GRU (unrolled by the capture: 25
    steps each way), a linear head and a CTC loss, in bf16."""

    def __init__(self, mels: int = 40, d: int = 64, vocab: int = 32) -> None:
        super().__init__()
        self.sub1, self.sub2 = nn.Conv1d(mels, d, 3, stride=2, padding=1), nn.Conv1d(d, d, 3, stride=2, padding=1)
        self.rnn = nn.GRU(d, d, num_layers=2, bidirectional=True, batch_first=True)
        self.out = nn.Linear(2 * d, vocab)

    def forward(self, feats, targets, input_lengths, target_lengths):
        x = F.relu(self.sub2(F.relu(self.sub1(feats))))
        log_probs = F.log_softmax(self.out(self.rnn(x.transpose(1, 2))[0]), dim=-1)
        return F.ctc_loss(log_probs.float().transpose(0, 1), targets, input_lengths, target_lengths)


def _bigru_program():
    torch.manual_seed(0)
    model = _ConvBiGruCtc().bfloat16()
    g = torch.Generator().manual_seed(1)
    lengths = torch.tensor([10, 14, 6])
    inputs = (torch.randn(3, 40, 100, generator=g).bfloat16(), torch.randint(1, 32, (3, 14), generator=g),
              torch.tensor([25, 25, 20]), lengths)
    return capture(model, *inputs, backward=True)


def main() -> None:
    unsplit: dict[str, int] = {}
    rewrite = planner.rewrite

    def counted(*args, **kwargs):  # the program before any split: the rewrite's
        done = rewrite(*args, **kwargs)
        unsplit["nodes"] = sum(n.op != "output" for n in done.program.nodes())
        return done

    planner.rewrite = counted
    worst = 0.0
    print(f"{'model':45s} {'policy':13s} {'unsplit':>8s} {'split':>8s} {'ratio':>6s}")
    for name in corpus.names():
        try:
            target = corpus.build(name)
            program = capture(target.fn, *target.inputs, backward=True)
        except Exception as e:  # (an entry this machine cannot build)
            print(f"{name:45s} skipped: {type(e).__name__}")
            continue
        for policy in ("inductor-cpu", "inductor-gpu"):
            split = sum(n.op != "output" for n in planner.plan(program, policy).program.nodes())
            ratio = split / unsplit["nodes"]
            worst = max(worst, ratio)
            print(f"{name:45s} {policy:13s} {unsplit['nodes']:8d} {split:8d} {ratio:6.3f}", flush=True)
    program = _bigru_program()
    for policy in ("inductor-cpu", "inductor-gpu"):
        t0 = time.perf_counter()
        planned = planner.plan(program, policy)
        split = sum(n.op != "output" for n in planned.program.nodes())
        capped = any("times its" in n for n in planned.notes)
        print(f"{'conv+BiGRU CTC (trial 89)':45s} {policy:13s} {unsplit['nodes']:8d} {split:8d} "
              f"{split / unsplit['nodes']:6.3f}  plan {time.perf_counter() - t0:.1f} s{', split capped' if capped else ''}")
    print(f"largest growth: {worst:.3f} (planner._MAX_SPLIT_GROWTH = {planner._MAX_SPLIT_GROWTH})")


if __name__ == "__main__":
    main()
