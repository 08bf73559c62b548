"""The base of the environments that keep a lab (harness.api.lab): where a lab lives, which
paths it refuses, the ceph.conf writer's own refusal, and labs set up by earlier versions."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from backends.ceph.lab import lab_conf
from environments.docker import DockerEnvironment
from environments.existing import ExistingEnvironment, ExistingOptions
from environments.local import LocalEnvironment, LocalOptions
from harness.api import lab
from harness.api.lab import lab_variable
from harness.errors import BadInput, DfsbenchError
from harness.execution.plan import build_plan
from harness.system.ledger import Ledger

CONF = dict(replicas=3, pg_num=8, osd_size=1 << 30, osd_memory_target=1 << 30)


@pytest.fixture
def no_lab_variables(monkeypatch):
    for name in ("DFSBENCH_LOCAL_LAB_DIR", "DFSBENCH_LAB_DIR", "DFSBENCH_EXISTING_LAB_DIR",
                 "DFSBENCH_EXISTING_DIR", "DFSBENCH_DOCKER_LAB_DIR"):
        monkeypatch.delenv(name, raising=False)


def test_one_variable_rule_and_one_default_for_every_environment(no_lab_variables, monkeypatch, tmp_path):
    assert lab_variable("local") == "DFSBENCH_LOCAL_LAB_DIR"
    assert lab_variable("my-env.2") == "DFSBENCH_MY_ENV_2_LAB_DIR"
    docker = DockerEnvironment(DockerEnvironment.Options())
    assert docker.lab_dir == Path("/var/tmp/dfsbench-docker-lab")
    monkeypatch.setenv("DFSBENCH_DOCKER_LAB_DIR", str(tmp_path / "d"))
    assert docker.lab_dir == tmp_path / "d" and docker.ledger_path == tmp_path / "d" / "ledger.json"
    # the option wins over the variable, and a relative one is made absolute once
    monkeypatch.chdir(tmp_path)
    assert DockerEnvironment(DockerEnvironment.Options(lab_dir=Path("rel"))).lab_dir == tmp_path / "rel"


@pytest.mark.parametrize("bad", ["/tmp/lab\n", "/tmp/la b", "/tmp/lab;x", "/tmp/lab#x", "/tmp/$id",
                                 "/tmp/a\\b", "/tmp/lab\nmon_host = 1.2.3.4"])
def test_a_lab_directory_a_daemon_would_read_as_syntax_is_refused(bad, no_lab_variables, monkeypatch):
    with pytest.raises(BadInput, match="environment.options.lab_dir"):
        build_plan({"environment": {"kind": "local", "options": {"lab_dir": bad}}, "backends": ["localdir"]})
    monkeypatch.setenv("DFSBENCH_LOCAL_LAB_DIR", bad)
    with pytest.raises(BadInput, match="DFSBENCH_LOCAL_LAB_DIR"):
        _ = LocalEnvironment(LocalOptions()).lab_dir


def test_a_relative_lab_directory_is_checked_with_the_directory_it_is_relative_to(tmp_path, monkeypatch):
    odd = tmp_path / "with space"
    odd.mkdir()
    monkeypatch.chdir(odd)
    env = LocalEnvironment(LocalOptions(lab_dir=Path("lab")))  # the option alone is fine …
    with pytest.raises(BadInput, match="with space"):  # … but not where it really is
        _ = env.lab_dir


def test_the_ceph_conf_writer_refuses_what_it_would_read_as_syntax():
    text = lab_conf("fsid", "v2:127.0.0.1:3300", "/var/tmp/lab/ceph", **CONF)
    assert "mon_data = /var/tmp/lab/ceph/mon/$id" in text  # (its own metavariables stay)
    for data in ("/tmp/x\nosd_data = /etc", "/tmp/$name", "/tmp/a;b", "/tmp/a b", "/tmp/a\\"):
        with pytest.raises(BadInput, match="cannot write ceph.conf"):
            lab_conf("fsid", "v2:127.0.0.1:3300", data, **CONF)
    for value in ("1\nkeyring = /etc/shadow", "a#b", "a;b", "a\\"):
        with pytest.raises(BadInput, match="cannot write ceph.conf"):
            lab_conf("fsid", "v2:127.0.0.1:3300", "/tmp/lab", **CONF, extra={"osd": {"x": value}})


def test_a_lab_an_earlier_version_set_up_is_still_found(no_lab_variables, monkeypatch, tmp_path):
    monkeypatch.setattr(lab, "DEFAULT_ROOT", tmp_path)
    env = LocalEnvironment(LocalOptions())
    old = tmp_path / "old-default"
    monkeypatch.setattr(LocalEnvironment, "former_places", (("DFSBENCH_LAB_DIR", str(old)),))
    assert env.lab_dir == tmp_path / "dfsbench-local-lab"  # no lab anywhere: the default
    Ledger(old / "ledger.json").save()
    assert env.lab_dir == old and env.saved() is not None  # the earlier version's lab, until it is down
    Ledger(tmp_path / "dfsbench-local-lab" / "ledger.json").save()
    assert env.lab_dir == tmp_path / "dfsbench-local-lab"  # (one of its own wins)
    monkeypatch.setenv("DFSBENCH_LAB_DIR", str(tmp_path / "by-old-variable"))
    assert env.lab_dir == tmp_path / "by-old-variable"
    monkeypatch.setenv("DFSBENCH_LOCAL_LAB_DIR", str(tmp_path / "by-new-variable"))
    assert env.lab_dir == tmp_path / "by-new-variable"
    # a config written for an earlier version names the existing environment's 'workdir'
    assert ExistingOptions.model_validate({"workdir": str(tmp_path)}).lab_dir == tmp_path
    assert ExistingEnvironment.former_places[0][0] == "DFSBENCH_EXISTING_DIR"


def test_a_ledger_of_another_version_is_read_or_refused_with_a_hint(tmp_path):
    env = LocalEnvironment(LocalOptions(lab_dir=tmp_path))
    ledger = Ledger(tmp_path / "ledger.json")
    facts = {"host": "gluster1", "volume": "v", "volume_type": "replicate", "replica": 3, "bricks": [],
             "socket": "", "version": "10.3", "log_dir": "", "phases": {}, "volume_options": {},
             "a_key_of_a_later_version": 1}
    ledger.data["services"] = {"gluster": facts}
    assert env.services_of(ledger)["gluster"].volume == "v"
    del facts["volume"]
    with pytest.raises(DfsbenchError, match="another version of dfsbench") as caught:
        env.services_of(ledger)
    assert "lab down --env local" in (caught.value.hint or "")


def test_undo_commands_of_a_moved_module_still_run(tmp_path):
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps({"entries": [{"kind": "command", "argv": ["python3", "-m", "harness.ssh", "{}",
                                                                          "--", "true"], "id": "a"}]}))
    assert Ledger.open(path).entries[0]["argv"][2] == "harness.system.ssh"


def test_a_docker_lab_of_an_earlier_version_is_refused_for_reuse_not_half_used(tmp_path):
    """Its ledger does not say which node serves which system: reused, its storage nodes
    would count for no system's cost and no fault could find them."""
    env = DockerEnvironment(DockerEnvironment.Options(lab_dir=tmp_path))
    ledger = Ledger(tmp_path / "ledger.json")
    ledger.data["docker"] = {"lab": "abc123", "gluster_nodes": ["dfsbench-abc123-gluster1"], "volume": "dfsbench",
                             "volume_type": "replicate", "replica": 3, "bricks": ["gluster1:/bricks/b0"],
                             "gluster_version": "10.3", "clients": []}
    with pytest.raises(DfsbenchError, match="earlier version of dfsbench") as err:
        env.check_alive(ledger)
    assert "lab down --env docker" in (err.value.hint or "")


