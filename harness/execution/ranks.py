"""A cell on several client hosts as one MPI job (the ``mpi`` launcher; see
``harness.api.launch``): its clients are the ranks of one ``mpirun``
(:mod:`harness.execution.mpi_job`), as IOR, mdtest and IO500 run theirs: launched for a
cell, and kept for the attachment's next cells of the same layout (:class:`KeptJobs`).

- **What the ranks run.** :mod:`harness.execution.mpi_rank`, which loads the workload's
  engine script (``workloads/engines.py``) on its host and runs, for each timed phase, the
  call its rank was given, after ``MPI_Barrier``, or runs a measuring tool (fio), held at a
  gate until then (:meth:`RankLineup.gate`); rank 0 gathers every rank's result and prints
  one document.
- **What stays dfsbench's.** Everything between two timed phases (a remount that drops a
  client's cache, reading what another client wrote), as before: the workload's own code
  runs unchanged, one thread per rank (:class:`RankHost`, a view of its client host), and
  only its timed engine calls and tools go to the job (:class:`RankLineup`). Several ranks of one host
  share what changes the host (a remount, a cache drop, the source file of a copy): the
  first rank to come to it does it (:meth:`RankHost.shared`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from harness.api.launch import Launch
from harness.api.target import Lineup, Target, Written
from harness.errors import DfsbenchError, Hung
from harness.execution.mpi_job import Decision, MpiJob
from harness.execution.mpi_rank import GATE_SETUP_S
from harness.system import proc, signals
from harness.system.hosts import Host, Running
from harness.system.ledger import Ledger

T = TypeVar("T")
PLAIN = re.compile(r"[A-Za-z0-9/._+-]+")  # a word a shell line holds as it is
GATE_PATH_MOST = 1024  # (the gate's line names its directory twice, in a job file's line of at most 8 KiB)


def gate_line(where: Path) -> str:
    """The shell line of a tool's job that waits at the gate in ``where`` (:meth:`RankLineup.gate`):
    a file of its own in ``ready/`` that says it is there (``mktemp``), then a read of the
    FIFO ``go``. No ';' and no '$' in it: fio ends a job file's line at the one and reads the
    other as its own syntax."""
    return f"( mktemp -p {where}/ready XXXXXX && read x || : ) < {where}/go"


class MachineShare:
    """What the ranks of one host do once for all of them (:meth:`RankHost.shared`): the
    n-th time any of them comes to a step, the first does it and the others get its outcome."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: dict[tuple[str, int], Future[Any]] = {}
        self._count: dict[tuple[int, str], int] = {}

    def once(self, who: int, key: str, do: Callable[[], T]) -> T:
        with self._lock:
            n = self._count.get((who, key), 0)
            self._count[(who, key)] = n + 1
            found = self._done.get((key, n))
            mine = found is None
            if found is None:
                found = self._done[(key, n)] = Future()
        if mine:
            try:
                found.set_result(do())
            except BaseException as exc:
                found.set_exception(exc)
                raise
        while True:
            signals.check()
            try:
                result: T = found.result(timeout=0.2)
                return result
            except TimeoutError:
                continue


