"""Attachments against a real lab: what one attachment creates or fills lives and dies
with it. A repeat attaches a new image or loop device and fills it again before reading;
an attach that fails after it created a pool, a volume or a mount undoes all of it."""

import errno
import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from backends.ceph.cephfs import CephFS, CephFSOptions
from backends.gluster.glusterfs import GlusterFS, GlusterOptions
from environments.local import LocalEnvironment, LocalOptions
from harness.errors import DfsbenchError
from harness.system.ledger import Ledger, mount_points
from tests.helpers import dfsbench
from tests.integration.lab import assert_nothing_left, lab_processes

pytestmark = [
    pytest.mark.lab,
    pytest.mark.xdist_group("attachments"),  # (one worker: the module's tests share its lab)
    pytest.mark.skipif(os.geteuid() != 0, reason="the local lab needs root (FUSE mounts, loop devices)"),
]

REPEATS = """\
repeat: 2
backends:
  - {name: rbd, options: {image_size: 64MiB}}  # (rbd bench fills all of it before reading)
  - {name: rbd, variant: fs, options: {access: filesystem, image_size: 256MiB}}
  - {name: blockdev, options: {allow_destructive: true, loop_size: 64MiB}}
workloads:
  - name: fio
    options: {size: 16MiB, runtime_s: 1, profiles: [{name: rr, rw: randread, bs: 4k, iodepth: 4}]}
  - name: rbd-bench
    options: {io_total: 8MiB, io_sizes: [64KiB], io_types: [read], io_patterns: [rand]}
"""


@pytest.fixture(scope="module")
def shared_lab(tmp_path_factory):
    """One lab for the module: each test attaches, fails and detaches on it, and the lab
    comes down whole at the end however the tests went."""
    root = tmp_path_factory.mktemp("attachments")
    lab = root / "lab"
    env = {"DFSBENCH_LOCAL_LAB_DIR": str(lab), "DFSBENCH_RESULTS": str(root / "results")}
    up = dfsbench("lab", "up", env=env)
    assert up.returncode == 0, up.stdout + up.stderr
    pids = lab_processes(lab)
    yield lab, env
    if (lab / "ledger.json").exists():
        pids += lab_processes(lab)  # (and what the tests started in it)
        down = dfsbench("lab", "down", env=env)
        if (lab / "ledger.json").exists():
            Ledger.open(lab / "ledger.json").undo()
        assert down.returncode == 0, down.stderr
    assert_nothing_left(lab, pids)


@pytest.fixture
def lab(shared_lab, tmp_path):
    """The module's lab, with this test's own results directory."""
    lab, env = shared_lab
    return lab, {**env, "DFSBENCH_RESULTS": str(tmp_path / "results")}


def _rbdname(job: Path) -> str:
    return next(line.split("=", 1)[1] for line in job.read_text().splitlines() if line.startswith("rbdname="))


