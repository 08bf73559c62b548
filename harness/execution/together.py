"""One cell on every client host of a target at once (a workload's ``clients: all``).

Each client runs the workload on its own view of the attachment (``Target.on``: its own
paths and tools, a cache drop that remounts only its own client), in a thread of its own;
every timed phase of the cell starts behind a barrier across the clients
(``Target.begin``). Where the workload's timed phases are engine calls (``Workload.ranks``)
and the launcher is MPI (:mod:`harness.execution.ranks`), the clients are the ranks of one
MPI job, ``ranks_per_client`` on each host, and the barrier is the job's. Each client's
records carry ``host`` (its host's name), ``rank`` (where a host ran several), ``clients``
(how many hosts ran), ``launcher``, and, for a rate, when its timed phase started and
ended (``started``, ``ended``: seconds since the epoch on this machine's clock) and what it
moved then (``bytes``, ``files`` or ``ops``, as the rate's unit counts). With several ranks
on a host, each host's records are also given, its ranks as one client (``ranks``: how
many), by the aggregate's definitions below.

The aggregate, ``host: all``, is defined as (IOR's and smallfile's definitions):

- a rate (B/s, files/s, op/s): everything the clients moved, over the span from the first
  start to the last end (``basis: span``) — never a sum of the clients' own rates, which
  exceeds it as soon as one client finishes before another;
- where the clients' intervals differ by more than :data:`UNEVEN` of that span, also the
  rate over the interval in which all of them ran (``<metric>_stonewalled``: what each
  moved between the last start and the first end, from the progress each reported);
- ``elapsed``: the span.

- a latency percentile (``lat_p99``): the percentile of the clients' merged histograms
  (``basis: merged histograms``), where every client's record carries its histogram — never
  an average of their percentiles, which cannot be added or averaged — and so in each
  second (its series).

Other latencies stay per client. A client that fails is
recorded as failed; the aggregate is then left out, since it would cover fewer clients.
Records that cannot be added up (their parameters differ, or they lack an interval) give
an aggregate without a value, flagged ``no-aggregate``, that says why.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.api.contracts import Workload
from harness.api.histogram import merged, per_second, percentile_of
from harness.api.records import AMOUNT, CIRCUMSTANTIAL, CLIENTS_OWN, Measurement
from harness.api.series import percentile_of_bins
from harness.api.launch import Launch
from harness.api.target import Lineup, Target, Written
from harness.errors import DfsbenchError
from harness.execution import mpi_job, ranks
from harness.system.hosts import Host
from harness.system.names import host_part, named_path

# beside the clients' directories of raw outputs: names no client's directory has ('_' and
# no two hex digits: harness.system.names.host_part)
LAUNCH_FILE = "_launch.json"
MPIRUN_LOG = "_mpirun.log"
UNEVEN = 0.05  # intervals that differ by more than this share of the span: also the stonewalled rate
# what differs between the clients' records of one cell by design
PER_CLIENT = frozenset({"host", "clients", "rank", "ranks"}) | CIRCUMSTANTIAL
OWN = frozenset(AMOUNT.values()) | {"read_on", "rank"} | CLIENTS_OWN  # a client's own, left out of the aggregate


def spread(workload: Workload, target: Target) -> bool:
    """Whether a cell runs on every client host of the target at once: the workload says
    'all' (by default, where the environment's clients are all used, only on file system
    targets: several clients on one RBD image would fight over its lock)."""
    if workload.clients != "all" or len(target.hosts) < 2:
        return False
    return workload.clients_given or target.kind == "path"


def run(workload: Workload, target: Target, cell: dict[str, Any], scratch: Callable[[Host], Path],
        raw_dir: Path, what: str, on_start: Callable[[float], None] | None = None,
        keep: list[Written] | None = None, launch: Launch | None = None,
        note: Callable[[str], None] | None = None) -> Iterator[Measurement]:
    """Per-client records of the cell, then the aggregate; raises if a client failed
    (after the records of those that did not). ``on_start`` hears when the first timed
    phase begins. Launched as ``launch`` says (:mod:`harness.execution.ranks`: the clients
    as the ranks of one MPI job, where the workload can run so; ``note`` hears the choice
    the first time it is made)."""
    hosts = target.hosts
    per_host = ranks_per_client(workload, launch)
    decision = mpi_job.decide(launch, hosts) if workload.ranks else None
    if per_host > 1 and (decision is None or decision.launcher != "mpi"):
        raise DfsbenchError(f"{what}: ranks_per_client {per_host} needs the MPI launcher, and "
                            + ("this workload does not run as MPI ranks" if decision is None else
                               f"the cell is launched with exec ({decision.why})"))
    if decision is not None and note is not None and mpi_job.first_said(decision):
        note(f"  clients launched with {decision.launcher}: {decision.why}")
    if decision is None or decision.launcher != "mpi":
        lineup = Lineup(len(hosts), on_start, scratch, keep)
        clients = sorted((h.label, target.on(h).for_cell(lineup)) for h in hosts)  # (by label, as ever)
        try:
            yield from _records(workload, cell, raw_dir, what, lineup, clients, scratch,
                                {"launcher": "exec"} if decision is not None else {}, len(hosts))
        finally:
            if decision is not None:  # (a workload that could run as ranks: how it was launched instead)
                _launch_kept(raw_dir, {"launcher": "exec", "released": lineup.released})
        return
    log = raw_dir / MPIRUN_LOG
    extra = {"launcher": "mpi", **({"ranks_per_client": per_host} if per_host > 1 else {})}
    job: list[ranks.RankLineup] = []
    try:
        with ranks.job(target, decision, launch or Launch(), per_host, log, on_start, scratch, keep) as (lineup, views):
            job.append(lineup)
            yield from _records(workload, cell, raw_dir, what, lineup, [(v.host.label, v) for v in views], scratch,
                                extra, len(hosts), per_host)
    finally:
        if job:  # (after the job's end, which it says the length of)
            mpi = job[0].job
            _launch_kept(raw_dir, {"launcher": "mpi", "mpirun_started": mpi.started, "up_s": mpi.up_s,
                                   "job_cell": mpi.cells, "mpirun_log": os.path.relpath(mpi.log, raw_dir),
                                   "closed_s": mpi.closed_s, "ranks": mpi.size, "released": job[0].released,
                                   "left_barrier": job[0].left, "sent": job[0].sent})


def _launch_kept(raw_dir: Path, said: dict[str, Any]) -> None:
    """How the cell's clients were launched, beside their raw outputs (:data:`LAUNCH_FILE`):
    when each step let them go (``released``) — exec: this machine's clock when the last
    came to it; mpi: a timed phase's, when each rank started its timed work (its clock: the
    moment rank 0 set, where the ranks share one clock, else when it left the barrier) —
    and for mpi, when each rank left the barrier (``left_barrier``, its clock), when the
    last of their threads here came to the phase (``sent``, this machine's clock), when
    ``mpirun`` started, how long until every rank was up (``up_s``, as rank 0's word came
    here), which of the job's cells this was (``job_cell``: 1 where the cell started the job,
    more where an earlier cell of the attachment kept it: ``harness.execution.ranks.KeptJobs``),
    where ``mpirun``'s log is (``mpirun_log``, from this directory: the first cell's) and how
    long its end took (``closed_s``; None where the job was kept for the next cell)."""
    raw_dir.mkdir(parents=True, exist_ok=True)
    (raw_dir / LAUNCH_FILE).write_text(json.dumps(said, indent=1))


def ranks_per_client(workload: Workload, launch: Launch | None) -> int:
    """The ranks on each client host of a cell: the workload entry's, else the environment's
    where the workload runs as ranks, else one."""
    if workload.ranks_per_client is not None:
        return workload.ranks_per_client
    if not workload.ranks:  # (the environment's is for the workloads that run as ranks)
        return 1
    return launch.ranks_per_client if launch is not None else 1


def _records(workload: Workload, cell: dict[str, Any], raw_dir: Path, what: str, lineup: Lineup,
             clients: list[tuple[str, Target]], scratch: Callable[[Host], Path], extra: dict[str, Any],
             hosts: int, per_host: int = 1) -> Iterator[Measurement]:
    """Run the cell on every client (a view each: a client host, or a rank of one) at
    once, then its records: each client's (``host``: its host's label, and ``rank``
    where a host has several), each host's where it has several ranks, the aggregate."""
    results: dict[str, list[Measurement]] = {}
    errors: dict[str, str] = {}
    stopped: list[BaseException] = []

    def one(label: str, view: Target) -> None:
        raw = named_path(raw_dir, host_part(label))
        raw.mkdir(parents=True, exist_ok=True)
        try:
            where = scratch(view.host)
            if workload.times_phases:  # (the scratch directories made, every client sets out together)
                lineup.wait("the cell")
            else:  # (its phases are not said: the cell's start is its timed start)
                view.begin("the cell")
            results[label] = list(workload.run(view, cell, where, raw))
        except BaseException as exc:  # (whatever stops a client, the others must not wait for it)
            message = exc.message if isinstance(exc, DfsbenchError) else f"{type(exc).__name__}: {exc}"
            errors[label] = message
            lineup.abort(f"client {label} failed: {message}")
            if not isinstance(exc, Exception):  # (an interrupt: raised again where the run can stop, not here)
                stopped.append(exc)

    threads = [threading.Thread(target=one, args=(label, view), name=f"dfsbench-{label}") for label, view in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if stopped:
        raise stopped[0]
    machine = {label: view.host.machine.label for label, view in clients}
    each = per_client(results, [label for label, _ in clients], machine, extra, hosts, per_host)
    yield from each
    if errors:
        raise DfsbenchError(f"{what}: " + "; ".join(f"{label}: {error}" for label, error in errors.items()))
    yield from summed(each, len(clients), hosts, per_host, cell)


def per_client(results: dict[str, list[Measurement]], order: list[str], machine: dict[str, str],
               extra: dict[str, Any], hosts: int, per_host: int = 1) -> list[Measurement]:
    """Each client's records (``results``, by its label, in ``order``: the ranks' order),
    saying its host (``machine``: a client's host's label), how many hosts ran, and its
    rank where a host ran several."""
    out = []
    for i, label in enumerate(order):
        for m in results.get(label, ()):
            params = {**m.params, **extra, "host": machine[label], "clients": hosts}
            if per_host > 1:
                params["rank"] = i
            out.append(replace(m, params=params))
    return out


def summed(each: list[Measurement], clients: int, hosts: int, per_host: int,
           cell: dict[str, Any]) -> list[Measurement]:
    """What the ``clients`` clients of a cell did together: with several ranks per host,
    each host's (its ranks as one client: ``host`` its label, ``ranks``), then everyone's
    (``host: all``) — each by :func:`aggregate` over the clients' own records, never over
    other sums."""
    out = []
    if per_host > 1:
        for host in dict.fromkeys(str(m.params["host"]) for m in each):
            for m in aggregate([m for m in each if m.params["host"] == host], per_host, cell):
                # (no progress of its own: a timeline or a fault's figures, which add up the
                # clients' series, never count a host's sum as one more client)
                out.append(replace(m, params={**m.params, "host": host, "clients": hosts, "ranks": per_host},
                                   progress=(), series=None))
    for m in aggregate(each, clients, cell):
        out.append(replace(m, params={**m.params, "clients": hosts, **({"ranks": clients} if per_host > 1 else {})}))
    return out


def _client(m: Measurement) -> str:
    """Which client gave a record: its host, and its rank there where it has several."""
    rank = m.params.get("rank")
    return str(m.params.get("host")) + (f"/{rank}" if rank is not None else "")


def _identity(m: Measurement) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, repr(v)) for k, v in m.params.items() if k not in PER_CLIENT))


