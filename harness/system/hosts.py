"""Where a target's client runs: this machine, or a client node of a lab (a container).

Backends mount through a host and workloads run their tools through it, so the same
workload code measures a mount on this machine or one inside a container: the paths a
target hands out are the host's paths, and every command on them goes through the host.
Raw outputs are always written here, next to the run.

:class:`LocalHost` is this machine. Environments with client nodes provide their own
(``environments.nodes.Node``).
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from harness.errors import DfsbenchError, Hung
from harness.system import proc, signals
from harness.system.ledger import Ledger, read_mounts, tool_started

T = TypeVar("T")


@dataclass(frozen=True)
class MountEntry:
    source: str
    path: str
    fstype: str
    options: str


def newest_mount(rows: Sequence[Sequence[str]], path: str) -> MountEntry | None:
    """The last (topmost) entry of /proc/mounts rows for exactly this mount point."""
    found = None
    for row in rows:
        if len(row) >= 4 and row[1] == path:
            found = MountEntry(row[0], row[1], row[2], row[3])
    return found


class Running(ABC):
    """A process started on a host with :meth:`Host.spawn`."""

    @abstractmethod
    def died(self) -> str | None:
        """Why it is gone, or None while it runs."""

    @abstractmethod
    def output(self) -> str:
        """What it has printed so far."""

    @abstractmethod
    def stop(self, grace: float = 3) -> None:
        """TERM, then KILL after ``grace`` seconds."""


def stop_script(pidfile: str, grace: float) -> str:
    """Shell: TERM the process of a pid file, KILL it after ``grace`` s; succeed if it is gone."""
    return (f'p=$(cat {pidfile} 2>/dev/null) || exit 0; case "$p" in ""|0|*[!0-9]*) exit 0;; esac; '
            f'kill $p 2>/dev/null || {{ rm -f {pidfile}; exit 0; }}; '
            f'i=0; while kill -0 $p 2>/dev/null && [ $i -lt {max(1, int(grace * 10))} ]; do sleep 0.1; '
            f'i=$((i+1)); done; kill -9 $p 2>/dev/null; rm -f {pidfile}; exit 0')


class PidfileProcess(Running):
    """A process started on another host (a lab's node, an SSH client host) that wrote its
    pid to a file there: checked and stopped by that pid, through the host."""

    def __init__(self, host: Host, pidfile: str, log: Path) -> None:
        self.host, self.pidfile, self.log = host, pidfile, log

    def pid(self) -> int | None:
        out = self.host.run(["cat", self.pidfile], check=False, timeout=30)
        return int(out.stdout) if out.returncode == 0 and out.stdout.strip().isdigit() else None

    def running(self) -> bool:
        pid = self.pid()
        return pid is not None and self.host.run(["kill", "-0", str(pid)], check=False, timeout=30).returncode == 0

    def died(self) -> str | None:
        if self.running():
            return None
        # what it said last, read on its host now: the host (a lab's container) may be gone
        # by the time anyone looks for the file
        said = self.host.tail(self.log)
        return f"the process exited (its log, {self.host.name}:{self.log}" + \
            (", could not be read there)" if said is None else f", ends:\n{said})" if said else ", is empty)")

    def output(self) -> str:
        return self.host.run(["cat", str(self.log)], check=False, timeout=30).stdout

    def stop(self, grace: float = 3) -> None:
        self.host.run(["sh", "-c", stop_script(self.pidfile, grace)], check=False, timeout=grace + 30)
        deadline = time.monotonic() + grace + 5
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.1)


class Host(ABC):
    """A machine a client runs on, as backends and workloads use it."""

    name: str
    local: bool = False

    @property
    def label(self) -> str:
        """How records and tables name the host (stable across labs)."""
        return self.name

    @property
    def machine(self) -> Host:
        """The host itself: what one of several ranks on it stands for
        (``harness.execution.ranks.RankHost``) is that host's."""
        return self

    def shared(self, key: str, do: Callable[[], T]) -> T:
        """``do()``, which changes the host for everything running there (a remount, a
        cache drop): where several ranks run on the host, the first rank to come to it does
        it and the others get its outcome (``harness.execution.ranks.RankHost``)."""
        return do()

    @abstractmethod
    def run(self, argv: Sequence[str | os.PathLike[str]], *, timeout: float = 120, check: bool = True,
            env: Mapping[str, str] | None = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run a command to completion (see :func:`harness.system.proc.run`)."""

    @abstractmethod
    def run_tool(self, argv: Sequence[str | os.PathLike[str]], *, deadline: float, output: Path,
                 env: Mapping[str, str] | None = None, cwd: Path | None = None,
                 grace: float = 5.0) -> proc.ToolRun:
        """Run a measuring tool with a deadline, its output kept in ``output`` (here)."""

    @abstractmethod
    def python(self, script: Path) -> list[str]:
        """The argv prefix that runs ``script`` (a file of this machine, a stdlib-only
        Python engine) with the host's Python 3: copied there first where it must be."""

    @abstractmethod
    def scratch(self, here: Path, ledger: Ledger) -> Path:
        """A directory of this host for a run's scratch files (``here`` on this machine,
        which the run removes), recorded in the ledger where it is not."""

    def tail(self, path: Path, lines: int = 15) -> str | None:
        """The last lines of a text file of this host (:func:`proc.last_lines`); None where
        it could not be read (not there, or the host did not answer)."""
        try:
            got = self.run(["tail", "-c", str(proc.LOG_TAIL_BYTES), str(path)], check=False, timeout=30)
        except DfsbenchError:
            return None
        return proc.last_lines(got.stdout, lines) if got.returncode == 0 else None

    @abstractmethod
    def start_daemon(self, argv: list[str], log: Path, ledger: Ledger, what: str,
                     grace: float) -> tuple[int | None, Callable[[], str | None]]:
        """Start a long-running client (a FUSE daemon) and record it in the ledger;
        returns its pid on the host and a check that says why it died, or None while it
        runs."""

    @abstractmethod
    def spawn(self, argv: Sequence[str], log: Path) -> Running:
        """A long-running helper (a fio server) for the length of a workload; ``log`` is a
        path of this host."""

    @abstractmethod
    def address(self) -> str:
        """The IPv4 address this machine reaches the host at."""

    def listening(self, address: str, port: int) -> bool:
        return proc.tcp_listening(address, port, self.run(["cat", "/proc/net/tcp"], timeout=30).stdout)

    @abstractmethod
    def record_mount(self, ledger: Ledger, path: Path) -> None:
        """Record a mount point on this host in the ledger, to be unmounted on undo."""

    @abstractmethod
    def drop_caches(self) -> bool:
        """sync, then drop the kernel's page cache; whether it could be dropped."""

    @abstractmethod
    def wrap(self, argv: Sequence[str | os.PathLike[str]]) -> list[str]:
        """The argv that runs ``argv`` on this host from this machine (for the ledger's
        undo commands)."""

    def close(self) -> None:
        """Let go of the connection to the host, if there is one."""

    # seconds this host's clock is ahead of this machine's (None: not measured yet); a host
    # that shares this machine's kernel (a container) has the same clock
    clock_offset: float | None = None
    # it reads this machine's clock itself (this machine, a container of it): no offset to
    # measure, none to be wrong by
    clock_shared: bool = False

    def here(self, t: float) -> float:
        """A time this host's clock gave (seconds since the epoch) on this machine's clock,
        the one every record's ``started`` and ``ended`` are on."""
        if self.clock_offset is None:
            self.facts()  # (which measures it)
        return t - (self.clock_offset or 0.0)

    def facts(self) -> dict[str, Any]:
        """Kernel, CPUs, memory, hostname, and the clock's offset from this machine's
        (their difference at the midpoint of the call; a large one skews the common start
        of several clients)."""
        before = time.time()
        out = self.run(["sh", "-c", "date +%s.%N; uname -r; nproc; head -1 /proc/meminfo; hostname"],
                       timeout=30).stdout.split("\n")
        after = time.time()
        remote = float(out[0])
        if self.clock_offset is None:
            self.clock_offset = remote - (before + after) / 2
        return {"host": self.label, "kernel": out[1].strip(), "cpus": int(out[2]),
                "memory": int(out[3].split()[1]) * 1024, "hostname": out[4].strip(),
                "clock_offset_s": round(remote - (before + after) / 2, 4),
                "round_trip_s": round(after - before, 4)}

    # ---------------------------------------------------------------- on top of run

    def has(self, tool: str) -> bool:
        return self.run(["sh", "-c", f"command -v {tool}"], check=False, timeout=30).returncode == 0

    def require(self, tool: str, package: str) -> None:
        """Raise an error naming the package when the tool is missing on this host."""
        if not self.has(tool):
            raise DfsbenchError(f"'{tool}' is not installed on {self.name}",
                                hint=f"install the Debian package '{package}' there")

    def mounts(self) -> list[list[str]]:
        text = self.run(["cat", "/proc/mounts"], timeout=30).stdout
        return [line.split()[:4] for line in text.splitlines() if line.strip()]

    def mount_entry(self, path: Path) -> MountEntry | None:
        return newest_mount(self.mounts(), str(path))

    def device_of(self, path: Path) -> int:
        return int(self.run(["stat", "-c", "%d", str(path)], timeout=30).stdout.strip())

    def capacity(self, path: Path) -> int:
        """Total blocks of the file system at ``path`` (0: a dead or empty mount)."""
        return int(self.run(["stat", "-f", "-c", "%b", str(path)], timeout=30).stdout.strip())

    def free_bytes(self, path: Path) -> int:
        """Bytes an unprivileged writer may still write at ``path``."""
        avail, block = self.run(["stat", "-f", "-c", "%a %S", str(path)], timeout=30).stdout.split()
        return int(avail) * int(block)

    def mkdir(self, path: Path) -> None:
        self.run(["mkdir", "-p", str(path)], timeout=60)

    def answers(self, path: Path, within: float = 10) -> str | None:
        """None if the file system holding ``path`` answers (statfs) within ``within``
        seconds; else what is wrong. A hung or stopped client blocks every operation there:
        the probe is what waits, and is killed, not dfsbench."""
        probe = self.run(["timeout", "-k", "2", f"{within:g}", "stat", "-f", "-c", "%T", str(path)],
                         check=False, timeout=within + 30)
        if probe.returncode in (124, 137, -9):  # TERM at the deadline, or KILL (of the group) after it
            return f"did not answer within {within:g} s: its client is hung or stopped"
        if probe.returncode != 0:
            return f"is gone: {(probe.stderr.strip() or f'stat exits {probe.returncode}')[-300:]}"
        return None

    def remove(self, *paths: Path, timeout: float = 600) -> None:
        """rm -rf, on one file system only; what cannot be removed is an error (also a file
        system that does not answer: its files are left to the teardown, not waited on)."""
        if not paths:
            return
        wrong = self.answers(paths[0].parent)
        if wrong:
            raise DfsbenchError(f"{paths[0].parent} {wrong}: {', '.join(p.name for p in paths)} not removed "
                                "(the teardown tries again)")
        self.run(["rm", "-rf", "--one-file-system", *map(str, paths)], timeout=timeout)

    @contextmanager
    def removing(self, *paths: Path) -> Iterator[None]:
        """``paths`` removed when the block ends. When the block failed and the removal
        fails too (a client that hung), the block's error is the one reported."""
        try:
            yield
        except BaseException:
            try:
                self.remove(*paths)
            except DfsbenchError:
                pass
            raise
        self.remove(*paths)

    def write_text(self, path: Path, text: str) -> None:
        self.run(["sh", "-c", 'cat > "$1"', "sh", str(path)], input=text, timeout=60)

    def setxattr(self, path: Path, name: str, value: str) -> None:
        self.run(["setfattr", "-n", name, "-v", value, str(path)], timeout=60)

    def put(self, file: Path, directory: Path) -> Path:
        """A file of this machine (a job file kept with the run) where this host's tools
        can read it: copied into ``directory`` of the host, or as it is here."""
        where = directory / file.name
        self.write_text(where, file.read_text())
        return where

    def gate(self, jobs: int) -> str | None:
        """A shell command that each of the ``jobs`` jobs of the measuring tool this host runs
        next in a timed phase runs right before its timed I/O (fio's ``exec_prerun``), and
        that returns once every client of the phase may start: its tools are set up before
        the clients start together, not started then. None: the tool starts its I/O as soon
        as it can (a rank of an MPI job has one: ``harness.execution.ranks``)."""
        return None

    def engine(self, script: Path, name: str, args: dict[str, Any], *, deadline: float,
               output: Path) -> dict[str, Any]:
        """Run the engine ``name`` of a workload's engine script on this host: the script
        runs on a Python 3 without dfsbench (only the standard library), as
        ``python3 SCRIPT NAME 'JSON ARGUMENTS'``, prints one JSON object, ``{"error": …}``
        and exits 1 when it fails, and exits :data:`ENGINE_HUNG` when it passed a deadline
        of its own (its workers killed). Its JSON result is kept in ``output``; past
        ``deadline`` plus 5 s any engine is killed. Either way :class:`Hung`."""
        result = self.run_tool([*self.python(script), name, json.dumps(args)], deadline=deadline + 5,
                               output=output)
        what = f"{name} engine on {self.name}"
        if result.hung or result.returncode == ENGINE_HUNG:
            raise Hung(f"{what} passed its deadline of {deadline:.0f} s and was killed" +
                       (f": {_error(result.output)}" if result.output.strip() else ""),
                       hint="check the client (a stopped or dead FUSE daemon blocks every call), "
                            "or raise the workload's deadline_s")
        if not result.ok:
            raise DfsbenchError(_error(result.output) or result.problem())
        try:
            answer: dict[str, Any] = json.loads(result.output)
        except json.JSONDecodeError:
            raise DfsbenchError(f"{what} printed no result", hint=f"its output is kept in {output}") from None
        return answer

    def __str__(self) -> str:
        return self.name


# the exit code by which an engine says it passed its own deadline (and killed its workers)
ENGINE_HUNG = 3


def this_machine() -> dict[str, Any]:
    """Hostname, kernel, architecture, CPUs, memory (bytes) and Python of this machine."""
    uname = platform.uname()
    mem = 0
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) * 1024
    except OSError:
        pass
    return {"hostname": uname.node, "kernel": uname.release, "machine": uname.machine,
            "cpus": os.cpu_count(), "memory": mem, "python": platform.python_version()}


def _error(output: str) -> str:
    try:
        return str(json.loads(output).get("error", ""))
    except (json.JSONDecodeError, AttributeError):
        return output.strip()[-500:]


class LocalHost(Host):
    """This machine."""

    name = "this host"
    local = True
    clock_offset = 0.0
    clock_shared = True

    def run(self, argv: Sequence[str | os.PathLike[str]], *, timeout: float = 120, check: bool = True,
            env: Mapping[str, str] | None = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return proc.run(argv, timeout=timeout, check=check, env=env, input=input)

    def tail(self, path: Path, lines: int = 15) -> str | None:
        return proc.log_tail(path, lines) if path.is_file() else None

    def run_tool(self, argv: Sequence[str | os.PathLike[str]], *, deadline: float, output: Path,
                 env: Mapping[str, str] | None = None, cwd: Path | None = None,
                 grace: float = 5.0) -> proc.ToolRun:
        what = f"{os.path.basename(str(argv[0]))} (a measuring tool)"
        return proc.run_tool(argv, deadline=deadline, output=output, env=env, cwd=cwd, grace=grace,
                             started=lambda pid: tool_started(what, pid=pid))

    def wrap(self, argv: Sequence[str | os.PathLike[str]]) -> list[str]:
        return [str(a) for a in argv]

    def python(self, script: Path) -> list[str]:
        return [sys.executable, str(script)]

    def scratch(self, here: Path, ledger: Ledger) -> Path:
        here.mkdir(parents=True, exist_ok=True)
        return here

    def has(self, tool: str) -> bool:
        import shutil
        return shutil.which(tool) is not None

    def mounts(self) -> list[list[str]]:
        return [list(row) for row in read_mounts()]

    def device_of(self, path: Path) -> int:
        return os.stat(path).st_dev

    def capacity(self, path: Path) -> int:
        return os.statvfs(path).f_blocks

    def free_bytes(self, path: Path) -> int:
        st = os.statvfs(path)
        return st.f_bavail * st.f_frsize

    def mkdir(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)

    def write_text(self, path: Path, text: str) -> None:
        path.write_text(text)

    def put(self, file: Path, directory: Path) -> Path:
        return file

    def setxattr(self, path: Path, name: str, value: str) -> None:
        os.setxattr(path, name, value.encode())

    def start_daemon(self, argv: list[str], log: Path, ledger: Ledger, what: str,
                     grace: float) -> tuple[int | None, Callable[[], str | None]]:
        child = proc.spawn(argv, log)
        ledger.process(child.pid, what, grace=grace)
        return child.pid, lambda: None if child.poll() is None else f"the client exited with code {child.returncode}"

    def record_mount(self, ledger: Ledger, path: Path) -> None:
        ledger.mount(path)

    def spawn(self, argv: Sequence[str], log: Path) -> Running:
        return LocalProcess(proc.spawn(argv, log), log)

    def address(self) -> str:
        return "127.0.0.1"

    def listening(self, address: str, port: int) -> bool:
        return proc.tcp_listening(address, port)

    def drop_caches(self) -> bool:
        os.sync()
        try:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
        except OSError:  # not root
            return False
        return True

    def facts(self) -> dict[str, Any]:
        here = this_machine()
        return {"host": self.label, "kernel": here["kernel"], "cpus": here["cpus"], "memory": here["memory"],
                "hostname": here["hostname"], "clock_offset_s": 0.0}


LOCAL = LocalHost()


class LocalProcess(Running):
    def __init__(self, child: subprocess.Popen[bytes], log: Path) -> None:
        self.child, self.log = child, log
        self.ident = proc.ProcessId.of(child.pid)

    def died(self) -> str | None:
        return None if self.child.poll() is None else f"it exited with code {self.child.returncode}"

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self, grace: float = 3) -> None:
        if self.ident is not None:
            proc.stop([(self.ident, grace)])


def copied_name(script: Path) -> str:
    """The name a script is copied under on another host: two scripts of one name (a
    plugin's ``engines.py`` beside the built-in one) never stand for each other."""
    import hashlib

    return f"{hashlib.sha256(str(script.resolve()).encode()).hexdigest()[:10]}-{script.name}"


class RemoteHost(Host):
    """A host reached from here (a lab's node, an SSH client host): its long-running
    processes are known by pid files there, and the ledger undoes them, and its mounts,
    by commands run through :meth:`Host.wrap`."""

    @abstractmethod
    def new_pidfile(self) -> str:
        """A fresh path on the host for a process's pid file."""

    @abstractmethod
    def launch(self, argv: Sequence[str], log: Path, pidfile: str) -> None:
        """Start ``argv`` on the host so that it outlives this call, its pid in ``pidfile``
        and its output appended to ``log`` (a path of the host)."""

    def spawn(self, argv: Sequence[str], log: Path, pidfile: str | None = None) -> PidfileProcess:
        """A long-running process on the host, its pid in a file there."""
        started = PidfileProcess(self, pidfile or self.new_pidfile(), log)
        self.launch(argv, log, started.pidfile)
        proc.wait_for(lambda: (started.pid() is not None, "no pid yet"), what=f"{argv[0]} to start on {self.name}",
                      timeout=30, interval=0.05)
        return started

    def start_daemon(self, argv: list[str], log: Path, ledger: Ledger, what: str,
                     grace: float) -> tuple[int | None, Callable[[], str | None]]:
        # its stop goes into the ledger before it starts: a crash in between leaves nothing
        # unknown (the stop of a pid file never written does nothing)
        pidfile = self.new_pidfile()
        ledger.command(self.wrap(["sh", "-c", stop_script(pidfile, grace)]), f"{what} on {self.name}")
        started = self.spawn(argv, log, pidfile)
        return started.pid(), started.died

    def timed(self, argv: Sequence[str | os.PathLike[str]], deadline: float, grace: float) -> tuple[list[str], str]:
        """``argv`` under coreutils ``timeout`` (killed where it runs past ``deadline``),
        and the pid file on the host that names it while it runs (see :meth:`abandon`)."""
        pidfile = self.new_pidfile()
        script = f'echo $$ > {pidfile}; exec timeout -k {grace:g}s {deadline:g}s "$@"'
        return ["sh", "-c", script, "sh", *map(str, argv)], pidfile

    @contextmanager
    def running_tool(self, argv: Sequence[str | os.PathLike[str]], deadline: float,
                     grace: float) -> Iterator[list[str]]:
        """``argv`` made :meth:`timed`, for the block that runs it: recorded in the run's
        ledger while it runs (a dfsbench killed with -9 leaves it to ``lab down``), and
        stopped on the host if the block is left by an interrupt."""
        inner, pidfile = self.timed(argv, deadline, grace)
        ended = tool_started(f"{os.path.basename(str(argv[0]))} on {self.name}",
                             stop=self.wrap(["sh", "-c", stop_script(pidfile, grace)]))
        try:
            yield inner
        except BaseException:
            self.abandon(pidfile, grace)
            raise
        finally:
            ended()

    def abandon(self, pidfile: str, grace: float) -> None:
        """Stop a tool of :meth:`timed` that this side gave up on (an interrupted run):
        ending the local command that started it would leave it running on the host."""
        with signals.shielded():
            self.run(["sh", "-c", stop_script(pidfile, grace)], check=False, timeout=grace + 30)

    def record_mount(self, ledger: Ledger, path: Path) -> None:
        point = shlex.quote(str(path))
        ledger.command(self.wrap(["sh", "-c", f"! mountpoint -q {point} || umount {point} || umount -l {point}"]),
                       f"mount {self.name}:{path}", when="unmount")
