"""The `roundoff` command line (typer).

Exit status (`roundoff.cli.errors`): 0 when every checked output is within tolerance, 1 when one
diverges, 2 on bad usage (anything the user can fix: options, scripts that fail to import or to run,
missing functions, inputs of the wrong shape or dtype, programs without floating-point outputs,
policy files, output paths), 3 on an internal error (a roundoff bug: rerun with ``--debug`` for the
traceback), 130 when interrupted. Tables go to stdout, errors and progress to stderr; under
``--json`` stdout holds one JSON document (the report, or ``{"error": ..., "exit": N}``).
check/trace/blame/sweep/observe import SCRIPT and run FUNCTION and FACTORY: run only code you trust.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from roundoff.cli.blaming import blame_output, run_blame
from roundoff.cli.errors import (
    CLICK_ABORT,
    EXIT_DIVERGES,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    click_exceptions,
    fail,
    first_line,
    guarded,
)
from roundoff.cli.loading import Loaded, UsageError, capture_target, load_target
from roundoff.cli.observing import register as register_observe
from roundoff.cli.outputs import (
    check_not_a_script,
    check_writable,
    stderr_console,
    stdout_console,
    write_output,
)
from roundoff.cli.params import (
    BLAME_HELP,
    CHECK_HELP,
    DEFAULT_POLICY,
    FLAG,
    SWEEP_HELP,
    TRACE_HELP,
    BackwardOpt,
    Command,
    DebugOpt,
    Group,
    InputsOpt,
    JsonOpt,
    PolicyOpt,
    RuleOpt,
    TargetArg,
    TolOpt,
    check_by_values,
    check_rule,
    check_tol,
)
from roundoff.cli.policies import (
    check_node_overrides,
    reference_name,
    resolve_policies,
    resolve_policy,
    resolve_reference,
)
from roundoff.report import terminal

app = typer.Typer(
    cls=Group,
    name="roundoff",
    help=(
        "Make the floating-point behaviour of low-precision PyTorch programs checkable.\n\n"
        "check, trace, blame, sweep and observe import SCRIPT and run FUNCTION and FACTORY: run only code "
        "you trust.\n\nExit status: 0 within tolerance, 1 diverges, 2 bad usage, 3 internal error "
        "(a roundoff bug: rerun with --debug), 130 interrupted."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
policy_app = typer.Typer(cls=Group, help="Inspect precision policies.", no_args_is_help=True)
app.add_typer(policy_app, name="policy")
register_observe(app)

SEARCHES = ("ddmin", "prefix", "prefix-linear")


def _stdout():
    return stdout_console()


def _stderr():
    return stderr_console()


@app.command(cls=Command)
def formats(debug: DebugOpt = False) -> None:
    """Show the floating-point formats roundoff knows and their derived constants."""
    from roundoff.numerics import FORMATS

    with guarded(debug):
        records = list(FORMATS.values()) if isinstance(FORMATS, dict) else list(FORMATS)
        _stdout().print(terminal.formats_table(records))


@app.command(cls=Command)
def policies(debug: DebugOpt = False) -> None:
    """List the policy presets with the sources they follow."""
    from roundoff.policy import list_policies

    with guarded(debug):
        presets = [resolve_policy(p) if isinstance(p, str) else p for p in list_policies()]
        _stdout().print(terminal.policies_table(presets))


@policy_app.command("show", cls=Command)
def policy_show(
    name: Annotated[str, typer.Argument(metavar="NAME|FILE.toml", help="Preset or .toml path.")],
    debug: DebugOpt = False,
) -> None:
    """Print one policy (preset name or .toml path) as TOML."""
    from roundoff.policy import policy_to_toml

    with guarded(debug):
        typer.echo(policy_to_toml(resolve_policy(name)), nl=False)


@app.command(cls=Command, help=TRACE_HELP)
def trace(
    target: TargetArg,
    policy: PolicyOpt = None,
    inputs: InputsOpt = None,
    backward: BackwardOpt = False,
    lowered: Annotated[
        bool,
        typer.Option(
            "--lowered", metavar=FLAG, help="Print the lowered plan (the emulation's own code)."
        ),
    ] = False,
    debug: DebugOpt = False,
) -> None:
    from roundoff.plan import format_side_by_side, format_trace, plan

    with guarded(debug):
        names = policy or [DEFAULT_POLICY]
        if len(names) > 2:
            raise UsageError(
                f"--policy: trace shows one policy or two side by side; got {len(names)}"
            )
        chosen = resolve_policies(names)
        loaded = load_target(target, inputs, backward)
        program = capture_target(loaded)
        for name, p in zip(names, chosen, strict=True):
            check_node_overrides(program, p, loaded.label, name)
        plans = [plan(program, p) for p in chosen]
        if lowered:
            from roundoff.lower import format_lowered

            text = "\n".join(format_lowered(p) for p in plans)
        else:
            text = format_trace(plans[0]) if len(plans) == 1 else format_side_by_side(*plans)
    typer.echo(text)


@app.command(cls=Command, help=CHECK_HELP)
def check(
    target: TargetArg,
    policy: PolicyOpt = None,
    inputs: InputsOpt = None,
    against: Annotated[
        str,
        typer.Option(
            metavar="REF", help="eager, a policy, or oracle (also spelled fp64): the fp64 run."
        ),
    ] = "eager",
    rule: RuleOpt = "same",
    tol: TolOpt = 1e-4,
    json_out: JsonOpt = False,
    html: Annotated[
        Path | None, typer.Option(metavar="FILE.html", help="Also write an HTML report here.")
    ] = None,
    backward: BackwardOpt = False,
    top: Annotated[
        int, typer.Option(min=0, metavar="N", help="Worst nodes to list per policy.")
    ] = 10,
    with_blame: Annotated[
        bool,
        typer.Option(
            "--blame", metavar=FLAG, help="Find the minimal fix for each diverging policy."
        ),
    ] = False,
    every_node: Annotated[
        bool,
        typer.Option(
            "--every-node", metavar=FLAG,
            help="Examine every node (default: outputs and checkpoints first, nodes only if they fail).",
        ),
    ] = False,
    by_values: Annotated[
        bool, typer.Option("--by-values", metavar=FLAG, help=(
            "Against the oracle, fail every output over the limit by its values, also where no node on its "
            "path is flagged (by default such an output passes once every node is examined)."))
    ] = False,
    debug: DebugOpt = False,
) -> None:
    from roundoff.cli.checking import run_check

    with guarded(debug, json_out):
        check_writable(html, "--html", (".html", ".htm"))
        check_rule(rule)
        check_tol(tol)
        names = policy or [DEFAULT_POLICY]
        chosen = resolve_policies(names)
        against = reference_name(against)
        check_by_values(by_values, against, rule)
        reference = resolve_reference(against)
        loaded = load_target(target, inputs, backward)
        program = capture_target(loaded)
        for name, p in zip([*names, against], chosen + reference):  # against: when a policy
            check_node_overrides(program, p, loaded.label, name)
        document = run_check(loaded, program, chosen, against, _stderr(), with_blame, rule=rule,
                             nodes="all" if every_node else "screen", tol=tol, by_values=by_values)
        _emit(document, json_out, html, top)
        if not policy:  # (after the report: an error stays one line)
            _default_policy_hint(loaded)
    raise typer.Exit(EXIT_DIVERGES if document["verdict"] == "diverges" else EXIT_OK)


def _default_policy_hint(loaded: Loaded) -> None:
    """On stderr, where no --policy was given and the inputs are on the CPU: the default models torch.compile on
    a GPU, inductor-cpu this machine's (trial 76: checked under inductor-gpu with no word of it)."""
    if not any(getattr(t, "is_cuda", False) for t in loaded.inputs):
        _stderr().print(f"note: no --policy: checking {DEFAULT_POLICY} (torch.compile on a GPU); torch.compile on "
                        "this CPU follows -p inductor-cpu", markup=False, highlight=False)


