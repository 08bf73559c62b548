"""A client host reached over SSH (paramiko), as a :class:`~harness.system.hosts.Host`.

Every command is an argv list, quoted once for the remote shell; a tool runs under
coreutils ``timeout`` on the host, so a tool past its deadline is killed where it runs. A
long-running process (a FUSE client, a fio server) writes its pid to a file on the host
and is stopped by that pid. Everything dfsbench puts on the host (the engines, scratch
directories, job files, logs) lives under one directory of its own there, ``root``.

The ledger undoes by running a command on this machine: :meth:`SshHost.wrap` gives one
that runs the argv on the host through this module (``python -m harness.system.ssh``), which
reconnects from the host's :class:`Reach` — its address, user, port and key file, never a
password (a password given as ``${NAME}`` is read again from that variable there).
"""

from __future__ import annotations

import json
import os
import select
import shlex
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.errors import BadInput, DfsbenchError, ToolError
from harness.system import proc, signals
from harness.system.hosts import RemoteHost, copied_name
from harness.system.ledger import Ledger
from harness.system.secret import expand, redact, redact_file, remember

TIMED_OUT = (124, 137)  # coreutils timeout stopped the command, or had to KILL it
# set to "1" in its environment: a command run by ``python -m harness.system.ssh`` may last as
# long as it lasts (an MPI job's daemon), not 600 s
LIFELONG = "DFSBENCH_SSH_LIFELONG"
LIFELONG_S = 30 * 24 * 3600.0


@dataclass(frozen=True)
class Reach:
    """How to reach a host: everything here may be written down (the ledger keeps it);
    ``password`` is the config's reference (``${NAME}``), never a value."""

    host: str
    user: str = "root"
    port: int = 22
    key: str | None = None
    password: str | None = None  # a reference to expand, or None
    host_keys: str = "accept-new"  # or "known": only hosts already in known_hosts
    sudo: bool = False
    name: str | None = None

    @property
    def label(self) -> str:
        return self.name or self.host


