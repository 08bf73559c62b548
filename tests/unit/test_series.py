"""Figures over time: a rate every second binned from progress, fio's latency percentiles of
each interval, rados/rbd bench's per-second lines on the records' clock, the store's
series (schema 4, and 5 packed, migrated), their export, and the three figures of a fault."""

from __future__ import annotations

import json
import math
import re
import sqlite3
import struct
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from harness.api.records import Measurement
from harness.api.series import Series, fault_figures, flaw, moving, per_second, percentile_of_bins, summed
from harness.execution.timelines import fault_params, series_of
from harness.results.schema import SCHEMA_VERSION
from harness.results.store import Store

T0 = 1.8e9  # (2027: a time on the records' clock, after any dfsbench began)
TOOLS = Path(__file__).resolve().parents[1] / "data" / "tools"


# ---------------------------------------------------------------- per second

def test_the_rate_every_second_shares_a_long_gap_between_notes_by_time():
    # notes at 10.5 (0), 10.75 (0) and 12.5 (700): the naive rate of consecutive notes says
    # 0 and then 400/s for the gap; binned on the clock's seconds it is 100, 400, 200
    s = per_second([(10.5, 0.0), (10.75, 0.0), (12.5, 700.0)])
    assert s is not None
    naive = [(b - a) / (u - t) for (t, a), (u, b) in zip([(10.5, 0.0), (10.75, 0.0), (12.5, 700.0)],
                                                          [(10.75, 0.0), (12.5, 700.0)])]
    assert naive == [0.0, 400.0]
    assert s.points == ((10.0, 100.0), (11.0, 400.0), (12.0, 200.0))
    assert (s.start, s.end) == (10.5, 12.5)
    assert [w[:2] for w in s.whole()] == [(11.0, 12.0)]  # the first and last seconds are covered in part
    assert sum(v for _, v in s.points) == 700.0  # every byte is in exactly one second


def test_clients_add_up_second_by_second_where_one_ends_first():
    a = per_second([(100.0, 0.0), (103.0, 300.0)])
    b = per_second([(100.0, 0.0), (101.0, 100.0)])
    total = summed([a, b])
    assert total is not None and total.points == ((100.0, 200.0), (101.0, 100.0), (102.0, 100.0))
    # (a sum of the clients' own average rates would say 100 + 100 = 200 every second)


def test_fio_progress_binned_from_a_real_status_interval_output():
    from workloads.fio.json_output import timed

    started, ended, moved, ops, steps = timed((TOOLS / "fio-3.33-status-interval-jsonplus.json").read_text())["write"]
    s = per_second((t, b) for t, b, _ in steps)
    assert s is not None and abs(sum(v for _, v in s.points) - moved) < 1e-6
    assert s.start == started and s.end == pytest.approx(ended, abs=1e-3)


# ---------------------------------------------------------------- fio latency per interval

def test_fio_percentiles_from_json_plus_bins_are_fios_own():
    from workloads.fio.json_output import _json_documents

    for doc in _json_documents((TOOLS / "fio-3.33-status-interval-jsonplus.json").read_text()):
        clat = doc["jobs"][0]["write"]["clat_ns"]
        bins = {float(k): float(v) for k, v in clat["bins"].items()}
        for key in ("50.000000", "99.000000", "99.900000"):
            assert percentile_of_bins(bins, float(key)) == clat["percentile"][key]


def test_fio_latency_of_each_interval_is_from_the_difference_of_its_histograms():
    from workloads.fio.json_output import _json_documents, interval_latencies

    text = (TOOLS / "fio-3.33-status-interval-jsonplus.json").read_text()
    docs = _json_documents(text)
    found = interval_latencies(text)
    p99 = [v for _, v in found[("write", "clat_p99")]]
    cumulative = [d["jobs"][0]["write"]["clat_ns"]["percentile"]["99.000000"] / 1e9 for d in docs]
    assert len(p99) == len(docs)
    assert p99[0] == cumulative[0]  # the first interval is all there is so far
    assert p99[4] < cumulative[4] / 2  # a quiet second after a slow one: the cumulative still shows the slow one
    assert max(p99) > max(cumulative) * 2  # the slow second's own tail, diluted in the cumulative
    assert [t for t, _ in found[("write", "clat_p99")]][1:] == [d["timestamp_ms"] / 1000 for d in docs[:-1]]


def test_fio_client_server_mode_prints_no_interval_documents():
    # fio 3.33 with --client and --status-interval=1 printed one final document per run, with
    # no timestamp_ms: there is nothing per second to keep in client/server mode
    from workloads.fio.json_output import _json_documents, interval_latencies, timed

    text = (TOOLS / "fio-3.33-clientserver-status-interval.json").read_text()
    assert len(_json_documents(text)) == 1 and "timestamp_ms" not in _json_documents(text)[0]
    assert interval_latencies(text) == {} and timed(text) == {}


