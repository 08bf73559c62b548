"""Executes a Plan: environment up, each backend attached, each workload cell run, every
measurement stored the moment it exists. A failing cell is recorded and the run goes on."""

from __future__ import annotations

import os
import platform
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness import __version__, faults, resources, signals, together
from harness.config import Plan
from harness.contracts import Backend, Cluster, Target, Workload
from harness.errors import BadInput, DfsbenchError, Hung
from harness.hosts import LOCAL, Host
from harness.ledger import recording_tools
from harness.progress import Progress
from harness.records import Measurement, describe_cell
from harness.store import Store, new_run_id
from harness.units import size


def host_facts() -> dict[str, Any]:
    uname = platform.uname()
    mem = 0
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) * 1024
    except OSError:
        pass
    return {"hostname": uname.node, "kernel": uname.release, "machine": uname.machine,
            "cpus": os.cpu_count(), "memory": mem, "python": platform.python_version(),
            "dfsbench": __version__}


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


def preflight(plan: Plan, hosts: tuple[Host, ...]) -> None:
    """Every tool the plan's backends and workloads need, on every client host, before
    anything runs: one error naming each host and the Debian package it lacks."""
    kinds = {b.kind for b in plan.backends}
    needed: dict[str, str] = {}
    for b in plan.backends:
        needed.update(b.tools)
    for w in plan.workloads:
        if w.accepts & kinds:
            needed.update(w.tools)
    if any(not h.local for h in hosts):
        needed.setdefault("timeout", "coreutils")
    missing = [f"{h.name} lacks '{tool}' (Debian package {package})"
               for h in hosts for tool, package in sorted(needed.items()) if not h.has(tool)]
    if missing:
        raise BadInput("client hosts are missing tools this run needs:\n  " + "\n  ".join(missing),
                       hint="install those packages there (apt install …), or leave out the workloads "
                            "that need them")


def room_for(workload: Workload, cell: dict[str, Any], target: Target) -> None:
    """Refuse a cell that would write more than the target has free, with the figures."""
    need = workload.writes(cell)
    if not need or target.kind != "path" or target.path is None:
        return
    free = target.host.free_bytes(target.path)
    if need > free:
        raise DfsbenchError(f"{workload.name} would write {size(need)} to {target.key} at "
                            f"{target.host.name}:{target.path}, which has {size(free)} free",
                            hint="free space there, or give the workload smaller sizes")


def order_for(backends: list[Backend], repeat: int) -> list[Backend]:
    """A B, then B A, then A B … so drift over time does not favour one backend."""
    return backends if repeat % 2 == 0 else list(reversed(backends))


def execute(plan: Plan, store: Store, progress: Progress, label: str | None = None) -> tuple[str, bool]:
    """Run the plan; returns (run id, whether every cell succeeded)."""
    run_id = new_run_id()
    store.begin_run(run_id, plan.config.model_dump(mode="json"), plan.config_hash,
                    {**host_facts(), "tools": tool_versions(plan.workloads)}, plan.source, label)
    progress.note(f"run {run_id}: backends {', '.join(f'{b.name}/{b.variant}' for b in plan.backends)}; "
                  f"workloads {', '.join(w.name for w in plan.workloads)}; scale {plan.config.scale}")
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
            workdir = cluster.workdir / "runs" / run_id
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
            for rep in range(plan.config.repeat):
                for backend in order_for(plan.backends, rep):
                    try:
                        ok &= _run_backend(plan, store, progress, run_id, rep, backend, cluster, workdir)
                    except BadInput:  # the config names what is not there: stop, keep what was measured
                        ok = False
                        raise
                    except DfsbenchError as exc:  # attach or detach failed: the others go on
                        ok = False
                        progress.note(f"  {exc}")
                        store.add(Measurement("attach", "cell", "elapsed", None, "s",
                                              {"error": exc.message[:500]}, backend.name,
                                              backend.variant, run_id, rep, ("failed",)))
        progress.note("environment down" if not cluster.reused else "lab left running")
        status = "complete" if ok else "complete-with-failures"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        store.finish_run(run_id, status)
    return run_id, ok


def _run_backend(plan: Plan, store: Store, progress: Progress, run_id: str, rep: int,
                 backend: Backend, cluster: Any, workdir: Path) -> bool:
    ok = True
    tag = f"{backend.name}-{backend.variant}"
    with signals.Teardown() as stack:
        with progress.step(f"attach {backend.name}/{backend.variant}"):
            target = stack.enter_context(backend.attach(cluster, workdir / tag))
        stack.callback(progress.note, f"detaching {backend.name}/{backend.variant}")
        scratches: dict[str, Path] = {}

        def scratch(host: Host) -> Path:
            if host.label not in scratches:
                scratches[host.label] = host.scratch(workdir / "scratch", cluster.ledger)
            return scratches[host.label]

        facts = backend.facts(target.description)
        described = {**target.stored_description(), "facts": vars(facts)}
        if cluster.link is not None:  # the lab's declared link: the run's network limit
            described["link"] = cluster.link
        if not target.host.local:  # the client hosts' tools, next to this host's in the run
            described["tools"] = tool_versions(plan.workloads, target.host)
            if len(target.hosts) > 1:
                described["tools_by_host"] = {h.label: tool_versions(plan.workloads, h) for h in target.hosts}
        if cluster.hosts_facts:  # kernel, CPUs, memory, clock offset of each client host
            described["client_facts"] = cluster.hosts_facts
        store.add_target(run_id, backend.name, backend.variant, described, rep)
        for workload in plan.workloads:
            if not workload.supports(target):
                continue
            for cell in workload.cells():
                if workload.fault is None:
                    ok &= _run_cell(plan, store, progress, run_id, rep, backend, cluster, target, workload,
                                    cell, scratch)
                else:
                    ok &= _run_fault_cell(plan, store, progress, run_id, rep, backend, cluster, target,
                                          workload, cell, scratch)
    return ok


