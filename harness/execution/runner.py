"""Executes a Plan: environment up, each backend attached, each workload cell run, every
measurement stored the moment it exists. A failing cell is recorded and the run goes on."""

from __future__ import annotations

import json
import os
import platform
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness import __version__
from harness.api.contracts import Backend, Cluster, Workload
from harness.api.records import Measurement, describe_cell
from harness.api.target import Lineup, Target, Written
from harness.errors import BadInput, DfsbenchError, Hung, StoreUnwritable
from harness.api.sampler import CLIENT
from harness.execution import sampling, timelines, together
from harness.execution.checks import preflight, room_for, still_there
from harness.execution.group import Group
from harness.execution.plan import Plan, Point
from harness.execution.progress import Progress
from harness.execution.timeline import Timeline, record
from harness.report.limits import caches_dropped
from harness.results.store import Store, new_run_id
from harness.system import load, proc, signals
from harness.system.hosts import LOCAL, Host, this_machine
from harness.system.ledger import recording_tools
from harness.system.names import named_path
from harness.system.secret import redact_json


def host_facts() -> dict[str, Any]:
    """This machine, the dfsbench that ran, and the process that ran it (for resume)."""
    return {**this_machine(), "dfsbench": __version__, "pid": os.getpid()}


def tool_versions(workloads: list[Any], host: Host = LOCAL) -> dict[str, str]:
    """The first line each workload's tool prints of its version (``version_argv``) on
    the host its client runs on."""
    found: dict[str, str] = {}
    for w in workloads:
        argv = getattr(w, "version_argv", None)
        if not argv or argv[0] in found:
            continue
        try:
            result = host.run(argv, timeout=20, check=False)
        except DfsbenchError:
            found[argv[0]] = "not installed"
            continue
        lines = [line.strip() for line in (result.stdout + result.stderr).splitlines() if line.strip()]
        version = next((line for line in lines if any(ch.isdigit() for ch in line)), "unknown")
        found[argv[0]] = version[:120]
    return found


def order_for(backends: list[Backend], repeat: int) -> list[Backend]:
    """A B, then B A, then A B … so drift over time does not favour one backend."""
    return backends if repeat % 2 == 0 else list(reversed(backends))


@dataclass
class Run:
    """What every step of one run shares: where it stores, what it shows, what is done."""

    plan: Plan
    store: Store
    progress: Progress
    id: str
    done: set[str] = field(default_factory=set)  # cells that succeeded (of an earlier session)
    raw: tuple[str, ...] = ()  # under the run's raw directory: a resumed session's own
    point: Point = field(default_factory=lambda: Point({}, []))  # of the sweep, being run

    def points(self) -> tuple[Point, ...]:
        return self.plan.points or (Point({}, self.plan.workloads),)

    def tag(self, *parts: str) -> str:
        """A name for the current point's directories (the point's number in a sweep)."""
        index = self.points().index(self.point) if len(self.points()) > 1 else None
        return "-".join((*parts, *([f"p{index + 1}"] if index is not None else [])))

    def raw_dir(self, *parts: str) -> Path:
        return self.store.raw_dir(self.id, *self.raw, *parts)


def unwinding(exc: BaseException) -> KeyboardInterrupt | None:
    """The interrupt (Ctrl-C, SIGTERM) that ``exc`` was raised while unwinding from — an
    attachment's undo that failed because the interrupt cut a command short (a GlusterFS
    volume still starting: 'another transaction is in progress') — or None. That interrupt,
    not the undo's error, is what stopped the work: the run stops as interrupted, it does not
    go on to the next backend as if the attachment had merely failed."""
    seen: set[int] = set()
    cause = exc.__context__
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return cause
        seen.add(id(cause))
        cause = cause.__context__
    return None


