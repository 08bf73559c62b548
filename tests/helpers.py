"""What the unit and the integration tests both need: the ``dfsbench`` command in a process
of its own. (A module, not a test module: tests import it; conftest.py holds the fixtures.)"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def dfsbench(*args: str, env: Mapping[str, str] | None = None, timeout: float = 600,
             cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m harness.cli ARGS`` as a user runs it: its exit code, and its stdout and
    stderr as text. ``env`` is added to this process's environment (a lab or results
    directory of the test's own), not put in its place; ``timeout`` (seconds) fails the test
    with subprocess.TimeoutExpired; ``cwd`` is where it runs (default: here). Its exit code
    is the test's to check."""
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          env=None if env is None else {**os.environ, **env}, timeout=timeout, cwd=cwd)
