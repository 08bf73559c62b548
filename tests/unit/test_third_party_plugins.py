"""A third party's environment, backends and workload (tests/plugins), registered through
entry points exactly as an installed plugin would be, show up in 'list', 'lab', 'run',
'compare' (a table and a verdict) and 'report' with no edit to harness/."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.system import proc
from tests.helpers import dfsbench

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"


@pytest.fixture
def toys(tmp_path: Path) -> dict[str, str]:
    """What a ``dfsbench`` command is given to find the toy plugins, installed as a
    distribution of their own under tmp_path/site, and to keep its labs and results in
    tmp_path."""
    dist = tmp_path / "site" / "dfsbench_toys-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: dfsbench-toys\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[dfsbench.environments]\ntoybox = dfsbench_toys:ToyBox\n\n"
        "[dfsbench.backends]\nnullfs = dfsbench_toys:NullFS\ntoyfs = dfsbench_toys:ToyFS\n"
        "toystorefs = dfsbench_toystore:ToyStoreFS\n\n"
        "[dfsbench.workloads]\nstatfs = dfsbench_toys:StatFS\n\n"
        "[dfsbench.systems]\ntoystore = dfsbench_toystore:ToyStore\n")
    path = os.pathsep.join([str(tmp_path / "site"), str(PLUGINS), os.environ.get("PYTHONPATH", "")])
    return {"PYTHONPATH": path, "DFSBENCH_LOCAL_LAB_DIR": str(tmp_path / "lab"),
            "DFSBENCH_TOYBOX_LAB_DIR": str(tmp_path / "toybox"), "DFSBENCH_RESULTS": str(tmp_path / "results")}


def test_toy_plugins_appear_in_tables_verdicts_and_the_report(tmp_path, toys):
    listed = dfsbench("list", env=toys, timeout=300)
    assert "nullfs" in listed.stdout and "statfs" in listed.stdout, listed.stderr
    config = tmp_path / "toys.yaml"
    config.write_text("backends:\n  - {name: nullfs, variant: a}\n  - {name: nullfs, variant: b}\n"
                      "workloads:\n  - {name: statfs, options: {calls: 3000}}\nrepeat: 3\n")
    run = dfsbench("run", str(config), env=toys, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "statfs: statvfs calls per second" in run.stdout

    compared = dfsbench("compare", "latest", "--format", "markdown", env=toys, timeout=300)
    assert compared.returncode == 0, compared.stderr
    table = compared.stdout[compared.stdout.index("statfs: statvfs calls per second"):]
    assert "| test | calls | NullFS/a calls/s | NullFS/b calls/s | NullFS/a vs NullFS/b |" in table
    row = next(line for line in table.splitlines() if line.startswith("| statvfs"))
    verdict = row.rstrip(" |").rsplit("|", 1)[-1].strip()
    assert verdict.startswith(("NullFS/a", "NullFS/b", "no significant difference")), verdict

    records = json.loads(dfsbench("compare", "latest", "--format", "json", env=toys, timeout=300).stdout)["records"]
    assert {r["workload"] for r in records} == {"statfs"} and len(records) == 6

    report = tmp_path / "toys.html"
    made = dfsbench("report", "latest", "-o", str(report), env=toys, timeout=300)
    assert made.returncode == 0, made.stderr
    html = report.read_text()
    assert "statfs: statvfs calls per second" in html and "NullFS/a" in html
    assert '"type": "bar"' in html  # the workload's declared chart


def test_a_backend_that_describes_its_target_with_the_wrong_types_fails_its_attach_named(tmp_path, toys):
    config = tmp_path / "typed.yaml"
    config.write_text("backends:\n  - {name: nullfs, variant: good, options: {replicas: 2}}\n"
                      "  - {name: nullfs, variant: bad, options: {replicas: three}}\n"
                      "workloads:\n  - {name: statfs, options: {calls: 100}}\n")
    run = dfsbench("run", str(config), env=toys, timeout=300)
    assert run.returncode != 0, run.stdout + run.stderr
    assert "backend 'nullfs' describes its target with replicas = 'three', which is not a finite number above 0" \
        in run.stdout + run.stderr, run.stdout + run.stderr
    records = json.loads(dfsbench("compare", "latest", "--format", "json", env=toys, timeout=300).stdout)["records"]
    assert {r["variant"] for r in records if r["workload"] == "statfs"} == {"good"}  # (the other one ran)


def test_a_toy_environment_is_listed_brought_up_used_and_torn_down(tmp_path, toys):
    listed = dfsbench("list", env=toys, timeout=300)
    assert "toybox" in listed.stdout.split("backends:")[0], listed.stdout + listed.stderr
    helped = dfsbench("run", "--help", env={**toys, "COLUMNS": "2000"}, timeout=300)  # (one line an option)
    env = next(line for line in helped.stdout.splitlines() if line.lstrip().startswith("--env "))
    assert "toybox" in env and "toyfs" in helped.stdout and "statfs" in helped.stdout, helped.stdout
    lab = tmp_path / "toybox"  # where the base puts it: $DFSBENCH_TOYBOX_LAB_DIR
    config = tmp_path / "toybox.yaml"
    config.write_text("environment: toybox\nbackends: [toyfs]\n"
                      "workloads:\n  - {name: statfs, options: {calls: 500}}\n")

    # a run brings its own lab up and tears it down: nothing of it is left
    run = dfsbench("run", str(config), env=toys, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "statfs: statvfs calls per second" in run.stdout and "ToyFS" in run.stdout
    assert "environment down" in run.stderr and not lab.exists()
    said = run.stderr.split("its daemon pid ")[1].split()
    assert not proc.ProcessId(int(said[0]), int(said[4])).alive()  # stopped, not only its directory gone

    # 'lab up' leaves it running (its daemon in the ledger), 'run' reuses it, 'lab down' undoes it
    up = dfsbench("lab", "up", str(config), env=toys, timeout=300)
    assert up.returncode == 0, up.stdout + up.stderr
    assert "toyspace: healthy" in up.stdout and "processes: 1 of 1 running" in up.stdout
    ledger = json.loads((lab / "ledger.json").read_text())
    daemon = next(e for e in ledger["entries"] if e["kind"] == "process")
    assert proc.ProcessId(daemon["pid"], daemon["start"]).alive()
    again = dfsbench("lab", "up", str(config), env=toys, timeout=300)
    assert again.returncode == 1 and "already set up" in again.stderr
    reused = dfsbench("run", str(config), env=toys, timeout=300)
    assert reused.returncode == 0, reused.stdout + reused.stderr
    assert "reusing the running lab" in reused.stderr and "lab left running" in reused.stderr
    status = dfsbench("lab", "status", "--env", "toybox", env=toys, timeout=300)
    assert status.returncode == 0 and "toyspace: healthy" in status.stdout, status.stdout + status.stderr
    down = dfsbench("lab", "down", "--env", "toybox", env=toys, timeout=300)
    assert down.returncode == 0, down.stderr
    assert not lab.exists() and not proc.ProcessId(daemon["pid"], daemon["start"]).alive()
    gone = dfsbench("lab", "status", "--env", "toybox", env=toys, timeout=300)
    assert gone.returncode == 1 and "lab: none" in gone.stdout
    # no lab, nothing to take down: no directory is made for its lease either
    nowhere = {**toys, "DFSBENCH_TOYBOX_LAB_DIR": str(tmp_path / "not-made" / "lab")}
    assert dfsbench("lab", "down", "--env", "toybox", env=nowhere, timeout=300).returncode == 0
    assert not (tmp_path / "not-made").exists()


def test_a_toy_system_is_brought_up_attached_measured_faulted_and_taken_down_in_the_local_lab(tmp_path, toys):
    """A system written against harness.api alone (tests/plugins/dfsbench_toystore.py): its
    servers killed and brought back by the local lab, its four moments kept."""
    listed = dfsbench("list", env=toys, timeout=300)
    systems = listed.stdout.split("systems:")[1].splitlines()
    line = systems[systems.index(next(s for s in systems if s.strip().startswith("toystore "))) + 1]
    assert "runs in the local lab;" in line and "container lab" not in line and "faults in the local lab" in line
    config = tmp_path / "toystore.yaml"
    config.write_text("backends: [toystorefs]\nworkloads:\n  - name: statfs\n    options: {calls: 200, seconds: 4}\n"
                      "    fault: {action: kill, after_s: 1, restore_after_s: 3, recovery_timeout_s: 30}\n")
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text("environment: docker\n" + config.read_text())
    refused = dfsbench("check", str(elsewhere), env=toys, timeout=300)
    assert refused.returncode == 2 and "needs toystore, which cannot run in environment 'docker': ToyStore runs in " \
        "the local lab" in refused.stderr, refused.stderr
    # nor a site: the hint does not send the user to a site key it has none of
    elsewhere.write_text("environment: existing\n" + config.read_text())
    refused = dfsbench("check", str(elsewhere), env=toys, timeout=300)
    assert refused.returncode == 2 and "cannot run in environment 'existing'" in refused.stderr, refused.stderr
    assert "environment.options.toystore" not in refused.stderr

    try:
        up = dfsbench("lab", "up", str(config), env=toys, timeout=300)
        assert up.returncode == 0 and "toystore: healthy — 3 of 3 servers beating" in up.stdout, up.stdout + up.stderr
        ledger_file = tmp_path / "lab" / "ledger.json"

        def servers() -> dict[str, proc.ProcessId]:
            entries = json.loads(ledger_file.read_text())["entries"]
            return {e["launch"]["node"]: proc.ProcessId(e["pid"], e["start"]) for e in entries if e.get("launch")}

        before = servers()
        assert sorted(before) == ["server1", "server2", "server3"] and all(p.alive() for p in before.values())
        run = dfsbench("run", str(config), env=toys, timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
        after = servers()
        assert not before["server2"].alive() and after["server2"] != before["server2"] and after["server2"].alive()
        assert after["server1"] == before["server1"]  # (only the node faulted was touched)
        records = json.loads(dfsbench("compare", "latest", "--format", "json", env=toys, timeout=300).stdout)["records"]
        fault = next(r for r in records if r["workload"] == "fault")
        params = fault["params"]
        assert params["fault"].startswith("server2 killed at 1.") and not fault.get("flags"), fault
        assert params["noticed_after_s"] is not None and params["noticed_after_s"] < 1.5, params
        assert fault["value"] is not None and params["health"] == "3 of 3 servers beating", params
        phases = {r["params"].get("phase") for r in records if r["workload"] == "statfs"}
        assert phases == {"before", "during", "after"}
    finally:
        taken = dfsbench("lab", "down", env=toys, timeout=300)  # (whatever failed above: no lab is left)
    assert taken.returncode == 0, taken.stderr
    assert not any(p.alive() for p in after.values()) and not (tmp_path / "lab").exists()


def test_a_broken_plugin_is_named_and_stops_no_run_that_does_not_name_it(tmp_path, toys):
    site = tmp_path / "site" / "dfsbench_broken-0.1.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Metadata-Version: 2.1\nName: dfsbench-broken\nVersion: 0.1\n")
    (site / "entry_points.txt").write_text("[dfsbench.backends]\nhalfdone = dfsbench_toys:NoSuchClass\n")
    listed = dfsbench("list", env=toys, timeout=300)
    assert listed.returncode == 1 and "halfdone     BROKEN: backend plugin 'halfdone'" in listed.stdout
    assert "glusterfs" in listed.stdout and "statfs" in listed.stdout  # the others are listed
    # the default suite (no backend named) goes on without it, and says so
    default = tmp_path / "default.yaml"
    default.write_text("scale: quick\n")
    checked = dfsbench("check", str(default), env=toys, timeout=300)
    assert checked.returncode == 0, checked.stderr
    assert "backends: glusterfs/default, cephfs/default" in checked.stdout
    assert "note: backend plugin 'halfdone'" in checked.stderr and "left out of the 'report' suite" in checked.stderr
    # a config that names it gets the plugin's error
    named = tmp_path / "named.yaml"
    named.write_text("backends: [halfdone]\n")
    refused = dfsbench("check", str(named), env=toys, timeout=300)
    assert refused.returncode != 0 and "halfdone" in refused.stderr and "failed to load" in refused.stderr


# ---------------------------------------------------------------- one lab, one run at a time

TOY_RUN = "environment: toybox\nbackends: [toyfs]\nworkloads:\n  - {{name: statfs, options: {{calls: {calls}}}}}\n"
LONG = 10 ** 10  # statvfs calls: a run that lasts until the test stops it


def _configs(tmp_path: Path) -> tuple[str, str]:
    """A config whose run ends at once, and one whose run goes on until it is stopped."""
    short, long = tmp_path / "short.yaml", tmp_path / "long.yaml"
    short.write_text(TOY_RUN.format(calls=500))
    long.write_text(TOY_RUN.format(calls=LONG))
    return str(short), str(long)


def _running(config: str, toys: dict[str, str]) -> subprocess.Popen[str]:
    """``dfsbench run CONFIG`` in the background, as in a second terminal."""
    return subprocess.Popen([sys.executable, "-m", "harness.cli", "run", config], env={**os.environ, **toys},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _lease_of(lab: Path, process: subprocess.Popen[str], within: float = 120) -> dict[str, object]:
    """The lease a run took on the lab, as its ledger says, once it says so."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            lease = json.loads((lab / "ledger.json").read_text())["data"].get("lease")
        except (FileNotFoundError, json.JSONDecodeError):
            lease = None
        if isinstance(lease, dict) and str(lease["what"]).startswith("run "):
            return lease
        assert process.poll() is None, process.communicate()
        time.sleep(0.1)
    raise AssertionError(f"no run took the lease of {lab} within {within} s")


