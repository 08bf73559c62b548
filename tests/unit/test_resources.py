"""Resources of lab nodes per cell, from real Docker stats API samples (one-shot, of a
container running one busy process, 'yes') and the node's /proc/PID/stat lines; each set
against its capacity, and this machine's own load."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from environments.node_stats import NodeSampler, increase, process_ticks, running, stamp, usage
from environments.nodes import Node
from harness.api.records import Measurement
from harness.api.sampler import NodeUsage
from harness.execution.group import Group
from harness.execution.sampling import records
from harness.report.limits import annotate
from harness.report.resources import table_rows
from harness.units import parse_rate
from tests.unit.builders import lab, replay

DATA = Path(__file__).parent.parent / "data"


def samples():
    stats = json.loads((DATA / "docker-stats-one-shot.json").read_text())
    return stats["start"], stats["end"]


def test_a_busy_process_is_one_core_over_the_payloads_own_time_and_named():
    start, end = samples()
    before = process_ticks((DATA / "proc-stat-start.txt").read_text())
    after = process_ticks((DATA / "proc-stat-end.txt").read_text())
    assert {name for _, name in after} >= {"yes", "timeout", "sh"}
    assert stamp(end) - stamp(start) == pytest.approx(2.1043974, abs=1e-5)  # (from 'read', not the clock)
    u = usage("client1", [(stamp(start), start, before), (stamp(end), end, after)])
    assert 90 < u.cpu < 110 and u.cores == 2  # one core of the two this machine has
    assert u.process == "yes" and 80 < u.process_cpu < 130
    assert u.memory > 0 and u.net_rx == 0 and u.blk_write == 0
    # the peak's window is the only one here: its process is the one named beside it
    assert u.peak_process == "yes" and u.peak_cpu == pytest.approx(u.cpu)


def test_a_counter_reset_by_a_restart_gives_no_negative_figure():
    start, end = samples()
    restarted = copy.deepcopy(start)  # the container came back: its counters start again
    restarted["read"] = "2026-11-23T08:11:03.685389904Z"
    restarted["cpu_stats"]["cpu_usage"]["total_usage"] = 50_000_000
    series = [(stamp(s), s, None) for s in (start, end, restarted)]
    u = usage("gluster2", series)
    # 2.0886 s of CPU before the restart and 0.05 s after, over 5.104 s of payload time
    # (read as one difference, first to last, it would be −32.5 %)
    assert u.cpu == pytest.approx(41.897, abs=0.001)
    assert increase([10.0, 30.0, 5.0, 8.0]) == 28.0


def test_a_stopped_nodes_payload_is_no_sample():
    start, end = samples()
    # what the engine answers for a killed container: zero time, no counters
    stopped = {"read": "0001-01-01T00:00:00Z", "preread": "0001-01-01T00:00:00Z", "cpu_stats":
               {"cpu_usage": {"total_usage": 0}, "system_cpu_usage": 0, "online_cpus": 0}, "memory_stats": {},
               "networks": {}}
    assert stamp(stopped) is None and not running(stopped) and running(end)
    answers = iter([start, end, stopped])

    class Engine:
        class containers:
            @staticmethod
            def get(name):
                class C:
                    @staticmethod
                    def stats(stream, one_shot):
                        return next(answers)
                return C

    node = Node("dfsbench-x-gluster2", "gluster2")
    sampler = NodeSampler([node], every_s=0)
    sampler._docker = Engine
    for _ in range(3):
        sampler._sample(node, processes=False)
    assert [when for when, _, _ in sampler.series["gluster2"]] == [stamp(start), stamp(end)]
    u = usage("gluster2", sampler.series["gluster2"])
    assert 90 < u.cpu < 110 and u.cores == 2


def node_records(usages):
    return [Measurement(m.workload, m.test, m.metric, m.value, m.unit,
                        {**m.params, "started": 100.0, "ended": 110.0}, m.backend, m.variant, run_id="report-2014")
            for m in records(usages, Group("largefile", {"file_size": 1 << 28}, "glusterfs", "vr33"))]


def test_the_busiest_is_the_highest_share_of_a_capacity_not_of_one_core():
    info, _ = replay()
    link = parse_rate("1Gbit")
    run = lab(info, link)
    # a FUSE client at 98 % of one core (of 2: 49 %) while sending 118 MB/s of a 125 MB/s link
    client = NodeUsage("client1", 10, 98.0, 1e8, 1e6, 118e6, 0, 0, "glusterfs", 95.0, cores=2)
    server = NodeUsage("gluster1", 10, 70.0, 1e8, 39e6, 1e5, 0, 39e6, "glusterfsd", 65.0, cores=2)
    annotated = annotate(node_records([client, server]), {"report-2014": run})
    cpu = next(m for m in annotated if m.test == "client1" and m.metric == "cpu")
    assert cpu.params["share"] == 49.0 and cpu.params["capacity"] == "2 cores"
    rows = table_rows(annotated, lambda k: k[0])
    assert rows == [["largefile", "file_size=256 MiB", "glusterfs",
                     "client1: 94 % of its link 119.2 MiB/s (network out, over the cell)", "—", "—"]]
    # a client behind a link of its own is set against that link
    slow = lab(info, link, links={"client1": link / 4})
    rows = table_rows(annotate(node_records([client, server]), {"report-2014": slow}), lambda k: k[0])
    assert rows[0][3].startswith("client1: 378 % of its link 29.8 MiB/s")  # (more than it can carry: said)


def test_a_cell_while_this_machine_was_saturated_is_host_bound():
    info, _ = replay()
    run = lab(info, parse_rate("1Gbit"))

    def host(metric, value):
        return Measurement("resources", "host", metric, value, "%", {"for": "largefile", "file_size": 1 << 28,
                           "started": 100.0, "ended": 110.0, "cpus": 2, "disk": "vda"}, "glusterfs", "vr33",
                           run_id="report-2014")

    def write(started, ended):
        return Measurement("largefile", "write", "throughput", 1e6, "B/s", {"file_size": 1 << 28,
                           "started": started, "ended": ended}, "glusterfs", "vr33", run_id="report-2014")

    out = annotate([host("cpu_busy", 96.0), host("disk_busy", 40.0), write(102.0, 108.0), write(111.0, 115.0)],
                   {"report-2014": run})
    assert "host-bound" in out[2].flags and "host-bound" not in out[3].flags
    assert table_rows(out, lambda k: k[0])[0][5] == "CPUs 96 % busy, disk 40 % busy"
    calm = annotate([host("cpu_busy", 60.0), write(102.0, 108.0)], {"report-2014": run})
    assert "host-bound" not in calm[1].flags


def test_the_header_names_the_options_of_the_runs_config_that_would_lift_host_bound(tmp_path):
    """[B]'s advice names the keys of this run's config that set the lab's load on this
    machine, with their values, and 'run --repeat'; a run without host-bound records has none."""
    from harness.report.view import ViewRequest, build_view
    from harness.results.catalogue import Catalogue
    from harness.results.store import Store

    config = {"environment": {"kind": "docker", "options": {"clients": 3, "sample_every_s": 2}},
              "backends": ["glusterfs"],
              "workloads": [{"name": "fio", "options": {"numjobs": 4, "iodepth": 32, "runtime_s": 5}},
                            {"name": "smallfile", "options": {"threads": 8}}]}
    T = 1.8e9
    store = Store(tmp_path)
    store.begin_run("r", config, "h", {"cpus": 2}, "test")
    store.add_target("r", "glusterfs", "default", {"system": "glusterfs"})
    cell = '["glusterfs", "default", 0, "fio", {"profile": "p"}]'
    store.add(Measurement("resources", "host", "cpu_busy", 97.0, "%", {"for": "fio", "profile": "p", "cpus": 2,
                          "disk": "", "started": T + 100.0, "ended": T + 110.0}, "glusterfs", "default", "r"), cell)
    store.add(Measurement("fio", "p", "iops", 50.0, "op/s", {"rw": "randread", "host": "client1", "started": T + 101.0,
                          "ended": T + 109.0}, "glusterfs", "default", "r"), cell)
    store.close()
    header = "\n".join(build_view(Catalogue(tmp_path), ViewRequest(["r"])).header)
    assert "host-bound [B] in run r: 1 cell run(s) (a cell in one repeat) of fio" in header
    for key in ("environment.options.clients: 3", "environment.options.sample_every_s: 2",
                "workloads[0].options.numjobs: 4", "workloads[0].options.iodepth: 32", "--repeat 3"):
        assert key in header, key
    assert "workloads[1]" not in header  # (smallfile was not host-bound)


def test_the_host_bound_advice_reads_a_strangers_config_as_data(tmp_path):
    """A stored config is a stranger's: a workload named by a list is no workload (no
    traceback), and a system's node count under a name of its own (ceph_osd_nodes) is named."""
    from harness.report.view import ViewRequest, build_view
    from harness.results.catalogue import Catalogue
    from harness.results.store import Store

    T = 1.8e9
    config = {"environment": {"kind": "docker", "options": {"ceph_osd_nodes": 6, "sample_every_s": 0,
                                                           "ceph_osd_size_gib": 16}},
              "workloads": [{"name": ["fio"], "options": {"numjobs": 4}}, "fio", {"name": "fio", "options": [1]}]}
    store = Store(tmp_path)
    store.begin_run("r", config, "h", {"cpus": 2}, "test")
    store.add_target("r", "cephfs", "default", {"system": "cephfs"})
    store.add(Measurement("resources", "host", "cpu_busy", 97.0, "%", {"for": "fio", "cpus": 2, "disk": "",
                          "started": T, "ended": T + 10}, "cephfs", "default", "r"), "c")
    store.add(Measurement("fio", "p", "iops", 50.0, "op/s", {"started": T + 1, "ended": T + 9}, "cephfs", "default",
                          "r"), "c")
    store.close()
    header = "\n".join(build_view(Catalogue(tmp_path), ViewRequest(["r"])).header)
    assert "environment.options.ceph_osd_nodes: 6" in header and "workloads[0]" not in header
    assert "ceph_osd_size_gib" not in header  # (a size, not a count of nodes)
    assert "sample_every_s" not in header  # (0: it samples a cell's start and end only already)