def _run_cell(plan: Plan, store: Store, progress: Progress, run_id: str, rep: int, backend: Backend,
              cluster: Cluster, target: Target, workload: Workload, cell: dict[str, Any],
              scratch: Callable[[Host], Path], phase: str | None = None, flags: tuple[str, ...] = (),
              around: Callable[[], AbstractContextManager[Any]] = nullcontext) -> bool:
    """One cell: its records stored as they come (with the phase and flags given), what
    the lab's nodes spent on it, or a failed (or hung) record. Whether it succeeded."""
    tag = f"{backend.name}-{backend.variant}-r{rep}"
    raw_dir = store.raw_dir(run_id, tag, workload.name, *([phase] if phase else []))
    what = f"{workload.name} {describe_cell(cell)} on {backend.name}/{backend.variant}"
    if phase:
        what += f" ({phase} the fault)" if phase != "during" else " (during the fault)"
    if plan.config.repeat > 1:
        what += f" (repeat {rep + 1}/{plan.config.repeat})"
    extra = {"phase": phase} if phase else {}

    def keep(m: Measurement) -> None:
        store.add(replace(m, params={**m.params, **extra}, flags=(*m.flags, *flags), run_id=run_id,
                          repeat=rep))

    sampler = cluster.sampler() if cluster.sampler is not None else None
    try:
        room_for(workload, cell, target)
        with progress.step(what), around():
            if sampler is not None:
                sampler.start()
            if together.spread(workload, target) and not workload.spreads_itself:
                what_all = f"{workload.name} {describe_cell(cell)} on {len(target.hosts)} clients at once"
                for m in together.run(workload, target, cell, scratch, raw_dir, what_all):
                    keep(m)
            else:
                for m in workload.run(target, cell, scratch(target.host), raw_dir):
                    keep(m)
            if sampler is not None:
                for m in resources.records(sampler.stop(), cluster.link, workload.name, {**cell, **extra},
                                           backend.name, backend.variant):
                    keep(m)
    except (DfsbenchError, OSError) as exc:  # e.g. ENOTCONN from a dead FUSE client
        message = exc.message if isinstance(exc, DfsbenchError) else f"{type(exc).__name__}: {exc}"
        progress.note(f"  {message}")
        flag = "hung" if isinstance(exc, Hung) else "failed"
        store.add(Measurement(workload.name, "cell", "elapsed", None, "s", {**cell, **extra, "error": message[:500]},
                              backend.name, backend.variant, run_id, rep, (flag, *flags)))
        return False
    return True


def _run_fault_cell(plan: Plan, store: Store, progress: Progress, run_id: str, rep: int, backend: Backend,
                    cluster: Cluster, target: Target, workload: Workload, cell: dict[str, Any],
                    scratch: Callable[[Host], Path]) -> bool:
    """The cell before, during and after its fault (``harness.faults``), and the fault's
    record: what was done, time to recover, whether the data verified."""
    spec = workload.fault
    assert spec is not None
    if cluster.faults is None:
        raise DfsbenchError(f"environment '{cluster.environment}' cannot do faults to its nodes")
    system = next(iter(sorted(backend.requires)), None)
    if system is None:
        progress.note(f"  {backend.name} runs on no cluster service: no fault to do, the cell runs once")
        return _run_cell(plan, store, progress, run_id, rep, backend, cluster, target, workload, cell, scratch)
    timeline = faults.Timeline(cluster.faults, system, spec)

    @contextmanager
    def fault() -> Iterator[None]:
        timeline.start()
        try:
            yield
        finally:
            timeline.restore()

    ok = _run_cell(plan, store, progress, run_id, rep, backend, cluster, target, workload, cell, scratch,
                   "before")
    during_ok = _run_cell(plan, store, progress, run_id, rep, backend, cluster, target, workload, cell,
                          scratch, "during", ("degraded",), fault)
    with progress.step(f"waiting for {system} to be healthy again"):
        recovery, state = timeline.wait_healthy()
    progress.note(f"  {timeline.injected.description if timeline.injected else 'no fault done'}; "
                  + (f"healthy {recovery:.1f} s after it came back" if recovery is not None
                     else f"not healthy: {state}"))
    check = workload.verification()
    verified = (f"yes ({check})" if during_ok else "no: the cell failed (see 'Cells that failed')") \
        if check else f"not checked ({workload.name} does not compare what it reads back)"
    store.add(replace(faults.record(timeline, recovery, state, verified, workload.name, cell, backend.name,
                                    backend.variant), run_id=run_id, repeat=rep))
    after_ok = _run_cell(plan, store, progress, run_id, rep, backend, cluster, target, workload, cell,
                         scratch, "after", () if recovery is not None else ("degraded",))
    return ok and during_ok and after_ok and recovery is not None and not timeline.problems
