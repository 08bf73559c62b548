"""One cell of a run: what it runs (a workload's parameters), on what (an attachment of a
backend, on the environment's cluster), at which point of the sweep and in which repeat,
with the attachment's scratch directories and its key, the same in every session of the
run. It runs once, or before, during and after its fault, and every record it makes goes to
the store through one place (:meth:`Cell._add`), the moment it exists."""

from __future__ import annotations

import contextlib
import itertools

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from harness.api import registry
from harness.api.contracts import Backend, Cluster, Workload
from harness.api.records import Measurement, describe_cell
from harness.api.sampler import CLIENT, Sampler
from harness.api.target import Lineup, Target, Written
from harness.errors import DfsbenchError, Hung, StoreUnwritable
from harness.execution import ranks, sampling, timelines, together
from harness.execution.checks import room_for, still_there
from harness.execution.group import Group
from harness.execution.order import Order
from harness.execution.plan import Plan
from harness.execution.progress import Progress
from harness.execution.sweep import Point
from harness.execution.timeline import Timeline, record
from harness.report.limits import caches_dropped
from harness.results.store import Store
from harness.system import load
from harness.system.hosts import Host

UNFINISHED = frozenset({"hung", "failed", "incomplete"})


@dataclass(frozen=True)
class Run:
    """What every step of one run shares: where it stores, what it shows, what is done."""

    plan: Plan
    store: Store
    progress: Progress
    id: str
    done: set[str] = field(default_factory=set)  # cells that succeeded (of an earlier session)
    raw: tuple[str, ...] = ()  # under the run's raw directory: a resumed session's own
    order: Order = Order()  # the order its cells go in (the config's 'order'): as listed, unless shuffled
    # the cells this session runs (those of :func:`every_cell` not done), and how many it has
    # come to: the progress's count
    total: int = 0
    _reached: Iterator[int] = field(default_factory=lambda: itertools.count(1), repr=False, compare=False)

    def points(self) -> tuple[Point, ...]:
        return points_of(self.plan)

    def counted(self) -> str:
        """The next cell's place in the session, as the progress shows it ('[3/18] ')."""
        reached = next(self._reached)
        return f"[{reached}/{self.total}] " if self.total else ""

    def tag(self, point: Point, *parts: str) -> str:
        """A name for the directories of a point of the sweep (its number in the sweep)."""
        index = self.points().index(point) if len(self.points()) > 1 else None
        return "-".join((*parts, *([f"p{index + 1}"] if index is not None else [])))

    def raw_dir(self, *parts: str) -> Path:
        return self.store.raw_dir(self.id, *self.raw, *parts)


def cell_key(backend: Backend, rep: int, workload: str | Workload, cell: dict[str, Any]) -> str:
    """A cell of a run, the same in every session of it (``run --resume``); two entries
    of one workload that differ in their fault or clients are two cells."""
    if isinstance(workload, str):
        return json.dumps([backend.name, backend.variant, rep, workload, cell], sort_keys=True, default=str)
    entry = workload.entry()
    name: Any = [workload.name, entry] if entry else workload.name
    return json.dumps([backend.name, backend.variant, rep, name, cell], sort_keys=True, default=str)


def attach_key(backend: Backend, rep: int, point: Point) -> str:
    """The cell of an attachment (what its failure is recorded under)."""
    return cell_key(backend, rep, "attach", point.values)


@dataclass(frozen=True)
class Planned:
    """A cell of a run, planned: its point of the sweep, repeat, backend, workload (the
    config's entry ``entry``), parameters and key (:func:`cell_key`)."""

    point: Point
    rep: int
    backend: Backend
    entry: int
    workload: Workload
    params: dict[str, Any]
    key: str


# a cell whose workload does not run on the attachment its backend made (a raw-disk baseline
# on a target without a device under it): decided at the first attach, stored as its outcome,
# and so never attached for again by 'run --resume'
UNSUPPORTED = "unsupported"


def points_of(plan: Plan) -> tuple[Point, ...]:
    """The points of a plan's sweep (one, of no values, where it sweeps nothing)."""
    return plan.points or (Point({}, plan.workloads),)


def planned(run: Run, point: Point, rep: int, backend: Backend) -> list[Planned]:
    """The cells a backend runs at a point of the sweep in a repeat, in the run's order (its
    workloads' cells shuffled where they may be: harness.execution.order)."""
    return _planned(run.points(), run.order, point, rep, backend)


def every_cell(plan: Plan, order: Order = Order()) -> list[Planned]:
    """Every cell of a plan: of each repeat, each point of the sweep and each backend."""
    points = points_of(plan)
    return [p for rep in range(plan.config.repeat) for point in points for b in plan.backends
            for p in _planned(points, order, point, rep, b)]


