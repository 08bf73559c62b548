"""The fio workload with the real fio on a local directory: plain, client/server with
servers dfsbench starts on loopback addresses, and a raw device it may not write to."""

from __future__ import annotations

import shutil

import pytest

from harness.api.target import BlockAccess, Target
from harness.errors import BadInput
from workloads.fio import Fio, FioOptions

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")

PROFILE = [{"name": "rw-test", "rw": "randwrite", "bs": "4k", "iodepth": 2}]


def run(tmp_path, **options):
    work, raw = tmp_path / "target", tmp_path / "raw"
    work.mkdir(exist_ok=True)
    raw.mkdir(exist_ok=True)
    fio = Fio(FioOptions(size="4MiB", runtime_s=1, direct=False, ioengine="psync", profiles=PROFILE,
                         **options))
    target = Target("path", work, "localdir", "default")
    return list(fio.run(target, fio.cells()[0], tmp_path, raw)), work, raw


def test_plain_run_records_and_cleans_up(tmp_path):
    records, work, raw = run(tmp_path)
    iops = [m for m in records if m.metric == "iops"]
    assert len(iops) == 1 and iops[0].value > 0 and iops[0].params["direction"] == "write"
    assert iops[0].backend == "localdir" and "host" not in iops[0].params
    assert list(work.iterdir()) == []  # fio's file is removed
    assert (raw / "fio-rw-test.fio").read_text().count("[rw-test]") == 1


def test_client_server_with_local_servers(tmp_path):
    records, work, raw = run(tmp_path, local_servers=2)
    hosts = {m.params["host"]: m.value for m in records if m.metric == "iops"}
    assert set(hosts) == {"127.0.9.1", "127.0.9.2", "all"}
    assert hosts["all"] == pytest.approx(hosts["127.0.9.1"] + hosts["127.0.9.2"], rel=0.05)
    # each host got its own job file and file
    assert sorted(p.name for p in raw.glob("fio-rw-test-h*.fio")) == ["fio-rw-test-h0.fio", "fio-rw-test-h1.fio"]
    assert list(work.iterdir()) == []


def test_raw_device_needs_allow_destructive(tmp_path):
    fio = Fio(FioOptions(size="4MiB", runtime_s=1, profiles=PROFILE))
    target = Target("block", None, "blockdev", "default", access=BlockAccess("/dev/null", destructive_ok=False))
    with pytest.raises(BadInput, match="allow_destructive"):
        list(fio.run(target, fio.cells()[0], tmp_path, tmp_path))


def test_servers_local_servers_and_all_clients_exclude_each_other():
    with pytest.raises(ValueError, match="one of"):
        FioOptions(size="4MiB", runtime_s=1, servers=["ip:127.0.0.1"], local_servers=1)
    with pytest.raises(ValueError, match="one of"):
        FioOptions(size="4MiB", runtime_s=1, local_servers=2, all_clients=True)


def test_every_new_attachment_is_filled_before_reads(tmp_path):
    """Each repeat attaches a new image or loop device: the fill mark lives on the
    attachment, so repeat 2 reads a written device too, not holes (issue: the mark was
    kept on the workload by target key, and repeat 2 read a never-written image)."""
    fio = Fio(FioOptions(size="8MiB", runtime_s=1, direct=False, ioengine="psync",
                         profiles=[{"name": "rd", "rw": "randread", "bs": "4k"}]))
    for repeat in (1, 2):
        device = tmp_path / f"device-{repeat}"  # a new, empty "device" per attachment
        device.write_bytes(b"")
        raw = tmp_path / f"raw-{repeat}"
        raw.mkdir()
        target = Target("block", None, "blockdev", "default",
                        access=BlockAccess(str(device), destructive_ok=True))
        records = list(fio.run(target, fio.cells()[0], tmp_path, raw))
        assert (raw / "fio-fill.txt").exists(), f"repeat {repeat} read an unfilled device"
        assert device.stat().st_size == 8 << 20
        assert any(m.metric == "iops" and m.value for m in records)
        # a second cell on the same attachment does not fill again
        (raw / "fio-fill.txt").unlink()
        list(fio.run(target, fio.cells()[0], tmp_path, raw))
        assert not (raw / "fio-fill.txt").exists()
