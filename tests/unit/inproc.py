"""The ``dfsbench`` command run in this process: what a test of the read-only commands on
many stores needs, without the second of a new interpreter importing the package each time.
The exit code and both streams are what a process of it would give; the signal handlers the
command installs are put back after it."""

from __future__ import annotations

import contextlib
import io
import signal
import subprocess
from typing import Any


def dfsbench(*args: str) -> subprocess.CompletedProcess[str]:
    from harness import cli

    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code: Any = cli.main(list(args))
            except SystemExit as exc:  # (argparse's --help and the like)
                code = exc.code
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler)
    return subprocess.CompletedProcess(["dfsbench", *args], int(code or 0), out.getvalue(), err.getvalue())
