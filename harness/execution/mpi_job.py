"""One ``mpirun`` for a cell on several client hosts (the ``mpi`` launcher; see
``harness.api.launch`` and :mod:`harness.execution.ranks`, which runs a cell's clients on it).

- **Where ``mpirun`` runs.** On this machine. It starts Open MPI's daemon (``orted``) on
  each client host through :mod:`harness.execution.mpi_agent` in place of ``ssh``: the
  argv by which dfsbench already runs commands there (``docker exec`` into a client
  container; its own SSH connection to an existing site's host). Tree spawn is off, so no
  client host needs SSH to another; the daemons call back to ``mpirun`` over TCP, and the
  ranks talk to each other over TCP, on the lab's network (or ``mpi_network``). Host names
  reach ``mpirun`` only in a hostfile, as checked host names; nothing of a config becomes
  an argument or an MCA parameter (the network is a checked CIDR).
- **Which launcher.** :func:`decide`: the one asked, else ``mpi`` where this machine and
  every client host can run the job, else ``exec``, with the reason.
- **Failure.** A phase past its deadline (the engine's, plus :data:`GRACE_S`) ends the job;
  a rank that dies ends it too (``mpirun`` aborts the others); either way the cell is
  failed, naming the rank and its host. The job is in the run's ledger while it runs
  (``mpirun`` by pid here; on each client host, a command that ends every process whose
  environment carries the job's tag, :data:`JOB_ENV`), so ``lab down`` after a crash ends
  it; Ctrl-C ends it at once.
"""

from __future__ import annotations

import json
import os
import queue
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.api.launch import Launch
from harness.errors import BadInput, DfsbenchError, Hung
from harness.execution.mpi_agent import HOSTS_ENV
from harness.system import proc, signals
from harness.system.hosts import Host
from harness.system.ledger import tool_started, tree_made

MPI_RANK = Path(__file__).with_name("mpi_rank.py")
MPI_AGENT = Path(__file__).with_name("mpi_agent.py")
MARK = "DFSBENCH-RANKS "  # (mpi_rank.MARK: the lines rank 0 prints for dfsbench)
JOB_ENV = "DFSBENCH_MPI_JOB"  # every process of a job carries its tag in its environment
# the longest a job may take to have every rank up: 3 s a rank, at least a minute, at most
# ten (64 ranks on a 2-core container lab took 16-95 s, while their cell set up)
START_S = 60.0
START_PER_RANK_S = 3.0
START_MOST_S = 600.0
GRACE_S = 30.0  # past a phase's deadline: for the ranks to say so themselves, then the job ends
END_S = 10.0  # the longest a job may take to end when told to
HOSTNAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}"
                      r"[A-Za-z0-9])?)*")
# the MCA settings of every job: the daemons all started from here (no tree spawn: no client
# host needs SSH to another); TCP between hosts, shared memory within one, through the one
# messaging layer that uses them (ob1: left to choose, each rank's MPI_Init also loads and
# probes UCX, 0.26 s of a rank's start in a container here against 0.06 s); no rank bound to a
# core (several containers of one machine each think they own its cores); a rank waiting in a
# blocking call yields its CPU
MCA = (("plm_rsh_no_tree_spawn", "1"), ("btl", "self,vader,tcp"), ("pml", "ob1"), ("mpi_yield_when_idle", "1"),
       # (a host is the name its ranks report, whole: Open MPI would cut a domain off)
       ("orte_keep_fqdn_hostnames", "1"),
       ("rmaps_base_oversubscribe", "1"), ("hwloc_base_binding_policy", "none"))


@dataclass(frozen=True)
class Decision:
    """How the cells of a run on several client hosts are launched, and why."""

    launcher: str  # "mpi" or "exec"
    why: str
    hostnames: tuple[str, ...] = ()  # each client host's, as its ranks name it (mpi)


_decided: dict[tuple[Any, ...], Decision] = {}
_lock = threading.Lock()


def mpirun_version() -> str | None:
    """The version of this machine's ``mpirun`` (None: there is none)."""
    if shutil.which("mpirun") is None:
        return None
    out = proc.run(["mpirun", "--version"], check=False, timeout=30).stdout
    found = re.search(r"Open MPI\)? ([0-9][0-9.]*)", out)
    return found.group(1) if found else None


