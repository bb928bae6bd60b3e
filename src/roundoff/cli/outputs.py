"""The CLI's consoles, and the files it writes (``--html``, ``--repro``, ``--save-policy``,
``sweep --out``).

Every output path is validated before any work starts (a folder, a missing folder or an unwritable
place is a one-line usage error, and nothing is left behind), and every write is guarded the same
way, so a full disk or a path that vanished meanwhile is exit 2 too, never a traceback.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.table import Table

from roundoff.cli.loading import UsageError

if TYPE_CHECKING:
    from rich.progress import Progress

PIPED_WIDTH = 160  # rich's 80 columns when not a terminal would fold names (`motivati`/`ng.py:69`)
PIPED_MAX_WIDTH = 240  # a table's own width, piped, up to this: a column of sentences (blame's "why") wraps


class _PipedConsole(Console):
    """A console for piped stdout: `PIPED_WIDTH` columns, or a table's own width where that is more (up to
    `PIPED_MAX_WIDTH`), so a log keeps one line per table row (trial 88: a Wav2Vec2's 63-character gradient
    names folded onto lines of empty cells, and grep over the log lost them)."""

    def print(self, *objects: object, **kwargs: object) -> None:  # type: ignore[override]
        unbounded = self.options.update(max_width=1 << 16)
        natural = [self.measure(t, options=unbounded).maximum for o in objects for t in _tables(o)]
        self.width = max(PIPED_WIDTH, min(max(natural, default=0), PIPED_MAX_WIDTH))
        try:  # (rich's print(width=) cannot exceed the console's width)
            super().print(*objects, **kwargs)  # type: ignore[arg-type]
        finally:
            self.width = PIPED_WIDTH


def _tables(renderable: object) -> list[Table]:
    """The rich tables in `renderable` (a table, or a group holding some)."""
    if isinstance(renderable, Table):
        return [renderable]
    if isinstance(renderable, Group):
        return [t for r in renderable.renderables for t in _tables(r)]
    return []


def stdout_console() -> Console:
    """Tables for stdout: the terminal's width, or when piped `PIPED_WIDTH` and wider for a table that
    needs it (`_PipedConsole`; COLUMNS overrides both)."""
    if not sys.stdout.isatty() and "COLUMNS" not in os.environ:
        return _PipedConsole(highlight=False, width=PIPED_WIDTH)
    return Console(highlight=False)


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


HEARTBEAT_S = 30.0  # where stderr is no terminal (a CI log), a progress line this often


@contextlib.contextmanager
def progress_display(console: Console, every_s: float | None = None) -> Iterator[Progress]:
    """`terminal.progress_bar` on `console`; where that is no terminal (a CI log, a pipe), which shows no
    bar, a line every `every_s` seconds (default `HEARTBEAT_S`) with the time so far and the task under way (its
    description), so that a long plan or search is seen to be alive (trial 89: 10 minutes of a silent check)."""
    # (imported here: the report layer imports torch, which --help does not need)
    from roundoff.report.terminal import progress_bar

    every_s = HEARTBEAT_S if every_s is None else every_s
    with progress_bar(console) as bar:
        if console.is_terminal:
            yield bar
            return
        started, stop = time.monotonic(), threading.Event()

        def beat() -> None:
            while not stop.wait(every_s):
                doing = [t.description for t in bar.tasks if not t.finished]
                if doing:
                    console.print(f"after {time.monotonic() - started:.0f} s: {doing[-1]}", markup=False,
                                  soft_wrap=True)  # (a log line, not wrapped at 80 columns: trial 98)

        thread = threading.Thread(target=beat, name="roundoff-progress", daemon=True)
        thread.start()
        try:
            yield bar
        finally:
            stop.set()
            thread.join()


def check_not_a_script(path: Path | None, option: str, *refs: str | None) -> None:
    """UsageError where `path` is the script of a ``SCRIPT:NAME`` reference in `refs` (the target, --inputs):
    the command would write over the code it runs (trial 75: ``--repro model.py`` replaced the model)."""
    if path is None:
        return
    for ref in refs:
        script = ref.rsplit(":", 1)[0] if ref and ":" in ref and not ref.startswith("zoo:") else None
        if script and Path(script).expanduser().resolve() == path.expanduser().resolve():
            raise UsageError(f"{option} {str(path)!r} is the script {ref!r} runs: it would be written over; "
                             "pass another file name")


def check_writable(path: Path | None, option: str, suffixes: tuple[str, ...] = ()) -> None:
    """UsageError unless `path` can be written as a file; a probe file is removed again."""
    if path is None:
        return
    if path.is_dir():
        raise UsageError(f"{option} {str(path)!r} is a folder; pass a file path inside it")
    if suffixes and path.suffix not in suffixes:
        ends = " or ".join(suffixes)
        raise UsageError(f"{option} {str(path)!r}: use a file name ending in {ends}")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(
            f"{option} {str(path)!r}: folder {str(parent)!r} does not exist; create it"
        )
    existed = path.exists()
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise UsageError(
            f"{option} {str(path)!r} cannot be written ({exc.strerror or exc}); "
            "pass a writable path"
        ) from None
    if not existed:
        path.unlink()


def write_output(path: Path, text: str, option: str) -> None:
    """Write `text` to `path`; an OSError becomes a one-line UsageError naming the option."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(
            f"{option} {str(path)!r} could not be written ({exc.strerror or exc})"
        ) from None
