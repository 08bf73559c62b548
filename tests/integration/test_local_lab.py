"""Against the real local lab: Ceph and GlusterFS daemons, FUSE mounts. Needs root."""

import json
import os
import sqlite3

import pytest

from harness.system import proc
from harness.system.ledger import Ledger
from tests.helpers import dfsbench
from tests.integration.lab import assert_nothing_left, lab_processes

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="the local lab needs root (FUSE mounts, drop_caches)"),
]


@pytest.fixture
def lab_env(tmp_path):
    lab = tmp_path / "lab"
    env = {"DFSBENCH_LOCAL_LAB_DIR": str(lab), "DFSBENCH_RESULTS": str(tmp_path / "results")}
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
    assert_nothing_left(lab, None)

    table = dfsbench("compare", "latest", "--format", "markdown", env=env)
    assert table.returncode == 0 and "| write |" in table.stdout


FAULTS = """\
backends: [glusterfs, cephfs, seaweedfs]
workloads:
  - name: fio
    options: {size: 16MiB, runtime_s: 6, profiles: [{name: rw, rw: randwrite, bs: 4k, iodepth: 4}]}
    fault: {action: kill, after_s: 1, restore_after_s: 4, recovery_timeout_s: 120}
"""


@pytest.mark.takes(120)
def test_the_local_lab_kills_a_data_process_of_each_system_and_brings_it_back(lab_env, tmp_path):
    """A fault without Docker: the second OSD, brick and volume server killed under fio and
    started again, each system noticing it and becoming healthy again, on the records' clock."""
    lab, env = lab_env
    config = tmp_path / "faults.yaml"
    config.write_text(FAULTS)
    run = dfsbench("run", str(config), env=env, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    records = json.loads(dfsbench("compare", "latest", "--format", "json", env=env).stdout)["records"]
    faults = {r["backend"]: r for r in records if r["workload"] == "fault"}
    for backend, node in (("glusterfs", "brick2"), ("cephfs", "osd.1"), ("seaweedfs", "volume2")):
        fault, params = faults[backend], faults[backend]["params"]
        assert params["fault"].startswith(f"{node} killed at ") and not fault["flags"], fault
        # (the kill is after_s into the work, late by the time its process is looked up: a brick's, asked of glusterd)
        assert 1.0 <= params["injected"] - params["measured_from"] < 3, params
        assert params["noticed_after_s"] is not None and 0 <= params["noticed_after_s"] < 3, params
        # the four moments in their order, on one clock: held from after_s to restore_after_s (the
        # restore returns once the node's process runs), healthy again a time after (the record's value)
        injected, noticed, restored, healthy = (params[k] for k in ("injected", "noticed", "restored", "healthy"))
        assert injected < noticed < restored <= healthy, params
        assert 2.5 <= restored - injected < 3 + 60, params  # (3 s asked, and what the restart took)
        assert fault["value"] == pytest.approx(healthy - restored), params
        phases = {r["params"].get("phase") for r in records if r["backend"] == backend and r["workload"] == "fio"}
        assert phases == {"before", "during", "after"}
    assert_nothing_left(lab, None, unledgered=True, within_s=10)


SUITE = """\
backends:
  - glusterfs
  - name: glusterfs
    variant: disperse
    options: {layout: disperse}
  - cephfs
  - name: cephfs
    variant: r2
    options: {replicas: 2}
  # (images of 256 MiB: rbd bench fills all of an image before it reads, and mkfs writes
  # all of its tables and journal at once)
  - name: rbd
    options: {image_size: 256MiB}
  - name: rbd
    variant: fs
    options: {access: filesystem, image_size: 256MiB}
  - rados
  - name: blockdev
    options: {allow_destructive: true, loop_size: 256MiB}
workloads:
  - name: iozone
    options: {file_sizes: [4MiB], record_sizes: [64KiB], modes: [cached, direct]}
  - name: fio
    options: {size: 16MiB, runtime_s: 1, profiles: [{name: rr, rw: randread, bs: 4k, iodepth: 4},
                                                    {name: sw, rw: write, bs: 1m, iodepth: 2}]}
  - name: rados-bench
    options: {seconds: 1}
  - name: rbd-bench
    options: {io_total: 8MiB, io_sizes: [64KiB], io_patterns: [rand]}
  - name: rawdisk
    options: {size: 16MiB}
  - name: iperf3
    options: {seconds: 1}
  - name: ioping
    options: {count: 3, interval_s: 0.05}
"""


@pytest.mark.takes(130)
@pytest.mark.thorough
def test_full_suite_on_every_backend(lab_env, tmp_path):
    lab, env = lab_env
    config = tmp_path / "suite.yaml"
    config.write_text(SUITE)
    run = dfsbench("run", str(config), env=env, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    run_id = run.stdout.strip().splitlines()[-1].removeprefix("run id: ")
    db = sqlite3.connect(tmp_path / "results" / "dfsbench.sqlite")
    rows = db.execute("SELECT backend, variant, workload, test, metric, value, params FROM measurements"
                      " WHERE run_id=?", (run_id,)).fetchall()
    assert all(v is not None for *_, v, _ in rows)
    ran = {(b, var, w) for b, var, w, *_ in rows}
    path_backends = [("glusterfs", "default"), ("glusterfs", "disperse"), ("cephfs", "default"),
                     ("cephfs", "r2"), ("rbd", "fs")]
    for b, var in path_backends:
        for w in ("iozone", "fio", "ioping", "rawdisk", "iperf3"):
            assert (b, var, w) in ran, (b, var, w)
    assert {("rbd", "default", "fio"), ("rbd", "default", "rbd-bench"), ("rados", "default", "rados-bench"),
            ("blockdev", "default", "fio"), ("blockdev", "default", "ioping")} <= ran
    engines = {json.loads(p)["ioengine"] for b, var, w, *_, p in rows if (b, var, w) == ("rbd", "default", "fio")}
    assert engines == {"rbd"}
    directs = {json.loads(p)["direct"] for b, var, w, *_, p in rows if w == "iozone"}
    assert directs == {True, False}
    # the variants are what they claim: a disperse volume and a size-2 pool
    targets = dict(((b, v), json.loads(d)) for b, v, d in db.execute(
        "SELECT backend, variant, description FROM targets WHERE run_id=?", (run_id,)))
    assert targets[("glusterfs", "disperse")]["volume_type"] == "disperse"
    assert targets[("cephfs", "r2")]["replicas"] == 2
    assert targets[("rbd", "fs")]["fs_type"] == "ext4"
    for title in ("iozone on GlusterFS/disperse, O_DIRECT (-I), KB/s", "fio profiles", "rados bench",
                  "rbd bench", "Baseline: the raw storage", "Baseline: the network", "Baseline: request latency"):
        assert title in run.stdout, title
    assert_nothing_left(lab, None, loop_devices=True)
