"""``dfsbench run`` and ``dfsbench check``: a config planned (or a bundle's, ``run --like``),
what the user should hear of it, and its run."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from harness.api import registry
from harness.commands.bundles import reads
from harness.commands.common import catalogue_of, shown_line, store_of
from harness.commands.outputs import render_view
from harness.errors import BadInput
from harness.execution.cell import every_cell
from harness.execution.order import Order
from harness.execution.plan import CONFIG_SUITES, plan_from_file
from harness.execution.schema import DEFAULT_ENVIRONMENT
from harness.system import files

if TYPE_CHECKING:
    from harness.api.faults import FaultSpec
    from harness.execution.plan import Plan


def cmd_run(args: argparse.Namespace) -> int:
    if args.repeat is not None and args.repeat < 1:
        raise BadInput(f"--repeat must be at least 1, not {args.repeat}")
    if not 0 <= args.wait <= 7 * 86400:  # (nan fails both)
        raise BadInput(f"--wait {args.wait:g}: give the seconds to wait for the lab, from 0 to a week (604800)")
    overrides = {"scale": args.scale, "suite": args.suite, "repeat": args.repeat, "backends": args.backends,
                 "workloads": args.workloads,
                 "environment": {"kind": args.env} if args.env else None}
    from harness.execution.progress import Progress
    from harness.execution.runner import execute

    config = args.config
    if args.expect is not None and args.like is None:
        raise BadInput("--expect is the SHA-256 of a bundle: give it with --like BUNDLE")
    if args.like is not None:
        plan = _plan_like(args, overrides)
    elif args.suite in CONFIG_SUITES:
        if config is not None:
            raise BadInput(f"--suite {args.suite} is a config of its own, and a config was given too",
                           hint=f"give one of them (a copy of {CONFIG_SUITES[args.suite].config} is a config "
                                "to change)")
        config, overrides["suite"] = CONFIG_SUITES[args.suite].config, None
        plan = plan_from_file(config, overrides)
    else:
        plan = plan_from_file(config, overrides)
    if args.reference is not None:  # (refused now, not after the run)
        backend, _, variant = args.reference.partition("/")
        planned = [f"{b.name}/{b.variant}" for b in plan.backends if not b.control]
        if f"{backend}/{variant or 'default'}" not in planned:
            raise BadInput(f"--reference {files.printable(args.reference, 80)}: the run has no such backend "
                           "(the control, shown beside the systems, is never half of a verdict)",
                           hint=f"name one of: {', '.join(planned)}")
    say_notes(plan)
    resume = catalogue_of(args).resolve(args.resume) if args.resume is not None else None
    store = store_of(args)
    progress = Progress()
    try:
        run_id, ok = execute(plan, store, progress, label=args.label, resume=resume, wait=args.wait)
    finally:
        store.close()
    from harness.report.view import ViewRequest, build_view

    # (a record's figure over time is read only where it is exported: JSON)
    view = build_view(catalogue_of(args), ViewRequest((run_id,), series=args.format == "json",
                                                      reference=args.reference))
    print(render_view(view, args.format))
    if args.format == "table":
        print(f"run id: {run_id}")
    return 0 if ok else 1


def _plan_like(args: argparse.Namespace, overrides: dict[str, Any]) -> Plan:
    """The plan of a bundle's run (verified first) on this site's environment: the bundle's
    config as it ran, but for its environment and limits — never used: they name another
    site's hosts and hardware — which are CONFIG's (the only sections read of it), or
    --env's kind, or the default environment. A config that names its site elsewhere (a
    directory, a device, fio servers: :data:`harness.api.model.SITE` fields) is refused."""
    from harness.execution.plan import build_plan, load_yaml
    from harness.results import bundle

    given = [flag for flag, key in (("--scale", "scale"), ("--suite", "suite"), ("--repeat", "repeat"),
                                    ("--backends", "backends"), ("--workloads", "workloads"))
             if overrides.get(key) is not None]
    if given or args.resume is not None:
        raise BadInput(f"--like runs the bundle's work as it ran: {', '.join(given) or '--resume'} would change it",
                       hint="leave it out; only the environment is this site's (CONFIG's environment section, "
                            "or --env)")
    site: dict[str, Any] = {}
    if args.config is not None:
        site = load_yaml(args.config)
        other = sorted(str(k) for k in site if k not in ("environment", "limits"))
        if other:
            raise BadInput(f"{files.printable(args.config)}: with --like only its environment and limits are read, "
                           f"and it has {', '.join(files.printable(k, 40) for k in other)} too",
                           hint="give a config of only 'environment:' and 'limits:' (the bundle's config is the rest)")
    with bundle.opened(args.like, args.expect, reads) as found:
        bundle.must_verify(found, args.like, "nothing was run")
        assert found.store is not None
        info = found.store.run(found.run_id)
        digest = found.sha256
    from harness.execution.schema import as_written

    data = {k: v for k, v in as_written(info.config).items() if k != "environment"}
    data["environment"] = site.get("environment", DEFAULT_ENVIRONMENT)
    env = {"environment": {"kind": args.env}} if args.env else {}
    data.pop("limits", None)  # (the other site's hardware: its link, its clients' memory)
    if "limits" in site:
        data["limits"] = site["limits"]
    plan = build_plan(data, source=f"like run {info.id} (bundle sha256 {digest})", overrides=env,
                      elsewhere=f"bundle {files.printable(args.like)}")
    print(f"running the work of run {info.id} (bundle sha256 {digest[:16]}…) on environment "
          f"'{plan.config.environment.kind}'")
    return plan


def say_notes(plan: Plan) -> None:
    """What the user should hear before the plan runs: its notes, and every installed plugin
    that cannot be used (a line each: a config that does not name it goes on without it)."""
    notes = list(plan.notes)
    for kind in registry.GROUPS:
        for message in registry.broken(kind).values():
            if not any(message in note for note in notes):
                notes.append(f"{message}; left out (a config that names it is refused)")
    for note in notes:
        print(shown_line(f"dfsbench: note: {note}"), file=sys.stderr)


def cmd_check(args: argparse.Namespace) -> int:
    plan = plan_from_file(args.config)
    say_notes(plan)
    print(f"{files.printable(args.config)}: ok — environment {plan.environment.name}, scale {plan.config.scale}, "
          f"repeat {plan.config.repeat}")
    print(f"  backends: {', '.join(f'{b.name}/{b.variant}' for b in plan.backends)}")
    every = every_cell(plan)  # (the rule the run counts by: each backend, the workloads that take its targets)
    for w in plan.workloads:
        cells = w.cells()
        warmup = w.warmup(cells[0]) if cells else None
        on = [f"{b.name}/{b.variant}" for b in plan.backends if w.accepts & {b.kind}]  # (every_cell's rule)
        print(f"  workload {w.name}: {len(cells)} cell{'' if len(cells) == 1 else 's'}"
              + (f", each after {warmup[1]:g} s of untimed warm-up ({warmup[0]})" if warmup else "")
              + (f"; on {', '.join(on)}" if on else "; on no backend (none takes its kind of target)")
              + ("; from every client host at once" if w.clients == "all" else "; from the first client host"))
        if w.fault is not None:
            print(f"    {_fault_said(w.fault)}")
    # (a cell with a fault runs before, during and after it, where its backend runs on a system
    # that can be faulted: harness.execution.cell.Cell._through_fault)
    faulted = sum(1 for p in every if p.workload.fault is not None and p.backend.requires)
    print(f"  cell runs: {len(every)} in all (every workload's cells on each backend that takes them"
          + (f", at each of the sweep's {len(plan.points)} points" if len(plan.points) > 1 else "")
          + (f", in each of {plan.config.repeat} repeats" if plan.config.repeat > 1 else "") + ")"
          + (f"; {faulted} of them through a fault, each run three times (before, during and after it): "
             f"{len(every) + 2 * faulted} passes" if faulted else ""))
    if len(plan.points) > 1:  # (what is printed of a config is shown escaped: it is a stranger's text)
        print(f"  sweep: {len(plan.points)} points, each runs every cell: "
              + "; ".join(files.printable(p.describe()) for p in plan.points))
    order = plan.config.order
    if not order.shuffle:
        print("  order: as listed (order: listed)")
    elif order.seed is None:
        print("  order: shuffled, from a seed drawn as the run starts (printed then, and stored with the run)")
    else:
        swept = Order(order.seed).points(plan.points, 0)
        print(f"  order: shuffled, seed {order.seed}" + (": the sweep's points in repeat 1: " + "; ".join(
            files.printable(p.describe()) for p in swept if p.values) if len(plan.points) > 1 else ""))
        for line in Order(order.seed).cells_said(swept[0], 0, plan.points.index(swept[0])):
            print(f"    {files.printable(line)}")
    return 0


def _fault_said(fault: FaultSpec) -> str:
    """A workload's fault as check says it: what, where, and when in each cell."""
    where = f"node {files.printable(fault.node, 80)}" if fault.node else "the system's second storage node"
    done = {"kill": "kill (SIGKILL)", "stop": "stop (SIGTERM, then SIGKILL)", "pause": "pause (freeze)"}[fault.action]
    what = f"{done} {'its data process (an OSD, a brick, a volume server) on ' if fault.target == 'process' else ''}"
    undo = "unpaused" if fault.action == "pause" else "started again"
    back = (f", {undo} at {fault.restore_after_s:g} s" if fault.restore_after_s is not None else
            f", {undo} when the cell's work ends")
    return (f"fault: {what}{where} {fault.after_s:g} s into each cell's timed phase{back} (its daemons take "
            f"seconds more to run again); then up to {fault.recovery_timeout_s:g} s for the system to be healthy")
