"""What is checked before a run and before each cell: every tool on every client host, room
for what a cell writes (or addresses, on a device), and a target that is still mounted as
what it was and answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.api.described import Described
from harness.api.contracts import Cluster, Workload, reaches_past
from harness.api.target import Target
from harness.errors import BadInput, DfsbenchError
from harness.execution.plan import Plan
from harness.system.hosts import LOCAL, Host
from harness.units import size


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


def room_for(workload: Workload, cell: dict[str, Any], target: Target, cluster: Cluster | None = None,
             copies: float = 1.0, clients: int = 1) -> None:
    """Refuse a cell that would write more than the target has free, with the figures; on
    a lab whose systems all keep their data on one disk of this host, more than that disk
    has free for every copy (``copies``: replicas, or (k+m)/k) the systems keep. A cell run
    on ``clients`` at once writes what one writes, that many times. On a block device or an
    RBD image: a cell whose I/O would reach past its end (check refuses it from the plan).
    And what of its options the workload cannot run on the target's kind (Workload.unrunnable,
    which check asks of the plan too)."""
    cannot = workload.unrunnable(target.kind)
    if cannot is not None:
        raise DfsbenchError(f"{workload.name}'s {cannot[0]}: {cannot[1]}", hint=cannot[2] or None)
    if target.holds is not None:
        past = reaches_past(workload, cell, target.holds, f"the {target.kind} target of {target.key}")
        if past is not None:
            raise DfsbenchError(f"{workload.name}'s {past[0]}: {past[1]}",
                                hint=f"give {past[0]} at most {size(target.holds)}, or the device more")
    need = workload.writes(cell) * clients
    if not need or target.kind != "path" or target.path is None:
        return
    free = target.host.free_bytes(target.path)
    if need > free:
        raise DfsbenchError(f"{workload.name} would write {size(need)} to {target.key} at "
                            f"{target.host.name}:{target.path}, which has {size(free)} free",
                            hint="free space there, or give the workload smaller sizes")
    shared = cluster.shared_disk if cluster is not None else None
    if shared is not None and need * copies > (disk := LOCAL.free_bytes(shared)):
        raise DfsbenchError(f"{workload.name} would write {size(need)} to {target.key}, kept {copies:g} "
                            f"times: {size(need * copies)} on this host's disk under {shared}, which "
                            f"has {size(disk)} free", hint="free space there, or give the workload "
                                                           "smaller sizes")


def still_there(target: Target, answer_within: float = 10) -> None:
    """Before each cell: the target's file system is still mounted, as what it was when
    attached, and answers on every client host. A FUSE client that died leaves an empty
    directory (writing there measures the local disk) and one that hangs blocks every
    operation: either fails the cell at once, not each operation in it."""
    if target.kind != "path" or target.path is None:
        return
    want = Described.read(target.description).fs_type
    for host in target.hosts or (target.host,):
        where = f"{target.key} at {target.path}" + ("" if host.local else f" on {host.name}")
        wrong = host.answers(target.path, answer_within)
        if wrong:
            raise DfsbenchError(f"{where} {wrong}", hint="see its client's log; the other cells go on")
        found = _mounted_as(host.mounts(), target.path)
        if want and found != want:
            raise DfsbenchError(f"{where} is now on a '{found}' file system, not the '{want}' it was "
                                "attached as: its mount is gone", hint="its client died; see the client's log")


def _mounted_as(rows: list[list[str]], path: Path) -> str | None:
    """The type of the file system that holds ``path`` (the longest mount point above it)."""
    best, fstype = -1, None
    for row in rows:
        point = row[1].rstrip("/") or "/"
        if (str(path) == point or str(path).startswith(point.rstrip("/") + "/")) and len(point) > best:
            best, fstype = len(point), row[2]
    return fstype