@pytest.mark.thorough
def test_each_repeat_fills_its_new_image_before_reading(lab, tmp_path):
    lab_dir, env = lab
    config = tmp_path / "repeats.yaml"
    config.write_text(REPEATS)
    with LocalEnvironment(LocalOptions(lab_dir=lab_dir)).up({"ceph"}) as cluster:
        pools_before = _pools(cluster.services["ceph"])
    run = dfsbench("run", str(config), env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    # every attachment's pool went with its detach, and with it its image (rbd 'fs': an image
    # rbd-fuse still watched, which 'rbd rm' would have waited 30 s for)
    with LocalEnvironment(LocalOptions(lab_dir=lab_dir)).up({"ceph"}) as cluster:
        assert _pools(cluster.services["ceph"]) == pools_before
    run_id = run.stdout.strip().splitlines()[-1].removeprefix("run id: ")
    raw = tmp_path / "results" / "raw" / run_id

    images = []
    for rep in (0, 1):
        fio = raw / f"rbd-default-r{rep}" / "fio"
        fill, read = fio / "fio-fill.fio", next(fio.glob("fio-rr*.fio"))
        assert (fio / "fio-fill.txt").exists(), f"repeat {rep + 1} read an image it never wrote"
        assert _rbdname(fill) == _rbdname(read)  # the fill wrote the image that is read
        assert (fio / "fio-fill.txt").stat().st_mtime <= next(fio.glob("fio-rr*.json")).stat().st_mtime
        images.append(_rbdname(read))
        assert (raw / f"rbd-default-r{rep}" / "rbd-bench" / "rbd-bench-fill.txt").exists()
        assert (raw / f"blockdev-default-r{rep}" / "fio" / "fio-fill.txt").exists()
    assert images[0] != images[1], "each repeat attaches a new image"

    db = sqlite3.connect(tmp_path / "results" / "dfsbench.sqlite")
    reads = db.execute("SELECT backend, variant, repeat, value FROM measurements WHERE run_id=? AND "
                       "workload='fio' AND metric='iops'", (run_id,)).fetchall()
    assert {(b, v, r) for b, v, r, _ in reads} == {(b, v, r) for b, v in
                                                   [("rbd", "default"), ("rbd", "fs"), ("blockdev", "default")]
                                                   for r in (0, 1)}
    assert all(value > 0 for *_, value in reads)
    # a targets row per repeat, each with its own image
    described = [json.loads(d) for d, in db.execute(
        "SELECT description FROM targets WHERE run_id=? AND backend='rbd' AND variant='default' "
        "ORDER BY repeat", (run_id,))]
    assert [d["image"] for d in described] == images
    # the tools' versions are kept with the run
    host = json.loads(db.execute("SELECT host FROM runs WHERE id=?", (run_id,)).fetchone()[0])
    assert host["tools"]["fio"].startswith("fio-3") and "rbd" in host["tools"]


def test_a_failed_attach_leaves_no_pool_volume_or_mount(lab, tmp_path, monkeypatch):
    lab_dir, _ = lab
    environment = LocalEnvironment(LocalOptions(lab_dir=lab_dir))
    with environment.up({"ceph", "gluster"}) as cluster:
        ceph, gluster = cluster.services["ceph"], cluster.services["gluster"]
        pools_before = _pools(ceph)
        volumes_before = _volumes(gluster)
        ledger_before = cluster.ledger.ids()

        # CephFS: the pool is created and the client mounted; then the layout fails
        def refuse(*args, **kwargs):
            raise OSError(errno.EIO, "injected: setting the layout failed")

        monkeypatch.setattr("harness.system.hosts.LocalHost.setxattr", refuse)
        with pytest.raises(OSError, match="injected"):
            CephFS(CephFSOptions(replicas=2), "r2").open(cluster, tmp_path / "cephfs-r2")
        assert _pools(ceph) == pools_before
        assert not [m for m in mount_points() if m.startswith(str(tmp_path / "cephfs-r2"))]

        # GlusterFS: the volume is created, then an unknown volume option is refused
        with pytest.raises(DfsbenchError, match="no-such-option"):
            GlusterFS(GlusterOptions(layout="replicate", volume_options={"performance.no-such-option": "on"}),
                      "bad").open(cluster, tmp_path / "gluster-bad")
        assert _volumes(gluster) == volumes_before
        assert not [m for m in mount_points() if m.startswith(str(tmp_path / "gluster-bad"))]

        # nothing of either attach is left to undo (glusterd restarts its self-heal daemon
        # when a volume goes: that new process is the lab's, and recorded as such)
        left = [e for e in cluster.ledger.entries if e["id"] not in ledger_before]
        assert [e["kind"] for e in left if e["kind"] != "process"] == [], left
    # (and 'lab down' at the end of the module leaves nothing: shared_lab)


def test_a_killed_cephfs_client_is_evicted_and_its_files_go_at_once(lab, tmp_path):
    """A ceph-fuse killed with its session fresh leaves the MDS holding its caps until the
    session times out (60 s): the detach evicts it, so removing its files through a new
    client does not wait that out."""
    lab_dir, _ = lab
    with LocalEnvironment(LocalOptions(lab_dir=lab_dir)).up({"ceph"}) as cluster:
        target = CephFS(CephFSOptions(), "killed").open(cluster, tmp_path / "cephfs-killed")
        assert target.path is not None and target.detach is not None
        for i in range(50):  # caps on the directory and its files, held by this client
            (target.path / f"f{i:02d}").write_bytes(b"x" * 4096)
        mountpoint = str(target.path.parent)
        client = next(int(pid) for pid in os.listdir("/proc") if pid.isdigit() and
                      _cmdline(pid)[:1] == ["ceph-fuse"] and _cmdline(pid)[-1:] == [mountpoint])
        os.kill(client, signal.SIGKILL)
        began = time.monotonic()
        target.detach()  # (not through the dead mount: through a client started for it)
        took = time.monotonic() - began
        # the probe of the dead mount, and its files removed through a new client
        assert took < 30, f"the detach took {took:.1f} s: the MDS kept the dead client's caps"
        assert (lab_dir / "mnt" / "default" / "cephfs").is_dir()  # (the lab's own mount, by lab up)
        assert not (lab_dir / "mnt" / "default" / "cephfs" / target.path.name).exists()
        assert not [m for m in mount_points() if m.startswith(str(tmp_path / "cephfs-killed"))]


def _cmdline(pid: str) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().split("\0")[:-1]
    except OSError:
        return []


def _pools(ceph) -> list[str]:
    out = subprocess.run(["ceph", "-c", ceph.conf, "--keyring", ceph.keyring, "--id", ceph.client,
                          "osd", "pool", "ls"], capture_output=True, text=True, timeout=60, check=True)
    return sorted(out.stdout.split())


def _volumes(gluster) -> list[str]:
    out = subprocess.run(["gluster", f"--glusterd-sock={gluster.socket}", "--mode=script", "volume", "list"],
                         capture_output=True, text=True, timeout=60, check=True)
    return sorted(out.stdout.split())