def execute(plan: Plan, store: Store, progress: Progress, label: str | None = None,
            resume: str | None = None) -> tuple[str, bool]:
    """Run the plan, or (``resume``: a run's id) the cells of that run that are missing
    or failed; returns (run id, whether every cell succeeded)."""
    store.room()
    if resume is None:
        run = Run(plan, store, progress, new_run_id())
        store.begin_run(run.id, plan.config.model_dump(mode="json"), plan.config_hash,
                        {**host_facts(), "tools": tool_versions(plan.workloads)}, plan.source, label)
        progress.note(f"run {run.id}: backends {', '.join(f'{b.name}/{b.variant}' for b in plan.backends)}; "
                      f"workloads {', '.join(w.name for w in plan.workloads)}; scale {plan.config.scale}")
    else:
        run = resumable(plan, store, resume, progress)
        if not any(pending(run, b, rep, point) for point in run.points() for rep in range(plan.config.repeat)
                   for b in plan.backends):
            progress.note(f"every cell of run {run.id} succeeded: nothing to run")
            store.finish_run(run.id, "complete")
            return run.id, True
    ok = True
    status = "failed"
    try:
        with signals.Teardown() as stack:
            services = ", ".join(sorted(plan.services())) or "no services"
            with progress.step(f"environment '{plan.environment.name}' up ({services})"):
                cluster = stack.enter_context(plan.environment.up(plan.services(), progress.note))
            # runs first on the way out (LIFO), so the teardown that follows is announced
            stack.callback(progress.note, "leaving the lab running" if cluster.reused
                           else "tearing the environment down …")
            if cluster.reused:
                progress.note(f"reusing the running lab in {cluster.workdir}")
            with progress.step(f"checking the tools on {len(cluster.clients)} client host(s)"):
                preflight(plan, cluster.clients)
            before = cluster.ledger.ids()
            workdir = named_path(cluster.workdir / "runs", "-".join((run.id, *run.raw)))
            workdir.mkdir(parents=True)
            cluster.ledger.tree(workdir)

            def undo_run_files() -> None:
                # the run's directory, scratch directories on client nodes, and whatever
                # an attachment failed to undo at its detach (tried once more)
                problems = cluster.ledger.undo(only=cluster.ledger.ids() - before)
                for problem in problems:
                    progress.note(f"  could not undo: {problem}")

            stack.callback(undo_run_files)
            stack.enter_context(recording_tools(cluster.ledger))
            shaped = cluster.link  # (every node's link now)
            if any(p.link is not None for p in run.points()):
                if cluster.reshape is None or cluster.link is None:
                    raise BadInput(f"environment '{plan.environment.name}' cannot reshape its links")
                stack.callback(cluster.reshape, cluster.link)  # (the lab's own link again, after the sweep)
            for point in run.points():
                run.point = point
                if not any(pending(run, b, rep, point) for rep in range(plan.config.repeat) for b in plan.backends):
                    continue
                here, shaped = at_point(cluster, point, progress, shaped)
                for rep in range(plan.config.repeat):
                    for backend in order_for(plan.backends, rep):
                        if not pending(run, backend, rep, point):
                            continue
                        try:
                            ok &= _run_backend(run, rep, backend, here, workdir)
                        except BadInput:  # the config names what is not there: stop, keep what was measured
                            ok = False
                            raise
                        except DfsbenchError as exc:  # attach or detach failed: the others go on
                            interrupt = unwinding(exc)
                            if interrupt is not None:  # (an undo that failed after Ctrl-C: it is the Ctrl-C)
                                progress.note(f"  {exc}")
                                raise interrupt from exc
                            ok = False
                            progress.note(f"  {exc}")
                            store.add(Measurement("attach", "cell", "elapsed", None, "s",
                                                  {**point.values, "error": exc.message[:500]}, backend.name,
                                                  backend.variant, run.id, rep, ("failed",)),
                                      cell_key(backend, rep, "attach", point.values))
        progress.note("environment down" if not cluster.reused else "lab left running")
        status = "complete" if ok else "complete-with-failures"
    except KeyboardInterrupt:
        status = "interrupted"
        again = ["dfsbench", "run", *([plan.source] if plan.source != "built-in default" else []),
                 "--resume", run.id]
        progress.note(f"run {run.id} interrupted; to run what it did not finish: {shlex.join(again)} "
                      "(with the same options)")
        raise
    finally:
        try:
            store.finish_run(run.id, status)
        except StoreUnwritable as exc:  # (the error that stopped the run is the one to report)
            progress.note(f"run {run.id} could not be marked {status}: {exc.message}")
    return run.id, ok


def cell_key(backend: Backend, rep: int, workload: str | Workload, cell: dict[str, Any]) -> str:
    """A cell of a run, the same in every session of it (``run --resume``); two entries
    of one workload that differ in their fault or clients are two cells."""
    if isinstance(workload, str):
        return json.dumps([backend.name, backend.variant, rep, workload, cell], sort_keys=True, default=str)
    entry = workload.entry()
    name: Any = [workload.name, entry] if entry else workload.name
    return json.dumps([backend.name, backend.variant, rep, name, cell], sort_keys=True, default=str)


