from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import BadInput
from harness.execution.plan import build_plan, plan_from_file


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bench.yaml"
    path.write_text(text)
    return path


def test_default_plan_is_the_reports_comparison():
    plan = build_plan({})
    assert plan.environment.name == "local" and plan.config.scale == "quick"
    assert [b.name for b in plan.backends] == ["glusterfs", "cephfs"]
    assert [w.name for w in plan.workloads] == ["iozone", "largefile", "smallfile"]
    iozone = plan.workloads[0]
    assert iozone.options.modes == ["cached", "direct"]


def test_backends_without_workloads_run_everything_they_support():
    plan = build_plan({"backends": ["rbd"]})
    assert sorted(w.name for w in plan.workloads) == ["fio", "iperf3", "rawdisk", "rbd-bench"]


def test_full_suite_runs_every_backend_and_workload():
    plan = build_plan({"suite": "full"})
    assert plan.environment.name == "local"
    assert [b.name for b in plan.backends] == ["glusterfs", "cephfs", "localdir", "rbd", "rados",
                                               "blockdev"]
    assert sorted(w.name for w in plan.workloads) == [
        "fio", "ioping", "iozone", "iperf3", "largefile", "rados-bench", "rawdisk", "rbd-bench",
        "smallfile"]
    # the default's own loop device may be overwritten; a user's device needs saying so
    blockdev = plan.backends[-1]
    assert blockdev.options.allow_destructive and blockdev.options.device is None
    assert plan.config.scale == "quick"
    assert plan.services() == {"ceph", "gluster"}


def test_scale_sets_workload_defaults_and_config_overrides_them():
    plan = build_plan({"scale": "report", "workloads": ["smallfile",
                       {"name": "largefile", "options": {"sizes": ["64MiB"]}}]})
    small, large = plan.workloads
    assert small.options.files == [1024, 5000, 10000]
    assert small.options.file_size == 40 * 1024
    assert large.options.sizes == [64 << 20]


def test_unknown_key_names_its_path(tmp_path):
    path = write(tmp_path, "workloads:\n  - name: smallfile\n    options:\n      filez: [10]\n")
    with pytest.raises(BadInput) as err:
        plan_from_file(path)
    assert "workloads[0].options.filez: unknown key" in str(err.value)
    assert "files" in str(err.value)  # the hint lists what is accepted


def test_negative_file_count_names_the_key(tmp_path):
    path = write(tmp_path, "workloads:\n  - name: smallfile\n    options: {files: [256, -5]}\n")
    with pytest.raises(BadInput) as err:
        plan_from_file(path)
    assert "workloads[0].options.files[1]" in str(err.value)
    assert "greater than 0" in str(err.value)


def test_unknown_top_level_key_and_bad_scale(tmp_path):
    with pytest.raises(BadInput) as err:
        plan_from_file(write(tmp_path, "scale: huge\nbackendz: [cephfs]\n"))
    text = str(err.value)
    assert "backendz: unknown key" in text
    assert "scale" in text and "'quick'" in text and "'report'" in text


def test_unknown_backend_lists_valid_ones():
    with pytest.raises(BadInput) as err:
        build_plan({"backends": ["cephfz"]})
    assert "unknown backend 'cephfz'" in str(err.value)
    assert "cephfs, glusterfs, localdir" in str(err.value)


def test_yaml_syntax_error_says_where(tmp_path):
    with pytest.raises(BadInput) as err:
        plan_from_file(write(tmp_path, "backends: [cephfs\nscale: quick\n"))
    assert "not valid YAML at line" in str(err.value)


def test_sizes_accept_units_and_reject_nonsense():
    plan = build_plan({"workloads": [{"name": "smallfile", "options": {"file_size": "4KiB"}}]})
    assert plan.workloads[0].options.file_size == 4096
    with pytest.raises(BadInput):
        build_plan({"workloads": [{"name": "largefile", "options": {"sizes": ["lots"]}}]})


def test_duplicate_backend_variant_is_refused():
    with pytest.raises(BadInput) as err:
        build_plan({"backends": ["cephfs", "cephfs"]})
    assert "listed twice" in str(err.value)


def test_cli_backends_override_keeps_configured_options():
    plan = build_plan({"backends": [{"name": "localdir", "variant": "x"}, "cephfs"]},
                      overrides={"backends": ["localdir"]})
    assert [(b.name, b.variant) for b in plan.backends] == [("localdir", "x")]


