"""The container lab's config and image inputs (no Docker needed)."""

from __future__ import annotations

import pytest

from environments import node_image
from environments.docker import Link
from harness.errors import BadInput, DfsbenchError
from harness.execution.plan import build_plan


def test_link_rate_is_shaped_and_netem_is_refused_with_the_reason():
    assert Link().bits_per_second == 1_000_000_000
    assert Link(rate="100Mbit").bits_per_second == 100_000_000
    with pytest.raises(ValueError, match="netem"):
        Link(rate="1Gbit", delay="5ms")
    with pytest.raises(BadInput, match="environment.options.link.loss.*netem"):
        build_plan({"environment": {"kind": "docker", "options": {"link": {"loss": "1%"}}}})


def test_mirror_from_deb822_and_legacy_sources(tmp_path):
    deb822 = tmp_path / "debian.sources"
    deb822.write_text("Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n"
                      "Components: main\n\nTypes: deb\nURIs: http://mirror.example/debian-security\n"
                      "Suites: bookworm-security\nComponents: main\n")
    assert node_image.host_mirror(deb822, tmp_path / "none") == "http://mirror.example/debian"
    legacy = tmp_path / "sources.list"
    legacy.write_text("# comment\ndeb http://old.example/debian/ bookworm main non-free\n")
    assert node_image.host_mirror(tmp_path / "none", legacy) == "http://old.example/debian"
    with pytest.raises(DfsbenchError, match="no Debian bookworm mirror"):
        node_image.host_mirror(tmp_path / "none", tmp_path / "none2")


def test_image_tag_follows_its_inputs():
    text = node_image.dockerfile("BASE", "http://m/debian")
    assert "non-free" in text and "iozone3" in text and "glusterfs-server" in text
    same = node_image._tag("node", "bookworm", "http://m/debian", text)
    assert same == node_image._tag("node", "bookworm", "http://m/debian", text)
    assert same != node_image._tag("node", "bookworm", "http://other/debian", text)


def test_topologies_that_cannot_work_are_refused_before_anything_starts():
    with pytest.raises(BadInput, match="4 bricks cannot form a distributed-replicate volume of replica 3"):
        build_plan({"environment": {"kind": "docker", "options": {"gluster_nodes": 4}}})
    with pytest.raises(BadInput, match="2 GlusterFS nodes cannot hold replica-3 sets on different nodes"):
        build_plan({"environment": {"kind": "docker", "options": {"gluster_nodes": 2, "bricks_per_node": 3}}})
    two_per_node = build_plan({"environment": {"kind": "docker", "options": {"bricks_per_node": 2}}})
    assert two_per_node.environment.options.layout.kind == "distributed-replicate"
    assert two_per_node.environment.options.layout.create_args(6) == ["replica", "3"]
    disperse = build_plan({"environment": {"kind": "docker", "options": {
        "gluster_layout": "disperse", "gluster_redundancy": 1}}}).environment.options
    assert disperse.layout.create_args(disperse.gluster_bricks) == ["disperse", "3", "redundancy", "1"]
    with pytest.raises(BadInput, match="redundancy"):
        build_plan({"environment": {"kind": "docker", "options": {"gluster_layout": "disperse",
                                                                   "gluster_redundancy": 2}}})
    with pytest.raises(BadInput, match="ceph_replicas 3 needs as many OSD nodes"):
        build_plan({"environment": {"kind": "docker", "options": {"ceph_osd_nodes": 2}}})
    build_plan({"environment": {"kind": "docker", "options": {"ceph_osd_nodes": 2, "ceph_replicas": 2}}})


def test_files_for_a_node_unpack_at_root_with_every_parent_directory_once():
    import io
    import tarfile

    from environments.nodes import archive

    data = archive({"/etc/ceph/ceph.conf": "[global]\nfsid = x\n", "/data/osd/0/keyring": "[osd.0]\n"},
                   dirs=["/data/osd-block", "/data/osd"])
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        entries = tar.getmembers()
        names = [e.name for e in entries]
        assert len(names) == len(set(names))
        # a directory comes before what it holds (tar unpacks in order)
        assert names.index("data") < names.index("data/osd") < names.index("data/osd/0") < \
            names.index("data/osd/0/keyring")
        assert {e.name for e in entries if e.isdir()} == {"etc", "etc/ceph", "data", "data/osd", "data/osd/0",
                                                          "data/osd-block"}
        assert tar.extractfile("etc/ceph/ceph.conf").read() == b"[global]\nfsid = x\n"
        assert {e.mode for e in entries if e.isfile()} == {0o644} and {e.uid for e in entries} == {0}


def test_the_first_part_of_a_bring_up_to_fail_is_the_error_and_the_others_stop():
    from harness.system.parallel import Stop
    from harness.errors import NotReady
    from harness.system import proc

    stop = Stop()
    assert stop.why() is None
    stop.check("GlusterFS's bring-up")  # (nothing failed: goes on)
    first = DfsbenchError("glusterd on gluster2 would not start")
    stop.fail(first)
    with pytest.raises(DfsbenchError, match="Ceph's bring-up stopped: another part"):
        stop.check("Ceph's bring-up")
    stop.fail(DfsbenchError("Ceph's bring-up stopped"))  # (what the others raise after it)
    assert stop.first is first
    # a wait of another part ends at once, saying why
    with pytest.raises(NotReady, match="another part of the lab's bring-up failed"):
        proc.wait_for(lambda: (False, "2 of 3 OSDs up"), what="3 OSDs up", timeout=60, alive=stop.why)
