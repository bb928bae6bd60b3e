"""Why each failing output of a `CheckResult` fails, in words (the findings after the causes)."""

from __future__ import annotations

from roundoff.analyze.result import CheckResult, OutputVerdict
from roundoff.analyze.verdict import nan_or_inf

__all__ = ["output_sentences"]


def _output_sentence(o: OutputVerdict, against: str) -> str | None:
    """Why output `o` fails, worded for its case (NaN vs inf, format too narrow, rule)."""
    if o.passes:
        return None
    if o.nonfinite:
        m = o.vs_oracle
        what = nan_or_inf(max(0, m.nan - m.ref_nan), max(0, m.inf - m.ref_inf))
        head = f"output `{o.name}` has {o.nonfinite} {what} element(s) where fp64 is finite"
        ref = o.vs_reference
        both = (f" {against} is not finite there either: the output fails whichever runs it, not by a difference "
                "between the two (an output not finite where fp64 is finite always fails)."
                if against != "oracle" and (o.reference_nonfinite or ref is not None and ref.ref_nan + ref.ref_inf)
                else "")  # (trial 86: "eager diverges from eager" read as a defect of the comparison)
        if o.unrepresentable:
            return (
                f"{head}; at {o.unrepresentable} of them even fp64 correctly rounded to {o.dtype} overflows: "
                f"{o.dtype} cannot hold the result (scale the values or compute it in a wider format).{both}"
            )
        return f"{head}: fp64 rounded to {o.dtype} is finite there, so the program loses it, not the format.{both}"
    if o.rule != "same":
        return f"output `{o.name}` differs from {against} by the `{o.rule}` rule."
    if against == "oracle":
        return (
            f"output `{o.name}` diverges from fp64: RMSE {o.rmse_result:.3g}, its reference {o.rmse_reference:.3g} "
            f"(fp64 correctly rounded to {o.judged_dtype or o.dtype}{_narrowest(o)}, or its last op's operands' "
            "rounding where larger)."
        )
    if o.reference_nonfinite:  # the reference broke, not (only) the policy: said with the reference's failure
        return (f"output `{o.name}` differs from {against}, which is NaN/inf there (below); against fp64 its "
                f"RMSE is {o.rmse_result:.3g}.")
    return (
        f"output `{o.name}` diverges from {against}: RMSE against fp64 is {o.rmse_result:.3g}, "
        f"the reference's is {o.rmse_reference:.3g} (PyTorch's `same` rule allows a small multiple)."
    )


def _narrowest(o: OutputVerdict) -> str:
    return ", the narrowest format on its path" if o.judged_dtype and o.judged_dtype != o.dtype else ""


#: Failing outputs worded one by one; beyond this many, the rest are counted in one sentence.
_OUTPUT_SENTENCES = 3


def _below_range_sentence(result: CheckResult) -> str | None:
    """One sentence for the passing outputs most of whose values their format cannot hold: they pass
    because fp64 correctly rounded to it loses them alike, yet the program keeps little of them (trial 49:
    ConvNeXt's fp16 layer-scale gradients, all 0, shown as "1x ok")."""
    lost = [o for o in result.outputs if o.passes and o.below_range]
    if not lost:
        return None
    names = ", ".join(f"`{o.name}` ({o.below_range} of {o.vs_oracle.numel} values, {o.vs_oracle.norm_rel:.0%} "
                      "off fp64)" for o in lost[:3]) + (f" and {len(lost) - 3} more" if len(lost) > 3 else "")
    dtypes = " / ".join(dict.fromkeys(o.dtype for o in lost))
    return (f"{len(lost)} output(s) keep little of their values: {names} lie below {dtypes}'s range, where even "
            f"fp64 correctly rounded to {dtypes} is 0 (underflow), so they pass the rule and no policy keeps them "
            f"in {dtypes}. Scale them into range (in a backward pass, the loss: torch.amp.GradScaler) or compute "
            "them in bf16/fp32.")


def output_sentences(result: CheckResult) -> list[str]:
    """One sentence per failing output, the first `_OUTPUT_SENTENCES` of them; then one for the rest;
    then one for passing outputs whose values lie below their format's range."""
    failing = [(o, t) for o in result.outputs if (t := _output_sentence(o, result.against)) is not None]
    lines = [t for _, t in failing[:_OUTPUT_SENTENCES]]
    rest = [o for o, _ in failing[_OUTPUT_SENTENCES:]]
    if rest:
        nonfinite = sum(1 for o in rest if o.nonfinite)
        lines.append(
            f"{len(rest)} more output(s) fail ({nonfinite} with NaN/inf where fp64 is finite): "
            f"{', '.join(f'`{o.name}`' for o in rest[:4])}{', ...' if len(rest) > 4 else ''} (the outputs table has them all)."
        )
    return lines + [t for t in (_below_range_sentence(result),) if t]
