"""Well-typed nonsense: each config below has every value of the right type, and is refused
naming the key and the bound (issue 20, part 2). Before the fix, 41 of the first 44 refusals
here failed: the config passed 'check' (an empty list of backends ran the suite instead);
only a repeat of 0, a deadline of 0 and a size in EiB were refused."""

import pytest

from harness.errors import BadInput
from harness.execution.plan import build_plan

INF = float("inf")
FIO = {"size": "64MiB", "runtime_s": 5}
PROFILE = {"name": "p", "rw": "read", "bs": "4k"}
IOZONE = {"file_sizes": ["4MiB"], "record_sizes": ["64KiB"]}


def workload(name, **options):
    return {"workloads": [{"name": name, "options": options}]}


def backend(name, **options):
    return {"backends": [{"name": name, "options": options}], "workloads": ["fio"]}


def docker(**options):
    return {"environment": {"kind": "docker", "options": options}}


CASES = [
    ({"repeat": 0}, "repeat"), ({"repeat": True}, "repeat: true is a yes/no"),
    ({"repeat": 1000}, "less than or equal to 100"),
    ({"backends": []}, "backends: an empty list"), ({"workloads": []}, "workloads: an empty list"),
    ({"workloads": [{"name": "fio", "options": FIO}, {"name": "fio", "options": FIO}]}, "both make the cell"),
    ({"workloads": [{"name": "fio", "options": FIO}, {"name": "fio", "options": {**FIO, "direct": False}}]},
     "both make the cell"),
    (workload("fio", ioengine="null", **FIO), "ioengine"), (workload("fio", ioengine="exec", **FIO), "ioengine"),
    ({"backends": ["rados"], **workload("rados-bench", seconds=10 ** 12)}, "seconds"),
    ({"backends": ["rados"], **workload("rados-bench", seconds=10, modes=["write", "write"])},
     "write is given twice"),
    (workload("largefile", sizes=["9" * 400 + "KiB"]), "not a size any disk has"),
    ({"workloads": [{"name": "largefile", "options": {"sizes": ["64MiB"]}},
                    {"name": "largefile", "options": {"sizes": ["64MiB", "128MiB"]}}]}, "both make the cell"),
    ({"workloads": [{"name": "fio", "variant": "x", "options": FIO}]}, "variant: a workload has none"),
    (workload("fio", profiles=[PROFILE, {**PROFILE, "bs": "8k"}], **FIO), "profile name p is given twice"),
    (workload("fio", servers=["node1", "NODE1."], **FIO), "named twice"),
    (workload("fio", servers=["node1", "node1,8765"], **FIO), "named twice"),
    (workload("fio", servers=["node1,8771", "node1,8772"], **FIO), "named twice"),
    (workload("fio", servers=["node1,99999999"], **FIO), "is not a fio server"),
    (workload("fio", servers=["a;b"], **FIO), "is not a fio server"),
    (workload("fio", deadline_s=INF, **FIO), "finite"),
    (workload("fio", deadline_s=0, **FIO), "deadline_s"),
    (workload("fio", runtime_s=10 ** 9, size="64MiB"), "more than a week"),
    (workload("fio", runtime_s=True, size="64MiB"), "runtime_s: true is a yes/no"),
    (workload("fio", size="1000PiB", runtime_s=5), "more than any disk holds"),
    (workload("iozone", file_sizes=[], record_sizes=["64KiB"]), "file_sizes: an empty list"),
    (workload("iozone", file_sizes=["4MiB", "4096KiB"], record_sizes=["64KiB"]), "4 MiB is given twice"),
    (workload("iozone", record_sizes=["64KiB", "64KiB"], file_sizes=["4MiB"]), "is given twice"),
    (workload("iozone", modes=["direct", "direct"], **IOZONE), "direct is given twice"),
    (workload("iozone", modes=[], **IOZONE), "modes: an empty list"),
    (workload("iozone", tests=[0, 1, 1], **IOZONE), "1 is given twice"),
    (workload("iozone", file_sizes=["4MiB", 5000], record_sizes=["64KiB"]), "whole KiB"),
    (workload("iozone", file_sizes=[True], record_sizes=["64KiB"]), "file_sizes[0]: true is a yes/no"),
    # (a list that may be left out is a list of numbers all the same)
    (workload("fio", size="64MiB", runtime_s=3, load={"fraction_of_max": [True]}),
     "fraction_of_max[0]: true is a yes/no"),
    (workload("fio", size="64MiB", runtime_s=3, load={"iops": [True]}), "iops[0]: true is a yes/no"),
    ({"slo": {"p99": True}}, "p99: true is a yes/no"), ({"slo": {"p98": "1ms"}}, "'p98' is not a percentile"),
    ({"slo": {"p99": "1 fortnight"}}, "p99: '1 fortnight' is not a latency"),
    ({"slo": {"p99": "2h"}}, "p99: '2h' is not a latency"), ({"slo": {"p99": None}}, "p99: None is not a latency"),
    ({"slo": {"p99": [20]}}, "p99: [20] is not a latency"), ({"slo": {"p99": float("nan")}}, "p99"), ({"slo": {"p99": 7200}}, "at most an hour"),
    (workload("largefile", sizes=["1000PiB"]), "more than any disk holds"),
    (workload("largefile", sizes=["64MiB"], deadline_s=1e300), "more than a week"),
    (workload("smallfile", files=[10 ** 15], file_size="4KiB"), "less than or equal to 100000000"),
    (workload("smallfile", files=[100, 100], file_size="4KiB"), "100 is given twice"),
    (workload("smallfile", files=[100], file_size="4KiB", operations=["create", "create"]), "create is given twice"),
    ({"environment": {"kind": "local", "options": {"ceph_osd_size_gib": 10 << 30}}}, "ceph_osd_size_gib"),
    ({"limits": {"network": "0Gbit"}}, "no link's rate"), ({"limits": {"client_ram": "0"}}, "no machine's RAM"),
    ({"limits": {"client_ram": "1000PiB"}}, "no machine's RAM"),
    (docker(link={"rate": "0bit"}), "no link's rate"),
    ({**docker(), "backends": [{"name": "glusterfs", "options": {"layout": "disperse", "bricks": 6}}]},
     "backends[0].options.bricks: glusterfs/default: a disperse volume of 6 bricks over the lab's 3"),
    (docker(ready_timeout_s=INF), "finite"),
    ({**docker(), "workloads": [{"name": "largefile", "options": {"sizes": ["64MiB"]},
                                  "fault": {"action": "kill", "after_s": INF}}]}, "finite"),
    ({**docker(), "workloads": [{"name": "largefile", "options": {"sizes": ["64MiB"]},
                                  "fault": {"action": "kill", "after_s": 2, "restore_after_s": 1e9}}]},
     "more than a week"),
    ({**docker(), "workloads": [{"name": "largefile", "options": {"sizes": ["64MiB"]},
                                  "fault": {"action": "kill", "after_s": 2, "node": "gluster9"}}]},
     "fault node 'gluster9' is not a"),
    ({**docker(), "backends": ["glusterfs", "cephfs"],
      "workloads": [{"name": "largefile", "options": {"sizes": ["64MiB"]},
                     "fault": {"action": "kill", "after_s": 2, "node": "gluster2"}}]},
     "fault node 'gluster2' is not a ceph node"),
    (backend("rbd", image_size="2PiB"), "more than any disk holds"),
    # mkfs.xfs makes no file system under 300 MiB: refused at check, not by a usage dump at attach
    (backend("rbd", access="filesystem", fs="xfs", image_size="299MiB"), "at least 300 MiB"),
    ({"workloads": [{"name": "largefile", "clients": "all", "options": {"sizes": ["64MiB"]}}]},
     "measures from one client host"),
    (workload("fio", all_clients=True, **FIO), "measures from one client host"),
    (backend("glusterfs", replica=True), "replica: true is a yes/no"),
]