def _emit(document: dict, json_out: bool, html: Path | None, top: int) -> None:
    """The report on stdout first (so a failing HTML write cannot lose it), then the HTML page."""
    from roundoff.report.json_report import dumps

    if json_out:
        typer.echo(dumps(document))
    else:
        _stdout().print(terminal.check_report(document, top))
    if html is not None:
        from roundoff.report.html import render_html

        write_output(html, render_html(document), "--html")
        if not json_out:
            _stdout().print(f"HTML report: {html}", markup=False)


@app.command("blame", cls=Command, help=BLAME_HELP)
def blame_command(
    target: TargetArg,
    policy: Annotated[
        list[str] | None,
        typer.Option("--policy", "-p", metavar="NAME|FILE.toml",
                     help=f"Preset name or .toml path (one; default {DEFAULT_POLICY})."),
    ] = None,
    inputs: InputsOpt = None,
    against: Annotated[
        str, typer.Option(metavar="REF", help="eager, or oracle (also spelled fp64).")
    ] = "eager",
    rule: RuleOpt = "same",
    tol: TolOpt = 1e-4,
    search: Annotated[
        str, typer.Option(metavar="ddmin|prefix|prefix-linear", help="Search strategy.")
    ] = "ddmin",
    save_policy: Annotated[
        Path | None,
        typer.Option(metavar="FILE.toml", help="Write the fixed policy (TOML) here."),
    ] = None,
    repro: Annotated[
        Path | None, typer.Option(metavar="FILE.py", help="Write a standalone repro.py here.")
    ] = None,
    by_values: Annotated[
        bool, typer.Option("--by-values", metavar=FLAG, help=(
            "Against the oracle, keep every change the search needs to bring each output within the "
            "limit by its values (by default the changes check passes without are left out)."))
    ] = False,
    placeable: Annotated[
        bool, typer.Option("--placeable", metavar=FLAG, help=(
            "Only changes roundoff.compile can place: with --backward, at forward nodes (by default a fix "
            "may change backward-only nodes, which a note counts); not at steps of a decomposition (n7.0); under "
            "fusion-boundary rounding, no kept rounding of an fp8 value."))
    ] = False,
    backward: BackwardOpt = False,
    json_out: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    with guarded(debug, json_out):
        check_writable(save_policy, "--save-policy", (".toml",))  # (--policy reads it back by its suffix)
        check_writable(repro, "--repro", (".py",))
        check_not_a_script(repro, "--repro", target, inputs)
        if search not in SEARCHES:
            raise UsageError(f"--search {search!r}: choose one of {', '.join(SEARCHES)}")
        check_rule(rule)
        check_tol(tol)
        if policy is not None and len(policy) > 1:
            raise UsageError(
                f"blame searches one policy at a time, got {len(policy)} (--policy {' --policy '.join(policy)}); "
                "run blame once per policy"
            )
        policy = policy[0] if policy else DEFAULT_POLICY
        chosen = resolve_policy(policy)
        against = reference_name(against)
        if against not in ("eager", "oracle"):
            raise UsageError(f"--against {against!r}: blame compares with eager or oracle")
        check_by_values(by_values, against, rule)
        loaded = load_target(target, inputs, backward)
        if save_policy is not None and not placeable and not json_out:  # said before a long search
            stderr_console().print(  # (trial 71: learnt from roundoff.compile's error after a 13-minute search)
                "blame: searching without --placeable, so a fix it finds may change "
                + ("backward-only nodes or " if backward else "") + "steps of a decomposition (ids such as n7.0), which "
                f"roundoff.compile cannot place ({save_policy} then serves check and the repro); add --placeable for "
                "a fix roundoff.compile applies", markup=False)  # (trials 90, 92, 93 read it as said of the result)
        found, program = run_blame(loaded, chosen, against, search, repro is not None, policy, trim=not by_values,
                                   placeable=placeable, rule=rule, tol=tol)
        blame_output(found, loaded.label, save_policy, repro, program, json_out)
    raise typer.Exit(EXIT_DIVERGES if found.status.value == "no_fix" else EXIT_OK)


@app.command(cls=Command, help=SWEEP_HELP)
def sweep(
    targets: Annotated[
        list[str] | None,
        typer.Argument(metavar="TARGET", help="zoo:NAME or SCRIPT:FUNCTION; several allowed."),
    ] = None,
    workload: Annotated[
        list[str] | None,
        typer.Option("--workload", "-w", metavar="TARGET", help="Same as TARGET; repeatable."),
    ] = None,
    inputs: InputsOpt = None,
    policy: Annotated[
        list[str] | None,
        typer.Option("--policy", "-p", metavar="NAME|FILE.toml",
                     help="Preset name or .toml path; repeat for several."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(metavar="FILE.csv|FILE.json", help="Save the table as .csv or .json."),
    ] = None,
    backward: BackwardOpt = False,
    debug: DebugOpt = False,
) -> None:
    from roundoff.cli.sweep import DEFAULT_POLICIES, DEFAULT_WORKLOADS, run_sweep, to_csv, to_json

    with guarded(debug):
        check_writable(out, "--out", (".csv", ".json"))
        chosen_targets = [*(targets or []), *(workload or [])] or list(DEFAULT_WORKLOADS)
        if inputs is not None and all(t.startswith("zoo:") for t in chosen_targets):
            raise UsageError(
                "--inputs is for SCRIPT:FUNCTION targets; zoo workloads bring their own"
            )
        chosen = resolve_policies(policy or DEFAULT_POLICIES)
        rows = run_sweep(chosen_targets, chosen, backward, _stderr(), inputs)
        names = [p.name for p in chosen]
        table = terminal.sweep_table([(r.workload, r.layer, r.values) for r in rows], names)
        _stdout().print(table)
        if out is not None:
            text = to_csv(rows, names) if out.suffix == ".csv" else to_json(rows, names)
            write_output(out, text, "--out")
            _stdout().print(f"saved: {out}", markup=False)


@app.command(cls=Command)
def demo(
    quick: Annotated[
        bool, typer.Option("--quick", metavar=FLAG, help="Only the formats and the FMA demo.")
    ] = False,
    debug: DebugOpt = False,
) -> None:
    """The main job on a fresh machine: formats, exact rounding and FMA, the motivating checks."""
    from roundoff.cli.demo import fma_demo, fma_rows
    from roundoff.numerics import FORMATS

    with guarded(debug):
        out = _stdout()
        records = list(FORMATS.values()) if isinstance(FORMATS, dict) else list(FORMATS)
        out.print(terminal.formats_table(records))
        out.print(
            terminal.key_values(
                "exp(x*scale - x*scale): eager rounds x*scale once; "
                "an FMA keeps its rounding error",
                fma_rows(fma_demo()),
            )
        )
        if quick:
            return
        from roundoff.cli.checking import motivating_checks

        out.print(terminal.verdict_table(motivating_checks(progress_console=_stderr())))


def _target_meant(args: list[str]) -> str:
    """"; did you mean 'model.py:loss'?" where a script and a name follow each other as two arguments (trial 96:
    ``check mdn.py nll`` was told only "unexpected extra argument (nll)")."""
    for script, name in zip(args, args[1:]):
        if script.endswith(".py") and ":" not in script and name.isidentifier():
            return f"; did you mean '{script}:{name}'?"
    return ""


def main(argv: list[str] | None = None) -> None:
    """The console script: the CPU allocator setting, then the app; click's own usage errors
    (unknown option, bad value, missing TARGET) become one line and exit 2, JSON under --json."""
    from roundoff.execute.cpu_allocator import retain_freed_memory

    retain_freed_memory()  # a command-line process: large emulation temporaries reuse freed memory
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        code = app(args=args, prog_name="roundoff", standalone_mode=False)
    except click_exceptions.ClickException as exc:
        known = bool(args) and args[0] in typer.main.get_command(app).commands  # an unknown command: the top help
        see = f"'roundoff {args[0]} --help'" if known else "'roundoff --help'"
        message = exc.format_message().rstrip(".") or "no command given (the usage above lists them)"  # a group alone
        if message[:1].isupper() and message[1:2].islower():  # click's "Got unexpected ...": our errors' case
            message = message[0].lower() + message[1:]
        meant = _target_meant(args)
        where = f" See {see}" if f"{message}{meant}".endswith("?") else f"; see {see}"  # (not "...?; see")
        fail(f"{message}{meant}{where}", EXIT_USAGE, "--json" in args)
        code = EXIT_USAGE
    except (typer.Abort, CLICK_ABORT):
        code = EXIT_INTERRUPTED
    except Exception as exc:  # outside a command's guard (typer itself): still one line, exit 3
        if "--debug" in args:
            raise
        fail(f"internal error ({type(exc).__name__}: {first_line(exc)}); this is a roundoff bug: "
             "rerun with --debug for the traceback and report it", EXIT_INTERNAL, "--json" in args)
        code = EXIT_INTERNAL
    sys.exit(code if isinstance(code, int) else EXIT_OK)
