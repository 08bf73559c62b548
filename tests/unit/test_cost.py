"""What each GiB cost (harness.report.cost), on the records of a real container-lab run:
largefile 64 MiB (and smallfile, whose nodes' records are left out here) from two clients at
once on GlusterFS and on CephFS, twice, with the lab's three GlusterFS nodes and four Ceph
nodes all sampled in every cell (the idle system's too); and the nodes' CPU time from real
Docker stats payloads."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from environments.node_stats import spent, stamp, usage
from harness.api.records import OVER_CLIENTS, Measurement
from harness.cli import main
from harness.report import cost
from harness.report.verdicts import Systems
from tests.unit.builders import run_records, stored

DATA = Path(__file__).parent.parent / "data"
GIB = float(1 << 30)


def services(key):
    return Systems().of(key).services  # (as the backends declare them: glusterfs runs on 'gluster')


def nodes(records, backend, metric="cpu_time"):
    return {m.test: m for m in records if m.workload == "resources" and m.backend == backend and m.metric == metric}


def test_cpu_time_is_the_counters_increase_across_a_restart_and_memory_its_highest_sample():
    stats = json.loads((DATA / "docker-stats-one-shot.json").read_text())
    start, end = stats["start"], stats["end"]
    restarted = copy.deepcopy(start)  # the container came back: its counters start again
    restarted["read"] = "2026-11-23T08:11:03.685389904Z"
    restarted["cpu_stats"]["cpu_usage"]["total_usage"] = 50_000_000
    restarted["memory_stats"]["usage"] = 1 << 20
    series = [(stamp(s), s, None) for s in (start, end, restarted)]
    cpu_seconds, peak_memory = spent(series)
    # 2.0886 s of CPU before the restart and 0.05 s after (first to last: negative)
    assert cpu_seconds == pytest.approx(2.1386, abs=1e-4)
    assert cpu_seconds == pytest.approx(usage("gluster2", series).cpu / 100 * (series[-1][0] - series[0][0]))
    highest = max(s["memory_stats"]["usage"] - s["memory_stats"]["stats"].get("inactive_file", 0)
                  for s in (start, end))
    assert peak_memory == highest > 1 << 20


def test_cost_per_gib_counts_the_systems_own_nodes_over_what_its_clients_moved():
    records = run_records()
    found = {(c.backend, c.variant): c for c in cost.costs(records, services)}
    gluster = found[("glusterfs", "default")]
    # what moved: each client wrote and read back 64 MiB (their own records' bytes)
    assert gluster.moved == 4 * 64 * (1 << 20)
    cpu = nodes(records, "glusterfs")
    clients = cpu["client1"].value + cpu["client2"].value
    servers = sum(cpu[n].value for n in ("gluster1", "gluster2", "gluster3"))
    assert gluster.per_gib("client") == pytest.approx(clients / 0.25)
    assert gluster.per_gib("server") == pytest.approx(servers / 0.25)
    assert gluster.sides["server"].nodes == ("gluster1", "gluster2", "gluster3")
    ceph = found[("cephfs", "default")]
    assert ceph.sides["server"].nodes == ("ceph-mon1", "ceph-osd1", "ceph-osd2", "ceph-osd3")

    # the naive figures differ: every storage node of the lab (the idle Ceph nodes too) …
    everyone = sum(m.value for m in cpu.values() if m.params["role"] == "server")
    assert everyone / 0.25 > 1.1 * gluster.per_gib("server")
    # … the average CPU % over the cell's wall time (the runner's, not the sampled window) …
    percent = nodes(records, "glusterfs", "cpu")
    wall = {n: m.params["ended"] - m.params["started"] for n, m in percent.items()}
    naive = sum(percent[n].value / 100 * wall[n] for n in ("client1", "client2")) / 0.25
    assert abs(naive - gluster.per_gib("client")) > 0.05 * gluster.per_gib("client")
    # … or CPU per second over the aggregate's rate of the write (the cell also read)
    rate = next(m.value for m in records if m.backend == "glusterfs" and m.workload == "largefile"
                and m.test == "write" and m.metric == "throughput" and m.params.get("host") in OVER_CLIENTS)
    per_second = sum(percent[n].value / 100 for n in ("client1", "client2"))
    assert abs(per_second / (rate / GIB) - gluster.per_gib("client")) > 0.2 * gluster.per_gib("client")


def test_no_cost_where_nothing_moved_or_no_node_was_declared():
    records = run_records()
    idle = [m for m in records if m.workload == "resources"]  # the cell's records without the workload's
    assert cost.costs(idle, services) == []
    undeclared = [m if m.workload != "resources" else Measurement.from_dict(
        {**m.to_dict(), "params": {k: v for k, v in m.params.items() if k != "role"}}) for m in records]
    assert cost.costs(undeclared, services) == []


def test_an_environment_that_watches_only_its_clients_gives_the_client_side_and_says_so():
    records = [m for m in run_records() if m.params.get("role") != "server"]
    found = cost.costs(records, services)
    assert found and all(set(c.sides) == {"client"} for c in found)
    rows, notes = cost.table(found, lambda k: k[0])
    assert all(row[6] == "not sampled" for row in rows) and any("watched only its client hosts" in n for n in notes)
    assert {m.params["side"] for m in cost.cost_records(found)} == {"client"}
    assert "servers not sampled" in cost.sentence(found, ("glusterfs", "default"))


def test_compare_shows_the_cost_beside_the_throughput_and_exports_its_records(tmp_path, capsys):
    run_id = stored(tmp_path)
    assert main(["compare", run_id, "--format", "json", "--results", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    mine = [r for r in doc["records"] if r["metric"] == "cpu_s_per_gib"]
    assert sorted((r["backend"], r["params"]["side"], r["repeat"]) for r in mine) == sorted(
        (b, s, rep) for b in ("glusterfs", "cephfs") for s in ("client", "server") for rep in (0, 1))
    assert all(r["unit"] == "s/GiB" and r["params"]["moved"] == 4 * 64 * (1 << 20) for r in mine)
    assert main(["compare", run_id, "--format", "markdown", "--results", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    table = text[text.index(f"### {cost.TITLE}"):]
    row = next(line for line in table.splitlines() if line.startswith("| largefile") and "GlusterFS" in line)
    assert "write " in row and "MiB/s" in row and "(3 nodes)" in row and "(2 nodes)" in row
    assert text.index("The answer") < text.index(f"run {run_id}")  # (the answer opens the output)
    assert "GlusterFS — " in text and "CPU-s/GiB on the clients" in text
    assert main(["compare", run_id, "--format", "csv", "--results", str(tmp_path)]) == 0
    assert cost.TITLE in capsys.readouterr().out


def test_cells_of_every_table_sort_by_value_and_a_faults_phases_in_time_order():
    """The real run's cost of a cell, as cells of other sizes and of a fault's phases: the
    cost table ordered them as text ('256 MiB' before '64 MiB'; 'after, before, during'),
    the busiest-node table as recorded. Both order them by value, as every table does
    (harness.api.records.cell_order)."""
    from dataclasses import replace

    from harness.report import resources

    records = run_records()
    first = next(c for c in cost.costs(records, services) if c.backend == "glusterfs")
    cells = [{"for": "largefile", "file_size": 256 << 20}, {"for": "largefile", "file_size": 64 << 20},
             *({"for": "largefile", "file_size": 64 << 20, "phase": p} for p in ("after", "before", "during"))]
    rows, _ = cost.table([replace(first, cell=cell) for cell in cells], lambda k: k[0])
    assert [row[1] for row in rows] == ["file_size=64 MiB", "file_size=64 MiB phase=before",
                                        "file_size=64 MiB phase=during", "file_size=64 MiB phase=after",
                                        "file_size=256 MiB"]
    node = [m for m in records if m.workload == "resources" and m.backend == "glusterfs"
            and m.repeat == 0 and m.test not in ("busiest", "cost")]
    shown = [replace(m, params={**m.params, **cell}, cell=None) for cell in cells for m in node]  # (cells by params)
    assert [row[1] for row in resources.table_rows(shown, lambda k: k[0])] == [row[1] for row in rows]
