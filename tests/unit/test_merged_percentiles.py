"""Several clients' latency percentiles (issue 34): the aggregate's p99 is the p99 of their
merged histograms, never the mean of their p99s. On two real captures of one job (fio 3.33,
json+, 4k random reads offered 400 I/Os a second for 4 s, --status-interval=1): one client
on a file of the local disk, one on a RAM-backed one, taken as two clients that started
together (the second's clock moved onto the first's)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

from harness.api.histogram import Histogram, merged, per_second, percentile_of
from harness.api.series import percentile_of_bins
from harness.execution.together import aggregate
from workloads.fio.json_output import _json_documents, interval_histograms, parse, timed

DATA = Path(__file__).parent.parent / "data" / "tools"
DISK = DATA / "fio-3.33-rate-poisson-disk-jsonplus.json"
RAM = DATA / "fio-3.33-rate-poisson-ramdisk-jsonplus.json"


def client(path: Path, host: str, shift: float = 0.0) -> list:
    """The capture's records as the fio workload gives them on a client: when its I/O ran,
    what it did, and each percentile's histogram with its intervals (``shift``: seconds
    added to its clock)."""
    text = path.read_text()
    timing = timed(text)
    intervals = interval_histograms(text)
    out = []
    for m in parse(text):
        d = m.params["direction"]
        started, ended, moved, ops, _ = timing[d]
        params = {**m.params, "host": host, "clients": 2, "started": started + shift, "ended": ended + shift,
                  "bytes": moved, "ops": ops}
        histogram = m.histogram
        if histogram is not None:
            histogram = replace(histogram, intervals=tuple((a + shift, b + shift, bins) for a, b, bins in
                                                           intervals[(d, m.metric.partition("_")[0])]))
        out.append(replace(m, params=params, histogram=histogram))
    return out


def both() -> list:
    disk, ram = timed(DISK.read_text())["read"], timed(RAM.read_text())["read"]
    return client(DISK, "c1") + client(RAM, "c2", shift=disk[0] - ram[0])


def raw_bins(path: Path) -> dict[float, float]:
    """The final document's total-latency bins, read straight from fio's JSON (s → I/Os)."""
    doc = _json_documents(path.read_text())[-1]
    return {float(k) / 1e9: float(v) for k, v in doc["jobs"][0]["read"]["lat_ns"]["bins"].items()}


def test_the_aggregate_p99_is_that_of_the_merged_histograms_not_the_mean_of_the_clients():
    records = both()
    found = {m.metric: m for m in aggregate(records, 2, {"profile": "randread-4k-qd16"})
             if m.metric.startswith("lat_p")}
    assert set(found) == {"lat_p50", "lat_p90", "lat_p99", "lat_p99.9"}
    merged = {**raw_bins(DISK)}
    for k, v in raw_bins(RAM).items():
        merged[k] = merged.get(k, 0.0) + v
    for metric, m in found.items():
        assert m.params["host"] == "all" and m.params["basis"] == "merged histograms"
        assert m.value == percentile_of_bins(merged, percentile_of(metric))
    # (percentile_of_bins is fio's own rule: on each capture alone, it gives fio's percentiles)
    for path in (DISK, RAM):
        fio = _json_documents(path.read_text())[-1]["jobs"][0]["read"]["lat_ns"]["percentile"]
        for p in ("50.000000", "90.000000", "99.000000", "99.900000"):
            assert percentile_of_bins(raw_bins(path), float(p)) == fio[p] / 1e9
    each = [m.value for m in records if m.metric == "lat_p99"]
    assert len(each) == 2 and each[0] > 1.5 * each[1]  # (the disk's tail is the longer)
    mean = sum(each) / 2
    # the naive figure (the clients' mean p99) is far from the p99 of their I/Os
    assert abs(found["lat_p99"].value - mean) > 0.1 * mean
    assert min(each) <= found["lat_p99"].value <= max(each)


def test_the_aggregate_percentile_in_each_second_lies_between_those_of_the_intervals_it_merges():
    """A percentile of a mixture lies between the mixture's parts' percentiles: each second's
    p99 of the two clients' I/Os is within the p99s of the intervals that overlap it."""
    records = both()
    p99 = next(m for m in aggregate(records, 2, {}) if m.metric == "lat_p99")
    assert p99.series is not None and p99.series.source == "interval" and "stalled_s" not in p99.params
    clients = [m.histogram for m in records if m.metric == "lat_p99"]
    assert len(p99.series.points) >= 4  # (a 4 s run, reported every second)
    for t, value in p99.series.points:
        parts = [percentile_of_bins(b, 99) for h in clients for a, z, b in h.intervals if a < t + 1 and z > t and b]
        assert parts and min(parts) <= value <= max(parts)


