import subprocess
import sys

import pytest

from harness.errors import DfsbenchError
from harness.system import proc
from harness.system.ledger import Ledger


def test_undo_stops_only_recorded_processes_and_removes_files(tmp_path):
    ledger = Ledger(tmp_path / "ledger.json")
    work = tmp_path / "work"
    work.mkdir()
    ledger.tree(work)
    mine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        ledger.process(mine.pid, "sleeper")
        assert Ledger.open(ledger.path).entries[-1]["pid"] == mine.pid  # persisted at once
        assert ledger.undo() == []
        assert mine.wait(timeout=5) is not None
        assert other.poll() is None  # not ours to stop
        assert not work.exists()
        assert not ledger.path.exists()
    finally:
        other.kill()
        other.wait()


def test_undo_only_a_subset(tmp_path):
    ledger = Ledger(tmp_path / "ledger.json")
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    ledger.tree(a)
    before = ledger.ids()
    ledger.tree(b)
    assert ledger.undo(only=ledger.ids() - before) == []
    assert a.exists() and not b.exists()
    assert [e["path"] for e in Ledger.open(ledger.path).entries] == [str(a)]


def test_a_recycled_pid_is_not_killed():
    me = proc.ProcessId.of(subprocess.os.getpid())
    impostor = proc.ProcessId(me.pid, me.start_ticks + 1)
    assert me.alive() and not impostor.alive()
    assert proc.stop([(impostor, 0.1)]) == []


def test_cluster_resources_are_undone_while_their_daemons_still_run(tmp_path):
    """A pool or volume is removed by a command the daemon must answer: command entries
    run after mounts and before processes, newest first, and a failed one is reported and
    kept for a later 'lab down'."""
    daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    ledger = Ledger(tmp_path / "ledger.json")
    ledger.process(daemon.pid, "daemon")
    order = tmp_path / "order"
    check = ("import os, sys; alive = os.path.exists(f'/proc/{sys.argv[1]}'); "
             "open(sys.argv[2], 'a').write(sys.argv[3] + (' alive' if alive else ' dead') + chr(10))")
    for what in ("pool", "image"):
        ledger.command([sys.executable, "-c", check, str(daemon.pid), str(order), what], what)
    ledger.command([sys.executable, "-c", "raise SystemExit('no such volume')"], "volume v1")
    reopened = Ledger.open(tmp_path / "ledger.json")  # as 'lab down' after a crash sees it
    problems = reopened.undo()
    daemon.wait(timeout=10)
    assert order.read_text().splitlines() == ["image alive", "pool alive"]
    assert problems == ["volume v1: could not be removed (no such volume)"]
    assert [e["kind"] for e in Ledger.open(tmp_path / "ledger.json").entries] == ["command"]


