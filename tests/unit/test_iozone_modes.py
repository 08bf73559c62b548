"""iozone's numbers carry their run's own unit and mode (real outputs of iozone 3.489):
-O prints operations per second, -N microseconds per operation, and a log of a cached run
then an -I run holds both, each labelled by its own command line."""

from pathlib import Path

import pytest

from harness.errors import BadInput
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


@pytest.mark.parametrize("name, added", [
    ("iozone-cached.txt", "\tOutput is in operations per second.\n"),
    ("iozone-ops-mode.txt", "\tOutput is in kBytes/sec\n"),
    ("iozone-usop-mode.txt", "\tOPS Mode. Output is in operations per second.\n"),
])
def test_a_run_that_names_two_units_is_refused_as_ambiguous(name, added):
    """A header naming kBytes/sec and operations per second (or another pair) is neither:
    it was read as kB/s (or as whichever the parser looked for first)."""
    real = (DATA / name).read_text()
    at = real.index("\tCommand line used:")
    with pytest.raises(BadInput, match="an iozone run names .* and .* as its unit: the output is ambiguous"):
        parse(real[:at] + added + real[at:], source="two-units.txt")


def test_a_header_and_a_command_line_that_disagree_are_refused():
    real = (DATA / "iozone-cached.txt").read_text()
    with pytest.raises(BadInput, match="kBytes/sec and operations per second .-O. as its unit"):
        parse(real.replace("iozone -R -n 16m", "iozone -R -O -n 16m"))
