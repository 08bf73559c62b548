"""Mounts for a backend's ``open``: mount, remount and undo a FUSE client, each mount checked
in /proc/mounts and recorded in the cluster's ledger; a user's own mount, verified; and the
directory under a mount where a target's files go.

What a backend's ``open`` calls, in this order, each as a step of its attachment
(:class:`harness.api.attach.Attaching`, whose ``detach`` undoes them newest first)::

    client = FuseClients(cluster.ledger, cluster.clients, mnt, [*argv, str(mnt)], FSTYPE, log)
    # (two steps: the mount, then a Workspace under it; entry: the first host's /proc/mounts entry)
    entry, space = mounted_workspace(attach, client, cluster.clients, mnt, variant, "MyFS")
    ...  Target(..., path=space.path, remount=client.remount, remount_host=client.remount_on)

The pieces:

- :func:`mounted_workspace` — the usual two steps of an ``open``: the client mounted, and
  a fresh :class:`Workspace` under it, each a step of the attachment.

- :func:`find_mount` — the topmost /proc/mounts entry at exactly a mount point (of this
  machine, or of a client host: its own /proc/mounts), or None.
- :func:`verify_mount` — refuses a path that is not a mount point (a client that died leaves
  the empty directory: writing there would measure the local disk), a mount of another type
  than /proc/mounts should say, or one on the same device as its parent.
- :class:`FuseClient` — one FUSE client process on one host, in the foreground.
  ``mount()`` refuses a mount point that is a mount already, makes the directory, records
  in the ledger the mount (on this machine a ``mount`` entry; on another host the command
  that unmounts it there) and then the client process (by pid and start time here; by the
  command that stops it there), waits with a deadline until /proc/mounts shows the
  expected type at the mount point (the client's log tail in the error if it exits or
  the deadline passes), then checks it with :func:`verify_mount` and that it reports a
  capacity. A mount that fails undoes its own entries. ``unmount()`` undoes exactly those
  entries — the mount, then the process; for a client that no longer answers (hung or
  stopped), the process first, then the mount, then the system's ``evict`` of its
  session — and raises if any is left (it stays in the ledger for ``dfsbench lab down``).
  ``remount()`` is ``unmount()`` then ``mount()``: a fresh client process, its caches empty.
- :class:`FuseClients` — the same mount on every client host of a cluster (one
  :class:`FuseClient` per host). ``mount()`` mounts on each host in turn, and a failure
  unmounts the others; ``unmount()`` undoes them newest first, trying each;
  ``remount()`` remounts each host, ``remount_on(host)`` only that host's (a cache drop of
  one client). ``argv`` ends with the mount point, a word of its own.
- :class:`GivenMount` — a file system the user mounted on every client host: ``mount()``
  verifies it there (its type among those given, a separate device, a capacity) and
  records nothing; it is never unmounted or remounted (``owned`` is False: its client's
  cache cannot be dropped).
- :class:`Workspace` — a fresh, uniquely named directory under a mount where all of a
  target's files go. ``make()`` records its removal in the ledger (undone before any
  mount, while the mount still works) and then makes it; ``remove()`` removes it
  through the first client host whose mount answers, and forgets the record.

Each class's undo copes with a set-up that stopped part-way (it undoes what its own
entries say, and nothing when there are none), so an attachment may count it from before
it starts. Nothing here sweeps the host: only what was recorded is undone.
"""

from __future__ import annotations

import secrets
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from harness.errors import BadInput, DfsbenchError
from harness.system import proc
from harness.system.hosts import LOCAL, Host, MountEntry
from harness.system.ledger import Ledger

if TYPE_CHECKING:
    from harness.api.attach import Attaching

FUSE_SUPER_MAGIC = 0x65735546


def find_mount(path: Path, host: Host = LOCAL) -> MountEntry | None:
    """The last (topmost) /proc/mounts entry for exactly this mount point."""
    return host.mount_entry(path)


def verify_mount(path: Path, fstype: str, host: Host = LOCAL) -> MountEntry:
    """Refuse a path that is not a mount of ``fstype`` (e.g. a FUSE client that died and
    left the empty directory, which would silently measure the local disk)."""
    where = path if host.local else f"{host.name}:{path}"
    entry = host.mount_entry(path)
    if entry is None:
        raise DfsbenchError(f"{where} is not a mount point: writing there would measure the local disk",
                            hint=f"expected a '{fstype}' mount; check the client log")
    if entry.fstype != fstype:
        raise DfsbenchError(f"{where} is mounted as '{entry.fstype}', not '{fstype}'",
                            hint="the target is not the file system it claims to be")
    if host.device_of(path) == host.device_of(path.parent):
        raise DfsbenchError(f"{where} has the same device as its parent: not a separate mount")
    return entry