# ---------------------------------------------------------------- rados / rbd bench

def test_rados_bench_per_second_lines_on_the_records_clock():
    from workloads import rados_bench

    text = (TOOLS / "rados-write.txt").read_text()
    records = rados_bench.on_clock(text, rados_bench.parse(text, "write"), returned=T0 + 1000.0)
    throughput = next(m for m in records if m.metric == "throughput")
    s = series_of(throughput)
    assert s is not None and s.start == pytest.approx(T0 + 1000.0 - 3.09773)
    # its 'cur MB/s' of its second second (272) is the difference of its finished operations
    assert throughput.progress[2][1] - throughput.progress[1][1] == 272 * (1 << 20)
    assert sum(v for _, v in s.points) == pytest.approx(180 * 4194304)  # every write made, once
    assert series_of(next(m for m in records if m.metric == "lat_mean")) is None


def test_rbd_bench_per_second_from_its_counts_not_its_averaged_ops_per_sec():
    from workloads import rbd_bench

    text = (TOOLS / "rbd-bench-write.txt").read_text()
    lines = rbd_bench.progress_lines(text)
    assert lines == [(1.0, 6256.0), (2.0, 10384.0), (3.0, 13952.0)]
    # its third line says 4662.22 ops/sec: an average since its start, not the 3568 of that second
    records = rbd_bench.on_clock(text, rbd_bench.parse(text), returned=1000.0)
    iops = next(m for m in records if m.metric == "iops")
    assert iops.progress[-1][1] - iops.progress[-2][1] == 3568.0


# ---------------------------------------------------------------- the fault's figures

def _series(start: float, rates: list[float]) -> Series:
    """A per-second series from the rate of each whole second (made as the runner makes them)."""
    notes, total = [(start, 0.0)], 0.0
    for i, r in enumerate(rates):
        total += r
        notes.append((start + i + 1, total))
    s = per_second(notes)
    assert s is not None
    return s


BEFORE = _series(1000.0, [100.0] * 8)


def test_a_dip_that_recovers_before_healthy_is_back_at_its_recovery():
    during = _series(2000.0, [100, 100, 40, 0, 0, 60, 100, 100, 100, 100, 100, 100])
    f = fault_figures(BEFORE, during, injected=2002.0, healthy=2011.0)
    assert f.level == 100.0 and f.lowest == 0.0 and f.stall_s == 2.0
    assert f.back_s == 4.0  # not healthy − injected (9 s), the naive recovery
    assert f.why == {}


def test_a_stall_at_the_end_of_the_cell_counts_to_its_end():
    during = _series(2000.0, [100, 100, 100, 0, 0, 0])
    f = fault_figures(BEFORE, during, injected=2002.5, healthy=2020.0)  # healthy after the run ended
    assert f.stall_s == 3.0  # the three seconds of nothing up to the run's end (the window goes on)
    assert f.lowest == 0.0
    assert f.back_s is None and "not back" in f.why["back"]
    # told when the clients moved their last byte, the same three seconds are the run's
    # closing (its fsync, or a stall to its end), apart from the stall while they moved
    told = fault_figures(BEFORE, during, 2002.5, 2020.0, moving([BEFORE]), moving([during]))
    # ... and no second after the injection was measured: not "back at once", but not known
    assert (told.stall_s, told.closing_s, told.back_s) == (0.0, 3.0, None)
    assert "no whole second after the injection" in told.why["back"]


def test_the_level_and_the_return_to_it_count_the_seconds_every_client_moved():
    # two clients, one done after three seconds: the sum halves then, with no fault at all
    before = [_series(1000.0, [50.0] * 6), _series(1000.0, [50.0] * 3)]
    during = [_series(2000.0, [50.0] * 8), _series(2000.0, [50, 50, 20, 50, 50])]
    naive = fault_figures(summed(before), summed(during), 2002.0, 2010.0)
    assert naive.level == 75.0  # (the median over the seconds one client had finished too)
    f = fault_figures(summed(before), summed(during), 2002.0, 2010.0, moving(before), moving(during))
    assert f.level == 100.0 and f.lowest == 70.0 and f.back_s == 1.0
    assert moving(during) == (2004.0, 2008.0)


def test_a_level_never_reached_again_gives_no_time_and_says_why():
    during = _series(2000.0, [100, 100, 50, 70, 80, 85, 88, 88])
    f = fault_figures(BEFORE, during, injected=2002.0, healthy=2005.0)
    assert f.back_s is None and f.stall_s == 0.0 and f.lowest == 50.0


def test_a_rate_above_its_level_is_back_at_its_level():
    # a GlusterFS client writes faster with a replica down (one copy fewer): that is no shortfall
    during = _series(2000.0, [100, 100, 150, 190, 200, 200])
    f = fault_figures(BEFORE, during, injected=2002.0, healthy=2010.0)
    assert f.back_s == 0.0 and f.lowest == 150.0 and f.stall_s == 0.0


