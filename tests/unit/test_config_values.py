"""A config's values as their keys read them (issue 31, part 4): a value is compared, bounded
and stored after it is parsed into its type — two spellings of one size are one point, a
rate of a tenth of a bit is no link, a digit is an ASCII digit, and no stored text keeps a
control character. Each case here passed 'check' before the fix."""

from __future__ import annotations

import pytest

from harness.errors import BadInput
from harness.execution.plan import build_plan
from harness.units import parse_rate, parse_size
from tests.unit.builders import LARGEFILE, existing

SMALLFILE = {"backends": ["localdir"], "workloads": [{"name": "smallfile", "options": {"files": [100],
                                                                                    "file_size": "4KiB"}}]}
GLUSTER = {"environment": "docker", "backends": ["glusterfs"],
           "workloads": [{"name": "largefile", "options": {"sizes": ["64MiB"]}}]}


def docker(**options):
    return {**GLUSTER, "environment": {"kind": "docker", "options": options}}


@pytest.mark.parametrize("config, says", [
    ({**SMALLFILE, "sweep": {"threads": [4, 4.0]}}, r"sweep.threads\[1\]: 4 is given twice"),
    ({**LARGEFILE, "workloads": [{"name": "largefile"}], "sweep": {"sizes": ["64MiB", 67108864]}},
     r"sweep.sizes\[1\]: 64 MiB is given twice \(sweep.sizes\[0\] is \"64MiB\", and this 67108864\)"),
    ({**LARGEFILE, "workloads": [{"name": "largefile"}], "sweep": {"sizes": ["64MiB", "65536KiB", "64 MiB"]}},
     r"sweep.sizes\[1\]: 64 MiB is given twice"),
    ({**GLUSTER, "sweep": {"link": ["1Gbit", "1GbE", "125MB/s"]}}, r"sweep.link\[1\]: .* is given twice"),
    ({**GLUSTER, "sweep": {"link": ["125MB/s", {"rate": "1Gbit"}]}}, r"sweep.link\[1\]: .* is given twice"),
    ({**GLUSTER, "workloads": [{"name": "largefile", "clients": "all", "options": {"sizes": ["64MiB"]}}],
      "sweep": {"clients": [2, 2]}}, r"sweep.clients\[1\]: 2 is given twice"),
])
def test_a_sweep_point_given_twice_in_two_spellings_is_refused(config, says):
    with pytest.raises(BadInput, match=says):
        build_plan(config)


@pytest.mark.parametrize("config, says", [
    ({**SMALLFILE, "workloads": [{"name": "smallfile", "options": {"files": [100, 100.0], "file_size": "4KiB"}}]},
     "files: 100 is given twice"),
    ({**LARGEFILE, "workloads": [{"name": "largefile", "options": {"sizes": ["64MiB", "65536KiB"]}}]},
     "sizes: 64 MiB is given twice"),
])
def test_any_list_of_a_config_compares_its_items_as_parsed(config, says):
    """(The options' lists were compared validated before; the sweep's lists now go
    through the same comparison, harness.api.model.twice.)"""
    with pytest.raises(BadInput, match=says):
        build_plan(config)


def test_distinct_points_still_pass():
    plan = build_plan({**GLUSTER, "sweep": {"link": ["1Gbit", "100MB/s"]}})
    assert [p.link for p in plan.points] == [125e6, 100e6]
    plan = build_plan({**SMALLFILE, "sweep": {"threads": [1, 4]}})
    assert [p.values for p in plan.points] == [{"threads": 1}, {"threads": 4}]


@pytest.mark.parametrize("config, says", [
    (docker(link={"rate": "0.1bit"}), r"environment.options.link.rate: 0.1bit is no link's rate: at least 1 kbit/s"),
    (docker(link={"rate": "1bit"}), "at least 1 kbit/s"),
    (docker(link={"rate": "999bit"}), "at least 1 kbit/s"),
    (docker(client_links={"client1": {"rate": "1bit"}}), "at least 1 kbit/s"),
    ({**GLUSTER, "sweep": {"link": ["1Gbit", "0.1bit"]}}, r"sweep.link\[1\]: 0.1bit is no link's rate"),
    ({**LARGEFILE, "limits": {"network": "0.1bit"}}, "limits.network: 0.1bit is no link's rate: at least 1 kbit/s"),
    (docker(sample_every_s=1e-9), r"sample_every_s: 1e-09 s: a sample period is at least 0.1 s"),
    (docker(sample_every_s=0.05), "at least 0.1 s"),
])
def test_a_rate_or_a_period_below_its_physical_bound_is_refused_naming_it(config, says):
    with pytest.raises(BadInput, match=says):
        build_plan(config)


