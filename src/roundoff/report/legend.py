"""What "reference" means in a check report, in each mode: the whole rule (the JSON report's legend)
and its two-sentence form for a terminal."""

from __future__ import annotations

from roundoff.analyze.verdict import EXCESS_LIMIT


def legend(against: str, rule: str = "same", by_values: bool = False) -> str:
    """What "reference" means in a report against `against` under `rule` (`by_values`: every output
    judged by its values, `check --by-values`)."""
    if against in ("oracle", "fp64"):
        head = (
            f"reference = the fp64 oracle correctly rounded to each value's format (the best any run in "
            f"that format can return; for an output, to the narrowest format on its path, the scale its error "
            f"is held to: an fp32 loss may do better; or, for an output a sum, matmul or normalisation makes "
            f"or one that is 0 by the model's structure, the error its last op takes from its operands' "
            f"rounding there, where larger). A node diverges when its own error, recomputed from fp64 inputs rounded "
            f"as it reads them, is more than {EXCESS_LIMIT:g} times the rounding of its format (the narrowest of "
            "its own, its operands' and the one it is kept in downstream), or when it is not finite where fp64 is"
        )
        tail = (
            "; an output fails when it is not finite where fp64 is, or when its error is more than "
            f"{EXCESS_LIMIT:g} times its reference"
            + (" (--by-values: with every node examined too, whatever its path)" if by_values else
               " where (screen, the default) always, or (every node examined) a node on its path diverges, is not "
               "finite or amplifies an error beyond its format")
            if rule == "same" else f"; outputs by the `{rule}` rule"
        )
        return head + tail + " (roundoff.analyze.verdict)."
    rules = {
        "same": "PyTorch's `same` rule (RMSE against fp64 within a small multiple of the reference's)",
        "allclose": "torch.testing.assert_close's default tolerances for the dtype",
        "bitwise": "bit-for-bit equality",
    }
    return (
        f"reference = the `{against}` policy emulated on the same graph as the policy checked (its "
        "decompositions included, so that nodes pair up: where those split an op eager runs as one kernel, "
        "the reference rounds its pieces, and its error can differ from real eager's: by some percent, and by "
        "several times where eager computes a 16-bit loss or normalization as one kernel (a bf16 T5's "
        "cross-entropy: 5x); "
        f"`check -p {against} --against oracle` measures {against} on its own graph). Nodes and outputs are compared "
        f"with it by {rules.get(rule, rule)}; a value not finite where fp64 is always fails (roundoff.analyze.verdict)."
    )


def short_legend(against: str, rule: str = "same", by_values: bool = False) -> str:
    """`legend` in two sentences, for a terminal; the JSON report carries the whole of it."""
    if against not in ("oracle", "fp64"):
        return (legend(against, rule) + f" This judges each policy against `{against}`, not `{against}` against "
                "the truth: where the reference itself is wrong, both pass alike; --against oracle judges both by fp64.")
    outputs = (
        f"an output fails when it is NaN/inf where fp64 is finite, or over {EXCESS_LIMIT:g}x its reference "
        + ("(--by-values: whatever its path)" if by_values else
           "(with every node examined: only where a node on its path is flagged)")
        if rule == "same" else f"outputs are judged by the `{rule}` rule"
    )
    return (
        "reference = the fp64 oracle correctly rounded to the value's format. A node diverges when its own "
        f"error is over {EXCESS_LIMIT:g}x its format's rounding or it is NaN/inf where fp64 is finite; {outputs}. "
        "The whole rule: the --json report's legend."
    )
