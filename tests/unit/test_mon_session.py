"""The monitor session (backends.ceph.lab.MonSession) waits for no answer without a
deadline: librados ignores a command's timeout and waits as long as no monitor (or manager)
answers, so a thread of a bring-up could wait there for ever, and the undo with it. A helper
that never answers stands in for a monitor that does not: the session's deadline, its
``alive`` and an interrupt of the run each end the wait, and end the helper."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from backends.ceph import lab
from backends.ceph.lab import MonSession
from harness.errors import DfsbenchError
from harness.system import proc, signals
from harness.system.signals import Interrupted

HELLO = json.dumps({"ret": 0, "out": "connected", "err": ""})


def helper(tmp_path: Path, hello: bool) -> list[str]:
    """A session helper that says it is connected (or not even that), then answers nothing;
    its pid goes to a file, for the test to see it ended."""
    script = tmp_path / "silent.py"
    script.write_text("import os, sys, time\n"
                      f"open({str(tmp_path / 'pid')!r}, 'w').write(str(os.getpid()))\n"
                      + (f"print({HELLO!r}, flush=True)\n" if hello else "")
                      + "time.sleep(600)\n")
    return [sys.executable, str(script)]


def ended(tmp_path: Path) -> bool:
    ident = proc.ProcessId.of(int((tmp_path / "pid").read_text()))
    return ident is None or not ident.alive()


def in_thread(work) -> tuple[list[BaseException], threading.Thread]:
    """Run ``work`` in a thread (as a bring-up does): what it raised, and the thread, which
    the test gives a bound (a session that waits for ever must fail it, not hang it)."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return raised, thread


@pytest.fixture(autouse=True)
def quick(monkeypatch, tmp_path):
    monkeypatch.setattr(lab, "SESSION_SLACK", 0.5, raising=False)
    yield
    signals.cancelled.clear()
    if (tmp_path / "pid").exists() and not ended(tmp_path):  # (this test's helper, by the pid it wrote)
        os.kill(int((tmp_path / "pid").read_text()), signal.SIGKILL)


def test_a_command_no_one_answers_fails_at_its_deadline_and_ends_the_session(tmp_path):
    conf = tmp_path / "ceph.conf"
    with MonSession(conf, conf, tmp_path / "session.log", connect_timeout=10,
                    helper=helper(tmp_path, hello=True)) as mon:
        start = time.monotonic()
        raised, thread = in_thread(lambda: mon.command("osd stat", timeout=1))
        thread.join(30)
        assert not thread.is_alive(), "the command waited past its deadline"
        assert time.monotonic() - start < 20  # (1 s and the slack; room for a busy host)
        assert isinstance(raised[0], DfsbenchError) and "'osd stat'" in raised[0].message, raised
        with pytest.raises(DfsbenchError, match="session ended"):  # (a late answer is no answer to this)
            mon.command("status")
    assert ended(tmp_path)


def test_the_wait_for_the_monitor_ends_when_the_monitor_died(tmp_path):
    conf = tmp_path / "ceph.conf"
    (tmp_path / "mon.a.log").write_text("unable to bind monitor to v2:127.0.0.1:52281/0\n")
    raised, thread = in_thread(lambda: MonSession(conf, conf, tmp_path / "session.log", connect_timeout=120,
                                                  helper=helper(tmp_path, hello=False),
                                                  alive=lambda: "ceph-mon.a exited with code 1",
                                                  daemon_log=tmp_path / "mon.a.log"))
    thread.join(30)
    assert not thread.is_alive(), "the session waited 120 s for a monitor that had died"
    assert isinstance(raised[0], DfsbenchError) and "ceph-mon.a exited" in raised[0].message, raised
    assert "unable to bind monitor" in raised[0].message  # (why it died: the end of its log)
    assert ended(tmp_path)


def test_a_thread_waiting_for_the_monitor_stops_when_the_run_is_interrupted(tmp_path):
    conf = tmp_path / "ceph.conf"
    raised, thread = in_thread(lambda: MonSession(conf, conf, tmp_path / "session.log", connect_timeout=120,
                                                  helper=helper(tmp_path, hello=False)))
    deadline = time.monotonic() + 20
    while not (tmp_path / "pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    signals.cancelled.set()
    thread.join(30)
    assert not thread.is_alive(), "a bring-up's thread went on waiting for the monitor after the interrupt"
    assert isinstance(raised[0], Interrupted), raised
    assert ended(tmp_path)
