"""Physical-limit flags and ceilings, replayed on the 2014 report's own numbers (1 GbE
links, 2 GB of client RAM, as its environment section declares)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.api.records import Measurement
from harness.report.compare import stability_notes
from harness.report.limits import annotate, caches_dropped, path_limits
from harness.report.verdicts import Systems
from harness.units import parse_rate
from tests.unit.builders import lab, replay

LINE_RATE = parse_rate("1Gbit")  # 125,000,000 B/s


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

    def write(value):
        return Measurement("largefile", "write", "throughput", value, "B/s", {"file_size": 1 << 30},
                           "glusterfs", "sr33", run_id="report-2014")

    read = Measurement("largefile", "read", "throughput", link * 1.5, "B/s",
                       {"file_size": 1 << 30, "cache": "sync+remount+no-drop_caches"}, "cephfs",
                       run_id="report-2014")
    # a replica-3 FUSE client sends each write three times over its link: 0.9 × link is not
    # the cluster's (write-behind answered), a third of it can be
    fast, fair, flagged_read = annotate([write(link * 0.9), write(link * 0.3), read], {"report-2014": shaped})
    assert fast.params["ceiling"] == link / 3 and "exceeds-network" in fast.flags
    assert "exceeds-network" not in fair.flags
    assert "exceeds-network" in flagged_read.flags
    assert "page-cache-kept" in flagged_read.flags and "no-cache-drop" not in flagged_read.flags
    # read on another client than the writer: no cache could answer, nothing to say
    other = replace(read, value=link * 0.5, params={**read.params, "cache": "sync+other-client"})
    assert annotate([other], {"report-2014": shaped})[0].flags == ()
    # a declared limit still wins over the lab's link
    assert path_limits(replace(shaped, config={"limits": {"network": "1Gbit"}}), [])[
        ("cephfs", "default")].network == LINE_RATE


def test_a_write_while_a_brick_is_down_has_the_ceiling_of_the_copies_the_client_still_sends():
    info, _ = replay()
    link = parse_rate("1Gbit")
    run = lab(info, link)
    fault = Measurement("fault", "recovery", "elapsed", 20.0, "s",
                        {"for": "largefile", "injected": 102.0, "restored": 110.0, "healthy": 130.0},
                        "glusterfs", "vr33", run_id="report-2014")

    def write(started, ended, value):
        return Measurement("largefile", "write", "throughput", value, "B/s",
                           {"file_size": 1 << 30, "started": started, "ended": ended}, "glusterfs", "vr33",
                           run_id="report-2014")

    # wholly inside the brick's absence, at 133 % of link/3: two copies leave the client, so
    # its ceiling is link/2 (89 %), and it is degraded, not a cache
    inside = annotate([fault, write(103.0, 109.0, link / 3 * 1.33)], {"report-2014": run})[1]
    assert inside.params["ceiling"] == pytest.approx(link / 2)
    assert "exceeds-network" not in inside.flags and "degraded" in inside.flags
    # half before the fault, half in it: the bound averaged over the record's own time
    half = annotate([fault, write(98.0, 106.0, link / 3)], {"report-2014": run})[1]
    assert half.params["ceiling"] == pytest.approx((link / 3 + link / 2) / 2)
    # before the fault, and after the system was healthy again: neither degraded nor raised
    before, after = annotate([fault, write(90.0, 101.0, link / 3), write(131.0, 140.0, link / 3)],
                             {"report-2014": run})[1:]
    assert "degraded" not in before.flags and "degraded" not in after.flags
    assert before.params["ceiling"] == after.params["ceiling"] == pytest.approx(link / 3)
    # the brick back (110 s) but the system still healing: the client sends three copies
    # again, so 140 % of link/3 is a cache answering, in a degraded record
    healing = annotate([fault, write(112.0, 128.0, link / 3 * 1.4)], {"report-2014": run})[1]
    assert healing.params["ceiling"] == pytest.approx(link / 3)
    assert "exceeds-network" in healing.flags and "degraded" in healing.flags
    # a Ceph client sends each write once whatever is down: its ceiling does not move
    ceph_fault = replace(fault, backend="cephfs", variant="default")
    ceph = annotate([ceph_fault, replace(write(103.0, 109.0, link * 0.9), backend="cephfs", variant="default")],
                    {"report-2014": run})[1]
    assert ceph.params["ceiling"] == pytest.approx(link) and "degraded" in ceph.flags
    # the monitor down, not a node that stores data: degraded, but every copy still goes out
    mon = replace(ceph_fault, params={**ceph_fault.params, "stores_data": False})
    gluster_mon = replace(mon, backend="glusterfs", variant="vr33")
    kept = annotate([gluster_mon, write(103.0, 109.0, link / 3 * 1.33)], {"report-2014": run})[1]
    assert kept.params["ceiling"] == pytest.approx(link / 3) and {"degraded", "exceeds-network"} <= set(kept.flags)
    # never healthy again: everything from the injection on is degraded
    never = replace(fault, value=None, flags=("degraded",), params={**fault.params, "healthy": None})
    assert "degraded" in annotate([never, write(500.0, 510.0, 1e6)], {"report-2014": run})[1].flags


def test_an_aggregate_is_bounded_by_the_servers_too():
    info, _ = replay()
    link = parse_rate("1Gbit")
    run = lab(info, link, nodes=3)

    def total(backend, variant, test, value, clients):
        return Measurement("largefile", test, "throughput", value, "B/s",
                           {"file_size": 1 << 30, "host": "all", "clients": clients}, backend, variant,
                           run_id="report-2014")

    # two Ceph clients: 2 links on the client side, but three nodes keeping three copies
    # take in at most one link's worth of writes between them (S × link / R)
    ceph_w, ceph_r = annotate([total("cephfs", "default", "write", 1.5 * link, 2),
                               total("cephfs", "default", "read", 1.5 * link, 2)], {"report-2014": run})
    assert ceph_w.params["ceiling"] == pytest.approx(link) and "exceeds-network" in ceph_w.flags
    assert ceph_r.params["ceiling"] == pytest.approx(2 * link) and "exceeds-network" not in ceph_r.flags
    # six GlusterFS clients: 6 × link/3 = 2 links from the clients, 1 link into the servers
    many = annotate([total("glusterfs", "vr33", "write", 0.9 * link, 6)], {"report-2014": run})[0]
    assert many.params["ceiling"] == pytest.approx(link)
    # three clients reading while one of the three nodes is down: two nodes serve them
    fault = Measurement("fault", "recovery", "elapsed", 5.0, "s", {"injected": 100.0, "restored": 120.0,
                                                                   "healthy": 125.0}, "cephfs", "default",
                        run_id="report-2014")
    read = replace(total("cephfs", "default", "read", 2.5 * link, 3), params={
        "file_size": 1 << 30, "host": "all", "clients": 3, "started": 105.0, "ended": 115.0})
    degraded = annotate([fault, read], {"report-2014": run})[1]
    assert degraded.params["ceiling"] == pytest.approx(2 * link) and "exceeds-network" in degraded.flags


def test_a_client_of_its_own_link_and_ram():
    info, _ = replay()
    link = parse_rate("1Gbit")
    run = lab(info, link, links={"client2": link / 4},
              client_facts={"client1": {"memory": 32 << 30}, "client2": {"memory": 1 << 30}})
    # (no declared client RAM: each client's own counts, not this machine's 64 GiB)
    run = replace(run, config={}, host={**run.host, "memory": 64 << 30})

    def rec(host, test="write", value=1e6, direct=True, clients=2):
        return Measurement("largefile", test, "throughput", value, "B/s",
                           {"file_size": 2 << 30, "host": host, "clients": clients, "direct": direct},
                           "cephfs", run_id="report-2014")

    one, two, both = annotate([rec("client1"), rec("client2"), rec("all")], {"report-2014": run})
    assert one.params["ceiling"] == link and two.params["ceiling"] == link / 4
    assert both.params["ceiling"] == pytest.approx(min(link + link / 4, 3 * link / 3))
    # a 2 GiB file in cached mode fits client1's 32 GiB, not client2's 1 GiB
    big, small = annotate([rec("client1", direct=False), rec("client2", direct=False)], {"report-2014": run})
    assert "fits-in-cache" in big.flags and "fits-in-cache" not in small.flags
    # both at once: each client's file against the smaller of the two (not this machine's RAM)
    assert "fits-in-cache" not in annotate([rec("all", direct=False)], {"report-2014": run})[0].flags


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


def test_a_stonewalled_rate_with_one_client_above_its_own_link_is_flagged():
    # measured in the container lab: client2 behind 250 Mbit counted 341 MB in the 8.79 s
    # window, 38.8 MB/s of writes its 31.25 MB/s link cannot carry (its write-behind
    # answered); the sum, 115.2 MB/s, is under the aggregate's ceiling all the same
    info, _ = replay()
    link = parse_rate("1Gbit")
    run = lab(info, link, links={"client2": link / 4}, client_facts={"client1": {}, "client2": {}})
    params = {"file_size": 640 << 20, "host": "all", "clients": 2, "started": 0.0, "ended": 22.6,
              "stonewall": [0.02, 8.81], "moved_each": {"client1": 671088640.0, "client2": 341e6}}
    wall = Measurement("largefile", "write", "throughput_stonewalled", 115.2e6, "B/s", params, "cephfs",
                       run_id="report-2014")
    flagged = annotate([wall], {"report-2014": run})[0]
    assert flagged.params["ceiling"] == pytest.approx(link) and 115.2e6 < link
    assert "exceeds-network" in flagged.flags
    within = replace(wall, params={**params, "moved_each": {"client1": 671088640.0, "client2": 250e6}},
                     value=(671088640.0 + 250e6) / 8.79)
    assert "exceeds-network" not in annotate([within], {"report-2014": run})[0].flags
    # a foreign record's window that is not two numbers: nothing to hold a client's part to
    for window in ([0.02, "x"], ["a", "b"], [True, 9.0], [0.02, None]):
        odd = annotate([replace(wall, params={**params, "stonewall": window})], {"report-2014": run})[0]
        assert "exceeds-network" not in odd.flags, window


def test_a_stonewalled_rate_has_the_ceiling_of_its_own_window():
    # a brick down from 102 to 110 s; the aggregate spans 100-130 s, the window while both
    # clients ran is 103-109 s: wholly inside the absence, so its ceiling is two links / 2
    info, _ = replay()
    link = parse_rate("1Gbit")
    run = lab(info, link, client_facts={"client1": {}, "client2": {}})
    fault = Measurement("fault", "recovery", "elapsed", 20.0, "s", {"injected": 102.0, "restored": 110.0,
                                                                   "healthy": 130.0}, "glusterfs", "vr33",
                        run_id="report-2014")
    wall = Measurement("largefile", "write", "throughput_stonewalled", 1e6, "B/s",
                       {"host": "all", "clients": 2, "started": 100.0, "ended": 130.0, "stonewall": [103.0, 109.0]},
                       "glusterfs", "vr33", run_id="report-2014")
    assert annotate([fault, wall], {"report-2014": run})[1].params["ceiling"] == pytest.approx(2 * link / 2)


def test_an_o_direct_write_through_a_client_that_buffers_it_is_flagged_write_behind():
    """weed mount takes an O_DIRECT write into its own buffer (a 4 KiB write returned in 11 µs
    on the local lab): such a write is flagged, and not judged; a write that ends with an
    fsync, a read, and the same write through a client that sends it on are not."""
    from harness.api import registry

    info, _ = replay()
    key = ("seaweedfs", "default")
    run = replace(info, systems={**info.systems, key: registry.load("backend", "seaweedfs").facts({})},
                  targets={**info.targets, key: {}})

    def fio(direction, backend="seaweedfs", variant="default", direct=True):
        return Measurement("fio", "write-4k-qd1", "throughput", 70e6, "B/s",
                           {"direct": direct, "direction": direction, "rw": "write" if direction == "write" else "read"},
                           backend, variant, run_id="report-2014")

    copy = Measurement("largefile", "write", "throughput", 50e6, "B/s", {"file_size": 1 << 30}, "seaweedfs",
                       run_id="report-2014")  # (a copy that ends with an fsync: no direct param)
    direct, read, buffered, synced, gluster = annotate(
        [fio("write"), fio("read"), fio("write", direct=False), copy, fio("write", "glusterfs", "sr33")],
        {"report-2014": run})
    assert "write-behind" in direct.flags
    assert not {"write-behind"} & set(read.flags + buffered.flags + synced.flags + gluster.flags)
    assert Systems().of(key).write_behind and not Systems().of(("cephfs", "default")).write_behind
