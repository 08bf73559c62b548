"""What a backend hands to workloads: a Target of a kind (a mounted path, a block device,
an image or pool reached through a client library), where its client runs, and how to
drop every cache between a workload and the storage."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from harness.errors import BadInput, DfsbenchError
from harness.system.hosts import LOCAL, Host

A = TypeVar("A", bound="Access")


@dataclass(frozen=True)
class Access:
    """How a workload reaches a target that is not a path: each kind of target has its own
    (a ``block`` target a :class:`BlockAccess`; a kind a plugin adds, the access that
    plugin defines and its workloads read with :meth:`Target.reach`)."""


@dataclass(frozen=True)
class BlockAccess(Access):
    """How a workload reaches a ``block`` target."""

    device: str
    destructive_ok: bool = False  # only the user's explicit 'allow_destructive: true' sets it


@dataclass
class Target:
    """What a backend hands to workloads, by kind:

    - ``path``: a verified mount (or a local directory); ``path`` is where to work.
    - ``block``: a block device, reached through ``access`` (a :class:`BlockAccess`).
    - any other kind a plugin declares (an image or a pool reached through a client
      library): ``access`` is that kind's own :class:`Access`.

    ``server_host`` (where the client's traffic goes) and ``backing`` (the storage under
    the cluster's daemons) are what the network and raw-storage baselines measure.
    ``description`` is the topology stored with the run (versions, replicas, client,
    options): for people and for the comparability checks, not for workloads to read.
    """

    kind: str
    path: Path | None
    backend: str
    variant: str
    description: dict[str, Any] = field(default_factory=dict)
    remount: Callable[[], None] | None = None  # a fresh client, its caches gone
    detach: Callable[[], None] | None = None  # undo what open() created
    access: Access | None = None
    server_host: str | None = None
    backing: Path | None = None
    host: Host = LOCAL  # where the client runs: paths are this host's, tools run through it
    # where dfsbench may start a server to measure the path to ``server_host`` (iperf3):
    # None where it cannot (this machine's loopback needs none)
    server: Host | None = None
    # every client host with this target attached (fio client/server runs one server on each)
    hosts: tuple[Host, ...] = ()
    remount_host: Callable[[Host], None] | None = None  # a fresh client on one of the hosts
    # the client keeps a cache of its own that drop_caches does not reach, and dfsbench cannot
    # remount it (a FUSE mount the user made): reads after a "cache drop" may come from it
    cache_kept: bool = False
    # what workloads did to this attachment: it lives and dies with the attachment, so the
    # new image or device of a later repeat starts empty and is written again before reads
    filled_bytes: int = 0

    @property
    def key(self) -> str:
        return f"{self.backend}/{self.variant}"

    def on(self, host: Host) -> Target:
        """The same attachment as seen from another of its client hosts: paths and tools
        there, and a cache drop that remounts only that host's client (so the others,
        running at the same time, keep theirs)."""
        remount = self.remount
        if self.remount_host is not None:
            remount_host = self.remount_host
            remount = lambda: remount_host(host)  # noqa: E731
        return replace(self, host=host, hosts=(host,), remount=remount, detach=None)

    @property
    def directory(self) -> Path:
        """Where a file workload works: only ``path`` targets have one."""
        if self.kind != "path" or self.path is None:
            raise DfsbenchError(f"{self.key} is a {self.kind} target, not a mounted file system")
        return self.path

    @property
    def block(self) -> BlockAccess:
        if not isinstance(self.access, BlockAccess):
            raise DfsbenchError(f"{self.key} is a {self.kind} target, not a block device")
        return self.access

    def reach(self, kind: type[A]) -> A:
        """The target's access of that type, or an error saying the target is not one."""
        if not isinstance(self.access, kind):
            raise DfsbenchError(f"{self.key} is a {self.kind} target, not one reached through "
                                f"{kind.__name__}")
        return self.access

    def stored_description(self) -> dict[str, Any]:
        """The description as stored with the run: the topology, plus where the traffic
        goes and what storage is under it."""
        return {**self.description, "server_host": self.server_host,
                "backing": str(self.backing) if self.backing else None,
                "client_host": self.host.label, "client_hosts": len(self.hosts) or 1}

    def drop_caches(self) -> str:
        """Flush and forget every cache between the workload and the storage: sync, then
        remount the client (a FUSE client's own cache — ceph-fuse's object cache, Gluster's
        io-cache and read-ahead — survives ``drop_caches``), then drop the kernel's page
        cache on the client host.

        Returns how it was done ("sync+remount+drop_caches"), recorded with the measurement.
        """
        steps = ["sync"]
        if self.remount is not None:
            self.remount()
            steps.append("remount")
        elif self.cache_kept:  # a FUSE client the user mounted: its own cache stays (and is said)
            steps.append("client-cache-kept")
        # a container cannot write drop_caches: the kernel's page cache is then kept (and said)
        steps.append("drop_caches" if self.host.drop_caches() else "no-drop_caches")
        return "+".join(steps)

    def require_destructive(self, workload: str) -> None:
        """Refuse to write to a raw device unless the user allowed it in so many words."""
        if not self.block.destructive_ok:
            raise BadInput(f"{workload} would write to the raw device {self.block.device} "
                           f"of backend {self.key}, which destroys what is on it",
                           hint="set 'allow_destructive: true' in that backend's options if "
                                "its contents may be lost")


