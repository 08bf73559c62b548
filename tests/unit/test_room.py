"""Before writing, a cell checks the target's free space, and on a local lab the disk that
holds every copy (times replicas). The disk is a real tmpfs (root)."""

import os
import subprocess

import pytest

from harness.api.contracts import Cluster
from harness.api.target import Target
from harness.errors import DfsbenchError
from harness.execution.checks import room_for
from harness.execution.plan import build_plan
from harness.system.ledger import Ledger

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs")


@pytest.fixture
def disk(tmp_path):
    where = tmp_path / "disk"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(where)], check=True)
    yield where
    subprocess.run(["umount", str(where)], check=False)


def test_a_cell_refuses_what_its_replicas_would_not_fit(tmp_path, disk):
    largefile = build_plan({"backends": ["localdir"],
                            "workloads": [{"name": "largefile", "options": {"sizes": ["32MiB"]}}]}).workloads[0]
    cell = largefile.cells()[0]
    target = Target("path", tmp_path, "glusterfs", "default", {"replicas": 3})
    lab = Cluster("local", {}, Ledger(tmp_path / "ledger.json"), tmp_path, shared_disk=disk)
    room_for(largefile, cell, target, lab, copies=1)  # 32 MiB of 64
    with pytest.raises(DfsbenchError) as err:
        room_for(largefile, cell, target, lab, copies=3)  # 96 MiB of 64
    text = str(err.value)
    assert "kept 3 times: 96 MiB on this host's disk" in text and "64 MiB free" in text
    room_for(largefile, cell, target, None, copies=3)  # elsewhere the target's own figure counts


def test_a_cell_on_every_client_at_once_needs_room_for_what_all_of_them_write(tmp_path, disk):
    largefile = build_plan({"backends": ["localdir"],
                            "workloads": [{"name": "largefile", "options": {"sizes": ["24MiB"]}}]}).workloads[0]
    cell = largefile.cells()[0]
    target = Target("path", disk, "glusterfs", "default")
    room_for(largefile, cell, target, None, clients=2)  # 48 MiB of 64
    with pytest.raises(DfsbenchError, match="would write 72 MiB"):
        room_for(largefile, cell, target, None, clients=3)
