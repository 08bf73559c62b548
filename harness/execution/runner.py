"""Executes a Plan: environment up, each backend attached, each workload cell run, every
measurement stored the moment it exists. A failing cell is recorded and the run goes on."""

from __future__ import annotations

import os
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness import __version__
from harness.api import registry
from harness.api.described import Described
from harness.api.contracts import Backend, Cluster
from harness.api.records import Measurement
from harness.api.target import Target
from harness.errors import BadInput, DfsbenchError, StoreUnwritable
from harness.execution import mpi_job, ranks, together
from harness.execution.cell import UNSUPPORTED, Cell, Run, attach_key, every_cell, planned
from harness.execution.checks import preflight
from harness.execution.order import ordered
from harness.execution.plan import Plan
from harness.execution.progress import Progress
from harness.execution.resume import resumable
from harness.execution.sweep import Point
from harness.results.store import Store, new_run_id
from harness.system import signals
from harness.system.hosts import LOCAL, Host, this_machine
from harness.system.ledger import recording_tools
from harness.system.names import named_path


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
            resume: str | None = None, wait: float = 0) -> tuple[str, bool]:
    """Run the plan, or (``resume``: a run's id) the cells of that run that are missing
    or failed, once the lab's lease is taken (``wait``: seconds to wait for another run to
    let go of it); returns (run id, whether every cell succeeded)."""
    store.room()
    run_id = new_run_id() if resume is None else resume
    # the lab's lease, before anything is stored: a run refused a lab another run holds
    # leaves no run behind; held to the end of the run, its teardown included
    with plan.environment.lease(f"run {run_id}", progress.note, wait):
        plan.environment.check_lab(plan.services())
        return _execute(plan, store, progress, run_id, label, resume)


def _execute(plan: Plan, store: Store, progress: Progress, run_id: str, label: str | None,
             resume: str | None) -> tuple[str, bool]:
    if resume is None:
        run = _begin(plan, store, progress, run_id, label)
    else:
        run = resumable(plan, store, resume, progress)
        if not any(pending(run, b, rep, point) for point in run.points() for rep in range(plan.config.repeat)
                   for b in plan.backends):
            progress.note(f"every cell of run {run.id} succeeded: nothing to run")
            store.finish_run(run.id, "complete")
            return run.id, True
    run = replace(run, total=sum(1 for p in every_cell(plan, run.order) if p.key not in run.done))
    status = "failed"
    try:
        ok = _session(run)
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


def _begin(plan: Plan, store: Store, progress: Progress, run_id: str, label: str | None) -> Run:
    """A new run of the plan, stored as begun with this machine's facts and its tools'."""
    order = ordered(plan.config.order)  # (a seed drawn now where the config gives none: stored, said)
    run = Run(plan, store, progress, run_id, order=order)
    store.begin_run(run.id, plan.config.model_dump(mode="json"), plan.config_hash,
                    {**host_facts(), "tools": tool_versions(plan.workloads), "order": order.fact()}, plan.source,
                    label)
    progress.note(f"run {run.id}: backends {', '.join(f'{b.name}/{b.variant}' for b in plan.backends)}; "
                  f"workloads {', '.join(w.name for w in plan.workloads)}; scale {plan.config.scale}; "
                  f"{order.said()}")
    return run


def _session(run: Run) -> bool:
    """The environment up (or its running lab reused), each point of the sweep that has a
    cell still to run, and the environment down again: whether every cell succeeded."""
    ok = True
    with signals.Teardown() as stack:
        cluster, workdir = _lab(run, stack)
        shaped = cluster.link  # (every node's link now)
        said: set[int] = set()
        for point, reps in blocks(run):
            if not any(pending(run, b, rep, point) for rep in reps for b in run.plan.backends):
                continue
            if run.order.shuffled and reps[0] not in said and sum(1 for p in run.points() if p.values) > 1:
                said.add(reps[0])
                run.progress.note(f"repeat {reps[0] + 1}: the sweep's points in shuffled order (seed "
                                  f"{run.order.seed}): " + "; ".join(
                                      p.describe() for p in run.order.points(run.points(), reps[0]) if p.values))
            here, shaped = at_point(cluster, point, run.progress, shaped)
            ok &= _point(run, point, reps, here, workdir)
    run.progress.note("environment down" if not cluster.reused else "lab left running")
    return ok


def _lab(run: Run, stack: signals.Teardown) -> tuple[Cluster, Path]:
    """The environment up for the run, its tools checked on every client host, and the run's
    directory there, each undone by ``stack`` (the links a sweep reshapes set back too)."""
    plan, progress = run.plan, run.progress
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
        problems = cluster.ledger.undo(only=cluster.ledger.since(before))
        for problem in problems:
            progress.note(f"  could not undo: {problem}")

    stack.callback(undo_run_files)
    stack.enter_context(recording_tools(cluster.ledger))
    if any(p.link is not None for p in run.points()):
        if cluster.reshape is None or cluster.link is None:
            raise BadInput(f"environment '{plan.environment.name}' cannot reshape its links")
        stack.callback(cluster.reshape, cluster.link)  # (the lab's own link again, after the sweep)
    return cluster, workdir


