"""Under an autocast policy, blame offers reading the operands as stored (``compute=opmath``) on the
matmul-like ops with several outputs too: an attention, forward and backward, and a convolution's backward
(trial 88: an fp16 ViT under thunder-autocast, whose check named the bf16 downcast, got "not a placement
decision" from blame: those ops, with no storage dtype of their own, offered no change)."""

from __future__ import annotations

import torch

from roundoff.analyze import check
from roundoff.blame import BlameStatus, blame
from roundoff.blame.changes import ChangeKind, candidate_changes
from roundoff.capture import capture
from roundoff.plan import plan

F16 = torch.float16


def _patches_attended(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    p = torch.nn.functional.conv2d(x, w, stride=4).flatten(2).transpose(1, 2)  # (1, 16, 16): patch embeddings
    q = p.unflatten(-1, (2, 8)).transpose(1, 2)  # two heads
    return torch.nn.functional.scaled_dot_product_attention(q, q, q).float().square().sum()


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 3, 16, 16, generator=g).to(F16)
    w = (torch.randn(16, 3, 4, 4, generator=g) * 0.3).to(F16).requires_grad_()
    return x, w


def test_every_downcast_matmul_offers_reading_its_operands_as_stored() -> None:
    program = capture(_patches_attended, *_inputs(), backward=True)
    planned = plan(program, "thunder-autocast")
    downcast = {d.node_id for d in planned.decisions.values() if d.input_format == "bf16"}
    offered = {c.node_id for c in candidate_changes(planned, "eager") if c.kind is ChangeKind.NO_DOWNCAST}
    assert downcast == offered, downcast - offered
    assert any(planned.decisions[n].op == "aten.convolution_backward.default" for n in offered)  # (the case)


def test_blame_fixes_what_check_names_and_check_agrees() -> None:
    program = capture(_patches_attended, *_inputs(), backward=True)
    assert check(program, _inputs(), "thunder-autocast").diverges
    found = blame(program, "thunder-autocast", _inputs(), repro=False)
    assert found.status is BlameStatus.FIXED, found.notes
    assert not check(program, _inputs(), found.fixed_policy).diverges


def test_blame_names_one_result_of_a_multi_output_op_as_check_does():
    """Trial 100: check named `var_mean[0]` (n212.2) what blame's notes called `getitem` (n212.2). Oracle: the
    name check's report gives the same node."""
    from roundoff.analyze.naming import node_at
    from roundoff.blame.explain import describe_node

    def layer_norm(x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.layer_norm(x, (16,)).float().sum()

    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(0)).to(F16)
    planned = plan(capture(layer_norm, x), "eager").program
    item = next(n for n in planned.graph.nodes if n.op == "call_function" and "getitem" in str(n.target))
    nid = str(item.meta["roundoff_id"])
    said = describe_node(planned, nid)
    assert said.startswith("native_layer_norm[0] (") and "getitem" not in said, said
    assert node_at(item).startswith("`native_layer_norm[0]`")  # (what check's findings say)
