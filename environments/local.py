"""Environment ``local``: Ceph and GlusterFS daemons as plain processes on this host.

Everything lives under one lab directory (``lab_dir``, default ``/var/tmp/dfsbench-lab``
or ``$DFSBENCH_LAB_DIR``); its ledger lists every process, mount and file created, so
``dfsbench lab down`` (or the end of a run that started the lab) undoes exactly those.
A lab started by ``dfsbench lab up`` is reused by ``run`` and left running.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import Field

from backends.ceph_client import CephService
from backends.gluster_client import GlusterCli, GlusterService, volume_status
from environments.ceph import CephLab, MonSession, health_ok
from environments.gluster import GlusterLab
from harness.api.contracts import (
    Cluster,
    Environment,
    LabStatus,
    Options,
    ServiceHealth,
)
from harness.errors import DfsbenchError
from harness.system import signals
from harness.system.ledger import Ledger, read_mounts

SERVICES: dict[str, type[CephService] | type[GlusterService]] = {"ceph": CephService, "gluster": GlusterService}
# seconds a daemon gets after SIGTERM when the whole lab goes away (its data is deleted
# right after, so there is nothing for an orderly shutdown to keep)
TEARDOWN_GRACE = 0.5


def default_lab_dir() -> Path:
    return Path(os.environ.get("DFSBENCH_LAB_DIR", "/var/tmp/dfsbench-lab"))


class LocalOptions(Options):
    lab_dir: Path | None = Field(None, description="where the lab lives (default /var/tmp/dfsbench-lab)")
    ceph_osds: int = Field(3, ge=1, le=12)
    ceph_replicas: int = Field(3, ge=1, le=12)
    ceph_osd_size_gib: int = Field(16, ge=2, description="sparse file size of each OSD")
    gluster_bricks: int = Field(3, ge=1, le=24)
    gluster_replica: int = Field(3, ge=1, le=12)
    ready_timeout_s: float = Field(180, gt=0)


class LocalEnvironment(Environment):
    name = "local"
    Options = LocalOptions
    options: LocalOptions
    provides = SERVICES

    @property
    def where(self) -> str:
        return str(self.lab_dir)

    @property
    def lab_dir(self) -> Path:
        return (self.options.lab_dir or default_lab_dir()).absolute()

    @property
    def ledger_path(self) -> Path:
        return self.lab_dir / "ledger.json"

    def existing(self) -> Ledger | None:
        return Ledger.open(self.ledger_path) if self.ledger_path.exists() else None

    @contextmanager
    def up(self, services: set[str], progress: Callable[[str], None] | None = None) -> Iterator[Cluster]:
        ledger = self.existing()
        if ledger is not None:
            cluster = self._reuse(ledger, services)
            yield cluster
            return
        cluster = self.start(services, progress)
        try:
            yield cluster
        finally:
            problems = cluster.ledger.undo(grace_cap=TEARDOWN_GRACE)
            if problems:
                raise DfsbenchError("the lab was not torn down cleanly:\n  " + "\n  ".join(problems),
                                    hint="run 'dfsbench lab down' to retry")

    def _reuse(self, ledger: Ledger, services: set[str]) -> Cluster:
        dead = [f"{name} (pid {p.pid})" for name, p, alive in ledger.live_processes() if not alive]
        if dead:
            raise DfsbenchError(f"the lab in {self.lab_dir} is broken: {', '.join(dead[:5])} not running",
                                hint="run 'dfsbench lab down' to clean it up, then try again")
        have = set(ledger.data.get("services", {}))
        if not services <= have:
            raise DfsbenchError(f"the running lab in {self.lab_dir} has {sorted(have) or 'no services'}, "
                                f"this run needs {sorted(services)}",
                                hint="run 'dfsbench lab down' and let the run start its own lab")
        typed = {name: SERVICES[name](**d) for name, d in ledger.data["services"].items()}
        return Cluster("local", typed, ledger, self.lab_dir, reused=True, shared_disk=self.lab_dir)

    def start(self, services: set[str],
              progress: Callable[[str], None] | None = None) -> Cluster:
        """Bring the services up and leave them running; on failure undo and re-raise."""
        unknown = services - set(SERVICES)
        if unknown:
            raise DfsbenchError(f"environment 'local' cannot provide {sorted(unknown)}; "
                                f"it provides {', '.join(SERVICES)}")
        if self.ledger_path.exists():
            raise DfsbenchError(f"a lab is already set up in {self.lab_dir}",
                                hint="use it, or run 'dfsbench lab down' first")
        if self.lab_dir.exists() and any(self.lab_dir.iterdir()):
            raise DfsbenchError(f"{self.lab_dir} exists and is not empty, but holds no lab ledger",
                                hint="choose another lab_dir, or remove that directory yourself")
        ledger = Ledger(self.ledger_path)
        ledger.tree(self.lab_dir, background=True)
        timings: dict[str, float] = {}
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

        def timed(name: str) -> Any:
            t0 = time.monotonic()
            info = jobs[name]()
            timings[name] = time.monotonic() - t0
            if progress:
                progress(f"{name} ready in {timings[name]:.1f} s")
            return info

        pool = ThreadPoolExecutor(max_workers=len(jobs) or 1)
        try:
            futures = {name: pool.submit(timed, name) for name in jobs}
            infos = {name: f.result() for name, f in futures.items()}
        except BaseException:
            with signals.shielded():
                pool.shutdown()  # after an interrupt, the other one stops at its next command
                ledger.undo(grace_cap=TEARDOWN_GRACE)
            raise
        pool.shutdown()
        ledger.data["services"] = {name: info.to_dict() for name, info in infos.items()}
        ledger.data["timings"] = timings
        ledger.save()
        return Cluster("local", infos, ledger, self.lab_dir, shared_disk=self.lab_dir)

    def stop(self) -> list[str]:
        ledger = self.existing()
        return [] if ledger is None else ledger.undo(grace_cap=TEARDOWN_GRACE)

    def status(self) -> LabStatus:
        """Processes, cluster health, volume state and mounts of the running lab."""
        ledger = self.existing()
        if ledger is None:
            return LabStatus(False, self.where)
        procs = tuple((name, alive) for name, _, alive in ledger.live_processes())
        mounted = {point: fstype for _, point, fstype, _ in read_mounts()}
        mounts = tuple((e["path"], mounted.get(e["path"])) for e in ledger.entries if e["kind"] == "mount")
        services = []
        infos = ledger.data.get("services", {})
        if "ceph" in infos:
            info = infos["ceph"]
            try:
                with MonSession(Path(info["conf"]), Path(info["keyring"]),
                                Path(info["log_dir"]) / "session.log", connect_timeout=10) as mon:
                    ok, text = health_ok(mon)
            except DfsbenchError as exc:
                ok, text = False, exc.message
            services.append(ServiceHealth("ceph", ok, text))
        if "gluster" in infos:
            info = infos["gluster"]
            cli = GlusterCli(Path(info["socket"]), Path(info["log_dir"]) / "cli.log")
            try:
                ok, text = volume_status(cli, info["volume"], len(info["bricks"]))
            except DfsbenchError as exc:
                ok, text = False, exc.message
            services.append(ServiceHealth("gluster", ok, text))
        return LabStatus(True, self.where, tuple(services), mounts, procs)
