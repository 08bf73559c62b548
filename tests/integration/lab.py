"""What the tests against a real lab share: the processes its ledger names, the check that
nothing of it is left, and a ``dfsbench run`` watched while it goes (its progress, the
processes of its lab, what it stored). A module, not a test module: the tests import it,
and the fixture on top of it is in conftest.py."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from harness.system import proc
from harness.system.ledger import Ledger, mount_points


def lab_processes(lab: Path) -> list[proc.ProcessId]:
    """The processes the lab's ledger names as running."""
    ledger = Ledger.open(lab / "ledger.json")
    return [ident for _, ident, _ in ledger.live_processes()]


def assert_nothing_left(lab: Path, pids: Collection[proc.ProcessId] | None, *, reaped: bool = True,
                        within_s: float = 0.0, unledgered: bool = False, loop_devices: bool = False) -> None:
    """Nothing of the lab at ``lab`` is left: none of ``pids`` runs, no mount is under it,
    and the directory is gone.

    ``pids``: the lab's processes the test knows of; None when it knows of none (the ledger
    went with the lab), and empty is a watcher that saw none, which cannot tell.
    ``reaped``: none of them is still in the process table either (exited, not yet reaped
    by init: 'kill -0' and ps still find those). ``within_s``: how long they are given to
    go first (a process SIGKILLed by a teardown is gone a moment later). ``unledgered``: no
    process at all names the lab's directory on its command line (one the ledger never
    named: a daemon glusterd forked). ``loop_devices``: no loop device's file is in it."""
    known = list(pids) if pids is not None else []
    assert pids is None or known, "the watcher saw no process of the lab: it cannot tell"

    def named_lab(pid: int) -> bool:
        try:
            return any(str(lab) + "/" in word for word in proc.cmdline(pid))
        except OSError:  # it ended while being read
            return False

    def strays() -> list[int]:
        if not unledgered:
            return []
        return [pid for pid in map(int, filter(str.isdigit, os.listdir("/proc"))) if named_lab(pid)]

    def listed() -> list[proc.ProcessId]:
        return [p for p in known if p.exited_not_reaped()] if reaped else []

    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and (any(p.alive() for p in known) or listed() or strays()):
        time.sleep(0.1)
    alive = [p for p in known if p.alive()]
    assert not alive, f"lab processes left running: {[(p.pid, proc.cmdline(p.pid)[:3]) for p in alive]}"
    assert not listed(), f"lab processes still in the process table: {listed()}"
    assert not strays(), f"left running: {[proc.cmdline(pid)[:3] for pid in strays()]}"
    assert not [m for m in mount_points() if m.startswith(str(lab))], "mounts left behind"
    assert not lab.exists(), "lab directory left behind"
    if loop_devices:
        loops = proc.run(["losetup", "-a"]).stdout
        assert str(lab) not in loops, loops


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

    @property
    def env(self) -> dict[str, str]:
        """What a later ``dfsbench`` command is given to find this run's lab and results."""
        return {"DFSBENCH_LOCAL_LAB_DIR": str(self.lab), "DFSBENCH_RESULTS": str(self.results)}

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


def start(tmp_path: Path, config: str) -> Watched:
    """``dfsbench run`` of ``config`` on a local lab of its own, watched."""
    (tmp_path / "run.yaml").write_text(config)
    lab, results = tmp_path / "lab", tmp_path / "results"
    env = {**os.environ, "DFSBENCH_LOCAL_LAB_DIR": str(lab), "DFSBENCH_RESULTS": str(results),
           "PYTHONFAULTHANDLER": "1"}  # (a run that hangs shows its stacks: see finish)
    child = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", str(tmp_path / "run.yaml")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             start_new_session=True)
    watched = Watched(lab, results, child)
    threading.Thread(target=watched.read, daemon=True).start()
    threading.Thread(target=watched.read_out, daemon=True).start()
    return watched


def descendants(pid: int) -> list[str]:
    """The processes under ``pid`` now, each 'PID COMMAND LINE' (what a hung run waits on)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        except (ValueError, OSError, IndexError):
            continue
    found, todo = [], [pid]
    while todo:
        at = todo.pop()
        for child, parent in parents.items():
            if parent == at:
                todo.append(child)
                try:
                    argv = (Path("/proc") / str(child) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    argv = "?"
                found.append(f"{child} {argv.strip()[:200]}")
    return found


def finish(w: Watched, timeout: float = 180) -> int:
    """The run's exit code, once it ended and its output is read. A run that has not ended
    by ``timeout`` fails the test with what it was waiting on: its processes, and each of
    its threads' Python stack (faulthandler's, on SIGABRT)."""
    try:
        code = w.child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        waiting = descendants(w.child.pid)
        os.kill(w.child.pid, signal.SIGABRT)  # (PYTHONFAULTHANDLER: its stacks, to stderr)
        try:
            w.child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            w.child.kill()
        w.done.wait(10)
        raise AssertionError(f"dfsbench did not stop within {timeout} s; its processes:\n  " + "\n  ".join(waiting)
                             + f"\nits output:\n{''.join(w.lines)}")
    w.done.wait(10)
    return code
