"""Workload ``rados-bench``: ``rados bench`` on a pool — write with ``--no-cleanup``, then
seq and rand reads of what was written, then cleanup (seed 000 §2.1, seed 001).

rados bench's "MB/sec" is MiB/s (it divides by 1048576); records carry B/s.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PositiveInt, field_validator

from harness.api.contracts import Bytes, Options, Workload
from harness.api.model import MAX_SECONDS
from harness.api.parsing import tool_parser
from harness.api.records import Measurement
from harness.api.tables import Column, TableSpec
from harness.api.target import CephAccess, Target
from harness.errors import BadInput
from harness.units import size

MIB = 1 << 20
MODES = ("write", "seq", "rand")


class RadosBenchOptions(Options):
    seconds: PositiveInt = Field(description="seconds per phase", le=MAX_SECONDS)
    block_size: Bytes = Field(4 << 20, description="-b (accepts 4MiB)")
    threads: PositiveInt = Field(16, le=1024, description="-t: operations in flight")
    modes: list[Literal["write", "seq", "rand"]] = Field(["write", "seq", "rand"], description="rados bench's modes, in this order (seq and rand read what write left)")


    @field_validator("modes")
    @classmethod
    def _modes(cls, v: list[str]) -> list[str]:
        if ("seq" in v or "rand" in v) and "write" not in v:
            raise ValueError("'seq' and 'rand' read what 'write' left behind: include 'write'")
        twice = sorted({m for m in v if v.count(m) > 1})
        if twice:
            raise ValueError(f"{', '.join(twice)} is given twice; each phase runs once per cell")
        return [m for m in MODES if m in v]


_FIELD = re.compile(r"^\s*(?:\d+\s+)?([A-Za-z][A-Za-z ()/]*?):\s+(-?nan|-?inf|[-\d.e+]+)\s*$")
_COMMAND = re.compile(r"bench\s+(?:-p\s+\S+\s+)?(\d+)\s+(write|seq|rand)\b")
# what each summary line becomes (as rados bench printed it; an IOPS it rounded to 0, from its counts)
_METRICS = (("Average IOPS", "iops", "op/s"), ("Average Latency(s)", "lat_mean", "s"),
            ("Max latency(s)", "lat_max", "s"), ("Min latency(s)", "lat_min", "s"))


@tool_parser("rados bench")
def parse(text: str, mode: str | None = None, source: str = "rados bench output") -> list[Measurement]:
    """The summary of each ``rados bench`` run in the text (several runs may follow one
    another, as in a pasted session). Write or read comes from the summary itself ('Total
    writes made' or 'Total reads made'); a ``mode`` or a command line in the text that says
    otherwise is refused. Which read (seq or rand, whose summaries are alike) comes from
    ``mode``, else from a command line in the text, else from the file name, else "read".
    A run in which no operation completed is one record with no value, flagged failed."""
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
        test = _phase(run, mode or found, "given" if mode else "in its command line", source)
        size = run.get("Write size") or run.get("Read size") or 0
        params = {"block_size": int(size), "object_size": int(run.get("Object size", size))}
        if "Bandwidth (MB/sec)" not in run:
            raise BadInput(f"{source}: a rados bench summary without 'Bandwidth (MB/sec)'")
        ops = run.get("Total writes made", run.get("Total reads made"))
        bandwidth, elapsed = run["Bandwidth (MB/sec)"], run["Total time run"]
        if ops == 0 or not math.isfinite(bandwidth) or bandwidth <= 0 or not elapsed > 0:
            # (then rados bench prints 0 B/s, latencies of 0 or nan, and a min latency of 9999 s)
            made = "Total writes made" if "Total writes made" in run else "Total reads made"
            error = (f"rados bench {test}: no operation completed ({made}: {ops:g})" if ops == 0 else
                     f"rados bench {test}: no rate measured (bandwidth {bandwidth:g} MB/s over {elapsed:g} s)")
            out.append(Measurement("rados-bench", test, "throughput", None, "B/s", {**params, "error": error},
                                   flags=("failed",)))
            continue
        out.append(Measurement("rados-bench", test, "throughput", bandwidth * MIB, "B/s", params))
        for key, metric, unit in _METRICS:
            figure = run.get(key)
            if figure is None or not math.isfinite(figure):
                continue
            said: dict[str, Any] = params
            if metric == "iops" and figure == 0 and ops:  # (printed as a whole number: a slow run's is 0)
                figure = ops / elapsed
                said = {**params, "note": "rados bench printed Average IOPS 0 (a whole number); this is "
                                          "its operations over its time run"}
            out.append(Measurement("rados-bench", test, metric, figure, unit, said))
        out.append(Measurement("rados-bench", test, "elapsed", elapsed, "s", params))
    return out


_SECOND = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+[-\d.e+]+\s+[-\d.e+]+\s+\S+\s+\S+\s*$")


def progress_lines(text: str) -> list[tuple[float, float]]:
    """What one rados bench run had finished at each of the per-second lines it prints:
    (seconds since its start, operations finished so far) — its ``cur MB/s`` is the
    difference of two of them, times the block size."""
    return [(float(m.group(1)), float(m.group(4))) for m in map(_SECOND.match, text.splitlines()) if m]


def on_clock(text: str, records: list[Measurement], returned: float) -> list[Measurement]:
    """The rate records of one run with their progress on this machine's clock: rados bench
    counts its seconds from its start, put at the moment the tool returned less its
    'Total time run' (an error of the tool's exit, a fraction of a second)."""
    lines = progress_lines(text)
    total = next((m.value for m in records if m.metric == "elapsed" and m.value), None)
    if not lines or total is None:
        return records
    start = returned - total
    made = re.search(r"Total (?:writes|reads) made:\s+(\d+)", text)
    if made is not None and total > lines[-1][0]:  # (what finished after its last line, by its end)
        lines.append((total, float(made.group(1))))
    out = []
    for m in records:
        per = {"B/s": float(m.params.get("block_size") or 0), "op/s": 1.0}.get(m.unit)
        if per and m.value is not None:
            m = replace(m, progress=tuple((start + t, n * per) for t, n in lines))
        out.append(m)
    return out


def _phase(run: dict[str, float], asked: str | None, how: str, source: str) -> str:
    """The phase of one run: write or read as its summary says, never as a file name says."""
    writes, reads = "Total writes made" in run, "Total reads made" in run
    if writes and reads:
        raise BadInput(f"{source}: a rados bench summary with both 'Total writes made' and 'Total reads made'")
    if writes or reads:
        said = "write" if writes else "read"
        if asked and (asked == "write") != writes:
            raise BadInput(f"{source}: the rados bench summary reports {said}s ('Total {said}s made'), "
                           f"but the mode {how} is {asked}")
        return "write" if writes else asked or _mode_from_name(source) or "read"
    if asked is None:
        raise BadInput(f"{source}: a rados bench summary that says neither 'Total writes made' nor "
                       "'Total reads made', and no mode is given", hint="pass the mode it ran in")
    return asked


def _mode_from_name(source: str) -> str | None:
    """seq or rand, as a file name says (only ever asked which read a read was)."""
    name = Path(source).name.lower()
    for mode in ("seq", "rand"):
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

    def lasts(self, cell: dict[str, Any]) -> tuple[str, float] | None:
        # (its cell is timed from its start: each mode runs 'seconds', reads less where the
        # objects written run out)
        return "seconds", float(self.options.seconds * len(self.options.modes))

    def bound(self, cell: dict[str, Any]) -> tuple[str, float] | None:
        return "seconds", self.deadline()

    def deadline(self) -> float:
        """How long each mode's run may take (reads stop when the written objects run out)."""
        return float(self.options.seconds * 3 + 120)

    def cells(self) -> list[dict[str, Any]]:
        o = self.options
        return [{"block_size": o.block_size, "threads": o.threads, "seconds": o.seconds}]

    def run(self, target: Target, cell: dict[str, Any], scratch: Path,
            raw_dir: Path) -> Iterator[Measurement]:
        target.host.require("rados", "ceph-common")
        ceph = target.reach(CephAccess)
        base = ["rados", *ceph.args, "-p", ceph.pool]
        o = self.options
        deadline = self.deadline()
        try:
            for mode in o.modes:
                argv = [*base, "bench", str(o.seconds), mode, "-t", str(o.threads)]
                if mode == "write":
                    argv += ["-b", str(o.block_size), "--no-cleanup"]
                out = raw_dir / f"rados-bench-{mode}.txt"
                result = target.host.run_tool(argv, deadline=deadline, output=out)
                returned = time.time()
                if not result.ok:
                    raise result.failure(hint=f"output kept in {out}")
                for m in on_clock(result.output, parse(result.output, mode=mode, source=str(out)),
                                  returned):  # (flags kept: a failed phase)
                    yield replace(m, params={**m.params, "threads": o.threads, "seconds": o.seconds},
                                  backend=target.backend, variant=target.variant)
        finally:
            target.host.run([*base, "cleanup"], check=False, timeout=600)
