"""The real engines on two client hosts of one machine (two views of a local directory):
each timed phase behind a barrier, reads on the other client, records that say when they
ran and what they moved, and the aggregate from them."""

from __future__ import annotations

from harness.api.target import Lineup, Target
from harness.execution import together
from harness.system.hosts import LocalHost
from tests.unit.builders import scratch_of, workload


def hosts() -> tuple[LocalHost, LocalHost]:
    one, two = LocalHost(), LocalHost()
    one.name, two.name = "client1", "client2"
    return one, two


def test_one_client_writes_and_the_next_reads_it_back(tmp_path):
    one, two = hosts()
    mount = tmp_path / "mount"
    mount.mkdir()
    target = Target("path", mount, "localdir", "default", host=one, hosts=(one, two))
    target.lineup = Lineup(1, scratch=scratch_of(tmp_path))
    largefile = workload("largefile", {"sizes": ["4MiB"]})
    records = list(largefile.run(target, largefile.cells()[0], scratch_of(tmp_path)(one), tmp_path / "raw"))
    write = next(m for m in records if m.test == "write" and m.metric == "throughput")
    read = next(m for m in records if m.test == "read" and m.metric == "throughput")
    assert write.params["bytes"] == read.params["bytes"] == 4 << 20
    assert write.params["started"] < write.params["ended"] <= read.params["started"] < read.params["ended"]
    assert read.params["cache"] == "sync+other-client" and read.params["read_on"] == "client2"
    assert "read_on" not in write.params
    assert write.progress[-1][1] == 4 << 20  # (the copy said how far it was, last: all of it)
    assert list(mount.iterdir()) == []  # its file is gone after the read back


def test_two_clients_at_once_each_read_what_the_other_wrote(tmp_path):
    one, two = hosts()
    mount = tmp_path / "mount"
    mount.mkdir()
    target = Target("path", mount, "localdir", "default", host=one, hosts=(one, two))
    smallfile = workload("smallfile", {"files": [40], "file_size": "4KiB", "threads": 2})
    started = []
    records = list(together.run(smallfile, target, smallfile.cells()[0], scratch_of(tmp_path), tmp_path / "raw",
                                "smallfile on 2 clients", on_start=lambda warmup_s: started.append(1)))
    assert started == [1]  # the first timed phase started the cell's clock, once
    by = {(m.test, m.metric, m.params["host"]): m for m in records}
    for op in ("create", "ls-l", "read"):
        ones, twos, alls = (by[(op, "files_per_sec", h)] for h in ("client1", "client2", "all"))
        span = max(ones.params["ended"], twos.params["ended"]) - min(ones.params["started"], twos.params["started"])
        assert ones.params["files"] == twos.params["files"] == 40 and alls.params["moved"] == 80
        assert alls.params["files"] == 40  # (the cell's file count per client, kept in the aggregate)
        assert alls.value == 80 / span
        # each phase began behind the barrier: neither client began it before the other reached it
        assert abs(ones.params["started"] - twos.params["started"]) < 1.0
    assert by[("read", "files_per_sec", "client1")].params["cache"].startswith("sync+other-client")
    assert list(mount.iterdir()) == []


def test_two_clients_at_once_each_check_the_others_file_against_the_others_digest(tmp_path):
    one, two = hosts()
    mount = tmp_path / "mount"
    mount.mkdir()
    target = Target("path", mount, "localdir", "default", host=one, hosts=(one, two))
    largefile = workload("largefile", {"sizes": ["4MiB"]})
    records = list(together.run(largefile, target, largefile.cells()[0], scratch_of(tmp_path), tmp_path / "raw",
                                "largefile on 2 clients"))
    reads = {m.params["host"]: m for m in records if m.test == "read" and m.metric == "throughput"}
    # (each client's source is random: read against its own digest, the other's file differs)
    assert reads["client1"].params["cache"] == "sync+other-client" and set(reads) == {"client1", "client2", "all"}
    assert reads["all"].params["moved"] == 8 << 20
    assert list(mount.iterdir()) == []


def test_a_client_stopped_by_any_error_releases_the_others(tmp_path):
    import pytest

    from harness.errors import DfsbenchError

    one, two = hosts()
    target = Target("path", tmp_path, "localdir", "default", host=one, hosts=(one, two))
    largefile = workload("largefile", {"sizes": ["4MiB"]})

    def run(view, cell, scratch, raw):
        if view.host.label == "client2":
            raise KeyError("a bug, not a tool's failure")
        view.begin("write")  # (would wait for client2 for ever)
        yield from ()

    largefile.run = run
    with pytest.raises(DfsbenchError, match="client2: KeyError"):
        list(together.run(largefile, target, largefile.cells()[0], scratch_of(tmp_path), tmp_path / "raw", "x"))
