"""Executes a Plan: environment up, each backend attached, each workload cell run, every
measurement stored the moment it exists. A failing cell is recorded and the run goes on."""

from __future__ import annotations

import os
import platform
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness import __version__
from harness.config import Plan
from harness.contracts import Backend
from harness.errors import DfsbenchError, Hung
from harness.progress import Progress
from harness.records import Measurement
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


def tool_versions(workloads: list[Any]) -> dict[str, str]:
    """The first line each workload's tool prints of its version (``version_argv``)."""
    from harness import proc

    found: dict[str, str] = {}
    for w in workloads:
        argv = getattr(w, "version_argv", None)
        if not argv or argv[0] in found:
            continue
        try:
            result = proc.run(argv, timeout=20, check=False)
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


def describe_cell(cell: dict[str, Any]) -> str:
    parts = []
    for key, value in cell.items():
        parts.append(f"{key}={size(value)}" if key.endswith("size") else f"{key}={value}")
    return " ".join(parts)


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
        with ExitStack() as stack:
            services = ", ".join(sorted(plan.services())) or "no services"
            with progress.step(f"environment '{plan.environment.name}' up ({services})"):
                cluster = stack.enter_context(plan.environment.up(plan.services()))
            # runs first on the way out (LIFO), so the teardown that follows is announced
            stack.callback(progress.note, "leaving the lab running" if cluster.reused
                           else "tearing the environment down …")
            if cluster.reused:
                progress.note(f"reusing the running lab in {cluster.workdir}")
            before = cluster.ledger.ids()
            workdir = cluster.workdir / "runs" / run_id
            workdir.mkdir(parents=True)
            cluster.ledger.tree(workdir)
            mine = cluster.ledger.ids() - before

            def undo_run_files() -> None:
                problems = cluster.ledger.undo(only=mine)
                for problem in problems:
                    progress.note(f"  could not undo: {problem}")

            stack.callback(undo_run_files)
            for rep in range(plan.config.repeat):
                for backend in order_for(plan.backends, rep):
                    try:
                        ok &= _run_backend(plan, store, progress, run_id, rep, backend, cluster, workdir)
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
    scratch = workdir / "scratch"
    scratch.mkdir(exist_ok=True)
    with ExitStack() as stack:
        with progress.step(f"attach {backend.name}/{backend.variant}"):
            target = stack.enter_context(backend.attach(cluster, workdir / tag))
        stack.callback(progress.note, f"detaching {backend.name}/{backend.variant}")
        facts = backend.facts(target.description)
        store.add_target(run_id, backend.name, backend.variant,
                         {**target.stored_description(), "facts": vars(facts)}, rep)
        for workload in plan.workloads:
            if not workload.supports(target):
                continue
            raw_dir = store.raw_dir(run_id, f"{tag}-r{rep}", workload.name)
            for cell in workload.cells():
                what = f"{workload.name} {describe_cell(cell)} on {backend.name}/{backend.variant}"
                if plan.config.repeat > 1:
                    what += f" (repeat {rep + 1}/{plan.config.repeat})"
                try:
                    with progress.step(what):
                        for m in workload.run(target, cell, scratch, raw_dir):
                            store.add(replace(m, run_id=run_id, repeat=rep))
                except (DfsbenchError, OSError) as exc:  # e.g. ENOTCONN from a dead FUSE client
                    ok = False
                    message = exc.message if isinstance(exc, DfsbenchError) else f"{type(exc).__name__}: {exc}"
                    progress.note(f"  {message}")
                    flag = "hung" if isinstance(exc, Hung) else "failed"
                    store.add(Measurement(workload.name, "cell", "elapsed", None, "s",
                                          {**cell, "error": message[:500]}, backend.name,
                                          backend.variant, run_id, rep, (flag,)))
    return ok
