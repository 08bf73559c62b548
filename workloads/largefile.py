"""Workload ``largefile``: copy one large file into the mount and back out.

The 2014 report timed ``cp`` of ~210 MB to 4 GB files. Here the source is a file of
random bytes (no two 4 KiB blocks equal) on the client host's local disk, held in the page cache so the local read is not what is
measured; the write into the mount ends with fsync (counted), and before the read back
the page cache is dropped and the FUSE client remounted, since its own cache survives
``drop_caches``. The copy back out is compared byte for byte with the source's digest.
The copies run in ``workloads.engines`` on the client's host.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import Field

from harness.api.contracts import Bytes, Options, Workload
from harness.api.records import Measurement
from harness.api.tables import Column, TableSpec
from harness.api.target import Target
from harness.errors import DfsbenchError
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


def _order(m: Measurement) -> tuple[int, int]:
    return (0 if m.test == "write" else 1, -(m.params.get("file_size") or 0))


class LargeFile(Workload):
    name = "largefile"
    Options = LargeFileOptions
    options: LargeFileOptions
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

    def verification(self) -> str:
        return "blake2b digest of the copy read back" if self.options.verify else ""

    def run(self, target: Target, cell: dict[str, Any], scratch: Path,
            raw_dir: Path) -> Iterator[Measurement]:
        size, bs = cell["file_size"], self.options.block_size
        host, deadline = target.host, self.options.deadline_s
        tag = uuid.uuid4().hex[:8]
        source = scratch / f"largefile-{size}.src"
        remote = target.directory / f"dfsbench-largefile-{tag}"
        back = scratch / f"largefile-{tag}.back"
        params = {"file_size": size, "block_size": bs}
        raw: dict[str, Any] = {"file_size": size, "block_size": bs, "host": host.name}
        step = raw_dir / f"largefile-{size}"

        def engine(name: str, **args: Any) -> dict[str, Any]:
            return host.engine(ENGINES, name, args, deadline=deadline, output=step.with_suffix(f".{name}.json"))

        with host.removing(remote, back):
            try:
                digest = engine("source", path=str(source), size=size)["digest"]
                elapsed = engine("copy", src=str(source), dst=str(remote), bs=bs, fsync=True, warm=True)["elapsed"]
                raw["write"] = {"elapsed": elapsed, "cache": "source in page cache; fsync counted"}
                yield from _pair("write", elapsed, size, params, target, ())
                cache = target.drop_caches()
                flags: tuple[str, ...] = ()  # no-cache-drop is decided from 'cache' by harness.report.limits
                got = engine("copy", src=str(remote), dst=str(back), bs=bs, fsync=False,
                             digest=self.options.verify)
                elapsed = got["elapsed"]
                raw["read"] = {"elapsed": elapsed, "cache": cache}
                if self.options.verify:
                    raw["read"]["verified"] = got["digest"] == digest
                    if got["digest"] != digest:
                        raise DfsbenchError(f"the file read back from {target.backend} differs from "
                                            f"what was written ({size} bytes)")
                yield from _pair("read", elapsed, size, {**params, "cache": cache}, target, flags)
            finally:
                (raw_dir / f"largefile-{size}.json").write_text(json.dumps(raw, indent=1))


def _pair(test: str, elapsed: float, size: int, params: dict[str, Any], target: Target,
          flags: tuple[str, ...]) -> Iterator[Measurement]:
    yield Measurement("largefile", test, "elapsed", elapsed, "s", params, target.backend,
                      target.variant, flags=flags)
    yield Measurement("largefile", test, "throughput", size / elapsed, "B/s", params,
                      target.backend, target.variant, flags=flags)
