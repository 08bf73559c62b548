"""Toy plugins, written only for the tests, to prove that a third party's environment,
backend and workload appear in tables, verdicts, the HTML report and ``dfsbench lab`` with
no edit to the core: a backend ``nullfs`` (a temporary directory standing in for a file
system), a workload ``statfs`` (statvfs calls per second on the target, one metric), and
an environment ``toybox`` whose lab serves a ``toyspace`` (a directory, and a daemon that
stands for its server) to a backend ``toyfs``."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from harness.api.contracts import Backend, Cluster, LabStatus, Options, ServiceHealth, Workload
from harness.api.lab import LabEnvironment, LabOptions, Note
from harness.api.records import Measurement
from harness.api.tables import Column, TableSpec
from harness.api.target import Target
from harness.system import proc
from harness.system.ledger import Ledger


class NullFSOptions(Options):
    replicas: str | int | None = Field(None, description="what its description says of its copies (a test's)")


class NullFS(Backend):
    name = "nullfs"
    display = "NullFS"
    Options = NullFSOptions
    options: NullFSOptions

    def open(self, cluster: Cluster, workdir: Path) -> Target:
        where = workdir / "nullfs"
        where.mkdir(parents=True, exist_ok=True)
        said = {} if self.options.replicas is None else {"replicas": self.options.replicas}
        return Target("path", where, self.name, self.variant, {"system": "nullfs", **said})


class StatFSOptions(Options):
    calls: int = Field(2000, gt=0)
    seconds: float = Field(0, ge=0, le=60, description="at least this long: the calls again until then")


class StatFS(Workload):
    name = "statfs"
    Options = StatFSOptions
    options: StatFSOptions
    tables = (TableSpec("statfs: statvfs calls per second", (Column("call_rate", "calls/s"),),
                        "call_rate", ("test", "calls"), lambda m: (m.test, f"{m.params['calls']:,}"),
                        chart="call_rate"),)

    def cells(self) -> list[dict[str, Any]]:
        return [{"calls": self.options.calls}]

    def run(self, target: Target, cell: dict[str, Any], scratch: Path,
            raw_dir: Path) -> Iterator[Measurement]:
        target.begin("statvfs")
        start, made = time.perf_counter(), 0
        while not made or time.perf_counter() - start < self.options.seconds:
            for _ in range(cell["calls"]):
                os.statvfs(target.directory)
            made += cell["calls"]
        elapsed = time.perf_counter() - start
        yield Measurement("statfs", "statvfs", "call_rate", made / elapsed, "op/s", dict(cell),
                          target.backend, target.variant)


@dataclass(frozen=True)
class ToySpace:
    """What the toy lab hands to backends: where its space is."""

    directory: str


class ToyLink(Options):
    rate: str = "1Gbit"


class ToyBoxOptions(LabOptions):
    daemons: int = Field(1, ge=1, le=4, description="how many daemons stand for its servers")
    link: ToyLink = Field(default_factory=ToyLink, description="a link it only records")
    ready_timeout_s: float = Field(10, gt=0, description="changes how long a run waits, not the lab")


class ToyBox(LabEnvironment):
    """A lab of one directory and its daemons (sleeps) that stand for its servers."""

    name = "toybox"
    Options = ToyBoxOptions
    options: ToyBoxOptions
    provides = {"toyspace": ToySpace}
    run_only = LabEnvironment.run_only | {"ready_timeout_s"}

    def bring_up(self, ledger: Ledger, services: set[str], note: Note) -> dict[str, object]:
        space = self.lab_dir / "space"
        space.mkdir(parents=True)
        for _ in range(self.options.daemons):
            daemon = proc.spawn(["sleep", "3600"], self.lab_dir / "daemon.log")
            started = ledger.process(daemon.pid, "toy daemon", grace=1)
            note(f"toy space ready, its daemon pid {started.pid} started at tick {started.start_ticks}")
        return {"toyspace": ToySpace(str(space))}

    def cluster(self, ledger: Ledger, services: dict[str, object], reused: bool) -> Cluster:
        return Cluster(self.name, services, ledger, self.lab_dir, reused)

    def status(self) -> LabStatus:
        ledger = self.saved()
        if ledger is None:
            return LabStatus(False, self.where)
        space = self.services_of(ledger)["toyspace"]
        return LabStatus(True, self.where, (ServiceHealth("toyspace", Path(space.directory).is_dir(),
                                                          space.directory),),
                         processes=tuple((name, alive) for name, _, alive in ledger.live_processes()))


class ToyFS(Backend):
    name = "toyfs"
    display = "ToyFS"
    requires = frozenset({"toyspace"})

    def open(self, cluster: Cluster, workdir: Path) -> Target:
        space = cluster.service("toyspace", ToySpace, self.name)
        where = Path(space.directory) / f"{self.variant}-{os.getpid()}-{time.monotonic_ns()}"
        where.mkdir()
        return Target("path", where, self.name, self.variant, {"system": "toyfs"}, detach=where.rmdir)
