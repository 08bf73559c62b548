"""A toy plugin pair, written only for the tests, to prove that a third party's backend
and workload appear in tables, verdicts and the HTML report with no edit to the core:
a backend ``nullfs`` (a temporary directory standing in for a file system) and a workload
``statfs`` (statvfs calls per second on the target, one metric)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import Field

from harness.api.contracts import Backend, Cluster, Options, Workload
from harness.api.records import Measurement
from harness.api.tables import Column, TableSpec
from harness.api.target import Target


class NullFS(Backend):
    name = "nullfs"
    display = "NullFS"

    def open(self, cluster: Cluster, workdir: Path) -> Target:
        where = workdir / "nullfs"
        where.mkdir(parents=True, exist_ok=True)
        return Target("path", where, self.name, self.variant, {"system": "nullfs"})


class StatFSOptions(Options):
    calls: int = Field(2000, gt=0)


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
        start = time.perf_counter()
        for _ in range(cell["calls"]):
            os.statvfs(target.directory)
        elapsed = time.perf_counter() - start
        yield Measurement("statfs", "statvfs", "call_rate", cell["calls"] / elapsed, "op/s", dict(cell),
                          target.backend, target.variant)
