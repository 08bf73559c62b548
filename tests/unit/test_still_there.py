"""Before each cell the target's file system must still be what it was attached as."""

from pathlib import Path

import pytest

from harness.api.target import Target
from harness.errors import DfsbenchError
from harness.execution.checks import _mounted_as, still_there
from harness.system.ledger import read_mounts


def test_the_file_system_holding_a_path_is_the_longest_mount_above_it():
    rows = [["rootfs", "/", "ext4", "rw"], ["gl", "/mnt/gl", "fuse.glusterfs", "rw"],
            ["x", "/mnt/glx", "xfs", "rw"]]
    assert _mounted_as(rows, Path("/mnt/gl/dfsbench-default-ab12")) == "fuse.glusterfs"
    assert _mounted_as(rows, Path("/mnt/gl")) == "fuse.glusterfs"
    assert _mounted_as(rows, Path("/mnt/glx/a")) == "xfs"
    assert _mounted_as(rows, Path("/mnt/g")) == "ext4"


def test_a_target_whose_mount_went_away_fails_its_cell_at_once(tmp_path):
    here = _mounted_as([list(r) for r in read_mounts()], tmp_path)
    fine = Target("path", tmp_path, "localdir", "default", {"fs_type": here})
    still_there(fine)
    gone = Target("path", tmp_path, "glusterfs", "default", {"fs_type": "fuse.glusterfs"})
    with pytest.raises(DfsbenchError, match="not the 'fuse.glusterfs' it was attached as"):
        still_there(gone)
    missing = Target("path", tmp_path / "nothing", "cephfs", "default", {"fs_type": "fuse.ceph-fuse"})
    with pytest.raises(DfsbenchError, match="is gone"):
        still_there(missing)
