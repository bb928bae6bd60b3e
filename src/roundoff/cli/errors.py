"""The CLI's exit-status contract, and turning exceptions into one-line messages.

Exit status: 0 within tolerance (or nothing to fix), 1 diverges (or no fix found), 2 bad usage
(anything the user can fix: the command line, the script, the function, its inputs, a policy file,
an output path), 3 internal error (a roundoff bug), 130 interrupted. The status is decided by the
exception's class, never by user code: a ``sys.exit()`` in the user's script is a usage error.
Under ``--json`` every error is also one JSON object on stdout: ``{"error": MESSAGE, "exit": N}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

import typer

try:  # typer >= 0.2x vendors click as typer._click; older typer runs on click itself
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_exceptions

EXIT_OK, EXIT_DIVERGES, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

EXIT_CODES_HELP = (
    "Exit status: 0 within tolerance, 1 diverges, 2 bad usage (the message names the file, line "
    "or option at fault), 3 internal error (a roundoff bug: rerun with --debug)."
)
TRUST_HELP = (
    "SCRIPT is imported and FUNCTION and FACTORY are run (as `python SCRIPT` would): "
    "run only code you trust."
)

# roundoff's own error classes for bad input (module, class): exit 2. Looked up in sys.modules, so
# that the CLI does not import every layer just to name its errors.
_USER_ERRORS = (
    ("roundoff.cli.loading", "UsageError"),
    ("roundoff.capture.errors", "CaptureError"),
    ("roundoff.policy.errors", "PolicyError"),
    ("roundoff.zoo.registry", "UnknownWorkloadError"),
    ("roundoff.blame.repro", "ReproError"),
    ("roundoff.compiler.errors", "RoundoffCompileError"),
    ("roundoff.execute.wide_kernels", "NoWideKernelError"),  # an op the oracle cannot run: the program, not a bug
)
CLICK_ABORT = getattr(click_exceptions, "Abort", typer.Abort)
_PASS_THROUGH = (
    typer.Exit, typer.Abort, CLICK_ABORT, click_exceptions.ClickException,
    getattr(click_exceptions, "Exit", typer.Exit),
)


def is_user_error(exc: BaseException) -> bool:
    """True for roundoff's own bad-input error classes (exit 2); other exceptions are bugs."""
    for module, name in _USER_ERRORS:
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None and isinstance(exc, cls):
            return True
    return False


def first_line(exc: BaseException) -> str:
    """The first non-empty line of the exception's message (KeyError unquoted), or its class."""
    text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
    lines = str(text).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def report_error(message: str, code: int, json_out: bool) -> None:
    """One line on stderr; under ``--json`` also ``{"error": ..., "exit": code}`` on stdout."""
    typer.echo(f"error: {message}" if code == EXIT_USAGE else message, err=True)
    if json_out:
        typer.echo(json.dumps({"error": message, "exit": code}))


def fail(message: str, code: int, json_out: bool) -> typer.Exit:
    """Report `message` and return the Exit to raise (``raise fail(...)``)."""
    report_error(message, code, json_out)
    return typer.Exit(code)


@contextlib.contextmanager
def guarded(debug: bool, json_out: bool = False) -> Iterator[None]:
    """Bad input -> one line + exit 2; an internal error -> one line + exit 3; Ctrl-C -> 130.

    With `debug` the traceback is printed to stderr first; the exit status is the same (a CI job run
    with --debug must not read bad usage as a divergence).
    """
    try:
        yield
    except _PASS_THROUGH:
        raise
    except KeyboardInterrupt as exc:
        _traceback(exc, debug)
        raise fail("interrupted", EXIT_INTERRUPTED, json_out) from None
    except SystemExit as exc:  # only user code calls sys.exit inside a command
        _traceback(exc, debug)
        message = f"the program {describe(exc)}; a target must return, not exit"
        raise fail(message, EXIT_USAGE, json_out) from None
    except Exception as exc:
        _traceback(exc, debug)
        if is_user_error(exc):
            raise fail(first_line(exc), EXIT_USAGE, json_out) from None
        if (extra := missing_extra(exc)) is not None:
            raise fail(extra, EXIT_USAGE, json_out) from None
        raise fail(
            f"internal error ({type(exc).__name__}: {first_line(exc)}); this is a roundoff bug: "
            "rerun with --debug for the traceback and report it",
            EXIT_INTERNAL,
            json_out,
        ) from None


def _traceback(exc: BaseException, debug: bool) -> None:
    """Under --debug, `exc`'s whole traceback (its causes included) on stderr."""
    if debug:
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)


#: optional packages -> the extra of roundoff that installs them
_EXTRAS = {"rich": "cli", "typer": "cli", "jinja2": "cli", "plotly": "cli", "tomli_w": "toml",
           "transformers": "models"}


def missing_extra(exc: BaseException) -> str | None:
    """The one-line message for an optional package that is not installed (an environment problem,
    exit 2, not a roundoff bug), or None when `exc` is something else."""
    if not isinstance(exc, ImportError):
        return None
    top = (exc.name or "").split(".")[0]
    name = top if top in _EXTRAS else next((k for k in _EXTRAS if f"'{k}'" in str(exc)), None)
    if name is None:
        return None
    return (f"this needs the optional package {name!r}, which is not installed: "
            f"pip install 'roundoff[{_EXTRAS[name]}]' (or pip install {name})")


_ROUNDOFF_DIR = str(Path(__file__).resolve().parents[1]) + os.sep
_TRANSPARENT = ("__torch_function__", "__torch_dispatch__")


def _is_library(filename: str) -> bool:
    """Frames of roundoff itself, of installed packages and of the standard library."""
    lib_dirs = {os.path.dirname(os.__file__) + os.sep}
    lib_dirs |= {p + os.sep for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
    name = os.path.abspath(filename)
    return name.startswith(_ROUNDOFF_DIR) or any(name.startswith(d) for d in lib_dirs) or (
        filename.startswith("<")
    )


def user_frame(exc: BaseException) -> traceback.FrameSummary | None:
    """The innermost frame of the user's code in `exc`'s traceback, if that frame is deeper than
    every frame of roundoff (so the exception comes from the user's code, or from a library the
    user's code called directly). Roundoff's ``__torch_function__`` hooks count as transparent."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if os.path.abspath(frame.filename).startswith(_ROUNDOFF_DIR):
            if frame.name in _TRANSPARENT:
                continue
            return None
        if not _is_library(frame.filename):
            return frame
    return None


def user_line(exc: BaseException) -> str:
    """``" (model.py:12)"`` for the user's innermost frame in the traceback, else ``""``."""
    frame = user_frame(exc)
    return "" if frame is None else f" ({Path(frame.filename).name}:{frame.lineno})"


def describe(exc: BaseException) -> str:
    """``"raised ZeroDivisionError: division by zero (model.py:3)"``: the exception and the user's
    line; ``"called sys.exit(0) (model.py:3)"`` for a SystemExit."""
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r}){user_line(exc)}"
    text = str(exc).strip().splitlines()
    head = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    return f"raised {head}{user_line(exc)}"