def test_cli_exit_codes_for_bad_input(tmp_path, capsys):
    assert main(["run", "--backends", "cephfz", "--results", str(tmp_path)]) == 2
    assert "valid backends: blockdev, cephfs, glusterfs, localdir, rados, rbd" in capsys.readouterr().err
    assert main(["check", str(write(tmp_path, "repeat: 0\n"))]) == 2
    assert "repeat" in capsys.readouterr().err
    bad_yaml = write(tmp_path, "a: [\n")
    assert main(["check", str(bad_yaml)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "not valid YAML" in err
    assert main(["check", str(write(tmp_path, "scale: quick\n"))]) == 0


@pytest.mark.parametrize("backend, message", [
    ({"name": "glusterfs", "options": {"layout": "distributed-replicate", "bricks": 4}},
     "backends[0].options: 4 bricks cannot form a distributed-replicate volume of replica 3"),
    ({"name": "glusterfs", "options": {"layout": "disperse", "bricks": 3, "redundancy": 2}},
     "needs 0 < redundancy < 1.5"),
    ({"name": "blockdev", "options": {"device": "/dev/no-such-disk"}},
     "backends[0].options.device: block device /dev/no-such-disk does not exist"),
    ({"name": "blockdev", "options": {"device": "/etc/hostname"}}, "is not a block device"),
    ({"name": "rbd", "options": {"access": "kernel"}}, "backends[0].options.access"),
    ({"name": "rbd", "options": {"image_size": "huge"}}, "'huge' is not a size"),
])
def test_bad_backend_options_name_the_key(backend, message):
    with pytest.raises(BadInput) as exc:
        build_plan({"backends": [backend], "workloads": ["fio"]})
    assert message in exc.value.message


def test_bad_workload_options_name_the_key():
    with pytest.raises(BadInput, match="unknown profile set 'seed003'"):
        build_plan({"backends": ["cephfs"], "workloads": [{"name": "fio", "options": {"profiles": "seed003"}}]})
    with pytest.raises(BadInput, match="test 0 \\(write\\) must be included"):
        build_plan({"backends": ["cephfs"], "workloads": [{"name": "iozone", "options": {"tests": [1, 2]}}]})
    with pytest.raises(BadInput, match="'seq' and 'rand' read what 'write' left behind"):
        build_plan({"backends": ["rados"], "workloads": [{"name": "rados-bench", "options": {"modes": ["seq"]}}]})
    with pytest.raises(BadInput, match="runs on .* targets, and none of the backends provides one"):
        build_plan({"backends": ["rados"], "workloads": ["iozone"]})


def test_a_fault_is_checked_and_needs_an_environment_that_can_do_it():
    fault = {"action": "kill", "after_s": 5, "restore_after_s": 15}
    plan = build_plan({"environment": "docker", "backends": ["cephfs"],
                       "workloads": [{"name": "largefile", "fault": fault}]})
    assert plan.workloads[0].fault.action == "kill" and plan.workloads[0].fault.restore_after_s == 15
    assert plan.workloads[0].verification()  # largefile checks the copy it reads back
    # the local lab faults a system's data processes (its OSDs), and an existing site nothing
    assert build_plan({"backends": ["cephfs"], "workloads": [{"name": "largefile", "fault": fault}]}).workloads[0].fault
    with pytest.raises(BadInput, match="cannot do faults"):
        build_plan({"environment": {"kind": "existing", "options": {"ceph": {}}}, "backends": ["cephfs"],
                    "workloads": [{"name": "largefile", "fault": fault}]})
    with pytest.raises(BadInput, match=r"workloads\[0\].fault"):
        build_plan({"environment": "docker", "backends": ["cephfs"],
                    "workloads": [{"name": "largefile", "fault": {"action": "explode", "after_s": 1}}]})
    with pytest.raises(BadInput):  # a backend takes no fault
        build_plan({"environment": "docker", "backends": [{"name": "cephfs", "fault": fault}]})


def test_a_yaml_bomb_hidden_in_a_valid_key_is_refused_at_once(tmp_path):
    import time

    from harness.execution.plan import plan_from_file

    levels = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 9):
        levels.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]")
    config = tmp_path / "bomb.yaml"
    config.write_text("\n".join(levels) + "\nbackends: [{name: glusterfs, options: {volume_options: {k: *a8}}}]\n")
    t0 = time.monotonic()
    with pytest.raises(BadInput, match="expands to more than 100,000 values"):
        plan_from_file(config)
    assert time.monotonic() - t0 < 10


def test_a_corrupt_store_is_refused_and_left_as_it_is(tmp_path):
    from harness.results.store import Store

    db = tmp_path / "dfsbench.sqlite"
    db.write_bytes(b"\x13not a database at all" * 200)
    before = db.read_bytes()
    with pytest.raises(BadInput, match="is not a dfsbench store"):
        Store(tmp_path)
    assert db.read_bytes() == before
