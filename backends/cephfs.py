"""Backend ``cephfs``: the CephFS of a cluster, mounted with ceph-fuse.

These machines have no kernel Ceph module, so the client is ceph-fuse; /proc/mounts
must then say ``fuse.ceph-fuse`` at the mount point before any workload runs.

``replicas`` puts the workloads' files in a data pool of that size (created, added to
the file system, and set as the layout of the directory the workloads use), so a variant
can compare replica counts. ``client_options`` are Ceph client settings given to
ceph-fuse (e.g. ``client_oc_size``), for default-vs-tuned variants as in seed 001.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from backends.ceph_client import CephCli, Pool, PoolOptions
from backends.mounts import FuseClients
from harness.contracts import Backend, Cluster, Options, Target
from harness.errors import DfsbenchError

FSTYPE = "fuse.ceph-fuse"


class CephFSOptions(Options):
    replicas: int | None = Field(None, ge=1, le=12, description="replica size of a data pool made "
                                 "for this backend (default: the file system's own data pool)")
    client_options: dict[str, str] = Field({}, description="Ceph client settings for ceph-fuse, "
                                           "e.g. client_oc_size: '209715200'")


class CephFS(Backend):
    name = "cephfs"
    display = "CephFS"
    network = True  # a Ceph client writes each byte once, to the primary OSD
    requires = frozenset({"ceph"})
    Options = CephFSOptions
    options: CephFSOptions

    def open(self, cluster: Cluster, workdir: Path) -> Target:
        cli = CephCli.of(cluster, self.name)
        info = cli.info
        host = cli.host
        host.require("ceph-fuse", "ceph-fuse")
        o = self.options
        mnt = workdir / "cephfs"
        argv = ["ceph-fuse", "-f", *cli.args(), "--client_fs", info.fs_name]
        for key, value in o.client_options.items():
            argv.append(f"--{key}={value}")
        client = FuseClients(cluster.ledger, cluster.clients, mnt, [*argv, str(mnt)], FSTYPE,
                             workdir / "log" / "ceph-fuse.log")
        # everything below is in the ledger (pool, its place in the file system, the
        # client and its mount), so a failure at any step undoes all of it
        before = cluster.ledger.ids()
        pool: Pool | None = None
        where = mnt
        try:
            if o.replicas is not None:
                pool = Pool(cli, PoolOptions(replicas=o.replicas), "cephfs", "cephfs")
                pool.create()
                cli.run("ceph", "fs", "add_data_pool", info.fs_name, pool.name)
                cli.created(f"data pool {pool.name} of {info.fs_name}", "fs", "rm_data_pool",
                            info.fs_name, pool.name)
            entry = client.mount()
            if pool is not None:
                where = mnt / f"dfsbench-{self.variant}"
                host.mkdir(where)
                host.setxattr(where, "ceph.dir.layout.pool", pool.name)
        except BaseException:
            problems = cluster.ledger.undo(only=cluster.ledger.ids() - before)
            if problems:
                raise DfsbenchError("cephfs attach failed, and undoing it left: " + "; ".join(problems))
            raise
        mine = cluster.ledger.ids() - before

        def detach() -> None:
            try:
                if where != mnt:
                    host.remove(where)
            finally:
                client.unmount()  # the current client: a remount replaced the first one
                problems = cluster.ledger.undo(only=mine)
                if problems:
                    raise DfsbenchError("could not detach cephfs cleanly: " + "; ".join(problems))

        description = {
            "system": "ceph", "client": "ceph-fuse", "version": info.version,
            "replicas": pool.size if pool else info.replicas, "osds": info.osds,
            "data_pool": pool.name if pool else info.data_pool,
            "metadata_pool": info.metadata_pool, "fs_type": entry.fstype,
            "mount_options": entry.options, "environment": cluster.environment,
            "cluster_settings": info.settings,
        }
        if o.client_options:
            description["client_options"] = dict(o.client_options)
        return cli.target("path", self.name, self.variant, description, None, path=where,
                          remount=client.remount, remount_host=client.remount_on, detach=detach, hosts=cluster.clients)

