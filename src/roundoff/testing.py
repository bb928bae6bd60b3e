"""`assert_numerics`: roundoff's check as a test assertion, for users' own test suites (pytest).

    from roundoff.testing import assert_numerics

    def test_my_block_survives_inductor():
        assert_numerics(my_block, (x,), policy="inductor-gpu", against="eager", backward=True)

It raises `AssertionError` when an output diverges (the same verdict as ``roundoff check``, exit 1):
the message is the verdict and the first finding. It returns the `CheckResult` otherwise, so a test
can look further. Bad arguments (an unknown policy, a program with nothing to check) raise the
library's own errors, not `AssertionError`: a broken test is not a numerics failure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import torch

from roundoff.analyze import check
from roundoff.analyze.explain import FLAGGED_AS_WELL
from roundoff.analyze.result import CheckResult
from roundoff.analyze.verdict import EXCESS_LIMIT, Rule
from roundoff.policy.model import Policy

__all__ = ["assert_numerics"]

DEFAULT_POLICY = "inductor-gpu"  # as `roundoff check`
def assert_numerics(
    fn_or_module: Callable[..., Any],
    inputs: Sequence[torch.Tensor] | torch.Tensor,
    policy: Policy | str = DEFAULT_POLICY,
    against: Policy | str = "eager",
    *,
    backward: bool = False,
    rule: str = "same",
    tol: float = 1e-4,
    by_values: bool = False,
) -> CheckResult:
    """Check `fn_or_module` on `inputs` under `policy` against `against` (``"eager"``,
    ``"oracle"`` or a policy); AssertionError with the verdict and first finding if it diverges.

    `rule` against a reference run: ``"same"`` (PyTorch's rule), ``"allclose"`` or ``"bitwise"``
    (see ``roundoff.analyze.verdict``). `by_values` (against the oracle): fail every output over the
    limit by its values, also one with no flagged node on its path (`roundoff.analyze.check`).
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this body (trial 83)
    args = (inputs,) if isinstance(inputs, torch.Tensor) else tuple(inputs)
    result = check(fn_or_module, args, policy, against, backward=backward, tol=tol, rule=rule, by_values=by_values)
    if result.diverges:
        raise AssertionError(failure_message(result))
    return result


def _rule_words(result: CheckResult) -> str:
    """The output rule `result` was judged by, in words (`roundoff.analyze.verdict`'s output verdict)."""
    rules = {o.rule for o in result.outputs}
    if rules - {Rule.SAME.value}:
        return f"the `{'`/`'.join(sorted(rules))}` rule against fp64 correctly rounded to each output's dtype" \
            if result.against == "oracle" else f"the `{'`/`'.join(sorted(rules))}` rule"
    if result.against == "oracle":
        return (
            f"the oracle rule (NaN/inf where fp64 is finite, or an error more than {EXCESS_LIMIT:g} times "
            "fp64 correctly rounded to the narrowest format on the output's path)"
        )
    return "PyTorch's `same` rule"


def failure_message(result: CheckResult) -> str:
    """Two lines: the verdict (which outputs fail, with their RMSE against fp64 and the
    reference's), then the finding that names the NaN/inf origin or the first divergent node (else the first
    finding) and says where and why."""
    failing = [o for o in result.outputs if not o.passes]
    figures = ", ".join(
        f"{o.name} (RMSE vs fp64 {o.rmse_result:.4g}, reference {o.rmse_reference:.4g}"
        + (f"; {result.against} itself is NaN/inf where fp64 is finite at {o.reference_nonfinite} element(s)"
           if o.reference_nonfinite else "") + ")"
        for o in failing
    )
    head = f"{result.program} under {result.policy} diverges from {result.against} by {_rule_words(result)}: {figures}"
    said = list(result.explanations)
    specific = [e for e in said if not e.startswith("output ")]
    origins = [re.compile(rf"\({re.escape(i)}[ ,)]") for i in (result.nan_origin, result.first_divergent) if i]
    named = [e for pattern in origins for e in specific if pattern.search(e)]  # (trial 79: an unrelated underflow
    # note came first); a line listing more nodes of a finding's op and line stands for the finding before it
    named = [said[said.index(e) - 1] if e.endswith(FLAGGED_AS_WELL) and said.index(e) else e for e in named]
    specific = [e for e in specific if not e.endswith(FLAGGED_AS_WELL)]  # (trial 111: quoted as the finding)
    finding = (named or specific or said or ["(no finding)"])[0]
    return f"{head}\nfirst finding: {finding}"