@pytest.mark.parametrize("config, says", CASES, ids=[str(i) for i in range(len(CASES))])
def test_well_typed_nonsense_is_refused_naming_the_key(config, says):
    with pytest.raises(BadInput) as err:
        build_plan(config)
    assert says in str(err.value), str(err.value)


def test_client_hosts_that_are_one_machine_are_refused(tmp_path):
    key = tmp_path / "id"
    key.write_text("k")
    hosts = [{"host": "Client1.", "key": str(key)}, {"host": "client1", "key": str(key), "name": "other"}]
    config = {"environment": {"kind": "existing", "options": {"clients": hosts}}, "backends": ["localdir"],
              "workloads": [{"name": "largefile", "options": {"sizes": ["64MiB"]}}]}
    with pytest.raises(BadInput, match=r"client host client1 \(port 22\) is listed twice \(Client1. is the same machine\)"):
        build_plan(config)


@pytest.mark.parametrize("config", [
    {"repeat": 100},
    workload("iozone", file_sizes=["4MiB", "8MiB"], record_sizes=["4KiB", "1MiB"], tests=[0, 1]),
    {**docker(), "backends": ["glusterfs"],
     "workloads": [{"name": "largefile", "options": {"sizes": ["64MiB"]},
                    "fault": {"action": "kill", "after_s": 2, "node": "gluster2"}}]},
    {"workloads": [{"name": "fio", "options": FIO}, {"name": "fio", "options": {**FIO, "profiles": "seed002"}}]},
    workload("fio", servers=["node1", "node2,8766"], **FIO),
    {**docker(), "workloads": [{"name": "largefile", "options": {"sizes": ["64MiB"]}},
                               {"name": "largefile", "options": {"sizes": ["64MiB"]},
                                "fault": {"action": "kill", "after_s": 2}},
                               {"name": "largefile", "options": {"sizes": ["64MiB"]}, "clients": "all"}]},
])
def test_sense_still_passes(config):
    assert build_plan(config).workloads


