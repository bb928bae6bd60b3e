"""The `roundoff` command line (typer).

Exit status: 0 when every checked output is within tolerance, 1 when one diverges, 2 on bad usage
(unknown policy or workload, scripts that fail to import, missing functions, inputs of the wrong
shape or dtype, programs without floating-point outputs), 3 on an internal error (a roundoff bug:
rerun with ``--debug`` for the traceback). Tables go to stdout, errors and progress to stderr.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from roundoff.cli.loading import UsageError, load_target
from roundoff.report import terminal

app = typer.Typer(
    name="roundoff",
    help="Make the floating-point behaviour of low-precision PyTorch programs checkable.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
policy_app = typer.Typer(help="Inspect precision policies.", no_args_is_help=True)
app.add_typer(policy_app, name="policy")

EXIT_OK, EXIT_DIVERGES, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

DebugOpt = Annotated[
    bool, typer.Option("--debug", help="Show full tracebacks instead of one line.")
]
PolicyOpt = Annotated[
    list[str] | None,
    typer.Option("--policy", "-p", help="Preset name or .toml path; repeat for several."),
]
BackwardOpt = Annotated[bool, typer.Option("--backward", help="Also capture the backward pass.")]
InputsOpt = Annotated[
    str | None,
    typer.Option("--inputs", help="SCRIPT:FACTORY returning a tuple of tensors."),
]


def _stdout() -> Console:
    return Console(highlight=False)


def _stderr() -> Console:
    return Console(stderr=True, highlight=False)


def _is_usage_error(exc: BaseException) -> bool:
    """Bad input: our UsageError, ValueError/TypeError/KeyError, or any roundoff-defined error."""
    if isinstance(exc, (UsageError, ValueError, TypeError, KeyError)):
        return True
    return type(exc).__module__.startswith("roundoff.")


@contextlib.contextmanager
def guarded(debug: bool) -> Iterator[None]:
    """Turn user-fixable errors into one line + exit 2, other errors into one line + exit 3."""
    try:
        yield
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
        raise
    except Exception as exc:
        if debug:
            raise
        text = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        first = str(text).strip().splitlines()[0] if str(text).strip() else type(exc).__name__
        if _is_usage_error(exc):
            typer.echo(f"error: {first}", err=True)
            raise typer.Exit(EXIT_USAGE) from None
        typer.echo(
            f"internal error ({type(exc).__name__}: {first}); this is a roundoff bug, "
            "rerun with --debug for the traceback and report it",
            err=True,
        )
        raise typer.Exit(EXIT_INTERNAL) from None


def resolve_policy(name_or_path: str):  # -> roundoff.policy.model.Policy
    """A preset name or .toml path through `get_policy`; one-line error if unknown."""
    from roundoff.policy import get_policy, list_policies

    try:
        return get_policy(name_or_path)
    except (KeyError, ValueError, FileNotFoundError) as exc:
        if name_or_path.endswith(".toml"):
            raise UsageError(f"policy file {name_or_path!r}: {exc}") from exc
        names = ", ".join(p if isinstance(p, str) else p.name for p in list_policies())
        raise UsageError(
            f"unknown policy {name_or_path!r}; presets: {names} (or pass a .toml path)"
        ) from exc


@app.command()
def formats() -> None:
    """Show the floating-point formats roundoff knows and their derived constants."""
    from roundoff.numerics import FORMATS

    records = list(FORMATS.values()) if isinstance(FORMATS, dict) else list(FORMATS)
    _stdout().print(terminal.formats_table(records))


@app.command()
def policies() -> None:
    """List the policy presets with the sources they follow."""
    from roundoff.policy import list_policies

    presets = [resolve_policy(p) if isinstance(p, str) else p for p in list_policies()]
    _stdout().print(terminal.policies_table(presets))


@policy_app.command("show")
def policy_show(name: str, debug: DebugOpt = False) -> None:
    """Print one policy (preset name or .toml path) as TOML."""
    from roundoff.policy import policy_to_toml

    with guarded(debug):
        typer.echo(policy_to_toml(resolve_policy(name)), nl=False)


@app.command()
def trace(
    target: str,
    policy: PolicyOpt = None,
    inputs: InputsOpt = None,
    backward: BackwardOpt = False,
    lowered: Annotated[
        bool, typer.Option("--lowered", help="Print the lowered plan (the emulation's own code) instead.")
    ] = False,
    debug: DebugOpt = False,
) -> None:
    """Print the plan of TARGET (SCRIPT:FUNCTION or zoo:NAME) under one or two policies."""
    from roundoff.capture import capture
    from roundoff.plan import format_side_by_side, format_trace, plan

    with guarded(debug):
        names = policy or ["eager"]
        if len(names) > 2:
            raise UsageError(f"trace shows one policy or two side by side; got {len(names)}")
        chosen = [resolve_policy(p) for p in names]
        loaded = load_target(target, inputs, backward)
        program = capture(loaded.fn, *loaded.inputs, backward=loaded.backward)
        plans = [plan(program, p) for p in chosen]
        if lowered:
            from roundoff.lower import format_lowered

            text = "\n".join(format_lowered(p) for p in plans)
        else:
            text = format_trace(plans[0]) if len(plans) == 1 else format_side_by_side(*plans)
        typer.echo(text)


@app.command()
def check(
    target: str,
    policy: PolicyOpt = None,
    inputs: InputsOpt = None,
    against: Annotated[str, typer.Option(help="eager, oracle (fp64) or a policy.")] = "eager",
    json_out: Annotated[bool, typer.Option("--json", help="Print the JSON report only.")] = False,
    html: Annotated[Path | None, typer.Option(help="Also write an HTML report here.")] = None,
    backward: BackwardOpt = False,
    top: Annotated[int, typer.Option(help="Worst nodes to list per policy.")] = 10,
    with_blame: Annotated[
        bool, typer.Option("--blame", help="Find the minimal fix for each diverging policy.")
    ] = False,
    debug: DebugOpt = False,
) -> None:
    """Check TARGET under each --policy against a reference; exit 1 if any output diverges."""
    from roundoff.cli.checking import run_check

    with guarded(debug):
        names = policy or ["inductor-gpu"]
        chosen = [resolve_policy(p) for p in names]
        if against not in ("eager", "oracle"):
            resolve_policy(against)
        loaded = load_target(target, inputs, backward)
        document = run_check(loaded, chosen, against, _stderr(), with_blame)
    _emit(document, json_out, html, top)
    raise typer.Exit(EXIT_DIVERGES if document["verdict"] == "diverges" else EXIT_OK)


def _emit(document: dict, json_out: bool, html: Path | None, top: int) -> None:
    from roundoff.report.json_report import dumps

    if html is not None:
        from roundoff.report.html import render_html

        html.write_text(render_html(document), encoding="utf-8")
    if json_out:
        typer.echo(dumps(document))
    else:
        _stdout().print(terminal.check_report(document, top))
        if html is not None:
            _stdout().print(f"HTML report: {html}", markup=False)


@app.command("blame")
def blame_command(
    target: str,
    policy: Annotated[str, typer.Option("--policy", "-p", help="Preset name or .toml path.")],
    inputs: InputsOpt = None,
    against: Annotated[str, typer.Option(help="eager or oracle (fp64).")] = "eager",
    search: Annotated[str, typer.Option(help="ddmin, prefix or prefix-linear.")] = "ddmin",
    save_policy: Annotated[
        Path | None, typer.Option(help="Write the fixed policy (TOML) here.")
    ] = None,
    repro: Annotated[Path | None, typer.Option(help="Write a standalone repro.py here.")] = None,
    backward: BackwardOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Find a 1-minimal set of per-node changes that brings TARGET within tolerance.

    Exit 0 when fixed (or already within tolerance), 1 when no change set fixes it."""
    from roundoff.blame import blame
    from roundoff.capture import capture
    from roundoff.report.from_check import blame_entry

    with guarded(debug):
        chosen = resolve_policy(policy)
        if against not in ("eager", "oracle"):
            raise UsageError(f"--against {against!r}: blame compares with eager or oracle")
        loaded = load_target(target, inputs, backward)
        with terminal.progress_bar(_stderr()) as progress:
            progress.add_task(f"blaming {loaded.label} under {chosen.name}", total=None)
            program = capture(loaded.fn, *loaded.inputs, backward=loaded.backward)
            found = blame(program, chosen, against=against, search=search, repro=repro is not None)
    out = _stdout()
    out.print(terminal.blame_report(blame_entry(found)))
    if save_policy is not None and found.policy_toml:
        save_policy.write_text(found.policy_toml, encoding="utf-8")
        out.print(f"fixed policy: {save_policy} (use it with --policy)", markup=False)
    elif found.policy_toml and found.changes:
        typer.echo(found.policy_toml)
    if repro is not None and found.repro:
        repro.write_text(found.repro, encoding="utf-8")
        out.print(f"repro script: {repro}", markup=False)
    raise typer.Exit(EXIT_DIVERGES if found.status.value == "no_fix" else EXIT_OK)


