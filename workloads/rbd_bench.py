"""Workload ``rbd-bench``: ``rbd bench`` on an image (seed 000 §2.3):
``--io-type read|write --io-size --io-threads --io-total --io-pattern seq|rand``.

An RBD image reads unwritten ranges as zeros without touching a disk, so before the
first read the whole image is written once (sequential 4 MiB writes, not measured).
Throughput is ops/s × io_size: rbd bench rounds its own bytes/sec for display.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PositiveInt

from backends.ceph_client import CephAccess
from harness.api.contracts import Bytes, Options, Workload
from harness.api.parsing import tool_parser
from harness.api.records import Measurement
from harness.api.tables import Column, TableSpec
from harness.api.target import Target
from harness.errors import BadInput
from harness.units import parse_size, size


class RbdBenchOptions(Options):
    io_types: list[Literal["write", "read"]] = Field(["write", "read"])
    io_sizes: list[Bytes] = Field([4096, 4 << 20], description="--io-size values (accepts 4KiB)")
    io_threads: PositiveInt = Field(16, le=1024)
    io_total: Bytes = Field(description="--io-total per cell (accepts 256MiB, 5GiB)")
    io_patterns: list[Literal["seq", "rand"]] = Field(["seq", "rand"])
    deadline_s: float = Field(1800, gt=0)




_HEADER = re.compile(r"bench\s+type\s+(\w+)\s+io_size\s+(\d+)\s+io_threads\s+(\d+)\s+"
                     r"bytes\s+(\d+)\s+pattern\s+(\w+)")
_SUMMARY = re.compile(r"elapsed:\s*([\d.]+)\s+ops:\s*(\d+)\s+ops/sec:\s*([\d.]+)\s+"
                      r"bytes/sec:\s*([\d.]+)\s*([KMGT]?i?B)/s")
_COMMAND = re.compile(r"--io-(type|size|threads|total|pattern)[ =](\S+)")


@tool_parser("rbd bench")
def parse(text: str, source: str = "rbd bench output") -> list[Measurement]:
    """Each run's summary line, with its parameters from the ``bench type …`` header
    (rbd 16) or, failing that, from an ``rbd bench`` command line in the text."""
    out: list[Measurement] = []
    header: dict[str, Any] = {}
    command: dict[str, str] = {}
    for line in text.splitlines():
        h = _HEADER.search(line)
        if h:
            header = {"io_type": h.group(1), "io_size": int(h.group(2)), "io_threads": int(h.group(3)),
                      "io_total": int(h.group(4)),
                      "io_pattern": "rand" if h.group(5).startswith("rand") else "seq"}
            continue
        if "rbd bench" in line:
            command = dict(_COMMAND.findall(line))
        s = _SUMMARY.search(line)
        if not s:
            continue
        params = header or _from_command(command)
        ops_per_sec, ops = float(s.group(3)), int(s.group(2))
        if "io_size" not in params and "io_total" in params and ops and params["io_total"] % ops == 0:
            params["io_size"] = params["io_total"] // ops  # every op is one io_size
        if "io_size" in params:
            throughput = ops_per_sec * params["io_size"]
        else:  # no header: rbd's own rounded figure is all there is
            throughput = float(s.group(4)) * _unit(s.group(5))
        test = params.get("io_type", "write")
        out.append(Measurement("rbd-bench", test, "iops", ops_per_sec, "op/s", params))
        out.append(Measurement("rbd-bench", test, "throughput", throughput, "B/s", params))
        # rbd bench prints whole seconds; kept as printed
        out.append(Measurement("rbd-bench", test, "elapsed", float(s.group(1)), "s", params))
        header = {}
    if not out:
        raise BadInput(f"{source} holds no rbd bench summary ('elapsed: … ops/sec: …')",
                       hint="pass the full text rbd bench printed")
    return out


def _from_command(command: dict[str, str]) -> dict[str, Any]:
    params: dict[str, Any] = {"io_type": command.get("type", "write"),
                              "io_pattern": "rand" if command.get("pattern", "seq").startswith("rand") else "seq"}
    for key in ("size", "total"):
        if key in command:
            params[f"io_{key}"] = parse_size(command[key])
    if "threads" in command:
        params["io_threads"] = int(command["threads"])
    return params


def _unit(unit: str) -> float:
    return float(1024 ** " KMGT".index(unit[0]) if unit[0] in "KMGT" else 1)


class RbdBench(Workload):
    name = "rbd-bench"
    version_argv = ("rbd", "--version")
    tools = (("rbd", "ceph-common"),)
    tool = "rbd-bench"
    parser = staticmethod(parse)
    accepts = frozenset({"rbd"})
    Options = RbdBenchOptions
    options: RbdBenchOptions
    tables = (TableSpec("rbd bench", (Column("iops", "IOPS"), Column("throughput", "rate")), "throughput",
                        ("io type", "pattern, size"),
                        lambda m: (m.test, f"{m.params.get('io_pattern')} {size(m.params.get('io_size') or 0)}"
                                           f" × {m.params.get('io_threads')} threads")),)

    @classmethod
    def defaults(cls, scale: str) -> dict[str, Any]:
        return {"io_total": 5 << 30 if scale == "report" else 256 << 20}

    def cells(self) -> list[dict[str, Any]]:
        o = self.options
        return [{"io_type": t, "io_size": s, "io_pattern": p, "io_threads": o.io_threads,
                 "io_total": o.io_total}
                for t in o.io_types for s in o.io_sizes for p in o.io_patterns]

    def run(self, target: Target, cell: dict[str, Any], scratch: Path,
            raw_dir: Path) -> Iterator[Measurement]:
        target.host.require("rbd", "ceph-common")
        ceph = target.reach(CephAccess)
        base = ["rbd", *ceph.args, "bench", f"{ceph.pool}/{ceph.image}"]
        size = ceph.image_size or int(cell["io_total"])
        # the mark lives on the attachment: a later repeat attaches a new, empty image
        if cell["io_type"] == "read" and target.filled_bytes < size:
            result = target.host.run_tool([*base, "--io-type", "write", "--io-size", str(4 << 20),
                                    "--io-threads", "16", "--io-total", str(size),
                                    "--io-pattern", "seq"],
                                   deadline=self.options.deadline_s, output=raw_dir / "rbd-bench-fill.txt")
            if not result.ok:
                raise result.failure(what="could not fill the image before reading: ")
            target.filled_bytes = size
        argv = [*base, "--io-type", cell["io_type"], "--io-size", str(cell["io_size"]),
                "--io-threads", str(cell["io_threads"]), "--io-total", str(cell["io_total"]),
                "--io-pattern", cell["io_pattern"]]
        out = raw_dir / f"rbd-bench-{cell['io_type']}-{cell['io_pattern']}-{cell['io_size']}.txt"
        result = target.host.run_tool(argv, deadline=self.options.deadline_s, output=out)
        if not result.ok:
            raise result.failure(hint=f"output kept in {out}")
        for m in parse(result.output, source=str(out)):
            yield Measurement(m.workload, m.test, m.metric, m.value, m.unit, m.params,
                              target.backend, target.variant)