class FuseClient:
    """A FUSE client process we start in the foreground, recorded in the ledger.

    ``mount()`` waits until /proc/mounts shows the expected type at the mount point;
    ``unmount()`` undoes only what this client created. Remounting gives a fresh client
    process with empty caches.

    ``evict(host, pid)`` is called once a client that did not answer (stopped, hung or
    dead) is gone (``pid``: the client's on that host): a system whose servers hold a client's locks until its session
    times out (CephFS's MDS, its caps: 60 s) lets them go at once, so the removal of the
    client's files through another client does not wait on them.
    """

    def __init__(self, ledger: Ledger, mountpoint: Path, argv: list[str], fstype: str,
                 log: Path, timeout: float = 60, host: Host = LOCAL,
                 evict: Callable[[Host, int], None] | None = None) -> None:
        self.ledger, self.mountpoint, self.argv = ledger, mountpoint, argv
        self.fstype, self.log, self.timeout, self.host = fstype, log, timeout, host
        self.evict = evict
        self.pid: int | None = None  # the client's, on its host
        self._mine: frozenset[str] | None = None

    def mount(self) -> MountEntry:
        host = self.host
        if host.mount_entry(self.mountpoint) is not None:
            raise DfsbenchError(f"{self.mountpoint} on {host.name} is already a mount point; "
                                "not mounting over it")
        host.mkdir(self.mountpoint)
        died = None
        with self.ledger.capture() as mine:
            try:  # (the mount's undo first: it must come before the client's stop)
                host.record_mount(self.ledger, self.mountpoint)
                self.pid, died = host.start_daemon(self.argv, self.log, self.ledger,
                                         f"{Path(self.argv[0]).name} {self.mountpoint.name}", grace=15)
            finally:
                self._mine = frozenset(mine)

        def mounted() -> tuple[bool, str]:
            entry = host.mount_entry(self.mountpoint)
            return entry is not None and entry.fstype == self.fstype, \
                f"{entry.fstype} mount" if entry else "not mounted yet"

        try:
            proc.wait_for(mounted, what=f"a {self.fstype} mount at {self.mountpoint}",
                          timeout=self.timeout, interval=0.05, alive=died,
                          log=lambda: host.tail(self.log))  # (read on its host, this one or another)
            entry = verify_mount(self.mountpoint, self.fstype, host)
            if host.capacity(self.mountpoint) == 0:
                raise DfsbenchError(f"{self.mountpoint} reports no capacity")
        except BaseException:
            self.unmount()
            raise
        return entry

    def unmount(self) -> None:
        if self._mine is None:
            return
        # a client that stopped answering is stopped before its mount is undone: while it
        # is there (even stopped), the unmount waits on it
        hung = self.host.answers(self.mountpoint, 5) is not None
        problems = self.ledger.undo(only=self._mine, daemons_first=hung)
        self._mine = None
        pid, self.pid = self.pid, None
        if hung and self.evict is not None and pid is not None:
            try:
                self.evict(self.host, pid)
            except DfsbenchError:
                pass  # (a key without that right: the removal that follows waits out the session)
        if problems:
            raise DfsbenchError("could not detach cleanly: " + "; ".join(problems))

    def remount(self) -> None:
        self.unmount()
        self.mount()


class FuseClients:
    """The same FUSE mount on every client host of a cluster (one on this machine; one per
    client node of a lab). Workloads with one client use the first; fio in client/server
    mode uses them all. A remount remounts each, so no client keeps a cache."""

    def __init__(self, ledger: Ledger, hosts: tuple[Host, ...], mountpoint: Path, argv: list[str],
                 fstype: str, log: Path, timeout: float = 60,
                 evict: Callable[[Host, int], None] | None = None) -> None:
        self.argv = argv  # (its last word is the mount point)
        self.clients = [FuseClient(ledger, mountpoint, argv, fstype, log, timeout, host, evict)
                        for host in hosts]

    def mount(self) -> MountEntry:
        """Mount on each host; the first host's entry. A failure unmounts the others."""
        entries = []
        try:
            for client in self.clients:
                entries.append(client.mount())
        except BaseException:
            self.unmount()
            raise
        return entries[0]

    def unmount(self) -> None:
        problems = []
        for client in reversed(self.clients):
            try:
                client.unmount()
            except DfsbenchError as exc:
                problems.append(f"{client.host.name}: {exc.message}")
        if problems:
            raise DfsbenchError("; ".join(problems))

    def remount(self) -> None:
        for client in self.clients:
            client.remount()

    def remount_on(self, host: Host) -> None:
        for client in self.clients:
            if client.host is host:
                client.remount()

    owned = True


