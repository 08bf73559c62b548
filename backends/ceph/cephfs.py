"""Backend ``cephfs``: the CephFS of a cluster, mounted with the kernel client where the
client host's kernel has it, else with ceph-fuse (``client`` chooses). /proc/mounts must
then say ``ceph`` or ``fuse.ceph-fuse`` at the mount point before any workload runs. The
machines this was built on have no kernel Ceph module: there it is always ceph-fuse.

``replicas`` puts the workloads' files in a data pool of that size (created, added to
the file system, and set as the layout of the directory the workloads use), so a variant
can compare replica counts; ``ec: {k: 2, m: 1}`` puts them in an erasure-coded data pool
of their own the same way (``backends.ceph.client.EcPool``). ``client_options`` are Ceph client settings given to
ceph-fuse (e.g. ``client_oc_size``), for default-vs-tuned variants as in seed 001.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from backends.ceph.client import (EC_DESCRIPTION, CephBackend, CephCli, CephService, EcPool, ErasureCode, Pool,
                                  PoolOptions, ec_alone)
from harness.api.attach import Attaching
from harness.api.contracts import Cluster, OptionKey, Options, OptionValue, option_key
from harness.api.mounts import FuseClients, GivenMount, mounted_workspace, verify_mount
from harness.api.target import Target
from harness.errors import BadInput, DfsbenchError
from harness.system.hosts import Host, MountEntry
from harness.system.ledger import Ledger

# a ceph-fuse client setting (ceph-conf -D lists them): client_*, fuse_*, objecter_*, rados_*,
# ms_*, debug_*; never log_file, admin_socket, keyring, conf and their like
CephOptionKey = Annotated[OptionKey, option_key("client|fuse|objecter|rados|ms|debug", "_",
                                               r"file|socket|keyring|conf|path|log|run_dir", "ceph-fuse")]

FSTYPE = "fuse.ceph-fuse"
KERNEL = "ceph"


class CephFSOptions(Options):
    replicas: int | None = Field(None, ge=1, le=12, description="replica size of a data pool made "
                                 "for this backend (default: the file system's own data pool)")
    client_options: dict[CephOptionKey, OptionValue] = Field({}, description="Ceph client settings for ceph-fuse, "
                                           "e.g. client_oc_size: '209715200'")
    client: Literal["auto", "kernel", "fuse"] = Field(
        "auto", description="auto: the kernel client where every client host's kernel has it, "
        "else ceph-fuse")
    ec: ErasureCode | None = Field(None, description=EC_DESCRIPTION)

    @field_validator("ec")
    @classmethod
    def _ec_alone(cls, v: ErasureCode | None, info: ValidationInfo) -> ErasureCode | None:
        return ec_alone(v, info)


def has_kernel_client(host: Host) -> bool:
    """The host's kernel knows the ceph file system (built in, or its module loads)."""
    probe = "grep -qw ceph /proc/filesystems || modprobe -n -q ceph"
    return host.run(["sh", "-c", probe], check=False, timeout=30).returncode == 0


class KernelMounts:
    """CephFS mounted with the kernel client on every client host (``mount -t ceph``): the
    monitors from the conf, the key from a secret file of mode 0600 made from the keyring on
    the host itself (the key never passes through dfsbench). Unmounted on undo; a remount
    gives a fresh session, its caps and caches gone."""

    owned = True

    def __init__(self, ledger: Ledger, hosts: tuple[Host, ...], mountpoint: Path, cli: CephCli,
                 fs_name: str, private: Path) -> None:
        self.ledger, self.hosts, self.mountpoint, self.cli = ledger, hosts, mountpoint, cli
        self.fs_name, self.private = fs_name, private
        self._mine: dict[str, frozenset[str]] = {}

    def _mount_on(self, host: Host) -> MountEntry:
        with self.ledger.capture() as mine:
            try:
                host.mkdir(self.mountpoint)
                secret = self.private / f"{self.cli.client}.secret"
                host.run(["sh", "-c", f"umask 077; ceph-authtool {shlex.quote(self.cli.keyring)} "
                          f"-n client.{self.cli.client} -p > {shlex.quote(str(secret))}"], timeout=60)
                host.record_mount(self.ledger, self.mountpoint)
                options = (f"name={self.cli.client},secretfile={secret},conf={self.cli.conf},"
                           f"mds_namespace={self.fs_name}")
                host.run(["mount", "-t", KERNEL, ":/", str(self.mountpoint), "-o", options], timeout=120)
                self._mine[host.label] = frozenset(mine)
                return verify_mount(self.mountpoint, KERNEL, host)
            except BaseException:
                self.ledger.undo(only=frozenset(mine))
                self._mine.pop(host.label, None)
                raise

    def mount(self) -> MountEntry:
        entries = []
        try:
            for host in self.hosts:
                entries.append(self._mount_on(host))
        except BaseException:
            self.unmount()
            raise
        return entries[0]

    def _unmount_on(self, host: Host) -> None:
        problems = self.ledger.undo(only=self._mine.pop(host.label, frozenset()))
        if problems:
            raise DfsbenchError(f"could not unmount CephFS on {host.name}: " + "; ".join(problems))

    def unmount(self) -> None:
        for host in self.hosts:
            self._unmount_on(host)

    def remount(self) -> None:
        for host in self.hosts:
            self.remount_on(host)

    def remount_on(self, host: Host) -> None:
        self._unmount_on(host)
        self._mount_on(host)