def _planned(points: tuple[Point, ...], order: Order, point: Point, rep: int, backend: Backend) -> list[Planned]:
    """Every cell of each workload that takes the backend's kind of target. The one rule of
    what belongs to a run: what is pending, what runs, what ``check`` and the progress
    count all read it."""
    at = points.index(point)
    out = []
    for entry, workload in enumerate(point.workloads):
        if not workload.accepts & {backend.kind}:
            continue
        for params in order.cells(workload, entry, workload.cells(), rep, at):
            out.append(Planned(point, rep, backend, entry, workload, params,
                               cell_key(backend, rep, workload, {**params, **point.values})))
    return out


@dataclass(frozen=True)
class Cell:
    """The parameters ``params`` of ``workload``, run on ``target`` (the attachment of
    ``backend`` on ``cluster``) at ``point`` of the sweep in repeat ``rep``; ``scratch``
    gives the attachment's scratch directory on a client host."""

    run: Run
    point: Point
    rep: int
    backend: Backend
    cluster: Cluster
    target: Target
    scratch: Callable[[Host], Path]
    workload: Workload
    params: dict[str, Any]
    number: str = ""  # its place in the session, as the progress shows it (Run.counted)

    @cached_property
    def key(self) -> str:
        """The cell in every session of its run (:func:`cell_key`)."""
        return cell_key(self.backend, self.rep, self.workload, {**self.params, **self.point.values})

    def said(self, phase: str | None = None) -> dict[str, Any]:
        """What each record of the cell says besides its own params: the values of its point
        of the sweep, and the phase of its fault."""
        return {**self.point.values, **({"phase": phase} if phase else {})}

    def group(self, said: dict[str, Any] | None = None) -> Group:
        """The group of the cell's records: its params, with ``said``."""
        return Group(self.workload.name, {**self.params, **(said or {})}, self.backend.name, self.backend.variant)

    def measure(self) -> bool:
        """Run the cell — before, during and after its fault, where its workload has one — and
        store its outcome: whether it succeeded (a cell that did is not run again by 'run
        --resume'). The records of an earlier attempt that did not are set aside first."""
        store = self.run.store
        if store.supersede(self.run.id, self.key):
            self.run.progress.note(f"  {self.workload.name} {describe_cell(self.params)}: the records of its "
                                   "earlier, unfinished attempt are set aside")
        good = self._once() if self.workload.fault is None else self._through_fault()
        store.cell_ended(self.run.id, self.key, "ok" if good else "failed")
        return good

    def _once(self, phase: str | None = None, on_start: Callable[[float], None] | None = None,
              kept: list[Written] | None = None) -> bool:
        """One pass of the cell: its records stored as they come (with the phase given, and
        when they ran: a record that does not say is given the pass's start and the moment it
        came), what the lab's nodes spent on it, or a failed (or hung) record. Whether it
        succeeded. ``on_start`` hears when the cell's measured work begins: its first timed
        phase (a workload that does not say when its phases begin: the pass's start)."""
        run, workload, target = self.run, self.workload, self.target
        raw_dir = run.raw_dir(run.tag(self.point, self.backend.name, self.backend.variant, f"r{self.rep}"),
                              workload.name, *([phase] if phase else []))
        what = self._what(phase)
        unfinished: list[str] = []  # records that came back flagged hung, failed or incomplete
        keep = self._keeper(phase, unfinished)
        sampler = self.cluster.sampler() if self.cluster.sampler is not None else None
        sampling = False  # (a sampler started is stopped when the pass fails, too)
        spread = together.spread(workload, target) and not workload.spreads_itself()
        if not (spread and workload.ranks):  # (an MPI job kept for the next cell on ranks waits not through this one)
            ranks.set_aside()
        try:
            run.store.room()
            still_there(target)
            room_for(workload, self.params, target, self.cluster, self.backend.facts(target.description).stored_copies,
                     clients=len(target.hosts) * together.ranks_per_client(workload, self.cluster.launch)
                     if spread else 1)  # (each rank of a host writes its own)
            with run.progress.step(f"{self.number}{what}"):
                if sampler is not None:
                    sampler.start()
                    sampling = True
                host_before = self._host_before()
                with registry.blamed("workload", workload.name, f"running {what}"):  # (a plugin's own
                    for m in self._workload_records(spread, raw_dir, on_start, kept):  # fault fails its cell)
                        keep(m)
                sampling = False  # (_spent stops it)
                for m in self._spent(sampler, spread, host_before, phase):
                    keep(m)
        except StoreUnwritable:  # nowhere to keep what the run measures: it stops
            raise
        except (DfsbenchError, OSError) as exc:  # e.g. ENOTCONN from a dead FUSE client
            message = exc.message if isinstance(exc, DfsbenchError) else f"{type(exc).__name__}: {exc}"
            run.progress.note(f"  {message}")
            flag = "hung" if isinstance(exc, Hung) else "failed"
            keep(Measurement(workload.name, "cell", "elapsed", None, "s", {**self.params, "error": message[:500]},
                             self.backend.name, self.backend.variant, run.id, self.rep, (flag,)))
            if sampling and sampler is not None:
                with contextlib.suppress(Exception):  # (what it saw of a failed pass is not kept)
                    sampler.stop()
            return False
        return not unfinished  # (a tool killed at its deadline may still have printed numbers)

    def _what(self, phase: str | None) -> str:
        """A pass of the cell, as the progress shows it (after its place in the session: ``number``)."""
        what = f"{self.workload.name} {describe_cell(self.params)} on {self.backend.name}/{self.backend.variant}"
        if self.point.values:
            what += f" at {self.point.describe()}"
        if phase:
            what += f" ({phase} the fault)" if phase != "during" else " (during the fault)"
        repeat = self.run.plan.config.repeat
        if repeat > 1:
            what += f" (repeat {self.rep + 1}/{repeat})"
        return what

    def _keeper(self, phase: str | None, unfinished: list[str]) -> Callable[[Measurement], None]:
        """Where the records of a pass go: each stored at once with what the cell says besides
        (:meth:`said`) and its series, an unfinished one noted in ``unfinished``."""
        extra = self.said(phase)
        began = time.time()

        def keep(m: Measurement) -> None:
            params = {**m.params, **extra}
            if not isinstance(params.get("started"), (int, float)):  # (a workload that does not say when:
                params.update(started=round(began, 6), ended=round(time.time(), 6))  # within the cell, then)
            seq = self._add(m, params)
            over_time = timelines.series_of(replace(m, params=params))  # (held to the interval stored)
            if over_time is not None:  # (its rate every second, or the tool's own figures over time)
                self.run.store.add_series(seq, self.run.id, over_time)
            unfinished.extend(f for f in m.flags if f in UNFINISHED)

        return keep

    def _add(self, m: Measurement, params: dict[str, Any]) -> int:
        """Store a record of the cell now, with ``params``, its run and its repeat: the one
        place a cell's records go to the store. Its ``seq``."""
        return self.run.store.add(replace(m, params=params, run_id=self.run.id, repeat=self.rep), self.key)

    def _workload_records(self, spread: bool, raw_dir: Path, on_start: Callable[[float], None] | None,
                          kept: list[Written] | None) -> Iterator[Measurement]:
        """The workload's records of a pass: run on every client host at once (``spread``),
        or on the target's own, through the view of the attachment made for the cell."""
        workload, target = self.workload, self.target
        if spread:
            what_all = f"{workload.name} {describe_cell(self.params)} on {len(target.hosts)} clients at once"
            yield from together.run(workload, target, self.params, self.scratch, raw_dir, what_all, on_start, kept,
                                    self.cluster.launch, self.run.progress.note)
            return
        view = target.for_cell(Lineup(1, on_start, self.scratch, kept))
        if not workload.times_phases:
            view.begin("the cell")
        yield from workload.run(view, self.params, self.scratch(view.host), raw_dir)

    def _host_before(self) -> tuple[load.Snapshot, str | None] | None:
        """This machine's counters before a pass, and the disk under the lab, where the lab's
        nodes share this machine with a system of the cell (None: they do not)."""
        cluster = self.cluster
        shares_host = cluster.host_disk is not None and bool(self.backend.requires)
        disk = load.disk_of(cluster.host_disk) if cluster.host_disk is not None else None
        return (load.snapshot(disk), disk) if shares_host else None

    def _spent(self, sampler: Sampler | None, spread: bool, host_before: tuple[load.Snapshot, str | None] | None,
               phase: str | None) -> Iterator[Measurement]:
        """What the lab's nodes spent on a pass, and this machine under them (``resources``)."""
        group = self.group(self.said(phase))
        if sampler is not None:
            # (the client nodes that did not run the cell — one client, or the first N of a
            # sweep's point — stood idle: neither its cost nor its busiest node)
            ran = {h.label for h in (self.target.hosts if spread else (self.target.host,))}
            usages = [u for u in sampler.stop() if u.role is None or u.role.side != CLIENT or u.node in ran]
            yield from sampling.records(usages, group)
        if host_before is not None:
            before, disk = host_before
            yield from sampling.host_records(before, load.snapshot(disk), disk, group)

    def _through_fault(self) -> bool:
        """The cell before, during and after its fault (``harness.api.faults``), and the fault's
        record: what was done, time to recover, whether the data verified."""
        spec = self.workload.fault
        assert spec is not None
        if self.cluster.faults is None:
            raise DfsbenchError(f"environment '{self.cluster.environment}' cannot do faults to its nodes")
        progress = self.run.progress
        system = next(iter(sorted(self.backend.requires)), None)
        if system is None:
            progress.note(f"  {self.backend.name} runs on no cluster service: no fault to do, the cell runs once")
            return self._once()
        timeline = Timeline(self.cluster.faults, system, spec)

        ok = self._once("before")
        timeline.look_first()
        kept: list[Written] = []  # what the cell wrote, kept for the check after the fault
        try:  # (the fault's clock starts with the cell's measured work, not with its set-up)
            during_ok = self._once("during", timeline.start, kept)
            left = timeline.work_ended()
            if left > 0:  # (the node is down as long as asked, however short the work was)
                with progress.step(f"the work ended: {system} stays down {left:.1f} s more, to "
                                   f"restore_after_s {spec.restore_after_s:g} s as asked"):
                    timeline.hold()
        finally:
            timeline.restore()  # (at once on an error or an interrupt)
        with progress.step(f"waiting for {system} to be healthy again"):
            recovery, state = timeline.wait_healthy()
        noticed = timeline.noticed_after
        done = timeline.injected.description if timeline.injected else "no fault done" + (
            f" ({'; '.join(timeline.problems)})" if timeline.problems else " (the timed phase ended before it)")
        progress.note(f"  {done}; "
                      + (f"noticed after {noticed:.1f} s ({timeline.notice}); " if noticed is not None else
                         f"{timeline.notice}; " if timeline.injected else "")
                      + (f"healthy {recovery:.1f} s after it came back" if recovery is not None
                         else "" if timeline.injected is None else f"not healthy: {state}"))
        try:
            verified = verify(kept, timeline, self.target, self.workload, recovery is not None, during_ok)
        finally:
            for written in kept:
                try:
                    written.remove()
                except DfsbenchError as exc:  # (the run's directory goes at its end all the same)
                    progress.note(f"  could not remove {written.what}: {exc.message}")
        fault = record(timeline, recovery, state, verified, self.group())
        figures = timelines.fault_params(self.run.store.measurements_of(self.run.id, self.key), timeline.times())
        self._add(fault, {**self.point.values, **fault.params, **figures})  # (with the point's values, as every record)
        after_ok = self._once("after")
        healthy = recovery is not None or timeline.injected is None  # (no fault done: nothing to recover)
        return ok and during_ok and after_ok and healthy and not timeline.problems


