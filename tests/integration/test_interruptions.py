"""The fault matrix: a real local-lab run stopped by SIGINT (Ctrl-C: the whole process
group) or SIGTERM at each stage, and killed with -9 (then 'lab down'). After each: no
process, mount, loop device or lab directory of the run is left, and the store opens
with every measurement made before the signal. Needs root."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness.system import proc
from harness.system.ledger import Ledger, mount_points

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


@dataclass
class Watched:
    """A run of ``dfsbench run`` in its own process group, its progress read as it comes;
    every process its lab's ledger ever named, and the measurements stored when the signal
    went."""

    lab: Path
    results: Path
    child: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    out: list[str] = field(default_factory=list)  # what it printed on stdout (the tables)
    processes: set[proc.ProcessId] = field(default_factory=set)
    before: list[tuple] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)

    def read(self) -> None:
        assert self.child.stderr is not None
        for line in self.child.stderr:
            self.lines.append(line)
            self.note_processes()
        self.done.set()

    def read_out(self) -> None:
        assert self.child.stdout is not None
        for line in self.child.stdout:
            self.out.append(line)

    def note_processes(self) -> None:
        try:
            entries = json.loads((self.lab / "ledger.json").read_text())["entries"]
        except (OSError, ValueError, KeyError):
            return
        self.processes |= {proc.ProcessId(e["pid"], e["start"]) for e in entries if e["kind"] == "process"}

    def wait_for_line(self, text: str, timeout: float = 180) -> None:
        end = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < end:
            while seen < len(self.lines):
                if text in self.lines[seen]:
                    return
                seen += 1
            assert not self.done.is_set(), f"the run ended before '{text}':\n{''.join(self.lines)}"
            self.note_processes()
            time.sleep(0.02)
        raise AssertionError(f"no '{text}' within {timeout} s:\n{''.join(self.lines)}")

    def stored(self, table: str = "measurements") -> list[tuple]:
        path = self.results / "dfsbench.sqlite"
        if not path.exists():
            return []
        db = sqlite3.connect(path, timeout=30)
        try:
            if not db.execute("SELECT 1 FROM sqlite_master WHERE name=?", (table,)).fetchone():
                return []
            return db.execute("SELECT seq, run_id, workload, test, metric, value, params, flags "
                              f"FROM {table} ORDER BY seq").fetchall()
        finally:
            db.close()

    def send(self, sig: int) -> None:
        self.note_processes()
        self.before = self.stored()
        if sig == signal.SIGINT:  # Ctrl-C at a terminal: the whole foreground process group
            os.killpg(self.child.pid, sig)
        else:
            os.kill(self.child.pid, sig)


@pytest.fixture
def started(tmp_path):
    """Starts the run; whatever the test found, nothing of it outlives the test."""
    runs: list[Watched] = []

    def go(config: str = CONFIG) -> Watched:
        runs.append(start(tmp_path, config))
        return runs[-1]

    yield go
    for w in runs:
        if w.child.poll() is None:
            w.child.kill()
        if (w.lab / "ledger.json").exists():
            Ledger.open(w.lab / "ledger.json").undo()
        proc.stop([(p, 1) for p in w.processes])


def start(tmp_path: Path, config: str = CONFIG) -> Watched:
    (tmp_path / "run.yaml").write_text(config)
    lab, results = tmp_path / "lab", tmp_path / "results"
    env = {**os.environ, "DFSBENCH_LOCAL_LAB_DIR": str(lab), "DFSBENCH_RESULTS": str(results)}
    child = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", str(tmp_path / "run.yaml")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             start_new_session=True)
    watched = Watched(lab, results, child)
    threading.Thread(target=watched.read, daemon=True).start()
    threading.Thread(target=watched.read_out, daemon=True).start()
    return watched


def finish(w: Watched, timeout: float = 180) -> int:
    try:
        code = w.child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        w.child.kill()
        raise AssertionError(f"dfsbench did not stop within {timeout} s:\n{''.join(w.lines)}")
    w.done.wait(10)
    return code


def assert_nothing_left(w: Watched) -> None:
    def named_lab(pid: int) -> bool:
        try:
            return any(str(w.lab) + "/" in word for word in proc.cmdline(pid))
        except OSError:  # it ended while being read
            return False

    def strays() -> list[int]:  # also what the ledger never named (a daemon glusterd forked)
        return [pid for pid in map(int, filter(str.isdigit, os.listdir("/proc"))) if named_lab(pid)]

    deadline = time.monotonic() + 10  # a process SIGKILLed by the teardown is reaped by init
    while (any(p.alive() for p in w.processes) or strays()) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = [p for p in w.processes if p.alive()]
    assert not alive, f"left running: {[(p.pid, proc.cmdline(p.pid)[:3]) for p in alive]}"
    assert not strays(), f"left running: {[proc.cmdline(pid)[:3] for pid in strays()]}"
    assert w.processes, "the watcher saw no process of the lab: it cannot tell"
    assert not [m for m in mount_points() if m.startswith(str(w.lab))], "mounts left behind"
    assert not w.lab.exists(), "lab directory left behind"
    loops = proc.run(["losetup", "-a"]).stdout
    assert str(w.lab) not in loops, loops


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


@pytest.mark.parametrize("point", [pytest.param(p, marks=pytest.mark.takes(TAKES[p])) for p in POINTS])
def test_a_signal_at_each_stage_leaves_nothing_and_keeps_the_measurements(started, point):
    text, delay, sig = POINTS[point]
    w = started()
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
    assert_nothing_left(w)
    assert_kept(w, "complete" if point == "comparator" else "interrupted")  # (all was measured)
    if point in ("teardown", "detach"):  # the second signal was put off, and said so
        assert "still undoing" in out, out
    if point in ("teardown", "comparator"):  # every cell was measured before it
        assert {row[2] for row in w.before} == {"largefile", "smallfile", "fio"}


@pytest.mark.takes(50)
def test_kill_9_then_lab_down_leaves_nothing(started):
    w = started()
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
    env = {"DFSBENCH_LOCAL_LAB_DIR": str(w.lab), "DFSBENCH_RESULTS": str(w.results)}
    down = subprocess.run([sys.executable, "-m", "harness.cli", "lab", "down"], capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=300)
    assert down.returncode == 0, down.stderr
    assert_nothing_left(w)
    assert_kept(w, "running")


def dfsbench(w: Watched, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DFSBENCH_LOCAL_LAB_DIR": str(w.lab), "DFSBENCH_RESULTS": str(w.results)}
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          env=env, timeout=600)


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
def test_resume_finishes_an_interrupted_run_into_the_same_tables(started, tmp_path):
    w = started()
    w.wait_for_line("smallfile files=1000 file_size=4 KiB threads=2 on glusterfs")
    time.sleep(3)
    w.send(signal.SIGINT)
    assert finish(w) == 130
    run_id = w.lines[0].split("] run ")[1].split(":")[0]
    config = str(tmp_path / "run.yaml")

    changed = dfsbench(w, "run", config, "--resume", run_id, "--scale", "report")
    assert changed.returncode == 2 and 'scale: "quick" → "report"' in changed.stderr, changed.stderr

    resumed = dfsbench(w, "run", config, "--resume", run_id, "--format", "markdown")
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

    whole = dfsbench(w, "run", config, "--format", "markdown")
    assert whole.returncode == 0, whole.stderr[-3000:]
    assert shape(resumed.stdout) == shape(whole.stdout)
    assert len(shape(whole.stdout)) > 10
