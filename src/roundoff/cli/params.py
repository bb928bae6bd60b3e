"""The command line's parameters and help text: typer options with proper metavars (no
``--json <bool>``, no ``{target}`` usage), the shared help paragraphs and the one default policy."""

from __future__ import annotations

from typing import Annotated

import typer
from typer.core import TyperCommand, TyperGroup


def _flag_help_option(option):
    if option is not None and option.metavar is None:
        option.metavar = ""  # typer would show `--help <bool>`
    return option


class Command(TyperCommand):
    """Usage as ``roundoff check [OPTIONS] TARGET`` (typer's default writes ``{target}``); flags
    without a ``<bool>`` type."""

    def collect_usage_pieces(self, ctx) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = param.metavar or (param.name or "").upper()
                name += "..." if param.nargs != 1 else ""
                pieces.append(name if param.required else f"[{name}]")
        return pieces

    def get_help_option(self, ctx):
        return _flag_help_option(super().get_help_option(ctx))


class Group(TyperGroup):
    def get_help_option(self, ctx):
        return _flag_help_option(super().get_help_option(ctx))


DEFAULT_POLICY = "inductor-gpu"  # check, trace and blame: torch.compile's GPU numerics
FLAG = ""  # metavar of a boolean flag: typer would print `<bool>`

DebugOpt = Annotated[
    bool, typer.Option("--debug", metavar=FLAG, help="Show full tracebacks instead of one line.")
]
PolicyOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--policy", "-p", metavar="NAME|FILE.toml",
        help=f"Preset name or .toml path; repeat for several (default: {DEFAULT_POLICY}).",
    ),
]
BackwardOpt = Annotated[
    bool, typer.Option("--backward", metavar=FLAG, help="Also capture the backward pass.")
]
InputsOpt = Annotated[
    str | None,
    typer.Option(
        "--inputs", metavar="SCRIPT:FACTORY",
        help="A function returning a tuple of tensors (default: FUNCTION_inputs in SCRIPT).",
    ),
]
TargetArg = Annotated[
    str, typer.Argument(metavar="TARGET", help="SCRIPT:FUNCTION (e.g. model.py:forward) or zoo:NAME.")
]
JsonOpt = Annotated[
    bool, typer.Option("--json", metavar=FLAG, help="Print the JSON report only (errors as JSON too).")
]
TARGET_HELP = (
    "TARGET is SCRIPT:FUNCTION, with inputs from --inputs SCRIPT:FACTORY or by default from a "
    "function FUNCTION_inputs() in SCRIPT returning a tuple of tensors; or zoo:NAME, a built-in "
    "workload (roundoff sweep --help lists them)."
)


def paragraphs(text: str) -> str:
    """Help text: paragraphs split on blank lines, each rewrapped by the help formatter."""
    return "\n\n".join(" ".join(p.split()) for p in text.split("\n\n"))
