"""Erasure coding on both systems (issue 21, part 3): the config of a Ceph erasure-coded
pool (``ec: {k, m}`` on cephfs and rbd) and of a GlusterFS disperse volume on the container
lab, refused naming the key where it cannot be; the failure domain read from a real OSD tree;
and what crosses the client's link and what is kept per written byte, so the ceilings and the
room checks stay right."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import xml.etree.ElementTree as ET

from backends.ceph.client import ErasureCode, FailureDomains
from backends.gluster.client import HONEST_OPTIONS, Layout, VolumeShape, options_for, volumes
from harness.errors import BadInput
from harness.execution.plan import build_plan
from harness.report.limits import PathLimits
from harness.report.view import comparability
from harness.results.catalogue import system_facts
from harness.results.schema import RunInfo
from harness.units import parse_rate

DATA = Path(__file__).parent.parent / "data" / "tools"
LINK = parse_rate("1Gbit")
LARGEFILE = [{"name": "largefile", "options": {"sizes": ["64MiB"]}}]


def plan(environment, *backends):
    return build_plan({"environment": environment, "backends": list(backends), "workloads": LARGEFILE})


def refused(environment, *backends):
    with pytest.raises(BadInput) as err:
        plan(environment, *backends)
    return str(err.value)


DOCKER = {"kind": "docker", "options": {}}
LOCAL = {"kind": "local", "options": {}}


# ---------------------------------------------------------------- the config


@pytest.mark.parametrize("options, says", [
    ({"ec": {"k": 2, "m": 1}, "replicas": 2}, "backends[0].options.ec: 'ec' and 'replicas' together"),
    ({"ec": {"k": 1, "m": 1}}, "backends[0].options.ec.k: Input should be greater than or equal to 2"),
    ({"ec": {"k": 2, "m": 0}}, "backends[0].options.ec.m: Input should be greater than or equal to 1"),
    ({"ec": {"k": 9, "m": 1}}, "backends[0].options.ec.k: Input should be less than or equal to 8"),
    ({"ec": {"k": 2, "m": 5}}, "backends[0].options.ec.m: Input should be less than or equal to 4"),
    ({"ec": {"k": 2}}, "backends[0].options.ec.m: required key is missing"),
    ({"ec": {"k": 2, "m": 1, "plugin": "isa"}}, "backends[0].options.ec.plugin: unknown key"),
    ({"ec": {"k": True, "m": 1}}, "k: true is a yes/no"),
])
@pytest.mark.parametrize("backend", ["cephfs", "rbd"])
def test_an_erasure_code_is_refused_naming_its_key(backend, options, says):
    assert says in refused(LOCAL, {"name": backend, "options": options})


def test_k_plus_m_must_fit_the_nodes_of_the_container_lab_and_the_osds_of_the_local_lab():
    ec31 = {"name": "cephfs", "variant": "ec31", "options": {"ec": {"k": 3, "m": 1}}}
    said = refused(DOCKER, "cephfs", ec31)
    assert said.startswith("backends[1].options.ec: cephfs/ec31: an erasure code of k=3 + m=1 puts 4 chunks "
                           "on as many nodes (its failure domain: host), and the cluster's OSDs are on 3 hosts"), said
    # more OSDs per node do not make more failure domains
    assert "backends[1].options.ec" in refused({"kind": "docker", "options": {"osds_per_node": 2}}, "cephfs", ec31)
    plan({"kind": "docker", "options": {"ceph_osd_nodes": 4}}, ec31)
    plan(DOCKER, "cephfs", {"name": "rbd", "options": {"ec": {"k": 2, "m": 1}}})
    # the local lab's OSDs are all on this host: each chunk on an OSD of its own
    said = refused(LOCAL, {"name": "rbd", "variant": "ec31",
                                  "options": {"ec": {"k": 3, "m": 1}, "access": "filesystem"}})
    assert "backends[0].options.ec: rbd/ec31: an erasure code of k=3 + m=1 puts 4 chunks on as many OSDs " \
           "(its failure domain: osd), and the cluster has 3 OSDs, all on one host" in said, said
    plan({"kind": "local", "options": {"ceph_osds": 4}}, ec31)


def test_an_existing_cluster_gets_an_erasure_coded_pool_only_with_allow_create():
    ec = {"name": "cephfs", "options": {"ec": {"k": 2, "m": 1}}}
    said = refused({"kind": "existing", "options": {"ceph": {}}}, ec)
    assert "would create an erasure-code profile and an erasure-coded data pool" in said
    assert "allow_create" in said
    assert "erasure-coded pool and an RBD image" in refused(
        {"kind": "existing", "options": {"ceph": {}}}, {"name": "rbd", "options": {"pool": "rbd", "ec": {"k": 2, "m": 1},
                                                                "access": "filesystem"}})
    plan({"kind": "existing", "options": {"ceph": {}, "allow_create": True}}, ec)


def test_a_glusterfs_layout_of_its_own_runs_on_the_container_lab_where_its_nodes_hold_it():
    # (refused before: the container lab's glusterd runs in its nodes)
    plan(DOCKER, {"name": "glusterfs", "variant": "ec21", "options": {"layout": "disperse"}},
         {"name": "glusterfs", "variant": "tuned", "options": {"volume_options": {"performance.cache-size": "64MB"}}})
    plan(DOCKER, {"name": "glusterfs", "options": {"layout": "disperse", "bricks": 6, "redundancy": 2}})
    said = refused(DOCKER, {"name": "glusterfs", "options": {"layout": "disperse", "bricks": 6}})
    assert "backends[0].options.bricks: glusterfs/default: a disperse volume of 6 bricks over the lab's 3 " \
           "GlusterFS nodes puts 2 on one node, more than its redundancy 1" in said, said
    said = refused({"kind": "docker", "options": {"gluster_nodes": 2, "gluster_replica": 2}},
                   {"name": "glusterfs", "options": {"layout": "replicate"}})
    assert said.startswith("backends[0].options.replica: glusterfs/default: replica 3 needs as many GlusterFS "
                           "nodes"), said


# ---------------------------------------------------------------- the failure domain


def tree(name):
    return json.loads((DATA / name).read_text())


def test_the_failure_domain_is_the_node_where_the_osds_are_on_several_hosts():
    """Real ``ceph osd tree --format json`` of the two labs: three OSD nodes (host), and
    three OSDs of one host (osd) — where the host could never hold 2+1 chunks apart."""
    docker = FailureDomains.of(tree("ceph-osd-tree-three-hosts.json"))
    assert (docker.kind, docker.count, docker.hosts, docker.osds) == ("host", 3, 3, 3)
    local = FailureDomains.of(tree("ceph-osd-tree-one-host.json"))
    assert (local.kind, local.count, local.hosts, local.osds) == ("osd", 3, 1, 3)
    assert docker.refusal(ErasureCode(k=2, m=1)) == "" and local.refusal(ErasureCode(k=2, m=1)) == ""
    assert "puts 5 chunks on as many nodes" in docker.refusal(ErasureCode(k=3, m=2))
    assert "puts 4 chunks on as many OSDs" in local.refusal(ErasureCode(k=2, m=2))


def test_a_disperse_volume_gets_the_labs_options_within_what_gluster_takes_for_it():
    """Measured: 'volume set' on a disperse volume refused cluster.heal-timeout 10 ("out of
    range [60 - 2147483647]"); a replicated volume takes it. The lab's ping-timeout and the
    honest options stay as they are."""
    lab = {**HONEST_OPTIONS, "network.ping-timeout": "5", "cluster.heal-timeout": "10"}
    assert options_for(Layout("disperse"), lab) == {**lab, "cluster.heal-timeout": "60"}
    assert options_for(Layout("replicate"), lab) == lab
    assert options_for(Layout("disperse"), {"cluster.heal-timeout": "600"}) == {"cluster.heal-timeout": "600"}


def test_every_volume_of_the_labs_glusterd_is_read_so_a_fault_checks_the_backends_own_too():
    """Real 'gluster volume info --xml' of the container lab while a disperse volume of a
    backend's own was attached: both are found, started, with their bricks."""
    info = ET.fromstring((DATA / "gluster-volume-info-replicate-and-disperse.xml").read_text())
    lab, own = volumes(info)
    assert lab == VolumeShape("dfsbench", "replicate", 3, 3, True) and lab.keeps_copies
    assert (own.kind, own.bricks, own.started) == ("disperse", 3, True) and own.keeps_copies
    assert own.name.startswith("dfsbench-ec21-")


# ---------------------------------------------------------------- what crosses the link, what is kept


def limits(backend, description, network=LINK):
    facts = system_facts(backend, description)
    return facts, PathLimits(network, "declared", None, facts)


DISPERSE = {"system": "glusterfs", "volume_type": "disperse", "bricks": 3, "redundancy": 1, "replicas": None,
            "storage_nodes": 3}
CEPH_EC = {"system": "ceph", "replicas": None, "osds": 3, "storage_nodes": 3,
           "erasure_code": {"k": 2, "m": 1, "failure_domain": "host", "pool_type": "erasure"}}


def test_a_disperse_client_sends_k_plus_m_over_k_of_each_write():
    """2+1: the client sends three fragments of half the data each — its write ceiling is
    link × 2/3, not link/3 (as replica 3) nor the link (as one copy)."""
    facts, lim = limits("glusterfs", DISPERSE)
    assert facts.write_copies == pytest.approx(1.5) and facts.stored_copies == pytest.approx(1.5)
    assert lim.ceiling(write=True) == pytest.approx(LINK * 2 / 3)
    assert lim.ceiling(write=False) == pytest.approx(LINK)
    # a node down: two fragments leave the client, each half the data: the link
    assert lim.ceiling(write=True, down=1) == pytest.approx(LINK)


def test_a_ceph_client_sends_an_erasure_coded_write_once_and_the_cluster_keeps_k_plus_m_over_k():
    """The Ceph client writes once to the primary OSD, which takes the whole byte in and
    sends the other k+m-1 chunks (of 1/k each) on: its write ceiling is the link; the nodes
    take in (2k+m-1)/k = 2 bytes per byte written while keeping (k+m)/k = 1.5, so three
    clients together are bound by 3 nodes × link / 2 = 1.5 × link — not 2 × link (what they
    keep, as if the client sent the chunks), nor 3 × link (one byte kept)."""
    facts, lim = limits("cephfs", CEPH_EC)
    assert facts.write_copies == 1.0 and facts.stored_copies == pytest.approx(1.5)
    assert facts.taken_in == pytest.approx(2.0)
    assert lim.ceiling(write=True) == pytest.approx(LINK)
    three = ("client1", "client2", "client3")
    assert lim.ceiling(write=True, hosts=three) == pytest.approx(1.5 * LINK)
    assert lim.ceiling(write=False, hosts=three) == pytest.approx(3 * LINK)
    _, rbd = limits("rbd", {**CEPH_EC, "pool_size": 3})
    assert rbd.ceiling(write=True, hosts=three) == pytest.approx(1.5 * LINK)
    assert "erasure code 2+1 (failure domain host)" in facts.summary
    replicated, _ = limits("cephfs", {**CEPH_EC, "erasure_code": None, "replicas": 3})
    assert replicated.stored_copies == 3.0


def run(run_id, description):
    return RunInfo(run_id, 0.0, 1.0, "complete", None, None, {}, "", {},
                   {("cephfs", "ec"): description, ("glusterfs", "ec"): {**DISPERSE}})


def test_two_runs_of_different_codes_are_not_comparable():
    wider = {**CEPH_EC, "erasure_code": {**CEPH_EC["erasure_code"], "k": 4, "m": 2}}
    notes = comparability([run("a", CEPH_EC), run("b", wider)])
    assert [target for _, target in notes] == [("cephfs", "ec")]
    assert "erasure_code" in notes[0][0] and "'k': 2" in notes[0][0] and "'k': 4" in notes[0][0]
    # the pool and profile are names of one attachment, not of the code: the same code compares
    renamed = {**CEPH_EC, "ec_pool": "dfsbench-cephfs-ec-000000", "ec_profile": "dfsbench-ec-000000"}
    assert comparability([run("a", CEPH_EC), run("b", renamed)]) == []
    # a disperse volume of another redundancy over as many bricks
    other = run("b", CEPH_EC)
    other.targets[("glusterfs", "ec")] = {**DISPERSE, "redundancy": 2}
    assert [target for _, target in comparability([run("a", CEPH_EC), other])] == [("glusterfs", "ec")]
