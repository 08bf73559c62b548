"""The fio workload with the real fio on a local directory: plain, client/server with
servers dfsbench starts on loopback addresses, and a raw device it may not write to."""

from __future__ import annotations

import shutil

import pytest

from pathlib import Path

from harness.api.target import BlockAccess, Target
from harness.errors import BadInput, DfsbenchError
from workloads.fio import Fio
from workloads.fio.profiles import FioOptions

DATA = Path(__file__).parent.parent / "data" / "tools"

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
    assert set(hosts) == {"127.0.9.1", "127.0.9.2", "total"}
    # (both servers behind this host's one link: fio's total stands for one client's path)
    assert {m.params["clients"] for m in records if m.params.get("host") == "total"} == {1}
    assert hosts["total"] == pytest.approx(hosts["127.0.9.1"] + hosts["127.0.9.2"], rel=0.05)
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


def test_a_run_with_status_intervals_gives_the_final_figures_and_its_progress():
    """fio 3.33 with --status-interval=1 (a 3 s time-based write): one JSON document per
    second and the final one; the records are the final one's, and the timing says when
    the I/O ran (the final timestamp less the job's runtime) and what it had moved when."""
    from workloads.fio.json_output import parse, timed

    text = (DATA / "fio-status-interval.json").read_text()
    write = next(m for m in parse(text) if m.metric == "throughput")
    assert write.value == 13386529480.0  # (the final document's bw_bytes, not the first one's)
    started, ended, moved, ops, progress = timed(text)["write"]
    assert (ended, moved, ops) == (1795547621.393, 40226521088.0, 38363.0)
    assert started == pytest.approx(1795547621.393 - 3.004)
    assert [p[1] for p in progress] == [0.0, 11420041216.0, 25231884288.0, 39201013760.0, 40226521088.0]
    assert all(a[0] < b[0] for a, b in zip(progress, progress[1:]))


def test_all_clients_on_one_block_device_is_refused(tmp_path):
    fio = Fio(FioOptions(size="4MiB", runtime_s=1, profiles=PROFILE, all_clients=True))
    two = Target("block", None, "rbd", "default", access=BlockAccess(Path("/dev/null")))
    with pytest.raises(DfsbenchError, match="all_clients on rbd/default: fio would run on every client node at "
                                            "once, .* a 'block' target is one image"):
        list(fio.run(two, fio.cells()[0], tmp_path, tmp_path))


def test_a_config_value_is_one_line_of_the_job_file():
    from workloads.fio.profiles import job_value

    with pytest.raises(BadInput, match="control character"):
        job_value("/mnt/x\nexec_prerun=touch /tmp/owned", path=True)
    assert job_value("/mnt/a:b", path=True) == "/mnt/a\\:b" and job_value("pool:x") == "pool:x"
    fio = Fio(FioOptions(size="4MiB", runtime_s=1, profiles=PROFILE))
    hostile = Target("path", Path("/mnt/x\nexec_prerun=touch /tmp/owned"), "localdir", "default")
    with pytest.raises(BadInput, match="control character"):
        fio.job_text(fio.profiles()[0], hostile, "t")


def test_a_fio_server_that_never_answers_makes_the_cell_incomplete(tmp_path):
    """fio reaches one server and not the other: it says so only on stderr, exits 0 and
    prints no total. The cell must not pass for a run over both."""
    import subprocess
    import time

    from harness.system import proc

    port = proc.free_port("127.0.9.31")
    server = subprocess.Popen(["fio", f"--server=ip:127.0.9.31,{port}"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        from harness.system.hosts import LOCAL

        for _ in range(100):  # until it listens
            if LOCAL.listening("127.0.9.31", port):
                break
            time.sleep(0.05)
        silent = proc.free_port("127.0.9.32")
        records, _, _ = run(tmp_path, servers=[f"127.0.9.31,{port}", f"127.0.9.32,{silent}"])
    finally:
        server.kill()
        server.wait()
    answered = {m.params.get("host") for m in records if m.value is not None}
    assert answered == {"127.0.9.31"}
    total = [m for m in records if m.params.get("host") == "total"]
    assert total and all(m.value is None or "incomplete" in m.flags for m in total), total
    assert all(m.params["failed_clients"] == 1 for m in total)


@pytest.mark.parametrize("line", [
    "includeX/tmp/other.fio",  # (fio takes any line starting 'include' as an include)
    "description=" + "x" * 8191 + "exec_prerun=touch /tmp/owned",  # (fio reads 8 KiB pieces)
    "filename=/dev/sda", "filename=/srv/a:/dev/sdb", "directory=/proc/sys",
    "write_bw_log=/etc/cron.d/x", "write_iolog=/tmp/x", "exec_postrun =touch /tmp/owned",
])
def test_a_job_file_that_could_run_or_write_anything_is_refused(tmp_path, line):
    job = tmp_path / "j.fio"
    job.write_text(f"[global]\nrw=read\n[j]\n{line}\n")
    with pytest.raises(Exception, match="job file"):
        FioOptions(size="4MiB", runtime_s=1, job_file=job)


def test_a_job_file_changed_after_the_check_is_checked_again_and_run_as_checked(tmp_path):
    job = tmp_path / "j.fio"
    job.write_text("[j]\nrw=write\nbs=4k\nsize=1m\nioengine=psync\n")
    fio = Fio(FioOptions(size="4MiB", runtime_s=1, job_file=job))
    job.write_text("[j]\nrw=write\nexec_prerun=touch " + str(tmp_path / "owned") + "\n")
    work, raw = tmp_path / "target", tmp_path / "raw"
    work.mkdir()
    raw.mkdir()
    with pytest.raises(BadInput, match="exec_prerun"):
        list(fio.run(Target("path", work, "localdir", "default"), fio.cells()[0], tmp_path, raw))
    assert not (tmp_path / "owned").exists()
