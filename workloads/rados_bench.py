"""Workload ``rados-bench``: ``rados bench`` on a pool — write with ``--no-cleanup``, then
seq and rand reads of what was written, then cleanup (seed 000 §2.1, seed 001).

rados bench's "MB/sec" is MiB/s (it divides by 1048576); records carry B/s.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PositiveInt, field_validator

from backends.ceph_client import CephAccess
from harness.api.contracts import Bytes, Options, Workload
from harness.api.parsing import tool_parser
from harness.api.records import Measurement
from harness.api.tables import Column, TableSpec
from harness.api.target import Target
from harness.errors import BadInput
from harness.units import size

MIB = 1 << 20
MODES = ("write", "seq", "rand")


class RadosBenchOptions(Options):
    seconds: PositiveInt = Field(description="seconds per phase")
    block_size: Bytes = Field(4 << 20, description="-b (accepts 4MiB)")
    threads: PositiveInt = Field(16, le=1024, description="-t: operations in flight")
    modes: list[Literal["write", "seq", "rand"]] = Field(["write", "seq", "rand"])


    @field_validator("modes")
    @classmethod
    def _modes(cls, v: list[str]) -> list[str]:
        if ("seq" in v or "rand" in v) and "write" not in v:
            raise ValueError("'seq' and 'rand' read what 'write' left behind: include 'write'")
        return [m for m in MODES if m in v]


_FIELD = re.compile(r"^\s*(?:\d+\s+)?([A-Za-z][A-Za-z ()/]*?):\s+([-\d.e+]+)\s*$")
_COMMAND = re.compile(r"bench\s+(?:-p\s+\S+\s+)?(\d+)\s+(write|seq|rand)\b")


@tool_parser("rados bench")
def parse(text: str, mode: str | None = None, source: str = "rados bench output") -> list[Measurement]:
    """The summary of each ``rados bench`` run in the text (several runs may follow one
    another, as in a pasted session). The phase comes from ``mode``, else from a command
    line in the text, else from the file name, else "write" / "read"."""
    runs: list[dict[str, float]] = []
    modes: list[str | None] = []
    pending_mode: str | None = None
    current: dict[str, float] | None = None
    for line in text.splitlines():
        c = _COMMAND.search(line)
        if c:
            pending_mode = c.group(2)
        m = _FIELD.match(line)
        if not m:
            continue
        key, value = m.group(1).strip(), float(m.group(2))
        if key == "Total time run":
            current = {}
            runs.append(current)
            modes.append(pending_mode)
            pending_mode = None
        if current is not None:
            current[key] = value
    if not runs:
        raise BadInput(f"{source} holds no rados bench summary ('Total time run: …')",
                       hint="pass the full text rados bench printed")
    out: list[Measurement] = []
    for run, found in zip(runs, modes):
        writes = "Total writes made" in run
        test = mode or found or _mode_from_name(source) or ("write" if writes else "read")
        if mode is None and test != "write" and writes:
            test = "write"
        size = run.get("Write size") or run.get("Read size") or 0
        params = {"block_size": int(size), "object_size": int(run.get("Object size", size))}
        if "Bandwidth (MB/sec)" not in run:
            raise BadInput(f"{source}: a rados bench summary without 'Bandwidth (MB/sec)'")
        out.append(Measurement("rados-bench", test, "throughput", run["Bandwidth (MB/sec)"] * MIB,
                               "B/s", params))
        for key, metric, unit in (("Average IOPS", "iops", "op/s"),
                                  ("Average Latency(s)", "lat_mean", "s"),
                                  ("Max latency(s)", "lat_max", "s"),
                                  ("Min latency(s)", "lat_min", "s")):
            if key in run:
                out.append(Measurement("rados-bench", test, metric, run[key], unit, params))
        out.append(Measurement("rados-bench", test, "elapsed", run["Total time run"], "s", params))
    return out


def _mode_from_name(source: str) -> str | None:
    name = Path(source).name.lower()
    for mode in MODES:
        if re.search(rf"(^|[^a-z]){mode}([^a-z]|$)", name):
            return mode
    return None


class RadosBench(Workload):
    name = "rados-bench"
    version_argv = ("rados", "--version")
    tools = (("rados", "ceph-common"),)
    tool = "rados-bench"
    parser = staticmethod(parse)
    accepts = frozenset({"rados"})
    Options = RadosBenchOptions
    options: RadosBenchOptions
    tables = (TableSpec("rados bench", (Column("throughput", "rate"), Column("iops", "IOPS"),
                                        Column("lat_mean", "mean lat")), "throughput", ("phase", "objects"),
                        lambda m: (m.test, f"{size(m.params.get('block_size') or 0)} × "
                                           f"{m.params.get('threads')} threads")),)

    @classmethod
    def defaults(cls, scale: str) -> dict[str, Any]:
        return {"seconds": 60 if scale == "report" else 5}

    def cells(self) -> list[dict[str, Any]]:
        o = self.options
        return [{"block_size": o.block_size, "threads": o.threads, "seconds": o.seconds}]

    def run(self, target: Target, cell: dict[str, Any], scratch: Path,
            raw_dir: Path) -> Iterator[Measurement]:
        target.host.require("rados", "ceph-common")
        ceph = target.reach(CephAccess)
        base = ["rados", *ceph.args, "-p", ceph.pool]
        o = self.options
        deadline = o.seconds * 3 + 120  # reads stop when the written objects run out
        try:
            for mode in o.modes:
                argv = [*base, "bench", str(o.seconds), mode, "-t", str(o.threads)]
                if mode == "write":
                    argv += ["-b", str(o.block_size), "--no-cleanup"]
                out = raw_dir / f"rados-bench-{mode}.txt"
                result = target.host.run_tool(argv, deadline=deadline, output=out)
                if not result.ok:
                    raise result.failure(hint=f"output kept in {out}")
                for m in parse(result.output, mode=mode, source=str(out)):
                    yield Measurement(m.workload, m.test, m.metric, m.value, m.unit,
                                      {**m.params, "threads": o.threads, "seconds": o.seconds},
                                      target.backend, target.variant)
        finally:
            target.host.run([*base, "cleanup"], check=False, timeout=600)
