"""The mounted-disk check compares device numbers, not paths: another device node for
the disk this machine runs from (same major:minor, another name) is refused like the
disk itself, and nothing is written to either."""

import os
import stat

import pytest

from backends.blockdev import check_device
from harness.errors import BadInput

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")


def test_another_node_for_the_mounted_root_disk_is_refused(tmp_path):
    root = os.stat("/").st_dev
    if not os.path.exists(f"/sys/dev/block/{os.major(root)}:{os.minor(root)}"):
        pytest.skip("/ is not on a block device here (an overlay or a tmpfs)")
    node = tmp_path / "not-the-root-disk"
    os.mknod(node, stat.S_IFBLK | 0o600, root)
    with pytest.raises(BadInput, match="is mounted at /"):
        check_device(node)