def _up_with(tmp_path: Path, **options: object) -> tuple[LocalEnvironment, Ledger]:
    """A local lab's ledger as a lab brought up with ``options`` records them (its
    processes: none, so it reads as alive), and the environment that made it."""
    made = LocalEnvironment(LocalOptions(lab_dir=tmp_path, **options))
    ledger = Ledger(tmp_path / "ledger.json")
    ledger.data["options"] = made.lab_options()
    ledger.save()
    return made, ledger


def test_a_lab_of_other_options_is_refused_naming_each_difference(tmp_path):
    _, ledger = _up_with(tmp_path, ceph_osds=4, gluster_bricks=6, ready_timeout_s=30)
    run = LocalEnvironment(LocalOptions(lab_dir=tmp_path))  # (the defaults: 3 OSDs, 3 bricks, 180 s)
    assert run.differences(ledger, {"ceph", "gluster"}) == [("ceph_osds", 4, 3), ("gluster_bricks", 6, 3)]
    # a system the run does not use is not compared; a timeout changes no lab
    assert run.differences(ledger, {"ceph"}) == [("ceph_osds", 4, 3)]
    assert run.differences(ledger, set()) == []
    with pytest.raises(DfsbenchError, match="other options than this run's config") as refused:
        run.check_lab({"ceph"})
    assert "environment.options.ceph_osds: the lab has 4, the config asks for 3" in refused.value.message
    assert "ready_timeout_s" not in refused.value.message and "gluster" not in refused.value.message
    assert "DFSBENCH_LOCAL_LAB_DIR" in (refused.value.hint or "")
    same = LocalEnvironment(LocalOptions(lab_dir=tmp_path, ceph_osds=4, gluster_bricks=6, ready_timeout_s=5))
    assert same.differences(ledger, {"ceph", "gluster"}) == []

    class Sharing(LocalEnvironment):  # (a key two systems size by: one the run uses is enough to compare it)
        def system_keys(self):
            return {"ceph": frozenset({"ceph_osds"}), "gluster": frozenset({"ceph_osds", "gluster_bricks"})}

    assert Sharing(LocalOptions(lab_dir=tmp_path)).differences(ledger, {"ceph"}) == [("ceph_osds", 4, 3)]