def test_the_slowest_link_and_period_allowed_pass():
    assert build_plan(docker(link={"rate": "1kbit"}, sample_every_s=0.1))
    assert build_plan(docker(sample_every_s=0))  # (0: a cell's start and end only)


@pytest.mark.parametrize("text", ["１Gbit", "٣Gbit", "1Gbit\n", "1\u212abit", "1Gbit\t"])
def test_a_rate_is_ascii_on_one_line(text):
    with pytest.raises(ValueError, match="is not a rate"):
        parse_rate(text)


@pytest.mark.parametrize("text", ["６4MiB", "٦٤MiB", "64MiB\n", "\n64MiB", "64\tMiB"])
def test_a_size_is_ascii_on_one_line(text):
    with pytest.raises(ValueError, match="is not a size"):
        parse_size(text)


def test_blanks_around_a_value_are_still_read():
    assert parse_rate(" 10 GbE ") == 1.25e9
    assert parse_size(" 64 MiB ") == 64 << 20


@pytest.mark.parametrize("config, says", [
    ({**LARGEFILE, "limits": {"network": "１Gbit"}}, "limits.network: '１Gbit' is not a rate"),
    (docker(link={"rate": "٣Gbit"}), "environment.options.link.rate: '٣Gbit' is not a rate"),
    ({**LARGEFILE, "workloads": [{"name": "largefile", "options": {"sizes": ["６4MiB"]}}]},
     r"sizes\[0\]: '６4MiB' is not a size"),
    # a line break is kept nowhere: not in the link the records carry, not in any other text
    (docker(link={"rate": "1Gbit\n"}), "environment.options.link.rate: a control character"),
    ({**GLUSTER, "sweep": {"link": ["1Gbit\n"]}}, r"sweep.link\[0\]: a control character"),
    ({**LARGEFILE, "backends": [{"name": "localdir", "variant": "default",
                                 "options": {"path": "/tmp/x\n"}}]}, r"backends\[0\].options.path: a control character"),
    ({**LARGEFILE, "backends": [{"name": "localdir", "variant": "default",
                                 "options": {"path": "/tmp/x\u202etxt.sh"}}]}, r"backends\[0\].options.path: a control"),
    ({**LARGEFILE, "environment": {"kind": "existing", "options": {"gluster": {"volume": "v\x1b[31m",
                                                                            "servers": ["g1"]}}}},
     r"environment.options.gluster.volume: a control character"),
])
def test_no_value_of_a_config_holds_a_control_character_or_a_foreign_digit(config, says):
    with pytest.raises(BadInput, match=says):
        build_plan(config)


@pytest.mark.parametrize("client, says", [
    ({"host": "[::1"}, r"clients\[0\].host: '\[::1' is neither an IP address nor a host's DNS name"),
    ({"host": ":::"}, "':::' is neither an IP address"),
    ({"host": "_"}, "'_' is neither an IP address"),
    ({"host": "1.2.3"}, "'1.2.3' is neither an IP address"),
    ({"host": "-oProxyCommand=x"}, "is neither an IP address"),
    ({"host": "all"}, r"clients\[0\].host: 'all' is the name the records give an aggregate"),
    ({"host": "10.0.0.1", "name": "total"}, r"clients\[0\].name: 'total' is the name the records give"),
    ({"host": "10.0.0.1", "name": "All"}, "is the name the records give an aggregate"),
])
def test_a_client_host_is_an_address_or_a_dns_name_and_no_aggregate(tmp_path, client, says):
    with pytest.raises(BadInput, match=says):
        build_plan(existing(tmp_path, **client))


@pytest.mark.parametrize("host", ["10.0.0.1", "::1", "[::1]", "fe80::1%eth0", "client1", "c-1.example.com."])
def test_addresses_and_names_of_hosts_pass(tmp_path, host):
    assert build_plan(existing(tmp_path, host=host))


@pytest.mark.parametrize("servers, says", [
    (["all"], "is the name the records give an aggregate"),
    (["[::1"], "is neither an IP address"),
    (["node1,٣"], "is not a fio server"),
])
def test_a_fio_server_is_a_host_too(servers, says):
    with pytest.raises(BadInput, match=says):
        build_plan({"workloads": [{"name": "fio", "options": {"size": "64MiB", "runtime_s": 5, "servers": servers}}]})