def test_capture_takes_only_what_its_own_thread_added(tmp_path):
    import threading

    ledger = Ledger(tmp_path / "ledger.json")
    started = threading.Barrier(2)
    captured: dict[str, frozenset[str]] = {}

    def client(name: str) -> None:
        with ledger.capture() as outer:
            started.wait()
            for i in range(20):
                with ledger.capture():  # nested, and empty or equal to another at times
                    ledger.command(["true"], f"{name} {i}")
            captured[name] = frozenset(outer)

    threads = [threading.Thread(target=client, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    whats = {e["id"]: e["what"] for e in ledger.entries}
    for name in ("a", "b"):
        assert len(captured[name]) == 20
        assert all(whats[i].startswith(name) for i in captured[name])


def test_a_process_that_exits_while_its_proc_files_are_read_is_gone(monkeypatch):
    """Reading /proc/PID of a process in the middle of exiting fails with ESRCH, not ENOENT
    ('lab down' after a kill -9 once failed with 'No such process' there)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        ident = proc.ProcessId.of(child.pid)
        assert ident is not None and ident.alive()
        real_text, real_bytes = proc.Path.read_text, proc.Path.read_bytes
        read = []

        def exiting(real):  # its first read of /proc/PID/stat answers; the process is gone after
            def reading(self, *args, **kwargs):
                if str(self).startswith(f"/proc/{child.pid}/"):
                    read.append(self.name)
                    if read != ["stat"]:
                        raise ProcessLookupError(3, "No such process")
                return real(self, *args, **kwargs)
            return reading

        monkeypatch.setattr(proc.Path, "read_text", exiting(real_text))
        monkeypatch.setattr(proc.Path, "read_bytes", exiting(real_bytes))
        assert not ident.alive()
        assert proc.cmdline(child.pid) == []
    finally:
        child.kill()
        child.wait()


def test_a_ledger_another_process_removed_is_not_written_again(tmp_path):
    """'lab down --force' under a run removes the lab and its ledger: what that run still
    writes of its ledger (its own files undone at its end) does not bring the lab's ledger
    back, the lab's directory with it."""
    lab = tmp_path / "lab"
    first = Ledger(lab / "ledger.json")
    first.tree(lab)  # (a lab: its directory goes whole)
    first.data["services"] = {"x": {}}
    first.save()
    run = Ledger.open(first.path)  # (the run's copy, read while the lab was up)
    mine = tmp_path / "run-files"
    mine.mkdir()
    before = run.ids()
    run.tree(mine)
    assert Ledger.open(first.path).ids() == run.ids()  # (while the lab is there, written at once)
    down = Ledger.open(first.path)
    assert down.undo() == [] and not first.path.exists()  # (the other process takes the lab down)
    assert run.undo(only=run.ids() - before) == []
    assert not mine.exists() and not first.path.exists() and not lab.exists()
    run.command(["true"], "later")
    assert not first.path.exists()


def test_a_whole_undo_that_left_something_keeps_it_for_the_next(tmp_path):
    lab = tmp_path / "lab"
    ledger = Ledger(lab / "ledger.json")
    ledger.tree(lab)  # (the lab's directory, removed in the undo: the ledger with it)
    ledger.command([sys.executable, "-c", "raise SystemExit('still busy')"], "volume v1")
    problems = ledger.undo()
    assert problems == ["volume v1: could not be removed (still busy)"]
    assert [e["what"] for e in Ledger.open(ledger.path).entries] == ["volume v1"]


def test_a_removal_that_fails_because_its_resource_is_gone_already_is_done(tmp_path):
    """A command's resource removed some other way (a container lab's network swept by its
    label): its removal fails, and where the entry says how to tell it is there and it is
    not, the undo is done; where it is still there, or nothing says how to tell, the
    failure is a problem kept for the next undo."""
    ledger = Ledger(tmp_path / "ledger.json")
    marker = tmp_path / "there"
    ledger.command(["false"], "gone already", exists=["test", "-e", str(tmp_path / "absent")])
    marker.write_text("x")
    ledger.command(["false"], "still there", exists=["test", "-e", str(marker)])
    ledger.command(["false"], "no probe")
    problems = ledger.undo()
    assert [p.split(":")[0] for p in problems] == ["no probe", "still there"], problems
    assert sorted(e["what"] for e in Ledger.open(tmp_path / "ledger.json").entries) == ["no probe", "still there"]


@pytest.mark.parametrize("text, why", [
    ('{"entries": [], "data": []}', "its data is not an object"),
    ('{"entries": {}}', "its entries are not a list"),
    ('{"entries": [1]}', "one of its entries is not an object"),
    ("[]", "it holds a JSON list, not an object"),
    ("[" * 100_000 + "]" * 100_000, "it is not JSON (RecursionError)"),
    ('{"entries": [', "it is not JSON (JSONDecodeError)"),
    (b"\xff\xfe", "it is not JSON (UnicodeDecodeError)"),
], ids=["data-a-list", "entries-an-object", "an-entry-a-number", "a-list", "nested-100000-deep", "cut-short",
        "not-utf8"])
def test_a_ledger_that_is_not_one_is_refused_naming_its_file_and_what_to_do(tmp_path, text, why):
    lab = tmp_path / "lab\x1b[2J"
    lab.mkdir()
    path = lab / "ledger.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    with pytest.raises(DfsbenchError) as refused:
        Ledger.open(path)
    said = str(refused.value)
    assert refused.value.message == f"the lab ledger {tmp_path}/lab\\x1b[2J/ledger.json cannot be read: {why}"
    assert "\x1b" not in said and "by hand" in said and f"remove {tmp_path}/lab\\x1b[2J" in said


def test_a_ledger_is_not_written_over_another_labs_made_in_its_place(tmp_path):
    """A run's copy of its lab's ledger, after 'lab down --force' took that lab down and a
    new lab was made in the same place: what the run still writes (an entry, the rest of an
    undo it could not finish, the end of a whole undo) leaves the new lab's ledger alone."""
    path = tmp_path / "lab" / "ledger.json"
    old = Ledger(path, data={"lab": "a" * 32})
    old.command(["true"], "of the old lab")
    run = Ledger.open(path)  # (the run's copy, read while the old lab was up)
    assert Ledger.open(path).undo() == [] and not path.exists()  # (lab down --force)
    new = Ledger(path, data={"lab": "b" * 32})
    new.command(["true"], "of the new lab")
    kept = path.read_text()
    run.command(["true"], "later")
    assert path.read_text() == kept
    run.entries.append({"id": "x", "kind": "command", "argv": ["false"], "what": "stuck"})
    assert run.undo() != [] and path.read_text() == kept  # (revive: not over another lab's)
    run.entries.clear()
    run.undo()
    assert path.read_text() == kept  # (nothing left: the new lab's ledger is not removed either)