# what a client host answers: its hostname, Open MPI's version as its mpi4py sees it (without
# starting MPI), whether it has orted
PROBE = ("import socket, mpi4py; mpi4py.rc.initialize = False; from mpi4py import MPI; import shutil; "
         "print(socket.gethostname()); print(MPI.Get_library_version().split(',')[0]); "
         "print(bool(shutil.which('orted')))")


def decide(launch: Launch | None, hosts: Sequence[Host]) -> Decision:
    """The launcher of cells on these client hosts: the one asked, else ``mpi`` where this
    machine and every host can run the job, else ``exec`` (saying why). Asked once per set
    of hosts in a process. An ``mpi`` asked for and impossible is an error."""
    launch = launch or Launch()
    key = (launch, tuple(h.label for h in hosts))
    with _lock:
        if key in _decided:
            return _decided[key]
    found = _decide(launch, hosts)
    with _lock:
        _decided[key] = found
    return found


def _decide(launch: Launch, hosts: Sequence[Host]) -> Decision:
    if launch.asked == "exec":
        return Decision("exec", "asked for (environment.options.launcher: exec)")
    problems = []
    version = mpirun_version()
    if version is None:
        problems.append("this machine has no mpirun (Debian package openmpi-bin)")
    if shutil.which("python3") is None:
        problems.append("this machine has no python3 on its PATH for mpirun's launch agent")
    if re.search(r"\s", str(MPI_AGENT)):  # (mpirun splits its launch agent's line on white space)
        problems.append(f"{MPI_AGENT} holds white space, which mpirun's launch agent cannot")
    names: list[str] = []
    def ask(host: Host) -> subprocess.CompletedProcess[str] | str:
        try:
            return host.run(["python3", "-c", PROBE], check=False, timeout=60)
        except (DfsbenchError, OSError) as exc:
            return f"{host.name} did not answer whether it has mpi4py ({exc})"

    with ThreadPoolExecutor(max_workers=min(8, len(hosts))) as pool:
        probes = list(pool.map(ask, hosts))
    for host, probe in zip(hosts, probes):
        if isinstance(probe, str):
            problems.append(probe[:300])
            continue
        lines = probe.stdout.split("\n")
        if probe.returncode != 0 or len(lines) < 3:
            problems.append(f"{host.name} has no mpi4py for its python3 (Debian package python3-mpi4py)")
            continue
        name, library, orted = lines[0].strip(), lines[1].strip(), lines[2].strip()
        if not HOSTNAME.fullmatch(name):
            problems.append(f"{host.name} calls itself {name[:80]!r}, which is no host name for a hostfile")
        elif name.lower() in ("localhost", socket.gethostname().lower()):  # (mpirun would run its ranks here)
            problems.append(f"{host.name} calls itself {name}, as this machine does: mpirun would take it for "
                            "this machine")
        elif name in names:
            problems.append(f"two client hosts call themselves {name}: their ranks could not be told apart")
        names.append(name)
        if orted != "True":
            problems.append(f"{host.name} has no orted (Debian package openmpi-bin)")
        there = re.search(r"([0-9][0-9.]*)", library)
        if version is not None and (there is None or there.group(1) != version):
            problems.append(f"{host.name} has {library or 'an unknown MPI'}, this machine Open MPI {version}: "
                            "Open MPI's daemons must be one version")
    if problems:
        if launch.asked == "mpi":
            raise BadInput("launcher 'mpi' cannot run here: " + "; ".join(problems),
                           hint="install openmpi-bin here and openmpi-bin and python3-mpi4py on every client "
                                "host (one Open MPI version), or set environment.options.launcher: exec")
        return Decision("exec", "; ".join(problems))
    return Decision("mpi", f"Open MPI {version} here and on all {len(hosts)} client hosts", tuple(names))


_said: set[Decision] = set()


def first_said(decision: Decision) -> bool:
    """Whether this is the first time the run says this decision (it says it once)."""
    with _lock:
        first = decision not in _said
        _said.add(decision)
    return first


