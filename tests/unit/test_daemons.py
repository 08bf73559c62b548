"""The daemons of the API (harness.api.daemons) and the local lab's faults
(environments.local_faults): a daemon in the ledger as it starts, a node's processes found
and started again as they were, only processes of the lab ever signalled, and a daemon
started again during a run left to the lab."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from environments.local_faults import ProcessFaults
from harness.api.daemons import Daemons, free_ports, launch, node_pids, relaunch
from harness.api.faults import FaultSpec
from harness.errors import DfsbenchError
from harness.system import proc
from harness.system.ledger import Ledger

SLEEPER = [sys.executable, "-c", "import time, sys; time.sleep(600)"]


@pytest.fixture
def ledger(tmp_path: Path):
    found = Ledger(tmp_path / "ledger.json")
    yield found
    found.undo(grace_cap=1)


def test_a_daemon_is_in_the_ledger_as_it_starts_and_one_not_installed_is_named(tmp_path, ledger):
    started = launch(ledger, "sleeper", [*SLEEPER, str(tmp_path)], tmp_path / "s.log", node="n1", stage=1)
    entry = next(e for e in ledger.entries if e["kind"] == "process")
    assert (entry["pid"], entry["name"], entry["stage"], entry["launch"]["node"]) == \
        (started.popen.pid, "sleeper", 1, "n1")
    assert entry["launch"]["argv"] == [*SLEEPER, str(tmp_path)] and started.died() is None
    with pytest.raises(DfsbenchError, match="cannot start no-such-daemon: not found"):
        launch(ledger, "missing", ["no-such-daemon"], tmp_path / "m.log")
    assert len([e for e in ledger.entries if e["kind"] == "process"]) == 1


def test_daemons_say_which_one_died_with_its_log(tmp_path, ledger):
    daemons = Daemons(ledger)
    daemons.launch("sleeper", SLEEPER, tmp_path / "s.log")
    assert daemons.died() is None
    daemons.launch("brief", [sys.executable, "-c", "import time; time.sleep(0.3); print('bye'); raise SystemExit(2)"],
                   tmp_path / "b.log")
    proc.wait_for(lambda: (daemons.died() is not None, "running"), what="brief to end", timeout=10)
    assert daemons.died() == "brief exited with code 2: bye"


def test_free_ports_are_distinct():
    ports = free_ports(6)
    assert len(set(ports)) == 6 and all(1024 <= p < 65536 for p in ports)


def test_a_node_is_started_again_as_it_was_and_only_once_it_is_gone(tmp_path, ledger):
    launch(ledger, "server", [*SLEEPER, str(tmp_path)], tmp_path / "s.log", node="n1", grace=2, stage=2,
           cwd=tmp_path, env={"DFSBENCH_TEST_MARK": "1"})
    first = node_pids(ledger, "n1")
    assert len(first) == 1 and node_pids(ledger, "n2") == []
    with pytest.raises(DfsbenchError, match="still runs"):
        relaunch(ledger, "n1", 10)
    os.kill(first[0], signal.SIGKILL)
    proc.wait_for(lambda: (not node_pids(ledger, "n1"), "running"), what="n1 to die", timeout=10)
    relaunch(ledger, "n1", 10)
    second = node_pids(ledger, "n1")
    assert len(second) == 1 and second != first
    entries = [e for e in ledger.entries if e["kind"] == "process"]
    assert len(entries) == 1 and (entries[0]["grace"], entries[0]["stage"]) == (2, 2)
    assert Path(f"/proc/{second[0]}/cwd").resolve() == tmp_path.resolve()
    assert b"DFSBENCH_TEST_MARK=1" in Path(f"/proc/{second[0]}/environ").read_bytes()
    with pytest.raises(DfsbenchError, match="names no process of node 'n9'"):
        relaunch(ledger, "n9", 10)


def test_a_daemon_started_again_during_a_run_is_the_labs_not_the_runs(tmp_path, ledger):
    before = ledger.ids()
    ledger.tree(tmp_path / "run-files")
    with ledger.capture() as captured, ledger.the_labs():
        launch(ledger, "server", SLEEPER, tmp_path / "s.log", node="n1")
    assert captured == set()
    run_only = ledger.since(before)
    assert len(run_only) == 1 and next(e for e in ledger.entries if e["id"] in run_only)["kind"] == "tree"
    with ledger.capture() as captured:  # (outside the block, a capture takes what is added again)
        launch(ledger, "tool", SLEEPER, tmp_path / "t.log")
    assert len(captured) == 1


def _lab_system(tmp_path: Path, ledger: Ledger) -> tuple[ProcessFaults, Path]:
    """A system of the local lab whose one node is a process under its root."""
    from harness.api.systems import LocalFaults

    root = tmp_path / "sys"
    root.mkdir()

    class One(LocalFaults):
        local_gateways = ("gw",)

        def start_processes(self, offer):  # (not asked here)
            raise AssertionError

        def local_nodes(self, service):
            return ["n1", "n2"]

        def local_health(self, service):
            return bool(node_pids(ledger, "n2")), "asked"

    for node in ("n1", "n2"):
        started = launch(ledger, node, [*SLEEPER, str(root / node)], root / f"{node}.log", node=node)
        # (until it has exec'd, a child's command line is its parent's)
        proc.wait_for(lambda: (str(root) in " ".join(proc.cmdline(started.popen.pid)), "not yet"),
                      what=f"{node} to run", timeout=10, interval=0.01)
    return ProcessFaults({"one": One()}, {"one": object()}, ledger, 10), root


def test_the_local_lab_kills_the_second_node_by_default_and_brings_it_back(tmp_path, ledger):
    faults, _ = _lab_system(tmp_path, ledger)
    first = node_pids(ledger, "n2")
    injected = faults.inject("one", FaultSpec(action="kill", after_s=1))
    assert injected.node == "n2" and injected.description == "n2 killed"
    proc.wait_for(lambda: (not node_pids(ledger, "n2"), "running"), what="n2 to die", timeout=10)
    assert faults.health("one") == (False, "asked") and node_pids(ledger, "n1")
    injected.restore()
    assert node_pids(ledger, "n2") and node_pids(ledger, "n2") != first and faults.health("one")[0]


def test_a_pause_freezes_the_process_and_its_restore_lets_it_run(tmp_path, ledger):
    faults, _ = _lab_system(tmp_path, ledger)
    pid = node_pids(ledger, "n1")[0]
    injected = faults.inject("one", FaultSpec(action="pause", after_s=1, node="n1"))

    def state() -> str:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]

    proc.wait_for(lambda: (state() == "T", state()), what="n1 to stop", timeout=10)
    injected.restore()
    proc.wait_for(lambda: (state() in ("S", "R"), state()), what="n1 to run", timeout=10)
    assert node_pids(ledger, "n1") == [pid]


def test_only_a_process_of_the_lab_is_signalled_and_an_unknown_node_is_named(tmp_path, ledger):
    faults, root = _lab_system(tmp_path, ledger)
    with pytest.raises(DfsbenchError, match="fault node 'n7' is not a one node of the local lab") as e:
        faults.inject("one", FaultSpec(action="kill", after_s=1, node="n7"))
    assert e.value.hint == "its nodes: n1, n2 (and gw, a gateway, while an attachment runs one)"
    # a process the system names that the lab's ledger does not hold — whatever its command
    # line names (here: the lab's own directory and a node's log) — is never signalled
    stranger = proc.spawn([*SLEEPER, str(root), str(root / "n1.log")], tmp_path / "stranger.log")
    try:
        class Liar(type(faults.systems["one"])):  # type: ignore[misc]
            def local_pids(self, service, node, ledger):
                return [stranger.pid]

        faults.systems["one"] = Liar()
        with pytest.raises(DfsbenchError, match="runs no process the lab's ledger holds"):
            faults.inject("one", FaultSpec(action="kill", after_s=1))
        time.sleep(0.1)
        assert stranger.poll() is None  # (untouched)
        # one the ledger held, gone since: its pid taken by another is not it
        gone = node_pids(ledger, "n1")[0]
        os.kill(gone, signal.SIGKILL)
        proc.wait_for(lambda: (not node_pids(ledger, "n1"), "running"), what="n1 to die", timeout=10)

        class Late(type(faults.systems["one"])):  # type: ignore[misc]
            def local_pids(self, service, node, ledger):
                return [gone]

        faults.systems["one"] = Late()
        with pytest.raises(DfsbenchError, match="runs no process the lab's ledger holds"):
            faults.inject("one", FaultSpec(action="kill", after_s=1, node="n1"))
    finally:
        stranger.kill()
        stranger.wait()
    with pytest.raises(DfsbenchError, match="cannot fault ghost"):
        faults.inject("ghost", FaultSpec(action="kill", after_s=1))


def _gateway(port: int) -> list[str]:
    """A process that answers an anonymous GET with 200 once it serves, as a gateway does."""
    return [sys.executable, "-c", "import http.server as h\n"
            "class H(h.BaseHTTPRequestHandler):\n"
            "    def do_GET(self):\n"
            "        self.send_response(200); self.send_header('Content-Length', '0'); self.end_headers()\n"
            "    def log_message(self, *a): pass\n"
            f"h.ThreadingHTTPServer(('127.0.0.1', {port}), H).serve_forever()\n"]


def test_a_gateway_is_faulted_by_that_name_stores_no_data_and_is_whole_only_once_it_answers(tmp_path, ledger):
    """'gateway' names the system's gateway where one runs (never the default node); the
    cluster cannot notice it (said so); after its restart the system is whole only once the
    gateway runs and answers as it did when it served; its end stops the one a restore started."""
    from harness.api.daemons import answers, stop_node

    faults, _ = _lab_system(tmp_path, ledger)
    with pytest.raises(DfsbenchError) as none_yet:  # (no gateway runs: not a node to name)
        faults.inject("one", FaultSpec(action="kill", after_s=1, node="gateway"))
    assert "gw, a gateway, while an attachment runs one" in str(none_yet.value.hint)
    port = free_ports(1)[0]
    probe = (f"http://127.0.0.1:{port}/", 200)
    launch(ledger, "gateway", _gateway(port), tmp_path / "gw.log", node="gw", probe=probe)
    proc.wait_for(lambda: answers(*probe), what="the gateway to serve", timeout=20, interval=0.05)
    assert answers(probe[0], 403)[0] is False  # (an answer other than the one it gave when it served)
    first = node_pids(ledger, "gw")
    injected = faults.inject("one", FaultSpec(action="kill", after_s=1, node="gateway"))
    assert (injected.node, injected.stores_data, injected.description) == ("gw", False, "gw killed")
    shown, said = faults.noticed("one", injected)
    assert shown is None and "gateway" in said
    proc.wait_for(lambda: (not node_pids(ledger, "gw"), "running"), what="gw to die", timeout=10)
    healthy, said = faults.health("one")
    assert not healthy and "runs no process" in said
    injected.restore()
    proc.wait_for(lambda: faults.health("one"), what="the gateway back", timeout=20, interval=0.05)
    assert "answers at 127.0.0.1" in faults.health("one")[1] and node_pids(ledger, "gw") != first
    stop_node(ledger, "gw")
    assert not node_pids(ledger, "gw") and not answers(*probe)[0]


def test_a_probe_is_a_url_of_this_hosts_loopback_only(tmp_path, ledger):
    from harness.api.daemons import answers

    with pytest.raises(DfsbenchError, match="loopback"):
        launch(ledger, "gateway", SLEEPER, tmp_path / "gw.log", node="gw", probe=("http://192.0.2.1:80/", 200))
    assert answers("http://192.0.2.1/", 200) == (False, "not a URL of this host's loopback: 'http://192.0.2.1/'")


def test_a_pid_files_stop_kills_its_process_only_and_a_stale_one_goes(tmp_path):
    """The stop command of a process started elsewhere (a gateway in a lab's node, a FUSE
    client on an SSH host): its process ends and its pid file goes; a pid file whose process
    ended already goes too (else it would name a pid the system may give another process);
    one that holds no pid — '-1' would signal every process — kills nothing."""
    import subprocess

    from harness.system.hosts import stop_script

    pidfile = tmp_path / "p.pid"
    child = subprocess.Popen(["sleep", "60"])
    try:
        pidfile.write_text(f"{child.pid}\n")
        subprocess.run(["sh", "-c", stop_script(str(pidfile), 1.0)], check=True, timeout=30)
        assert child.wait(timeout=10) != 0 and not pidfile.exists()
    finally:
        child.kill()
    pidfile.write_text(f"{child.pid}\n")  # (it ended: the file is stale)
    subprocess.run(["sh", "-c", stop_script(str(pidfile), 1.0)], check=True, timeout=30)
    assert not pidfile.exists()
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        for hostile in ("-1", "0", f"{bystander.pid} -9 1", ""):
            pidfile.write_text(hostile)
            subprocess.run(["sh", "-c", stop_script(str(pidfile), 1.0)], check=True, timeout=30)
            assert bystander.poll() is None, hostile
    finally:
        bystander.kill()
        bystander.wait()
