"""The work behind `roundoff check` and the demo's verdict table: capture, plan, analyze, report.

Each policy is checked with ``roundoff.analyze.check`` on one captured program; the results become
one report document (``roundoff.report.json_report``) that the CLI prints, dumps or renders.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console

from roundoff.cli.loading import Loaded, load_target
from roundoff.policy.model import Policy
from roundoff.report.terminal import progress_bar

# The motivating cases of DESIGN.md, as (workload, policy, reference).
MOTIVATING: tuple[tuple[str, str, str], ...] = (
    ("zoo:fma-cancel", "inductor-gpu", "eager"),
    ("zoo:fma-cancel", "inductor-emulate", "eager"),
    ("zoo:softmax-backward", "inductor-gpu", "eager"),
    ("zoo:softmax-backward", "inductor-emulate", "eager"),
    ("zoo:bf16-chain", "inductor-cpu", "eager"),
    ("zoo:bf16-chain", "xla-2.9", "oracle"),
    ("zoo:bf16-chain", "xla-2.10", "oracle"),
)


def check_document(
    loaded: Loaded, policies: Sequence[Policy], against: str, progress: Any = None
) -> dict[str, Any]:
    """Check `loaded` under each policy against `against`; the report document of all runs."""
    from roundoff.analyze import check
    from roundoff.capture import capture
    from roundoff.plan import format_trace, plan
    from roundoff.report.from_check import document_from_checks, run_from_check

    task = None
    if progress is not None:
        task = progress.add_task(f"checking {loaded.label}", total=len(policies) + 1)
    program = capture(loaded.fn, *loaded.inputs, backward=loaded.backward)
    runs = []
    for policy in policies:
        if progress is not None:
            progress.update(task, advance=1, description=f"{loaded.label} under {policy.name}")
        result = check(program, program.example_inputs, policy, against, backward=loaded.backward)
        the_plan = plan(program, policy)
        runs.append(run_from_check(result, the_plan, format_trace(the_plan)))
    if progress is not None:
        progress.update(task, advance=1)
    return document_from_checks(loaded.label, against, runs)


def run_check(
    loaded: Loaded, policies: Sequence[Policy], against: str, progress_console: Console
) -> dict[str, Any]:
    """`check_document` with a progress bar on `progress_console` (stderr: stdout stays clean)."""
    with progress_bar(progress_console) as progress:
        return check_document(loaded, policies, against, progress)


def finding(run: dict[str, Any]) -> str:
    """One plain-words line for a run: its first explanation, else its NaN origin or verdict."""
    if run["explanations"]:
        return run["explanations"][0]
    if run["nan_origin"]:
        return f"NaN/Inf from {run['nan_origin']['op']} ({run['nan_origin']['id']})"
    out = run["outputs"][0]
    return f"rmse vs fp64 {out['rmse']} (reference {out['ref_rmse']})"


def motivating_checks(progress_console: Console) -> list[tuple[str, str, str, str]]:
    """Check the motivating workloads under the motivating policies: (workload, policy, verdict,
    finding) rows for the demo's verdict table."""
    from roundoff.policy import get_policy

    rows = []
    with progress_bar(progress_console) as progress:
        task = progress.add_task("motivating checks", total=len(MOTIVATING))
        for target, policy_name, against in MOTIVATING:
            progress.update(task, description=f"{target} under {policy_name}")
            loaded = load_target(target)
            doc = check_document(loaded, [get_policy(policy_name)], against)
            run = doc["runs"][0]
            rows.append((f"{target} vs {against}", policy_name, run["verdict"], finding(run)))
            progress.update(task, advance=1)
    return rows