def _daemons(lab: Path, within: float = 120) -> list[proc.ProcessId]:
    """The lab's daemons, as its ledger says, once it says any (a run holds the lease from
    its start, before its lab's daemons are up)."""
    deadline = time.monotonic() + within
    while True:
        try:
            entries = json.loads((lab / "ledger.json").read_text())["entries"]
        except (FileNotFoundError, json.JSONDecodeError):  # (being written)
            entries = []
        found = [proc.ProcessId(e["pid"], e["start"]) for e in entries if e["kind"] == "process"]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def _ended(process: subprocess.Popen[str], sig: int | None = None) -> tuple[int, str]:
    if sig is not None:
        process.send_signal(sig)
    _, err = process.communicate(timeout=300)
    return process.returncode, err


def test_a_second_run_is_refused_while_a_run_holds_the_lab(tmp_path, toys):
    short, long = _configs(tmp_path)
    lab = tmp_path / "toybox"
    assert dfsbench("lab", "up", short, env=toys, timeout=300).returncode == 0
    daemons = _daemons(lab)
    first = _running(long, toys)
    try:
        lease = _lease_of(lab, first)
        holder = f"{lease['what']} (pid {first.pid}"
        assert lease["pid"] == first.pid
        second = dfsbench("run", short, env=toys, timeout=300)
        assert second.returncode == 1, second.stdout + second.stderr
        assert f"the toybox lab in {lab} is in use: {holder}" in second.stderr
        assert "lab_dir" in second.stderr and "$DFSBENCH_TOYBOX_LAB_DIR" in second.stderr
        assert "run id:" not in second.stdout and "backends toyfs" not in second.stderr  # (no run begun)
        status = dfsbench("lab", "status", "--env", "toybox", env=toys, timeout=300)
        assert f"lease: held by {holder}" in status.stdout, status.stdout
        down = dfsbench("lab", "down", "--env", "toybox", env=toys, timeout=300)
        assert down.returncode == 1 and holder in down.stderr and "--force" in down.stderr, down.stderr
        assert all(d.alive() for d in daemons)  # (refused: nothing undone)

        code, err = _ended(first, signal.SIGTERM)  # its end lets go of the lease, and leaves the lab up
        assert code == 128 + signal.SIGTERM and "leaving the lab running" in err, err
        assert "lease" not in json.loads((lab / "ledger.json").read_text())["data"]
        assert not (lab / "lease").exists() and all(d.alive() for d in daemons)
        again = dfsbench("run", short, env=toys, timeout=300)
        assert again.returncode == 0 and "reusing the running lab" in again.stderr, again.stderr
        assert "lease: free" in dfsbench("lab", "status", "--env", "toybox", env=toys, timeout=300).stdout
    finally:
        first.kill()
        first.communicate()
        dfsbench("lab", "down", "--env", "toybox", "--force", env=toys, timeout=300)
    assert not lab.exists() and not any(d.alive() for d in daemons)