class GivenMount:
    """A file system the user has mounted on every client host (not dfsbench's: it is
    never unmounted or remounted, so its client's own cache cannot be dropped)."""

    owned = False

    def __init__(self, hosts: tuple[Host, ...], mountpoint: Path, fstypes: tuple[str, ...], system: str) -> None:
        self.hosts, self.mountpoint, self.fstypes, self.system = hosts, mountpoint, fstypes, system

    def mount(self) -> MountEntry:
        """Verify the mount on every host; the first host's entry."""
        entries = []
        for host in self.hosts:
            where = f"{host.name}:{self.mountpoint}"
            entry = host.mount_entry(self.mountpoint)
            if entry is None or entry.fstype not in self.fstypes:
                seen = f"a '{entry.fstype}' mount" if entry else "not a mount point (the local disk)"
                raise BadInput(f"{where} is {seen}, not the {self.system} the config says is mounted there "
                               f"({' or '.join(self.fstypes)})",
                               hint="writing there would not measure that system: mount it there, or let "
                                    "dfsbench mount it (leave out 'mounted')")
            if host.device_of(self.mountpoint) == host.device_of(self.mountpoint.parent):
                raise BadInput(f"{where} has the same device as its parent: not a separate mount")
            if host.capacity(self.mountpoint) == 0:
                raise BadInput(f"{where} reports no capacity: its client is dead")
            entries.append(entry)
        return entries[0]

    def unmount(self) -> None:
        pass


class Workspace:
    """A fresh, uniquely named directory under a mount, where every file of a target goes
    (the only thing under the mount that its detach removes). It is in the ledger from
    before it exists, undone before any mount (so while its mount still works), so a run
    that crashed leaves nothing in the user's file system after 'lab down'."""

    def __init__(self, ledger: Ledger, hosts: tuple[Host, ...], mount: Path, variant: str,
                 client: list[str] | None = None) -> None:
        self.ledger, self.hosts, self.client, self.mount = ledger, hosts, client, mount
        self.path = mount / f"dfsbench-{variant}-{secrets.token_hex(4)}"
        self._id: str | None = None  # its record in the ledger, once made

    def make(self) -> None:
        """Record its removal, then make it (through the first client host)."""
        self._id = self.ledger.command(self.undo_argv(self.mount), f"directory {self.path} in the file system "
                                       f"at {', '.join(h.name for h in self.hosts)}:{self.mount}", when="first")
        self.hosts[0].run(["mkdir", str(self.path)], timeout=60)  # not -p: it must be new

    def undo_argv(self, mount: Path) -> list[str]:
        """Remove the directory through the first client host that has the file system
        mounted; after a crash every one may have been between an unmount and a mount (a
        cache drop), so then through a client started for it on a mount point of its own
        (``client``: a FUSE client's argv, in the foreground, without its mount point); if
        that cannot be, fail saying so — never 'remove' it from an empty mount point."""
        guarded = ["sh", "-c", 'mountpoint -q "$1" || exit 3; rm -rf --one-file-system "$2"', "sh",
                   str(mount), str(self.path)]
        tries = [shlex.join(h.wrap(guarded)) for h in self.hosts]
        if self.client:
            mounted = ('t=$(mktemp -d); "$@" "$t" > /dev/null 2>&1 & p=$!; i=0; '
                       'while ! mountpoint -q "$t" && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; '
                       'mountpoint -q "$t" || { kill $p; rmdir "$t"; exit 3; }; '
                       f'rm -rf --one-file-system "$t"/{shlex.quote(self.path.name)}; r=$?; '
                       'umount "$t"; wait $p; rmdir "$t"; exit $r')
            tries.append(shlex.join(self.hosts[0].wrap(["sh", "-c", mounted, "sh", *self.client])))
        tries_text = " || ".join(tries)
        why = shlex.quote(f"no client host has {mount} mounted: remove {self.path.name} from "
                          f"the top of that file system by hand")
        return ["sh", "-c", f"{tries_text} || {{ echo {why} >&2; exit 1; }}"]

    def remove(self) -> None:
        """From the first client host whose mount still works (a client that died must
        not leave it in the user's file system). Nothing, if it was never made."""
        made = self._id
        if made is None:
            return
        problems = []
        for host in self.hosts:
            try:
                host.remove(self.path)
                self.ledger.forget(frozenset({made}))
                self._id = None
                return
            except DfsbenchError as exc:
                problems.append(f"{host.name}: {exc.message.splitlines()[0]}")
        raise DfsbenchError(f"could not remove {self.path} from the file system: " + "; ".join(problems),
                            hint="remove that directory by hand from any client")


class Mountable(Protocol):
    """What mounts a file system on the client hosts: a FUSE client, the kernel's, a user's mount."""

    def mount(self) -> MountEntry: ...

    def unmount(self) -> None: ...


def mounted_workspace(attach: Attaching, client: Mountable, hosts: tuple[Host, ...], mount: Path, variant: str,
                      what: str) -> tuple[MountEntry, Workspace]:
    """``client`` mounted at ``mount`` and a fresh :class:`Workspace` under it, each a step of
    ``attach`` (undone by the client's unmount, and by the workspace's removal, through a
    client started for it where ``client`` is a FUSE client of dfsbench's)."""
    with attach.step(f"{what} at {mount}", client.unmount):
        entry = client.mount()
    space = Workspace(attach.ledger, hosts, mount, variant, client.argv[:-1] if isinstance(client, FuseClients) else None)
    with attach.step(f"directory {space.path}", space.remove):
        space.make()
    return entry, space
