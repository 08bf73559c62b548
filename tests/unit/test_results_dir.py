"""--results that is a file, read-only or full: a clear message, exit 2, nothing lost.
Read-only and full media are real tmpfs mounts (root)."""

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from harness.api.records import Measurement
from harness.errors import StoreUnwritable
from harness.results.store import Store
from harness.results.writer import MIN_FREE
from tests.helpers import dfsbench

FIO = Path(__file__).parent.parent / "data" / "tools" / "fio-json.json"
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs")


@pytest.fixture
def tmpfs(tmp_path):
    made = []

    def mount(name: str, size: str, options: str = "") -> Path:
        where = tmp_path / name
        where.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}{options}", "tmpfs", str(where)], check=True)
        made.append(where)
        return where

    yield mount
    for where in made:  # (lazily if a test left a file open there)
        if subprocess.run(["umount", str(where)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(where)], check=False)


def imported(results: Path) -> str:
    done = dfsbench("import", "fio", str(FIO), "--backend", "cephfs", "--results", str(results), timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1].removeprefix("run id: ")


def test_results_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    got = dfsbench("import", "fio", str(FIO), "--backend", "cephfs", "--results", str(tmp_path / "file"),
                   timeout=120)
    assert got.returncode == 2 and "is a file, not a directory" in got.stderr
    assert (tmp_path / "file").read_text() == "x"


@root_only
def test_read_only_results_refuse_writing_and_still_read(tmpfs):
    results = tmpfs("ro", "64m")
    run_id = imported(results)
    # a writer that died: its last record is only in the WAL it left behind
    crash = ("import os, sys; from harness.results.store import Store; from harness.api.records import Measurement; "
             "s = Store(__import__('pathlib').Path(sys.argv[1])); s.db.execute('PRAGMA wal_autocheckpoint=0'); "
             "s.add(Measurement('fio', 'crashed', 'iops', 4242.0, 'op/s', {}, 'cephfs', 'default', sys.argv[2])); "
             "os._exit(0)")
    subprocess.run([sys.executable, "-c", crash, str(results), run_id], check=True)
    assert (results / "dfsbench.sqlite-wal").exists()
    subprocess.run(["mount", "-o", "remount,ro", str(results)], check=True)
    got = dfsbench("import", "fio", str(FIO), "--backend", "cephfs", "--results", str(results), timeout=120)
    assert got.returncode == 2 and "is read-only" in got.stderr, got.stderr
    assert "Traceback" not in got.stderr
    # reading writes nothing
    shown = dfsbench("compare", run_id, "--results", str(results), "--format", "json", timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "4242.0" in shown.stdout  # what the WAL held is read too


@root_only
def test_a_full_store_stops_with_what_it_stored_intact(tmpfs):
    results = tmpfs("full", "24m")
    run_id = imported(results)
    store = Store(results)  # a run's store, open when the disk fills
    ballast = results / "ballast"
    with open(ballast, "wb") as f:  # fill the disk to the last block
        try:
            while True:
                f.write(b"\0" * (1 << 20))
                f.flush()
        except OSError:
            pass
    got = dfsbench("run", "--results", str(results), "--backends", "localdir", "--workloads", "fio",
                   timeout=120)
    assert got.returncode == 2, got.stderr
    assert "free; a run needs at least" in got.stderr and "Traceback" not in got.stderr
    # a write that finds the disk full mid-run: the run stops, the store keeps every record
    m = Measurement("fio", "read", "iops", 1.0, "op/s", {"n": "x" * 200_000}, "cephfs", "default", run_id)
    with pytest.raises(StoreUnwritable, match="cannot take more"):
        for _ in range(200):
            store.add(m)
    store.close()
    ballast.unlink()
    db = sqlite3.connect(results / "dfsbench.sqlite")
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    db.close()
    shown = dfsbench("compare", run_id, "--results", str(results), timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert MIN_FREE > 0
