"""Progress on long steps: a live spinner with elapsed time on a terminal, plain
timestamped lines otherwise (CI logs). Always on stderr, so stdout stays for results."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console
from rich.text import Text

from harness.system.files import printable
from harness.system.secret import redact


def _shown(text: str) -> str:
    """A note as shown: secrets redacted, and each line's control characters escaped (a note
    names a stranger's strings: a job, a host, a label); its line breaks kept."""
    return "\n".join(printable(line, 1 << 20) for line in redact(text).split("\n"))


class Progress:
    def __init__(self, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        # what it shows names stored and configured things (a run id, a job, a host): plain
        # text, never rich's markup or emoji codes (harness.report.render does the same)
        self.console = Console(file=self.stream, highlight=False, markup=False, emoji=False)
        self.live = self.console.is_terminal and not quiet
        self.quiet = quiet
        self.t0 = time.monotonic()

    def _stamp(self) -> str:
        return f"[{time.monotonic() - self.t0:7.1f}s]"

    def note(self, text: str) -> None:
        if not self.quiet:
            # one line per note: a log is read (and grepped) by line, whatever its width
            self.console.print(f"{self._stamp()} {_shown(text)}", soft_wrap=True)

    @contextmanager
    def step(self, text: str) -> Iterator[None]:
        """Show ``text`` while the block runs, then how long it took (or that it failed)."""
        start = time.monotonic()
        try:
            if self.live:
                with self.console.status(Text(f"{_shown(text)} …"), spinner="dots"):  # (a str is markup there)
                    yield
            else:
                self.note(f"{text} …")
                yield
        except BaseException:
            self.note(f"✗ {text} (failed after {time.monotonic() - start:.1f} s)")
            raise
        self.note(f"✓ {text} ({time.monotonic() - start:.1f} s)")