def test_a_run_holds_the_lab_it_brings_up_itself_from_the_start(tmp_path, toys):
    short, long = _configs(tmp_path)
    lab = tmp_path / "toybox"
    first = _running(long, toys)
    try:
        lease = _lease_of(lab, first)
        daemons = _daemons(lab)
        second = dfsbench("run", short, env=toys, timeout=300)
        assert second.returncode == 1 and f"is in use: {lease['what']} (pid {first.pid}" in second.stderr
        code, err = _ended(first, signal.SIGTERM)
        assert code == 128 + signal.SIGTERM and "tearing the environment down" in err, err
    finally:
        first.kill()
        first.communicate()
    assert not lab.exists() and daemons and not any(d.alive() for d in daemons)


def test_a_stale_lease_is_said_so_and_taken_over(tmp_path, toys):
    short, long = _configs(tmp_path)
    lab = tmp_path / "toybox"
    assert dfsbench("lab", "up", short, env=toys, timeout=300).returncode == 0
    first = _running(long, toys)
    try:
        lease = _lease_of(lab, first)
        _ended(first, signal.SIGKILL)  # (nothing of its own runs at its end: its lease stays in the ledger)
        holder = f"{lease['what']} (pid {first.pid}"
        status = dfsbench("lab", "status", "--env", "toybox", env=toys, timeout=300)
        assert f"lease: stale — {holder}" in status.stdout and "is gone" in status.stdout, status.stdout
        second = dfsbench("run", short, env=toys, timeout=300)
        assert second.returncode == 0, second.stdout + second.stderr
        assert f"the lease of {holder}" in second.stderr and "is stale: its process is gone" in second.stderr
        assert "lease: free" in dfsbench("lab", "status", "--env", "toybox", env=toys, timeout=300).stdout
    finally:
        first.kill()
        first.communicate()
        down = dfsbench("lab", "down", "--env", "toybox", env=toys, timeout=300)
    assert down.returncode == 0 and not lab.exists(), down.stderr


