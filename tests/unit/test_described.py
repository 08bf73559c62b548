"""What the core reads of a target's description is typed (harness.api.described): a
backend's description of the wrong types is refused, naming it; a stored one is read for
what of it is of the right types."""

from __future__ import annotations

import pytest

from harness.api.described import CORE_KEYS, Described
from harness.api.tables import Placement
from harness.errors import DfsbenchError


def test_a_backends_description_is_read_typed_and_its_own_keys_pass_unread():
    d = Described.checked({"system": "ceph", "fs_type": "fuse.ceph-fuse", "replicas": 3, "storage_nodes": 3,
                           "mounted_by": "dfsbench", "pool": {"pg_num": 16}}, "cephfs")
    assert (d.system, d.fs_type, d.replicas, d.storage_nodes, d.mounted_by) == \
        ("ceph", "fuse.ceph-fuse", 3, 3, "dfsbench")
    assert set(CORE_KEYS) == {"system", "version", "client", "fs_type", "mounted_by", "replicas", "storage_nodes"}


@pytest.mark.parametrize("description, said", [
    ({"replicas": "3"}, "replicas = '3', which is not a finite number above 0"),
    ({"replicas": 0}, "replicas = 0, which is not a finite number above 0"),
    ({"replicas": float("inf")}, "replicas = inf, which is not a finite number above 0"),
    ({"storage_nodes": True}, "storage_nodes = True, which is not a whole number of at least 0"),
    ({"fs_type": ["fuse"]}, "fs_type = ['fuse'], which is not a text"),
    ({"mounted_by": "someone"}, "mounted_by = 'someone', which is not 'dfsbench' or 'the user'"),
])
def test_a_description_of_the_wrong_types_is_the_backends_error_named(description, said):
    with pytest.raises(DfsbenchError, match="backend 'toyfs' describes its target with") as e:
        Described.checked(description, "toyfs")
    assert said in e.value.message


def test_a_stored_description_keeps_what_is_of_its_type_and_no_more():
    read = Described.read({"replicas": "three", "storage_nodes": 4, "fs_type": 7, "system": "gluster"})
    assert (read.replicas, read.storage_nodes, read.fs_type, read.system) == (None, 4, None, "gluster")
    # the placement a stored description says by itself: a replicas of the wrong type is not 1 copy of it, but unknown
    assert Placement.described({"replicas": "three", "storage_nodes": 4}) == Placement(1.0, storage_nodes=4)
    assert Placement.described({"replicas": 2, "storage_nodes": True}) == Placement(2.0, storage_nodes=0)
