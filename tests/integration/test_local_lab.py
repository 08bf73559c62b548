"""Against the real local lab: Ceph and GlusterFS daemons, FUSE mounts. Needs root."""

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from harness import proc
from harness.ledger import Ledger, mount_points

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="the local lab needs root (FUSE mounts, drop_caches)"),
]


def dfsbench(*args: str, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=timeout)


def lab_processes(lab: Path) -> list[proc.ProcessId]:
    ledger = Ledger.open(lab / "ledger.json")
    return [ident for _, ident, _ in ledger.live_processes()]


def assert_nothing_left(lab: Path, pids: list[proc.ProcessId]) -> None:
    assert not [p for p in pids if p.alive()], "lab processes still running"
    assert not [m for m in mount_points() if m.startswith(str(lab))], "mounts left behind"
    assert not lab.exists(), "lab directory left behind"


@pytest.fixture
def lab_env(tmp_path):
    lab = tmp_path / "lab"
    env = {"DFSBENCH_LAB_DIR": str(lab), "DFSBENCH_RESULTS": str(tmp_path / "results")}
    yield lab, env
    if (lab / "ledger.json").exists():  # a failed test must not leave a lab for the next one
        Ledger.open(lab / "ledger.json").undo()


def test_lab_up_status_down_leaves_nothing(lab_env):
    lab, env = lab_env
    up = dfsbench("lab", "up", env=env)
    assert up.returncode == 0, up.stderr
    pids = lab_processes(lab)
    assert len(pids) >= 13  # mon, mgr, mds, 3 OSDs, glusterd, 3 bricks, self-heal, 2 FUSE clients

    status = dfsbench("lab", "status", env=env)
    assert status.returncode == 0, status.stdout + status.stderr
    assert "ceph: healthy — HEALTH_OK" in status.stdout
    assert "gluster: healthy — 3 of 3 bricks online" in status.stdout
    assert "fuse.ceph-fuse (verified in /proc/mounts)" in status.stdout
    assert "fuse.glusterfs (verified in /proc/mounts)" in status.stdout

    # a second 'lab up' refuses instead of starting another cluster over this one
    again = dfsbench("lab", "up", env=env)
    assert again.returncode == 1 and "already set up" in again.stderr

    # a client that dies is reported, not hidden
    ledger = Ledger.open(lab / "ledger.json")
    client = next(ident for name, ident, _ in ledger.live_processes() if name.startswith("glusterfs "))
    proc.stop([(client, 5)])
    broken = dfsbench("lab", "status", env=env)
    assert broken.returncode == 1
    assert "NOT RUNNING" in broken.stdout

    down = dfsbench("lab", "down", env=env)
    assert down.returncode == 0, down.stderr
    assert_nothing_left(lab, pids)


def test_run_compares_glusterfs_and_cephfs(lab_env, tmp_path):
    lab, env = lab_env
    config = tmp_path / "small.yaml"
    config.write_text(
        "backends: [glusterfs, cephfs, localdir]\n"
        "workloads:\n"
        "  - name: smallfile\n"
        "    options: {files: [64], file_size: 8KiB, threads: 2}\n"
        "  - name: largefile\n"
        "    options: {sizes: [8MiB]}\n")
    run = dfsbench("run", str(config), env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "Small files" in out and "Large files" in out
    assert "GlusterFS vs CephFS" in out
    assert "fuse.ceph-fuse" in out and "fuse.glusterfs" in out
    run_id = out.strip().splitlines()[-1].removeprefix("run id: ")

    db = sqlite3.connect(tmp_path / "results" / "dfsbench.sqlite")
    rows = db.execute("SELECT backend, workload, test, metric, value, params FROM measurements"
                      " WHERE run_id=?", (run_id,)).fetchall()
    by_backend = {b for b, *_ in rows}
    assert by_backend == {"glusterfs", "cephfs", "localdir"}
    assert all(v is not None and v > 0 for *_, v, _ in rows)
    reads = [json.loads(p) for b, w, t, m, v, p in rows if b == "cephfs" and t == "read"]
    assert reads and all("remount" in p["cache"] and "drop_caches" in p["cache"] for p in reads)
    # six smallfile metrics per op (throughput absent for ls-l) and four largefile ones per backend
    assert len([r for r in rows if r[0] == "cephfs"]) == 5 + 4 + 5 + 4
    assert_nothing_left(lab, [])

    table = dfsbench("compare", "latest", "--format", "markdown", env=env)
    assert table.returncode == 0 and "| write |" in table.stdout
