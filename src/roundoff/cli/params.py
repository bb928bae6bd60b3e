"""The command line's parameters and help text: typer options with proper metavars (no
``--json <bool>``, no ``{target}`` usage), the shared help paragraphs and the one default policy."""

from __future__ import annotations

import math
from typing import Annotated

import typer
from typer.core import TyperCommand, TyperGroup

from roundoff.analyze.verdict import EXCESS_LIMIT
from roundoff.cli.errors import EXIT_CODES_HELP, TRUST_HELP
from roundoff.cli.loading import UsageError
from roundoff.zoo import list_workloads


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
    str,
    typer.Argument(metavar="TARGET", help="SCRIPT:FUNCTION (e.g. model.py:forward) or zoo:NAME."),
]
RuleOpt = Annotated[
    str,
    typer.Option(
        metavar="same|allclose|bitwise",
        help="same (PyTorch's rule), allclose (assert_close tolerances) or bitwise.",
    ),
]
RULES = ("same", "allclose", "bitwise")


TolOpt = Annotated[
    float,
    typer.Option(
        metavar="TOL",
        help="same's and allclose's tolerance (atol = rtol; same's RMSE slack is TOL/10). Lower it for outputs "
             "whose values are below about 1e-3.",
    ),
]


def check_tol(tol: float) -> None:
    """UsageError unless `tol` is a positive finite number."""
    if not 0 < tol < math.inf:
        raise UsageError(f"--tol {tol!r}: a positive number (default 1e-4)")


def check_rule(rule: str) -> None:
    """UsageError unless `rule` is one of `RULES`."""
    if rule not in RULES:
        raise UsageError(f"--rule {rule!r}: choose {', '.join(RULES[:-1])} or {RULES[-1]}")


def check_by_values(by_values: bool, against: str, rule: str) -> None:
    """UsageError where `--by-values` has no meaning: it judges outputs against the oracle under `same`."""
    if by_values and rule != "same":
        raise UsageError(f"--by-values is for the same rule: under --rule {rule} every output is held to that "
                         "rule by its values already")
    if by_values and against != "oracle":  # (trial 60: accepted, and no different, against eager)
        raise UsageError(f"--by-values is for --against oracle: against {against} every output is held to its "
                         "values already")

JsonOpt = Annotated[
    bool,
    typer.Option("--json", metavar=FLAG, help="Print the JSON report only (errors as JSON too)."),
]
TARGET_HELP = (
    "TARGET is SCRIPT:FUNCTION, with inputs from --inputs SCRIPT:FACTORY or by default from a "
    "function FUNCTION_inputs() in SCRIPT returning a tuple of tensors; or zoo:NAME, a built-in "
    "workload (roundoff sweep --help lists them)."
)


def paragraphs(text: str) -> str:
    """Help text: paragraphs split on blank lines, each rewrapped by the help formatter."""
    return "\n\n".join(" ".join(p.split()) for p in text.split("\n\n"))


TRACE_HELP = paragraphs(
    f"""Print the plan of TARGET under one policy, or two side by side.

{TARGET_HELP} The default policy is {DEFAULT_POLICY}. {TRUST_HELP}

{EXIT_CODES_HELP}"""
)
CHECK_HELP = paragraphs(
    f"""Check TARGET under each --policy against a reference; exit 1
if any output diverges.

{TARGET_HELP} The default policy is {DEFAULT_POLICY} (torch.compile on GPU), the default reference
eager PyTorch. Against eager or a policy the verdict is PyTorch's own accuracy rule
(torch._dynamo.utils.same against an fp64 run); against the oracle (--against oracle, the fp64 run) a
node diverges when its own error is more than {EXCESS_LIMIT:g} times the rounding of its format, and an
output when such a node, or one that amplifies an error beyond its format, is on its path (README,
"What a verdict means"). {TRUST_HELP}

{EXIT_CODES_HELP}"""
)
BLAME_HELP = paragraphs(
    f"""Find a 1-minimal set of per-node changes that brings
TARGET within tolerance under --policy.

{TARGET_HELP} The default policy is {DEFAULT_POLICY}, the default reference eager PyTorch.
{TRUST_HELP}

Exit 0 when fixed or already within tolerance (then nothing is written), 1 when no change set fixes
it, 2 bad usage, 3 internal error (a roundoff bug: rerun with --debug)."""
)
SWEEP_HELP = paragraphs(
    f"""Error against fp64 per layer and policy over several targets.

Each TARGET is zoo:NAME or SCRIPT:FUNCTION (inputs as for check: --inputs SCRIPT:FACTORY, or
FUNCTION_inputs() in SCRIPT). Default: the XLA `mul` debate on the Llama- and Mixtral-style zoo
blocks under eager, xla-2.9, xla-2.10, xla-neuron, xla-excess-precision and inductor-gpu.
{TRUST_HELP}

Zoo workloads: {", ".join(w.name for w in list_workloads())}.

Exit 0 (a sweep has no verdict), 2 bad usage, 3 internal error."""
)