def aggregate(records: list[Measurement], clients: int, cell: dict[str, Any] | None = None) -> list[Measurement]:
    """The ``host: all`` records of a cell run on ``clients`` hosts (see the module): one
    per figure the clients gave with the same parameters (a mixed fio profile's reads and
    writes, iozone's record sizes: each its own); where the clients' records of a test and
    metric disagree, one without a value that says how. A client's own amounts are left
    out of the aggregate's parameters, but for those that are ``cell`` parameters too
    (smallfile's ``files``)."""
    own = OWN - set(cell or {})
    groups: dict[tuple[str, str], dict[tuple[tuple[str, str], ...], list[Measurement]]] = {}
    for m in records:
        if m.value is not None:
            groups.setdefault((m.test, m.metric), {}).setdefault(_identity(m), []).append(m)
    out = []
    for (_, metric), kinds in groups.items():
        whole = [found for found in kinds.values() if len(found) == clients]
        parts = [m for found in kinds.values() if len(found) != clients for m in found]
        for found in whole + ([parts] if parts else []):
            out.extend(_aggregate(found, metric, clients, own))
    return out


def _aggregate(found: list[Measurement], metric: str, clients: int, own: frozenset[str]) -> list[Measurement]:
    first = found[0]
    # (what one client moved, and where it read, are that client's: not the aggregate's)
    params = {**{k: v for k, v in first.params.items() if k not in own}, "host": "all", "clients": clients}
    flags = tuple(dict.fromkeys(f for m in found for f in m.flags))
    if first.unit not in AMOUNT and metric != "elapsed":
        return _percentile(found, metric, clients, params, flags)  # (any other latency stays per client)
    why = _cannot_add(found, clients, AMOUNT.get(first.unit))
    if why:
        return [replace(first, value=None, params={**params, "why": why}, flags=(*flags, "no-aggregate"))]
    start = min(float(m.params["started"]) for m in found)
    end = max(float(m.params["ended"]) for m in found)
    span = end - start
    params.update(started=start, ended=end)
    if metric == "elapsed":
        return [replace(first, value=span, params=params, flags=flags)]
    amount = AMOUNT[first.unit]
    moved = sum(float(m.params[amount]) for m in found)
    out = [replace(first, value=moved / span, params={**params, "moved": moved, "basis": "span"}, flags=flags)]
    common = (min(float(m.params["ended"]) for m in found), max(float(m.params["started"]) for m in found))
    if span - (common[0] - common[1]) > UNEVEN * span:
        out.append(_stonewalled(first, found, params, common, flags))
    return out