def test_lab_down_of_a_leased_lab_asks_for_force_and_then_takes_it_down(tmp_path, toys):
    short, long = _configs(tmp_path)
    lab = tmp_path / "toybox"
    assert dfsbench("lab", "up", short, env=toys, timeout=300).returncode == 0
    daemons = _daemons(lab)
    first = _running(long, toys)
    try:
        lease = _lease_of(lab, first)
        holder = f"{lease['what']} (pid {first.pid}"
        refused = dfsbench("lab", "down", "--env", "toybox", env=toys, timeout=300)
        assert refused.returncode == 1 and f"is in use: {holder}" in refused.stderr, refused.stderr
        assert "add --force" in refused.stderr and lab.exists() and all(d.alive() for d in daemons)
        forced = dfsbench("lab", "down", "--env", "toybox", "--force", env=toys, timeout=300)
        assert forced.returncode == 0, forced.stderr
        assert f"--force: taking the lab down under {holder}" in forced.stderr
        assert not lab.exists() and not any(d.alive() for d in daemons)
        code, err = _ended(first)  # (what it writes at its end makes no lab again)
        assert code == 1, err
        assert (f"dfsbench: error: the toybox lab in {lab} was taken down under this process by another command "
                "('dfsbench lab down --env toybox --force'); no lab is there now") in err, err
    finally:
        first.kill()
        first.communicate()
    assert not lab.exists()


