"""Which cell a record is of: the one join every output makes between records.

A cell is one run of a workload entry at one point of the sweep, on one system and variant,
in one repeat (``harness.execution.cell.cell_key``, stored with each of its records); a
pass is the cell in one phase of its fault (before, during, after). Every record the cell
stores — the tool's figures, the aggregate over its clients, its fault, its nodes'
resources — carries that key, so the records of a cell are exactly those with its key:
two cells that share every parameter but one (a randread and a randwrite entry at the same
``offered_iops``) are two cells, whatever parameters their records happen to share.

A record that was never stored by a run (``parse``, an import of JSON lines, a run of a
store older than cells) has no key: its cell is then its system, repeat, workload and
params but for what describes the record rather than the cell — exactly equal, never a
subset that happens to match. Such a record joins only records that say the same.

Which nodes are the system's own: the environment declares each node's ``role`` (a
client, or a server of the ``serves`` services); a system's own nodes are the clients and
the servers of the services its backend requires. A node that declared nothing is taken as
the system's (nothing says otherwise)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from harness.api.faults import FAULT
from harness.api.records import CIRCUMSTANTIAL, HARNESS_PARAMS, Measurement, describe_cell
from harness.api.sampler import CLIENT, HOST, RESOURCES

Cell = tuple[str, str, str, int, str]  # run, backend, variant, repeat, the cell's key
Pass = tuple[str, str, str, int, str, str | None]  # a cell and its phase

# what describes a record, not the cell it is of (a record without a stored key: its cell
# is its params without these)
DESCRIBES = CIRCUMSTANTIAL | set(HARNESS_PARAMS) | {
    # a node's record (harness.execution.sampling)
    "for", "cores", "peak_process", "peak_process_cpu", "cpus", "disk", "share", "capacity", "role", "serves",
    # a fault's (harness.execution.timeline)
    "fault", "health", "verified", "injected", "noticed", "restored", "healthy", "unhealthy_last", "noticed_after_s",
    "measured_from", "notice", "stores_data", "figures_of", "rate_unit", "level", "lowest_rate", "stall_s",
    "back_to_level_s", "closing_s", "figures_why",
    # an aggregate's, a per-client record's ('clients' is not: a sweep's point of one client
    # and its point of two are two cells)
    "failed_clients", "read_on"}


def workload_of(m: Measurement) -> str:
    """The workload whose cell a record is of: its own, or the one a node's or a fault's
    record is ``for``."""
    return str(m.params.get("for")) if m.workload in (RESOURCES, FAULT) else m.workload


def cell_of(m: Measurement) -> Cell:
    """The cell a record is of, whole: its run, system, variant and repeat, and its stored key
    (workload entry, profile and every other parameter, point); see the module's text for a
    record without one."""
    key = m.cell
    if key is None:
        key = json.dumps([workload_of(m), {k: v for k, v in m.params.items() if k not in DESCRIBES}],
                         sort_keys=True, default=repr)
    return (m.run_id, m.backend, m.variant, m.repeat, key)


def pass_of(m: Measurement) -> Pass:
    """The pass a record is of: its cell and its phase (None: a cell without a fault, or
    what spans its phases — the fault's own record)."""
    phase = m.params.get("phase")
    return (*cell_of(m), str(phase) if phase is not None else None)


def by_cell(records: Iterable[Measurement]) -> dict[Cell, list[Measurement]]:
    out: dict[Cell, list[Measurement]] = {}
    for m in records:
        out.setdefault(cell_of(m), []).append(m)
    return out


def by_pass(records: Iterable[Measurement]) -> dict[Pass, list[Measurement]]:
    out: dict[Pass, list[Measurement]] = {}
    for m in records:
        out.setdefault(pass_of(m), []).append(m)
    return out


def is_node(m: Measurement) -> bool:
    """A record of one node of the lab (not this machine's, nor a figure derived from them)."""
    return m.workload == RESOURCES and m.test not in (HOST, "cost", "busiest")


Roles = dict[tuple[str, str], tuple[str, frozenset[str]]]


def roles(records: Iterable[Measurement]) -> Roles:
    """Per (run, node): what the environment declared the node is — its role and the
    services it serves — from any of its records that says."""
    out: Roles = {}
    for m in records:
        if is_node(m) and m.params.get("role"):
            out[(m.run_id, m.test)] = (str(m.params["role"]),
                                       frozenset(s for s in str(m.params.get("serves") or "").split(",") if s))
    return out


def own(m: Measurement, services: Iterable[str], declared: Roles) -> bool:
    """Whether a node's record is of a node of the system under test: a client, or a server
    of one of its ``services``. A node that declared nothing, or a system that names no
    services, cannot be told apart: the node counts as the system's."""
    found = declared.get((m.run_id, m.test))
    theirs = set(services)
    if found is None or not theirs:
        return True
    role, serves = found
    return role == CLIENT or bool(serves & theirs)


def role_of(m: Measurement, declared: Roles) -> str | None:
    found = declared.get((m.run_id, m.test))
    return found[0] if found else None


KEY_MOST = 4000  # characters of a stored cell key read as JSON (one dfsbench writes is far shorter)


def stored_params(m: Measurement) -> dict[str, Any] | None:
    """The parameters a record's stored cell key names (``offered_iops``, ``profile``, …), where
    the key is one dfsbench writes — a JSON list of five ending in an object, every value of it
    that the record's own params also have the same — else None (a key from a stranger's
    store is data: it never titles what its records do not say)."""
    if m.cell is None or len(m.cell) > KEY_MOST:
        return None
    try:
        stored = json.loads(m.cell)
    except (ValueError, RecursionError):
        return None
    if not isinstance(stored, list) or len(stored) != 5 or not isinstance(stored[-1], dict) or not stored[-1]:
        return None
    backend, _, repeat, workload, said = stored  # (the variant: a view apart renames it)
    name = workload[0] if isinstance(workload, list) and workload else workload
    if (backend, repeat, name) != (m.backend, m.repeat, workload_of(m)) \
            or any(k in m.params and m.params[k] != v for k, v in said.items()):
        return None
    return said


def described(m: Measurement, leave_out: tuple[str, ...] = ()) -> str:
    """The cell a record is of, for people: the parameters its run stored it under (its
    point and what the workload's cell is: ``offered_iops=100 profile=randread-4k``), else
    its own params but ``leave_out``."""
    said = stored_params(m)
    return describe_cell(said if said is not None else m.params, () if said is not None else leave_out)
