"""Physical-limit flags and ceilings, replayed on the 2014 report's own numbers (1 GbE
links, 2 GB of client RAM, as its environment section declares)."""

from __future__ import annotations

from harness import reference
from harness.compare import stability_notes
from harness.limits import annotate, path_limits
from harness.units import parse_rate

LINE_RATE = parse_rate("1Gbit")  # 125,000,000 B/s


def replay():
    info, records = reference.load("report-2014")
    return info, annotate(list(records), {"report-2014": info})


def test_exceeds_network_on_every_cell_above_line_rate_and_no_other():
    _, records = replay()
    rates = [m for m in records if m.unit == "B/s" and m.value is not None]
    assert rates
    for m in rates:
        assert ("exceeds-network" in m.flags) == (m.value > LINE_RATE), m
    flagged = [m for m in rates if "exceeds-network" in m.flags]
    assert {m.backend for m in flagged} == {"cephfs"}  # GlusterFS never passes its link
    # the report's 3.8 GB/s Ceph "reads" are among them
    assert any(m.test == "read" and m.value > 3.8e9 for m in flagged)


def test_ceilings_follow_the_path():
    info, records = replay()
    limits = path_limits(info, list(records))
    assert limits[("glusterfs", "sr33")].ceiling(write=True) == LINE_RATE / 3  # three replicas over one link
    assert limits[("glusterfs", "sr33")].ceiling(write=False) == LINE_RATE
    assert limits[("cephfs", "default")].ceiling(write=True) == LINE_RATE  # once, to the primary OSD
    write = next(m for m in records if m.workload == "iozone" and m.backend == "glusterfs" and
                 m.variant == "sr33" and m.test == "write" and m.params["record_size"] == 64 << 10 and
                 m.params["file_size"] == 128 << 20 and not m.params["direct"])
    assert abs(write.value / write.params["ceiling"] - 0.945) < 0.01  # 38471 KB/s of 41.7 MB/s


def test_cache_flags():
    _, records = replay()
    cached = [m for m in records if m.workload == "iozone" and m.value and not m.params.get("direct")]
    assert cached and all("fits-in-cache" in m.flags for m in cached)  # 128 MiB-1 GiB < 2 GiB
    direct = [m for m in records if m.workload == "iozone" and m.params.get("direct") and m.value]
    assert direct and not any("fits-in-cache" in m.flags for m in direct)
    reads = [m for m in records if m.workload == "largefile" and m.test == "read"]
    assert reads and all("no-cache-drop" in m.flags for m in reads)  # 'time cp', no drop
    small = [m for m in records if m.workload == "smallfile" and m.test == "read"]
    assert small and not any("no-cache-drop" in m.flags for m in small)  # rebooted in between


def test_stability_only_where_there_are_repeats():
    _, records = replay()
    notes = stability_notes(records)
    assert "CephFS: cells measured 2 times; the tables show their median and run-to-run CV" in notes
    assert "GlusterFS/sr33: one run per cell — its stability cannot be judged from repeats" in notes