def test_a_lab_brought_up_with_other_options_is_not_reused(tmp_path, toys):
    short, _ = _configs(tmp_path)
    lab = tmp_path / "toybox"
    other = tmp_path / "other.yaml"
    other.write_text(TOY_RUN.format(calls=500).replace("environment: toybox", "environment: {kind: toybox, options: "
                                                       "{daemons: 2, link: {rate: 100Mbit}, ready_timeout_s: 30}}"))
    assert dfsbench("lab", "up", str(other), env=toys, timeout=300).returncode == 0
    try:
        refused = dfsbench("run", short, env=toys, timeout=300)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        said = refused.stderr.split("did not have:\n")[1].split("\n  hint:")[0].splitlines()
        assert said == ['  environment.options.daemons: the lab has 2, the config asks for 1',
                        '  environment.options.link.rate: the lab has "100Mbit", the config asks for "1Gbit"']
        assert "lab_dir" in refused.stderr and "backends toyfs" not in refused.stderr  # (no run begun)
        # what changes only how a run uses the lab (a timeout) is no difference
        same = tmp_path / "same.yaml"
        same.write_text(other.read_text().replace("ready_timeout_s: 30", "ready_timeout_s: 99"))
        reused = dfsbench("run", str(same), env=toys, timeout=300)
        assert reused.returncode == 0 and "reusing the running lab" in reused.stderr, reused.stderr
    finally:
        down = dfsbench("lab", "down", "--env", "toybox", env=toys, timeout=300)
    assert down.returncode == 0 and not lab.exists(), down.stderr