def pending(run: Run, backend: Backend, rep: int, point: Point) -> bool:
    """Whether the backend has a cell to run in this repeat at this point of the sweep (so
    it is worth attaching)."""
    return any(cell_key(backend, rep, w, {**c, **point.values}) not in run.done
               for w in point.workloads if w.accepts & {backend.kind} for c in w.cells())


def at_point(cluster: Cluster, point: Point, progress: Progress,
             shaped: float | None) -> tuple[Cluster, float | None]:
    """The cluster as a point of the sweep uses it — its first N client hosts (the links of
    those), every node's link reshaped to the point's, or back to the lab's own for a point
    that sweeps none (the workloads outside the sweep) — and the link every node has now."""
    if point.values:
        progress.note(f"sweep point: {point.describe()}")
    want = point.link if point.link is not None else cluster.link
    if want != shaped and want is not None and cluster.reshape is not None:
        with progress.step(f"links reshaped to {point.values.get('link') or 'the lab’s own'}"):
            cluster.reshape(want)
        shaped = want
    if not point.values:
        return cluster, shaped
    clients = cluster.clients[:point.clients] if point.clients else cluster.clients
    labels = {h.label for h in clients}
    link, links = cluster.link, {k: v for k, v in cluster.links.items() if k in labels}
    if point.link is not None:
        link, links = point.link, {}
    return replace(cluster, clients=clients, link=link, links=links), shaped


def resumable(plan: Plan, store: Store, ref: str, progress: Progress) -> Run:
    """The stored run ``ref`` made ready to go on: the same config (else what changed),
    not still running, stored with its cells; its successful cells are left alone."""
    info = store.run(ref)
    if info.config_hash != plan.config_hash:
        changed = differences(info.config, redact_json(plan.config.model_dump(mode="json")))
        raise BadInput(f"run {ref} was made with another config; a resumed run must be the same run. "
                       f"What differs (stored → now):\n  " + "\n  ".join(changed or ["a secret's value"]),
                       hint=f"give the config and the options (--scale, --backends, …) run {ref} was "
                            "started with, or start a new run")
    pid, host = info.host.get("pid"), info.host.get("hostname")
    running = proc.ProcessId.of(pid) if isinstance(pid, int) and host == platform.node() else None
    if info.status == "running" and running is not None and running.alive():
        raise BadInput(f"run {ref} is still running (pid {pid})", hint="wait for it, or stop it first")
    if not store.knows_cells(ref):
        raise BadInput(f"run {ref} was stored by an older dfsbench that did not record its cells; "
                       "it cannot be resumed", hint="start a new run")
    done = store.cells_done(ref)
    sessions = 1 + sum(1 for p in store.raw_dir(ref).glob("resume-*"))
    store.resumed(ref)
    progress.note(f"resuming run {ref} (was {info.status}): {len(done)} cells done are kept; "
                  "the missing and failed ones run now")
    return Run(plan, store, progress, ref, done, (f"resume-{sessions}",))


