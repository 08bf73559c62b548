import pytest

from backends.mounts import verify_mount
from harness.errors import DfsbenchError


def test_a_plain_directory_is_refused_as_a_mount(tmp_path):
    with pytest.raises(DfsbenchError) as err:
        verify_mount(tmp_path, "fuse.ceph-fuse")
    assert "not a mount point" in str(err.value)
    assert "local disk" in str(err.value)


def test_a_mount_of_another_type_is_refused():
    with pytest.raises(DfsbenchError) as err:
        verify_mount(__import__("pathlib").Path("/proc"), "fuse.glusterfs")
    assert "mounted as 'proc'" in str(err.value)
