"""The fault matrix: a real local-lab run stopped by SIGINT (Ctrl-C: the whole process
group) or SIGTERM at each stage, and killed with -9 (then 'lab down'). After each: no
process, mount, loop device or lab directory of the run is left, and the store opens
with every measurement made before the signal. Needs root."""

from __future__ import annotations

import os
import signal
import sqlite3
import time

import pytest

from harness.system import proc
from tests.helpers import dfsbench
from tests.integration.lab import Watched, assert_nothing_left, finish

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="the local lab needs root (FUSE mounts, drop_caches)"),
]

CONFIG = """\
backends:
  - name: glusterfs
    variant: disperse
    options: {layout: disperse}
  - cephfs
workloads:
  - name: largefile
    options: {sizes: [32MiB]}
  - name: smallfile
    options: {files: [1000], file_size: 4KiB, threads: 2}
  - name: fio
    options: {size: 16MiB, runtime_s: 6, profiles: [{name: rr, rw: randread, bs: 4k, iodepth: 4}]}
"""


def assert_kept(w: Watched, status: str) -> None:
    """The store opens; every measurement stored before the signal is there unchanged."""
    after = w.stored()
    assert after[:len(w.before)] == w.before
    db = sqlite3.connect(w.results / "dfsbench.sqlite")
    statuses = [s for (s,) in db.execute("SELECT status FROM runs")]
    db.close()
    assert statuses == [status], statuses


# (what the progress says when the signal goes, seconds after, signal): each a distinct stage
POINTS = {
    "bring-up": ("environment 'local' up", 1.0, signal.SIGINT),  # (the lab is up in 2-3 s)
    "attach": ("attach glusterfs/disperse", 0.0, signal.SIGTERM),
    "tool": ("fio profile=rr on glusterfs/disperse", 2.0, signal.SIGINT),
    "engine": ("smallfile files=1000", 0.3, signal.SIGTERM),
    "detach": ("detaching glusterfs/disperse", 0.3, signal.SIGINT),
    "teardown": ("tearing the environment down", 0.0, signal.SIGTERM),
    "comparator": ("s] environment down", 0.0, signal.SIGINT),  # the tables being made
}


# (about how long each takes: the longest are started first, tests/conftest.py)
TAKES = {"bring-up": 7, "attach": 11, "tool": 30, "engine": 13, "detach": 32, "teardown": 47, "comparator": 55}


# (make test signals a run at bring-up, attach, its tool and its engine; the later stages, each a
# longer run, make test-thorough)
THOROUGH = {"detach", "teardown", "comparator"}


@pytest.mark.parametrize("point", [pytest.param(p, marks=[pytest.mark.takes(TAKES[p])]
                                                + ([pytest.mark.thorough] if p in THOROUGH else [])) for p in POINTS])
def test_a_signal_at_each_stage_leaves_nothing_and_keeps_the_measurements(started, point):
    text, delay, sig = POINTS[point]
    w = started(CONFIG)
    w.wait_for_line(text)
    time.sleep(delay)
    w.send(sig)
    if point in ("bring-up", "teardown", "detach"):  # a second Ctrl-C does not abandon the undo
        time.sleep(0.2)
        os.killpg(w.child.pid, signal.SIGINT)
    code = finish(w)
    out = "".join(w.lines)
    assert code == 128 + sig, out
    assert "interrupted" in out
    assert "Traceback" not in out, out  # (only the run's own message: no thread's traceback before it)
    assert_nothing_left(w.lab, w.processes, reaped=False, within_s=10, unledgered=True, loop_devices=True)
    assert_kept(w, "complete" if point == "comparator" else "interrupted")  # (all was measured)
    if point in ("teardown", "detach"):  # the second signal was put off, and said so
        assert "still undoing" in out, out
    if point in ("teardown", "comparator"):  # every cell was measured before it
        assert {row[2] for row in w.before} == {"largefile", "smallfile", "fio"}


@pytest.mark.takes(50)
def test_kill_9_then_lab_down_leaves_nothing(started):
    w = started(CONFIG)
    w.wait_for_line("fio profile=rr on cephfs")

    def running_fio() -> list[proc.ProcessId]:
        w.note_processes()
        return [p for p in w.processes if p.alive() and proc.cmdline(p.pid)[:1] == ["fio"]]

    # (fio fills its file first, then reads for 6 s: on a busy host it starts seconds late)
    end = time.monotonic() + 60
    while not (tool := running_fio()) and time.monotonic() < end and not w.done.is_set():
        time.sleep(0.05)
    assert tool, "fio is recorded in the ledger while it runs"
    w.before = w.stored()
    os.kill(w.child.pid, signal.SIGKILL)
    assert finish(w) == -signal.SIGKILL
    assert any(p.alive() for p in w.processes)  # the lab outlived the harness, as a crash leaves it
    down = dfsbench("lab", "down", env=w.env, timeout=300)
    assert down.returncode == 0, down.stderr
    assert_nothing_left(w.lab, w.processes, reaped=False, within_s=10, unledgered=True, loop_devices=True)
    assert_kept(w, "running")


def shape(markdown: str) -> list[str]:
    """Each table's title, columns and row names: what a table is, without its values."""
    out = []
    for line in markdown.splitlines():
        if line.startswith("|") and not set(line) <= set("|-: "):
            cells = [c.strip() for c in line.strip("|").split("|")]
            out.append(f"{cells[0]} ({len(cells)} columns)")
        elif line.startswith("#"):
            out.append(line)
    return out


@pytest.mark.takes(130)
@pytest.mark.thorough
def test_resume_finishes_an_interrupted_run_into_the_same_tables(started, tmp_path):
    w = started(CONFIG)
    w.wait_for_line("smallfile files=1000 file_size=4 KiB threads=2 on glusterfs")
    time.sleep(3)
    w.send(signal.SIGINT)
    assert finish(w) == 130
    run_id = w.lines[0].split("] run ")[1].split(":")[0]
    config = str(tmp_path / "run.yaml")

    changed = dfsbench("run", config, "--resume", run_id, "--scale", "report", env=w.env)
    assert changed.returncode == 2 and 'scale: "quick" → "report"' in changed.stderr, changed.stderr

    resumed = dfsbench("run", config, "--resume", run_id, "--format", "markdown", env=w.env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming run {run_id}" in resumed.stderr
    assert "attach glusterfs/disperse" in resumed.stderr  # the unfinished backend attaches again
    assert "largefile file_size=32 MiB on glusterfs" not in resumed.stderr  # its done cells do not run
    db = sqlite3.connect(w.results / "dfsbench.sqlite")
    assert [s for (s,) in db.execute("SELECT status FROM runs")] == ["complete"]
    # what the first session measured is kept: a finished cell's records as they were, those
    # of the cell the signal cut short (if it had stored any yet) set aside, not shown
    shown, set_aside = w.stored(), w.stored("superseded")
    assert w.before and all(row in shown or row in set_aside for row in w.before)
    assert all(row[2] == "smallfile" for row in w.before if row in set_aside), set_aside
    assert any(row[2] == "largefile" for row in w.before) and \
        all(row in shown for row in w.before if row[2] == "largefile")

    whole = dfsbench("run", config, "--format", "markdown", env=w.env)
    assert whole.returncode == 0, whole.stderr[-3000:]
    assert shape(resumed.stdout) == shape(whole.stdout)
    assert len(shape(whole.stdout)) > 10