def test_a_process_fault_on_a_node_that_runs_no_data_process_is_refused_at_check():
    config = {**GLUSTER, "backends": ["cephfs"], "workloads": [
        {"name": "largefile", "options": {"sizes": ["64MiB"]},
         "fault": {"action": "kill", "target": "process", "node": "ceph-mon1", "after_s": 2}}]}
    with pytest.raises(BadInput, match="fault node 'ceph-mon1' runs no data process of ceph") as err:
        build_plan(config)
    assert "ceph-osd1" in err.value.hint
    config["workloads"][0]["fault"]["node"] = "ceph-osd2"
    assert build_plan(config)
    config["workloads"][0]["fault"] = {"action": "kill", "target": "node", "node": "ceph-mon1", "after_s": 2}
    assert build_plan(config)


def ceph_site(**ceph):
    return {"environment": {"kind": "existing", "options": {"ceph": {"mon_addr": "10.0.0.1:6789", **ceph}}},
            "backends": ["cephfs"], "workloads": [{"name": "largefile", "options": {"sizes": ["64MiB"]}}]}


@pytest.mark.parametrize("config, says", [
    (ceph_site(key="A" * 100_000), r"ceph: key: not a Ceph key \(base64 of 16 to 200 characters"),
    (ceph_site(key="file:/tmp/" + "a" * 100_000), "ceph.key: cannot read file .*: a path longer than Linux allows"),
    ({**LARGEFILE, "environment": {"kind": "existing", "options": {
        "clients": [{"host": "h", "key": "/tmp/" + "k" * 100_000}]}}},
     r"clients\[0\]: client host h: key: a path longer than Linux allows"),
    ({**LARGEFILE, "environment": {"kind": "existing", "options": {
        "clients": [{"host": "h", "password": "file:/" + "p" * 300}]}}},
     r"clients\[0\].password: cannot read file .*: a path longer than Linux allows"),
])
def test_an_overlong_key_or_key_path_is_refused_naming_its_key(config, says):
    with pytest.raises(BadInput, match=says) as err:
        build_plan(config)
    assert "File name too long" not in str(err.value)


@pytest.mark.parametrize("ceph, says", [
    ({"key": "A" * 100_000}, r"ceph: key: not a Ceph key"),
    ({"keyring": "/" + "k" * 5000}, r"ceph.keyring: a path longer than Linux allows \(4096 bytes"),
    ({"conf": "/" + "c" * 300}, r"ceph.conf: a path longer than Linux allows"),
])
def test_a_refused_value_is_said_without_the_list_of_keys(ceph, says):
    with pytest.raises(BadInput, match=says) as err:
        build_plan(ceph_site(**ceph))
    assert err.value.hint is None and "items after validation" not in err.value.message


def test_an_unknown_or_missing_key_still_lists_the_keys():
    with pytest.raises(BadInput, match="unknown key") as err:
        build_plan(ceph_site(keyfile="x"))
    assert err.value.hint is None  # (ceph's own keys are not environment.options')
    with pytest.raises(BadInput, match="environment.options.colour: unknown key") as err:
        build_plan({**ceph_site(), "environment": {"kind": "existing", "options": {"colour": 1}}})
    assert err.value.hint.startswith("environment.options accepts: ") and "ceph" in err.value.hint
    assert "lab_dir, clients" in err.value.hint and "launcher, ranks_per_client" in err.value.hint


def test_a_ceph_key_of_cephs_own_length_passes():
    assert build_plan(ceph_site(key="AQBzbG9rZXlvbmx5Zm9ydGVzdGluZ2Rmc2Jlbg==", fs_name="cephfs"))


def test_a_sweep_of_more_clients_than_the_lab_can_have_names_the_sweep():
    config = {**GLUSTER, "workloads": [{"name": "largefile", "clients": "all", "options": {"sizes": ["64MiB"]}}],
              "sweep": {"clients": [1, 1_000_000_000]}}
    with pytest.raises(BadInput, match=r"^sweep.clients\[1\]: 1000000000 client hosts are more than environment "
                                       "'docker' can have"):
        build_plan(config)


