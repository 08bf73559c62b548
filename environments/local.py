"""Environment ``local``: every storage system's daemons as plain processes on this host,
each system under a directory of its own (``harness.api.systems.System.start_processes``).

Everything lives under one lab directory (``lab_dir``, default ``/var/tmp/dfsbench-local-lab``
or ``$DFSBENCH_LOCAL_LAB_DIR``); its ledger lists every process, mount and file created, so
``dfsbench lab down`` (or the end of a run that started the lab) undoes exactly those.
A lab started by ``dfsbench lab up`` is reused by ``run`` and left running.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


from pydantic import Field

from environments.local_faults import ProcessFaults
from harness.api import registry
from harness.api.contracts import Backend, Cluster, LabStatus, ServiceHealth, Workload
from harness.api.lab import LabEnvironment, LabOptions, Note
from harness.api.records import describe_cell
from harness.api.systems import LocalFaults, LocalLab, Processes, System, biggest_cell, capable, refuse_plan, with_sizes
from harness.errors import BadInput, DfsbenchError
from harness.system.hosts import LOCAL
from harness.system.parallel import Threads
from harness.system.ledger import Ledger, read_mounts
from harness.system.files import printable
from harness.units import size

SYSTEMS = capable(registry.systems(), LocalLab)  # (those that can run here)

# a unix socket's path: sun_path holds 108 bytes, the last a NUL
SOCKET_PATH_MOST = 107


ONE_HOST = ("the local lab: client and servers share this one host with no network between them, so "
            "replication costs no link here, and its comparisons are of this host, not of a cluster")


class LabSizes(LabOptions):
    ready_timeout_s: float = Field(180, gt=0, description="seconds the lab may take to come up and be healthy before lab up fails (and undoes what it made)")


# the lab's own keys and every system's sizing keys (each named after its system)
LocalOptions = with_sizes(LabSizes, "LocalOptions", SYSTEMS)


def _which(w: Workload, cell: dict[str, Any]) -> str:
    """The options' list items a cell was made of (``.files[0]``), to name in a refusal."""
    found = []
    for key, field in type(w.options).model_fields.items():
        value = getattr(w.options, key)
        if isinstance(value, list):
            found += [f".{key}[{value.index(v)}]" for v in cell.values() if not isinstance(v, bool) and v in value]
    return "".join(found[:1])


