"""Running external programs: argv lists in, clear errors out.

Helpers: :func:`run` for a command that finishes, :func:`run_tool` for a measuring tool
with a deadline, :func:`spawn` for a daemon we own, and :func:`wait_for` for a readiness
condition with a deadline.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from harness.errors import DfsbenchError, Hung, NotReady, ToolError
from harness.system import signals
from harness.system.secret import redact_file

T = TypeVar("T")


def require_tool(name: str, package: str) -> str:
    """Return the path of an executable or raise an error naming the package to install."""
    found = shutil.which(name)
    if not found:
        raise DfsbenchError(f"'{name}' is not installed (or not on PATH)",
                            hint=f"install the Debian package '{package}' "
                                 "(make demo and make test install everything they need)")
    return found


def run(argv: Sequence[str | os.PathLike[str]], *, timeout: float = 120.0, check: bool = True,
        env: Mapping[str, str] | None = None, cwd: str | Path | None = None,
        input: str | None = None, hint: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command to completion; a failure raises :class:`ToolError` with output tails.

    The command gets a process group of its own, so a Ctrl-C at the terminal reaches
    dfsbench alone, which decides: a command of a teardown runs on to its end."""
    signals.check()
    cmd = [str(a) for a in argv]
    full_env = None if env is None else {**os.environ, **env}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env=full_env, cwd=cwd, input=input, process_group=0,
                              stdin=None if input is not None else subprocess.DEVNULL)
    except FileNotFoundError as exc:
        raise DfsbenchError(f"cannot run {cmd[0]}: not found", hint=hint) from exc
    except subprocess.TimeoutExpired as exc:
        raise ToolError(cmd, None, _text(exc.stdout), _text(exc.stderr),
                        hint=hint, timed_out=True) from exc
    if check and proc.returncode != 0:
        raise ToolError(cmd, proc.returncode, proc.stdout, proc.stderr, hint=hint)
    return proc


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode(errors="replace")


@dataclass(frozen=True)
class ProcessId:
    """A process identified by pid *and* start time, so a recycled pid is never killed."""

    pid: int
    start_ticks: int

    @classmethod
    def of(cls, pid: int) -> ProcessId | None:
        ticks = start_ticks(pid)
        return None if ticks is None else cls(pid, ticks)

    def alive(self) -> bool:
        return start_ticks(self.pid) == self.start_ticks and not _is_zombie(self.pid)

    def exited_not_reaped(self) -> bool:
        """A zombie: exited, and still listed until its parent reaps it."""
        return start_ticks(self.pid) == self.start_ticks and _is_zombie(self.pid)


# (a process that exits while its /proc files are read fails the read with ESRCH, not ENOENT:
# every read of /proc/PID takes both for "gone")
GONE = (FileNotFoundError, ProcessLookupError)


