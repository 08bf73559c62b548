"""Workload ``rbd-bench``: ``rbd bench`` on an image (seed 000 §2.3):
``--io-type read|write --io-size --io-threads --io-total --io-pattern seq|rand``.

An RBD image reads unwritten ranges as zeros without touching a disk, so before the
first read the whole image is written once (sequential 4 MiB writes, not measured).
Throughput is ops/s × io_size: rbd bench rounds its own bytes/sec for display.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PositiveInt

from harness.api.contracts import Bytes, Options, Workload
from harness.api.parsing import tool_parser
from harness.api.records import Measurement
from harness.api.tables import Column, TableSpec
from harness.api.target import CephAccess, Target
from harness.errors import BadInput
from harness.units import parse_size, size


class RbdBenchOptions(Options):
    io_types: list[Literal["write", "read"]] = Field(["write", "read"], description="rbd bench's --io-type values, a cell each")
    io_sizes: list[Bytes] = Field([4096, 4 << 20], description="--io-size values (accepts 4KiB)")
    io_threads: PositiveInt = Field(16, le=1024, description="--io-threads: I/Os in flight")
    io_total: Bytes = Field(description="--io-total per cell (accepts 256MiB, 5GiB)")
    io_patterns: list[Literal["seq", "rand"]] = Field(["seq", "rand"], description="--io-pattern values, a cell each")
    deadline_s: float = Field(1800, gt=0, description="seconds one cell may take; past it rbd bench is killed and the cell recorded hung")




# What rbd bench prints (src/tools/rbd/action/Bench.cc):
#   bench  type write io_size 4096 io_threads 16 bytes 67108864 pattern random
#   bench  type readwrite read:write=70:30 io_size 4096 …                       (--io-type rw)
#   elapsed: 4   ops: 16384   ops/sec: 3663.68   bytes/sec: 14 MiB/s           (newer: cout, byte_u_t;
#                                                                               rbd 16 as captured)
#   elapsed:     4  ops:    16384  ops/sec:  3663.68  bytes/sec: 15006433.28   (Nautilus and before:
#                                                                               printf, bytes/sec in B/s)
#   read_ops: 11469   read_ops/sec: 2564.62   read_bytes/sec: 10 MiB/s          (readwrite only, then
#   write_ops: 4915   write_ops/sec: 1099.06   write_bytes/sec: 4.3 MiB/s       the same for writes)
# 'elapsed' is the whole seconds ((int)elapsed); ops/sec and bytes/sec come from the exact
# time, so they stand where elapsed prints 0. With no op done they are nan (0/0) or 0.
_HEADER = re.compile(r"bench\s+type\s+(\w+)(?:\s+read:write=(\d+):(\d+))?\s+io_size\s+(\d+)\s+io_threads\s+(\d+)\s+"
                     r"bytes\s+(\d+)\s+pattern\s+(\w+)")
_NUMBER = r"(-?nan|-?inf|\d+(?:\.\d*)?(?:e[-+]?\d+)?)"
_UNIT = r"(?:\s*([KMGTPE]?i?B)/s)?"
_SUMMARY = re.compile(rf"elapsed:\s*([\d.]+)\s+ops:\s*(\d+)\s+ops/sec:\s*{_NUMBER}\s+bytes/sec:\s*{_NUMBER}{_UNIT}")
_PART = re.compile(rf"\b(read|write)_ops:\s*(\d+)\s+(?:read|write)_ops/sec:\s*{_NUMBER}\s+"
                   rf"(?:read|write)_bytes/sec:\s*{_NUMBER}{_UNIT}")
_COMMAND = re.compile(r"--(io-type|io-size|io-threads|io-total|io-pattern|rw-mix-read)[ =](\S+)")
_IO_TYPES = {"read": "read", "write": "write", "readwrite": "readwrite", "rw": "readwrite"}


@tool_parser("rbd bench")
def parse(text: str, source: str = "rbd bench output") -> list[Measurement]:
    """Each run's summary line, with its parameters from the ``bench type …`` header
    (Luminous' rbd printed it already) or, failing that, from an ``rbd bench`` command line in the text; a run
    that says neither is io_type ``unknown``, never a guess. A readwrite run is labelled
    readwrite (its totals, and the read and write parts with ``direction``), never write
    or read. A run with no operation done, or a rate that is not a number, is one record
    with no value, flagged failed."""
    runs: list[tuple[dict[str, Any], re.Match[str], dict[str, re.Match[str]]]] = []
    header: dict[str, Any] = {}
    command: dict[str, str] = {}
    for line in text.splitlines():
        h = _HEADER.search(line)
        if h:
            header = {"io_type": _IO_TYPES.get(h.group(1), h.group(1)), "io_size": int(h.group(4)),
                      "io_threads": int(h.group(5)), "io_total": int(h.group(6)),
                      "io_pattern": "rand" if h.group(7).startswith("rand") else "seq"}
            if h.group(2):
                header["rw_mix_read"] = int(h.group(2))
            continue
        if "rbd bench" in line:
            command = dict(_COMMAND.findall(line))
            if "bench-write" in line:
                command.setdefault("io-type", "write")
        part = _PART.search(line)
        if part and runs and part.group(1) not in runs[-1][2]:
            runs[-1][2][part.group(1)] = part
            continue
        s = _SUMMARY.search(line)
        if s:
            runs.append((dict(header) or _from_command(command), s, {}))
            header = {}
    if not runs:
        raise BadInput(f"{source} holds no rbd bench summary ('elapsed: … ops/sec: …')",
                       hint="pass the full text rbd bench printed")
    out: list[Measurement] = []
    for params, s, parts in runs:
        if parts:  # (only a readwrite run prints read_ops and write_ops)
            if params.get("io_type", "readwrite") != "readwrite":
                raise BadInput(f"{source}: an rbd bench run of io_type {params['io_type']} with read_ops/"
                               "write_ops lines, which only readwrite prints")
            params["io_type"] = "readwrite"
        test = params.get("io_type", "unknown")
        ops, ops_per_sec, elapsed = int(s.group(2)), float(s.group(3)), float(s.group(1))
        if not ops or not math.isfinite(ops_per_sec) or ops_per_sec <= 0:
            error = (f"rbd bench {test}: no operation completed (ops: {ops})" if not ops else
                     f"rbd bench {test}: ops/sec {s.group(3)} over elapsed {s.group(1)} s is no rate")
            out.append(Measurement("rbd-bench", test, "throughput", None, "B/s", {**params, "error": error},
                                   flags=("failed",)))
            continue
        if "io_size" not in params and "io_total" in params and params["io_total"] % ops == 0:
            params["io_size"] = params["io_total"] // ops  # every op is one io_size
        out += _run_records(test, params, ops_per_sec, s.group(4), s.group(5), source)
        if elapsed == 0:  # (whole seconds: under one; rbd's rate is from its exact time)
            out.append(Measurement("rbd-bench", test, "elapsed", ops / ops_per_sec, "s",
                                   {**params, "note": "from ops / ops/sec: rbd prints whole seconds (0)"}))
        else:  # rbd bench prints whole seconds; kept as printed
            out.append(Measurement("rbd-bench", test, "elapsed", elapsed, "s", params))
        for direction, part in sorted(parts.items()):
            if int(part.group(2)) and math.isfinite(float(part.group(3))) and float(part.group(3)) > 0:
                out += _run_records(test, {**params, "direction": direction}, float(part.group(3)),
                                    part.group(4), part.group(5), source)
    return out


_SECOND = re.compile(r"^\s*(\d+)\s+(\d+)\s+[-\d.e+]+\s+[-\d.e+]+(?:\s*[KMGTPE]?i?B/s)?\s*$")


def progress_lines(text: str) -> list[tuple[float, float]]:
    """What one rbd bench run had done at each of its per-second lines: (seconds since its
    start, operations so far). Its OPS/SEC column is not the rate of that second (it
    averages over the seconds before, as the lines' own counts show), so a rate per second
    comes from these counts."""
    return [(float(m.group(1)), float(m.group(2))) for m in map(_SECOND.match, text.splitlines()) if m]


def on_clock(text: str, records: list[Measurement], returned: float) -> list[Measurement]:
    """The rate records of one run with their progress on this machine's clock: rbd bench
    counts its seconds from its start, put at the moment the tool returned less its exact
    time (its operations over its ops/sec; an error of the tool's exit, a fraction of a
    second)."""
    lines = progress_lines(text)
    whole = [m for m in records if m.unit == "op/s" and m.value and "direction" not in m.params]
    if not lines or len(whole) != 1 or not isinstance(whole[0].params.get("io_size"), int):
        return records
    ops = lines[-1][1]
    found = _SUMMARY.search(text)
    if found is None or not int(found.group(2)):
        return records
    start = returned - int(found.group(2)) / float(whole[0].value or 1)
    out = []
    for m in records:
        per = {"B/s": float(m.params["io_size"]) if isinstance(m.params.get("io_size"), int) else 0.0,
               "op/s": 1.0}.get(m.unit)
        if per and m.value is not None and "direction" not in m.params and ops:
            m = replace(m, progress=((start, 0.0), *((start + t, n * per) for t, n in lines)))
        out.append(m)
    return out


def _run_records(test: str, params: dict[str, Any], ops_per_sec: float, rate: str, unit: str | None,
                 source: str) -> list[Measurement]:
    """iops and throughput: ops/s × io_size where the size is known (rbd rounds its own
    bytes/sec for display from Octopus on), else rbd's bytes/sec as printed."""
    if "io_size" in params:
        throughput = ops_per_sec * params["io_size"]
    elif math.isfinite(float(rate)):  # no header: rbd's own (rounded) figure is all there is
        throughput = float(rate) * _unit(unit)
    else:
        raise BadInput(f"{source}: rbd bench printed bytes/sec {rate}, and no io_size to reckon it from")
    return [Measurement("rbd-bench", test, "iops", ops_per_sec, "op/s", params),
            Measurement("rbd-bench", test, "throughput", throughput, "B/s", params)]


def _from_command(command: dict[str, str]) -> dict[str, Any]:
    params: dict[str, Any] = {"io_pattern": "rand" if command.get("io-pattern", "seq").startswith("rand") else "seq"}
    if "io-type" in command:
        params["io_type"] = _IO_TYPES.get(command["io-type"], command["io-type"])
    for key in ("size", "total"):
        if f"io-{key}" in command:
            params[f"io_{key}"] = parse_size(command[f"io-{key}"])
    if "io-threads" in command:
        params["io_threads"] = int(command["io-threads"])
    if params.get("io_type") == "readwrite":  # (Bench.cc's default mix: 50)
        params["rw_mix_read"] = int(command.get("rw-mix-read", 50))
    return params


def _unit(unit: str | None) -> float:
    """rbd's byte_u_t units ('KiB', 'MiB' … powers of 1024); none (Nautilus' printf) is B."""
    if not unit or unit == "B":
        return 1.0
    return float((1024 if "i" in unit else 1000) ** " KMGTPE".index(unit[0]))


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
                                           f" × {m.params.get('io_threads')} threads"
                                           + (f", {m.params.get('direction') or 'read + write'}"
                                              if m.test == "readwrite" else ""))),)

    @classmethod
    def defaults(cls, scale: str) -> dict[str, Any]:
        return {"io_total": 5 << 30 if scale == "report" else 256 << 20}

    def cells(self) -> list[dict[str, Any]]:
        o = self.options
        return [{"io_type": t, "io_size": s, "io_pattern": p, "io_threads": o.io_threads,
                 "io_total": o.io_total}
                for t in o.io_types for s in o.io_sizes for p in o.io_patterns]

    def reaches(self, cell: dict[str, Any]) -> tuple[str, int] | None:
        # rbd bench keeps its offsets within the image (a sequential pattern starts over at its
        # end), and refuses an io_size larger than the image
        if int(cell["io_size"]) > int(cell["io_total"]):
            return "io_sizes", int(cell["io_size"])
        return "io_total", int(cell["io_total"])

    def bound(self, cell: dict[str, Any]) -> tuple[str, float] | None:
        return "deadline_s", self.options.deadline_s

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
        returned = time.time()
        if not result.ok:
            raise result.failure(hint=f"output kept in {out}")
        for m in on_clock(result.output, parse(result.output, source=str(out)), returned):  # (flags kept)
            yield replace(m, backend=target.backend, variant=target.variant)
