"""eliminate_common_subexpressions(): merges what Inductor's CSE merges, keeps ids and values."""

from __future__ import annotations

import torch
from capture_helpers import assert_bitwise_equal, captured, eager_outputs

from roundoff.capture import capture, eliminate_common_subexpressions, node_id


def test_fma_cancel_products_merge() -> None:
    """The thread's ``x*scale`` written twice becomes one mul (as in Inductor's generated kernel,
    ``tmp4 - tmp4``); the second product's id maps to the first; the value is eager's 1.0."""
    fn, xs, program = captured("fma-cancel", False)
    muls = [node_id(n) for n in program.nodes() if n.target is torch.ops.aten.mul.Tensor]
    merged, removed = eliminate_common_subexpressions(program)
    assert removed == {muls[1]: muls[0]}
    sub = next(n for n in merged.nodes() if n.target is torch.ops.aten.sub.Tensor)
    assert sub.args[0] is sub.args[1] and node_id(sub.args[0]) == muls[0]
    kept = [node_id(n) for n in merged.nodes()]
    assert kept == [i for i in (node_id(n) for n in program.nodes()) if i != muls[1]]
    (out,) = merged.graph_module(*merged.example_inputs)
    assert_bitwise_equal(
        out, eager_outputs(fn, xs, False)[0], "eliminate_common_subexpressions(zoo fma-cancel)"
    )


def test_backward_graph_values_unchanged() -> None:
    """Merging identical nodes of the llama block's forward+backward changes no output bit."""
    fn, xs, program = captured("llama-block", True)
    merged, removed = eliminate_common_subexpressions(program)
    assert removed, "the block's backward recomputes identical transposes; expected merges"
    assert len(merged.graph.nodes) == len(program.graph.nodes) - len(removed)
    for name, got, want in zip(
        program.output_names,
        merged.graph_module(*program.example_inputs),
        eager_outputs(fn, xs, True),
    ):
        assert_bitwise_equal(
            got, want, f"eliminate_common_subexpressions(zoo llama-block backward)  # {name}"
        )


def test_random_ops_and_signed_zero_constants_stay_apart() -> None:
    """Two ``rand_like`` draws are different values; ``x + 0.0`` and ``x + -0.0`` differ at x = -0.0."""

    def f(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.rand_like(x) - torch.rand_like(x), x + 0.0, x + -0.0

    program = capture(f, torch.tensor([-0.0, 1.0]))
    merged, removed = eliminate_common_subexpressions(program)
    assert removed == {}
    _, plus_zero, plus_negzero = merged.graph_module(torch.tensor([-0.0, 1.0]))
    assert_bitwise_equal(plus_zero, torch.tensor([-0.0, 1.0]) + 0.0, "capture(x + 0.0) after CSE")
    assert_bitwise_equal(
        plus_negzero, torch.tensor([-0.0, 1.0]) + -0.0, "capture(x + -0.0) after CSE"
    )
