"""The work behind `roundoff check` and the demo's verdict table: capture, plan, analyze, report.

Each policy is checked with ``roundoff.analyze.check`` on one captured program; the results become
one report document (``roundoff.report.json_report``) that the CLI prints, dumps or renders.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console

from roundoff.capture.program import Program
from roundoff.cli.loading import Loaded, capture_target, load_target
from roundoff.cli.outputs import progress_display
from roundoff.policy.model import Policy
from roundoff.report.cells import fmt_num
from roundoff.report.json_report import number

# The motivating cases (docs/architecture.md), as (workload, reference, policies): the FMA that turns a
# cancelled product into inf, the user-level softmax whose gradient goes NaN, the bf16 chain that
# differs bitwise under Inductor, and the XLA `mul` debate on a Llama-style block against fp64.
MOTIVATING: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("zoo:fma-cancel", "eager", ("inductor-gpu", "inductor-emulate")),
    ("zoo:softmax-backward", "eager", ("inductor-gpu", "inductor-emulate")),
    ("zoo:bf16-chain", "eager", ("inductor-cpu",)),
    # As lowered, a bf16*bf16 product is exact in fp32, so 2.9 and 2.10 agree; they part where XLA
    # keeps fp32 inside fusions (opmath mul: xla-neuron; native bf16 mul: xla-excess-precision).
    ("zoo:llama-block", "oracle", ("xla-2.9", "xla-2.10", "xla-neuron", "xla-excess-precision")),
)


def check_document(
    loaded: Loaded,
    policies: Sequence[Policy],
    against: str,
    progress: Any = None,
    with_blame: bool = False,
    program: Program | None = None,
    rule: str = "same",
    nodes: str = "screen",
    tol: float = 1e-4,
    by_values: bool = False,
) -> dict[str, Any]:
    """Check `loaded` under each policy against `against` (`rule` with `tol`); the report document of all runs.
    `nodes`: ``"screen"`` or ``"all"``, `by_values` (`roundoff.analyze.check`'s).
    With `with_blame`, every diverging run also gets blame's 1-minimal change set (ddmin).
    `program` is `loaded` captured already (else it is captured here, once)."""
    from roundoff.analyze import check
    from roundoff.plan import format_trace, plan
    from roundoff.report.from_check import document_from_checks, run_from_check

    task = None
    if progress is not None:
        task = progress.add_task(f"checking {loaded.label}", total=len(policies) + 1)
    from roundoff.policy import get_policy

    reference = against if against in ("eager", "oracle") else get_policy(against)
    if program is None:
        program = capture_target(loaded)
    runs = []
    for policy in policies:
        said = f"{loaded.label} under {policy.name}"
        if progress is not None:
            progress.update(task, advance=1, description=said)
        result = check(
            program, program.example_inputs, policy, reference, backward=loaded.backward, rule=rule, nodes=nodes,
            tol=tol, by_values=by_values,
            on_phase=None if progress is None else (
                lambda what, said=said: progress.update(task, description=f"{said}: {what}")),
        )
        the_plan = plan(program, policy)
        found = None
        if with_blame and result.diverges:
            from roundoff.blame import blame

            found = blame(program, policy, against=against, repro=False, tol=tol, trim=not by_values)
        runs.append(run_from_check(result, the_plan, format_trace(the_plan), found))
    if progress is not None:
        progress.update(task, advance=1)
    return document_from_checks(loaded.label, against, runs, program.specializations)


def run_check(
    loaded: Loaded,
    program: Program,
    policies: Sequence[Policy],
    against: str,
    progress_console: Console,
    with_blame: bool = False,
    rule: str = "same",
    nodes: str = "screen",
    tol: float = 1e-4,
    by_values: bool = False,
) -> dict[str, Any]:
    """`check_document` with a progress bar on `progress_console` (stderr: stdout stays clean)."""
    with progress_display(progress_console) as progress:
        return check_document(loaded, policies, against, progress, with_blame, program, rule, nodes, tol, by_values)


def finding(run: dict[str, Any]) -> str:
    """One plain-words line for a run: where a non-finite value starts and why, else the first
    finding that is not the bare output verdict, else the RMSE figures."""
    origin = run["nan_origin"]
    if origin and origin.get("explanation"):
        return origin["explanation"]
    specific = [e for e in run["explanations"] if not e.startswith("output ")]
    if run["verdict"] != "ok" and specific:
        return specific[0]
    out = run["outputs"][0]
    return (
        f"RMSE vs fp64 {fmt_num(number(out['rmse']), 3)} "
        f"(reference {fmt_num(number(out['ref_rmse']), 3)})"
    )


def motivating_checks(progress_console: Console) -> list[tuple[str, str, str, str]]:
    """Check the motivating workloads under the motivating policies: (workload, policy, verdict,
    finding) rows for the demo's verdict table."""
    from roundoff.policy import get_policy

    rows = []
    with progress_display(progress_console) as progress:
        task = progress.add_task("motivating checks", total=len(MOTIVATING))
        for target, against, names in MOTIVATING:
            progress.update(task, description=f"{target} under {', '.join(names)}")
            loaded = load_target(target)
            doc = check_document(loaded, [get_policy(n) for n in names], against)
            for run in doc["runs"]:
                rows.append((f"{target} vs {against}", run["policy"], run["verdict"], finding(run)))
            progress.update(task, advance=1)
    return rows
