"""The CLI's progress where stderr is no terminal: no bar, but a line naming the task under way every few
seconds (trial 89: `check -p inductor-cpu` on an unrolled BiGRU planned for minutes with nothing shown)."""

from __future__ import annotations

import io
import time

from rich.console import Console

from roundoff.cli.outputs import progress_display


def test_a_piped_progress_prints_the_task_under_way_until_it_ends() -> None:
    log = io.StringIO()
    console = Console(file=log, force_terminal=False, width=200)
    with progress_display(console, every_s=0.05) as bar:
        task = bar.add_task("checking model.py:loss under inductor-cpu", total=None)
        time.sleep(0.3)
        bar.update(task, description="blaming model.py:loss under inductor-cpu: 3 change set(s) tried")
        time.sleep(0.3)
    lines = log.getvalue().splitlines()
    assert any(line.endswith(": checking model.py:loss under inductor-cpu") for line in lines), lines
    assert lines[-1].endswith(": blaming model.py:loss under inductor-cpu: 3 change set(s) tried"), lines
    assert all(line.startswith("after ") and " s: " in line for line in lines), lines
    time.sleep(0.2)  # the heartbeat stops with the bar
    assert log.getvalue().splitlines() == lines


def test_a_terminal_gets_the_bar_and_no_lines() -> None:
    log = io.StringIO()
    console = Console(file=log, force_terminal=True, width=120)
    with progress_display(console, every_s=0.05) as bar:
        bar.add_task("checking", total=None)
        time.sleep(0.2)
    assert "after " not in log.getvalue()


def test_a_piped_progress_line_is_not_wrapped() -> None:
    """Trial 98: on an 80-column stderr log a blame progress line broke mid-sentence ("...tried,\nof 300
    candidate changes")."""
    log = io.StringIO()
    console = Console(file=log, force_terminal=False, width=80)
    what = "blaming user/t5_check.py:loss under eager: 160 change set(s) tried, of 300 candidate changes"
    with progress_display(console, every_s=0.05) as bar:
        bar.add_task(what, total=None)
        time.sleep(0.2)
    lines = log.getvalue().splitlines()
    assert lines and all(line.startswith("after ") and line.endswith(what) for line in lines), lines
