"""The one user-facing error type, and its kinds.

Everything below the CLI raises a subclass of :class:`DfsbenchError`; the CLI catches it
once, prints the message and the hint, and picks the exit code.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

# what every message passes through on its way to a person: harness.system.secret puts its
# redaction here when it is imported (before any secret can be remembered), so no error
# text shows a secret
_redact: Callable[[str], str] = lambda text: text


def redact_with(redact: Callable[[str], str]) -> None:
    global _redact
    _redact = redact


class DfsbenchError(Exception):
    """An error a user can act on: what is wrong, and what to do about it."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        said = self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"
        for note in getattr(self, "__notes__", ()):  # (what went wrong on the way out: an undo that failed)
            said += f"\n  {note}"
        return _redact(said)


class BadInput(DfsbenchError):
    """The user's input (config, CLI, a tool output file) is wrong. Exit code 2."""

    exit_code = 2


class StoreUnwritable(BadInput):
    """The results store cannot take what a run measures (read-only, full, or damaged):
    the run stops; what it stored before stays. Exit code 2."""


class ToolError(DfsbenchError):
    """An external program failed. Carries argv, exit code and the tails of its output."""

    def __init__(self, argv: list[str], returncode: int | None, stdout: str, stderr: str,
                 hint: str | None = None, timed_out: bool = False) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.timed_out = timed_out
        what = "timed out" if timed_out else f"exited with code {returncode}"
        parts = [f"command {what}: {shlex.join(map(str, self.argv))}"]  # (as a person would paste it)
        for name, text in (("stderr", stderr), ("stdout", stdout)):
            tail = _tail(text)
            if tail:
                parts.append(f"  {name} (last lines):\n{tail}")
        super().__init__("\n".join(parts), hint)


class Hung(DfsbenchError):
    """A measuring tool or engine passed its deadline and was killed: its cell is recorded
    with the ``hung`` flag, and the run goes on."""


class NotReady(DfsbenchError):
    """A readiness wait ran out of time."""

    def __init__(self, awaited: str, waited: float, last_state: str, log_tail: str = "",
                 hint: str | None = None) -> None:
        parts = [f"timed out after {waited:.0f} s waiting for {awaited}",
                 f"  last state seen: {last_state or '(nothing)'}"]
        if log_tail:
            parts.append("  log tail:\n" + _indent(log_tail))
        super().__init__("\n".join(parts), hint)


def _tail(text: str, lines: int = 12) -> str:
    kept = [line for line in (text or "").rstrip().splitlines() if line.strip()][-lines:]
    return _indent("\n".join(kept)) if kept else ""


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())