class LocalEnvironment(LabEnvironment):
    name = "local"
    Options = LocalOptions
    options: Any
    provides = {name: s.Service for name, s in SYSTEMS.items()}
    capability = LocalLab
    fault_capability = LocalFaults
    said = "the local lab"
    can_fault = True  # (a system's data processes, where it names them: LocalFaults)
    teardown_grace = 0.5
    former_places = (("DFSBENCH_LAB_DIR", "/var/tmp/dfsbench-lab"),)
    run_only = LabEnvironment.run_only | {"ready_timeout_s"}

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        self.systems: dict[str, Any] = {name: s(options) for name, s in SYSTEMS.items()}

    def can_fault_system(self, system: str) -> bool:
        return isinstance(self.systems.get(system), self.fault_capability)

    def system_keys(self) -> dict[str, frozenset[str]]:
        return {name: frozenset(type(s).LocalOptions.model_fields) for name, s in self.systems.items()}

    def check_plan(self, backends: list[Backend], workloads: list[Workload]) -> None:
        """What this lab's sizes say before it starts: what a system refuses of a backend (a
        pool of more copies than OSDs, an erasure code of more chunks), and a cell that writes
        more than a system of the lab holds (as the system says: its OSDs' size over its
        copies; this host's free disk under the lab over the copies, where every copy lives)
        is refused now, not found half-way through a run (harness.execution.checks.room_for
        still checks each cell)."""
        self._room_for_sockets(backends)
        refuse_plan(self.systems, backends, "local")
        place = self.lab_dir
        while not place.exists() and place != place.parent:
            place = place.parent
        free = LOCAL.free_bytes(place)
        for i, w in enumerate(workloads):
            most, biggest = biggest_cell(w)
            for b in backends:
                if not b.requires and b.kind == "path" and w.accepts & {b.kind}:
                    # (a directory of this host's: its own, or one in the run's, under the lab's)
                    self._room_here(i, w, b, most, biggest)
                for system in sorted(b.requires & set(self.systems)):
                    if not w.accepts & {b.kind}:
                        continue
                    room = self.systems[system].room(b, free, place)
                    if most > room.bytes:
                        raise BadInput(f"workloads[{i}].options{_which(w, biggest)}: the {w.name} cell "
                                       f"{describe_cell(biggest)} writes {size(most)}, and {b.name}/{b.variant} on "
                                       f"the local lab holds at most {size(room.bytes)} ({room.why})",
                                       hint=room.hint)

    def _room_here(self, i: int, w: Workload, b: Backend, most: int, biggest: dict[str, Any]) -> None:
        """A cell that writes more than the disk of a system-less backend's directory has
        free (what each cell is checked for before it runs, harness.execution.checks.room_for)."""
        place = b.directory() or self.lab_dir
        while not place.exists() and place != place.parent:
            place = place.parent
        free = LOCAL.free_bytes(place)
        if most > free:
            raise BadInput(f"workloads[{i}].options{_which(w, biggest)}: the {w.name} cell {describe_cell(biggest)} "
                           f"writes {size(most)}, and {b.name}/{b.variant} has {size(free)} free under "
                           f"{printable(place, 80)}", hint="give the workload smaller sizes, or the backend a "
                                                             "directory with more room")

    def _room_for_sockets(self, backends: list[Backend]) -> None:
        """The daemons' unix sockets live under the lab directory: its path leaves room for
        the longest of them within sun_path (107 bytes and a NUL), else a daemon fails to
        bind it half-way through bring-up."""
        needed = set().union(*(b.requires for b in backends)) if backends else set()
        for name in sorted(needed & set(self.systems)):
            socket = self.systems[name].socket_path(self.lab_dir / name)
            if socket is None:
                continue
            longest = len(str(socket).encode())
            if longest > SOCKET_PATH_MOST:
                room = SOCKET_PATH_MOST - (longest - len(str(self.lab_dir).encode()))
                key = "environment.options.lab_dir" if self.options.lab_dir is not None else "the lab directory"
                raise BadInput(f"{key}: {printable(self.lab_dir, 80)} is {len(str(self.lab_dir).encode())} bytes "
                               f"long, and the {name} daemons' unix sockets under it would be {longest} "
                               f"({printable(socket, 80)}): a socket's path is at most "
                               f"{SOCKET_PATH_MOST} bytes (sun_path)",
                               hint=f"give the local lab a lab_dir of at most {room} bytes")

    def bring_up(self, ledger: Ledger, services: set[str], note: Note) -> dict[str, Any]:
        """Every system asked for, side by side (each waits on its own daemons most of the
        time), each under a directory of its own."""
        jobs: dict[str, Callable[[], Any]] = {}
        for name in sorted(services):
            offer = Processes(self.lab_dir / name, ledger, self.options.ready_timeout_s, note)
            jobs[name] = (lambda system, offer: lambda: system.start_processes(offer))(self.systems[name], offer)
        timings: dict[str, float] = {}

        def timed(name: str) -> Any:
            t0 = time.monotonic()
            info = jobs[name]()
            timings[name] = time.monotonic() - t0
            note(f"{name} ready in {timings[name]:.1f} s")
            return info

        with Threads(max_workers=len(jobs) or 1) as pool:  # (after an interrupt, the others stop at their next command)
            futures = {name: pool.submit(timed, name) for name in jobs}
            found = {name: f.result() for name, f in futures.items()}
        ledger.data["timings"] = timings
        return found

    def cluster(self, ledger: Ledger, services: dict[str, Any], reused: bool) -> Cluster:
        # (no host_disk: that client and servers share this host is said of every comparison here)
        faults = ProcessFaults(dict(self.systems), services, ledger, self.options.ready_timeout_s)
        return Cluster("local", services, ledger, self.lab_dir, reused, shared_disk=self.lab_dir, note=ONE_HOST,
                       faults=faults)

    def check_alive(self, ledger: Ledger) -> None:
        dead = [f"{name} (pid {p.pid})" for name, p, alive in ledger.live_processes() if not alive]
        if dead:
            raise DfsbenchError(f"the lab in {self.lab_dir} is broken: {', '.join(dead[:5])} not running",
                                hint="run 'dfsbench lab down' to clean it up, then try again")

    def status(self) -> LabStatus:
        """Processes, each system's health and mounts of the running lab."""
        ledger = self.saved()
        if ledger is None:
            return LabStatus(False, self.where)
        procs = tuple((name, alive) for name, _, alive in ledger.live_processes())
        mounted = {point: fstype for _, point, fstype, _ in read_mounts()}
        mounts = tuple((e["path"], mounted.get(e["path"])) for e in ledger.entries if e["kind"] == "mount")
        services = []
        for name, service in sorted(self.services_of(ledger).items()):
            try:
                ok, text = self.systems[name].local_health(service)
            except DfsbenchError as exc:
                ok, text = False, exc.message
            services.append(ServiceHealth(name, ok, text))
        return LabStatus(True, self.where, tuple(services), mounts, procs)