def _percentile(found: list[Measurement], metric: str, clients: int, params: dict[str, Any],
                flags: tuple[str, ...]) -> list[Measurement]:
    """A latency percentile of every client's operations: of their merged histograms (never
    an average of their percentiles), and so every second (``stalled_s``: the whole seconds
    in which no client completed an operation). Nothing where one client has no histogram."""
    p = percentile_of(metric)
    if p is None or len(found) != clients or any(m.histogram is None or not m.histogram.bins for m in found) \
            or len({_identity(m) for m in found}) > 1:
        return []
    value = percentile_of_bins(merged(m.histogram.bins for m in found if m.histogram), p)
    if value is None:
        return []
    over_time, stalled = per_second([m.histogram for m in found if m.histogram], p)
    started = [float(m.params["started"]) for m in found if isinstance(m.params.get("started"), (int, float))]
    ended = [float(m.params["ended"]) for m in found if isinstance(m.params.get("ended"), (int, float))]
    if len(started) == len(ended) == len(found):
        params = {**params, "started": min(started), "ended": max(ended)}
    params = {**params, "basis": "merged histograms", **({"stalled_s": stalled} if stalled else {})}
    return [replace(found[0], value=value, params=params, flags=flags, series=over_time, histogram=None,
                    progress=())]


def _cannot_add(found: list[Measurement], clients: int, amount: str | None) -> str:
    """Why these records of one test and metric cannot be added up ('': they can)."""
    if len({_identity(m) for m in found}) > 1:
        keys = sorted({k for m in found for k in m.params if k not in PER_CLIENT
                       and len({repr(o.params.get(k)) for o in found}) > 1})
        return "the clients' records differ in " + ", ".join(
            f"{k} ({' vs '.join(sorted({repr(m.params.get(k)) for m in found}))})" for k in keys)
    hosts = {_client(m) for m in found}
    if len(hosts) != len(found):
        return f"{len(found)} records from {len(hosts)} clients for one figure"
    if len(found) != clients:
        return f"{len(found)} of {clients} clients gave this figure"
    needed = ("started", "ended") + ((amount,) if amount else ())
    lacking = sorted({k for m in found for k in needed if not isinstance(m.params.get(k), (int, float))})
    if lacking:
        return f"the clients' records do not say {', '.join(lacking)}"
    if max(float(m.params["ended"]) for m in found) <= min(float(m.params["started"]) for m in found):
        return "the clients' intervals are empty"
    return ""