class Evict:
    """Evict the MDS session of a ceph-fuse (its host's name and its pid there, which
    ceph-fuse puts in its session's metadata), once that client hung or died: the MDS would keep its caps (and block every other client's access to
    its files) until the session times out, 60 s by default. Eviction also puts the dead
    client's address on the OSD blocklist (for an hour), as for any eviction."""

    def __init__(self, cli: CephCli, fs_name: str) -> None:
        self.cli, self.fs_name = cli, fs_name

    def __call__(self, host: Host, pid: int) -> None:
        hostname = host.run(["hostname"], timeout=30).stdout.strip()
        self.cli.run("ceph", "tell", f"mds.{self.fs_name}:0", "client", "evict",
                     f"client_metadata.hostname={hostname}", f"client_metadata.pid={pid}", timeout=60)


class CephFS(CephBackend):
    name = "cephfs"
    display = "CephFS"
    suites = {"report": 1, "full": 1}
    settings = ("client_options",)
    topology = (*CephBackend.topology, "client_options", "erasure_code")
    tools = (("ceph-fuse", "ceph-fuse"),)
    Options = CephFSOptions
    options: CephFSOptions

    def creates(self) -> str:
        if self.options.ec is not None:
            return "an erasure-code profile and an erasure-coded data pool"
        return "a data pool" if self.options.replicas is not None else ""

    def open(self, cluster: Cluster, workdir: Path) -> Target:
        cli = CephCli.of(cluster, self.name)
        info, o = cli.info, self.options
        client, mnt = self._client(cluster, cli, workdir)
        pool: Pool | EcPool | None = None
        if o.replicas is not None:
            pool = Pool(cli, PoolOptions(replicas=o.replicas), "cephfs", "cephfs")
        elif o.ec is not None:
            pool = EcPool(cli, o.ec, "cephfs", "cephfs", self.variant)
        with Attaching(cluster.ledger, f"cephfs/{self.variant}") as attach:
            if pool is not None:
                with attach.step(f"pool {pool.name}", pool.delete):
                    pool.create()
                with attach.step(f"data pool {pool.name} of {info.fs_name}"):
                    cli.run("ceph", "fs", "add_data_pool", info.fs_name, pool.name)
                    cli.created(f"data pool {pool.name} of {info.fs_name}", "fs", "rm_data_pool",
                                info.fs_name, pool.name)
            entry, space = mounted_workspace(attach, client, cluster.clients, mnt, self.variant, "CephFS")
            if pool is not None:  # (the workloads' files go to that pool)
                cli.host.setxattr(space.path, "ceph.dir.layout.pool", pool.name)
            return cli.target("path", self.name, self.variant, self._described(cluster, info, pool, entry, client),
                              None, path=space.path, detach=attach.detach, hosts=cluster.clients,
                              remount=client.remount if not isinstance(client, GivenMount) else None,
                              remount_host=client.remount_on if not isinstance(client, GivenMount) else None,
                              cache_kept=entry.fstype == FSTYPE and isinstance(client, GivenMount))

    def _client(self, cluster: Cluster, cli: CephCli,
                workdir: Path) -> tuple[FuseClients | GivenMount | KernelMounts, Path]:
        """What mounts CephFS on the client hosts, and where: the user's mount, the kernel
        client, or ceph-fuse."""
        info, o = cli.info, self.options
        if info.mounted:
            if o.client_options:
                raise BadInput(f"cephfs/{self.variant}: client_options are given to a ceph-fuse that "
                               f"dfsbench starts, and CephFS is already mounted at {info.mounted}",
                               hint="leave out client_options, or 'mounted' so that dfsbench mounts it")
            return GivenMount(cluster.clients, Path(info.mounted), (FSTYPE, KERNEL), "CephFS"), Path(info.mounted)
        mnt = workdir / "cephfs"
        if o.client != "fuse" and not o.client_options and all(has_kernel_client(h) for h in cluster.clients):
            return KernelMounts(cluster.ledger, cluster.clients, mnt, cli, info.fs_name, workdir), mnt
        if o.client == "kernel":
            raise BadInput(f"cephfs/{self.variant}: client 'kernel', and the kernel of "
                           f"{', '.join(h.name for h in cluster.clients if not has_kernel_client(h))} "
                           "has no ceph file system", hint="use client 'auto' or 'fuse' (ceph-fuse)")
        cli.host.require("ceph-fuse", "ceph-fuse")
        argv = ["ceph-fuse", "-f", *cli.args(), "--client_fs", info.fs_name,
                *(f"--{key}={value}" for key, value in o.client_options.items()), str(mnt)]
        return FuseClients(cluster.ledger, cluster.clients, mnt, argv, FSTYPE, workdir / "log" / "ceph-fuse.log",
                           evict=Evict(cli, info.fs_name)), mnt

    def _described(self, cluster: Cluster, info: CephService, pool: Pool | EcPool | None, entry: MountEntry,
                   client: FuseClients | GivenMount | KernelMounts) -> dict[str, Any]:
        """The target's description: the cluster, the data pool, the mount as /proc/mounts shows it."""
        description: dict[str, Any] = {
            "system": "ceph", "client": "ceph-fuse" if entry.fstype == FSTYPE else "kernel client",
            "version": info.version,
            "replicas": pool.size if isinstance(pool, Pool) else None if pool else info.replicas,
            "osds": info.osds,
            "data_pool": pool.name if pool else info.data_pool,
            "metadata_pool": info.metadata_pool, "fs_type": entry.fstype,
            "mount_options": entry.options, "environment": cluster.environment,
            "cluster_settings": info.settings, "mounted_by": "dfsbench" if client.owned else "the user",
            "storage_nodes": info.storage_nodes,
        }
        if info.cluster:
            description["cluster"] = info.cluster
        if isinstance(pool, EcPool):
            description.update(pool.describe())
        if self.options.client_options:
            description["client_options"] = dict(self.options.client_options)
        return description
