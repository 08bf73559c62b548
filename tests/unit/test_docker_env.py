"""The container lab's config and image inputs (no Docker needed)."""

from __future__ import annotations

import pytest

from environments import node_image
from environments.docker import Link
from harness.errors import BadInput, DfsbenchError
from harness.execution.config import build_plan


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
