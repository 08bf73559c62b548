"""iozone's numbers carry their run's own unit and mode (real outputs of iozone 3.489):
-O prints operations per second, -N microseconds per operation, and a log of a cached run
then an -I run holds both, each labelled by its own command line."""

from pathlib import Path

from workloads.iozone import parse

DATA = Path(__file__).parent.parent / "data" / "tools"


def records(name):
    return {(m.test, m.metric, m.unit, m.params["direct"]): m.value
            for m in parse((DATA / name).read_text())}


def test_ops_mode_is_operations_per_second_not_kib():
    got = records("iozone-ops-mode.txt")
    assert got[("write", "ops", "op/s", False)] == 43245  # as printed: 43245 operations/s
    assert all(metric == "ops" and unit == "op/s" for _, metric, unit, _ in got)


def test_microseconds_mode_is_a_latency_in_seconds():
    got = records("iozone-usop-mode.txt")
    assert got[("write", "latency", "s", False)] == 22e-6  # as printed: 22 µs per operation
    assert got[("read", "latency", "s", False)] == 3e-6
    assert all(metric == "latency" and unit == "s" for _, metric, unit, _ in got)


def test_a_log_of_a_cached_and_a_direct_run_labels_each_by_its_own_command():
    got = records("iozone-cached-then-direct.txt")
    # the cached run printed 2952261 kB/s for write, the -I run 681761 kB/s
    assert got[("write", "throughput", "B/s", False)] == 2952261 * 1024
    assert got[("write", "throughput", "B/s", True)] == 681761 * 1024
    assert len(got) == 8
