"""fio's warm-up before each timed run (``warmup_s``, fio's ``ramp_time``; issue 44): a default
of the run's scale, written into every profile's job file, said by its records, left out of
their progress and their latency over time, covered by the deadline, and the start of a
fault's clock."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.api.faults import FaultSpec
from harness.api.target import Lineup, Target
from harness.errors import BadInput
from harness.execution.plan import build_plan
from harness.execution.timeline import Timeline
from tests.unit.test_faults import Driven, System
from workloads.fio import Fio
from workloads.fio.json_output import interval_histograms, parse, timed
from workloads.fio.profiles import FioOptions

DATA = Path(__file__).parent.parent / "data" / "tools"
# fio 3.33, the job file beside it (fio-ramp-time.fio): ramp_time=2, runtime=3, 200 random 4 KiB
# writes a second; --status-interval=1 printed two documents in the warm-up (their figures
# counted, their latency bins empty), then fio set every figure back to zero
RAMP = DATA / "fio-3.33-ramp-time-status-interval-jsonplus.json"
PROFILE = [{"name": "rw-test", "rw": "randwrite", "bs": "4k", "iodepth": 2}]


def fio_of(scale: str, **options) -> Fio:
    plan = build_plan({"environment": "local", "backends": ["localdir"], "scale": scale,
                       "workloads": [{"name": "fio", "options": {"profiles": PROFILE, **options}}]})
    fio = plan.workloads[0]
    assert isinstance(fio, Fio)
    return fio


def test_each_scale_has_a_warm_up_the_job_file_asks_fio_for():
    quick, report = fio_of("quick"), fio_of("report")
    assert (quick.options.warmup_s, report.options.warmup_s) == (1, 5)
    target = Target("path", Path("/mnt/x"), "localdir", "default")
    for fio, seconds in ((quick, 1), (report, 5)):
        text, _ = fio.job_text(fio.profiles()[0], target, "t")
        assert f"ramp_time={seconds}\n" in text and "time_based=1" in text
        assert fio.warmup(fio.cells()[0]) == ("warmup_s", float(seconds))
    none = fio_of("report", warmup_s=0)
    assert "ramp_time" not in none.job_text(none.profiles()[0], target, "t")[0]
    assert none.warmup(none.cells()[0]) is None
    # the deadline covers it: the default grows by it, and a deadline given is checked against both
    assert report.deadline() - none.deadline() == 5
    with pytest.raises(BadInput, match=r"10 s is shorter than runtime_s and warmup_s make the cell's work \(11 s"):
        fio_of("quick", runtime_s=10, deadline_s=10)


def test_a_warm_ups_reports_are_no_part_of_the_timed_progress_nor_of_the_latency_over_time():
    text = RAMP.read_text()
    started, ended, moved, ops, progress = timed(text)["write"]
    assert ended - started == pytest.approx(3.003)  # (the timed run: the final runtime, not the warm-up's)
    assert (moved, ops) == (2433024.0, 593.0)
    iops = next(m for m in parse(text) if m.metric == "iops")
    assert iops.value == pytest.approx(ops / 3.003, rel=0.01)
    # every point of the progress is in the timed run, counting up from nothing (the warm-up's
    # reports counted 411 writes, and would have stood before its start)
    assert progress[0] == (started, 0.0, 0.0)
    assert all(t >= started for t, _, _ in progress)
    assert all(a[0] <= b[0] and a[1] <= b[1] and a[2] <= b[2] for a, b in zip(progress, progress[1:]))
    assert [n for _, _, n in progress] == [0.0, 177.0, 400.0, 593.0, 593.0]
    for intervals in interval_histograms(text).values():
        assert intervals[0][0] == started and all(a >= started for a, _, _ in intervals)
        assert sum(sum(bins.values()) for _, _, bins in intervals) == 593


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_a_profiles_records_say_the_warm_up_left_out_of_them(tmp_path):
    work, raw = tmp_path / "target", tmp_path / "raw"
    work.mkdir()
    raw.mkdir()
    fio = Fio(FioOptions(size="4MiB", runtime_s=1, warmup_s=1, direct=False, ioengine="psync", profiles=PROFILE))
    heard = []
    view = Target("path", work, "localdir", "default").for_cell(Lineup(1, heard.append))
    records = list(fio.run(view, fio.cells()[0], tmp_path, raw))
    assert records and {m.params.get("warmup_s") for m in records} == {1}
    assert "ramp_time=1" in (raw / "fio-rw-test.fio").read_text()
    assert heard == [1]  # (the measured work, a fault's clock, begins after the warm-up)
    iops = next(m for m in records if m.metric == "iops")
    assert iops.params["ended"] - iops.params["started"] == pytest.approx(1.0, abs=0.1)  # (the timed second only)


def test_a_faults_after_s_counts_from_the_end_of_the_warm_up():
    clock = Driven()
    faults = System(clock, heal_s=1.0, notice_s=0.4)
    timeline = Timeline(faults, "ceph", FaultSpec(action="kill", after_s=0.5, restore_after_s=1.5), clock)
    start = clock.now()
    timeline.start(2.0)  # (fio runs 2 s untimed first)
    clock.sleep(4.0)
    timeline.restore()
    assert timeline.started_at == start + 2.0
    assert [e[2] - start for e in faults.events] == pytest.approx([2.5, 3.5])
    with clock.idle():
        timeline.wait_healthy()