def test_a_run_told_to_wait_waits_for_the_lease_within_its_bound(tmp_path, toys):
    short, long = _configs(tmp_path)
    lab = tmp_path / "toybox"
    assert dfsbench("lab", "up", short, env=toys, timeout=300).returncode == 0
    first = _running(long, toys)
    waiting = None
    try:
        lease = _lease_of(lab, first)
        holder = f"{lease['what']} (pid {first.pid}"
        began = time.monotonic()
        bounded = dfsbench("run", short, "--wait", "2", env=toys, timeout=300)
        assert bounded.returncode == 1 and time.monotonic() - began >= 2, bounded.stderr
        assert f"is in use: {holder}" in bounded.stderr and "(still, after waiting 2 s)" in bounded.stderr
        assert "waiting for the lease on the toybox lab, held by " + holder in bounded.stderr

        waiting = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", short, "--wait", "600"],
                                   env={**os.environ, **toys}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        assert waiting.stderr is not None
        said = ""
        while "waiting for the lease" not in said:  # (it says so before it waits)
            line = waiting.stderr.readline()
            assert line, said
            said += line
        code, err = _ended(first, signal.SIGTERM)
        assert code == 128 + signal.SIGTERM, err
        code, err = _ended(waiting)
        assert code == 0 and "reusing the running lab" in err, said + err
    finally:
        for p in (first, waiting):
            if p is not None:
                p.kill()
                p.communicate()
        down = dfsbench("lab", "down", "--env", "toybox", env=toys, timeout=300)
    assert down.returncode == 0 and not lab.exists(), down.stderr
