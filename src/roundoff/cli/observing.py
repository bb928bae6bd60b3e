"""`roundoff observe`: run TARGET compiled by the real backend, judge every kernel's output buffer.

The command is registered on the app by `register` (cli/main.py calls it), and its work is
`run_observe`: load and capture TARGET as `check` does, then `roundoff.observed.observe_compiled`.
Exit status as everywhere (`roundoff.cli.errors`): 0 every kernel within tolerance, 1 a kernel
diverges or an output fails against fp64, 2 bad usage (unknown backend or reference, CUDA asked for where there is none, a program
the backend cannot compile), 3 internal error.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any

import typer

from roundoff.cli.errors import EXIT_CODES_HELP, EXIT_DIVERGES, EXIT_OK, TRUST_HELP, guarded
from roundoff.cli.loading import Loaded, UsageError, capture_target, load_target
from roundoff.cli.outputs import progress_display, stderr_console, stdout_console
from roundoff.cli.params import (
    FLAG,
    TARGET_HELP,
    BackwardOpt,
    Command,
    DebugOpt,
    InputsOpt,
    JsonOpt,
    RuleOpt,
    TargetArg,
    TolOpt,
    check_rule,
    check_tol,
    paragraphs,
)
from roundoff.cli.policies import resolve_policy

OBSERVE_HELP = paragraphs(
    f"""Compile TARGET with the real backend (Inductor), run it, and judge every buffer its kernels
write against fp64 (or eager) and against the emulated policy, bit for bit; exit 1 if a kernel
diverges (a buffer whose values lie outside its format's range only where an output fails), or
(against fp64) an output fails check's output rule against fp64 of the whole program.

{TARGET_HELP} Each kernel is judged from the operands the compiled program gave it, so the first
diverging kernel is where an error is made, not where it arrives; an error that is only a correct
rounding amplified later (a stored bf16 mean subtracted from values near it) shows at the outputs. The generated code is not changed.
{TRUST_HELP}

{EXIT_CODES_HELP}"""
)


_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def _config_value(setting: str, key: str, text: str, declared: Any) -> Any:
    """`text` as a value of the type Inductor's config declares for `key` (``bool``: true/false, 1/0,
    yes/no, on/off; ``int``; ``float``; ``str``; ``None`` where the type allows it; anything else a
    Python literal); a value of none of its types: `UsageError` (``max_autotune=false`` must not be the
    text "false", which Python takes for true)."""
    import ast
    import types
    import typing

    allowed = typing.get_args(declared) if isinstance(declared, types.UnionType) or typing.get_origin(
        declared) is typing.Union else (declared,)
    word = text.lower()
    if type(None) in allowed and word in ("none", "null"):
        return None
    if bool in allowed and word in _TRUE + _FALSE:
        return word in _TRUE
    for kind in (int, float):
        if kind in allowed:
            try:
                return kind(text)
            except ValueError:
                pass
    if str in allowed:
        return text
    if not any(t in allowed for t in (bool, int, float, type(None))):
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            pass
    names = " or ".join("None" if t is type(None) else getattr(t, "__name__", str(t)) for t in allowed)
    raise UsageError(f"--inductor-config {setting!r}: {key} takes {names}, not {text!r}")


def inductor_options(settings: list[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` settings as a dict for ``torch._inductor.config.patch``, each value read as the type
    Inductor's config declares for its key (`_config_value`: ``cpp.simdlen=1``, ``max_autotune=false``);
    a key Inductor's config does not have, no ``=``, or a value not of the key's type: `UsageError`."""
    from torch._inductor import config

    out: dict[str, Any] = {}
    for setting in settings or ():
        key, sep, text = setting.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--inductor-config {setting!r}: write KEY=VALUE (e.g. cpp.simdlen=1)")
        known = getattr(config, "_config", {})
        entry = known.get(key)
        if entry is None:
            close = difflib.get_close_matches(key, list(known), n=1)  # (trial 103: max_autotun, no suggestion)
            raise UsageError(f"--inductor-config {setting!r}: torch._inductor.config has no {key!r} in this "
                             "torch" + (f"; did you mean {close[0]!r}?" if close else " (see torch._inductor.config)"))
        declared = getattr(entry, "value_type", None) or type(entry.default)
        out[key] = _config_value(setting, key, text.strip(), declared)
    return out