def test_a_report_a_little_late_or_early_makes_no_stall():
    """fio's reports come about a second apart, each a few ms off: the second between two
    intervals' middles is not a second without I/O (each holds real bins, of the disk run)."""
    bins = next(m for m in client(DISK, "c1") if m.metric == "lat_p99").histogram.bins
    jitter = Histogram(bins, ((100.5, 101.49, bins), (101.49, 102.52, bins), (102.52, 103.5, bins)))
    series, stalled = per_second([jitter], 99)
    assert stalled == [] and [t for t, _ in series.points] == [100.0, 101.0, 102.0, 103.0]


def test_a_second_in_which_no_client_completed_anything_is_a_stall_not_the_second_before_it():
    """The naive reading of a series (a point holds until the next) would carry the p99 of
    the second before a stall through it: the stall is said apart — only the second that no
    interval with an I/O overlaps."""
    bins = next(m for m in client(DISK, "c1") if m.metric == "lat_p99").histogram.bins
    quiet = Histogram(bins, ((100.2, 101.2, bins), (101.2, 102.2, {}), (102.2, 103.2, {}), (103.2, 104.2, bins)))
    other = Histogram(bins, ((100.6, 101.6, bins), (101.6, 102.6, {}), (102.6, 103.6, {}), (103.6, 104.6, bins)))
    series, stalled = per_second([quiet, other], 99)
    assert stalled == [102.0]
    assert series is not None and 102.0 not in [t for t, _ in series.points]
    assert [t for t, _ in series.points] == [100.0, 101.0, 103.0, 104.0]


def test_no_aggregate_percentile_where_a_client_gave_no_histogram():
    """fio's plain json has percentiles and no bins: there is nothing to merge, and no
    average stands in for it."""
    records = [replace(m, histogram=None) if m.params["host"] == "c2" else m for m in both()]
    assert not [m for m in aggregate(records, 2, {}) if m.metric.startswith(("lat_p", "clat_p"))]


def test_bins_that_are_not_a_histogram_give_none_and_the_percentiles_stand():
    doc = _json_documents(DISK.read_text())[-1]
    doc["jobs"][0]["read"]["lat_ns"]["bins"] = {"1000": 3, "x": 1}
    doc["jobs"][0]["read"]["clat_ns"]["bins"] = {"1000": -3}
    records = parse(json.dumps(doc))
    p99 = [m for m in records if m.metric in ("lat_p99", "clat_p99")]
    assert len(p99) == 2 and all(m.histogram is None and m.value > 0 for m in p99)


def test_an_interval_over_two_seconds_counts_in_each_by_its_share_of_it():
    """Two intervals of one client, each of 100 I/Os: [100.2, 101.2) all at 1 ms, [101.2, 102.2)
    all at 9 ms. Second 101 holds 80 % of the second interval (80 I/Os at 9 ms) and 20 % of the
    first (20 at 1 ms): its p50 is 9 ms, its p10 1 ms; second 100 holds only 1 ms I/Os."""
    fast, slow = {0.001: 100.0}, {0.009: 100.0}
    h = Histogram(merged([fast, slow]), ((100.2, 101.2, fast), (101.2, 102.2, slow)))
    p50, _ = per_second([h], 50)
    p10, _ = per_second([h], 10)
    assert dict(p50.points) == {100.0: 0.001, 101.0: 0.009, 102.0: 0.009}
    assert dict(p10.points)[101.0] == 0.001  # (20 of second 101's 100 I/Os took 1 ms)
    p25, _ = per_second([h], 25)
    assert dict(p25.points)[101.0] == 0.009  # (and only 20: the 25th percentile is a 9 ms one)
