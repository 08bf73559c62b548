"""The lease on a lab (harness.system.lease): one process holds it at a time, the kernel
lets go of a holder that dies, and who held it is told from a process that is gone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.system import lease as lease_module
from harness.system.lease import Holder, LeaseLock

HOLD = ("import sys, time; from pathlib import Path; from harness.system.lease import LeaseLock; "
        "lock = LeaseLock(Path(sys.argv[1])); print(lock.take(), flush=True); time.sleep(600)")


def _holding(path: Path) -> subprocess.Popen[str]:
    """Another process that took the lock at ``path`` (it said so) and sleeps holding it."""
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "True"
    return child


def test_one_process_holds_the_lock_and_a_holder_that_dies_lets_go(tmp_path):
    path = tmp_path / "lease"
    child = _holding(path)
    try:
        mine = LeaseLock(path)
        assert not mine.take() and not mine.held  # (at once: no wait)
        child.kill()  # (SIGKILL: nothing of the child's own lets go, the kernel does)
        child.wait(timeout=30)
        assert mine.take() and mine.held
        other = LeaseLock(path)
        assert not other.take()  # (one holder in one process too: a lock is an open file's)
        mine.release()
        assert not path.exists() and not mine.held
        assert other.take()
        other.release()
    finally:
        child.kill()
        child.wait()


def test_a_lock_file_its_holder_removed_between_open_and_lock_is_not_taken(tmp_path, monkeypatch):
    """A holder lets go by removing the file and closing it: a process that opened the file
    just before and locks it after holds a file no one else opens; it opens the path anew."""
    path = tmp_path / "lease"
    real_open = os.open
    opened = []

    def open_then_holder_lets_go(file, flags, mode=0o777):
        fd = real_open(file, flags, mode)
        opened.append(fd)
        if len(opened) == 1:
            os.unlink(file)  # (the holder's release, between our open and our flock)
        return fd

    monkeypatch.setattr(lease_module.os, "open", open_then_holder_lets_go)
    mine = LeaseLock(path)
    assert mine.take() and len(opened) == 2
    monkeypatch.undo()
    assert path.exists()
    assert not LeaseLock(path).take()  # (the lock held is the path's)
    mine.release()


def test_a_holder_is_told_from_a_process_that_is_gone(tmp_path):
    me = Holder.me("run 20261128-000000-abcdef")
    assert me.alive() and Holder.read(me.saved()) == me
    assert not Holder(me.what, me.pid, me.start + 1, me.since).alive()  # (its pid, another process)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    started = Holder.me("x")
    gone.wait()
    assert not Holder("run x", gone.pid, started.start, started.since).alive()
    for bad in (None, "run", {"what": "run"}, {**me.saved(), "pid": "1"}, {**me.saved(), "since": True}):
        assert Holder.read(bad) is None
    shown = str(Holder("run \x1b[2Jx\n", me.pid, me.start, me.since))
    assert "\x1b" not in shown and "\n" not in shown and "\\x1b[2Jx\\n" in shown