def test_what_a_ledger_says_of_its_options_is_shown_escaped_and_a_key_one_side_has_not_is_named(tmp_path):
    _, ledger = _up_with(tmp_path)
    ledger.data["options"]["ceph_osds"] = "4\x1b[2J\n"
    ledger.data["options"]["ceph_later_key"] = {"a": 1}  # (a later dfsbench's option, of a system in the run)
    del ledger.data["options"]["ceph_replicas"]
    ledger.save()
    run = LocalEnvironment(LocalOptions(lab_dir=tmp_path))
    assert run.differences(ledger, {"ceph"}) == [("ceph_later_key", {"a": 1}, lab.MISSING),
                                                 ("ceph_osds", "4\x1b[2J\n", 3), ("ceph_replicas", lab.MISSING, 3)]
    with pytest.raises(DfsbenchError) as refused:
        run.check_lab({"ceph"})
    said = refused.value.message.splitlines()[1:]
    assert said == ['  environment.options.ceph_later_key: the lab has {"a": 1}, the config asks for (none: no such '
                    'option here)',
                    '  environment.options.ceph_osds: the lab has "4\\u001b[2J\\n", the config asks for 3',
                    "  environment.options.ceph_replicas: the lab has (no value recorded), the config asks for 3"]
    # a lab brought up before the options were recorded: which it is cannot be told
    del ledger.data["options"]
    ledger.save()
    with pytest.raises(DfsbenchError, match="did not record the options"):
        run.check_lab(set())


HOLD_LEASE = """
import sys, time
from pathlib import Path
from environments.{module} import {cls} as Env
env = Env(Env.Options.model_validate({{"lab_dir": sys.argv[1]}}))
with env.lease("run 20261128-000000-aaaaaa"):
    print("held", flush=True)
    time.sleep(600)
"""


@pytest.mark.parametrize("module, cls", [("local", "LocalEnvironment"), ("docker", "DockerEnvironment"),
                                         ("existing", "ExistingEnvironment")])
def test_every_lab_is_leased_by_one_process_and_a_dead_holder_is_stale(module, cls, tmp_path):
    """The lease is the base's: the local lab, the container lab and an existing site's
    ledger alike; a holder killed with -9 leaves its lease in the ledger, stale."""
    import subprocess
    import sys

    from harness.api.lab import LabBusy

    lab_dir = tmp_path / "lab"
    Ledger(lab_dir / "ledger.json").save()  # (a lab, whose ledger each holder writes itself in)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LEASE.format(module=module, cls=cls), str(lab_dir)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        kind = {"local": LocalEnvironment, "docker": DockerEnvironment, "existing": ExistingEnvironment}[module]
        env = kind(kind.Options.model_validate({"lab_dir": str(lab_dir)}))
        with pytest.raises(LabBusy) as busy:
            with env.lease("run 20261128-000000-bbbbbb"):
                pass
        assert busy.value.holder is not None and busy.value.holder.pid == holder.pid
        assert f"is in use: run 20261128-000000-aaaaaa (pid {holder.pid}, since " in busy.value.message
        holder.kill()
        holder.wait()
        assert env.holder() == (busy.value.holder, False)  # (stale: its process is gone)
        said: list[str] = []
        with env.lease("run 20261128-000000-bbbbbb", said.append) as mine:
            assert env.holder() == (mine, True) and mine.pid == os.getpid()
        assert len(said) == 1 and said[0].startswith(f"the lease of run 20261128-000000-aaaaaa (pid {holder.pid}, ")
        assert said[0].endswith(f"on the {module} lab is stale: its process is gone; taken over")
        assert "lease" not in Ledger.open(lab_dir / "ledger.json").data and not (lab_dir / "lease").exists()
    finally:
        holder.kill()
        holder.wait()


