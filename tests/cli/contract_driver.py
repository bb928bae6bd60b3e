"""Run many `roundoff` command lines, each in its own process, paying torch's import once.

Usage: ``python contract_driver.py < jobs.json``; each job is ``{"argv", "cwd", "out", "err"}``.
The driver imports the console script's function (`roundoff.cli.main.main`, what the ``roundoff``
entry point runs) and the modules it loads, then forks one child per job: the child changes to the
job's folder, points file descriptors 1 and 2 at the job's files, runs ``main()`` with the job's
argv and exits with its status as the interpreter would (SystemExit code; 1 and a traceback for an
uncaught exception). Two children run at a time. Prints one JSON list of exit statuses.
"""

from __future__ import annotations

import json
import os
import sys
import traceback


def _child(job: dict) -> None:
    os.chdir(job["cwd"])
    for fd, path in ((1, job["out"]), (2, job["err"])):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    sys.argv = ["roundoff", *job["argv"]]
    code = 1
    try:
        from roundoff.cli.main import main

        main()
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _status(raw: int) -> int:
    return os.WEXITSTATUS(raw) if os.WIFEXITED(raw) else 128 + os.WTERMSIG(raw)


def main() -> None:
    jobs = json.load(sys.stdin)
    import roundoff.analyze  # noqa: F401  (the modules every check loads, imported once)
    import roundoff.blame  # noqa: F401
    import roundoff.cli.checking  # noqa: F401
    import roundoff.cli.main  # noqa: F401
    import roundoff.report.html  # noqa: F401

    sys.stdout.flush()
    sys.stderr.flush()
    width = int(os.environ.get("CONTRACT_JOBS", "2"))
    running: dict[int, int] = {}
    status: list[int | None] = [None] * len(jobs)
    for i, job in enumerate(jobs):
        while len(running) >= width:
            pid, raw = os.wait()
            status[running.pop(pid)] = _status(raw)
        pid = os.fork()
        if pid == 0:
            _child(job)
        running[pid] = i
    while running:
        pid, raw = os.wait()
        status[running.pop(pid)] = _status(raw)
    print(json.dumps(status))


if __name__ == "__main__":
    main()
