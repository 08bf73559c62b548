"""A host of a config is an address or a DNS name, with nothing else after an IPv6 zone's
'%'; a host's label becomes a file name by one rule, which keeps every client's outputs
under the cell's directory and apart from every other client's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.api.contracts import host_address
from harness.api.target import Target
from harness.errors import BadInput
from harness.execution import together
from harness.execution.plan import build_plan
from harness.system.hosts import LocalHost
from harness.system.names import host_part, named_path
from tests.unit.builders import existing, scratch_of, workload

FIO = {"name": "fio", "options": {"size": "64MiB", "runtime_s": 5}}


@pytest.mark.parametrize("host", ["fe80::1%$(id)", "fe80::1%a b", "fe80::1%`id`;x", "[fe80::1%a/b]",
                                  "fe80::1%" + "e" * 16, "fe80::1%"])
def test_an_ipv6_zone_is_an_interface_name_or_index(host):
    with pytest.raises(ValueError, match="has a zone|neither an IP address"):
        host_address(host)


@pytest.mark.parametrize("host", ["fe80::1%eth0", "[fe80::1%2]", "fe80::1%enp0s31f6", "fe80::1%br-lab.10"])
def test_an_ipv6_address_with_an_interface_passes(host):
    assert host_address(host) == host


def test_a_client_host_or_fio_server_with_a_zone_that_is_no_interface_is_refused(tmp_path):
    with pytest.raises(BadInput, match=r"clients\[0\].host: 'fe80::1%a b' has a zone"):
        build_plan(existing(tmp_path, host="fe80::1%a b"))
    for server in ["fe80::1%$(id) x", "ip6:fe80::1%a;b"]:
        with pytest.raises(BadInput, match="is not a fio server: .* has a zone"):
            build_plan({"workloads": [{**FIO, "options": {**FIO["options"], "servers": [server]}}]})


labels = st.one_of(st.ip_addresses(v=6).map(str), st.from_regex(r"\A[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}\Z"),
                   st.text(min_size=1, max_size=40))


@given(st.lists(labels, min_size=2, max_size=6, unique=True))
def test_each_host_label_is_a_file_name_of_its_own(found):
    parts = [host_part(label) for label in found]
    assert len(set(parts)) == len(parts)
    for part in parts:
        if len(part) <= 255:  # (a host's name is at most 253 letters; a longer part named_path refuses)
            assert named_path(Path("/r"), part).parent == Path("/r")


def test_names_and_ipv4_keep_their_file_name_and_ipv6_is_spelled_out():
    assert host_part("client1.example.com") == "client1.example.com"
    assert host_part("10.0.0.5") == "10.0.0.5"
    assert host_part("fd00::5") == "fd00_3a_3a5"
    assert host_part("fe80::1%eth0") == "fe80_3a_3a1_25eth0"
    assert host_part("-x") == "_2dx"
    assert host_part("fd00_3a_3a5") == "fd00_5f3a_5f3a5"  # (a name that looks like an escape is one itself)


def test_each_clients_raw_outputs_stay_under_the_cells_directory(tmp_path):
    one, two = LocalHost(), LocalHost()
    one.name, two.name = "fd00::5", "../up"  # (a label no config gives, as a host of a plugin might)
    mount = tmp_path / "mount"
    mount.mkdir()
    target = Target("path", mount, "localdir", "default", host=one, hosts=(one, two))
    largefile = workload("largefile", {"sizes": ["4MiB"]})
    raw = tmp_path / "cell" / "raw"
    records = list(together.run(largefile, target, largefile.cells()[0],
                                scratch_of(tmp_path / "scratch-root"), raw, "largefile on 2 clients"))
    assert {m.params["host"] for m in records} == {"fd00::5", "../up", "all"}
    assert sorted(p.name for p in raw.iterdir()) == ["_2e._2fup", "_launch.json", "fd00_3a_3a5"]
    assert json.loads((raw / "_launch.json").read_text())["launcher"] == "exec"
    assert not (tmp_path / "cell" / "up").exists()


@pytest.mark.parametrize("first, second", [("fd00::5", "FD00:0:0::5"), ("fd00::5", "[fd00:0::5]"),
                                           ("Client1.", "client1")])
def test_one_machine_spelled_twice_is_refused_as_a_client_host_a_fio_server_and_a_gluster_server(
        tmp_path, first, second):
    key = tmp_path / "id"
    key.write_text("k")
    clients = [{"host": first, "key": str(key)}, {"host": second, "key": str(key), "name": "other"}]
    with pytest.raises(BadInput, match=r"is listed twice \(.* is the same machine\)"):
        build_plan({"environment": {"kind": "existing", "options": {"clients": clients}},
                    "workloads": [{"name": "largefile", "options": {"sizes": ["64MiB"]}}]})
    with pytest.raises(BadInput, match=r"fio server host .* is named twice"):
        build_plan({"workloads": [{**FIO, "options": {**FIO["options"], "servers": [first, "ip6:" + second]}}]})
    gluster = {"servers": [first, second], "volume": "v"}
    with pytest.raises(BadInput, match=r"servers: .* is given twice"):
        build_plan({"environment": {"kind": "existing", "options": {"gluster": gluster}}, "backends": ["glusterfs"],
                    "workloads": [{"name": "largefile", "options": {"sizes": ["64MiB"]}}]})


def test_two_zones_of_one_address_are_two_hosts(tmp_path):
    assert build_plan({"workloads": [{**FIO, "options": {**FIO["options"],
                                                         "servers": ["fe80::1%eth0", "fe80::1%eth1"]}}]})
