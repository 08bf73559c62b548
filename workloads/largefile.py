"""Workload ``largefile``: copy one large file into the mount and back out.

The 2014 report timed ``cp`` of ~210 MB to 4 GB files. Here the source is a file of
random bytes (no two 4 KiB blocks equal) on the client host's local disk, held in the page
cache so the local read is not what is measured; the write into the mount ends with fsync
(counted). The read back must meet no cache of the writer's: with two or more client
hosts another one reads it (IOR's ``-C``; a container cannot drop its page cache), with
one the page cache is dropped and the FUSE client remounted, since its own cache survives
``drop_caches``. The copy back out is compared byte for byte with the source's digest.
Each copy's records say when it ran and what it moved (``started``, ``ended``,
``bytes``). The copies run in ``workloads.engines`` on the client's host.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import Field

from harness.api.contracts import Bytes, Options, Workload
from harness.api.records import Measurement
from harness.api.tables import Column, TableSpec
from harness.api.target import Target, Written
from harness.errors import DfsbenchError
from harness.system.hosts import Host
from harness.system.names import host_part, named_path
from harness.units import size
from workloads import ENGINES

CHUNK = 1 << 20


class LargeFileOptions(Options):
    sizes: list[Bytes] = Field(description="file sizes (accepts 256MiB, 1GiB)")
    block_size: Bytes = Field(CHUNK, description="copy buffer size, like cp's")
    verify: bool = Field(True, description="check the copy read back against the source")
    deadline_s: float = Field(3600, gt=0, description="seconds one copy may take; past it the "
                              "copy is killed and the cell recorded hung")




def _label(m: Measurement) -> tuple[str, str]:
    # a reference run keeps its source's own row label ("2.5G")
    return m.test, str(m.params.get("label") or size(m.params.get("file_size") or 0))


def _order(m: Measurement) -> int:
    """Writes, then reads (each by its file's size: harness.api.records.cell_order)."""
    return 0 if m.test == "write" else 1


class LargeFile(Workload):
    name = "largefile"
    Options = LargeFileOptions
    options: LargeFileOptions
    times_phases = True
    ranks = True
    tools = (("python3", "python3"),)
    suites = {"report": 1}
    tables = (TableSpec("Large files: copy one file into the mount (write) and back out (read)",
                        (Column("elapsed", "time"), Column("throughput", "rate")), "elapsed",
                        ("mode", "file size"), _label, _order, chart="throughput"),)

    @classmethod
    def reference(cls, rows: list[dict[str, str]], run_id: str) -> Iterator[Measurement]:
        """Rows of a timed ``cp``: test, file size (bytes, and what was really copied where
        it differs), the source's label, seconds; the caches were not dropped."""
        for row in rows:
            size, seconds = int(row["file_size"]), float(row["seconds"])
            params: dict[str, Any] = {"file_size": size, "label": row["label"], "file": row["file"],
                                      "cache": "not dropped (time cp)"}
            moved = size
            if row.get("actual_file_size"):
                params["actual_file_size"] = moved = int(row["actual_file_size"])
            for metric, value, unit in (("elapsed", seconds, "s"), ("throughput", moved / seconds, "B/s")):
                yield Measurement("largefile", row["test"], metric, value, unit, params,
                                  row["backend"], row["variant"], run_id)

    @classmethod
    def defaults(cls, scale: str) -> dict[str, Any]:
        if scale == "report":
            return {"sizes": [210 << 20, 1 << 30, 2560 << 20, 4 << 30]}
        return {"sizes": [64 << 20, 256 << 20]}

    def cells(self) -> list[dict[str, Any]]:
        return [{"file_size": s} for s in self.options.sizes]

    def writes(self, cell: dict[str, Any]) -> int:
        return int(cell["file_size"])

    def bound(self, cell: dict[str, Any]) -> tuple[str, float] | None:
        return "deadline_s", self.options.deadline_s

    def verification(self) -> str:
        return "blake2b digest of the copy read back" if self.options.verify else ""

    def written(self, target: Target, record: Measurement, path: Path, digest: str, raw_dir: Path) -> Written:
        """The file a copy wrote, for the check after a fault: another client reads it
        whole and compares its digest with the source's."""
        writer = target.host

        def check(view: Target) -> bool:
            got = view.host.engine(ENGINES, "digest", {"path": str(path), "bs": self.options.block_size},
                                   deadline=self.options.deadline_s,
                                   output=named_path(raw_dir, f"largefile-check-{host_part(view.host.label)}.json"))
            return bool(got["digest"] == digest)

        return Written(f"{path.name} ({size(int(record.params['bytes']))}, written on {writer.label})", writer,
                       float(record.params["started"]), float(record.params["ended"]), check,
                       lambda: writer.remove(path))

    def run(self, target: Target, cell: dict[str, Any], scratch: Path,
            raw_dir: Path) -> Iterator[Measurement]:
        size, bs = cell["file_size"], self.options.block_size
        host, deadline = target.host, self.options.deadline_s
        source = scratch / f"largefile-{size}.src"

        def remote(writer: Host) -> Path:  # (one file per client, found by the one that reads it)
            return target.directory / target.file_of("dfsbench-largefile", writer)

        params = {"file_size": size, "block_size": bs}
        raw: dict[str, Any] = {"file_size": size, "block_size": bs, "host": host.name}
        step = raw_dir / f"largefile-{size}"

        def engine(on: Host, name: str, **args: Any) -> dict[str, Any]:
            return on.engine(ENGINES, name, args, deadline=deadline, output=step.with_suffix(f".{name}.json"))

        made: list[tuple[Host, Path]] = []  # removed at the end, by the host that has it
        try:
            # (the source in the page cache before the clock starts: the fault's too)
            digest = engine(host, "source", path=str(source), size=size)["digest"]
            made.append((host, remote(host)))
            target.begin("write")
            got = engine(host, "copy", src=str(source), dst=str(remote(host)), bs=bs, fsync=True)
            raw["write"] = {**got, "cache": "source in page cache; fsync counted"}
            target.post("digest", digest)  # (for the client that reads this one's file)
            written = list(_pair("write", got, target, params))
            yield from written
            if self.options.verify and target.keep(self.written(target, written[0], remote(host), digest, raw_dir)):
                made.remove((host, remote(host)))  # (removed after the check that follows the fault)
            reader, writer, cache = target.reader()
            back = reader.scratch() / (target.file_of("largefile", reader.host) + ".back")
            made.append((reader.host, back))
            reader.begin("read")
            got = engine(reader.host, "copy", src=str(remote(writer)), dst=str(back), bs=bs, fsync=False,
                         digest=self.options.verify)
            raw["read"] = {**got, "cache": cache, "host": reader.host.name, "of": writer.name}
            if self.options.verify:
                wrote = target.posted("digest", writer, digest)
                raw["read"]["verified"] = got["digest"] == wrote
                if got["digest"] != wrote:
                    raise DfsbenchError(f"the file read back from {target.backend} on {reader.host.name} differs "
                                        f"from what {writer.name} wrote ({size} bytes)")
            read_params = {**params, "cache": cache}
            if reader.host.label != host.label:  # (one client wrote, the next read)
                read_params["read_on"] = reader.host.label
            # (no-cache-drop is decided from 'cache' by harness.report.limits)
            yield from _pair("read", got, reader, read_params)
            target.settle("read back")  # (nobody reads this client's file any more)
        except BaseException:
            _remove(made, quiet=True)  # (the cell's own error is the one to report)
            raise
        finally:
            (raw_dir / f"largefile-{size}.json").write_text(json.dumps(
                {k: ({kk: vv for kk, vv in v.items() if kk != "progress"} if isinstance(v, dict) else v)
                 for k, v in raw.items()}, indent=1))
        _remove(made)


def _remove(made: list[tuple[Host, Path]], quiet: bool = False) -> None:
    """Remove what a cell made, each by the host that has it; what cannot be removed is an
    error (the teardown tries again), unless ``quiet``."""
    problems = []
    for on, path in made:
        try:
            on.remove(path)
        except DfsbenchError as exc:
            problems.append(exc.message)
    if problems and not quiet:
        raise DfsbenchError("; ".join(problems))


def _pair(test: str, got: dict[str, Any], target: Target, params: dict[str, Any]) -> Iterator[Measurement]:
    """Elapsed and throughput of one copy, with when it ran and what it moved."""
    timing, progress = target.timing(got["started"], got["ended"], got.get("progress", ()))
    size, elapsed = got["bytes"], got["elapsed"]
    p = {**params, **timing, "bytes": size}
    yield Measurement("largefile", test, "elapsed", elapsed, "s", p, target.backend, target.variant)
    yield Measurement("largefile", test, "throughput", size / elapsed, "B/s", p, target.backend,
                      target.variant, progress=progress)