def start_ticks(pid: int) -> int | None:
    """Start time of a process in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (*GONE, PermissionError):
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[19])


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except GONE:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except GONE:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def stop(procs: list[tuple[ProcessId, float]]) -> list[ProcessId]:
    """SIGTERM processes we created, all at once; SIGKILL each one still there after its
    own grace period (seconds). Reaps those that are our children. Returns any that
    survived even SIGKILL."""
    start = time.monotonic()
    live = [(p, grace) for p, grace in procs if p.alive()]
    for p, _ in live:
        _signal(p.pid, signal.SIGTERM)
        _signal(p.pid, signal.SIGCONT)  # a stopped process acts on SIGTERM only once it runs
    killed: set[ProcessId] = set()
    deadline = start + max((g for _, g in live), default=0) + 5
    while live and time.monotonic() < deadline:
        for p, grace in live:
            _reap(p.pid)
            if p not in killed and time.monotonic() - start > grace and p.alive():
                _signal(p.pid, signal.SIGKILL)
                killed.add(p)
        live = [(p, g) for p, g in live if p.alive()]
        if live:
            time.sleep(0.05)
    # a process that has exited is still in the process table until its parent reaps it
    # (init, for a daemon): until then 'kill -0' and ps still find it. Wait for that too
    # (briefly: what holds a port or a file is gone already), so that nothing stopped is
    # still listed when this returns
    gone_by = time.monotonic() + REAPED_WAIT
    exited = [p for p, _ in procs if p.exited_not_reaped()]
    while exited and time.monotonic() < gone_by:
        for p in exited:
            _reap(p.pid)
        time.sleep(0.02)
        exited = [p for p in exited if p.exited_not_reaped()]
    return [p for p, _ in live]


REAPED_WAIT = 5.0


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def spawn(argv: Sequence[str | os.PathLike[str]], log_path: Path, *, env: Mapping[str, str] | None = None,
          cwd: Path | None = None) -> subprocess.Popen[bytes]:
    """Start a long-running program in its own session, output appended to ``log_path``."""
    cmd = [str(a) for a in argv]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        try:
            return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    env=None if env is None else {**os.environ, **env},
                                    cwd=cwd)
        except FileNotFoundError as exc:
            raise DfsbenchError(f"cannot start {cmd[0]}: not found") from exc


LOG_TAIL_BYTES = 16384  # what is read of a log's end, at most: its last lines are in it
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def last_lines(text: str, lines: int = 15) -> str:
    """The last ``lines`` lines of a log's text, fit to show: its control characters (a
    terminal's escape sequences among them) each shown as '?'."""
    return _CONTROL.sub("?", "\n".join(text.rstrip().splitlines()[-lines:]))


def log_tail(path: Path | Callable[[], str | None] | None, lines: int = 15) -> str:
    """The last lines of a log: a file of this machine, or what ``path()`` reads (a log on
    another host); '' where there is none to read."""
    if callable(path):
        return path() or ""
    if path is None or not path.exists():
        return ""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - LOG_TAIL_BYTES))
        text = f.read().decode(errors="replace")
    return last_lines(text, lines)


def wait_for(check: Callable[[], tuple[bool, T]], *, what: str, timeout: float,
             interval: float = 0.1, log: Path | Callable[[], str | None] | None = None,
             hint: str | None = None,
             alive: Callable[[], str | None] | None = None) -> T:
    """Poll ``check`` until it reports ready; return its last value.

    ``check`` returns (ready, state): state is what we show if the wait times out.
    ``alive`` may return a message when the process being waited on has died, which
    ends the wait early with that message. Exceptions from ``check`` count as "not yet".
    """
    start = time.monotonic()
    last: object = ""
    while True:
        signals.check()
        try:
            ready, state = check()
            last = state
            if ready:
                return state
        except DfsbenchError as exc:
            last = exc.message
        except OSError as exc:
            last = str(exc)
        if alive is not None:
            died = alive()
            if died:
                tail = log_tail(log)
                raise NotReady(what, time.monotonic() - start, f"{died}; before that: {last}",
                               "" if tail and tail in died else tail, hint)
        if time.monotonic() - start > timeout:
            raise NotReady(what, time.monotonic() - start, str(last), log_tail(log), hint)
        time.sleep(interval)


@dataclass
class ToolRun:
    """One run of a measuring tool: what it wrote, how it ended, how long it took."""

    argv: list[str]
    returncode: int | None  # None: killed at its deadline
    output: str
    errors: str
    elapsed: float

    @property
    def hung(self) -> bool:
        return self.returncode is None

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def failure(self, hint: str | None = None, what: str = "") -> DfsbenchError:
        """The error for a run that did not end well: :class:`Hung` when it passed its
        deadline (its cell is flagged hung, not failed), else :class:`DfsbenchError`."""
        return (Hung if self.hung else DfsbenchError)(what + self.problem(), hint=hint)

    def problem(self) -> str:
        """A one-paragraph explanation of a run that did not end well ('' if it did)."""
        if self.ok:
            return ""
        what = (f"passed its deadline after {self.elapsed:.0f} s and was killed" if self.hung
                else f"exited with code {self.returncode}")
        tail = "\n".join(line for line in (self.errors or self.output).strip().splitlines()[-6:])
        return f"{' '.join(self.argv[:6])}{' …' if len(self.argv) > 6 else ''} {what}" + (
            f":\n{tail}" if tail else "")