def kill_script(tag: str) -> str:
    """Shell: end every process of the host whose environment carries the job's tag (its
    daemon, ranks and their workers), and nothing else."""
    assert re.fullmatch(r"[0-9a-f]+", tag)
    ours = (f'for e in /proc/[0-9]*/environ; do if tr "\\0" "\\n" < "$e" 2>/dev/null | '
            f'grep -qx "{JOB_ENV}={tag}"; then p=${{e#/proc/}}; p=${{p%/environ}}; [ "$p" = $$ ] || {{ ACT; }}; fi; done')
    # (kill, then look again: a process that outlives SIGKILL — stuck in a hung mount — fails
    # the command, so its entry stays in the ledger for lab down)
    return (ours.replace("ACT", 'kill -9 "$p" 2>/dev/null') + "; sleep 0.5; left=0; "
            + ours.replace("ACT", "left=1") + '; exit $left')


class MpiJob:
    """One ``mpirun`` of ``per_host`` ranks on each of ``hosts`` (host-major: ranks 0 to
    per_host-1 on the first), led through rank 0's input and output (see
    :mod:`harness.execution.mpi_rank`)."""

    def __init__(self, hosts: Sequence[Host], hostnames: Sequence[str], per_host: int, network: str | None,
                 log: Path) -> None:
        self.hosts, self.hostnames, self.per_host = tuple(hosts), tuple(hostnames), per_host
        self.network, self.log = network, log
        self.size = len(self.hosts) * per_host
        self.tag = secrets.token_hex(6)
        self.started = 0.0  # (when mpirun was started, this machine's clock)
        self.up_s = 0.0  # how long until every rank said hello (as rank 0's word came here)
        self.closed_s: float | None = None  # how long its end took (harness.execution.ranks.job); None: not ended
        self.cells = 0  # the cells it ran (or runs): it is kept from one to the next (ranks.KeptJobs)
        self._child: subprocess.Popen[bytes] | None = None
        self._said: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._ended: list[Callable[[], None]] = []
        self._dir: Path | None = None
        self._dir_made: Callable[[], None] = lambda: None  # (its directory out of the ledger)
        self._failed = False  # (stopped, or to be: nothing more is asked of it)
        self._checked = False  # (its ranks' hosts checked)
        self._unreached: list[Host] = []  # (hosts its end could not reach: left in the ledger)

    def argv(self, hostfile: Path, rank_argv: Sequence[str]) -> list[str]:
        # (the agent's first word is one every client host has too: Open MPI's daemons look
        # for it there, and fail where it is not, though they never use it without tree spawn)
        mca = [*MCA, ("plm_rsh_agent", f"python3 -S {MPI_AGENT}")]
        if self.network:
            mca += [("oob_tcp_if_include", self.network), ("btl_tcp_if_include", self.network)]
        return ["mpirun", "--hostfile", str(hostfile), "-np", str(self.size),
                *[w for key, value in mca for w in ("--mca", key, value)], *rank_argv, self.tag]

    def launch(self) -> None:
        """Start the job, and return at once: the cell sets itself up meanwhile (its
        directories, a copy's source), and its first phase waits for the job (:meth:`up`)."""
        rank_argv = {tuple(h.python(MPI_RANK)) for h in self.hosts}
        if len(rank_argv) != 1:  # (the same program path everywhere: one app context)
            raise DfsbenchError("the client hosts keep dfsbench's programs in different places: "
                                f"{', '.join(' '.join(a) for a in sorted(rank_argv))}")
        # (a private directory, in the ledger: a run killed before close leaves it to lab down)
        self._dir = Path(tempfile.mkdtemp(prefix="dfsbench-mpi-"))
        self._dir_made = tree_made(self._dir)
        hostfile, agent_map = self._dir / "hostfile", self._dir / "hosts.json"
        hostfile.write_text("".join(f"{name} slots={self.per_host}\n" for name in self.hostnames))
        agent_map.write_text(json.dumps({name: host.wrap(["env", f"{JOB_ENV}={self.tag}", "sh", "-c"])
                                         for name, host in zip(self.hostnames, self.hosts)}))
        env = {**os.environ, HOSTS_ENV: str(agent_map)}  # (the agent's hosts: mpirun passes its environment on)
        if os.geteuid() == 0:  # (Open MPI refuses root unless told twice)
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        # (every host's part of the job in the ledger before it exists: a crash leaves none)
        self._ended = [tool_started(f"MPI ranks of job {self.tag} on {h.name}",
                                    stop=h.wrap(["sh", "-c", kill_script(self.tag)])) for h in self.hosts]
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.started = time.time()
        with open(self.log, "ab") as log:
            self._child = subprocess.Popen(self.argv(hostfile, next(iter(rank_argv))),
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env,
                                           start_new_session=True)
        self._ended.append(tool_started(f"mpirun of job {self.tag}", pid=self._child.pid))
        threading.Thread(target=self._read, name=f"dfsbench-mpi-{self.tag}", daemon=True).start()

    def alive(self) -> bool:
        """Whether the job runs and nothing has failed it (what a cell kept it for)."""
        return self._child is not None and self._child.poll() is None and not self._failed

    def rest(self, resting: bool) -> None:
        """Tell the ranks the job is kept between two cells (True: they wait polling every
        50 ms, :data:`harness.execution.mpi_rank.RESTING_POLL_S`) or taken by a cell (False:
        every 2 ms again, so its phases start as a new job's do). A job that cannot be told
        is found ended at its next phase."""
        child = self._child
        if child is not None and child.stdin is not None and self.alive():
            try:
                child.stdin.write(json.dumps({"rest": resting}).encode() + b"\n")
                child.stdin.flush()
            except OSError:
                pass

    def up(self) -> None:
        """Wait until every rank said it is up, on the host it should be (once)."""
        if self._checked:
            return
        deadline = time.monotonic() + min(START_MOST_S, max(START_S, START_PER_RANK_S * self.size))
        hello = self._next("the job to start", deadline)
        while "hello" not in hello:
            hello = self._next("the job to start", deadline)
        got = [str(name) for name, _ in hello["hello"]]
        wanted = [self.hostnames[r // self.per_host] for r in range(self.size)]
        if got != wanted or hello.get("tag") != self.tag:
            self._stop()
            raise DfsbenchError(f"mpirun placed the ranks on {', '.join(got)[:500]}, not on {', '.join(wanted)}"
                                if got != wanted else "the MPI job's ranks answered for another job")
        self._checked = True

    def _read(self) -> None:
        """Rank 0's lines, as they come (only rank 0 writes to its standard output; mpirun's
        --tag-output, which would say whose a line is, cuts a long line into pieces); a
        line of the protocol that cannot be read ends the job, at once."""
        assert self._child is not None and self._child.stdout is not None
        for raw in self._child.stdout:
            line = raw.decode(errors="replace")
            if not line.startswith(MARK):
                continue
            try:
                said = json.loads(line[len(MARK):])
                if not isinstance(said, dict):
                    raise ValueError("not an object")
            except ValueError as exc:
                said = {"unreadable": f"{exc}: {line[:200]!r}"}
            if "hello" in said and not self.up_s:
                self.up_s = time.time() - self.started
            self._said.put(said)
        self._said.put(None)  # (its output ended: the job is over)

    def _next(self, what: str, deadline: float) -> dict[str, Any]:
        """What rank 0 says next; an error where the job ended or ``deadline`` passed."""
        while True:
            signals.check()  # (an interrupted run stops waiting)
            try:
                said = self._said.get(timeout=0.2)
            except queue.Empty:
                if time.monotonic() > deadline:
                    self._stop()
                    raise Hung(f"the MPI job waited for {what} past its deadline, and was ended",
                               hint="check the client hosts (a stopped FUSE client blocks every call), or "
                                    "raise the workload's deadline_s")
                continue
            if said is None:
                self._stop()
                raise DfsbenchError(f"the MPI job ended while waiting for {what}: {self._why()}")
            if "unreadable" in said:
                self._stop()
                raise DfsbenchError(f"rank 0 of the MPI job said what cannot be read ({said['unreadable']}), "
                                    f"waiting for {what}; the job was ended")
            return said

    def _why(self) -> str:
        """What mpirun said of its end: which rank ended, on which host, how (else the
        lines of its log that name a rank or a host)."""
        said = proc.log_tail(self.log, 60) if self.log.exists() else ""
        died = re.search(r"process rank (\d+) with PID \d+ on node (\S+) (exited on signal \d+(?: \([^)]*\))?|"
                         r"exited with[^.]*)", said)
        if died:
            return f"rank {died.group(1)} on {died.group(2)} {died.group(3).rstrip('.')}"
        lines = [line.strip() for line in said.splitlines() if line.strip() and not line.startswith("-" * 10)]
        named = [line for line in lines if re.search(r"rank|node|process|signal|error", line, re.I)]
        return " / ".join((named or lines)[-4:])[:800] or "it said nothing (its log is empty)"

    def phase(self, phase: str, calls: Sequence[dict[str, Any]], deadline: float,
              began: Callable[[float], None]) -> list[dict[str, Any]]:
        """Run one timed phase: every rank its call, after a barrier (and, where every host
        reads this machine's clock, at one moment of it: :mod:`harness.execution.mpi_rank`);
        every rank's result (``rank``, ``host``, ``released``, ``result``) in rank order.
        ``began`` hears when the ranks left the barrier (rank 0's clock)."""
        child = self._child
        if child is None or child.stdin is None:
            raise DfsbenchError("the MPI job is not running")
        try:
            one_clock = all(h.clock_shared for h in self.hosts)
            child.stdin.write((json.dumps({"phase": phase, "calls": list(calls), "one_clock": one_clock})
                               + "\n").encode())
            child.stdin.flush()
        except (BrokenPipeError, OSError):
            self._stop()
            raise DfsbenchError(f"the MPI job ended before phase {phase!r}: {self._why()}") from None
        end = time.monotonic() + deadline + GRACE_S
        while True:
            said = self._next(f"phase {phase!r}", end)
            if said.get("began") == phase:
                began(float(said["t"]))
            elif said.get("phase") == phase:
                results: list[dict[str, Any]] = said["results"]
                if len(results) != self.size:
                    raise DfsbenchError(f"the MPI job gave {len(results)} results of phase {phase!r} for "
                                        f"{self.size} ranks")
                return sorted(results, key=lambda r: int(r["rank"]))

    def _stop(self) -> None:
        """End a job that failed, at once: ``mpirun`` and whatever of the job is left on any
        host (a rank's workers outlive a rank killed), before anything else of the cell."""
        if self._failed:
            return
        self._failed = True
        with signals.shielded():
            self._end_mpirun()
            self._end_hosts()

    def _end_mpirun(self) -> None:
        child = self._child
        if child is None or child.poll() is not None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(child.pid, sig)  # (mpirun, in a session of its own, and its agents)
            except ProcessLookupError:
                return
            try:
                child.wait(timeout=5.0)
                return
            except subprocess.TimeoutExpired:
                continue

    def _end_hosts(self) -> None:
        """End what is left of the job on every host; a host that cannot be reached keeps
        its entry in the ledger (``lab down`` tries again), and the cell's own error stands."""
        def end(host: Host) -> bool:
            try:
                with signals.shielded():  # (in this thread too: an interrupt must not skip a host)
                    return host.run(["sh", "-c", kill_script(self.tag)], check=False, timeout=60).returncode == 0
            except (DfsbenchError, OSError):
                return False

        with ThreadPoolExecutor(max_workers=min(8, len(self.hosts))) as pool:
            self._unreached = [h for h, ok in zip(self.hosts, pool.map(end, self.hosts)) if not ok]

    def close(self) -> None:
        """End the job: told to where it is well, else stopped; then nothing of it is left
        on any host (each host's part is ended by its tag, however the job ended)."""
        with signals.shielded():
            child = self._child
            if child is not None and not self._failed:
                if child.poll() is None and child.stdin is not None:
                    try:
                        child.stdin.write(b'{"end": true}\n')
                        child.stdin.close()
                    except OSError:
                        pass
                    try:
                        child.wait(timeout=END_S)
                    except subprocess.TimeoutExpired:
                        pass
                if child.returncode != 0:
                    self._stop()
                else:  # (ended well: what of it a rank left — a tool stuck in a hung mount — ends too)
                    self._end_hosts()
            elif child is None:  # (it never started: its hosts may hold what the agent began)
                self._stop()
            else:
                self._end_mpirun()  # (stopped already; reaped now)
            unreached = {h.name for h in self._unreached}
            for host, ended in zip([*self.hosts, None], self._ended):
                if host is None or host.name not in unreached:
                    ended()
            self._ended = []
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                if not self._dir.exists():  # (else it stays in the ledger, for lab down)
                    self._dir_made()
                self._dir = None
