import secrets
import subprocess
from pathlib import Path

import pytest

from harness.api.mounts import FuseClient, Workspace, verify_mount
from harness.errors import DfsbenchError, NotReady
from harness.system import proc
from harness.system.hosts import LOCAL, RemoteHost
from harness.system.ledger import Ledger


def test_a_plain_directory_is_refused_as_a_mount(tmp_path):
    with pytest.raises(DfsbenchError) as err:
        verify_mount(tmp_path, "fuse.ceph-fuse")
    assert "not a mount point" in str(err.value)
    assert "local disk" in str(err.value)


def test_a_mount_of_another_type_is_refused():
    with pytest.raises(DfsbenchError) as err:
        verify_mount(__import__("pathlib").Path("/proc"), "fuse.glusterfs")
    assert "mounted as 'proc'" in str(err.value)


class ElsewhereHost(RemoteHost):
    """This machine reached as another host is (by commands and pid files), with files of
    its own: a path under ``/node9`` is one of that host, kept under ``root`` here, and
    this machine has none of them — as a lab's node or an SSH client host."""

    name = "node9"

    def __init__(self, root: Path) -> None:
        self.root = root

    def there(self, word) -> str:
        word = str(word)
        return str(self.root / word[1:]) if word.startswith("/node9/") else word

    def run(self, argv, *, timeout=120, check=True, env=None, input=None):
        return proc.run([self.there(a) for a in argv], timeout=timeout, check=check, env=env, input=input)

    def new_pidfile(self) -> str:
        return f"/node9/pid-{secrets.token_hex(4)}"

    def launch(self, argv, log, pidfile) -> None:
        Path(self.there(log)).parent.mkdir(parents=True, exist_ok=True)
        script = f'log="$1"; shift; echo $$ > {self.there(pidfile)}; exec "$@" >> "$log" 2>&1'
        subprocess.Popen(["sh", "-c", script, "sh", self.there(log), *map(self.there, argv)],
                         start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)

    def wrap(self, argv):
        return [self.there(a) for a in argv]

    def address(self) -> str:
        return "127.0.0.1"

    def run_tool(self, *args, **kwargs):
        raise AssertionError("not a tool host")

    python = scratch = drop_caches = run_tool


def test_a_fuse_client_that_exits_on_another_host_says_what_it_printed_there_once(tmp_path):
    # (a lab's node is removed with its files when the run ends: what the client said is
    # read there while the mount is awaited, or never)
    host = ElsewhereHost(tmp_path)
    ledger = Ledger(tmp_path / "ledger.json")
    said = "Mount fail: fusermount: mount point is itself on a FUSE volume"
    client = FuseClient(ledger, tmp_path / "mnt", ["sh", "-c", f"echo '{said}' >&2; exit 1"], "fuse.seaweedfs",
                        Path("/node9/log/client.log"), timeout=20, host=host)
    with pytest.raises(NotReady) as err:
        client.mount()
    text = str(err.value)
    assert "the process exited" in text and "node9:/node9/log/client.log" in text
    assert text.count(said) == 1, text
    assert host.mount_entry(tmp_path / "mnt") is None and ledger.entries == [], "the failed mount was not undone"


def test_a_process_on_another_host_that_said_nothing_says_so(tmp_path):
    host = ElsewhereHost(tmp_path)
    started = host.spawn(["true"], Path("/node9/quiet.log"))
    proc.wait_for(lambda: (started.died() is not None, "running"), what="true to end", timeout=10)
    assert started.died() == "the process exited (its log, node9:/node9/quiet.log, is empty)"


def test_a_fuse_client_on_another_host_that_never_mounts_is_waited_out_with_its_log_read_there(tmp_path):
    host = ElsewhereHost(tmp_path)
    ledger = Ledger(tmp_path / "ledger.json")
    client = FuseClient(ledger, tmp_path / "mnt", ["sh", "-c", "echo 'filer 10.0.0.9:8888 does not answer' >&2; "
                                                   "exec sleep 60"], "fuse.x", Path("/node9/log/client.log"),
                        timeout=1, host=host)
    with pytest.raises(NotReady) as err:
        client.mount()
    assert "filer 10.0.0.9:8888 does not answer" in str(err.value)
    assert ledger.entries == [], "the client that never mounted was left running"


def test_what_another_host_could_not_give_is_not_said_to_be_empty_and_its_escapes_are_not_passed_on(tmp_path):
    host = ElsewhereHost(tmp_path)
    started = host.spawn(["sh", "-c", "printf 'ok\\033[2J\\033]0;owned\\007 done\\n'"], Path("/node9/said.log"))
    proc.wait_for(lambda: (started.pid() is not None and not started.running(), "running"), what="sh", timeout=10)
    said = started.died()
    assert said is not None and "ok?[2J?]0;owned? done" in said and "\033" not in said
    (tmp_path / "node9" / "said.log").unlink()  # (gone with its host, say)
    assert started.died().endswith("could not be read there)")


def test_a_workspace_is_recorded_before_it_is_made_and_only_a_made_one_is_removed(tmp_path):
    ledger = Ledger(tmp_path / "ledger.json")
    space = Workspace(ledger, (LOCAL,), tmp_path, "default")
    assert space.path.parent == tmp_path and space.path.name.startswith("dfsbench-default-")
    space.path.mkdir()  # (not its own: one of that name it did not make)
    space.remove()
    assert space.path.is_dir() and ledger.entries == [], "a workspace never made removed something"
    space.path.rmdir()
    space.make()
    assert space.path.is_dir()
    assert [(e["kind"], e["when"]) for e in Ledger.open(ledger.path).entries] == [("command", "first")]
    (space.path / "file").write_text("written by a workload")
    space.remove()
    assert not space.path.exists() and Ledger.open(ledger.path).entries == []