def test_check_says_when_a_cell_writes_more_than_the_local_lab_holds(tmp_path):
    """The local lab's sizes are known before it starts: 3 OSDs of 2 GiB, 3 copies, hold 2 GiB."""
    lab = {"kind": "local", "options": {"lab_dir": str(tmp_path / "lab"), "ceph_osd_size_gib": 2}}
    big = {"environment": lab, "backends": ["cephfs"],
           "workloads": [{"name": "largefile", "options": {"sizes": ["3GiB"]}}]}
    with pytest.raises(BadInput, match=r"workloads\[0\].options.sizes\[0\]: the largefile cell file_size=3 GiB writes 3 GiB, and cephfs/default on the local lab holds at most 2 GiB"):
        build_plan(big)
    assert build_plan({**big, "workloads": [{"name": "largefile", "options": {"sizes": ["1GiB"]}}]})


@pytest.mark.parametrize("backend_, options, says", [
    ("cephfs", {"client_options": {"log_file": "/etc/cron.d/x"}}, "not one of ceph-fuse's options"),
    ("cephfs", {"client_options": {"admin_socket": "/etc/x"}}, "not one of ceph-fuse's options"),
    ("cephfs", {"client_options": {"client_keyring_file": "/tmp/k"}}, "names a file"),
    ("cephfs", {"client_options": {"conf": "/tmp/evil.conf"}}, "not one of ceph-fuse's options"),
    ("glusterfs", {"volume_options": {"nonsense.key": "on"}}, "not one of gluster's options"),
    ("glusterfs", {"volume_options": {"diagnostics.client-log-file": "/x"}}, "names a file"),
])
def test_tool_option_keys_are_the_tools_own_and_name_no_file(backend_, options, says):
    with pytest.raises(BadInput, match=says):
        build_plan(backend(backend_, **options))


def test_tool_options_as_the_readme_gives_them_pass():
    assert build_plan(backend("cephfs", client_options={"client_oc_size": "104857600", "fuse_big_writes": "true"}))
    assert build_plan(backend("glusterfs", volume_options={"performance.cache-size": "256MB"}))
    assert build_plan(backend("rbd", access="filesystem", fs="xfs", image_size="300MiB"))
