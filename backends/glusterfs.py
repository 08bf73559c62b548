"""Backend ``glusterfs``: a GlusterFS volume mounted with its FUSE client."""

from __future__ import annotations

from pathlib import Path

from backends.mounts import FuseClient
from harness import proc
from harness.contracts import Backend, Cluster, Target
from harness.errors import DfsbenchError

FSTYPE = "fuse.glusterfs"


class GlusterFS(Backend):
    name = "glusterfs"
    requires = frozenset({"gluster"})

    def open(self, cluster: Cluster, workdir: Path) -> Target:
        info = cluster.services.get("gluster")
        if info is None:
            raise DfsbenchError("backend 'glusterfs' needs a GlusterFS volume, and this environment has none")
        proc.require_tool("glusterfs", "glusterfs-client")
        mnt = workdir / "glusterfs"
        client = FuseClient(
            cluster.ledger, mnt,
            ["glusterfs", "-N", f"--volfile-server={info['host']}", f"--volfile-id={info['volume']}",
             f"--log-file={workdir / 'log' / 'glusterfs-client.log'}", str(mnt)],
            FSTYPE, workdir / "log" / "glusterfs-client.stdout")
        entry = client.mount()
        description = {
            "system": "glusterfs", "client": "glusterfs (FUSE)", "version": info["version"],
            "replicas": info["replica"], "volume_type": info["volume_type"],
            "bricks": len(info["bricks"]), "fs_type": entry.fstype,
            "mount_options": entry.options, "environment": cluster.environment,
            "note": "the 2014 report's 'stripe 3 replica 3' type was removed in Gluster 6; "
                    "a replica-3 volume is the single-set version of its vr33 layout",
        }
        return Target("path", mnt, self.name, self.variant, description,
                      remount=client.remount, detach=client.unmount)
