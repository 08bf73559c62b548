"""Every output joins a cell's records by the cell's whole identity (harness.report.cells):
a run of GlusterFS with two fio cells that share every parameter but their profile — 4 KiB
random reads at 100 op/s per client (10 s), and 4 KiB random writes at 100 op/s per
client through a kill (before, during, after: 3 × 40 s) — on a lab that also holds Ceph's
nodes, one of which another run keeps busy during the writes. The records are what a run
stores: fio's records name their profile in their test, not in a param, as fio's parser
makes them; the nodes' records carry the cell's params, ``for`` and their role."""

from __future__ import annotations

from pathlib import Path

from harness.api.records import Measurement, unfit_reason
from harness.api.series import Series
from harness.results.catalogue import Catalogue
from harness.results.store import Store

T0 = 1.8e9
READ = '["glusterfs", "default", 0, ["fio", 1], {"offered_iops": 100, "profile": "randread-4k"}]'
WRITE = '["glusterfs", "default", 0, ["fio", 2], {"offered_iops": 100, "profile": "randwrite-4k"}]'
CLIENTS = ("client1", "client2")


def _rates(store: Store, cell: str, test: str, rw: str, phase: str | None, start: float, seconds: int) -> None:
    for host in CLIENTS:
        params = {"rw": rw, "bs": 4096, "iodepth": 16, "direction": "read" if rw == "randread" else "write",
                  "offered_iops": 100, "offered_iops_per_client": 100, "host": host, "started": start,
                  "ended": start + seconds, "ops": 100.0 * seconds, **({"phase": phase} if phase else {})}
        m = Measurement("fio", test, "iops", 100.0, "op/s", params, "glusterfs", "default", "j",
                        series=Series(tuple((start + i, 100.0) for i in range(seconds)), start + seconds, "progress"))
        store.add_series(store.add(m, cell), "j", m.series)  # type: ignore[arg-type]
        store.add(Measurement("fio", test, "lat_p99", 0.004, "s", params, "glusterfs", "default", "j"), cell)


def _node(store: Store, cell: str, profile: str, phase: str | None, node: str, role: str, serves: str,
          metric: str, value: float, start: float, end: float) -> None:
    """A node's record of a pass, sampled every 2 s from ``start`` to ``end``."""
    params = {"for": "fio", "profile": profile, "offered_iops": 100, "cores": 2, "process": "x", "process_cpu": 1.0,
              "peak_process": "x", "peak_process_cpu": 1.0, "role": role, "serves": serves,
              **({"phase": phase} if phase else {})}
    m = Measurement("resources", node, metric, value, "%" if metric == "cpu" else "B/s", params, "glusterfs",
                    "default", "j")
    points = tuple((t, value) for t in range(int(start), int(end), 2))
    store.add_series(store.add(m, cell), "j", Series(tuple((float(t), v) for t, v in points), end, "samples"))


def stored(root: Path, busy: float = 100e6) -> None:
    store = Store(root)
    store.begin_run("j", {"slo": {"p99": "20ms"}}, "h", {"cpus": 2}, "test")
    store.add_target("j", "glusterfs", "default", {"system": "glusterfs", "link": 125e6})
    # the reads: 10 s of I/O, sampled from 4 s before (its mount and layout) to 2 s after
    _rates(store, READ, "randread-4k", "randread", None, T0, 10)
    for node, role, serves, metric, value in (("client1", "client", "", "cpu", 20.0),
                                              ("client2", "client", "", "net_tx", 1e6),
                                              ("gluster1", "server", "gluster", "cpu", 30.0),
                                              ("ceph-osd2", "server", "ceph", "cpu", 1.0)):
        _node(store, READ, "randread-4k", None, node, role, serves, metric, value, T0 - 4, T0 + 12)
    # the writes through the kill: their passes 100 s later each; another run loads ceph-osd2
    for phase, at in (("before", 100.0), ("during", 200.0), ("after", 300.0)):
        _rates(store, WRITE, "randwrite-4k", "randwrite", phase, T0 + at, 40)
        for node, role, serves, metric, value in (("client1", "client", "", "cpu", 25.0),
                                                  ("client2", "client", "", "net_tx", 2e6),
                                                  ("gluster1", "server", "gluster", "cpu", 35.0),
                                                  ("ceph-osd2", "server", "ceph", "net_rx", busy)):
            _node(store, WRITE, "randwrite-4k", phase, node, role, serves, metric, value, T0 + at, T0 + at + 40)
    fault = Measurement("fault", "recovery", "elapsed", 3.0, "s",
                        {"for": "fio", "profile": "randwrite-4k", "offered_iops": 100, "fault": "gluster2 killed",
                         "injected": T0 + 210.0, "noticed": T0 + 212.0, "restored": T0 + 235.0,
                         "healthy": T0 + 238.0}, "glusterfs", "default", "j")
    store.add(fault, WRITE)
    store.close()


def _view(root: Path):  # type: ignore[no-untyped-def]
    from harness.report.view import ViewRequest, build_view

    return build_view(Catalogue(root), ViewRequest(["j"]))