def run_tool(argv: Sequence[str | os.PathLike[str]], *, deadline: float, output: Path,
             env: Mapping[str, str] | None = None, cwd: Path | None = None,
             grace: float = 5.0, started: Callable[[int], Callable[[], None]] | None = None) -> ToolRun:
    """Run a measuring tool in its own process group, stdout into ``output`` (kept as the
    raw record), stderr next to it. Past ``deadline`` seconds the whole group gets SIGTERM,
    then SIGKILL after ``grace``: a hung tool (iozone -I on a stuck client) is recorded
    with its partial output instead of stopping the run. ``started`` is told the tool's
    pid and returns what to call when it ended (see :func:`harness.system.ledger.tool_started`)."""
    cmd = [str(a) for a in argv]
    output.parent.mkdir(parents=True, exist_ok=True)
    err_path = output.with_name(output.name + ".stderr")
    # the exact command line, kept with the run next to what the tool printed
    output.with_name(output.name + ".argv").write_text(json.dumps(cmd) + "\n")
    start = time.monotonic()
    with open(output, "wb") as out, open(err_path, "wb") as err:
        try:
            child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                     start_new_session=True, cwd=cwd,
                                     env=None if env is None else {**os.environ, **env})
        except FileNotFoundError as exc:
            raise DfsbenchError(f"cannot run {cmd[0]}: not found") from exc
        ended = started(child.pid) if started is not None else None
        try:
            returncode = _wait(child, start + deadline)
            if returncode is None:
                _kill_group(child, grace)
        except BaseException:  # Ctrl-C: take the tool down with us
            _kill_group(child, grace)
            raise
        finally:
            if ended is not None:
                ended()
    redact_file(output)
    redact_file(err_path)
    return ToolRun(cmd, returncode, output.read_text(errors="replace"),
                   err_path.read_text(errors="replace"), time.monotonic() - start)


def _wait(child: subprocess.Popen[bytes], until: float) -> int | None:
    """The child's exit code, or None at ``until`` (monotonic); a worker thread meets an
    interrupt of the run here (:func:`signals.check`) within half a second."""
    while True:
        signals.check()
        try:
            return child.wait(timeout=max(0.0, min(0.5, until - time.monotonic())))
        except subprocess.TimeoutExpired:
            if time.monotonic() >= until:
                return None


def _kill_group(child: subprocess.Popen[bytes], grace: float) -> None:
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
        try:
            os.killpg(child.pid, sig)
            os.killpg(child.pid, signal.SIGCONT)  # (a stopped tool only dies of SIGKILL)
        except ProcessLookupError:
            return
        try:
            child.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on at ``host`` right now, drawn below the kernel's range of
    ephemeral ports (``ip_local_port_range``, where ``bind`` to port 0 draws from): a port of
    that range, free now, may become any outgoing connection's source port before the daemon
    it was chosen for binds it (a loaded make test saw a SeaweedFS volume server fail so,
    'address already in use'). Drawn at random, so that labs brought up side by side seldom
    draw the same; port 0's draw where none below the range is free."""
    import random
    import socket

    low = ephemeral_low()
    for _ in range(64):
        port = random.randint(max(1024, low - 16384), low - 1)
        if bindable(host, port):
            return port
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def bindable(host: str, port: int) -> bool:
    """Whether a TCP socket can bind ``host``:``port`` right now (nothing holds it)."""
    import socket

    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def ephemeral_low() -> int:
    """The lowest port the kernel gives an outgoing connection (32768 where it does not say)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768
    return low if 2048 <= low <= 65535 else 32768


def tcp_listening(host: str, port: int, table: str | None = None) -> bool:
    """Whether something listens on host:port (IPv4), read from /proc/net/tcp (or the text
    of another host's) rather than by connecting, which a one-shot server would take for
    its client."""
    want = f"{''.join(f'{int(b):02X}' for b in reversed(host.split('.')))}:{port:04X}"
    if table is None:
        try:
            table = Path("/proc/net/tcp").read_text()
        except OSError:
            return False
    rows = (line.split() for line in table.splitlines()[1:])
    return any(len(parts) > 3 and parts[1] == want and parts[3] == "0A" for parts in rows)