def blocks(run: Run) -> list[tuple[Point, tuple[int, ...]]]:
    """Each point of the sweep with the repeats run there, in the order the run goes: listed,
    each point in turn with every repeat of it; shuffled, each repeat in turn with every
    point, in the order the run's seed draws for that repeat (harness.execution.order)."""
    points, repeat = run.points(), run.plan.config.repeat
    if not run.order.shuffled:
        return [(p, tuple(range(repeat))) for p in points]
    return [(p, (rep,)) for rep in range(repeat) for p in run.order.points(points, rep)]


def _point(run: Run, point: Point, reps: tuple[int, ...], cluster: Cluster, workdir: Path) -> bool:
    """Each of those repeats of each backend that has a cell still to run at a point of the
    sweep, on the cluster as the point uses it: whether every cell succeeded. A backend that
    cannot be attached (or detached) is recorded as failed, and the others go on."""
    ok = True
    for rep in reps:
        if any(pending(run, b, rep, point) for b in run.plan.backends):
            for line in run.order.cells_said(point, rep, run.points().index(point)):
                run.progress.note(line)
        for backend in order_for(run.plan.backends, rep):
            if not pending(run, backend, rep, point):
                continue
            try:
                ok &= _run_backend(run, point, rep, backend, cluster, workdir)
            except BadInput:  # the config names what is not there: stop, keep what was measured
                raise
            except DfsbenchError as exc:  # attach or detach failed: the others go on
                interrupt = unwinding(exc)
                if interrupt is not None:  # (an undo that failed after Ctrl-C: it is the Ctrl-C)
                    run.progress.note(f"  {exc}")
                    raise interrupt from exc
                ok = False
                run.progress.note(f"  {exc}")
                run.store.add(Measurement("attach", "cell", "elapsed", None, "s",
                                          {**point.values, "error": exc.message[:500]}, backend.name,
                                          backend.variant, run.id, rep, ("failed",)),
                              attach_key(backend, rep, point))
    return ok


def pending(run: Run, backend: Backend, rep: int, point: Point) -> bool:
    """Whether the backend has a cell to run in this repeat at this point of the sweep (so
    it is worth attaching)."""
    return any(cell.key not in run.done for cell in planned(run, point, rep, backend))


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


def _run_backend(run: Run, point: Point, rep: int, backend: Backend, cluster: Cluster, workdir: Path) -> bool:
    """The backend attached at a point of the sweep in one repeat, and each of its cells
    there that is still to run: whether every one succeeded."""
    ok = True
    store, progress = run.store, run.progress
    tag = run.tag(point, backend.name, backend.variant)
    with signals.Teardown() as stack:
        with progress.step(f"attach {backend.name}/{backend.variant}"):
            target = stack.enter_context(registry.held("backend", backend.name, f"attaching {backend.name}/"
                                                       f"{backend.variant}", backend.attach(cluster, workdir / tag)))
            Described.checked(target.description, backend.name)  # (what the core reads of it, typed)
        stack.callback(progress.note, f"detaching {backend.name}/{backend.variant}")
        stack.enter_context(ranks.kept_jobs())  # (an MPI job kept from cell to cell ends before the detach)
        attach = attach_key(backend, rep, point)
        if store.supersede(run.id, attach):  # an earlier session could not attach it
            store.cell_ended(run.id, attach, "ok")
        scratches: dict[str, Path] = {}

        def scratch(host: Host) -> Path:
            if host.label not in scratches:
                scratches[host.label] = host.scratch(workdir / "scratch", cluster.ledger)
            return scratches[host.label]

        store.add_target(run.id, backend.name, backend.variant, _described(run, backend, cluster, target), rep)
        for p in planned(run, point, rep, backend):
            if p.key in run.done:
                continue
            number = run.counted()
            if not p.workload.supports(target):  # (so a resume does not attach for it again)
                store.cell_ended(run.id, p.key, UNSUPPORTED)
                continue
            cell = Cell(run, point, rep, backend, cluster, target, scratch, p.workload, p.params, number)
            assert cell.key == p.key  # (one key: the planned one)
            ok &= cell.measure()
    return ok


def _described(run: Run, backend: Backend, cluster: Cluster, target: Target) -> dict[str, Any]:
    """An attachment as stored with the run: the target's description, its system's facts,
    the links and client hosts it is measured through, what holds for the environment."""
    facts = backend.facts(target.description)
    described = {**target.stored_description(), "facts": facts.to_dict()}
    if cluster.link is not None:  # the lab's declared link: the run's network limit
        described["link"] = cluster.link
        if cluster.links:  # (client hosts of a link of their own)
            described["links"] = dict(cluster.links)
    if not target.host.local:  # the client hosts' tools, next to this host's in the run
        described["tools"] = tool_versions(run.plan.workloads, target.host)
        if len(target.hosts) > 1:
            described["tools_by_host"] = {h.label: tool_versions(run.plan.workloads, h) for h in target.hosts}
    if cluster.note:  # what holds for every comparison made in this environment
        described["environment_note"] = cluster.note
    if any(w.ranks and together.spread(w, target) for w in run.plan.workloads):
        # how its cells of clients as ranks are launched on every client host (asked now: before any I/O)
        decision = mpi_job.decide(cluster.launch, target.hosts)
        described["launcher"] = {"launcher": decision.launcher, "why": decision.why}
    if cluster.hosts_facts:  # kernel, CPUs, memory, clock offset of each client host
        described["client_facts"] = cluster.hosts_facts
    return described