def test_the_lowest_rate_leaves_out_the_second_holding_the_injection():
    # the second the fault comes in holds time before it: it is no second of the fault
    during = _series(2000.0, [100, 100, 5, 50, 100, 100])
    f = fault_figures(BEFORE, during, injected=2002.5, healthy=2010.0)
    assert f.lowest == 50.0 and f.back_s == pytest.approx(1.5)


def test_fault_params_follow_the_test_that_ran_at_the_injection():
    def rec(test: str, phase: str, host: str, s: Series) -> Measurement:
        return Measurement("largefile", test, "throughput", 1.0, "B/s", {"phase": phase, "host": host},
                           "cephfs", series=s)

    records = [rec("write", "before", "c1", _series(1000.0, [50.0] * 6)), rec("write", "before", "c2", _series(1000.0, [50.0] * 6)),
               rec("write", "during", "c1", _series(2000.0, [50, 50, 0, 0, 50, 50])),
               rec("write", "during", "c2", _series(2000.0, [50, 50, 0, 25, 50, 50])),
               rec("read", "during", "c1", _series(2006.0, [10.0] * 4))]
    p = fault_params(records, {"injected": 2002.0, "healthy": 2009.0})
    assert p["figures_of"] == "write throughput, 2 client(s)"
    assert (p["level"], p["lowest_rate"], p["stall_s"], p["back_to_level_s"], p["closing_s"]) == (100.0, 0.0, 1.0,
                                                                                                  2.0, 0.0)
    assert "figures_why" not in p
    assert fault_params(records, {"injected": None})["figures_why"] == "no fault was injected"


# ---------------------------------------------------------------- stored, migrated, exported

def _stored(tmp_path: Path) -> Store:
    store = Store(tmp_path)
    store.begin_run("r", {}, "h", {}, "test")
    m = Measurement("largefile", "write", "throughput", 100.0, "B/s", {"host": "c1", "phase": "during"},
                    "cephfs", "default", "r", progress=((T0 + 10.5, 0.0), (T0 + 10.75, 0.0), (T0 + 12.5, 700.0)))
    s = series_of(m)
    assert s is not None
    store.add_series(store.add(m, "cell"), "r", s)
    store.add_series(store.add(replace(m, params={"host": "c2", "phase": "during"}), "cell"), "r", s)
    store.add(replace(m, params={"host": "all", "phase": "during"}), "cell")
    assert series_of(replace(m, params={"host": "all"})) is None  # (an aggregate's progress is one client's)
    return store


def test_series_are_stored_one_row_per_record_and_read_with_it(tmp_path):
    store = _stored(tmp_path)
    assert store.db.execute("SELECT count(*) FROM series").fetchone()[0] == 2
    found = store.measurements("r")
    assert [m.series.points if m.series else None for m in found][:2] == [((T0 + 10.0, 100.0), (T0 + 11.0, 400.0),
                                                                          (T0 + 12.0, 200.0))] * 2
    assert found[2].series is None
    store.supersede("r", "cell")  # a cell run again: its earlier records, series with them, are set aside
    assert store.measurements("r") == []


def test_a_version_3_store_is_migrated_and_read_only_readers_upgrade_in_memory(tmp_path):
    store = _stored(tmp_path)
    store.db.execute("DROP TABLE series")
    store.db.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
    store.close()
    reader = Store(tmp_path, readonly=True)
    assert [m.series for m in reader.measurements("r")] == [None] * 3
    reader.close()
    on_disk = sqlite3.connect(tmp_path / "dfsbench.sqlite")
    assert on_disk.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "3"
    on_disk.close()
    writer = Store(tmp_path)
    assert writer.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    assert writer.db.execute("SELECT count(*) FROM series").fetchone()[0] == 0


