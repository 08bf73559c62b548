"""``dfsbench check`` refuses what the run would refuse before its first I/O, naming the key
(issue 43, part 2): offered rates that do not split into whole I/Os per second per job and
direction, sizes that cannot work, a backend its environment cannot attach, and deadlines
shorter than the work they bound (or a fault held past one). Each config here passed
'check' before, and was refused only in the cell, or not at all; a sound config of the same
shape still passes. The run asks the same rules of the cell's target (last tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.inproc import dfsbench

FIO = {"size": "64MiB", "runtime_s": 5}
MIX = {"name": "mix", "rw": "randrw", "bs": "4k"}
WRITE = {"name": "w", "rw": "randwrite", "bs": "4k"}


def fio(**options):
    return {"backends": ["localdir"], "workloads": [{"name": "fio", "options": {**FIO, **options}}]}


def one(name, backends=("localdir",), **options):
    return {"backends": list(backends), "workloads": [{"name": name, "options": options}]}


def in_docker(backend, workload=None):
    return {"environment": "docker", "backends": [backend],
            "workloads": [workload or {"name": "largefile", "options": {"sizes": ["64MiB"]}}]}


RBD = {"name": "rbd", "options": {"image_size": "1GiB"}}
PAUSED = {"action": "pause", "after_s": 2}


def fault(restore_after_s, deadline_s=60):
    return {"environment": "docker", "backends": ["cephfs"],
            "workloads": [{"name": "largefile", "options": {"sizes": ["64MiB"], "deadline_s": deadline_s},
                           "fault": {**PAUSED, "restore_after_s": restore_after_s}}]}


def rados_fault(restore_after_s):
    return {"environment": "docker", "backends": ["rados"],
            "workloads": [{"name": "rados-bench", "options": {"seconds": 5},
                           "fault": {"action": "kill", "after_s": 2, "restore_after_s": restore_after_s}}]}


def site(tmp_path, backend, workload=None):
    key = tmp_path / "id"
    key.write_text("k")
    return {"environment": {"kind": "existing", "options": {"clients": [{"key": str(key), "host": "10.0.0.1"}],
                                                            "ceph": {}, "allow_create": True}},
            "backends": [backend], "workloads": [workload or {"name": "largefile", "options": {"sizes": ["64MiB"]}}]}


@pytest.fixture(autouse=True)
def default_aio_max_nr(monkeypatch):
    """(This host's fs.aio-max-nr is the kernel's default here, whatever the machine's.)"""
    monkeypatch.setattr("workloads.fio.workload.aio_max_nr", lambda: 65536)


def check(tmp_path: Path, config: dict) -> tuple[int, str]:
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config))  # (JSON is YAML)
    done = dfsbench("check", str(path))
    assert "Traceback" not in done.stderr
    return done.returncode, done.stderr


