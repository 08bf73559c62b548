"""Physical-limit flags and ceilings, replayed on the 2014 report's own numbers (1 GbE
links, 2 GB of client RAM, as its environment section declares)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from harness.api.records import Measurement
from harness.report.compare import Systems, stability_notes
from harness.report.limits import annotate, caches_dropped, path_limits
from harness.results.catalogue import Catalogue
from harness.units import parse_rate

LINE_RATE = parse_rate("1Gbit")  # 125,000,000 B/s


def replay():
    catalogue = Catalogue(Path("/nonexistent"))  # reference runs need no store
    info = catalogue.run("report-2014")
    return info, annotate(catalogue.measurements("report-2014"), {"report-2014": info})


def test_a_cache_drop_is_read_by_its_steps_not_by_substring():
    assert caches_dropped("sync+remount+drop_caches") and caches_dropped("O_DIRECT")
    assert not caches_dropped("sync+no-drop_caches")  # the drop failed (not root)
    assert not caches_dropped("not dropped (time cp)") and not caches_dropped(None)
    info, _ = replay()
    read = Measurement("largefile", "read", "throughput", 1e6, "B/s", {"file_size": 1 << 20,
                       "cache": "sync+no-drop_caches"}, "cephfs", run_id="report-2014")
    assert "no-cache-drop" in annotate([read], {"report-2014": info})[0].flags


def test_loopback_iperf3_is_no_network_limit():
    info, _ = replay()
    info = replace(info, config={})  # nothing declared: the baseline would decide
    probe = Measurement("iperf3", "network", "throughput", 2.5e9, "B/s", {"loopback": True, "server": "127.0.0.1"},
                        "cephfs", run_id="report-2014")
    fast = Measurement("largefile", "read", "throughput", 3e9, "B/s", {"file_size": 1 << 30,
                       "cache": "sync+remount+drop_caches"}, "cephfs", run_id="report-2014")
    limits = path_limits(info, [probe])
    assert limits[("cephfs", "default")].network is None
    assert "loopback" in limits[("cephfs", "default")].note
    assert "exceeds-network" not in annotate([probe, fast], {"report-2014": info})[1].flags
    real = replace(probe, params={"loopback": False, "server": "10.0.0.5"}, value=1.25e8)
    assert "exceeds-network" in annotate([real, fast], {"report-2014": info})[1].flags


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
    info, records = replay()
    notes = stability_notes(records, Systems(info.systems))
    assert "CephFS: cells measured 2 times; the tables show their median and run-to-run CV" in notes
    assert "GlusterFS/sr33: one run per cell — its stability cannot be judged from repeats" in notes


def test_the_link_a_lab_shaped_is_the_network_limit_unless_one_is_declared():
    info, _ = replay()
    link = parse_rate("100Mbit")
    shaped = replace(info, config={}, targets={key: {**d, "link": link} for key, d in info.targets.items()})
    limits = path_limits(shaped, [])
    assert limits[("cephfs", "default")].network == link
    assert limits[("cephfs", "default")].network_source == "the lab's shaped link"
    assert limits[("glusterfs", "sr33")].ceiling(write=True) == link / 3
    write = Measurement("largefile", "write", "throughput", link * 0.9, "B/s", {"file_size": 1 << 30},
                        "glusterfs", "sr33", run_id="report-2014")
    read = Measurement("largefile", "read", "throughput", link * 1.5, "B/s",
                       {"file_size": 1 << 30, "cache": "sync+remount+no-drop_caches"}, "cephfs",
                       run_id="report-2014")
    flagged = annotate([write, read], {"report-2014": shaped})
    assert flagged[0].params["ceiling"] == link / 3 and "exceeds-network" not in flagged[0].flags
    assert "exceeds-network" in flagged[1].flags
    assert "page-cache-kept" in flagged[1].flags and "no-cache-drop" not in flagged[1].flags
    # a declared limit still wins over the lab's link
    assert path_limits(replace(shaped, config={"limits": {"network": "1Gbit"}}), [])[
        ("cephfs", "default")].network == LINE_RATE


def test_an_aggregate_over_client_nodes_has_a_link_per_client():
    info, _ = replay()
    link = parse_rate("1Gbit")
    shaped = replace(info, config={}, targets={key: {**d, "link": link} for key, d in info.targets.items()})

    def fio(host, value, clients=2):
        return Measurement("fio", "read-1m", "throughput", value, "B/s",
                           {"direction": "read", "host": host, "clients": clients}, "cephfs", run_id="report-2014")

    one, two, total = annotate([fio("client1", 0.95 * link), fio("client2", 0.95 * link),
                                fio("all", 1.9 * link)], {"report-2014": shaped})
    assert "exceeds-network" not in total.flags and total.params["ceiling"] == 2 * link
    assert one.params["ceiling"] == link
    assert "exceeds-network" in annotate([fio("all", 2.1 * link)], {"report-2014": shaped})[0].flags
    assert "exceeds-network" in annotate([fio("client1", 1.1 * link)], {"report-2014": shaped})[0].flags
