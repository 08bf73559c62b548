import subprocess
import sys

from harness import proc
from harness.ledger import Ledger


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