@app.command()
def sweep(
    workload: Annotated[
        list[str] | None, typer.Option("--workload", "-w", help="zoo:NAME; repeat for several.")
    ] = None,
    policy: PolicyOpt = None,
    out: Annotated[Path | None, typer.Option(help="Save the table as .csv or .json.")] = None,
    backward: BackwardOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Error against fp64 per layer and policy over zoo workloads (default: the XLA `mul` debate
    on the Llama- and Mixtral-style blocks)."""
    from roundoff.cli.sweep import DEFAULT_POLICIES, DEFAULT_WORKLOADS, run_sweep, to_csv, to_json

    with guarded(debug):
        targets = workload or list(DEFAULT_WORKLOADS)
        bad = [t for t in targets if not t.startswith("zoo:")]
        if bad:
            raise UsageError(f"sweep takes zoo workloads (zoo:NAME), got {', '.join(bad)}")
        if out is not None and out.suffix not in (".csv", ".json"):
            raise UsageError(f"--out {str(out)!r}: use a .csv or .json file name")
        chosen = [resolve_policy(p) for p in (policy or DEFAULT_POLICIES)]
        rows = run_sweep(targets, chosen, backward, _stderr())
    names = [p.name for p in chosen]
    _stdout().print(terminal.sweep_table([(r.workload, r.layer, r.values) for r in rows], names))
    if out is not None:
        text = to_csv(rows, names) if out.suffix == ".csv" else to_json(rows, names)
        out.write_text(text, encoding="utf-8")
        _stdout().print(f"saved: {out}", markup=False)


@app.command()
def demo(
    quick: Annotated[bool, typer.Option(help="Only the formats and the FMA demo.")] = False,
) -> None:
    """The main job on a fresh machine: formats, exact rounding and FMA, the motivating checks."""
    from roundoff.cli.demo import fma_demo, fma_rows
    from roundoff.numerics import FORMATS

    out = _stdout()
    records = list(FORMATS.values()) if isinstance(FORMATS, dict) else list(FORMATS)
    out.print(terminal.formats_table(records))
    out.print(
        terminal.key_values(
            "exp(x*scale - x*scale): eager rounds x*scale once; an FMA keeps its rounding error",
            fma_rows(fma_demo()),
        )
    )
    if quick:
        return
    from roundoff.cli.checking import motivating_checks

    rows = motivating_checks(progress_console=_stderr())
    if rows is None:
        out.print("(the analysis layer is not installed yet: skipping the motivating checks)")
    else:
        out.print(terminal.verdict_table(rows))


def main() -> None:  # pragma: no cover - console entry point wrapper
    from roundoff.execute.cpu_allocator import retain_freed_memory

    retain_freed_memory()  # a command-line process: large emulation temporaries reuse freed memory
    app()
