"""Mounts: read /proc/mounts, verify a mount is what it claims, run a FUSE client we own."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from harness import proc
from harness.errors import DfsbenchError
from harness.ledger import Ledger, read_mounts

FUSE_SUPER_MAGIC = 0x65735546


@dataclass(frozen=True)
class MountEntry:
    source: str
    path: str
    fstype: str
    options: str


def find_mount(path: Path) -> MountEntry | None:
    """The last (topmost) /proc/mounts entry for exactly this mount point."""
    found = None
    for source, point, fstype, options in read_mounts():
        if point == str(path):
            found = MountEntry(source, point, fstype, options)
    return found


def verify_mount(path: Path, fstype: str) -> MountEntry:
    """Refuse a path that is not a mount of ``fstype`` (e.g. a FUSE client that died and
    left the empty directory, which would silently measure the local disk)."""
    entry = find_mount(path)
    if entry is None:
        raise DfsbenchError(f"{path} is not a mount point: writing there would measure the local disk",
                            hint=f"expected a '{fstype}' mount; check the client log")
    if entry.fstype != fstype:
        raise DfsbenchError(f"{path} is mounted as '{entry.fstype}', not '{fstype}'",
                            hint="the target is not the file system it claims to be")
    if os.stat(path).st_dev == os.stat(path.parent).st_dev:
        raise DfsbenchError(f"{path} has the same device as its parent: not a separate mount")
    return entry


class FuseClient:
    """A FUSE client process we start in the foreground, recorded in the ledger.

    ``mount()`` waits until /proc/mounts shows the expected type at the mount point;
    ``unmount()`` undoes only what this client created. Remounting gives a fresh client
    process with empty caches.
    """

    def __init__(self, ledger: Ledger, mountpoint: Path, argv: list[str], fstype: str,
                 log: Path, timeout: float = 60) -> None:
        self.ledger, self.mountpoint, self.argv = ledger, mountpoint, argv
        self.fstype, self.log, self.timeout = fstype, log, timeout
        self._mine: frozenset[str] | None = None

    def mount(self) -> MountEntry:
        if find_mount(self.mountpoint) is not None:
            raise DfsbenchError(f"{self.mountpoint} is already a mount point; not mounting over it")
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        before = self.ledger.ids()
        client = proc.spawn(self.argv, self.log)
        try:
            self.ledger.process(client.pid, f"{Path(self.argv[0]).name} {self.mountpoint.name}",
                                grace=15)
        finally:
            self.ledger.mount(self.mountpoint)
            self._mine = self.ledger.ids() - before

        def died() -> str | None:
            return None if client.poll() is None else f"the client exited with code {client.returncode}"

        def mounted() -> tuple[bool, str]:
            entry = find_mount(self.mountpoint)
            return entry is not None and entry.fstype == self.fstype, \
                f"{entry.fstype} mount" if entry else "not mounted yet"

        try:
            proc.wait_for(mounted, what=f"a {self.fstype} mount at {self.mountpoint}",
                          timeout=self.timeout, interval=0.05, alive=died, log=self.log)
            entry = verify_mount(self.mountpoint, self.fstype)
            if os.statvfs(self.mountpoint).f_blocks == 0:
                raise DfsbenchError(f"{self.mountpoint} reports no capacity")
        except BaseException:
            self.unmount()
            raise
        return entry

    def unmount(self) -> None:
        if self._mine is None:
            return
        problems = self.ledger.undo(only=self._mine)
        self._mine = None
        if problems:
            raise DfsbenchError("could not detach cleanly: " + "; ".join(problems))

    def remount(self) -> None:
        self.unmount()
        self.mount()