def differences(old: Any, new: Any, path: str = "") -> list[str]:
    """``key: old → new`` for each place two JSON values differ."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [line for key in sorted(set(old) | set(new), key=str)
                for line in differences(old.get(key, "(absent)"), new.get(key, "(absent)"),
                                        f"{path}.{key}" if path else str(key))]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [line for i, (a, b) in enumerate(zip(old, new)) for line in differences(a, b, f"{path}[{i}]")]
    return [] if old == new else [f"{path or '(the config)'}: {json.dumps(old)} → {json.dumps(new)}"]


def _run_backend(run: Run, rep: int, backend: Backend, cluster: Any, workdir: Path) -> bool:
    ok = True
    plan, store, progress = run.plan, run.store, run.progress
    tag = run.tag(backend.name, backend.variant)
    point = run.point
    with signals.Teardown() as stack:
        with progress.step(f"attach {backend.name}/{backend.variant}"):
            target = stack.enter_context(backend.attach(cluster, workdir / tag))
        stack.callback(progress.note, f"detaching {backend.name}/{backend.variant}")
        attach = cell_key(backend, rep, "attach", point.values)
        if store.supersede(run.id, attach):  # an earlier session could not attach it
            store.cell_ended(run.id, attach, "ok")
        scratches: dict[str, Path] = {}

        def scratch(host: Host) -> Path:
            if host.label not in scratches:
                scratches[host.label] = host.scratch(workdir / "scratch", cluster.ledger)
            return scratches[host.label]

        facts = backend.facts(target.description)
        described = {**target.stored_description(), "facts": facts.to_dict()}
        if cluster.link is not None:  # the lab's declared link: the run's network limit
            described["link"] = cluster.link
            if cluster.links:  # (client hosts of a link of their own)
                described["links"] = dict(cluster.links)
        if not target.host.local:  # the client hosts' tools, next to this host's in the run
            described["tools"] = tool_versions(plan.workloads, target.host)
            if len(target.hosts) > 1:
                described["tools_by_host"] = {h.label: tool_versions(plan.workloads, h) for h in target.hosts}
        if cluster.note:  # what holds for every comparison made in this environment
            described["environment_note"] = cluster.note
        if cluster.hosts_facts:  # kernel, CPUs, memory, clock offset of each client host
            described["client_facts"] = cluster.hosts_facts
        store.add_target(run.id, backend.name, backend.variant, described, rep)
        for workload in point.workloads:
            if not workload.supports(target):
                continue
            for cell in workload.cells():
                key = cell_key(backend, rep, workload, {**cell, **point.values})
                if key in run.done:
                    continue
                if store.supersede(run.id, key):
                    progress.note(f"  {workload.name} {describe_cell(cell)}: the records of its earlier, "
                                  "unfinished attempt are set aside")
                if workload.fault is None:
                    good = _run_cell(run, rep, backend, cluster, target, workload, cell, scratch, key)
                else:
                    good = _run_fault_cell(run, rep, backend, cluster, target, workload, cell, scratch, key)
                store.cell_ended(run.id, key, "ok" if good else "failed")
                ok &= good
    return ok


def _run_cell(run: Run, rep: int, backend: Backend, cluster: Cluster, target: Target, workload: Workload,
              cell: dict[str, Any], scratch: Callable[[Host], Path], key: str, phase: str | None = None,
              on_start: Callable[[], None] | None = None,
              kept: list[Written] | None = None) -> bool:
    """One cell: its records stored as they come (with the phase given, and when they ran:
    a record that does not say is given the cell's start and the moment it came), what the
    lab's nodes spent on it, or a failed (or hung) record. Whether it succeeded.
    ``on_start`` hears when the cell's measured work begins: its first timed phase (a
    workload that does not say when its phases begin: the cell's start)."""
    plan, store, progress = run.plan, run.store, run.progress
    tag = run.tag(backend.name, backend.variant, f"r{rep}")
    raw_dir = run.raw_dir(tag, workload.name, *([phase] if phase else []))
    what = f"{workload.name} {describe_cell(cell)} on {backend.name}/{backend.variant}"
    if run.point.values:
        what += f" at {run.point.describe()}"
    if phase:
        what += f" ({phase} the fault)" if phase != "during" else " (during the fault)"
    if plan.config.repeat > 1:
        what += f" (repeat {rep + 1}/{plan.config.repeat})"
    extra = {**run.point.values, **({"phase": phase} if phase else {})}

    unfinished: list[str] = []  # records that came back flagged hung, failed or incomplete
    began = time.time()

    def keep(m: Measurement) -> None:
        params = {**m.params, **extra}
        if not isinstance(params.get("started"), (int, float)):  # (a workload that does not say when:
            params.update(started=round(began, 6), ended=round(time.time(), 6))  # within the cell, then)
        seq = store.add(replace(m, params=params, run_id=run.id, repeat=rep), key)
        over_time = timelines.series_of(replace(m, params=params))  # (held to the interval stored)
        if over_time is not None:  # (its rate every second, or the tool's own figures over time)
            store.add_series(seq, run.id, over_time)
        unfinished.extend(f for f in m.flags if f in UNFINISHED)

    sampler = cluster.sampler() if cluster.sampler is not None else None
    spread = together.spread(workload, target) and not workload.spreads_itself()
    try:
        store.room()
        still_there(target)
        room_for(workload, cell, target, cluster, backend.facts(target.description).stored_copies,
                 clients=len(target.hosts) if spread else 1)
        with progress.step(what):
            if sampler is not None:
                sampler.start()
            shares_host = cluster.host_disk is not None and bool(backend.requires)
            disk = load.disk_of(cluster.host_disk) if cluster.host_disk is not None else None
            host_before = load.snapshot(disk) if shares_host else None
            if spread:
                what_all = f"{workload.name} {describe_cell(cell)} on {len(target.hosts)} clients at once"
                for m in together.run(workload, target, cell, scratch, raw_dir, what_all, on_start, kept):
                    keep(m)
            else:
                view = target.for_cell(Lineup(1, on_start, scratch, kept))
                if not workload.times_phases:
                    view.begin("the cell")
                for m in workload.run(view, cell, scratch(view.host), raw_dir):
                    keep(m)
            if sampler is not None:
                # (the client nodes that did not run the cell — one client, or the first N of a
                # sweep's point — stood idle: neither its cost nor its busiest node)
                ran = {h.label for h in (target.hosts if spread else (target.host,))}
                usages = [u for u in sampler.stop() if u.role is None or u.role.side != CLIENT or u.node in ran]
                for m in sampling.records(usages, Group(workload.name, {**cell, **extra}, backend.name,
                                                        backend.variant)):
                    keep(m)
            if host_before is not None:
                for m in sampling.host_records(host_before, load.snapshot(disk), disk,
                                               Group(workload.name, {**cell, **extra}, backend.name, backend.variant)):
                    keep(m)
    except StoreUnwritable:  # nowhere to keep what the run measures: it stops
        raise
    except (DfsbenchError, OSError) as exc:  # e.g. ENOTCONN from a dead FUSE client
        message = exc.message if isinstance(exc, DfsbenchError) else f"{type(exc).__name__}: {exc}"
        progress.note(f"  {message}")
        flag = "hung" if isinstance(exc, Hung) else "failed"
        keep(Measurement(workload.name, "cell", "elapsed", None, "s", {**cell, "error": message[:500]},
                         backend.name, backend.variant, run.id, rep, (flag,)))
        return False
    return not unfinished  # (a tool killed at its deadline may still have printed numbers)


UNFINISHED = frozenset({"hung", "failed", "incomplete"})


def _run_fault_cell(run: Run, rep: int, backend: Backend, cluster: Cluster, target: Target,
                    workload: Workload, cell: dict[str, Any], scratch: Callable[[Host], Path], key: str) -> bool:
    """The cell before, during and after its fault (``harness.api.faults``), and the fault's
    record: what was done, time to recover, whether the data verified."""
    spec = workload.fault
    assert spec is not None
    if cluster.faults is None:
        raise DfsbenchError(f"environment '{cluster.environment}' cannot do faults to its nodes")
    progress = run.progress
    system = next(iter(sorted(backend.requires)), None)
    if system is None:
        progress.note(f"  {backend.name} runs on no cluster service: no fault to do, the cell runs once")
        return _run_cell(run, rep, backend, cluster, target, workload, cell, scratch, key)
    timeline = Timeline(cluster.faults, system, spec)

    ok = _run_cell(run, rep, backend, cluster, target, workload, cell, scratch, key, "before")
    kept: list[Written] = []  # what the cell wrote, kept for the check after the fault
    try:  # (the fault's clock starts with the cell's measured work, not with its set-up)
        during_ok = _run_cell(run, rep, backend, cluster, target, workload, cell, scratch, key, "during",
                              timeline.start, kept)
    finally:
        timeline.restore()
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
        verified = verify(kept, timeline, target, workload, recovery is not None, during_ok)
    finally:
        for written in kept:
            try:
                written.remove()
            except DfsbenchError as exc:  # (the run's directory goes at its end all the same)
                progress.note(f"  could not remove {written.what}: {exc.message}")
    fault = record(timeline, recovery, state, verified, Group(workload.name, cell, backend.name, backend.variant))
    figures = timelines.fault_params(run.store.measurements_of(run.id, key), timeline.times())
    run.store.add(replace(fault, params={**run.point.values, **fault.params, **figures}, run_id=run.id,
                          repeat=rep), key)  # (with the values of the sweep's point, as every record)
    after_ok = _run_cell(run, rep, backend, cluster, target, workload, cell, scratch, key, "after")
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
    during = [w for w in kept if w.started < until and w.ended > timeline.injected_at]
    if not during:
        return "not checked (nothing was written while the fault held)"
    peers = target.peers or target.hosts or (target.host,)
    checked = []
    for written in during:
        other = next((h for h in peers if h.label != written.writer.label), None)
        if other is None:
            return "not checked (one client only: a read on the writer could come from its cache)"
        view = target.on(other)
        step = view.drop_caches()  # (it may have read the file back in the cell: its caches go first)
        if not caches_dropped(step):
            return (f"not checked (the caches of {other.label}, which may have read it in the cell, could not "
                    f"be dropped: {step})")
        if not written.check(view):
            return f"no: {written.what} read on {other.label} does not match what was written"
        checked.append(f"{other.label} ({step})")
    return f"yes ({how}, read on {', '.join(sorted(set(checked)))} after the system was healthy)"
