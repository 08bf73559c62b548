"""Workload ``smallfile``: many small files created, listed with stat (``ls -l``), read back.

The 2014 report timed ``cp`` of 1024-10000 files of ~38 KiB into the mount, ``ls`` of the
directory and ``cp`` back out. This engine (``workloads.engines``, run on the client's host)
does the same operations with several worker processes (no GIL between them), each in its
own directory, all started together; it times every file operation, so it reports per-operation latency percentiles as well as
files/s and MiB/s. Listing and reading meet no cache of the writer's, as the report's
author rebooted the client: with two or more client hosts another one lists and reads
(IOR's ``-C``), remounting its own client between the two; with one, caches are dropped
and the FUSE client remounted before each.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, PositiveInt, field_validator

from harness.api.contracts import Bytes, Options, Workload
from harness.api.parsing import tool_parser
from harness.api.records import Measurement
from harness.api.tables import Column, TableSpec
from harness.api.target import OTHER_CLIENT, Target
from harness.errors import BadInput
from harness.system.hosts import Host
from harness.units import size
from workloads import ENGINES

# what the threads of a cell may hold of the client's memory together, one file each
HELD_MOST = 4 << 30
MAX_FILES = 100_000_000  # 10^8 files: far more than a benchmark makes, and than a file system lists in a day

OPERATIONS = ("create", "ls-l", "read")
# the engine a record came from (params.engine): this one, or an imported smallfile
# tool's; different engines are different cells, never pooled
ENGINE = "dfsbench"
TOOL_ENGINE = "smallfile"


class SmallFileOptions(Options):
    files: list[Annotated[int, Field(gt=0, le=MAX_FILES)]] = Field(
        description="file counts, each the total over all threads")
    file_size: Bytes = Field(description="bytes per file (accepts 40KiB)")
    threads: PositiveInt = Field(4, le=256, description="workers on each client, each with its share of the files")
    operations: list[str] = Field(list(OPERATIONS), description="of create, ls-l and read: the phases run, in that order (ls-l and read need create)")
    drop_caches: bool = Field(True, description="drop caches and remount before ls-l and read")
    deadline_s: float = Field(1800, gt=0, description="seconds one operation over all files may "
                              "take; past it the workers are killed and the cell recorded hung")


    @field_validator("operations")
    @classmethod
    def _ops(cls, v: list[str]) -> list[str]:
        bad = [op for op in v if op not in OPERATIONS]
        if bad:
            raise ValueError(f"unknown operation(s) {bad}; allowed: {', '.join(OPERATIONS)}")
        if ("ls-l" in v or "read" in v) and "create" not in v:
            raise ValueError("'ls-l' and 'read' need 'create' first")
        twice = sorted({op for op in v if v.count(op) > 1})
        if twice:
            raise ValueError(f"{', '.join(twice)} is given twice; each operation runs once per cell")
        return [op for op in OPERATIONS if op in v]


_MODE = {"create": "write", "ls-l": "list (ls -l)", "read": "read"}


def _label(m: Measurement) -> tuple[str, str]:
    p = m.params
    engine = "" if p.get("engine", ENGINE) == ENGINE else f" ({p.get('engine')})"
    return (_MODE.get(m.test, m.test),
            f"{p.get('files', 0):,} × {size(p.get('file_size') or 0)}{engine}")


def _order(m: Measurement) -> int:
    """The modes in the order they ran (each by its files: harness.api.records.cell_order)."""
    return list(_MODE).index(m.test) if m.test in _MODE else len(_MODE)


def measurements(op: str, result: dict[str, Any], cell: dict[str, Any], cache: str,
                 target: Target, extra: dict[str, Any] | None = None) -> Iterator[Measurement]:
    """The records of one operation over all files, as the engine on ``target``'s host
    timed it: with when it ran and what it moved (``started``, ``ended``; ``files`` is the
    cell's count, which it moved; ``bytes``)."""
    timing, by_files = target.timing(result["started"], result["ended"],
                                     [(t, f) for t, f, _ in result.get("progress", ())])
    by_bytes = tuple((t, float(b)) for (t, _), (_, _, b) in zip(by_files, result.get("progress", ())))
    params = {**cell, "engine": ENGINE, "cache": cache, **(extra or {}), **timing}
    flags: tuple[str, ...] = ()  # no-cache-drop is decided from 'cache' by harness.report.limits
    elapsed = result["elapsed"]
    lat = result["latencies"]

    def m(metric: str, value: float | None, unit: str, more: dict[str, Any] | None = None,
          progress: tuple[tuple[float, float], ...] = ()) -> Measurement:
        return Measurement("smallfile", op, metric, value, unit, {**params, **(more or {})}, target.backend,
                           target.variant, flags=flags, progress=progress)

    if not elapsed > 0:  # (a clock that did not move gives no rate: never an infinite one)
        flags = ("failed",)
        params["error"] = f"smallfile {op}: the engine timed {elapsed!r} s, which gives no rate"
        yield m("files_per_sec", None, "files/s")
        return
    yield m("elapsed", elapsed, "s")
    yield m("files_per_sec", result["files"] / elapsed, "files/s", progress=by_files)
    if op != "ls-l":
        yield m("throughput", result["bytes"] / elapsed, "B/s", {"bytes": result["bytes"]}, by_bytes)
    from harness.report.stats import percentile  # (where records are made: 'dfsbench check' needs none)

    yield m("lat_p50", percentile(lat, 50), "s")
    yield m("lat_p99", percentile(lat, 99), "s")


@tool_parser("smallfile")
def parse(text: str, source: str = "smallfile output") -> list[Measurement]:
    """Records from the smallfile tool's ``--output-json`` (its ``file_size`` is in KiB,
    ``files_per_thread`` and ``threads`` per host; ``MiBps`` is MiB/s). Its ``results``
    hold the totals over every host and thread, and either ``thread`` (one host) or
    ``host`` → name → ``thread`` (several): ``files`` is the cell's count over all of
    them, each host's counted once (``hosts`` says how many, where more than one). Older
    smallfile wrote ``in-host``/``in-thread`` and ``files-per-sec``; its ``in-host`` kept
    only the last host it met (it reset the dict at each new host), so only its totals
    and ``host_set`` are read."""
    try:
        doc = json.loads(text)
        p, r = doc["params"], doc["results"]
        op, threads = str(p["operation"]), int(p["threads"])
        file_size = int(p["file_size"]) * 1024
        files, elapsed = int(r["files"]), float(r["elapsed"])
        hosts = _hosts(p, r)
        per_host = {str(name): int(h["files"]) for name, h in (r.get("host") or {}).items()}
        per_thread = [int(t["files"]) for t in _threads(r)]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BadInput(f"{source} is not smallfile --output-json output ({type(exc).__name__}: {exc})",
                       hint="run smallfile_cli.py with --output-json FILE and pass that FILE") from None
    for what, counted in (("hosts'", per_host.values()), ("threads'", per_thread)):
        if counted and sum(counted) != files:  # (a total that counts some twice, or leaves some out)
            raise BadInput(f"{source}: the {what} files ({sum(counted)}) do not add up to smallfile's total "
                           f"files ({files})", hint="the output is corrupt, or not one smallfile wrote")
    flags: tuple[str, ...] = ()
    done = float(r.get("pctFilesDone", r.get("pct-files-done", 100)))
    if r.get("status") not in (None, "Success") or done < 100:
        flags = ("incomplete",)
    params: dict[str, Any] = {"files": int(p["files_per_thread"]) * threads * hosts, "file_size": file_size,
                              "threads": threads, "engine": TOOL_ENGINE}
    if hosts > 1:
        params["hosts"] = hosts
    if files < params["files"] or per_thread and len(per_thread) < threads * hosts:
        flags = ("incomplete",)  # (a host or thread that never answered: its files are not in the total)
    if not elapsed > 0:  # (smallfile computes no rate then, and reports 0 files/s)
        error = f"smallfile {op}: elapsed {elapsed:g} s, which gives no rate"
        return [Measurement("smallfile", op, metric, None, unit, {**params, "error": error}, flags=("failed",))
                for metric, unit in (("elapsed", "s"), ("files_per_sec", "files/s"))]
    rate = float(r["filesPerSec"] if "filesPerSec" in r else r["files-per-sec"])
    out = [Measurement("smallfile", op, "elapsed", elapsed, "s", params, flags=flags),
           Measurement("smallfile", op, "files_per_sec", rate, "files/s", params, flags=flags)]
    if "MiBps" in r and op not in ("ls-l", "stat", "delete", "rename", "mkdir", "rmdir"):
        out.append(Measurement("smallfile", op, "throughput", float(r["MiBps"]) * (1 << 20), "B/s",
                               params, flags=flags))
    return out


def _hosts(p: dict[str, Any], r: dict[str, Any]) -> int:
    """How many hosts the run asked for: smallfile's ``total_hosts`` (its ``host_set``'s
    length), or as many as reported, whichever is more."""
    named = [h for h in str(p.get("host_set") or "").split(",") if h.strip()]
    return max(int(p.get("total_hosts") or 1), len(named), len(r.get("host") or {}), 1)


def _threads(r: dict[str, Any]) -> list[dict[str, Any]]:
    """Every thread's entry, over every host (none from an older smallfile's in-host)."""
    if r.get("host"):
        return [t for h in r["host"].values() for t in (h.get("thread") or {}).values()]
    if r.get("in-host"):
        return []
    return list((r.get("thread") or r.get("in-thread") or {}).values())


class SmallFile(Workload):
    name = "smallfile"
    tool = "smallfile"
    parser = staticmethod(parse)
    Options = SmallFileOptions
    options: SmallFileOptions
    times_phases = True
    ranks = True
    tools = (("python3", "python3"),)
    suites = {"report": 2}
    tables = (TableSpec("Small files: time to write, list and read N files",
                        (Column("elapsed", "time"), Column("files_per_sec", "rate")), "elapsed",
                        ("mode", "files"), _label, _order, chart="files_per_sec", chart_log=True),)

    @classmethod
    def is_write(cls, record: Measurement) -> bool:
        return record.test == "create"

    @classmethod
    def reference(cls, rows: list[dict[str, str]], run_id: str) -> Iterator[Measurement]:
        """Rows of test, files, file size and seconds, one thread; the client was rebooted
        between systems."""
        for row in rows:
            files, seconds = int(row["files"]), float(row["seconds"])
            params = {"files": files, "file_size": int(row["file_size"]), "threads": 1,
                      "cache": "reboot", "note": "the client was rebooted between systems"}
            yield Measurement("smallfile", row["test"], "elapsed", seconds, "s", params,
                              row["backend"], row["variant"], run_id)
            yield Measurement("smallfile", row["test"], "files_per_sec", files / seconds, "files/s", params,
                              row["backend"], row["variant"], run_id)

    @classmethod
    def defaults(cls, scale: str) -> dict[str, Any]:
        if scale == "report":
            return {"files": [1024, 5000, 10000], "file_size": 40 * 1024, "threads": 4}
        return {"files": [256, 1024], "file_size": 40 * 1024, "threads": 4}

    def cells(self) -> list[dict[str, Any]]:
        o = self.options
        return [{"files": n, "file_size": o.file_size, "threads": min(o.threads, n)} for n in o.files]

    def writes(self, cell: dict[str, Any]) -> int:
        return int(cell["files"]) * int(cell["file_size"])

    def unrunnable(self, kind: str) -> tuple[str, str, str] | None:
        """Files its engine cannot hold: each of a cell's threads holds one file whole in
        memory (workloads.engines: the bytes it writes, os.urandom(file_size))."""
        threads = max(cell["threads"] for cell in self.cells())
        held = threads * self.options.file_size
        if held > HELD_MOST:
            return ("file_size", f"a file of {size(self.options.file_size)}, held whole in memory by each of {threads} "
                    f"threads at once, is {size(held)} of the client's memory (at most {size(HELD_MOST)}): small files "
                    "are written from one buffer each", f"give file_size at most {size(HELD_MOST // threads)} (a "
                    "large file is the largefile workload's, which copies it in blocks), or fewer threads")
        return None

    def bound(self, cell: dict[str, Any]) -> tuple[str, float] | None:
        return "deadline_s", self.options.deadline_s

    def run(self, target: Target, cell: dict[str, Any], scratch: Path,
            raw_dir: Path) -> Iterator[Measurement]:
        host = target.host

        def top(writer: Host) -> Path:  # (one directory per client, found by the one that reads it)
            return target.directory / target.file_of("dfsbench-smallfile", writer)

        host.mkdir(top(host))
        threads, files, size = cell["threads"], cell["files"], cell["file_size"]
        per_thread = [files // threads + (1 if t < files % threads else 0) for t in range(threads)]
        view, writer = target, host
        with host.removing(top(host)):
            for op in self.options.operations:
                cache = "none"
                if op != "create" and self.options.drop_caches:
                    if view is target and writer is host:  # the first operation that reads back
                        view, writer, cache = target.reader()
                    elif writer.label != view.host.label:  # (that client's own caches from the step before)
                        cache = f"sync+{OTHER_CLIENT}+" + view.drop_caches().removeprefix("sync+")
                    else:
                        cache = view.drop_caches()
                raw = raw_dir / f"smallfile-{files}-{op}.json"
                view.begin(op)
                result = view.host.engine(ENGINES, "smallfile", {
                    "op": op, "top": str(top(writer)), "per_thread": per_thread, "size": size,
                    "deadline": self.options.deadline_s}, deadline=self.options.deadline_s, output=raw)
                raw.write_text(json.dumps({**result, "cache": cache, "host": view.host.name, "of": writer.name},
                                          indent=1))
                extra = {"read_on": view.host.label} if view.host.label != host.label else {}
                yield from measurements(op, result, cell, cache, view, extra)
            target.settle("the last operation")  # (nobody reads this client's files any more)