def test_a_lab_is_compared_by_the_values_its_options_read_not_their_text(tmp_path):
    """'1Gbit', '1000Mbit' and '125MB/s' are one rate: a container lab brought up with one is
    the lab a config giving another asks for; a rate that differs is named in the config's
    words."""
    def up(**options: object) -> Ledger:
        ledger = Ledger(tmp_path / "ledger.json")
        ledger.data["options"] = DockerEnvironment(DockerEnvironment.Options(lab_dir=tmp_path, **options)).lab_options()
        return ledger

    def run(**options: object) -> DockerEnvironment:
        return DockerEnvironment(DockerEnvironment.Options(lab_dir=tmp_path, **options))

    ledger = up(link={"rate": "1Gbit"}, client_links={"client1": {"rate": "125MB/s"}})
    assert run(link={"rate": "1000Mbit"}, client_links={"client1": {"rate": "1Gbit"}}).differences(ledger, set()) == []
    assert run(link={"rate": "125MB/s"}, client_links={"client1": {"rate": "100Mbit"}}).differences(ledger, set()) == [
        ("client_links.client1.rate", "125MB/s", "100Mbit")]
    assert run(link={"rate": "100Mbit"}).differences(ledger, set()) == [
        ("client_links.client1", {"delay": None, "loss": None, "rate": "125MB/s"}, lab.MISSING),
        ("link.rate", "1Gbit", "100Mbit")]


def test_the_lock_decides_who_holds_a_lease_not_what_the_ledger_says(tmp_path, capsys):
    """A ledger that names a live process as its lease's holder (written by hand, or by a
    holder whose lock file was removed) while nobody holds the lock holds nothing: a run
    takes the lease at once, and says whom it replaced."""
    import subprocess

    from harness.commands import lab
    from harness.system import proc
    from harness.system.lease import Holder

    lab_dir = tmp_path / "lab"
    sleeper = subprocess.Popen(["sleep", "600"])
    try:
        ident = proc.ProcessId.of(sleeper.pid)
        assert ident is not None
        named = Holder("run \x1b[2J20261128-000000-aaaaaa", ident.pid, ident.start_ticks, 0.0)
        assert named.alive()
        ledger = Ledger(lab_dir / "ledger.json")
        ledger.data["lease"] = named.saved()
        ledger.save()
        env = LocalEnvironment(LocalOptions.model_validate({"lab_dir": str(lab_dir)}))
        lab._print_lease(env)
        assert capsys.readouterr().out == (f"  lease: stale — {named} does not hold its lock; the next run or 'lab "
                                           "down' takes it over\n")
        said: list[str] = []
        with env.lease("run 20261128-000000-bbbbbb", said.append) as mine:
            assert env.holder() == (mine, True)
        assert said == [f"the lease on the local lab named {named} as its holder, which did not hold its lock; "
                        "replaced"]
        assert "\x1b" not in said[0] and "run \\x1b[2J20261128-000000-aaaaaa (pid " in said[0]
        assert "lease" not in Ledger.open(ledger.path).data
    finally:
        sleeper.kill()
        sleeper.wait()


