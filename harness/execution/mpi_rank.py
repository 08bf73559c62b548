"""The program every rank of a cell's MPI job runs, on a client host: it imports nothing of
dfsbench (the host has a Python 3 with ``mpi4py``, not dfsbench), only the standard
library, ``mpi4py`` and the engine scripts it is told to load (``workloads/engines.py``).

    mpirun … python3 mpi_rank.py TAG

The job is launched for a cell, and kept for the next cells of its attachment laid out alike
(``harness.execution.ranks``); it is led by rank 0,
which reads one JSON command per line on its standard input (``mpirun`` hands this
machine's input to rank 0) and broadcasts it:

- ``{"phase": NAME, "calls": [{"script": PATH, "engine": NAME, "args": {…}}, …]}``: every
  rank runs the call at its own index, one timed phase: it gets ready (a smallfile engine
  forks its workers), waits at ``MPI_Barrier`` with the others, and only then starts its
  clock. A call ``{"tool": {"argv": […], "output": PATH, "errors": PATH, "deadline": S, …}}`` runs
  a measuring tool instead (fio, timed by itself): :func:`tool`. Rank 0 prints, right
  after the barrier, ``{"began": NAME, "t": …}``, and when every
  rank is done, ``{"phase": NAME, "results": [{"rank", "host", "released", "result"}, …]}``
  (a rank's ``result`` is the engine's document, or ``{"error": …}``).
- ``{"rest": true}``: nothing now; every rank waits for the next command polling every
  :data:`RESTING_POLL_S` instead of every 2 ms (the job is kept between two cells, and other
  work may run on its hosts meanwhile). ``{"rest": false}``: a cell took the job; the ranks
  wait for its phases polling every 2 ms again.
- ``{"end": true}`` (or the end of its input): every rank leaves.

At the start rank 0 prints ``{"hello": [[host, pid], …]}``, a pair per rank. Each line
rank 0 prints starts with :data:`MARK`. Ranks waiting for a command or for the others to
finish sleep between polls of a non-blocking barrier instead of spinning in a blocking
one: on a small host a spinning rank takes the CPU from the ranks still working and from
the storage daemons. Only the barrier right before a timed phase spins (the ranks reach
it together, so it is short), which is what lines their starts up to a fraction of a
millisecond.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any

MARK = "DFSBENCH-RANKS "
TOOL_ENV = "DFSBENCH_RANK_TOOL"  # in a rank's tool's environment: what of it to end at its deadline
IDLE_POLL_S = 0.002  # how often a waiting rank looks whether the others have come
RESTING_POLL_S = 0.05  # (and while the job rests between two cells: the ``rest`` command)
# where every rank reads one clock (containers of one machine), how far ahead of the
# barrier rank 0 sets the moment they all start: time for its word to reach every rank (a
# rank that gets it later starts late, and its own start says so)
AHEAD_S = 0.05


def _say(doc: dict[str, Any]) -> None:
    sys.stdout.write(MARK + json.dumps(doc) + "\n")
    sys.stdout.flush()


def _idle_wait(comm: Any, poll_s: float = IDLE_POLL_S) -> None:
    """Wait for every rank, asleep between polls of ``poll_s`` (see the module). (A
    non-blocking barrier moves on only while its ranks poll it, a round of messages at a
    time: polled every 50 ms, 8 ranks took ~0.3 s to see it end.)"""
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(poll_s)


_modules: dict[str, Any] = {}


def _engine(script: str, name: str) -> Callable[..., dict[str, Any]]:
    if script not in _modules:
        spec = importlib.util.spec_from_file_location(f"dfsbench_engine_{len(_modules)}", script)
        if spec is None or spec.loader is None:
            raise RuntimeError(f"cannot load the engine script {script}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _modules[script] = module
    found: Callable[..., dict[str, Any]] = _modules[script].ENGINES[name]
    return found


GATE_SETUP_S = 120.0  # the longest a tool's jobs take to come to their gate before the ranks go anyway
FAILED_JOB = re.compile(rb"^fio: pid=\d+, err=", re.M)  # how fio says one of its jobs failed


def tool(argv: list[str], output: str, errors: str, deadline: float, env: dict[str, str] | None = None,
         grace: float = 5.0, cwd: str | None = None, gate: str | None = None, gate_jobs: int = 1,
         ready: Callable[[], float | None] | None = None) -> dict[str, Any]:
    """Run a measuring tool as dfsbench built its command, what it prints into the files
    ``output`` and ``errors`` of this host (dfsbench fetches them: fio's may be megabytes).
    Past ``deadline`` seconds of its timed run its processes get SIGTERM, then SIGKILL after
    ``grace``, and ``exit`` is None (hung; its output so far is kept), as with a tool
    dfsbench runs itself (``harness.system.proc.run_tool``): its process group, and every
    process that carries its mark in the environment (fio's jobs each leave the group for a
    session of their own). Returns its exit code and how long its timed run lasted.

    Without a ``gate`` the tool is started when the ranks go (``ready``: the barrier, and
    the moment rank 0 set). With one (a directory of this host: each of the tool's
    ``gate_jobs`` jobs, once set up, makes a file in ``ready/`` and reads the FIFO ``go``
    before its timed I/O — fio's ``exec_prerun``: ``harness.execution.ranks.gate_line``) it
    is started first, the FIFO held open here. Once every job waits there, or said it failed
    (fio prints ``fio: pid=…, err=…``), or the tool ended, or :data:`GATE_SETUP_S` passed,
    the rank goes to the barrier; at the moment the ranks go it puts an empty file in the
    FIFO's place (a job that comes later reads its end at once) and lets go of the FIFO,
    whose end every job reading it reads at once. What the tools take to set themselves up
    is then before the start, not in its spread; the deadline counts from the start."""
    import signal
    import subprocess

    mark = f"{os.getpid()}-{time.monotonic_ns()}"  # (in the tool's environment: TOOL_ENV)
    held: int | None = None  # (the FIFO's one writer: while it is open, the jobs wait)
    if gate is None:
        at = ready() if ready is not None else None
        if at is not None and at > time.time():
            time.sleep(at - time.time())
    else:
        fifo = os.path.join(gate, "go")
        os.mkfifo(fifo)
        held = os.open(fifo, os.O_RDWR)  # (never blocks; a job's open then does not either)
    started = time.monotonic()
    try:
        with open(output, "wb") as out, open(errors, "wb") as err:
            child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                     start_new_session=True, cwd=cwd,
                                     env={**os.environ, **(env or {}), TOOL_ENV: mark})
            if held is not None and gate is not None:
                come = os.path.join(gate, "ready")
                while child.poll() is None and time.monotonic() - started < GATE_SETUP_S:
                    with open(output, "rb") as said:
                        failed = len(FAILED_JOB.findall(said.read(1 << 20)))
                    if len(os.listdir(come)) + failed >= gate_jobs:
                        break
                    time.sleep(IDLE_POLL_S * 10)
                at = ready() if ready is not None else None
                if at is not None and at > time.time():
                    time.sleep(at - time.time())
                with open(fifo + ".open", "wb"):
                    pass
                os.replace(fifo + ".open", fifo)  # (a job that opens it from now on reads its end)
                os.close(held)  # (no writer left: every job reading the FIFO reads its end now)
                held = None
                started = time.monotonic()
            code: int | None
            try:
                code = child.wait(timeout=max(0.0, deadline - (time.monotonic() - started)))
            except subprocess.TimeoutExpired:
                code = None
                for sig in (signal.SIGTERM, signal.SIGKILL):
                    _signal_marked(mark, child.pid, sig)
                    try:
                        child.wait(timeout=grace)
                    except subprocess.TimeoutExpired:
                        continue
                    if sig == signal.SIGTERM:  # (what of it is left, ended too: a job of its own session)
                        time.sleep(min(grace, 1.0))
                        _signal_marked(mark, child.pid, signal.SIGKILL)
                    break
    finally:
        if held is not None:
            os.close(held)
    return {"exit": code, "elapsed": time.monotonic() - started}


def _signal_marked(mark: str, group: int, sig: int) -> None:
    """Send ``sig`` to the process group ``group`` and to every process whose environment
    carries ``TOOL_ENV=mark`` (woken too, where it was stopped)."""
    import signal

    pids = set()
    wanted = f"{TOOL_ENV}={mark}".encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if wanted in f.read().split(b"\0"):
                        pids.add(int(entry))
            except OSError:
                continue
    for kill, target in [(os.killpg, group)] + [(os.kill, pid) for pid in sorted(pids)]:
        try:
            kill(target, sig)
            kill(target, signal.SIGCONT)  # (a stopped process only dies of SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue


def _phase(comm: Any, rank: int, host: str, command: dict[str, Any]) -> None:
    phase = str(command["phase"])
    call = command["calls"][rank]
    released: list[float] = []  # when the rank starts its timed work
    left: list[float] = []  # when it left the barrier

    def ready() -> float | None:
        """Everything set up: wait for the others; the moment to go (None: now). Where the
        ranks share one clock, they go at one moment of it that rank 0 sets just after the
        barrier: a barrier lets its ranks out one after another as a small host schedules
        them, a moment slept to lets them out within a wake-up. Whoever does the timed work
        (the rank, or a smallfile rank's workers) sleeps until it, then starts its clock."""
        _idle_wait(comm)  # (all of them ready, asleep meanwhile)
        comm.Barrier()  # (and out of it together)
        left.append(time.time())
        at = comm.bcast(time.time() + AHEAD_S if rank == 0 else None, root=0) if command.get("one_clock") else None
        released.append(at if at is not None else left[0])
        if rank == 0:
            _say({"began": phase, "t": released[0]})
        return at

    result: dict[str, Any]
    try:
        engine: Callable[..., dict[str, Any]] = tool if "tool" in call else _engine(str(call["script"]),
                                                                                   str(call["engine"]))
        args = dict(call["tool"] if "tool" in call else call["args"])
        if "ready" in inspect.signature(engine).parameters:
            result = engine(**args, ready=ready)
        else:
            at = ready()
            if at is not None and at > time.time():
                time.sleep(at - time.time())
            result = engine(**args)
    except Exception as exc:  # noqa: BLE001 (said to rank 0, which says it to dfsbench)
        deadline = type(exc).__name__ == "Deadline"
        result = {"error": f"{type(exc).__name__}: {exc}" if not deadline else str(exc), "hung": deadline}
    finally:
        if not released:  # (a rank that failed before the barrier still lets the others through)
            ready()
    _idle_wait(comm)
    gathered = comm.gather({"rank": rank, "host": host, "released": released[0], "left": left[0],
                            "result": result}, root=0)
    if rank == 0:
        _say({"phase": phase, "results": gathered})


def main(argv: list[str]) -> int:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    host = MPI.Get_processor_name()
    hello = comm.gather([host, os.getpid()], root=0)
    if rank == 0:
        _say({"hello": hello, "tag": argv[1] if len(argv) > 1 else ""})
    resting = False
    while True:
        command: dict[str, Any] | None = None
        if rank == 0:
            line = sys.stdin.readline()
            try:
                command = json.loads(line) if line.strip() else {"end": True}
            except json.JSONDecodeError:
                command = {"end": True, "error": f"not a command: {line[:200]!r}"}
        _idle_wait(comm, RESTING_POLL_S if resting else IDLE_POLL_S)
        command = comm.bcast(command, root=0)
        if command is None or command.get("end"):
            if rank == 0 and command and command.get("error"):
                _say({"error": command["error"]})
            return 0
        if "rest" in command:  # (kept between two cells, or taken by the next: see the module)
            resting = bool(command["rest"])
            continue
        _phase(comm, rank, host, command)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