def verify(kept: list[Written], timeline: Timeline, target: Target, workload: Workload, healthy: bool,
           cell_ok: bool) -> str:
    """Whether what the cell wrote while the fault held reads back intact, once the system
    is healthy again, from another client than the one that wrote it (its caches remounted
    away first): 'yes (how)', 'no: why', or 'not checked (why)'."""
    how = workload.verification()
    if not how:
        return f"not checked ({workload.name} does not compare what it reads back)"
    if timeline.injected_at is None:
        return "not checked (no fault was injected)"
    if not cell_ok:
        return "no: the cell failed (see 'Cells that failed')"
    if not healthy:
        return "not checked (the system was not healthy again)"
    until = timeline.restored_at or timeline.injected_at
    injected = timeline.injected_at
    during = [w for w in kept if (any(injected <= t <= until for t in w.moments) if w.moments
                                  else w.started < until and w.ended > injected)]
    if not during:
        return "not checked (nothing was written while the fault held)"
    peers = target.peers or target.hosts or (target.host,)
    checked = []
    for written in during:
        other = next((h for h in peers if h.machine.label != written.writer.machine.label), None)
        if other is None and not written.cacheless:
            return "not checked (one client only: a read on the writer could come from its cache)"
        other = other or written.writer
        view = target.on(other)
        if written.cacheless:  # (no cache of a client's answers it: each read asks the storage, on any client)
            step = "no client cache"
        else:
            step = view.drop_caches()  # (it may have read the file back in the cell: its caches go first)
            if not caches_dropped(step):
                return (f"not checked (the caches of {other.label}, which may have read it in the cell, could not "
                        f"be dropped: {step})")
        if not written.check(view):
            return f"no: {written.what} read on {other.label} does not match what was written"
        checked.append(f"{other.label} ({step})")
    return f"yes ({how}, read on {', '.join(sorted(set(checked)))} after the system was healthy)"