# (config, the key named, what else the error says, a sound config of the same shape)
REFUSED = {
    # offered rates that cannot be split into whole I/Os per second per job and direction
    "rate on a 50/50 mix": (
        fio(profiles=[MIX], load={"iops": [101]}), "workloads[0].options.load.iops[0]",
        "101 I/Os per second cannot be split", fio(profiles=[MIX], load={"iops": [100]})),
    "rate over 4 jobs": (
        fio(profiles=[WRITE], numjobs=4, load={"iops": [8, 2]}), "workloads[0].options.load.iops[1]",
        "over its 4 job(s)", fio(profiles=[WRITE], numjobs=4, load={"iops": [8, 4]})),
    "rate over a profile's own jobs and mix": (
        fio(profiles=[{**MIX, "numjobs": 2, "rwmixread": 70}], load={"iops": [30]}),
        "workloads[0].options.load.iops[0]", "and its read/write mix",
        fio(profiles=[{**MIX, "numjobs": 2, "rwmixread": 70}], load={"iops": [20]})),
    # sizes that cannot work
    "iozone record larger than every file": (
        one("iozone", file_sizes=["64KiB", "1MiB"], record_sizes=["4KiB", "2MiB"]),
        "workloads[0].options.record_sizes[1]", "2 MiB is larger than every file (the largest is file_sizes[1], 1 MiB)",
        one("iozone", file_sizes=["64KiB", "1MiB"], record_sizes=["4KiB", "1MiB"])),  # (1 MiB: on the 1 MiB file)
    "rbd bench total larger than its image": (
        {"environment": "local", "backends": [RBD], "workloads": [{"name": "rbd-bench", "options": {
            "io_total": "4GiB"}}]}, "workloads[0].options.io_total",
        "4 GiB is more than the rbd target of backends[0]",
        {"environment": "local", "backends": [RBD], "workloads": [{"name": "rbd-bench", "options": {
            "io_total": "1GiB"}}]}),
    "fio bs larger than size": (
        fio(profiles=[{**WRITE, "bs": "8MiB"}], size="4MiB"), "workloads[0].options.profiles[0].bs",
        "fio refuses a job whose size is less than its block size", fio(profiles=[{**WRITE, "bs": "4MiB"}],
                                                                         size="4MiB")),
    "fio size under a named set's 1 MiB blocks": (
        fio(size="512KiB"), "workloads[0].options.size", "bs (1 MiB) is more than size (512 KiB)", fio(size="1MiB")),
    "iodepth past libaio's": (
        fio(profiles=[{**WRITE, "iodepth": 100000}]), "workloads[0].options.profiles[0].iodepth",
        "more than libaio takes", fio(profiles=[{**WRITE, "iodepth": 65536}])),
    "iodepth past libaio's over jobs": (
        fio(iodepth=40000, numjobs=2), "workloads[0].options.iodepth", "iodepth 40000 × numjobs 2 is 80000",
        fio(iodepth=32768, numjobs=2)),
    "iodepth past io_uring's": (
        fio(ioengine="io_uring", iodepth=32769), "workloads[0].options.iodepth", "deeper than io_uring's ring",
        fio(ioengine="io_uring", iodepth=32768)),
    "more jobs than fio runs": (
        fio(profiles=[{**WRITE, "numjobs": 4097}]), "workloads[0].options.profiles[0].numjobs",
        "4097 jobs are more than fio runs at once (4096)", fio(profiles=[{**WRITE, "numjobs": 4096}], size="1MiB")),
    "raw disk block larger than its size": (
        one("rawdisk", size="1MiB", block_size="4MiB"), "workloads[0].options.block_size",
        "4 MiB is more than size (1 MiB)", one("rawdisk", size="4MiB", block_size="4MiB")),
    "1 TiB small files": (
        one("smallfile", files=[4], file_size="1TiB"), "workloads[0].options.file_size",
        "held whole in memory by each of 4 threads", one("smallfile", files=[4], file_size="1MiB")),
    "1 PiB large file on the local lab": (
        one("largefile", sizes=["64MiB", "1PiB"]), "workloads[0].options.sizes[1]",
        "and localdir/default has", one("largefile", sizes=["64MiB"])),
    # a backend its environment cannot attach
    "a raw disk in the container lab": (
        in_docker("blockdev", {"name": "fio", "options": FIO}), "backends[0].name",
        "blockdev/default: its loop device is one this machine makes, and environment 'docker' measures targets "
        "of its own nodes only", in_docker("rbd", {"name": "fio", "options": FIO})),
    "localdir in the container lab": (
        in_docker("localdir"), "backends[0].name", "localdir/default: its directory is on this machine's disk",
        in_docker("cephfs")),
    "RBD as a file system in the container lab": (
        in_docker({"name": "rbd", "options": {"access": "filesystem"}}), "backends[0].options.access",
        "rbd/default: environment 'docker' measures from client hosts that are other machines, and access "
        "'filesystem' puts the file system on the image through rbd-fuse and a loop device, which only a client on "
        "this machine makes", in_docker({"name": "rbd", "options": {"access": "librbd"}}, {"name": "fio",
                                                                                        "options": FIO})),
    # deadlines shorter than the work they bound, a fault held past the cell's deadline
    "fio deadline shorter than its runtime": (
        fio(runtime_s=60, deadline_s=10, warmup_s=0), "workloads[0].options.deadline_s",
        "10 s is shorter than runtime_s makes the cell's timed work (60 s)", fio(runtime_s=60, deadline_s=60,
                                                                                 warmup_s=0)),
    "fio deadline shorter than its warm-up and runtime": (  # (the quick scale's warm-up: 1 s)
        fio(runtime_s=60, deadline_s=60), "workloads[0].options.deadline_s",
        "60 s is shorter than runtime_s and warmup_s make the cell's work (61 s: 1 s of untimed warm-up, then its "
        "timed work)", fio(runtime_s=60, deadline_s=61)),
    "ioping deadline shorter than its requests": (
        one("ioping", count=1000, interval_s=1), "workloads[0].options.deadline_s",
        "300 s is shorter than count makes the cell's timed work (1000 s)",
        one("ioping", count=1000, interval_s=1, deadline_s=1200)),
    "a fault restored after the cell's deadline": (
        fault(120), "workloads[0].fault.restore_after_s",
        "120 s into the cell's timed phase is past its deadline (60 s, as deadline_s makes it)", fault(30)),
    "a fault restored after rados bench's deadline": (
        rados_fault(200), "workloads[0].fault.restore_after_s", "past its deadline (135 s, as seconds makes it)",
        rados_fault(100)),
}


