"""``dfsbench lab``: any environment's lab brought up, taken down or described, through
the Environment contract, with the lease that keeps a run and a 'lab down' apart."""

from __future__ import annotations

import argparse
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from harness.api.described import Described
from harness.commands.common import shown_line
from harness.errors import BadInput, DfsbenchError
from harness.execution.plan import plan_from_file
from harness.system import signals

if TYPE_CHECKING:
    from harness.api.contracts import LabStatus
    from harness.execution.plan import Plan
    from harness.execution.progress import Progress


def _env_for_lab(args: argparse.Namespace) -> Plan:
    overrides = {"environment": {"kind": args.env} if args.env else None}
    return plan_from_file(args.config, overrides)


def cmd_lab(args: argparse.Namespace) -> int:
    """Any environment's lab, through the Environment contract."""
    from harness.execution.plan import environment_from_file
    from harness.execution.progress import Progress

    progress = Progress()
    if args.force and args.action != "down":
        raise BadInput(f"--force is for 'lab down', not 'lab {args.action}'")
    if args.action == "up":
        plan = _env_for_lab(args)
        env = plan.environment
        with env.lease("lab up", progress.note), progress.step(f"lab up ({env.name}) in {env.where}"):
            cluster = env.start(plan.services() or set(env.provides), progress=progress.note)
            try:
                if not env.client_nodes:
                    _attach_all(plan, cluster, progress)
            except BaseException:
                with signals.shielded():
                    env.stop()  # half a lab is no lab: undo everything, then report why
                raise
        _print_status(env.status())
        _print_lease(env)
        return 0
    env = environment_from_file(args.config, args.env)
    if args.action == "down":
        with ExitStack() as leased:
            _lease_to_take_down(env, leased, args.force, progress)
            with progress.step(f"lab down ({env.name}) in {env.where}"), signals.shielded():
                problems = env.stop()
        if problems:
            raise DfsbenchError("some lab resources could not be removed:\n  " + "\n  ".join(problems),
                                hint="fix what is named above and run 'dfsbench lab down' again")
        return 0
    status = env.status()
    _print_status(status)
    _print_lease(env)
    return 0 if status.healthy else 1


def _lease_to_take_down(env: Any, leased: ExitStack, force: bool, progress: Progress) -> None:
    """The lab's lease for 'lab down' (a stale one is taken over); where a run holds it,
    refused — or, with ``force``, the lab is taken down under that run, which is said.
    (No lab directory: nothing to take down, and none is made for a lease.)"""
    from harness.api.lab import LabBusy, LabEnvironment

    if isinstance(env, LabEnvironment) and not env.lab_dir.exists():
        return
    try:
        leased.enter_context(env.lease("lab down", progress.note))
    except LabBusy as busy:
        who = str(busy.holder) if busy.holder is not None else "another dfsbench process"
        if not force:
            raise DfsbenchError(f"{busy.message}; taking the lab down would pull it from under that run",
                                hint="wait for that run to end, or add --force to take the lab down all the same "
                                     "(that run's cells then fail)") from None
        progress.note(f"--force: taking the lab down under {who}, which holds its lease (its cells will fail)")


def _print_lease(env: Any) -> None:
    """Who holds the lab's lease, where the environment keeps a lab that is up."""
    from harness.api.lab import LabEnvironment

    if not isinstance(env, LabEnvironment) or not env.ledger_path.exists():
        return
    held, taken = env.holder()  # (the lock decides; the ledger only names)
    if taken:
        print(shown_line(f"  lease: held by {held or 'a dfsbench process (it has not named itself yet)'}"))
    elif held is None:
        print("  lease: free (no run holds the lab)")
    else:
        why = "is gone" if not held.alive() else "does not hold its lock"
        print(shown_line(f"  lease: stale — {held} {why}; the next run or 'lab down' takes it over"))


def _attach_all(plan: Any, cluster: Any, progress: Progress) -> None:
    """Mount every backend that needs the lab, verified, and keep the mounts with the lab."""
    for backend in plan.backends:
        if not backend.requires or backend.kind != "path":
            continue
        with progress.step(f"mount {backend.name}/{backend.variant}"):
            # open without detach: the mount belongs to the lab; 'lab down' undoes it (each
            # variant of a backend under a directory of its own: two would share a mount point)
            target = backend.open(cluster, cluster.workdir / "mnt" / backend.variant)
            fs_type = Described.read(target.description).fs_type
            progress.note(f"{backend.name} at {target.path}" + (f" ({fs_type})" if fs_type else ""))


def _print_status(status: LabStatus) -> None:
    print(f"lab: {'up' if status.up else 'none'} ({status.where})")
    for s in status.services:
        print(f"  {s.name}: {'healthy' if s.healthy else 'NOT HEALTHY'} — {s.state}")
    for path, fstype in status.mounts:
        print(f"  mount {path}: {fstype + ' (verified in /proc/mounts)' if fstype else 'NOT MOUNTED'}")
    if status.processes:
        running = sum(1 for _, alive in status.processes if alive)
        print(f"  processes: {running} of {len(status.processes)} running")
        for name, alive in status.processes:
            if not alive:
                print(f"    {name}: NOT RUNNING")