class SshHost(RemoteHost):
    """A client machine of an ``existing`` cluster, reached over SSH."""

    def __init__(self, reach: Reach, password: str | None = None, connect_timeout: float = 10) -> None:
        import paramiko

        self.reach = reach
        self.name = reach.label
        self._password = password
        self._root: str | None = None
        self._copied: set[str] = set()  # engine scripts put on the host
        self._ip: str | None = None
        self.client = paramiko.SSHClient()
        self.client.load_system_host_keys()
        if reach.host_keys == "accept-new":
            self.client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        else:
            self.client.set_missing_host_key_policy(paramiko.RejectPolicy())
        where = f"{reach.user}@{reach.host}:{reach.port}"
        try:
            self.client.connect(reach.host, port=reach.port, username=reach.user, key_filename=reach.key,
                                password=password, timeout=connect_timeout, banner_timeout=connect_timeout,
                                auth_timeout=connect_timeout, allow_agent=False, look_for_keys=False)
        except paramiko.AuthenticationException as exc:
            raise BadInput(f"client host {reach.label} ({where}) refused the login: {exc}",
                           hint="check the user, the key (or password) in that client's entry") from None
        except paramiko.SSHException as exc:
            raise BadInput(f"client host {reach.label} ({where}): SSH failed: {exc}",
                           hint="check that sshd runs there and its host key is the one known") from None
        except (OSError, EOFError) as exc:
            raise BadInput(f"client host {reach.label} ({where}) is unreachable: "
                           f"{getattr(exc, 'strerror', None) or exc}",
                           hint="check the address and port, and that sshd runs there") from None
        transport = self.client.get_transport()
        if transport is not None:
            transport.set_keepalive(15)
            # every command is a small request and a small answer: without this, Nagle's
            # algorithm and the peer's delayed ACK add ~40 ms to each (48 ms → 6 ms here)
            transport.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    # ---------------------------------------------------------------- commands

    def _command(self, argv: Sequence[str | os.PathLike[str]], env: Mapping[str, str] | None = None,
                 cwd: Path | None = None) -> str:
        words = [str(a) for a in argv]
        if env:
            words = ["env", *(f"{k}={v}" for k, v in env.items()), *words]
        if self.reach.sudo:
            words = ["sudo", "-n", *words]
        line = shlex.join(words)
        return f"cd {shlex.quote(str(cwd))} && {line}" if cwd is not None else line

    def _exec(self, command: str, *, input: str | None, timeout: float,
              sink: Callable[[bytes, bytes], None]) -> int | None:
        """Run ``command``; hand what it prints to ``sink`` as it comes; its exit code, or
        None past ``timeout`` (the channel is closed; the remote side sees a hangup)."""
        transport = self.client.get_transport()
        if transport is None or not transport.is_active():
            raise DfsbenchError(f"the SSH connection to {self.name} is gone",
                                hint="check the client host and its network")
        channel = transport.open_session(timeout=30)
        try:
            channel.settimeout(0.2)
            channel.exec_command(command)
            if input is not None:
                channel.sendall(input.encode())
            channel.shutdown_write()
            deadline = time.monotonic() + timeout
            while True:
                got = False
                while channel.recv_ready():
                    sink(channel.recv(65536), b"")
                    got = True
                while channel.recv_stderr_ready():
                    sink(b"", channel.recv_stderr(65536))
                    got = True
                if channel.exit_status_ready() and not channel.recv_ready() and not channel.recv_stderr_ready():
                    return channel.recv_exit_status()
                if time.monotonic() > deadline:
                    return None
                signals.check()
                if not got:  # wake on the channel's next event (data or exit), not on a timer
                    select.select([channel], [], [], 0.05)
        finally:
            channel.close()

    def run(self, argv: Sequence[str | os.PathLike[str]], *, timeout: float = 120, check: bool = True,
            env: Mapping[str, str] | None = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
        out, err = bytearray(), bytearray()

        def sink(o: bytes, e: bytes) -> None:
            out.extend(o)
            err.extend(e)

        words = [str(a) for a in argv]
        code = self._exec(self._command(words, env), input=input, timeout=timeout, sink=sink)
        stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
        shown = [f"{self.name}:", *words]
        if code is None:
            raise ToolError(shown, None, redact(stdout), redact(stderr), timed_out=True)
        if code == 127 and "not found" in stderr:
            raise DfsbenchError(f"cannot run {words[0]} on {self.name}: not found")
        if check and code != 0:
            raise ToolError(shown, code, redact(stdout), redact(stderr))
        return subprocess.CompletedProcess(words, code, stdout, stderr)

    def run_tool(self, argv: Sequence[str | os.PathLike[str]], *, deadline: float, output: Path,
                 env: Mapping[str, str] | None = None, cwd: Path | None = None,
                 grace: float = 5.0) -> proc.ToolRun:
        words = [str(a) for a in argv]
        output.parent.mkdir(parents=True, exist_ok=True)
        err_path = output.with_name(output.name + ".stderr")
        output.with_name(output.name + ".argv").write_text(json.dumps([f"{self.name}:", *words]) + "\n")
        start = time.monotonic()
        with open(output, "wb") as out, open(err_path, "wb") as err, \
                self.running_tool(words, deadline, grace) as inner:
            def sink(o: bytes, e: bytes) -> None:
                out.write(o)
                err.write(e)

            code = self._exec(self._command(inner, env, cwd), input=None, timeout=deadline + grace + 30,
                              sink=sink)
        if code in TIMED_OUT:
            code = None  # killed at its deadline, on the host
        redact_file(output)
        redact_file(err_path)
        return proc.ToolRun(words, code, output.read_text(errors="replace"),
                            err_path.read_text(errors="replace"), time.monotonic() - start)

    # ---------------------------------------------------------------- files

    @property
    def root(self) -> str:
        """dfsbench's own directory on the host (see :meth:`claim`)."""
        if self._root is None:
            raise DfsbenchError(f"dfsbench has no directory of its own on {self.name} yet")
        return self._root

    def claim(self, root: Path, ledger: Ledger) -> None:
        """Make ``root`` (one new directory, whose parent exists) dfsbench's own on the host,
        recorded in the ledger so that it goes, with all it holds, when the run ends."""
        made = self.run(["mkdir", "-m", "0700", str(root)], check=False, timeout=30)
        if made.returncode != 0:
            raise DfsbenchError(f"cannot make dfsbench's directory {root} on {self.name}: "
                                f"{made.stderr.strip()[-300:]}")
        self._root = str(root)
        ledger.command(self.wrap(["rm", "-rf", "--one-file-system", str(root)]), f"directory {self.name}:{root}")

    def python(self, script: Path) -> list[str]:
        where = f"{self.root}/{copied_name(script)}"
        if where not in self._copied:
            self.write_text(Path(where), script.read_text())
            self._copied.add(where)
        return ["python3", where]

    def write_text(self, path: Path, text: str) -> None:
        with self.client.open_sftp() as sftp:
            with sftp.open(str(path), "w") as f:
                f.write(text)
            if self.reach.sudo:
                return
            sftp.chmod(str(path), 0o600)

    def scratch(self, here: Path, ledger: Ledger) -> Path:
        where = Path(self.root) / "scratch" / here.parent.name  # the run's id
        self.mkdir(where)
        return where

    # ---------------------------------------------------------------- processes

    def new_pidfile(self) -> str:
        return f"{self.root}/pid-{uuid.uuid4().hex[:10]}"

    def launch(self, argv: Sequence[str], log: Path, pidfile: str) -> None:
        script = (f'log="$1"; shift; mkdir -p "$(dirname "$log")"; echo $$ > {pidfile}; '
                  f'exec "$@" >> "$log" 2>&1')
        inner = shlex.join(["sh", "-c", script, "sh", str(log), *map(str, argv)])
        # setsid and no inherited descriptors: the process outlives this channel
        self.run(["sh", "-c", f"setsid {inner} < /dev/null > /dev/null 2>&1 &"], timeout=30)

    def address(self) -> str:
        if self._ip is None:
            self._ip = socket.gethostbyname(self.reach.host)
        return self._ip

    def drop_caches(self) -> bool:
        self.run(["sync"], timeout=600)
        return self.run(["sh", "-c", "echo 3 > /proc/sys/vm/drop_caches"], check=False).returncode == 0

    def wrap(self, argv: Sequence[str | os.PathLike[str]]) -> list[str]:
        return [sys.executable, "-m", "harness.system.ssh", json.dumps(asdict(self.reach)), "--", *map(str, argv)]

    def close(self) -> None:
        self.client.close()

    # ---------------------------------------------------------------- what it is

    def facts(self) -> dict[str, Any]:
        return {**super().facts(), "address": self.reach.host}


def connect(reach: Reach) -> SshHost:
    """A connection from a :class:`Reach`, its password (if any) read from its reference."""
    password = remember(expand(reach.password)) if reach.password else None
    return SshHost(reach, password)


def main(argv: list[str]) -> int:
    """``python -m harness.system.ssh REACH -- ARGV…``: run ARGV on the host (the ledger's undo)."""
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m harness.system.ssh REACH_JSON -- ARGV...", file=sys.stderr)
        return 2
    # (a daemon of an MPI job, which its launch agent starts so, lives as long as the job:
    # harness.execution.mpi_agent)
    timeout = LIFELONG_S if os.environ.get(LIFELONG) == "1" else 600
    try:
        host = connect(Reach(**json.loads(argv[0])))
        result = host.run(argv[2:], check=False, timeout=timeout)
    except (DfsbenchError, ValueError) as exc:
        print(redact(str(exc)), file=sys.stderr)
        return 255
    sys.stdout.write(redact(result.stdout))
    sys.stderr.write(redact(result.stderr))
    return result.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