@pytest.mark.parametrize("case", REFUSED)
def test_check_refuses_naming_the_key_what_the_run_would_refuse(tmp_path, case):
    config, key, says, _ = REFUSED[case]
    code, err = check(tmp_path, config)
    assert code == 2, err
    assert f"error: {key}: " in err
    assert says in err
    assert "hint: " in err  # (what would work)


@pytest.mark.parametrize("case", REFUSED)
def test_a_sound_config_of_the_same_shape_passes(tmp_path, case):
    *_, sound = REFUSED[case]
    code, err = check(tmp_path, sound)
    assert code == 0, err


def test_the_rate_refusal_names_rates_that_would_split(tmp_path):
    _, err = check(tmp_path, fio(profiles=[MIX], load={"iops": [101]}))
    assert "e.g. 100 or 102" in err
    _, err = check(tmp_path, fio(profiles=[WRITE], numjobs=4, load={"iops": [2]}))
    assert "e.g. 4" in err


def test_the_rates_named_split_for_every_profile_of_the_workload(tmp_path):
    """(101 is refused for the mix; 100 and 102, the mix's nearest, would be refused next for
    the profile of 3 jobs; the rates named are ones both split, and pass.)"""
    three = {"name": "three", "rw": "randread", "bs": "4KiB", "numjobs": 3}
    code, err = check(tmp_path, fio(profiles=[MIX, three], load={"iops": [101]}))
    assert code == 2 and "e.g. 96 or 102" in err, err
    for rate in (96, 102):
        code, err = check(tmp_path, fio(profiles=[MIX, three], load={"iops": [rate]}))
        assert code == 0, err


def test_libaios_ceiling_is_this_hosts_fs_aio_max_nr(tmp_path, monkeypatch):
    deep = fio(iodepth=1024, numjobs=65)  # (66560 I/Os in flight)
    code, err = check(tmp_path, deep)
    assert code == 2 and "more than libaio takes on this host (this host's fs.aio-max-nr is 65536)" in err, err
    monkeypatch.setattr("workloads.fio.workload.aio_max_nr", lambda: 1 << 20)  # (raised by its admin)
    code, err = check(tmp_path, deep)
    assert code == 0, err


def test_the_ceiling_is_read_from_proc_and_is_the_default_where_it_cannot_be(tmp_path, monkeypatch):
    from workloads.fio import workload

    monkeypatch.undo()
    raised = tmp_path / "aio-max-nr"
    raised.write_text("1048576\n")
    monkeypatch.setattr(workload, "AIO_MAX_NR_FILE", raised)
    assert workload.aio_max_nr() == 1 << 20
    monkeypatch.setattr(workload, "AIO_MAX_NR_FILE", tmp_path / "none")
    assert workload.aio_max_nr() == 65536
    raised.write_text("many\n")
    monkeypatch.setattr(workload, "AIO_MAX_NR_FILE", raised)
    assert workload.aio_max_nr() == 65536


def test_the_deadline_hint_names_the_least_deadline_accepted(tmp_path):
    code, err = check(tmp_path, fio(runtime_s=60, deadline_s=10))
    assert code == 2 and "hint: give deadline_s at least 61 s, or the workload less to do" in err, err
    code, err = check(tmp_path, fio(runtime_s=60, deadline_s=61))  # (what the hint says is accepted: the
    assert code == 0, err  # quick scale's 1 s of warm-up, then the timed 60 s)


def test_an_iozone_cell_measures_the_records_that_fit_its_file(tmp_path):
    """(As iozone -a pairs them: given a larger record too, iozone leaves its row out in
    silence, and the run would record it as failed.)"""
    from workloads.iozone import Iozone, IozoneOptions

    matrix = Iozone(IozoneOptions.model_validate({"file_sizes": ["64KiB", "1MiB"], "record_sizes": ["4KiB", "1MiB"]}))
    small, large = (c for c in matrix.cells() if c["mode"] == matrix.cells()[0]["mode"])
    assert matrix.records(small) == [4096] and matrix.records(large) == [4096, 1 << 20]
    assert "1024k" not in matrix.command(small, tmp_path / "f")
    assert matrix.command(large, tmp_path / "f").count("-r") == 2


