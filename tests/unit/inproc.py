"""The ``dfsbench`` command run in this process: what a test of the read-only commands on
many stores needs, without the second of a new interpreter importing the package each time.
The exit code and both streams are what a process of it would give; the signal handlers the
command installs are put back after it, and a command that takes longer than a process of
it was given (120 s) fails the test. ``run`` — which would start a benchmark inside the test
worker if a refusal it is tested for regressed — runs in a process of its own, as before."""

from __future__ import annotations

import contextlib
import io
import signal
import subprocess
from typing import Any

from tests import helpers

LIMIT_S = 120


class TookTooLong(BaseException):
    """(Not an Exception: nothing the command catches can take it for an error of its own.)"""


def dfsbench(*args: str) -> subprocess.CompletedProcess[str]:
    if args[:1] == ("run",):
        return helpers.dfsbench(*args, timeout=LIMIT_S)
    from harness import cli

    def too_long(signum: int, frame: Any) -> None:
        raise TookTooLong(f"dfsbench {' '.join(args)[:200]} took more than {LIMIT_S} s")

    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)}
    out, err = io.StringIO(), io.StringIO()
    signal.signal(signal.SIGALRM, too_long)
    signal.alarm(LIMIT_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code: Any = cli.main(list(args))
            except SystemExit as exc:  # (argparse's --help and the like)
                code = exc.code
    finally:
        signal.alarm(0)
        for s, handler in handlers.items():
            signal.signal(s, handler)
    return subprocess.CompletedProcess(["dfsbench", *args], int(code or 0), out.getvalue(), err.getvalue())
