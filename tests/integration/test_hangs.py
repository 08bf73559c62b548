"""A tool that hangs (stopped with SIGSTOP) and an in-process engine whose FUSE client is
stopped: each is killed at its deadline and flagged, the cells after it fail at once
instead of hanging, and the run finishes and leaves nothing. Needs root.

The deadlines leave room for a loaded host: a healthy cell here takes a few seconds on a
quiet two-core machine and several times that with both cores busy, far inside them; and
the client is stopped once the engine has written its first file, so the stop lands inside
the engine's work however fast or slow the host is."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from tests.integration.lab import assert_nothing_left, finish

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="the local lab needs root (FUSE mounts, drop_caches)"),
]

FIO_DEADLINE, ENGINE_DEADLINE = 30, 40
CONFIG = f"""\
backends: [glusterfs, cephfs]
workloads:
  - name: fio
    options: {{size: 16MiB, runtime_s: 3, deadline_s: {FIO_DEADLINE},
              profiles: [{{name: rr, rw: randread, bs: 4k, iodepth: 4}}]}}
  - name: smallfile
    options: {{files: [1500], file_size: 4KiB, threads: 2, deadline_s: {ENGINE_DEADLINE}}}
  - name: largefile
    options: {{sizes: [16MiB]}}
"""


def ledger_pid(w, prefix: str) -> int:
    entries = json.loads((w.lab / "ledger.json").read_text())["entries"]
    return next(e["pid"] for e in reversed(entries) if e["kind"] == "process" and e["name"].startswith(prefix))


def stop_running(w, prefix: str, group: bool, timeout: float = 120) -> int:
    """SIGSTOP the newest process of the ledger named ``prefix`` once it is running (a
    tool that ended a moment ago, still in the ledger, is passed over: the next is taken)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            pid = ledger_pid(w, prefix)
            (os.killpg if group else os.kill)(pid, signal.SIGSTOP)
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (ProcessLookupError, FileNotFoundError, StopIteration, json.JSONDecodeError):
            state = "gone"
        if state in ("T", "t"):
            return pid
        time.sleep(0.02)
    raise AssertionError(f"no running {prefix} to stop within {timeout} s:\n{''.join(w.lines)}")


def first_file(w, backend: str, timeout: float = 120) -> None:
    """Wait until the smallfile engine has written its first file on the backend's mount."""
    pattern = f"runs/*/{backend}-default/{backend}/dfsbench-default-*/dfsbench-smallfile-*/t00/f000000"
    end = time.monotonic() + timeout
    while not list(w.lab.glob(pattern)):
        assert time.monotonic() < end, f"no file of the engine within {timeout} s:\n{''.join(w.lines)}"
        time.sleep(0.01)


@pytest.mark.takes(150)
@pytest.mark.thorough
def test_a_stopped_tool_and_a_stopped_fuse_client_are_killed_at_their_deadline(started):
    w = started(CONFIG)
    w.wait_for_line("fio profile=rr on glusterfs")
    stop_running(w, "fio", group=True)  # fio and its job processes: a tool that hangs
    w.wait_for_line("smallfile files=1500 file_size=4 KiB threads=2 on cephfs")
    first_file(w, "cephfs")
    stop_running(w, "ceph-fuse", group=False)  # the engine's every file operation now blocks
    stopped = time.monotonic()
    code = finish(w, timeout=600)
    out = "".join(w.lines)
    assert code == 1, out  # finished, with failures
    # bounded by the deadlines, not by the client: the engine's (+5 s), 10 s to find its
    # directory cannot be removed, the next cell's 10 s check, then the detach (+ slack):
    # 10 + 5 s of probes, the client's stop, its MDS session evicted (a client killed at
    # the end of its grace would otherwise hold its caps, and the removal of its files
    # through a new client wait, 60 s more)
    assert time.monotonic() - stopped < ENGINE_DEADLINE + 5 + 10 + 10 + 60, out
    db = sqlite3.connect(w.results / "dfsbench.sqlite")
    rows = db.execute("SELECT backend, workload, value, flags, params FROM measurements").fetchall()
    hung = {(b, wl) for b, wl, _, f, _ in rows if "hung" in json.loads(f)}
    # fio prints what it did when stopped at its deadline: those numbers are kept, flagged
    assert hung == {("glusterfs", "fio"), ("cephfs", "smallfile")}, rows
    after = [json.loads(p)["error"] for b, wl, v, _, p in rows if (b, wl) == ("cephfs", "largefile")]
    assert after and "did not answer within 10 s" in after[0], rows
    # a hung cell is not done: 'run --resume' would run it again
    cells = dict(db.execute("SELECT cell, status FROM cells"))
    assert sorted(cells.values()).count("failed") == 3, cells
    # the other backend's cells after the hung tool ran
    ran = {(b, wl) for b, wl, v, f, _ in rows if v is not None and "hung" not in json.loads(f)}
    assert {("glusterfs", "smallfile"), ("glusterfs", "largefile"), ("cephfs", "fio")} <= ran
    assert "Cells that failed or hung" in "".join(w.out)
    assert_nothing_left(w.lab, w.processes, reaped=False, within_s=10, unledgered=True, loop_devices=True)