def test_rbd_as_a_file_system_is_refused_where_the_clients_are_other_machines(tmp_path):
    code, err = check(tmp_path, site(tmp_path, {"name": "rbd", "options": {"access": "filesystem"}}))
    assert code == 2 and "error: backends[0].options.access: " in err
    code, err = check(tmp_path, site(tmp_path, RBD, {"name": "fio", "options": FIO}))
    assert code == 0, err


def test_a_directory_of_this_machine_stays_legal_beside_a_sites_clients(tmp_path):
    """(An existing site measures its control on this machine: only the container lab, whose
    nodes stand for machines of their own, refuses it.)"""
    config = site(tmp_path, "localdir")
    config["environment"]["options"].pop("ceph")
    code, err = check(tmp_path, config)
    assert code == 0, err


def test_a_suite_leaves_out_what_its_environment_cannot_attach_and_says_so(tmp_path):
    code, err = check(tmp_path, {"environment": "docker", "suite": "full"})
    assert code == 0, err
    assert "localdir/default: its directory is on this machine's disk" in err and "left out of the suite" in err


def test_the_default_config_and_the_shipped_suites_still_pass(tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert dfsbench("check", str(empty)).returncode == 0
    from harness.execution.plan import CONFIG_SUITES
    for suite in CONFIG_SUITES.values():
        done = dfsbench("check", str(suite.config))
        assert done.returncode == 0, done.stderr
    code, err = check(tmp_path, {"suite": "full"})
    assert code == 0, err


@pytest.mark.parametrize("environment", ["local", "docker"])
@pytest.mark.parametrize("suite", ["full", "report"])
@pytest.mark.parametrize("scale", ["quick", "report"])
def test_the_shipped_suites_pass_at_either_scale_in_either_lab(tmp_path, environment, suite, scale):
    """(At report scale rbd bench writes 5 GiB per cell, as the 2014 report did: the rbd
    backend the suites run holds it.)"""
    code, err = check(tmp_path, {"environment": environment, "suite": suite, "scale": scale})
    assert code == 0, err


# the run asks the same rules of the cell's target, before each cell


def test_the_run_refuses_a_cell_by_the_same_rules(tmp_path):
    from harness.api.target import Target
    from harness.errors import BadInput, DfsbenchError
    from harness.execution.checks import room_for
    from workloads.fio import Fio
    from workloads.fio.profiles import FioOptions
    from workloads.fio.workload import rate_lines
    from workloads.iozone import Iozone, IozoneOptions

    target = Target("path", tmp_path, "localdir", "default")
    split = Fio(FioOptions.model_validate({**FIO, "profiles": [MIX], "load": {"iops": [101]}}))
    with pytest.raises(DfsbenchError, match=r"fio's load.iops\[0\]: fio profile mix: 101 I/Os per second"):
        room_for(split, split.cells()[0], target)
    with pytest.raises(BadInput, match="cannot be split"):  # (and as the job file is written)
        rate_lines(split.profiles()[0], 101)
    big = Fio(FioOptions.model_validate({**FIO, "profiles": [{**WRITE, "bs": "8MiB"}], "size": "4MiB"}))
    with pytest.raises(DfsbenchError, match=r"fio's profiles\[0\].bs: profile w's bs \(8 MiB\) is more than size"):
        room_for(big, big.cells()[0], target)
    records = Iozone(IozoneOptions.model_validate({"file_sizes": ["64KiB"], "record_sizes": ["1MiB"]}))
    with pytest.raises(DfsbenchError, match=r"iozone's record_sizes\[0\]: 1 MiB is larger than every file"):
        room_for(records, records.cells()[0], target)
    sound = Fio(FioOptions.model_validate({**FIO, "profiles": [MIX], "load": {"iops": [100]}}))
    room_for(sound, sound.cells()[0], target)


def test_an_attachment_only_a_client_here_reaches_is_refused_on_another_by_the_same_rule(tmp_path):
    """(Before the attachment made its pool and image: the client host is the cluster's
    first; a stand-in that is not this machine is all the rule reads of it.)"""
    from types import SimpleNamespace

    from backends.ceph.rbd import Rbd, RbdOptions
    from harness.api.contracts import Cluster
    from harness.errors import DfsbenchError
    from harness.system.ledger import Ledger

    elsewhere = SimpleNamespace(local=False, name="client1")
    cluster = Cluster("docker", {}, Ledger(tmp_path / "ledger.json"), tmp_path,
                      clients=(elsewhere,))
    on_image = Rbd(RbdOptions.model_validate({"access": "filesystem"}))
    with pytest.raises(DfsbenchError, match="rbd/default: environment 'docker' measures from client hosts that are "
                                            "other machines, and access 'filesystem'"):
        with on_image.attach(cluster, tmp_path):
            pass


def test_a_swept_value_the_run_would_refuse_is_refused_naming_the_sweep(tmp_path):
    code, err = check(tmp_path, {**fio(ioengine="io_uring"), "sweep": {"iodepth": [1, 40000]}})
    assert code == 2 and "error: sweep.iodepth: " in err and "deeper than io_uring's ring" in err
    code, err = check(tmp_path, {**fio(profiles=[WRITE], load={"iops": [2]}), "sweep": {"numjobs": [1, 4]}})
    assert code == 2 and "error: workloads[0].options.load.iops[0]: " in err and "(at the sweep's numjobs 4)" in err
    code, err = check(tmp_path, {**fio(profiles=[WRITE], load={"iops": [4]}), "sweep": {"numjobs": [1, 4]}})
    assert code == 0, err


def test_the_suites_rbd_image_holds_its_rbd_bench_at_report_scale_and_no_more_at_quick(tmp_path):
    """rbd bench fills its image once before its reads: the suites' image is as large as the
    report's 5 GiB total at report scale, and the backend's own 2 GiB at quick scale, where a
    larger one would be written for nothing."""
    from harness.execution.plan import plan_from_file

    sizes = {}
    for scale in ("quick", "report"):
        config = tmp_path / f"{scale}.yaml"
        config.write_text(f"suite: full\nscale: {scale}\n")
        [rbd] = [b for b in plan_from_file(config).backends if b.name == "rbd"]
        sizes[scale] = rbd.options.image_size
    assert sizes == {"quick": 2 << 30, "report": 5 << 30}


def test_clients_first_beside_fios_all_clients_is_refused_and_check_says_where_each_runs(tmp_path):
    """Two keys that say where fio runs, saying two things, are refused naming both; a sound
    config's check says, per workload, whether it runs from the first client host or every
    one, and its fault: when, and that its cell runs before, during and after it."""
    profile = [{"name": "a", "rw": "randwrite", "bs": "4k"}]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"environment": "docker", "backends": ["glusterfs"], "workloads": [
        {"name": "fio", "clients": "first", "options": {**FIO, "all_clients": True, "profiles": profile}}]}))
    got = dfsbench("check", str(bad))
    assert got.returncode == 2 and "'clients: first'" in got.stderr and "all_clients" in got.stderr, got.stderr
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"environment": "docker", "backends": ["glusterfs"], "workloads": [
        {"name": "fio", "options": {**FIO, "runtime_s": 30, "all_clients": True, "profiles": profile},
         "fault": {"action": "kill", "after_s": 10, "restore_after_s": 20}},
        {"name": "largefile", "options": {"sizes": ["64MiB"]}}]}))
    got = dfsbench("check", str(good))
    assert got.returncode == 0, got.stderr
    fio_line, fault_line, largefile_line = (line for line in got.stdout.splitlines()
                                            if "workload " in line or "fault:" in line)
    assert "1 cell," in fio_line and fio_line.endswith("from every client host at once"), fio_line
    assert "kill (SIGKILL) the system's second storage node 10 s into each cell's timed phase, started again at " \
           "20 s" in fault_line, fault_line
    assert largefile_line.endswith("from the first client host"), largefile_line
    # (the fio cell on the one backend runs through the fault: three passes; largefile's cell, once)
    assert "cell runs: 2 in all" in got.stdout and "1 of them through a fault, each run three times (before, " \
           "during and after it): 4 passes" in got.stdout, got.stdout


@pytest.mark.parametrize("action", ["stop", "pause"])
def test_a_stop_or_pause_of_one_process_in_the_container_lab_is_refused(tmp_path, action):
    """The container lab faults one data process by killing it: another action would be done
    as a kill, and its record would not be what the config asked."""
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"environment": "docker", "backends": ["cephfs"], "workloads": [
        {"name": "largefile", "options": {"sizes": ["64MiB"]},
         "fault": {"action": action, "target": "process", "after_s": 1}}]}))
    got = dfsbench("check", str(config))
    assert got.returncode == 2, got.stdout + got.stderr
    said = got.stderr
    assert ("kills it (SIGKILL)" in said and "action: kill" in said) or "pause applies to a node" in said, said