@pytest.mark.parametrize("environment, says", [
    ({"kind": "local", "options": {"lab_dir": "../../../../../../../../.."}},
     r"environment.options.lab_dir: .* is a directory of the system \(it resolves to /\)"),
    ({"kind": "local", "options": {"lab_dir": "/etc"}}, "lab_dir: /etc is a directory of the system"),
    ({"kind": "local", "options": {"lab_dir": "/usr/lib"}}, "is a directory of the system"),
    ({"kind": "local", "options": {"lab_dir": "/etc/dfsbench"}}, "is a directory of the system"),
    ({"kind": "local", "options": {"lab_dir": "/proc/self/cwd"}}, "is a directory of the system"),
    ({"kind": "local", "options": {"lab_dir": "/tmp"}}, "a directory others use too"),
    ({"kind": "docker", "options": {"lab_dir": "/var/tmp/"}}, "a directory others use too"),
    ({"kind": "existing", "options": {"workdir": "../../../../../../../../etc"}},
     r"environment.options.workdir: .* is a directory of the system \(it resolves to /etc\)"),
])
def test_a_lab_directory_is_a_dedicated_one_not_the_systems(environment, says):
    with pytest.raises(BadInput, match=says):
        build_plan({**LARGEFILE, "environment": environment})


def test_a_lab_directory_through_a_link_to_the_system_is_refused(tmp_path):
    (tmp_path / "lab").symlink_to("/etc")
    with pytest.raises(BadInput, match=r"it resolves to /etc"):
        build_plan({**LARGEFILE, "environment": {"kind": "local", "options": {"lab_dir": str(tmp_path / "lab")}}})


def test_a_lab_directory_from_the_environment_variable_is_checked_too(monkeypatch):
    monkeypatch.setenv("DFSBENCH_LOCAL_LAB_DIR", "/")
    with pytest.raises(BadInput, match=r"\$DFSBENCH_LOCAL_LAB_DIR: the lab directory / is a directory of the system"):
        build_plan({**LARGEFILE, "backends": ["cephfs"]})


@pytest.mark.parametrize("path", ["/proc/sys", "/sys/kernel", "/dev/x", "/dev", "/", "/etc", "/usr", "/usr/local",
                                  "/usr/local/bin", "/usr/lib/x86_64-linux-gnu", "/bin", "/var", "/var/lib",
                                  "/var/lib/docker", "/var/log/journal", "/boot/efi", "/run"])
def test_localdir_is_no_directory_of_the_system(path):
    with pytest.raises(BadInput, match=r"backends\[0\].options.path: .* is a directory of the system"):
        build_plan({**LARGEFILE, "backends": [{"name": "localdir", "options": {"path": path}}]})


@pytest.mark.parametrize("path", ["/mnt", "/mnt/disk1", "/srv", "/srv/bench", "/opt/bench", "/media/usb",
                                  "/dev/shm", "/dev/shm/bench", "/home", "/run/media/me/disk", "/var/lib/docker/x"])
def test_localdir_measures_where_a_disk_is_mounted_or_in_memory(path):
    """localdir writes its files into the path itself: the usual mount point of the disk under
    test (/mnt, /srv/bench) or a tmpfs baseline (/dev/shm/bench)."""
    assert build_plan({**LARGEFILE, "backends": [{"name": "localdir", "options": {"path": path}}]})


@pytest.mark.parametrize("lab_dir, says", [
    ("/mnt", "a directory others use too"), ("/srv", "a directory others use too"),
    ("/dev/shm", "a directory others use too"), ("/home", "a directory others use too"),
    ("/usr/local/bin", "a directory of the system"), ("/var/lib/docker", "a directory of the system"),
    ("/dev/x", "a directory of the system")])
def test_a_lab_directory_is_none_that_holds_others_files(lab_dir, says):
    with pytest.raises(BadInput, match=f"lab_dir: {lab_dir} is {says}"):
        build_plan({**LARGEFILE, "environment": {"kind": "local", "options": {"lab_dir": lab_dir}}})


@pytest.mark.parametrize("lab_dir", ["/dev/shm/lab", "/mnt/disk1/lab", "/srv/dfsbench-lab"])
def test_a_lab_directory_of_its_own_under_them_passes(lab_dir):
    assert build_plan({**LARGEFILE, "environment": {"kind": "local", "options": {"lab_dir": lab_dir}}})


def test_a_dedicated_lab_directory_and_a_directory_to_measure_pass(tmp_path):
    assert build_plan({**LARGEFILE, "environment": {"kind": "local", "options": {"lab_dir": str(tmp_path / "lab")}}})
    assert build_plan({**LARGEFILE, "backends": [{"name": "localdir", "options": {"path": "/tmp"}}]})