class RankHost(Host):
    """One rank of a cell's MPI job, as the workload's code sees its client host: every
    command runs on that host (:attr:`base`), but the timed engine calls, which the rank
    runs in the job (:class:`RankLineup`); named ``client1-r1`` where a host has several."""

    def __init__(self, base: Host, k: int, per_host: int, rank: int, lineup: RankLineup,
                 share: MachineShare) -> None:
        self.base, self.k, self.rank, self.lineup, self.share = base, k, rank, lineup, share
        self.per_host = per_host
        self._made: set[Path] = set()  # (directories of its own made on the host)
        self.name = base.name if per_host == 1 else f"{base.name} (rank {rank})"
        self._label = base.label if per_host == 1 else f"{base.label}-r{k}"
        self.local = base.local
        self.clock_shared = base.clock_shared

    @property
    def label(self) -> str:
        return self._label

    @property
    def machine(self) -> Host:
        return self.base

    def shared(self, key: str, do: Callable[[], T]) -> T:
        return self.share.once(self.k, key, do)

    def here(self, t: float) -> float:
        return self.base.here(t)

    def facts(self) -> dict[str, Any]:
        return self.base.facts()

    def run(self, argv: Sequence[str | os.PathLike[str]], *, timeout: float = 120, check: bool = True,
            env: Any = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return self.base.run(argv, timeout=timeout, check=check, env=env, input=input)

    def run_tool(self, argv: Sequence[str | os.PathLike[str]], *, deadline: float, output: Path,
                 env: Any = None, cwd: Path | None = None, grace: float = 5.0) -> proc.ToolRun:
        """A timed phase's tool (fio right after ``Target.begin``) runs in the job; any other
        (fio laying its file out) here as on any host."""
        if self.lineup.pending(self):
            return self.lineup.tool(self, argv, deadline=deadline, output=output, env=env, cwd=cwd, grace=grace)
        return self.base.run_tool(argv, deadline=deadline, output=output, env=env, cwd=cwd, grace=grace)

    def python(self, script: Path) -> list[str]:
        return self.shared(f"python {script}", lambda: self.base.python(script))

    def scratch(self, here: Path, ledger: Ledger) -> Path:
        return self.shared(f"scratch {here}", lambda: self.base.scratch(here, ledger))

    def tail(self, path: Path, lines: int = 15) -> str | None:
        return self.base.tail(path, lines)

    def start_daemon(self, argv: list[str], log: Path, ledger: Ledger, what: str,
                     grace: float) -> tuple[int | None, Callable[[], str | None]]:
        return self.base.start_daemon(argv, log, ledger, what, grace)

    def spawn(self, argv: Sequence[str], log: Path) -> Running:
        return self.base.spawn(argv, log)

    def address(self) -> str:
        return self.base.address()

    def record_mount(self, ledger: Ledger, path: Path) -> None:
        self.base.record_mount(ledger, path)

    def drop_caches(self) -> bool:
        return self.base.drop_caches()

    def wrap(self, argv: Sequence[str | os.PathLike[str]]) -> list[str]:
        return self.base.wrap(argv)

    def write_text(self, path: Path, text: str) -> None:
        self.base.write_text(path, text)

    def gate(self, jobs: int) -> str | None:
        return self.lineup.gate(self, jobs)

    def put(self, file: Path, directory: Path) -> Path:
        """As the host puts it, but where the host has several ranks, in a directory of this
        rank's own: the ranks of a host share its scratch directory, and each has its own
        job files of the same names."""
        if self.per_host == 1:
            return self.base.put(file, directory)
        own = directory / f"rank{self.rank}"
        if own not in self._made:
            self.base.mkdir(own)
            self._made.add(own)
        return self.base.put(file, own)

    def engine(self, script: Path, name: str, args: dict[str, Any], *, deadline: float,
               output: Path) -> dict[str, Any]:
        """A timed phase's engine call (right after ``Target.begin``) runs in the job; any
        other (a copy's source, a check) here as on any host, once for the host's ranks
        where they ask the same."""
        if self.lineup.pending(self):
            where = self.python(script)[-1]  # (the script on the host, as its ranks load it)
            result = self.lineup.collective(self, {"script": where, "engine": name, "args": args}, f"{name} engine",
                                            deadline)
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(json.dumps(result))
            return result
        return self.shared(f"engine {script} {name} {json.dumps(args, sort_keys=True)}",
                           lambda: self.base.engine(script, name, args, deadline=deadline, output=output))


class RankLineup(Lineup):
    """The line-up of a cell's ranks: the start of each timed phase is the job's barrier
    (the ranks' threads here do not wait for each other there); each rank's timed engine
    call waits until every rank has made its own, and the job runs them together."""

    def __init__(self, job: MpiJob, on_start: Callable[[float], None] | None,
                 scratch: Callable[[Host], Path] | None, keep: list[Written] | None) -> None:
        super().__init__(job.size, on_start, scratch, keep)
        self.job = job
        # rank: the phase it began, its warm-up (None: the phase starts no measured work)
        self._pending: dict[int, tuple[str, float | None]] = {}
        self._calls: dict[int, tuple[str, dict[str, Any]]] = {}
        self._results: dict[int, dict[str, Any]] = {}
        self._call_round = 0
        self._tools = 0  # (tools run so far: each one's output has a name of its own on its host)
        self._gates: dict[int, tuple[Path, int]] = {}  # rank: its next tool's gate, and how many jobs pass it
        self._began = False
        self.released: dict[str, Any] = {}  # each phase: when each rank was let go (its clock)
        self.left: dict[str, list[float]] = {}  # each phase: when each rank left the barrier (its clock)
        self.sent: dict[str, float] = {}  # each phase: when every rank had come to it (here)
        self.hung = False  # a rank's tool was killed past its deadline: the job is not kept

    def begin(self, phase: str, warmup_s: float = 0.0, host: Host | None = None, starts: bool = True) -> None:
        if not isinstance(host, RankHost):
            raise DfsbenchError(f"{phase}: a timed phase of an MPI job begun by no rank")
        with self._cond:
            if self._broken:
                raise DfsbenchError(f"{phase}: {self._broken}")
            self._pending[host.rank] = (phase, warmup_s if starts else None)

    def pending(self, host: RankHost) -> bool:
        with self._cond:
            return host.rank in self._pending

    def _began_at(self, t: float, warmup_s: float) -> None:
        """The ranks left the barrier, to start at ``t`` (rank 0's clock, which is this
        machine's where the ranks go at one moment of it: then a few ms from now)."""
        if not self._began:
            self._began = True
            if self._on_start is not None:
                ahead = t - time.time() if all(h.clock_shared for h in self.job.hosts) else 0.0
                self._on_start(warmup_s + min(max(0.0, ahead), 1.0))

    def collective(self, host: RankHost, call: dict[str, Any], what: str, deadline: float) -> dict[str, Any]:
        """Run ``call`` (an engine's, or a tool's: :mod:`harness.execution.mpi_rank`) as this
        rank's part of the timed phase it began, once every rank has made its own; its result."""
        with self._cond:
            phase, warmup_s = self._pending.pop(host.rank)
            if self._broken:
                raise DfsbenchError(f"{phase}: {self._broken}")
            self._calls[host.rank] = (phase, call)
            round_ = self._call_round
            leader = len(self._calls) == self.job.size
            if leader:
                calls, self._calls = self._calls, {}
        if leader:
            self.sent[phase] = time.time()
            phases = sorted({p for p, _ in calls.values()})
            try:
                if len(phases) > 1:
                    raise DfsbenchError(f"the ranks came to different phases at once: {', '.join(phases)}")
                self.job.up()
                results = self.job.phase(phase, [calls[r][1] for r in range(self.job.size)], deadline,
                                         lambda t: self._began_at(t, warmup_s) if warmup_s is not None else None)
            except BaseException as exc:
                self.abort(exc.message if isinstance(exc, DfsbenchError) else f"{type(exc).__name__}: {exc}")
                raise
            with self._cond:
                self._results.update({int(r["rank"]): r for r in results})
                self.released[phase] = [float(r["released"]) for r in results]
                self.left[phase] = [float(r.get("left", r["released"])) for r in results]
                self._call_round += 1
                self._cond.notify_all()
        else:
            with self._cond:
                while self._call_round == round_ and not self._broken:
                    self._cond.wait(0.2)
                    signals.check()
                if self._call_round == round_:
                    raise DfsbenchError(f"{phase}: {self._broken}")
        with self._cond:
            mine = self._results.pop(host.rank)
        result: dict[str, Any] = mine["result"]
        if "error" in result:
            said = f"rank {host.rank} on {host.machine.name}: {what}: {result['error']}"
            if result.get("hung"):
                raise Hung(said, hint="check the client (a stopped or dead FUSE client blocks every call), "
                                      "or raise the workload's deadline_s")
            raise DfsbenchError(said)
        return result

    def gate(self, host: RankHost, jobs: int) -> str | None:
        """The shell line that holds each of the ``jobs`` jobs of the rank's next tool at its
        start until the ranks go (:func:`gate_line`): in a directory of its own on the host,
        once it has the FIFO ``go`` open, it says the job is there (a file in ``ready/``),
        then reads the FIFO, which ends when the rank lets go of it
        (:func:`harness.execution.mpi_rank.tool`). None where the directory's path would not
        be plain in a shell line (a path of the run with spaces, say), or is too long: then
        the tool starts when the rank does."""
        if self.scratch is None:
            return None
        with self._cond:
            self._tools += 1
            n = self._tools
        where = self.scratch(host) / f"gate-{self.tag}-{n}-rank{host.rank}"
        if not PLAIN.fullmatch(str(where)) or len(str(where)) > GATE_PATH_MOST:
            return None
        host.machine.mkdir(where / "ready")
        with self._cond:
            self._gates[host.rank] = (where, jobs)
        return gate_line(where)

    def tool(self, host: RankHost, argv: Sequence[str | os.PathLike[str]], *, deadline: float, output: Path,
             env: Any, cwd: Path | None, grace: float) -> proc.ToolRun:
        """A timed phase's measuring tool (fio), started by the rank in the job — after the
        barrier, or, where :meth:`gate` gave its jobs a gate, before it, its jobs held at the
        gate until the ranks go — as it would run on the host: killed past ``deadline`` of
        its timed run (then its output so far is kept, and the run is hung). What it prints
        goes to files on the host, which come here (``output`` and its ``.stderr``, beside
        its command line in ``.argv``, as :func:`harness.system.proc.run_tool` keeps them)
        however the phase ended, short of an interrupt; each is removed there once here."""
        if self.scratch is None:
            raise DfsbenchError(f"{argv[0]}: no scratch directory on {host.machine.name} for a rank's output")
        cmd = [str(a) for a in argv]
        with self._cond:
            self._tools += 1
            n = self._tools
        there = self.scratch(host) / f"tool-{self.tag}-{n}-rank{host.rank}"
        out_there, err_there = Path(f"{there}.out"), Path(f"{there}.err")
        errors = output.with_name(output.name + ".stderr")
        output.parent.mkdir(parents=True, exist_ok=True)
        output.with_name(output.name + ".argv").write_text(json.dumps([f"{host.machine.name}:", *cmd]) + "\n")
        with self._cond:
            gate = self._gates.pop(host.rank, None)  # (the gate its tool's jobs were given)
        if gate is not None and cwd is None:
            cwd = gate[0]  # (fio writes what each job's exec_prerun said where it runs: not in ready/)
        call = {"argv": cmd, "output": str(out_there), "errors": str(err_there), "deadline": deadline,
                "env": dict(env or {}), "grace": grace, **({"cwd": str(cwd)} if cwd is not None else {}),
                **({"gate": str(gate[0]), "gate_jobs": gate[1]} if gate is not None else {})}
        try:
            # (the rank's worst case: the deadline, then SIGTERM's and SIGKILL's grace each)
            said = self.collective(host, {"tool": call}, Path(cmd[0]).name,
                                   deadline + 3 * grace + (GATE_SETUP_S if gate is not None else 0.0))
        except Exception:
            # (a failed phase: what the rank's tool printed so far is kept all the same)
            for there, here in ((out_there, output), (err_there, errors)):
                with contextlib.suppress(DfsbenchError, OSError):
                    self._fetch(host.machine, there, here)
            raise
        finally:
            if gate is not None:  # (its directory goes however the phase ended; the scratch's teardown else)
                with contextlib.suppress(DfsbenchError, OSError):
                    host.machine.run(["rm", "-rf", "--", str(gate[0])], check=False, timeout=60)
        fetched = self._fetch(host.machine, out_there, output)
        self._fetch(host.machine, err_there, errors)
        code = said.get("exit")
        hung = not isinstance(code, int)  # (killed past its deadline)
        if hung:  # (what of it is left, stuck in a hung mount, must not outlive its job: KeptJobs)
            self.hung = True
        if not fetched:
            raise (Hung if hung else DfsbenchError)(
                f"rank {host.rank} on {host.machine.name}: what {Path(cmd[0]).name} printed could not be read "
                f"from {out_there} (it stays there until the run's scratch directory is removed)")
        return proc.ToolRun(cmd, code if isinstance(code, int) else None, output.read_text(errors="replace"),
                            errors.read_text(errors="replace") if errors.exists() else "",
                            float(said.get("elapsed", 0.0)))

    @staticmethod
    def _fetch(machine: Host, there: Path, here: Path) -> bool:
        """Bring a file of ``machine`` here, streamed (fio's output may be megabytes), and
        remove it there; False, and left there, where it could not be read."""
        part = here.with_name(here.name + ".fetching")
        try:
            got = machine.run_tool(["cat", "--", str(there)], deadline=600, output=part)
            if not got.ok:
                return False
            part.replace(here)
        finally:
            for left in (part, part.with_name(part.name + ".argv"), part.with_name(part.name + ".stderr")):
                left.unlink(missing_ok=True)
        with contextlib.suppress(DfsbenchError, OSError):
            machine.run(["rm", "-f", "--", str(there)], check=False, timeout=60)
        return True


class KeptJobs:
    """The MPI job of an attached target kept from one cell to the next, as IO500 runs all its
    phases in one ``mpirun``: a cell whose clients are laid out as the last cell's (the same
    hosts, reached the same way, the same ranks on each, the same network) takes the job that
    cell ended with, instead of paying a job's start again (8 ranks on a 2-core container lab
    take 1-3 s to be up). A job is kept only after a cell that ended well (no rank's tool
    hung), and only while it runs; at most one is kept: another layout ends it, and so does a
    cell that does not run as ranks (:func:`set_aside`: nothing of the job waits on the hosts
    while other work runs there); the kept one ends with the attachment (:func:`kept_jobs`).
    While kept, its ranks rest (they poll for a command every 50 ms, not every 2 ms:
    ``harness.execution.mpi_rank``); the cell that takes it wakes them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: tuple[tuple[Any, ...], MpiJob] | None = None

    def take(self, key: tuple[Any, ...]) -> MpiJob | None:
        """The job kept for this layout, woken, if one is (and still runs); another layout's ends."""
        with signals.shielded():
            with self._lock:
                kept, self._kept = self._kept, None
            if kept is None:
                return None
            if kept[0] == key and kept[1].alive():
                kept[1].rest(False)
                return kept[1]
            kept[1].close()
            return None

    def give(self, key: tuple[Any, ...], mpi: MpiJob) -> None:
        """Keep ``mpi``, resting, for the next cell of its layout (ending one kept before)."""
        with signals.shielded():
            mpi.rest(True)
            with self._lock:
                before, self._kept = self._kept, (key, mpi)
            if before is not None:
                before[1].close()

    def close(self) -> None:
        with signals.shielded():
            with self._lock:
                kept, self._kept = self._kept, None
            if kept is not None:
                kept[1].close()


_kept: KeptJobs | None = None  # (the attachment's, while one runs its cells: :func:`kept_jobs`)


@contextmanager
def kept_jobs() -> Iterator[KeptJobs]:
    """While the block runs (an attached target's cells), a cell's MPI job is kept for the
    next cell of the same layout (:class:`KeptJobs`); the job kept ends with the block,
    however it ends."""
    global _kept
    outer, _kept = _kept, KeptJobs()
    kept = _kept
    try:
        yield kept
    finally:
        _kept = outer
        kept.close()


def set_aside() -> None:
    """A cell that does not run as ranks starts: the job kept for the next one that does ends
    (its ranks would wait on the client hosts while this cell measures them)."""
    if _kept is not None:
        _kept.close()


def layout(hosts: Sequence[Host], decision: Decision, per_host: int, network: str | None) -> tuple[Any, ...]:
    """What a cell's job is, for :class:`KeptJobs`: each host as it is reached from here (the
    argv that runs a command there), the names of the hostfile, the ranks on each, the network."""
    return (tuple(tuple(h.wrap(["true"])) for h in hosts), tuple(decision.hostnames), per_host, network)


@contextmanager
def job(target: Target, decision: Decision, launch: Launch, per_host: int, log: Path,
        on_start: Callable[[float], None] | None, scratch: Callable[[Host], Path] | None,
        keep: list[Written] | None) -> Iterator[tuple[RankLineup, list[Target]]]:
    """A cell's MPI job up (the one the last cell kept, where it is of the same layout:
    :class:`KeptJobs`; else a new one, whose ``mpirun`` writes to ``log``), its line-up, and a
    view of the attachment for each rank (in rank order). When the block ends well (and no
    rank's tool hung) the job is kept for the next cell where one is kept, else ended; a
    failed cell's, or an interrupted one's, is ended at once."""
    hosts = target.hosts
    key = layout(hosts, decision, per_host, launch.network)
    kept = _kept
    mpi: MpiJob | None = None
    ending = 0.0  # (when its end began: its length is the job's closed_s)
    well = False
    try:
        mpi = kept.take(key) if kept is not None else None
        if mpi is None:
            mpi = MpiJob(hosts, decision.hostnames, per_host, launch.network, log)
            mpi.launch()
        mpi.cells += 1
        lineup = RankLineup(mpi, on_start, scratch, keep)
        shares = {h.label: MachineShare() for h in hosts}
        ranks = [RankHost(h, k, per_host, i * per_host + k, lineup, shares[h.label])
                 for i, h in enumerate(hosts) for k in range(per_host)]
        views = [replace(target.on(r).for_cell(lineup), peers=tuple(ranks)) for r in ranks]
        yield lineup, views
        well = not lineup.hung
    except BaseException:  # (a failed cell, an interrupt: the job ends now, not after its phase)
        ending = time.monotonic()
        if mpi is not None:
            mpi._stop()
        raise
    finally:
        with signals.shielded():
            if mpi is not None and well and kept is not None and mpi.alive():
                kept.give(key, mpi)
            elif mpi is not None:
                ending = ending or time.monotonic()
                mpi.close()
                mpi.closed_s = time.monotonic() - ending  # (its whole end, stopped or told)
