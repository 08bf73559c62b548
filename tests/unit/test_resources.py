"""Resources of lab nodes per cell, from real Docker stats API samples (one-shot, of a
container running one busy process, 'yes') and the node's /proc/PID/stat lines."""

from __future__ import annotations

import json
from pathlib import Path

from environments.node_stats import process_ticks, usage
from harness.api.records import Measurement
from harness.api.sampler import NodeUsage
from harness.execution.sampling import busiest, records
from harness.report.resources import table_rows

DATA = Path(__file__).parent.parent / "data"


def test_a_busy_process_is_one_core_and_named():
    stats = json.loads((DATA / "docker-stats-one-shot.json").read_text())
    start = process_ticks((DATA / "proc-stat-start.txt").read_text())
    end = process_ticks((DATA / "proc-stat-end.txt").read_text())
    assert {name for _, name in end} >= {"yes", "timeout", "sh"}
    u = usage("client1", (0.0, stats["start"], start), (2.0, stats["end"], end))
    assert 90 < u.cpu < 110  # one core, as docker stats shows it
    assert u.process == "yes" and 80 < u.process_cpu < 130
    assert u.memory > 0 and u.net_rx == 0 and u.blk_write == 0


def test_the_busiest_resource_is_the_highest_share_of_its_capacity():
    link = 125e6
    client = NodeUsage("client1", 10, 45.0, 1e8, 1e6, 118e6, 0, 0, "glusterfs", 40.0)
    server = NodeUsage("gluster1", 10, 70.0, 1e8, 39e6, 1e5, 0, 39e6, "glusterfsd", 65.0)
    node, resource, load = busiest([client, server], link)
    assert (node.node, resource) == ("client1", "network out") and 94 < load < 95
    stored = records([client, server], link, "largefile", {"file_size": 1 << 28}, "glusterfs", "default")
    assert {m.test for m in stored} == {"client1", "gluster1", "busiest"}
    assert all(m.unit in ("%", "B", "B/s") for m in stored)
    top = next(m for m in stored if m.test == "busiest")
    assert top.params["busiest"] == "client1: 94 % network out"
    # without a link, CPU decides, and the process is named with its share
    top = next(m for m in records([client, server], None, "largefile", {}, "glusterfs", "default")
               if m.test == "busiest")
    assert top.params["busiest"] == "gluster1: 70 % CPU (glusterfsd 65 %)"
    rows = table_rows([top, Measurement("fio", "x", "iops", 1, "op/s", {}, "cephfs")], lambda k: k[0])
    assert rows == [["largefile", "", "glusterfs", "gluster1: 70 % CPU (glusterfsd 65 %)"]]


def test_a_tool_that_ran_and_ended_within_the_cell_is_named():
    stats = json.loads((DATA / "docker-stats-one-shot.json").read_text())
    start = {(1, "sh"): 5, (20, "ceph-fuse"): 1000}
    # python3 (the engine) was seen mid-cell by the periodic look and had ended by the end
    seen = {(1, "sh"): 6, (20, "ceph-fuse"): 1040, (41, "python3"): 150}
    u = usage("client1", (0.0, stats["start"], start), (2.0, stats["end"], seen))
    assert u.process == "python3" and u.process_cpu == 75.0


def test_peaks_come_from_consecutive_samples():
    from environments.node_stats import peaks

    stats = json.loads((DATA / "docker-stats-one-shot.json").read_text())
    cpu, rx, tx = peaks([(0.0, stats["start"]), (0.2, stats["start"]), (2.0, stats["end"])])
    assert 90 < cpu < 130 and rx == 0 and tx == 0  # (the 0.2 s pair is too short to count)
    assert peaks([(0.0, stats["start"])]) == (0.0, 0.0, 0.0)
    busy = NodeUsage("client1", 30, 20.0, 0, 0, 10e6, 0, 0, peak_net_tx=110e6)
    assert busiest([busy], 125e6)[1:] == ("network out", 88.0)