def test_a_cells_timeline_draws_that_cell_alone_within_its_window(tmp_path):
    from harness.report.html import cell_timelines

    stored(tmp_path)
    figures = cell_timelines(_view(tmp_path))
    assert len(figures) == 2  # (a cell each)
    reads, writes = sorted(figures, key=lambda f: "randwrite" in f["title"])
    assert "offered_iops=100 profile=randread-4k" in reads["title"] and "profile=randwrite-4k" in writes["title"]
    nodes = [d for d in reads["data"] if d.get("yaxis") in ("y2", "y3")]
    # its own nodes only (the clients and GlusterFS's), each resource once in the legend
    names = [d["name"] for d in nodes]
    assert sorted(names) == ["client1: CPU", "client2: network out", "gluster1: CPU"], names
    assert "ceph-osd2" in reads["title"]  # (said to be left out, not silently)
    # clipped to the cell's window: 10 s of I/O from 0, not the writes' 300 s, nor the sampling before
    xs = [x for d in nodes for x in d["x"] if x is not None]
    assert min(xs) == 0.0 and max(xs) == 10.0, (min(xs), max(xs))
    assert not any(d.get("stackgroup", "").startswith(("before", "during", "after")) for d in reads["data"])
    assert [n["text"] for n in writes["layout"]["annotations"]] == ["injected", "noticed", "restored", "healthy"]
    legend = [d["name"] for d in writes["data"] if d.get("yaxis") in ("y2", "y3")]
    assert len(legend) == len(set(legend)) == 3  # one entry per node and resource over the three phases


def test_the_busiest_node_is_the_systems_own_and_another_systems_busy_node_flags_the_cell(tmp_path):
    from harness.report.resources import TITLE

    stored(tmp_path)
    view = _view(tmp_path)
    table = next(t for t in view.tables if t.title == TITLE)
    during = next(r for r in table.rows if "phase=during" in r[1])
    assert "ceph-osd2" not in during[3] and during[3].startswith("gluster1")  # the busiest: its own node
    assert during[4].startswith("ceph-osd2: 80 % of its link") and "[L]" in during[4]  # named as contention
    reads = next(r for r in table.rows if "randread" in r[1])
    assert reads[4] == "—"  # the idle Ceph node during the reads is no one's contention
    # the records of the contended passes are flagged, those of the reads are not
    flagged = {m.params.get("phase") for m in view.records if m.workload == "fio" and "contended" in m.flags}
    assert flagged == {"before", "during", "after"}
    # the system's bottleneck: its own node, over its two cells (the writes' three phases are one cell)
    assert [line for line in view.summary if "bottleneck" in line] == [
        "GlusterFS — bottleneck: the busiest was a server's CPU in 2 of 2 cell runs (up to 18 % of 2 cores, gluster1)."]
    assert unfit_reason({"contended"}) == "lab contended [L]"  # (no verdict on a contended cell)
    assert "GlusterFS — 1 cell run (a cell in one repeat) measured while another system's node on the lab was busy (contended [L]: the " \
           "busiest-node table names it); no verdict there." in view.summary


def test_the_faults_chart_bars_are_its_cells_during_pass_alone(tmp_path):
    from harness.report.faults import timeline_chart

    stored(tmp_path)
    view = _view(tmp_path)
    chart = timeline_chart(view.records, view.systems.name)
    assert chart is not None
    bars = chart["faults"][0]["bars"]
    # the two clients' iops of the writes' 'during' pass; the reads share offered_iops=100 but are another cell
    assert sorted(b["label"] for b in bars) == ["randwrite-4k iops on client1", "randwrite-4k iops on client2"]
    assert all(-10.0 <= b["start"] <= 0 for b in bars)


def test_without_a_stored_cell_records_join_only_what_says_the_same(tmp_path):
    from harness.report import cells

    a = Measurement("fio", "randread-4k", "iops", 1.0, "op/s", {"offered_iops": 100, "host": "c1", "started": 1.0})
    node = Measurement("resources", "c1", "cpu", 1.0, "%", {"for": "fio", "offered_iops": 100, "profile": "w"})
    assert cells.cell_of(a) != cells.cell_of(node)  # (a subset that happens to match is not the cell)
    assert cells.cell_of(a) == cells.cell_of(Measurement("fio", "randread-4k", "lat_p99", 1.0, "s",
                                                         {"offered_iops": 100, "host": "c2"}))
    stored_a = Measurement("fio", "t", "iops", 1.0, "op/s", {"offered_iops": 100}, cell=READ)
    stored_b = Measurement("fio", "t", "iops", 1.0, "op/s", {"offered_iops": 100}, cell=WRITE)
    assert cells.cell_of(stored_a) != cells.cell_of(stored_b)  # every param alike, two cells


def test_a_stored_cell_key_is_data_it_titles_only_what_its_records_say():
    from harness.report import cells

    params = {"offered_iops": 100, "host": "c1"}
    for key in ("[" * 2000, "not json", '{"a": 1}', '["x"]', "[" + "1," * 5000 + "1]", "[1, 2, 3, 4, {}]",
                '["glusterfs", "default", 0, "fio", {"offered_iops": 1600}]',  # (says another load)
                '["cephfs", "default", 0, "fio", {"offered_iops": 100}]',  # (another system)
                '["glusterfs", "default", 1, "fio", {"offered_iops": 100}]',  # (another repeat)
                '["glusterfs", "default", 0, "smallfile", {"offered_iops": 100}]'):  # (another workload)
        m = Measurement("fio", "t", "iops", 1.0, "op/s", params, "glusterfs", cell=key)
        assert cells.described(m) == "offered_iops=100 host=c1", key
    m = Measurement("fio", "t", "iops", 1.0, "op/s", params, "glusterfs", cell=READ)
    assert cells.described(m) == "offered_iops=100 profile=randread-4k"


def test_a_neighbour_just_under_the_threshold_is_no_contention(tmp_path):
    """At 9.955 % of its link (shown '10 %'), another system's node is under 'at least 10 %':
    the flag is decided on the share, not on its rounding."""
    from harness.report.resources import TITLE

    stored(tmp_path, busy=0.09955 * 125e6)
    view = _view(tmp_path)
    assert not any("contended" in m.flags for m in view.records)
    assert all(r[4] == "—" for r in next(t for t in view.tables if t.title == TITLE).rows)
