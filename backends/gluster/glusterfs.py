"""Backend ``glusterfs``: a GlusterFS volume mounted with its FUSE client.

With no options it mounts the environment's volume (in the local lab: replica 3 over 3
bricks, the single-set version of the report's vr33). With ``layout`` (and optionally
``bricks``, ``replica``, ``redundancy``) or ``volume_options``, it creates a volume of
its own for the length of the attachment — on the local lab's glusterd, or on the
glusterds of a container lab's storage nodes (bricks in directories of their own on the
nodes' brick volumes, one node per brick of a set) — so one run can compare replicate,
distributed-replicate and disperse, or default against tuned options. The
report's ``stripe 3 replica 3`` type was removed in Gluster 6; distributed-replicate and
disperse are its modern stand-ins.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from backends.gluster.client import FSTYPE, HONEST_OPTIONS, GlusterCli, GlusterService, Layout, NodeVolume, Volume, options_for
from backends.gluster.system import Gluster
from harness.api.attach import Attaching
from harness.api.contracts import Backend, Cluster, OptionKey, Options, OptionValue, option_key
from harness.api.mounts import FuseClients, GivenMount, mounted_workspace
from harness.api.tables import CLIENT, FS_TYPE, REPLICAS, VERSION, Placement, phrases
from harness.api.target import Target
from harness.errors import DfsbenchError
from harness.system.hosts import MountEntry

# a 'gluster volume set' key (gluster volume set help lists them): performance.*, cluster.*, …
GlusterOptionKey = Annotated[OptionKey, option_key(
    "performance|cluster|network|features|client|server|storage|diagnostics|transport|disperse|"
    "nfs|config|locks|dht|ctime|auth", ".", r"file|path|script|command|hook", "gluster")]

DEFAULT_BRICKS = {"replicate": 3, "distributed-replicate": 6, "disperse": 3}
STRIPE_NOTE = ("the 2014 report's 'stripe 3 replica 3' type was removed in Gluster 6; "
               "distributed-replicate and disperse are its modern stand-ins")


class GlusterOptions(Options):
    layout: Literal["replicate", "distributed-replicate", "disperse"] | None = Field(
        None, description="create a volume of this type (default: use the environment's volume)")
    bricks: int | None = Field(None, ge=1, le=48, description="bricks of the created volume "
                               "(default: 3 replicate, 6 distributed-replicate, 3 disperse)")
    replica: int = Field(3, ge=1, le=12, description="copies of each file in the created volume (with type)")
    redundancy: int = Field(1, ge=1, le=16, description="disperse: bricks that may fail")
    volume_options: dict[GlusterOptionKey, OptionValue] = Field({}, description="'gluster volume set' options, e.g. "
                                           "performance.cache-size: 256MB")

    @model_validator(mode="after")
    def _shape(self) -> GlusterOptions:
        if self.layout is not None:
            try:
                Layout(self.layout, self.replica, self.redundancy).create_args(self.brick_count)
            except DfsbenchError as exc:
                raise ValueError(exc.message) from None
        return self

    @property
    def brick_count(self) -> int:
        return self.bricks or DEFAULT_BRICKS.get(self.layout or "replicate", 3)

    @property
    def own_volume(self) -> bool:
        return self.layout is not None or bool(self.volume_options)


class GlusterFS(Backend):
    name = "glusterfs"
    display = "GlusterFS"
    network = True
    requires = frozenset({"gluster"})
    tools = (("glusterfs", "glusterfs-client"),)
    suites = {"report": 0, "full": 0}
    settings = ("volume_options",)
    topology = ("volume_type", "bricks", "redundancy", "volume_options")

    @classmethod
    def placement(cls, description: dict[str, Any]) -> Placement:
        return Gluster.placement(description)

    @classmethod
    def summary(cls, description: dict[str, Any]) -> tuple[str, ...]:
        return phrases(description, VERSION, ("volume_type", "{volume_type}"), REPLICAS, CLIENT, FS_TYPE)

    @classmethod
    def layout(cls, description: dict[str, Any]) -> Any:
        info = (description.get("cluster") or {}).get("volume_info") or {}
        return {k: info.get(k) for k in ("type", "replica", "disperse", "redundancy")} if info else None

    Options = GlusterOptions
    options: GlusterOptions

    def creates(self) -> str:
        return "a volume" if self.options.own_volume else ""

    def open(self, cluster: Cluster, workdir: Path) -> Target:
        info = cluster.service("gluster", GlusterService, self.name)
        if not info.mounted:
            cluster.clients[0].require("glusterfs", "glusterfs-client")
        volume = self._volume(cluster, info, workdir)
        client, mnt = self._client(cluster, info, volume, workdir)
        with Attaching(cluster.ledger, f"glusterfs/{self.variant}") as attach:
            if volume is not None:
                with attach.step(f"volume {volume.name}", volume.delete):
                    volume.create()
                    volume.start()
            entry, space = mounted_workspace(attach, client, cluster.clients, mnt, self.variant, "GlusterFS")
            owned = isinstance(client, FuseClients)
            return Target("path", space.path, self.name, self.variant,
                          self._described(cluster, info, volume, entry, owned),
                          remount=client.remount if isinstance(client, FuseClients) else None,
                          remount_host=client.remount_on if isinstance(client, FuseClients) else None,
                          cache_kept=not owned, detach=attach.detach, server_host=info.host,
                          backing=Path(info.backing) if info.backing else None, host=cluster.clients[0],
                          hosts=cluster.clients, server=cluster.servers.get(info.host))

    def _client(self, cluster: Cluster, info: GlusterService, volume: Volume | NodeVolume | None,
                workdir: Path) -> tuple[FuseClients | GivenMount, Path]:
        """What mounts the volume on the client hosts, and where: the user's mount of the
        environment's volume, or a glusterfs client of dfsbench's."""
        if info.mounted and volume is None:
            return GivenMount(cluster.clients, Path(info.mounted), (FSTYPE,), "GlusterFS volume"), Path(info.mounted)
        mnt = workdir / "glusterfs"
        argv = ["glusterfs", "-N", f"--volfile-server={info.host}",
                f"--volfile-id={volume.name if volume else info.volume}",
                f"--log-file={workdir / 'log' / 'glusterfs-client.log'}", str(mnt)]
        return FuseClients(cluster.ledger, cluster.clients, mnt, argv, FSTYPE,
                           workdir / "log" / "glusterfs-client.stdout"), mnt

    def _volume(self, cluster: Cluster, info: GlusterService, workdir: Path) -> Volume | NodeVolume | None:
        """The volume of its own it creates (on the glusterd of a lab: this machine's, or the
        storage nodes'), not created yet; None: it mounts the environment's."""
        o = self.options
        nodes = [(h, cluster.servers[h]) for h in info.brick_hosts if h in cluster.servers]
        on_nodes = bool(info.brick_root) and bool(nodes) and len(nodes) == len(info.brick_hosts)
        if o.own_volume and not info.socket and not on_nodes:
            raise DfsbenchError(f"glusterfs options 'layout' and 'volume_options' create a volume on "
                                f"the glusterd of a lab, and environment '{cluster.environment}' "
                                "has none dfsbench may create volumes on",
                                hint="leave them out to use the environment's volume")
        if not o.own_volume:
            return None
        layout = Layout(o.layout or "replicate", o.replica, o.redundancy)
        name = f"dfsbench-{self.variant}-{secrets.token_hex(2)}"
        if info.socket:
            cli = GlusterCli.on_socket(Path(info.socket), workdir / "log" / "cli.log")
            return Volume(cli, cluster.ledger, Path(info.socket).parent, name, info.host,
                          [workdir / "bricks" / f"b{i}" for i in range(o.brick_count)], layout, o.volume_options)
        # the lab volume's options (honest, and how soon a node lost is noticed), then its own
        lab_options = options_for(layout, {**HONEST_OPTIONS, **(info.volume_options or {})})
        return NodeVolume(nodes, cluster.ledger, info.brick_root, name, layout, o.brick_count,
                          {**lab_options, **o.volume_options})

    def _described(self, cluster: Cluster, info: GlusterService, volume: Volume | NodeVolume | None,
                   entry: MountEntry, owned: bool) -> dict[str, Any]:
        """The target's description: the volume (the environment's, or its own), the mount
        as /proc/mounts shows it."""
        o = self.options
        volume_type, bricks, replicas, redundancy = info.volume_type, len(info.bricks), info.replica, info.redundancy
        volume_options, storage_nodes = info.volume_options or {}, info.storage_nodes
        if volume is not None:
            volume_type, bricks, volume_options = volume.layout.kind, o.brick_count, volume.options
            replicas = o.replica if volume.layout.kind != "disperse" else None
            redundancy = o.redundancy
            # (a volume on this machine's glusterd is on its one host)
            storage_nodes = volume.storage_nodes if isinstance(volume, NodeVolume) else 1
        description: dict[str, Any] = {
            "system": "glusterfs", "client": "glusterfs (FUSE)", "version": info.version,
            "volume": volume.name if volume else info.volume, "volume_type": volume_type, "replicas": replicas,
            "bricks": bricks, "fs_type": entry.fstype, "mount_options": entry.options,
            "environment": cluster.environment, "note": STRIPE_NOTE,
            "mounted_by": "dfsbench" if owned else "the user", "storage_nodes": storage_nodes,
        }
        if info.cluster:
            description["cluster"] = info.cluster
        if volume_type == "disperse":
            description["redundancy"] = redundancy
        if volume_options:
            description["volume_options"] = dict(volume_options)
        return description
