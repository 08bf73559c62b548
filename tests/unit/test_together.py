"""A cell on every client at once: the aggregate's definition (what all moved from the first
start to the last end; the stonewalled rate while all ran), checked where the naive sum of
the clients' own rates is wrong; each client's own view of the attachment; the barrier."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from harness.api.records import Measurement
from harness.api.target import Lineup, Target
from harness.errors import DfsbenchError
from harness.execution.together import aggregate, moved_by
from harness.system.hosts import LOCAL, LocalHost

MB = 1e6


def client(host: str, started: float, ended: float, moved: float, progress=(), **extra) -> list[Measurement]:
    params = {"file_size": 1 << 28, "host": host, "clients": 2, "started": started, "ended": ended,
              "bytes": moved, **extra}
    return [Measurement("largefile", "write", "throughput", moved / (ended - started), "B/s", params, "glusterfs",
                        progress=tuple(progress)),
            Measurement("largefile", "write", "elapsed", ended - started, "s", params, "glusterfs"),
            Measurement("largefile", "write", "lat_p99", 0.2, "s", params, "glusterfs")]


def by_metric(records: list[Measurement]) -> dict[str, Measurement]:
    return {m.metric: m for m in records}


def test_the_aggregate_is_what_all_moved_over_the_span_not_a_sum_of_rates():
    # client2 set out when client1 was done: each alone at 100 MB/s, so the sum of their own
    # rates (200 MB/s) is twice what the two moved over the span
    records = client("client1", 100.0, 104.0, 400 * MB) + client("client2", 104.0, 108.0, 400 * MB)
    assert sum(m.value for m in records if m.metric == "throughput") == 200 * MB  # (the old figure)
    out = by_metric(aggregate(records, 2))
    assert out["throughput"].value == pytest.approx(100 * MB)
    assert out["throughput"].params == {"file_size": 1 << 28, "host": "all", "clients": 2, "started": 100.0,
                                        "ended": 108.0, "moved": 800 * MB, "basis": "span"}
    assert out["elapsed"].value == 8.0
    assert "lat_p99" not in out  # latencies stay per client
    # they never ran at the same time: there is no stonewalled rate, and it says why
    assert out["throughput_stonewalled"].value is None
    assert out["throughput_stonewalled"].params["why"] == "no moment when all the clients were running"


def test_the_stonewalled_rate_is_what_each_moved_while_all_ran():
    # client1 at 80 MB/s for 4 s; client2 at 20 MB/s for 10 s, from the same start
    one = [(100.0 + t, 80 * MB * t) for t in range(5)]
    two = [(100.0 + t, 20 * MB * t) for t in range(11)]
    records = client("client1", 100.0, 104.0, 320 * MB, one) + client("client2", 100.0, 110.0, 200 * MB, two)
    out = by_metric(aggregate(records, 2))
    assert out["throughput"].value == pytest.approx(520 * MB / 10)  # 52 MB/s, not 80 + 20
    stonewalled = out["throughput_stonewalled"]
    assert stonewalled.value == pytest.approx((320 + 80) * MB / 4) and stonewalled.params["stonewall"] == [100.0, 104.0]
    # intervals within a few percent of each other: the span is the one figure
    even = client("client1", 100.0, 110.0, 500 * MB) + client("client2", 100.2, 110.0, 490 * MB)
    assert "throughput_stonewalled" not in by_metric(aggregate(even, 2))


def test_records_that_cannot_be_added_up_say_why():
    differ = client("client1", 100.0, 104.0, 400 * MB) + client("client2", 100.0, 104.0, 400 * MB, block_size=4096)
    out = by_metric(aggregate(differ, 2))
    assert out["throughput"].value is None and "no-aggregate" in out["throughput"].flags
    assert out["throughput"].params["why"] == "the clients' records differ in block_size (4096 vs None)"
    lone = client("client1", 100.0, 104.0, 400 * MB)
    assert by_metric(aggregate(lone, 2))["throughput"].params["why"] == "1 of 2 clients gave this figure"
    no_times = [Measurement("x", "t", "throughput", 1.0, "B/s", {"host": h}, "b") for h in ("c1", "c2")]
    assert aggregate(no_times, 2)[0].params["why"] == "the clients' records do not say bytes, ended, started"


def test_each_figure_of_a_cell_is_added_up_on_its_own():
    # a mixed fio profile: reads and writes share test and metric; iozone: two record sizes
    reads = [Measurement("fio", "rw", "throughput", 50 * MB, "B/s",
                         {"direction": d, "host": h, "started": 100.0, "ended": 110.0, "bytes": moved}, "cephfs")
             for d, moved in (("read", 300 * MB), ("write", 100 * MB)) for h in ("client1", "client2")]
    out = aggregate(reads, 2)
    assert sorted((m.params["direction"], m.value) for m in out) == [("read", 60 * MB), ("write", 20 * MB)]
    assert not any("no-aggregate" in m.flags for m in out)
    # one client gave the figure twice and the other not at all: said, not added
    twice = [Measurement("x", "t", "throughput", 1.0, "B/s", {"host": "c1", "started": 1.0, "ended": 2.0,
                                                            "bytes": 1}, "b")] * 2
    assert aggregate(twice, 2)[0].params["why"] == "2 records from 1 clients for one figure"


def test_moved_by_reads_a_cumulative_progress():
    progress = ((10.0, 0.0), (11.0, 100.0), (13.0, 300.0))
    assert [moved_by(progress, t) for t in (9.0, 10.0, 10.5, 12.0, 13.0, 20.0)] == [0.0, 0.0, 50.0, 200.0, 300.0,
                                                                                    300.0]


def test_each_timed_phase_starts_behind_a_barrier_and_a_failure_releases_the_others():
    started = []
    lineup = Lineup(2, on_start=lambda warmup_s: started.append(time.monotonic()))
    arrived = {}

    def late():
        time.sleep(0.3)
        lineup.begin("write")
        arrived["late"] = time.monotonic()

    t0 = time.monotonic()
    thread = threading.Thread(target=late)
    thread.start()
    lineup.begin("write")
    arrived["early"] = time.monotonic()
    thread.join()
    assert arrived["early"] - t0 >= 0.3 and len(started) == 1  # waited for the other; the clock started once
    broken = Lineup(2)
    threading.Timer(0.2, broken.abort, ("client2 failed: boom",)).start()
    with pytest.raises(DfsbenchError, match="client2 failed"):
        broken.begin("read")


def test_a_client_at_another_step_breaks_the_line_up_instead_of_releasing_it():
    lineup = Lineup(2)
    errors = []

    def timed():
        try:
            lineup.begin("randread")  # this one laid out its file and waits for the other
        except DfsbenchError as exc:
            errors.append(exc.message)

    thread = threading.Thread(target=timed)
    thread.start()
    time.sleep(0.3)
    with pytest.raises(DfsbenchError, match="one client came to 'fio' while another waited at 'randread'"):
        lineup.wait("fio")  # the other failed its layout and went on to the end
    thread.join(timeout=5)
    assert errors and "came to 'fio'" in errors[0]


def test_each_client_remounts_only_its_own_client_and_reads_what_another_wrote():
    other = LocalHost()
    other.name = "client2"
    remounted = []
    target = Target("path", Path("/mnt/x"), "cephfs", "default", hosts=(LOCAL, other),
                    remount=lambda: remounted.append("all"), remount_host=remounted.append,
                    detach=lambda: None)
    view = target.on(other)
    assert view.host is other and view.hosts == (other,) and view.detach is None
    view.remount()
    assert remounted == [other]
    # one client runs the cell: the next one reads what it wrote, with no cache drop
    reader, writer, cache = target.reader()
    assert reader.host is other and writer is LOCAL and cache == "sync+other-client" and remounted == [other]
    # all at once: each reads what the one before it wrote
    both = Lineup(2)
    me = target.on(other)
    me.lineup = both
    reader, writer, cache = me.reader()
    assert reader is me and writer is LOCAL and cache == "sync+other-client"


def test_the_aggregates_table_marks_its_figures_and_their_share_of_the_ceiling():
    from dataclasses import replace

    from harness.report.aggregates import table_rows

    one = [(100.0 + t, 80 * MB * t) for t in range(5)]
    two = [(100.0 + t, 20 * MB * t) for t in range(11)]
    out = by_metric(aggregate(client("client1", 100.0, 104.0, 320 * MB, one) +
                              client("client2", 100.0, 110.0, 200 * MB, two), 2))
    span = replace(out["throughput"], params={**out["throughput"].params, "ceiling": 104 * MB})
    wall = replace(out["throughput_stonewalled"], flags=("exceeds-network",))
    (row,) = table_rows([span, wall], lambda k: "GlusterFS")
    assert row[4].startswith("49.6 MiB/s") and row[4].endswith("50 % of its ceiling 99.2 MiB/s")
    assert row[5].startswith("95.4 MiB/s [N] over 4.0 s")
