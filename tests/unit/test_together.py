"""A cell on every client at once: the aggregate's definition (sum of rates; last and
first done), and each client's own view of the attachment."""

from __future__ import annotations

from pathlib import Path

from harness.api.records import Measurement
from harness.api.target import Target
from harness.execution.together import aggregate
from harness.system.hosts import LOCAL, LocalHost


def rec(test, metric, value, unit, host):
    return Measurement("largefile", test, metric, value, unit, {"file_size": 1 << 28, "host": host, "clients": 2},
                       "glusterfs")


def test_rates_add_up_and_elapsed_is_last_and_first_done():
    records = [rec("write", "throughput", 30e6, "B/s", "client1"), rec("write", "throughput", 34e6, "B/s", "client2"),
               rec("write", "elapsed", 9.0, "s", "client1"), rec("write", "elapsed", 7.5, "s", "client2"),
               rec("write", "lat_p99", 0.2, "s", "client1"), rec("write", "lat_p99", 0.3, "s", "client2")]
    # (the per-client records carry their host; the aggregate is over the same cell)
    out = {(m.metric, m.params["host"]): m.value for m in aggregate(
        [Measurement(m.workload, m.test, m.metric, m.value, m.unit, {"file_size": 1 << 28}, m.backend)
         for m in records], 2)}
    assert out == {("throughput", "all"): 64e6, ("elapsed", "all"): 9.0, ("elapsed_first", "all"): 7.5}


def test_an_aggregate_needs_every_client():
    lone = Measurement("largefile", "write", "throughput", 30e6, "B/s", {"file_size": 1}, "cephfs")
    assert aggregate([lone], 2) == []


def test_each_client_remounts_only_its_own_client():
    other = LocalHost()
    remounted = []
    target = Target("path", Path("/mnt/x"), "cephfs", "default", hosts=(LOCAL, other),
                    remount=lambda: remounted.append("all"), remount_host=remounted.append,
                    detach=lambda: None)
    view = target.on(other)
    assert view.host is other and view.hosts == (other,) and view.detach is None
    view.remount()
    assert remounted == [other]
