"""A lease on a lab: one dfsbench process uses (or brings up, or takes down) a lab at a time.

The lease is a lock file in the lab's directory that its holder keeps ``flock``'d from the
moment it takes the lease to the moment it lets go: taking it is one system call that
either process wins, and the kernel lets go of a holder that dies (kill -9 included), so
no crash can leave a lab locked. The lock alone decides who holds the lease. Who holds it
— what (a run and its id, ``lab up``), its pid and the start time of that process — goes
into the lab's ledger, where a later process reads it only to name the holder in a
refusal: a holder the ledger names while nobody holds the lock (a crashed holder's, or one
written by hand) holds nothing, and the next to take the lock writes itself over it.
"""

from __future__ import annotations

import fcntl
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.system import files, proc
from harness.units import moment


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) a lease: what it is (``run 20261128-…``, ``lab up``), its process
    by pid and start time, and since when (seconds since the epoch)."""

    what: str
    pid: int
    start: int
    since: float

    @classmethod
    def me(cls, what: str) -> Holder:
        ident = proc.ProcessId.of(os.getpid())
        assert ident is not None  # (this process runs)
        return cls(what, ident.pid, ident.start_ticks, time.time())

    @classmethod
    def read(cls, saved: object) -> Holder | None:
        """The holder a ledger names, or None where it names none (or what it holds is not one)."""
        if not isinstance(saved, dict):
            return None
        what, pid, start, since = (saved.get(k) for k in ("what", "pid", "start", "since"))
        if not (isinstance(what, str) and type(pid) is int and type(start) is int
                and isinstance(since, (int, float)) and not isinstance(since, bool)):
            return None
        return cls(what, pid, start, float(since))

    def saved(self) -> dict[str, Any]:
        return asdict(self)

    def alive(self) -> bool:
        """Whether its process still runs (the same process: a pid used again is not it)."""
        return proc.ProcessId(self.pid, self.start).alive()

    def __str__(self) -> str:  # (what a ledger says is shown escaped: another process wrote it)
        return f"{files.printable(self.what, 80)} (pid {self.pid}, since {moment(self.since)})"


class LeaseLock:
    """The lock file of a lease: :meth:`take` flocks it without waiting; :meth:`release`
    removes it and lets go. A process that opened the file before its holder removed it
    and then won the lock holds a file no other process will open: it finds that out
    (the path is another file, or none) and opens the path anew."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def take(self) -> bool:
        """Take the lock if no other process holds it (True), else False at once."""
        assert self._fd is None, "taken twice"
        for _ in range(100):  # (each turn: a holder removed the file between our open and our lock)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self._fd = fd
                return True
            os.close(fd)
        raise OSError(f"the lease file {files.printable(self.path)} keeps being replaced")

    @staticmethod
    def taken(path: Path) -> bool:
        """Whether some process (this one included) holds the lock at ``path`` now; asked
        without waiting, and without making the file or taking the lock from its next taker
        for longer than the asking."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # (closing it lets go of a shared lock taken)
        return False

    def release(self) -> None:
        """Remove the lock file (while it is still held: no process can take a removed one)
        and let go."""
        if self._fd is None:
            return
        try:
            if os.stat(self.path).st_ino == os.fstat(self._fd).st_ino:
                os.unlink(self.path)
        except FileNotFoundError:  # (the lab's directory went, the file with it)
            pass
        finally:
            os.close(self._fd)
            self._fd = None