@pytest.mark.parametrize("backend, longest", [("cephfs", 87), ("glusterfs", 79)])
def test_a_lab_directory_leaves_room_for_its_daemons_sockets(backend, longest):
    """The longest socket of a daemon: a Ceph OSD's admin socket, ceph/run/osd.2.asok (20 bytes
    after the lab's path, of 3 OSDs), glusterd's, gluster/run/glusterd.socket (28)."""
    def plan(length):
        lab = "/tmp/" + "x" * (length - 5)
        return build_plan({**LARGEFILE, "backends": [backend],
                           "environment": {"kind": "local", "options": {"lab_dir": lab}}})
    assert plan(longest)
    with pytest.raises(BadInput, match=rf"environment.options.lab_dir: .* is {longest + 1} bytes long, and the "
                                       rf"\w+ daemons' unix sockets under it would be 108 .* at most 107 bytes "
                                       r"\(sun_path\)") as err:
        plan(longest + 1)
    assert f"a lab_dir of at most {longest} bytes" in err.value.hint
    with pytest.raises(BadInput, match="sun_path"):
        plan(163)


FIO = {"size": "64MiB", "runtime_s": 5}


@pytest.mark.parametrize("config, says", [
    ({"environment": {"kind": "local", "options": {"gluster_bricks": 4}}, **LARGEFILE},
     "gluster_bricks, gluster_replica: 4 bricks cannot form replica-3 sets"),
    ({"environment": {"kind": "local", "options": {"ceph_osds": 2}}, **LARGEFILE},
     "ceph_replicas: 3 copies need as many OSDs"),
    ({"environment": "local", **LARGEFILE, "backends": [{"name": "cephfs", "options": {"replicas": 5}}]},
     r"backends\[0\].options.replicas: cephfs/default: a pool of 5 copies needs as many OSDs"),
    ({**GLUSTER, "backends": [{"name": "rbd", "options": {"replicas": 4}}], "workloads": [{"name": "fio", "options": FIO}]},
     r"backends\[0\].options.replicas: rbd/default: a pool of 4 copies needs as many OSD nodes"),
    ({**GLUSTER, "workloads": [{"name": "fio", "options": {**FIO, "local_servers": 2}}]},
     r"workloads\[0\].options.local_servers: 'fio' would run its load on this machine"),
    ({**LARGEFILE, "workloads": [{"name": "fio", "options": {**FIO, "runtime_s": 60, "deadline_s": 10}}]},
     "deadline_s: 10 s is shorter than runtime_s"),
])
def test_what_the_run_would_refuse_in_the_cell_is_refused_at_check(config, says):
    with pytest.raises(BadInput, match=says):
        build_plan(config)


def test_local_servers_pass_where_this_machine_is_the_client(tmp_path):
    assert build_plan({**LARGEFILE, "workloads": [{"name": "fio", "options": {**FIO, "local_servers": 2}}]})
    site = {"environment": {"kind": "existing", "options": {"lab_dir": str(tmp_path / "lab")}}}
    assert build_plan({**LARGEFILE, **site, "workloads": [{"name": "fio", "options": {**FIO, "local_servers": 2}}]})


# what check accepted and the run measured other than it said, or refused, only in the cell
# (issue 31, section 6): one rule each, asked by check of the plan and by the run of the cell

RBD = {"environment": "local", "backends": [{"name": "rbd", "options": {"image_size": "1GiB"}}]}
LOOP = {"environment": "local", "backends": ["localdir", {"name": "blockdev", "options": {
    "loop_size": "64MiB", "allow_destructive": True}}]}


def fio(**options):
    return [{"name": "fio", "options": {**FIO, **options}}]


@pytest.mark.parametrize("config, says", [
    ({**RBD, "workloads": fio(size="4GiB")}, r"workloads\[0\].options.size: 4 GiB is more than the rbd target of "
     r"backends\[0\] \(rbd/default, options.image_size\) holds \(1 GiB\): fio would keep its I/O within its 1 GiB"),
    ({**LOOP, "workloads": fio(size="256MiB")}, r"workloads\[0\].options.size: 256 MiB is more than the block "
     r"target of backends\[1\] \(blockdev/default, options.loop_size\) holds \(64 MiB\)"),
    ({**RBD, "workloads": fio(), "sweep": {"size": ["64MiB", "2GiB"]}}, r"sweep.size: 2 GiB is more than the rbd"),
])
def test_fio_size_past_the_end_of_an_image_or_a_loop_device_is_refused_at_check(config, says):
    with pytest.raises(BadInput, match=says) as err:
        build_plan(config)
    assert "give size at most" in err.value.hint


