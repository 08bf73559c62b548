"""Backend ``cephfs``: the CephFS of a cluster, mounted with ceph-fuse.

These machines have no kernel Ceph module, so the client is ceph-fuse; /proc/mounts
must then say ``fuse.ceph-fuse`` at the mount point before any workload runs.
"""

from __future__ import annotations

from pathlib import Path

from backends.mounts import FuseClient
from harness import proc
from harness.contracts import Backend, Cluster, Target
from harness.errors import DfsbenchError

FSTYPE = "fuse.ceph-fuse"


class CephFS(Backend):
    name = "cephfs"
    requires = frozenset({"ceph"})

    def open(self, cluster: Cluster, workdir: Path) -> Target:
        info = cluster.services.get("ceph")
        if info is None:
            raise DfsbenchError("backend 'cephfs' needs a Ceph cluster, and this environment has none")
        proc.require_tool("ceph-fuse", "ceph-fuse")
        mnt = workdir / "cephfs"
        client = FuseClient(
            cluster.ledger, mnt,
            ["ceph-fuse", "-f", "-c", info["conf"], "--id", "admin", "--keyring", info["keyring"],
             "--client_fs", info["fs_name"], str(mnt)],
            FSTYPE, workdir / "log" / "ceph-fuse.log")
        entry = client.mount()
        description = {
            "system": "ceph", "client": "ceph-fuse", "version": info["version"],
            "replicas": info["replicas"], "osds": info["osds"],
            "data_pool": info["data_pool"], "metadata_pool": info["metadata_pool"],
            "fs_type": entry.fstype, "mount_options": entry.options,
            "environment": cluster.environment,
        }
        return Target("path", mnt, self.name, self.variant, description,
                      remount=client.remount, detach=client.unmount)