def test_compare_exports_the_series_as_json_and_csv(tmp_path, capsys):
    from harness.cli import main

    _stored(tmp_path / "res").close()
    assert main(["compare", "latest", "--format", "json", "--results", str(tmp_path / "res")]) == 0
    doc = json.loads(capsys.readouterr().out)
    hosts = sorted(str(e["host"]) for e in doc["series"])
    assert hosts == ["all", "c1", "c2"]
    total = next(e for e in doc["series"] if e["host"] == "all")
    assert total["points"] == [[T0 + 10.0, 200.0], [T0 + 11.0, 800.0], [T0 + 12.0, 400.0]] and "summed" in total["how"]
    assert {"backend", "variant", "workload", "test", "metric", "phase", "unit", "source"} <= set(total)
    assert main(["compare", "latest", "--format", "csv", "--series", "--results", str(tmp_path / "res")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("run_id,backend,variant") and len(lines) == 1 + 3 * 3
    assert main(["compare", "latest", "--series", "--results", str(tmp_path / "res")]) == 2


def _fault_run(root: Path) -> None:
    """A stored run of one cell with a fault on two clients, with the nodes' samples."""
    store = Store(root)
    store.begin_run("f", {}, "h", {}, "test")
    store.add_target("f", "cephfs", "default", {"system": "cephfs"})
    for phase, start, rates in (("before", T0 + 1000.0, [[50.0] * 6, [50.0] * 6]),
                                ("during", T0 + 2000.0, [[50, 50, 0, 0, 50, 50], [50, 50, 0, 25, 50, 50]])):
        for host, r in zip(("client1", "client2"), rates):
            m = Measurement("largefile", "write", "throughput", 50.0, "B/s",
                            {"file_size": 1 << 20, "block_size": 1 << 20, "host": host, "phase": phase, "started": start,
                             "ended": start + 6}, "cephfs", "default", "f", series=_series(start, r))
            store.add_series(store.add(m, "c"), "f", m.series)  # type: ignore[arg-type]
        cpu = Series(((start, 30.0), (start + 2, 80.0), (start + 4, 40.0)), start + 6, "samples")
        node = Measurement("resources", "osd2", "cpu", 50.0, "%", {"for": "largefile", "file_size": 1 << 20,
                                                                   "phase": phase}, "cephfs", "default", "f")
        store.add_series(store.add(node, "c"), "f", cpu)
    fault = Measurement("fault", "recovery", "elapsed", 3.0, "s",
                        {"for": "largefile", "file_size": 1 << 20, "fault": "osd2 killed at 2.0 s",
                         "injected": T0 + 2002.0, "noticed": T0 + 2003.0, "restored": T0 + 2005.0,
                         "healthy": T0 + 2008.0, **fault_params([], {"injected": T0 + 2002.0})}, "cephfs", "default", "f")
    store.add(fault, "c")
    store.close()


def test_the_report_draws_a_timeline_per_cell_with_the_fault_and_the_nodes(tmp_path):
    from harness.report.html import cell_timelines
    from harness.report.view import ViewRequest, build_view
    from harness.results.catalogue import Catalogue

    _fault_run(tmp_path)
    figures = cell_timelines(build_view(Catalogue(tmp_path), ViewRequest(["f"])))
    assert len(figures) == 1  # one cell: its phases on one axis
    fig = figures[0]
    stacked = [d for d in fig["data"] if d.get("stackgroup")]
    assert len(stacked) == 4 and {d["stackgroup"] for d in stacked} == {"before-write-throughput",
                                                                        "during-write-throughput"}
    total = next(d for d in fig["data"] if d["name"] == "all clients: write throughput, during")
    assert total["y"][2] == 0.0 and total["x"][0] == -2.0  # seconds from the injection
    window = fig["layout"]["shapes"][0]
    assert (window["type"], window["x0"], window["x1"]) == ("rect", 0.0, 6.0)  # injection to healthy
    assert [n["text"] for n in fig["layout"]["annotations"]] == ["injected", "noticed", "restored", "healthy"]
    cpu = [d for d in fig["data"] if d.get("yaxis") == "y2"]
    assert len(cpu) == 1 and cpu[0]["name"] == "osd2: CPU"  # one line per node and resource: its phases
    assert cpu[0]["x"][-1] == 4.0 and None in cpu[0]["x"]  # each phase's samples to their end, a gap between
    assert "MiB/s" in fig["layout"]["yaxis"]["title"]["text"] and "%" in fig["layout"]["yaxis2"]["title"]["text"]
    assert "s from the fault's injection" in fig["layout"]["xaxis"]["title"]["text"]
    assert "file_size=1 MiB" in fig["title"]


def test_the_faults_table_shows_what_the_clients_saw(tmp_path):
    from harness.report.faults import COLUMNS, seen
    from harness.report.view import ViewRequest, build_view
    from harness.results.catalogue import Catalogue

    _fault_run(tmp_path)
    table = next(t for t in build_view(Catalogue(tmp_path), ViewRequest(["f"])).tables if t.title.startswith("Faults"))
    row = dict(zip(COLUMNS, table.rows[0]))
    assert row["lowest rate"].startswith("— (no client") and row["back to level"].startswith("—")
    m = Measurement("fault", "recovery", "elapsed", 1.0, "s", {"figures_of": "write throughput", "rate_unit": "B/s",
                                                               "level": 100 << 20, "lowest_rate": 25 << 20,
                                                               "stall_s": 2.0, "back_to_level_s": None,
                                                               "figures_why": "back: the rate was not back"})
    assert seen(m) == ["25.0 MiB/s (25% of 100.0 MiB/s)", "2.0 s", "— (the rate was not back)"]
    assert seen(replace(m, params={})) == ["not recorded"] * 3


@pytest.mark.skipif(not __import__("shutil").which("chromium"), reason="Debian's chromium is not installed")
def test_the_timeline_renders_in_headless_chromium(tmp_path):
    import shutil

    from playwright.sync_api import sync_playwright

    from harness.cli import main

    _fault_run(tmp_path / "res")
    out = tmp_path / "report.html"
    assert main(["report", "f", "-o", str(out), "--results", str(tmp_path / "res")]) == 0
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(out.as_uri())
        page.wait_for_function("document.querySelectorAll('.chart .main-svg').length > 0")
        drawn = page.eval_on_selector_all(".chart", "els => els.map(e => [e.querySelectorAll('.scatterlayer .trace')"
                                          ".length, e.querySelectorAll('.shapelayer path').length])")
        page.screenshot(path=str(tmp_path / "timeline.png"), full_page=True)
        browser.close()
    assert errors == []
    assert [7, 5] in drawn  # 4 clients, 2 aggregates, the node (one line over its phases); the window and 4 moments


def test_the_copy_engine_notes_its_progress_while_a_write_blocks(tmp_path):
    # a destination that takes nothing for 1.5 s (a FIFO whose reader waits): the notes go
    # on, and show nothing moved then — not one late note that a line would spread back
    import os
    import threading
    import time

    from workloads.engines import NOTE_EVERY, copy

    src, fifo = tmp_path / "src", tmp_path / "fifo"
    src.write_bytes(os.urandom(2 << 20))
    os.mkfifo(fifo)
    began = time.time()

    def reader() -> None:
        with open(fifo, "rb") as f:
            time.sleep(1.5)
            while f.read(1 << 20):
                pass

    t = threading.Thread(target=reader)
    t.start()
    done = copy(str(src), str(fifo), 1 << 20, fsync=False)
    t.join()
    blocked = [p for p in done["progress"] if p[0] < began + 1.4]
    assert len(blocked) >= int(1.0 / NOTE_EVERY) and all(a == 0 for _, a in blocked[1:])
    assert done["progress"][-1][1] == 2 << 20


def test_a_series_row_no_dfsbench_wrote_is_an_error_naming_it(tmp_path):
    from harness.errors import BadInput

    store = _stored(tmp_path)
    store.db.execute("UPDATE series SET points='[[1, \"x\"]]' WHERE measurement=1")
    with pytest.raises(BadInput, match="series row 1 is damaged"):
        store.measurements("r")


def test_a_version_4_store_of_json_points_is_read_alike_and_packed_when_written(tmp_path):
    store = _stored(tmp_path)
    want = [m.series for m in store.measurements("r")]
    assert all(isinstance(p, bytes) and len(p) == 16 * 3 for (p,) in store.db.execute("SELECT points FROM series"))
    for seq, points in store.db.execute("SELECT measurement, points FROM series").fetchall():  # (as v4 wrote them)
        flat = struct.unpack("<6d", points)
        pairs = [[t, v] for t, v in zip(flat[::2], flat[1::2])]
        store.db.execute("UPDATE series SET points=? WHERE measurement=?", (json.dumps(pairs), seq))
    store.db.execute("UPDATE meta SET value='4' WHERE key='schema_version'")
    store.close()
    reader = Store(tmp_path, readonly=True)
    assert [m.series for m in reader.measurements("r")] == want
    reader.close()
    on_disk = sqlite3.connect(tmp_path / "dfsbench.sqlite")
    assert all(isinstance(p, str) for (p,) in on_disk.execute("SELECT points FROM series"))  # (a reader wrote nothing)
    on_disk.close()
    writer = Store(tmp_path)
    assert writer.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    assert all(isinstance(p, bytes) for (p,) in writer.db.execute("SELECT points FROM series"))
    assert [m.series for m in writer.measurements("r")] == want


def test_series_are_read_only_by_what_draws_or_exports_them(tmp_path, capsys):
    from harness.cli import main

    store = _stored(tmp_path / "res")
    store.db.execute("UPDATE series SET points=x'0102' WHERE measurement=1")
    store.close()
    results = ["--results", str(tmp_path / "res")]
    for fmt in ("table", "markdown", "csv"):  # (the tables draw no series: a damaged one does not stop them)
        assert main(["compare", "latest", "--format", fmt, *results]) == 0
    capsys.readouterr()
    assert main(["compare", "latest", "--format", "json", *results]) == 2
    assert "series row 1 is damaged" in capsys.readouterr().err
    assert main(["report", "latest", "-o", str(tmp_path / "r.html"), *results]) == 2


# ---------------------------------------------------------------- kept and summed within bounds

def _dense(series: list[Series]) -> list[tuple[float, float]]:
    """The clients' sum in every second from the first to the last (summed's rule as it was)."""
    total: dict[float, float] = {}
    for s in series:
        for t, v in s.points:
            total[t] = total.get(t, 0.0) + v
    end = max(s.end for s in series)
    return [(float(t), total.get(float(t), 0.0)) for t in range(int(min(total)), math.ceil(end))]


def test_summing_clients_far_apart_holds_their_points_not_the_seconds_between():
    # one client's rate at the epoch's first seconds, the other's a million seconds later: the
    # gap is two points of nothing, not a million
    early = _series(0.0, [100.0] * 3)
    late = _series(1e6, [50.0] * 3)
    total = summed([early, late])
    assert total is not None
    assert total.points == ((0.0, 100.0), (1.0, 100.0), (2.0, 100.0), (3.0, 0.0), (999999.0, 0.0),
                            (1e6, 50.0), (1e6 + 1, 50.0), (1e6 + 2, 50.0))
    assert (total.start, total.end) == (0.0, 1e6 + 3)
    # the same rate in every second as adding them second by second, at the gap's edges and inside
    dense = dict(_dense([early, late]))
    spans = total.spans()
    for t in (0.0, 2.0, 3.0, 4.0, 500000.0, 999999.0, 1e6, 1e6 + 2):
        assert next(v for a, e, v in spans if a <= t < e) == dense[t]


def test_summing_clients_that_overlap_is_second_by_second_as_before():
    a, b = _series(100.0, [10, 20, 30, 40]), _series(102.0, [5, 5, 5, 5, 5])
    c = _series(109.0, [7.0])  # after a gap of two seconds
    total = summed([a, b, c])
    assert total is not None and list(total.points) == _dense([a, b, c])


def test_a_clock_step_backwards_leaves_no_second_negative():
    # notes every half second; the clock steps back 2 s after the fourth: the notes taken before
    # it passes the last kept note's time again are left out, and their bytes counted by the next
    taken = [(10.0, 0.0), (10.5, 50.0), (11.0, 100.0), (11.5, 150.0), (9.5, 200.0), (10.0, 250.0),
             (11.0, 300.0), (12.0, 400.0), (12.5, 450.0)]
    s = per_second(taken)
    assert s is not None
    assert all(v >= 0 for _, v in s.points)
    assert sum(v for _, v in s.points) == 450.0
    assert s.points == ((10.0, 100.0), (11.0, 300.0), (12.0, 50.0))


def test_a_series_is_kept_within_its_records_interval():
    # a client whose clock was three hours behind for its first note (and 0 bytes), then set
    # right: binned over its timed phase only, not over the hours between (as it was: a point
    # per second of them, and from a note at 1970 one per second since then)
    started = 1.8e9
    m = Measurement("largefile", "write", "throughput", 100.0, "B/s",
                    {"host": "c1", "started": started, "ended": started + 3}, "cephfs",
                    progress=((started - 3 * 3600, 0.0), (started, 0.0), (started + 1.5, 150.0), (started + 3, 300.0)))
    s = series_of(m)
    assert s is not None and s.points == ((started, 100.0), (started + 1, 100.0), (started + 2, 100.0))
    assert flaw(s, "B/s", started, started + 3) == ""


def test_a_tools_series_keeps_only_what_the_store_reads_back():
    # fio's figures of each interval on the records' clock, where the clock stepped back (a
    # point before the one kept before it), a figure that is not one (NaN, negative), a point
    # before the record's start and an end past its end
    started, ended = 1.8e9, 1.8e9 + 5
    given = Series(((started - 30, 0.001), (started, 0.002), (started + 1, float("nan")), (started + 2, 0.003),
                    (started + 1.5, 0.004), (started + 3, -1.0), (started + 4, 0.005)), ended + 60, "interval")
    m = Measurement("fio", "randread", "clat_p99", 0.003, "s", {"started": started, "ended": ended}, "cephfs",
                    series=given)
    s = series_of(m)
    assert s is not None
    assert s.points == ((started, 0.002), (started + 2, 0.003), (started + 4, 0.005)) and s.end == ended
    assert flaw(given, "s", started, ended) != "" and flaw(s, "s", started, ended) == ""


# times of a client's notes or a tool's points: around the record's interval (1.8e9 to 1.8e9 + 10),
# hours away, and not finite
TIMES = st.one_of(st.floats(1.8e9 - 5, 1.8e9 + 15), st.floats(1.8e9 - 2e4, 1.8e9 + 2e4),
                  st.sampled_from([math.nan, math.inf, -math.inf]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(notes=st.lists(st.tuples(TIMES, st.one_of(st.floats(), st.floats(0, 1e12))), max_size=12),
       points=st.lists(st.tuples(st.one_of(st.floats(), TIMES), st.floats()), max_size=8),
       end=st.one_of(st.floats(), TIMES), span=st.sampled_from([10.0, 0.0, -5.0]))
@example(notes=[], points=[(0.0, 0.0)], end=0.0, span=-5.0)  # (a reversed interval is no interval)
def test_what_the_runner_keeps_of_a_series_the_store_reads_back(tmp_path_factory, notes, points, end, span):
    """Whatever a client's progress or a tool's series says (clock steps, NaN, values below
    zero or past any storage, times outside the record's), what the runner stores of it is
    read back without the store calling it damaged. (A progress note hours away is as good
    as one at 1970 here: before, each second between was binned, which took no time to fail.
    A record that ended before it started — the clock stepped back between the runner's two
    readings of it — keeps no series.)"""
    started, ended = 1.8e9, 1.8e9 + span
    root = tmp_path_factory.mktemp("kept")
    store = Store(root)
    store.begin_run("r", {}, "h", {}, "test")
    params = {"host": "c1", "started": started, "ended": ended}
    for m in (Measurement("largefile", "write", "throughput", 1.0, "B/s", params, "cephfs", "default", "r",
                          progress=tuple(notes)),
              Measurement("fio", "w", "clat_p99", 0.1, "s", params, "cephfs", "default", "r",
                          series=Series(tuple(points), end, "interval") if points else None)):
        s = series_of(m)
        if s is not None:
            store.add_series(store.add(m, "c"), "r", s)
    store.measurements("r")  # (raises on a series it would refuse)
    store.close()


@given(st.lists(st.tuples(st.floats(0, 50, allow_nan=False), st.floats(0, 1e6, allow_nan=False)),
                min_size=2, max_size=30))
def test_the_amount_at_any_time_is_the_line_between_the_notes_around_it(raw):
    """per_second looks each second's notes up by bisection; what it finds is what a walk
    along the notes finds."""
    from harness.api.series import _amount_at, _in_order

    notes = _in_order(sorted(raw))
    if not notes:
        return

    def walked(t):
        if t <= notes[0][0]:
            return notes[0][1]
        for (t0, a0), (t1, a1) in zip(notes, notes[1:]):
            if t <= t1:
                return a0 + (a1 - a0) * (t - t0) / (t1 - t0)
        return notes[-1][1]

    for t in [notes[0][0] - 1, *(n[0] for n in notes), *(n[0] + 0.5 for n in notes), notes[-1][0] + 1]:
        assert _amount_at(notes, t) == pytest.approx(walked(t))


def test_rates_of_two_units_in_one_cell_are_drawn_on_an_axis_each():
    """smallfile's files_per_sec (files/s) beside its throughput (B/s): on one axis titled
    by the first unit, 3 MiB/s of bytes and 200 files/s would read as one quantity."""
    from harness.report.timelines import figure

    start = T0 + 1000.0
    made = [Measurement("smallfile", "create", metric, 1.0, unit, {"host": host, "files": 64}, "cephfs", "default",
                        "s", series=_series(start, rates))
            for metric, unit, rates in (("throughput", "B/s", [3 << 20] * 4), ("files_per_sec", "files/s", [200.0] * 4))
            for host in ("client1", "client2")]
    fig = figure("cephfs: smallfile", made, None, [])
    layout = fig["layout"]
    assert layout["yaxis"]["title"]["text"] == "rate (MiB/s)"
    assert layout["yaxis4"]["title"]["text"] == "rate (files/s)"
    # (a panel each: the second's wholly under the first's)
    assert layout["yaxis4"]["domain"][1] < layout["yaxis"]["domain"][0]
    for d in fig["data"]:
        assert d["yaxis"] == ("y4" if "files_per_sec" in d["name"] else "y"), d["name"]
        if d["name"].startswith("all clients"):
            assert d["y"][0] == (400.0 if d["yaxis"] == "y4" else 6.0)  # (each in its own unit)
    assert "yaxis5" not in layout and layout["xaxis"]["anchor"] == "y4"  # (the time axis under the lowest panel)


def test_a_cell_of_two_seconds_is_not_drawn_over_time_and_the_report_says_why():
    """Two one-second points drawn as a line read as a ramp from nothing: the data has no such
    shape. A cell is drawn where one of its rates (a test's, over all its clients) covers 3
    whole seconds; else the report says what its longest covers. A partial second (a cell
    that starts mid-second) is not drawn as a second's rate."""
    from harness.report.timelines import figures

    start = T0 + 1000.5  # (mid-second: its first whole second starts half a second later)

    def cell(files: int, rates: list[float], test: str = "create", host: str = "client1",
             at: float = start) -> Measurement:
        return Measurement("smallfile", test, "files_per_sec", 1.0, "files/s", {"host": host, "files": files},
                           "cephfs", "default", "s", series=_series(at, rates))
    two, three = figures([cell(64, [100.0] * 3), cell(128, [100.0] * 4)], lambda k: k[0])
    assert "data" not in two and two["note"].startswith(
        "its longest rate over time (create files_per_sec, all its clients) covers 2 whole second(s)"), two
    assert "files=64" in two["title"] and "files=128" in three["title"]
    xs = three["data"][0]["x"]
    assert xs == [0.5, 1.5, 2.5]  # (the whole seconds only: not the half second from the start)
    # three tests of 2 whole seconds, 10 s apart: none covers 3, however long the cell spans
    tests = [cell(256, [100.0] * 3, test, at=start + 10 * i) for i, test in enumerate(("create", "list", "read"))]
    [spread] = figures(tests, lambda k: k[0])
    assert "covers 2 whole second(s)" in spread["note"], spread
    # two clients one after the other: together their rate covers 4 whole seconds
    [after] = figures([cell(512, [100.0] * 3), cell(512, [100.0] * 3, host="client2", at=start + 2)], lambda k: k[0])
    assert after["data"], after


def test_a_title_or_note_from_a_stored_record_is_text_in_the_report(tmp_path):
    from harness.report.html import render
    from harness.report.view import ViewRequest, build_view
    from harness.results.catalogue import Catalogue

    store = Store(tmp_path)
    store.begin_run("h", {}, "h", {}, "test")
    store.add_target("h", "cephfs", "</p><script>x()</script>", {"system": "cephfs"})
    m = Measurement("smallfile", "create", "files_per_sec", 100.0, "files/s", {"host": "client1", "files": 64},
                    "cephfs", "</p><script>x()</script>", "h", series=_series(T0 + 10.5, [100.0, 100.0]))
    store.add_series(store.add(m, "c"), "h", m.series)  # type: ignore[arg-type]
    store.close()
    page = render(build_view(Catalogue(tmp_path), ViewRequest(["h"])))
    note = re.search(r"<p class='notes'>([^\n]*?whole second\(s\)[^\n]*?)</p>", page)
    assert note and "&lt;/p&gt;&lt;script&gt;x()&lt;/script&gt;" in note.group(1) and "<script>x()" not in page


def test_the_report_says_why_a_short_cell_has_no_timeline_and_draws_the_rest(tmp_path):
    from harness.report.html import render
    from harness.report.view import ViewRequest, build_view
    from harness.results.catalogue import Catalogue

    _fault_run(tmp_path)  # (a cell of six seconds a phase: drawn)
    store = Store(tmp_path)
    m = Measurement("smallfile", "create", "files_per_sec", 100.0, "files/s", {"host": "client1", "files": 64},
                    "cephfs", "default", "f", series=_series(T0 + 3000.5, [100.0, 100.0]))
    store.add_series(store.add(m, "another cell"), "f", m.series)  # type: ignore[arg-type]
    store.close()
    page = render(build_view(Catalogue(tmp_path), ViewRequest(["f"])))
    assert re.search(r"<p class='notes'>[^<]*smallfile[^<]*files=64[^<]*: its longest rate over time "
                     r"\(create files_per_sec, all its clients\) covers 1 whole second", page)
    specs = json.loads(page.split("const specs = ")[1].split(";\n")[0])
    timelines = [s for s in specs if "the rate every second" in s["layout"]["title"]["text"]]
    assert len(timelines) == 1 and "largefile" in timelines[0]["layout"]["title"]["text"]
    assert page.count("<div class='chart' id='chart-") == len(specs)  # (every div has its chart)


def test_the_report_reads_as_a_decision_comparison_then_failures_then_each_cell(tmp_path):
    """The order of issue 34: the answer, the comparison of each workload, what a failure did,
    each cell over time as an appendix, then the tables and flags; each chart in its part."""
    from harness.report.html import render
    from harness.report.view import ViewRequest, build_view
    from harness.results.catalogue import Catalogue

    _fault_run(tmp_path)
    page = render(build_view(Catalogue(tmp_path), ViewRequest(["f"])))
    headings = re.findall(r"<h2>([^<]*)</h2>", page)
    assert headings == ["The comparison of each workload", "Failures: each fault&#x27;s moments and the records it overlapped",
                        "Appendix: each cell over time", "Runs, environment and topology", "Tables", "Flags"]
    specs = json.loads(page.split("const specs = ")[1].split(";\n")[0])
    titles = [s["layout"]["title"]["text"] for s in specs]
    fault = next(i for i, t in enumerate(titles) if "seconds from the injection" in t)
    cell = next(i for i, t in enumerate(titles) if "the rate every second" in t)
    assert fault < cell == len(titles) - 1, titles  # (the fault's bars before the appendix's timeline)
    at = [page.index(f"id='chart-{i}'") for i in (fault, cell)]
    assert page.index("<h2>Failures") < at[0] < page.index("<h2>Appendix") < at[1] < page.index("<h2>Tables")


def test_a_faults_four_moments_close_together_are_named_at_four_heights():
    # (0.2 s apart on a 40 s axis: each within 4 % of the one before; the fourth went back on top of the first)
    from harness.report.timelines import moment_labels

    labels = moment_labels({"injected": 0.0, "noticed": 0.2, "restored": 0.4, "healthy": 0.6}, [0.0, 40.0])
    assert len({n["y"] for n in labels}) == 4
    apart = moment_labels({"injected": 0.0, "noticed": 10.0, "restored": 20.0, "healthy": 30.0}, [0.0, 40.0])
    assert {n["y"] for n in apart} == {1.0}