def test_lab_status_asks_the_lock_who_holds_the_lease(tmp_path, monkeypatch, capsys):
    """'lab status' says held while a process holds the lock: where the ledger does not name
    it yet, and where the holder's /proc entry cannot be read (another user's process)."""
    import subprocess
    import sys

    from harness.commands import lab
    from harness.system import proc

    lab_dir = tmp_path / "lab"
    Ledger(lab_dir / "ledger.json").save()
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LEASE.format(module="local", cls="LocalEnvironment"),
                               str(lab_dir)], stdout=subprocess.PIPE, text=True)
    env = LocalEnvironment(LocalOptions.model_validate({"lab_dir": str(lab_dir)}))
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with monkeypatch.context() as unreadable:  # (/proc/PID/stat of another user: PermissionError)
            unreadable.setattr(proc, "start_ticks", lambda pid: None)
            lab._print_lease(env)
        assert capsys.readouterr().out.startswith(f"  lease: held by run 20261128-000000-aaaaaa (pid {holder.pid}, ")
        unnamed = Ledger.open(lab_dir / "ledger.json")
        del unnamed.data["lease"]
        unnamed.save()
        lab._print_lease(env)
        assert capsys.readouterr().out == "  lease: held by a dfsbench process (it has not named itself yet)\n"
    finally:
        holder.kill()
        holder.wait()
    lab._print_lease(env)
    assert capsys.readouterr().out == "  lease: free (no run holds the lab)\n"


def test_a_lab_directory_removed_between_its_making_and_the_lease_is_made_again(tmp_path, monkeypatch):
    """Another process letting go of its lease removes the lab's directory it made (no lab
    in it): where that falls between this process's mkdir and its open of the lock file,
    the taking starts over, it does not fail with FileNotFoundError."""
    from harness.system import lease as lease_module

    lab_dir = tmp_path / "lab"
    real_open = os.open
    opened: list[str] = []

    def open_after_another_let_go(file, flags, mode=0o777):
        opened.append(file)
        if len(opened) == 1:
            os.rmdir(lab_dir)  # (the other's _let_go, between our mkdir and our open)
        return real_open(file, flags, mode)

    monkeypatch.setattr(lease_module.os, "open", open_after_another_let_go)
    env = LocalEnvironment(LocalOptions.model_validate({"lab_dir": str(lab_dir)}))
    with env.lease("run 20261128-000000-cccccc"):
        assert (lab_dir / "lease").exists() and len(opened) == 2
    assert not lab_dir.exists()


def test_a_run_whose_lab_was_taken_down_under_it_leaves_the_next_lab_alone(tmp_path):
    """Run A brings up its lab; 'lab down --force' takes it down under A, and 'lab up' makes
    a new lab in the same place. A's end says its lab was taken down under it, and neither
    its teardown nor what it still writes of its ledger touches the new lab."""
    from tests.plugins.dfsbench_toys import ToyBox

    lab_dir = tmp_path / "toybox"

    def toybox() -> ToyBox:
        return ToyBox(ToyBox.Options.model_validate({"lab_dir": str(lab_dir)}))

    run_a, new = toybox(), toybox()
    said = None
    try:
        try:
            with run_a.lease("run 20261128-000000-aaaaaa"), run_a.up({"toyspace"}) as cluster:
                assert toybox().stop() == []  # ('lab down --force': no lease)
                with new.lease("lab up"):
                    new.start({"toyspace"})
                made = (lab_dir / "ledger.json").read_text()
                daemons = [ident for _, ident, _ in Ledger.open(lab_dir / "ledger.json").live_processes()]
                cluster.ledger.command(["true"], "what run A still records")
        except DfsbenchError as exc:
            said = exc
        assert (lab_dir / "ledger.json").exists() and (lab_dir / "ledger.json").read_text() == made
        assert daemons and all(d.alive() for d in daemons)
        assert type(said).__name__ == "LabTakenDown" and said.message == (
            f"the toybox lab in {lab_dir} was taken down under this process by another command "
            "('dfsbench lab down --env toybox --force'); the lab there now is another one, made since: left alone")
    finally:
        assert new.stop() == []
    assert not any(d.alive() for d in daemons)


def test_who_holds_the_lease_of_a_ledger_that_is_not_one_is_an_error_naming_it(tmp_path):
    """'run' and 'lab status' ask who holds the lease: a hand-written ledger whose data is
    a list is refused naming its file, not an AttributeError."""
    lab_dir = tmp_path / "lab"
    lab_dir.mkdir()
    (lab_dir / "ledger.json").write_text('{"entries": [], "data": []}')
    env = LocalEnvironment(LocalOptions.model_validate({"lab_dir": str(lab_dir)}))
    with pytest.raises(DfsbenchError, match=f"the lab ledger {lab_dir}/ledger.json cannot be read: its data is not"):
        env.holder()
    with pytest.raises(DfsbenchError, match="cannot be read"):
        with env.lease("run 20261128-000000-dddddd"):
            pass
