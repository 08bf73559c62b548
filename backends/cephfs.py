"""Backend ``cephfs``: the CephFS of a cluster, mounted with ceph-fuse.

These machines have no kernel Ceph module, so the client is ceph-fuse; /proc/mounts
must then say ``fuse.ceph-fuse`` at the mount point before any workload runs.

``replicas`` puts the workloads' files in a data pool of that size (created, added to
the file system, and set as the layout of the directory the workloads use), so a variant
can compare replica counts. ``client_options`` are Ceph client settings given to
ceph-fuse (e.g. ``client_oc_size``), for default-vs-tuned variants as in seed 001.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field

from backends.ceph_client import CephCli, Pool, PoolOptions, mon_host
from backends.mounts import FuseClient
from harness import proc
from harness.contracts import Backend, Cluster, Options, Target

FSTYPE = "fuse.ceph-fuse"


class CephFSOptions(Options):
    replicas: int | None = Field(None, ge=1, le=12, description="replica size of a data pool made "
                                 "for this backend (default: the file system's own data pool)")
    client_options: dict[str, str] = Field({}, description="Ceph client settings for ceph-fuse, "
                                           "e.g. client_oc_size: '209715200'")


class CephFS(Backend):
    name = "cephfs"
    requires = frozenset({"ceph"})
    Options = CephFSOptions
    options: CephFSOptions

    def open(self, cluster: Cluster, workdir: Path) -> Target:
        cli = CephCli.of(cluster, self.name)
        info = cli.info
        proc.require_tool("ceph-fuse", "ceph-fuse")
        o = self.options
        pool: Pool | None = None
        if o.replicas is not None:
            pool = Pool(cli, PoolOptions(replicas=o.replicas), "cephfs", "cephfs")
            pool.create()
            try:
                cli.run("ceph", "fs", "add_data_pool", info["fs_name"], pool.name)
            except BaseException:
                pool.delete()
                raise
        mnt = workdir / "cephfs"
        argv = ["ceph-fuse", "-f", *cli.args(), "--client_fs", info["fs_name"]]
        for key, value in o.client_options.items():
            argv.append(f"--{key}={value}")
        client = FuseClient(cluster.ledger, mnt, [*argv, str(mnt)], FSTYPE,
                            workdir / "log" / "ceph-fuse.log")

        def drop_pool() -> None:
            if pool is not None:
                cli.run("ceph", "fs", "rm_data_pool", info["fs_name"], pool.name)
                pool.delete()

        try:
            entry = client.mount()
        except BaseException:
            drop_pool()
            raise
        where = mnt
        if pool is not None:
            where = mnt / f"dfsbench-{self.variant}"
            where.mkdir(exist_ok=True)
            os.setxattr(where, "ceph.dir.layout.pool", pool.name.encode())

        def detach() -> None:
            try:
                if where != mnt:
                    where.rmdir()
            finally:
                client.unmount()
                drop_pool()

        description = {
            "system": "ceph", "client": "ceph-fuse", "version": info["version"],
            "replicas": pool.size if pool else info["replicas"], "osds": info["osds"],
            "data_pool": pool.name if pool else info["data_pool"],
            "metadata_pool": info["metadata_pool"], "fs_type": entry.fstype,
            "mount_options": entry.options, "environment": cluster.environment,
            "server_host": mon_host(info), "backing": info.get("backing"),
            "cluster_settings": info.get("settings"),
        }
        if o.client_options:
            description["client_options"] = dict(o.client_options)
        return Target("path", where, self.name, self.variant, description,
                      remount=client.remount, detach=detach)

