"""blame on a function that closes over a tensor requiring grad that capture holds as a constant (one
computed from a leaf, `w.half()`): the search must run and find what it finds for the same tensor
detached (trial 83: every evaluation raised from inside the rounding kernel, exit 3).

Oracle: the same search on the same program with its constants detached, and fp64 (blame's own
judge, `--against oracle`).
"""

from __future__ import annotations

import torch

from roundoff.blame import BlameStatus, blame
from roundoff.capture import capture


def _program(requires_grad: bool):
    g = torch.Generator().manual_seed(0)
    w = torch.randn(32, 32, generator=g, requires_grad=requires_grad).half()  # not a leaf: a constant

    def fwd(x: torch.Tensor) -> torch.Tensor:
        e = torch.exp(x @ w)  # logits past 11: fp16's exp overflows, and inf / inf is NaN
        return e / e.sum(-1, keepdim=True)

    x = torch.randn(8, 32, generator=g).half()
    return capture(fwd, x)


def test_blame_of_constants_requiring_grad_finds_the_fix_it_finds_for_them_detached():
    found = blame(_program(requires_grad=True), "eager", against="oracle")
    detached = blame(_program(requires_grad=False), "eager", against="oracle")
    assert found.status is BlameStatus.FIXED and found.status is detached.status
    assert [(c.node_id, c.kind) for c in found.changes] == [(c.node_id, c.kind) for c in detached.changes]
    assert found.changes
