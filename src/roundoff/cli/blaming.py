"""`roundoff blame`'s work for the CLI: run blame on a loaded target, print and write its result."""

from __future__ import annotations

from pathlib import Path

from roundoff.cli.loading import capture_target
from roundoff.cli.outputs import progress_display, stderr_console, stdout_console, write_output
from roundoff.cli.policies import check_node_overrides, stamp_program
from roundoff.report import terminal


def run_blame(loaded, chosen, against: str, search: str, want_repro: bool, origin: str, trim: bool = True,
              placeable: bool = False, rule: str = "same", tol: float = 1e-4):
    """Blame's result and the program it was found on."""
    from roundoff.blame import blame

    with progress_display(stderr_console()) as bar:  # (piped: a line every 30 s with the count)
        what = f"blaming {loaded.label} under {chosen.name}"
        task = bar.add_task(what, total=None)

        def evaluated(n: int, candidates: int) -> None:
            bar.update(task, description=f"{what}: {n} evaluation(s) of the program so far ({candidates} candidate changes)")

        def phase(now: str) -> None:
            bar.update(task, description=f"{what}: {now}")

        program = capture_target(loaded)
        check_node_overrides(program, chosen, loaded.label, origin)
        return blame(program, chosen, against=against, search=search, repro=want_repro, on_evaluation=evaluated,
                     on_phase=phase, trim=trim, placeable=placeable, rule=rule, tol=tol), program


def blame_output(found, label: str, save_policy: Path | None, repro: Path | None,
                  program, json_out: bool = False) -> None:
    """Blame's report; the fixed policy (stamped with the program it was made for) and repro
    written only when there is a fix to write. `json_out`: stdout is one JSON document, blame's
    result with the files written (``"written"``: option -> path, or null where not written)."""
    from roundoff.blame.result import BlameStatus
    from roundoff.report.from_check import blame_entry

    if json_out:
        _blame_json(found, save_policy, repro, program)
        return
    out = stdout_console()
    if found.status is BlameStatus.ALREADY_OK:
        out.print(
            f"blame: {label} under {found.policy} is already within tolerance against "
            f"{found.reference}" + (f" by the {found.rule} rule" if found.rule != "same" else "") + ": nothing to fix.",
            markup=False,
        )
        for note in found.notes:
            out.print(f"note: {note}", markup=False)
        for option, path in (("--save-policy", save_policy), ("--repro", repro)):
            if path is not None:
                out.print(f"{option} {path}: not written (there is no change to save or "
                          "reproduce)", markup=False)
        return
    out.print(terminal.blame_report(blame_entry(found)))
    fixed = found.status is BlameStatus.FIXED
    if save_policy is not None:
        if fixed and found.policy_toml:
            write_output(save_policy, stamp_program(found.policy_toml, program), "--save-policy")
            out.print(f"fixed policy: {save_policy} (use it with --policy)", markup=False)
        else:
            out.print(f"--save-policy {save_policy}: not written (no change set fixes it)",
                      markup=False)
    elif fixed and found.policy_toml:
        out.print(f"the fix is {found.policy} with the change(s) above as node overrides: write it as a policy with "
                  "--save-policy FILE, then use it with --policy FILE", markup=False)
    if repro is not None:
        if found.repro:
            write_output(repro, found.repro, "--repro")
            out.print(f"repro script: {repro}", markup=False)
        else:
            why = "no change set fixes it" if not fixed else "; ".join(found.notes) or "no repro"
            out.print(f"--repro {repro}: not written ({why})", markup=False)


def _blame_json(found, save_policy: Path | None, repro: Path | None, program) -> None:
    """`blame_output` under --json: the files written as without it, the document on stdout alone."""
    import typer

    from roundoff.report.json_report import dumps

    written: dict[str, str | None] = {"--save-policy": None, "--repro": None}
    if save_policy is not None and found.fixed and found.policy_toml:
        write_output(save_policy, stamp_program(found.policy_toml, program), "--save-policy")
        written["--save-policy"] = str(save_policy)
    if repro is not None and found.repro:
        write_output(repro, found.repro, "--repro")
        written["--repro"] = str(repro)
    typer.echo(dumps({**found.to_dict(), "written": written}))