def test_fio_size_within_the_device_passes():
    # (one job's size, whatever numjobs: every job of a profile works on the device from its start)
    assert build_plan({**RBD, "workloads": fio(size="1GiB", numjobs=4)})
    assert build_plan({**LOOP, "workloads": fio(size="64MiB")})
    # a file system on the image: its free space is checked before each cell, as any mount's
    on_image = {"name": "rbd", "options": {"image_size": "1GiB", "access": "filesystem"}}
    assert build_plan({**RBD, "backends": [on_image], "workloads": fio(size="64MiB")})


def test_the_run_refuses_a_cell_past_the_end_of_its_device_by_the_same_rule(tmp_path):
    from harness.api.target import BlockAccess, Target
    from harness.errors import DfsbenchError
    from harness.execution.checks import room_for
    from workloads.fio import Fio
    from workloads.fio.profiles import FioOptions

    workload = Fio(FioOptions(size="4GiB", runtime_s=5))
    image = Target("rbd", None, "rbd", "default", holds=1 << 30)
    with pytest.raises(DfsbenchError, match="fio's size: 4 GiB is more than the rbd target of rbd/default holds "
                                            r"\(1 GiB\)"):
        room_for(workload, workload.cells()[0], image)
    room_for(Fio(FioOptions(size="1GiB", runtime_s=5)), workload.cells()[0], image)
    device = Target("block", None, "blockdev", "default", access=BlockAccess("/dev/loop9"), holds=64 << 20)
    with pytest.raises(DfsbenchError, match="the block target of blockdev/default holds"):
        room_for(workload, workload.cells()[0], device)


FAULT = {"action": "kill", "after_s": 30}


@pytest.mark.parametrize("workload, says", [
    ({"name": "fio", "options": FIO, "fault": FAULT}, r"workloads\[0\].fault.after_s: 30 s into the cell's timed "
     r"phase is past its end \(it lasts 5 s, as runtime_s makes it\): the fault would never be done"),
    ({"name": "fio", "options": FIO, "fault": {**FAULT, "after_s": 5}}, r"after_s: 5 s .*it lasts 5 s"),
    ({"name": "rados-bench", "options": {"seconds": 5, "modes": ["write", "seq", "rand"]}, "fault": FAULT},
     r"after_s: 30 s .*it lasts 15 s, as seconds makes it"),
])
def test_a_fault_after_the_cells_timed_phase_is_refused_at_check(workload, says):
    with pytest.raises(BadInput, match=says):
        build_plan({"environment": "docker", "backends": ["cephfs", "rados"], "workloads": [workload]})


def test_a_fault_within_the_timed_phase_or_of_a_cell_of_no_declared_length_passes():
    def plan(workload):
        return build_plan({"environment": "docker", "backends": ["cephfs", "rados"], "workloads": [workload]})

    assert plan({"name": "fio", "options": FIO, "fault": {**FAULT, "after_s": 4.5}})
    assert plan({"name": "rados-bench", "options": {"seconds": 5}, "fault": {**FAULT, "after_s": 14}})
    # a copy takes what it takes: the run stores a 'no-fault' record where its time never came
    assert plan({"name": "largefile", "options": {"sizes": ["64MiB"]}, "fault": {**FAULT, "after_s": 3600}})


def test_a_fault_after_a_swept_runtime_is_refused():
    with pytest.raises(BadInput, match=r"fault.after_s: 4 s .*it lasts 3 s, as runtime_s"):
        build_plan({"environment": "docker", "backends": ["cephfs"], "sweep": {"runtime_s": [10, 3]},
                    "workloads": [{"name": "fio", "options": FIO, "fault": {**FAULT, "after_s": 4}}]})


def test_all_clients_on_an_image_or_a_device_is_refused_at_check():
    """(Where the environment measures from one client host it was refused already.)"""
    with pytest.raises(BadInput, match=r"workloads\[0\].options.all_clients: backends\[1\] \(rbd/default\) hands "
                                       r"out 'rbd' targets: fio would run on every client node at once"):
        build_plan({"environment": "docker", "backends": ["cephfs", "rbd"], "workloads": fio(all_clients=True)})
    with pytest.raises(BadInput, match=r"workloads\[0\]: 'all_clients' on environment 'local', which measures "
                                       "from one client host"):
        build_plan({**RBD, "workloads": fio(all_clients=True)})
    assert build_plan({"environment": "docker", "backends": ["cephfs", "glusterfs"], "workloads": fio(all_clients=True)})
