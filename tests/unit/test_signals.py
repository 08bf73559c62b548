"""Ctrl-C and SIGTERM: a teardown runs to its end through them; other threads stop."""

import os
import signal
import threading
import time

import pytest

from harness.system import proc, signals
from harness.system.signals import Interrupted


@pytest.fixture(autouse=True)
def handlers():
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    signals.install()
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)
    signals.cancelled.clear()


def wait_for_signal() -> None:
    time.sleep(0.2)  # the handler runs between bytecodes; sleep is interrupted at once


def test_a_signal_raises_interrupted_with_the_shells_exit_code():
    with pytest.raises(Interrupted) as caught:
        os.kill(os.getpid(), signal.SIGTERM)
        wait_for_signal()
    assert caught.value.exit_code == 143
    assert signals.cancelled.is_set()


def test_a_shielded_block_runs_to_its_end_then_the_signal_is_raised(capsys):
    done = []
    with pytest.raises(Interrupted) as caught:
        with signals.shielded():
            os.kill(os.getpid(), signal.SIGINT)
            wait_for_signal()
            os.kill(os.getpid(), signal.SIGINT)  # a second Ctrl-C
            wait_for_signal()
            done.append("all of it")
    assert done == ["all of it"]
    assert caught.value.exit_code == 130
    assert "still undoing" in capsys.readouterr().err


def test_a_teardown_undoes_everything_through_more_signals():
    undone = []
    with pytest.raises(Interrupted):
        with signals.Teardown() as stack:
            stack.callback(undone.append, "lab")
            stack.callback(lambda: (os.kill(os.getpid(), signal.SIGINT), wait_for_signal(),
                                    undone.append("mount")))
            os.kill(os.getpid(), signal.SIGTERM)
            wait_for_signal()
            undone.append("never")
    assert undone == ["mount", "lab"]


def test_a_worker_thread_stops_its_tool_when_the_run_is_interrupted(tmp_path):
    seen: list[BaseException] = []
    pids: list[int] = []  # the tool this test started, told by run_tool itself (not found by name)

    def work() -> None:
        try:
            proc.run_tool(["sleep", "60"], deadline=120, output=tmp_path / "out.txt",
                          started=lambda pid: (pids.append(pid), lambda: None)[1])
        except BaseException as exc:
            seen.append(exc)

    worker = threading.Thread(target=work)
    worker.start()
    deadline = time.monotonic() + 30
    while not pids and time.monotonic() < deadline:
        time.sleep(0.05)
    sleeper = proc.ProcessId.of(pids[0])
    assert sleeper is not None and proc.cmdline(pids[0]) == ["sleep", "60"]
    started = time.monotonic()
    signals.cancelled.set()
    worker.join(30)
    # (it stops at its next poll, within half a second; the bound leaves room for a busy host)
    assert not worker.is_alive() and time.monotonic() - started < 10
    assert isinstance(seen[0], Interrupted)
    assert not sleeper.alive()


def test_a_worker_in_its_own_shielded_block_runs_on():
    signals.cancelled.set()
    ran = []

    def work() -> None:
        with signals.shielded():
            signals.check()
            ran.append("cleanup")
        try:
            signals.check()
        except Interrupted:
            ran.append("stopped")

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(5)
    assert ran == ["cleanup", "stopped"]
    signals.check()  # the main thread meets signals itself, never here


def test_an_undo_that_fails_while_an_interrupt_unwinds_is_that_interrupt():
    """Ctrl-C while a GlusterFS volume was starting: the attachment's undo failed ('another
    transaction is in progress'), and its error took the interrupt's place, so the run went on
    to the next backend and ended 1, not 130. The runner finds the interrupt behind it."""
    from harness.errors import DfsbenchError
    from harness.execution.runner import unwinding

    def attach() -> None:
        try:
            raise signals.Interrupted(signal.SIGINT)
        except BaseException:
            raise DfsbenchError("volume v: could not be removed (another transaction is in progress)")

    with pytest.raises(DfsbenchError) as got:
        attach()
    interrupt = unwinding(got.value)
    assert isinstance(interrupt, signals.Interrupted) and interrupt.exit_code == 128 + signal.SIGINT

    def failed() -> None:  # (an attachment that failed of itself: no interrupt behind it)
        try:
            raise ValueError("mkfs said no")
        except ValueError:
            raise DfsbenchError("attach failed")

    with pytest.raises(DfsbenchError) as got:
        failed()
    assert unwinding(got.value) is None


def test_a_second_signal_while_the_first_unwinds_is_put_off_until_the_teardown_ran(capsys):
    """Two Ctrl-Cs close together: a second that reaches the main thread in the 'except'
    that is to start the undo, before its shielded block, is put off too; raised there, it
    would skip the undo (the local lab's bring-up: the wait for its threads, which may still
    be starting daemons)."""
    undone = []
    with pytest.raises(Interrupted) as caught:
        try:
            os.kill(os.getpid(), signal.SIGINT)
            wait_for_signal()
        except Interrupted:
            os.kill(os.getpid(), signal.SIGINT)  # (on the way to the teardown)
            wait_for_signal()
            with signals.shielded():
                undone.append("lab")
            raise
    assert undone == ["lab"]
    assert caught.value.exit_code == 130
    assert "SIGINT received; still undoing" in capsys.readouterr().err



def test_a_pool_of_threads_ends_its_block_once_its_threads_ended_even_through_ctrl_c():
    """A Ctrl-C while the main thread waits at the end of a pool's block (the docker lab's
    bring-up: its nodes' containers starting) left the threads running, and the undo of the
    partial lab ran beside them: 'volume is in use', and the containers they recorded after
    it left in the ledger."""
    from harness.system.parallel import Threads

    ended = []

    def part() -> None:
        time.sleep(1.0)  # (a container starting: no check on the way)
        ended.append("part")

    main = threading.main_thread().ident
    assert main is not None
    with pytest.raises(Interrupted):
        with Threads(max_workers=1) as pool:
            pool.submit(part)
            threading.Timer(0.2, signal.pthread_kill, (main, signal.SIGINT)).start()
    assert ended == ["part"]


def test_a_thread_that_ends_on_an_interrupt_of_the_run_ends_without_a_word(monkeypatch):
    """Only the main thread says the run was interrupted: the container lab's stats thread,
    which met the interrupt at its next command, printed its traceback before that."""
    printed: list[type[BaseException] | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: printed.append(args.exc_type))
    signals.install()
    signals.cancelled.set()
    for work in (signals.check, lambda: 1 / 0):
        worker = threading.Thread(target=work)
        worker.start()
        worker.join(10)
    assert printed == [ZeroDivisionError]  # (any other exception is shown as before)