def _stonewalled(first: Measurement, found: list[Measurement], params: dict[str, Any],
                 common: tuple[float, float], flags: tuple[str, ...]) -> Measurement:
    """The rate over the interval in which every client ran (last start to first end):
    what each moved then, from its reported progress; no value where one reported none."""
    end, start = common
    metric = f"{first.metric}_stonewalled"
    base = {**params, "stonewall": [start, end]}
    if end <= start:
        return replace(first, metric=metric, value=None, flags=(*flags, "no-aggregate"),
                       params={**base, "why": "no moment when all the clients were running"})
    if any(len(m.progress) < 2 for m in found):
        return replace(first, metric=metric, value=None, flags=(*flags, "no-aggregate"),
                       params={**base, "why": "a client reported no progress over time"})
    each = {_client(m): moved_by(m.progress, end) - moved_by(m.progress, start) for m in found}
    moved = sum(each.values())
    return replace(first, metric=metric, value=moved / (end - start), flags=flags,
                   params={**base, "moved": moved, "moved_each": each, "basis": "stonewalled"})


def moved_by(progress: tuple[tuple[float, float], ...], t: float) -> float:
    """How much a client had moved at time ``t``: its progress, a cumulative count at
    moments, taken as linear between them (0 before the first, all after the last)."""
    if t <= progress[0][0]:
        return progress[0][1] if t == progress[0][0] else 0.0
    for (t0, a0), (t1, a1) in zip(progress, progress[1:]):
        if t <= t1:
            return a0 + (a1 - a0) * (t - t0) / (t1 - t0) if t1 > t0 else a1
    return progress[-1][1]
