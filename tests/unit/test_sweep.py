"""Sweeps: the config's ``sweep`` as points (the product of its lists), refused where a
point could not be what it says, and a sweep's records read back as curves — each point's
figure the one that stands for all its clients, its ceiling the path of that point."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.api.records import Measurement
from harness.errors import BadInput
from harness.execution.plan import build_plan
from harness.report import sweeps
from harness.report.limits import annotate
from harness.report.verdicts import Systems
from harness.units import parse_rate
from tests.unit.builders import lab, replay

DOCKER = {"environment": "docker", "backends": ["glusterfs", "cephfs"],
          "workloads": [{"name": "largefile", "clients": "all", "options": {"sizes": ["128MiB"]}}]}


def test_the_issues_config_makes_one_point_per_client_count():
    plan = build_plan({"environment": "docker", "sweep": {"clients": [1, 2]},
                       "backends": [{"name": "glusterfs", "variant": "ec21", "options": {"layout": "disperse"}},
                                    {"name": "cephfs", "variant": "ec21", "options": {"ec": {"k": 2, "m": 1}}}],
                       "workloads": [{"name": "largefile", "clients": "all", "options": {"sizes": ["128MiB"]}}]})
    assert [(p.values, p.clients) for p in plan.points] == [({"clients": 1}, 1), ({"clients": 2}, 2)]


def test_points_are_the_product_of_the_lists_the_first_varying_slowest():
    plan = build_plan({**DOCKER, "sweep": {"clients": [1, 2], "link": [{"rate": "1Gbit"}, "250Mbit"]}})
    assert [p.values for p in plan.points] == [
        {"clients": 1, "link": "1Gbit"}, {"clients": 1, "link": "250Mbit"},
        {"clients": 2, "link": "1Gbit"}, {"clients": 2, "link": "250Mbit"}]
    assert [p.link for p in plan.points] == [125e6, 31.25e6, 125e6, 31.25e6]


def test_a_lab_brings_up_the_most_clients_a_sweep_uses_unless_the_config_says():
    plan = build_plan({**DOCKER, "sweep": {"clients": [1, 3]}})
    assert plan.environment.client_hosts == 3
    with pytest.raises(BadInput, match=r"sweep.clients\[1\]: 3 is not a number of client hosts from 1 to 2"):
        build_plan({**DOCKER, "environment": {"kind": "docker", "options": {"clients": 2}},
                    "sweep": {"clients": [1, 3]}})


def test_a_workload_option_is_set_at_each_point_and_recorded_as_the_workload_reads_it():
    plan = build_plan({"environment": "local", "backends": ["glusterfs"],
                       "sweep": {"sizes": ["64MiB", "128MiB"]},
                       "workloads": [{"name": "largefile", "options": {"sizes": ["8MiB"]}}]})
    assert [p.values for p in plan.points] == [{"sizes": 64 << 20}, {"sizes": 128 << 20}]
    assert [p.workloads[0].cells() for p in plan.points] == [[{"file_size": 64 << 20}], [{"file_size": 128 << 20}]]
    assert plan.workloads[0].cells() == [{"file_size": 8 << 20}]  # (the config's own entry is left as it was)


@pytest.mark.parametrize("sweep, message", [
    ({"link": ["1Gbit"]}, "sweep.link: environment 'local' cannot vary it"),
    ({"bogus": [1]}, "sweep.bogus: neither the environment nor any workload"),
    ({"sizes": []}, "sweep: sizes: an empty list"),
    ({"sizes": ["64MiB", "64MiB"]}, "is given twice"),
    ({"sizes": ["1MiB", "2MiB", "3MiB", "4MiB", "5MiB", "6MiB"], "file_size": ["1KiB", "2KiB", "3KiB", "4KiB",
                                                                             "5KiB", "6KiB"]}, "36 points"),
    ({"sizes": ["-1MiB"]}, r"sweep.sizes: .* is no value of workloads\[0\] \(largefile\)"),
    ({"clients": [2]}, r"sweep.clients\[0\]: 2 is not a number of client hosts from 1 to 1"),
    ({"clients": [True]}, "is no value to run with"),
])
def test_a_sweep_that_cannot_be_run_is_refused_naming_its_key(sweep, message):
    with pytest.raises(BadInput, match=message):
        build_plan({"environment": "local", "backends": ["glusterfs"], "sweep": sweep,
                    "workloads": [{"name": "largefile", "options": {"sizes": ["8MiB"]}}]})


def test_a_client_sweep_refuses_a_workload_that_runs_on_one_client_only():
    with pytest.raises(BadInput, match=r"workloads\[0\] \(largefile\) runs on the first client host only"):
        build_plan({**DOCKER, "sweep": {"clients": [1, 2]},
                    "workloads": [{"name": "largefile", "options": {"sizes": ["128MiB"]}}]})


def test_a_swept_link_on_a_lab_with_client_links_of_its_own_is_refused():
    with pytest.raises(BadInput, match=r"sweep.link\[0\]: client_links gives client nodes links of their own"):
        build_plan({**DOCKER, "environment": {"kind": "docker", "options": {
            "client_links": {"client2": {"rate": "250Mbit"}}}}, "sweep": {"link": ["1Gbit"]}})


def _write(backend, variant, value, **params):
    return Measurement("largefile", "write", "throughput", value, "B/s",
                       {"file_size": 128 << 20, "started": 100.0, "ended": 110.0, **params}, backend, variant,
                       run_id="report-2014")


def test_a_points_figure_is_its_aggregate_and_its_ceiling_that_of_the_points_link():
    info, _ = replay()
    run = replace(lab(info, parse_rate("1Gbit"), nodes=3), config={"sweep": {"clients": [1, 2],
                                                                           "link": ["1Gbit", "250Mbit"]}})
    slow = parse_rate("250Mbit")
    records = [
        _write("glusterfs", "vr33", 30e6, clients=1, link="1Gbit"),
        _write("cephfs", "default", 60e6, clients=1, link="1Gbit"),
        # two clients on 250 Mbit links: each client's own share, then what both did together
        _write("glusterfs", "vr33", 9e6, clients=2, link="250Mbit", host="client1"),
        _write("glusterfs", "vr33", 8e6, clients=2, link="250Mbit", host="client2"),
        _write("glusterfs", "vr33", 17e6, clients=2, link="250Mbit", host="all"),
        _write("cephfs", "default", 20e6, clients=2, link="250Mbit", host="client1"),
        _write("cephfs", "default", 30e6, clients=2, link="250Mbit", host="all"),
    ]
    annotated = annotate(records, {"report-2014": run})
    systems = Systems(run.systems)
    found = [c for c in sweeps.curves(annotated, ("clients", "link"), systems, 0.1) if c.metric == "throughput"]
    assert len(found) == 1
    curve = found[0].to_dict(systems)
    points = {tuple(p["values"].values()): p for p in curve["points"]}
    assert set(points) == {(1, "1Gbit"), (2, "250Mbit")}
    two = points[(2, "250Mbit")]["systems"]
    gluster, ceph = (two[systems.name(k)] for k in (("glusterfs", "vr33"), ("cephfs", "default")))
    # the aggregate, not a client's own share nor their sum with a client counted twice
    assert gluster["value"] == 17e6 and ceph["value"] == 30e6
    # at this point each client's link is 250 Mbit (not the lab's 1 Gbit the target was
    # attached with): two replica-3 clients send 2 × link/3; the servers take 3 × link / 3
    assert gluster["ceiling"] == pytest.approx(2 * slow / 3)
    assert ceph["ceiling"] == pytest.approx(slow)  # (three nodes keeping 3 copies: S × link / R)
    assert ceph["flags"] == [] and gluster["flags"] == []
    one = points[(1, "1Gbit")]["systems"]
    assert one[systems.name(("glusterfs", "vr33"))]["ceiling"] == pytest.approx(parse_rate("1Gbit") / 3)
    assert points[(2, "250Mbit")]["verdicts"] == {
        f"{systems.name(('glusterfs', 'vr33'))} vs {systems.name(('cephfs', 'default'))}": "CephFS 1.8× faster (n=1)"}
    # above the point's ceiling is a cache answering, though under the lab's link
    fast = annotate([_write("cephfs", "default", 40e6, clients=2, link="250Mbit", host="all")],
                    {"report-2014": run})[0]
    assert "exceeds-network" in fast.flags
    tables = sweeps.curve_tables(found, systems)
    assert tables[0].columns[:2] == ["clients", "link"] and [r[:2] for r in tables[0].rows] == [
        ["1", "1Gbit"], ["2", "250Mbit"]]
    assert tables[0].chart["kind"] == "sweep" and tables[0].chart["x"] == ["1", "2"]


def test_a_sweep_runs_every_point_and_a_resume_runs_only_the_point_that_failed(tmp_path):
    from harness.execution.progress import Progress
    from harness.execution.runner import execute
    from harness.results.store import Store

    (tmp_path / "d").mkdir()
    config = {"environment": {"kind": "local", "options": {"lab_dir": str(tmp_path / "lab")}},
              "backends": [{"name": "localdir", "options": {"path": str(tmp_path / "d")}}],
              "sweep": {"sizes": ["1MiB", "2MiB"]},
              "workloads": [{"name": "largefile", "options": {"sizes": ["4MiB"]}}]}
    plan = build_plan(config)
    store = Store(tmp_path / "results")
    run_id, ok = execute(plan, store, Progress(quiet=True))
    assert ok
    written = [m for m in store.measurements(run_id) if m.test == "write" and m.metric == "throughput"]
    assert sorted((m.params["sizes"], m.params["file_size"]) for m in written) == [(1 << 20, 1 << 20), (2 << 20, 2 << 20)]
    # the second point failed (as a crash would leave it): a resume runs it, and only it
    cells = store.db.execute("SELECT cell FROM cells WHERE run_id=?", (run_id,)).fetchall()
    second = [c for (c,) in cells if '"sizes": 2097152' in c]
    assert len(second) == 1 and len(cells) == 2
    store.cell_ended(run_id, second[0], "failed")
    store.finish_run(run_id, "interrupted")
    again, ok = execute(build_plan(config), store, Progress(quiet=True), resume=run_id)
    assert again == run_id and ok
    after = [m for m in store.measurements(run_id) if m.test == "write" and m.metric == "throughput"]
    assert sorted(m.params["sizes"] for m in after) == [1 << 20, 2 << 20]  # (the first attempt set aside)
    assert (tmp_path / "results" / "raw" / run_id / "resume-1").is_dir()
    assert not any((tmp_path / "results" / "raw" / run_id / "resume-1").glob("localdir-default-r0-p1"))
    assert any((tmp_path / "results" / "raw" / run_id / "resume-1").glob("localdir-default-r0-p2"))


def test_fio_iodepth_is_swept_over_every_profile():
    plan = build_plan({"environment": "local", "backends": ["cephfs"], "sweep": {"iodepth": [1, 16]},
                       "workloads": [{"name": "fio", "options": {"profiles": "seed000"}}]})
    assert [p.values for p in plan.points] == [{"iodepth": 1}, {"iodepth": 16}]
    assert [{q.iodepth for q in p.workloads[0].profiles()} for p in plan.points] == [{1}, {16}]
    # names that said their own depth say it no more, and profiles that became one job run once
    assert [q.name for q in plan.points[1].workloads[0].profiles()] == [
        "randwrite-4k", "randread-4k", "write-1m", "read-1m", "write-4k", "read-4k"]
    assert {q.iodepth for q in plan.workloads[0].profiles()} == {1, 64, 128}  # (the set's own, unswept)


def test_a_point_uses_the_first_n_clients_and_reshapes_every_link_once(tmp_path):
    from harness.api.contracts import Cluster
    from harness.execution.sweep import Point
    from harness.execution.progress import Progress
    from harness.execution.runner import at_point
    from harness.system.hosts import LocalHost
    from harness.system.ledger import Ledger

    class Named(LocalHost):
        def __init__(self, name):
            self.name = name

    shaped: list[float] = []
    hosts = (Named("client1"), Named("client2"))
    cluster = Cluster("docker", {}, Ledger(tmp_path / "ledger.json"), tmp_path, clients=hosts, link=125e6,
                      links={"client2": 31.25e6}, reshape=shaped.append)
    quiet = Progress(quiet=True)
    one, now = at_point(cluster, Point({"clients": 1, "link": "250Mbit"}, [], 1, 31.25e6), quiet, 125e6)
    assert [h.label for h in one.clients] == ["client1"] and one.link == 31.25e6 and one.links == {}
    assert shaped == [31.25e6] and now == 31.25e6
    again, now = at_point(cluster, Point({"clients": 2, "link": "250Mbit"}, [], 2, 31.25e6), quiet, now)
    assert [h.label for h in again.clients] == ["client1", "client2"] and shaped == [31.25e6]  # (as it is)
    # the workloads outside the sweep run on the lab's own link again, and every client
    alone, now = at_point(cluster, Point({}, []), quiet, now)
    assert alone is cluster and shaped == [31.25e6, 125e6] and now == 125e6
    both, now = at_point(cluster, Point({"clients": 2}, [], 2), quiet, now)
    assert [h.label for h in both.clients] == ["client1", "client2"] and both.link == 125e6
    assert both.links == {"client2": 31.25e6} and shaped == [31.25e6, 125e6]  # (no link swept: none reshaped)


def test_a_swept_option_the_records_name_otherwise_still_makes_one_curve():
    """Swept 'sizes' are recorded as each record's 'file_size': one curve of two points,
    not two curves of one point each; a second file size within each point stays a curve
    of its own."""
    info, _ = replay()
    run = replace(lab(info, parse_rate("1Gbit"), nodes=3), config={"sweep": {"sizes": [1 << 20, 2 << 20]}})
    records = [Measurement("largefile", "write", "throughput", v, "B/s",
                           {"file_size": size, "sizes": size, "block_size": 1 << 20}, backend, "default",
                           run_id="report-2014")
               for size, v in ((1 << 20, 10e6), (2 << 20, 20e6)) for backend in ("glusterfs", "cephfs")]
    found = [c for c in sweeps.curves(annotate(records, {"report-2014": run}), ("sizes",), Systems(run.systems), 0.1)
             if c.metric == "throughput"]
    assert len(found) == 1 and found[0].points == [(1 << 20,), (2 << 20,)]
    mixed = records + [replace(m, params={**m.params, "block_size": 4096}) for m in records]
    found = [c for c in sweeps.curves(annotate(mixed, {"report-2014": run}), ("sizes",), Systems(run.systems), 0.1)
             if c.metric == "throughput"]
    assert len(found) == 2 and all(len(c.points) == 2 for c in found)


def test_a_workload_without_the_swept_option_is_refused_unless_it_stays_out_of_the_sweep():
    workloads = [{"name": "fio", "options": {"profiles": "seed002"}}, {"name": "largefile"}]
    with pytest.raises(BadInput, match=r"sweep.iodepth: workloads\[1\] \(largefile\) has no such option"):
        build_plan({"environment": "local", "backends": ["cephfs"], "sweep": {"iodepth": [1, 16]},
                    "workloads": workloads})
    plan = build_plan({"environment": "local", "backends": ["cephfs"], "sweep": {"iodepth": [1, 16]},
                       "workloads": [workloads[0], {**workloads[1], "sweep": False}]})
    assert [[w.name for w in p.workloads] for p in plan.points] == [["fio"], ["fio"], ["largefile"]]
    assert plan.points[-1].values == {}


def test_systems_are_judged_like_variant_against_like():
    from harness.report.verdicts import references

    g3, c3, gec, cec = ("glusterfs", "replica3"), ("cephfs", "replica3"), ("glusterfs", "ec21"), ("cephfs", "ec21")
    assert references([g3, c3, gec, cec]) == {c3: g3, cec: gec}  # (not ec21 against replica 3)
    assert references([g3, c3, gec]) == {c3: g3, gec: g3}  # (a variant of its own: against the first)
    assert references([("glusterfs", "default"), ("cephfs", "tuned")]) == {("cephfs", "tuned"): ("glusterfs", "default")}
