"""Environment ``local``: Ceph and GlusterFS daemons as plain processes on this host.

Everything lives under one lab directory (``lab_dir``, default ``/var/tmp/dfsbench-local-lab``
or ``$DFSBENCH_LOCAL_LAB_DIR``); its ledger lists every process, mount and file created, so
``dfsbench lab down`` (or the end of a run that started the lab) undoes exactly those.
A lab started by ``dfsbench lab up`` is reused by ``run`` and left running.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from backends.ceph import client as ceph_client
from backends.gluster import client as gluster_client
from backends.ceph.client import CephService, ErasureCode, FailureDomains
from backends.gluster.client import GlusterCli, GlusterService
from environments.ceph import CephLab, MonSession
from environments.ceph import longest_socket as ceph_socket
from environments.gluster import GlusterLab, replica_sets
from environments.gluster import longest_socket as gluster_socket
from harness.api.contracts import Backend, Cluster, LabStatus, ServiceHealth, Workload
from harness.api.lab import LabEnvironment, LabOptions, Note
from harness.api.records import describe_cell
from harness.errors import BadInput, DfsbenchError
from harness.system import signals
from harness.system.hosts import LOCAL
from harness.system.ledger import Ledger, read_mounts
from harness.system.files import printable
from harness.units import size

# a unix socket's path: sun_path holds 108 bytes, the last a NUL
SOCKET_PATH_MOST = 107


ONE_HOST = ("the local lab: client and servers share this one host with no network between them, so "
            "replication costs no link here, and its comparisons are of this host, not of a cluster")


class LocalOptions(LabOptions):
    ceph_osds: int = Field(3, ge=1, le=12)
    ceph_replicas: int = Field(3, ge=1, le=12)
    ceph_osd_size_gib: int = Field(16, ge=2, le=64 << 10, description="sparse file size of each OSD "
                                   "(at most 64 TiB)")
    gluster_bricks: int = Field(3, ge=1, le=24)
    gluster_replica: int = Field(3, ge=1, le=12)
    ready_timeout_s: float = Field(180, gt=0)

    @model_validator(mode="after")
    def _sets(self) -> LocalOptions:
        """What the lab's bring-up would refuse (GlusterLab), or never become healthy with
        (a pool of more copies than OSDs), said of its keys now."""
        refused = replica_sets(self.gluster_bricks, self.gluster_replica)
        if refused:
            raise ValueError(f"gluster_bricks, gluster_replica: {refused}")
        if self.ceph_replicas > self.ceph_osds:
            raise ValueError(f"ceph_replicas: {self.ceph_replicas} copies need as many OSDs (each copy on an OSD "
                             f"of its own), and ceph_osds is {self.ceph_osds}")
        return self


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
    options: LocalOptions
    provides = {"ceph": CephService, "gluster": GlusterService}
    teardown_grace = 0.5
    former_places = (("DFSBENCH_LAB_DIR", "/var/tmp/dfsbench-lab"),)

    def check_plan(self, backends: list[Backend], workloads: list[Workload]) -> None:
        """What this lab's sizes say before it starts: an erasure code of more chunks than
        the lab has OSDs (each chunk on an OSD of its own) is refused, and a cell that writes more than a system
        of the lab holds (its OSDs' size over its copies; this host's free disk under the lab
        over the copies, where every brick and OSD file lives) is refused now, not found
        half-way through a run (harness.execution.checks.room_for still checks each cell)."""
        o = self.options
        self._room_for_sockets(backends)
        place = self.lab_dir
        while not place.exists() and place != place.parent:
            place = place.parent
        free = LOCAL.free_bytes(place)
        osds = o.ceph_osds * (o.ceph_osd_size_gib << 30)

        def holds(b: Backend) -> tuple[float, str]:
            """What the backend's system keeps of each byte written, and what that leaves."""
            opts = b.options
            code = getattr(opts, "ec", None)
            if "ceph" in b.requires and isinstance(code, ErasureCode):
                copies = code.width / code.k
                return (min(osds, free) / copies, f"{o.ceph_osds} OSDs of {o.ceph_osd_size_gib} GiB and "
                        f"{size(free)} free under {place}, erasure code {code.k}+{code.m}: {copies:g} bytes "
                        "kept per byte written")
            if "ceph" in b.requires:
                copies = float(getattr(opts, "replicas", None) or o.ceph_replicas)
                return (min(osds, free) / copies, f"{o.ceph_osds} OSDs of {o.ceph_osd_size_gib} GiB and "
                        f"{size(free)} free under {place}, {copies:g} copies")
            layout = getattr(opts, "layout", None)
            if layout == "disperse":
                n = int(getattr(opts, "brick_count", 3))
                copies = n / (n - int(getattr(opts, "redundancy", 1)))
            else:
                copies = float(getattr(opts, "replica", None) or o.gluster_replica) if layout else \
                    float(o.gluster_replica)
            return free / copies, f"{size(free)} free under {place}, {copies:g} copies"

        for j, b in enumerate(backends):
            copies = getattr(b.options, "replicas", None)
            if "ceph" in b.requires and isinstance(copies, int) and copies > o.ceph_osds:
                raise BadInput(f"backends[{j}].options.replicas: {b.name}/{b.variant}: a pool of {copies} copies "
                               f"needs as many OSDs (each copy on an OSD of its own), and the local lab has "
                               f"{o.ceph_osds}: it would never be healthy", hint="give replicas at most "
                               f"{o.ceph_osds}, or the lab more OSDs (environment.options.ceph_osds)")
            code = getattr(b.options, "ec", None)
            if "ceph" in b.requires and isinstance(code, ErasureCode):
                # (all the lab's OSDs are on this one host: the failure domain is the OSD)
                refused = FailureDomains.over(1, o.ceph_osds).refusal(code)
                if refused:
                    raise BadInput(f"backends[{j}].options.ec: {b.name}/{b.variant}: {refused} in the local lab",
                                   hint=f"give k + m at most {o.ceph_osds}, or the lab more OSDs "
                                        "(environment.options.ceph_osds)")
        for i, w in enumerate(workloads):
            most, biggest = max(((w.writes(cell), cell) for cell in w.cells()), default=(0, {}),
                                key=lambda found: found[0])
            for b in backends:
                if not b.requires & {"ceph", "gluster"} or not w.accepts & {b.kind}:
                    continue
                room, why = holds(b)
                if most > room:
                    raise BadInput(f"workloads[{i}].options{_which(w, biggest)}: the {w.name} cell "
                                   f"{describe_cell(biggest)} "
                                   f"writes {size(most)}, and "
                                   f"{b.name}/{b.variant} on the local lab holds at most {size(room)} ({why})",
                                       hint="give the workload smaller sizes, or the lab larger OSDs "
                                            "(ceph_osd_size_gib) or more room under its lab_dir")

    def _room_for_sockets(self, backends: list[Backend]) -> None:
        """The daemons' unix sockets live under the lab directory: its path leaves room for
        the longest of them within sun_path (107 bytes and a NUL), else a daemon fails to
        bind it half-way through bring-up."""
        needed = set().union(*(b.requires for b in backends)) if backends else set()
        where = {"ceph": ceph_socket(self.lab_dir / "ceph", self.options.ceph_osds), "gluster": gluster_socket(self.lab_dir / "gluster")}
        for service in sorted(needed & set(where)):
            longest = len(str(where[service]).encode())
            if longest > SOCKET_PATH_MOST:
                room = SOCKET_PATH_MOST - (longest - len(str(self.lab_dir).encode()))
                key = "environment.options.lab_dir" if self.options.lab_dir is not None else "the lab directory"
                raise BadInput(f"{key}: {printable(self.lab_dir, 80)} is {len(str(self.lab_dir).encode())} bytes "
                               f"long, and the {service} daemons' unix sockets under it would be {longest} "
                               f"({printable(where[service], 80)}): a socket's path is at most "
                               f"{SOCKET_PATH_MOST} bytes (sun_path)",
                               hint=f"give the local lab a lab_dir of at most {room} bytes")

    def bring_up(self, ledger: Ledger, services: set[str], note: Note) -> dict[str, Any]:
        """Ceph and GlusterFS side by side (each waits on its own daemons most of the time)."""
        o = self.options
        jobs: dict[str, Callable[[], Any]] = {}
        if "ceph" in services:
            jobs["ceph"] = CephLab(self.lab_dir / "ceph", ledger, osds=o.ceph_osds,
                                   replicas=o.ceph_replicas, osd_size=o.ceph_osd_size_gib << 30,
                                   ready_timeout=o.ready_timeout_s).up
        if "gluster" in services:
            jobs["gluster"] = GlusterLab(self.lab_dir / "gluster", ledger, bricks=o.gluster_bricks,
                                         replica=o.gluster_replica,
                                         ready_timeout=o.ready_timeout_s).up
        timings: dict[str, float] = {}

        def timed(name: str) -> Any:
            t0 = time.monotonic()
            info = jobs[name]()
            timings[name] = time.monotonic() - t0
            note(f"{name} ready in {timings[name]:.1f} s")
            return info

        pool = ThreadPoolExecutor(max_workers=len(jobs) or 1)
        try:
            futures = {name: pool.submit(timed, name) for name in jobs}
            found = {name: f.result() for name, f in futures.items()}
        except BaseException:
            with signals.shielded():
                pool.shutdown()  # after an interrupt, the other one stops at its next command
            raise
        pool.shutdown()
        ledger.data["timings"] = timings
        return found

    def cluster(self, ledger: Ledger, services: dict[str, Any], reused: bool) -> Cluster:
        # (no host_disk: that client and servers share this host is said of every comparison here)
        return Cluster("local", services, ledger, self.lab_dir, reused, shared_disk=self.lab_dir, note=ONE_HOST)

    def check_alive(self, ledger: Ledger) -> None:
        dead = [f"{name} (pid {p.pid})" for name, p, alive in ledger.live_processes() if not alive]
        if dead:
            raise DfsbenchError(f"the lab in {self.lab_dir} is broken: {', '.join(dead[:5])} not running",
                                hint="run 'dfsbench lab down' to clean it up, then try again")

    def status(self) -> LabStatus:
        """Processes, cluster health, volume health and mounts of the running lab."""
        ledger = self.saved()
        if ledger is None:
            return LabStatus(False, self.where)
        procs = tuple((name, alive) for name, _, alive in ledger.live_processes())
        mounted = {point: fstype for _, point, fstype, _ in read_mounts()}
        mounts = tuple((e["path"], mounted.get(e["path"])) for e in ledger.entries if e["kind"] == "mount")
        services = []
        found = self.services_of(ledger)
        ceph = found.get("ceph")
        if isinstance(ceph, CephService):
            try:
                with MonSession(Path(ceph.conf), Path(ceph.keyring), Path(ceph.log_dir) / "session.log",
                                connect_timeout=10) as mon:
                    ok, text = ceph_client.health(mon.command("health", detail="detail"))
            except DfsbenchError as exc:
                ok, text = False, exc.message
            services.append(ServiceHealth("ceph", ok, text))
        gluster = found.get("gluster")
        if isinstance(gluster, GlusterService):
            cli = GlusterCli.on_socket(Path(gluster.socket), Path(gluster.log_dir) / "cli.log")
            try:
                ok, text = gluster_client.health(cli, gluster.volume, len(gluster.bricks), gluster.keeps_copies)
            except DfsbenchError as exc:
                ok, text = False, exc.message
            services.append(ServiceHealth("gluster", ok, text))
        return LabStatus(True, self.where, tuple(services), mounts, procs)