def run_observe(
    loaded: Loaded, backend: str, device: str | None, against: str, policy: str | None, partitioned: bool = False,
    rule: str = "same", options: dict[str, Any] | None = None, tol: float = 1e-4,
) -> dict[str, Any]:
    """Capture `loaded`, observe it compiled (Inductor's config patched with `options`); the report
    document. Bad input: `UsageError`."""
    from torch._inductor import config

    from roundoff.observed import ObserveError, observe_compiled
    from roundoff.observed.taps import CompileError
    from roundoff.report.observed_document import observe_document

    if backend not in ("inductor",):
        raise UsageError(f"--backend {backend!r}: observe supports inductor only")
    if against not in ("oracle", "fp64", "eager"):
        raise UsageError(f"--against {against!r}: choose oracle (also spelled fp64) or eager")
    chosen = resolve_policy(policy) if policy is not None else None  # a bad name fails before compiling
    if chosen is not None and chosen.node_overrides:  # (trial 57: kernels of plain Inductor called "identical"
        raise UsageError(  # to a blame fix's emulation whose point, an exp kept in fp32, they do not have)
            f"--policy {policy}: its node overrides ({', '.join(list(chosen.node_overrides)[:4])}) are a fix only "
            "roundoff.compile enforces, and observe compiles plain torch.compile, not that program; compare with "
            "a preset (-p NAME) and see the fix's emulation with `roundoff check -p "
            f"{policy}`")
    try:  # (a terminal: a spinner; a CI log: a line every 30 s, as check's)
        with progress_display(stderr_console()) as bar, config.patch(options or {}):
            bar.add_task(f"observing {loaded.label} compiled by {backend}", total=None)
            program = capture_target(loaded)
            result = observe_compiled(program, backend=backend, against=against, device=device, policy=chosen,
                                      partitioned=partitioned, rule=rule, tol=tol, torch_compiled=loaded.fn)
    except CompileError:
        raise  # not the user's input: an internal error (exit 3), its cause kept for --debug
    except ObserveError as exc:
        raise UsageError(f"{loaded.label}: {exc}") from None
    return observe_document(result, loaded.label)


def observe(
    target: TargetArg,
    backend: Annotated[str, typer.Option(metavar="NAME", help="The compiler: inductor.")] = "inductor",
    device: Annotated[
        str | None, typer.Option(metavar="cpu|cuda", help="Where to run (default: the inputs' device).")
    ] = None,
    against: Annotated[
        str, typer.Option(metavar="REF", help="oracle (also spelled fp64): the fp64 run; or eager.")
    ] = "oracle",
    rule: RuleOpt = "same",
    tol: TolOpt = 1e-4,
    policy: Annotated[
        str | None,
        typer.Option("--policy", "-p", metavar="NAME|FILE.toml",
                     help="Emulated policy to compare bit for bit (default: inductor-cpu, on CUDA inductor-gpu)."),
    ] = None,
    inputs: InputsOpt = None,
    backward: BackwardOpt = False,
    partitioned: Annotated[
        bool, typer.Option("--partitioned", metavar=FLAG, help="With --backward: compile forward and backward apart, split by "
                           "AOTAutograd's partitioner, as torch.compile compiles a training step.")
    ] = False,
    inductor_config: Annotated[
        list[str] | None,
        typer.Option("--inductor-config", metavar="KEY=VALUE",
                     help="Set an Inductor config option for the compile (torch._inductor.config; repeatable), "
                          "e.g. cpp.simdlen=1 where the vectorized C++ code does not build."),
    ] = None,
    json_out: JsonOpt = False,
    top: Annotated[int, typer.Option(min=0, metavar="N", help="Kernel rows to list.")] = 20,
    debug: DebugOpt = False,
) -> None:
    from roundoff.report.json_report import dumps
    from roundoff.report.observed import observe_report

    with guarded(debug, json_out):
        if device is not None and device not in ("cpu", "cuda") and not device.startswith("cuda:"):
            raise UsageError(f"--device {device!r}: choose cpu or cuda")
        check_rule(rule)
        check_tol(tol)
        loaded = load_target(target, inputs, backward)
        if partitioned and not backward:
            raise UsageError("--partitioned splits forward from backward: add --backward")
        options = inductor_options(inductor_config)
        document = run_observe(loaded, backend, device, against, policy, partitioned, rule, options, tol)
        if json_out:
            typer.echo(dumps(document))
        else:
            stdout_console().print(observe_report(document, top))
    raise typer.Exit(EXIT_DIVERGES if document["verdict"] == "diverges" else EXIT_OK)


def register(app: typer.Typer) -> None:
    """Add ``observe`` to the app."""
    app.command("observe", cls=Command, help=OBSERVE_HELP)(observe)

