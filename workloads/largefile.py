"""Workload ``largefile``: copy one large file into the mount and back out.

The 2014 report timed ``cp`` of ~210 MB to 4 GB files. Here the source is a file of
random bytes on the local disk, held in the page cache so the local read is not what is
measured; the write into the mount ends with fsync (counted), and before the read back
the page cache is dropped and the FUSE client remounted, since its own cache survives
``drop_caches``. The copy back out is compared byte for byte with the source's digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import Field

from harness.contracts import Bytes, Column, Options, TableSpec, Target, Workload
from harness import proc
from harness.errors import DfsbenchError
from harness.records import Measurement
from harness.units import size

CHUNK = 1 << 20
DEDUP_BLOCK = 4096


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
    tables = (TableSpec("Large files: copy one file into the mount (write) and back out (read)",
                        (Column("elapsed", "time"), Column("throughput", "rate")), "elapsed",
                        ("mode", "file size"), _label, _order, chart="throughput"),)

    @classmethod
    def defaults(cls, scale: str) -> dict[str, Any]:
        if scale == "report":
            return {"sizes": [210 << 20, 1 << 30, 2560 << 20, 4 << 30]}
        return {"sizes": [64 << 20, 256 << 20]}

    def cells(self) -> list[dict[str, Any]]:
        return [{"file_size": s} for s in self.options.sizes]

    def run(self, target: Target, cell: dict[str, Any], scratch: Path,
            raw_dir: Path) -> Iterator[Measurement]:
        size, bs = cell["file_size"], self.options.block_size
        tag = uuid.uuid4().hex[:8]
        source = scratch / f"largefile-{size}.src"
        digest = make_source(source, size)
        remote = target.directory / f"dfsbench-largefile-{tag}"
        back = scratch / f"largefile-{tag}.back"
        params = {"file_size": size, "block_size": bs}
        raw: dict[str, Any] = {"file_size": size, "block_size": bs}
        try:
            warm(source, bs)
            deadline = self.options.deadline_s
            elapsed = proc.call_with_deadline(copy, source, remote, bs, True, deadline=deadline,
                                              what=f"largefile write of {size} bytes")
            raw["write"] = {"elapsed": elapsed, "cache": "source in page cache; fsync counted"}
            yield from _pair("write", elapsed, size, params, target, ())
            cache = target.drop_caches()
            flags: tuple[str, ...] = ()  # no-cache-drop is decided from 'cache' by harness.limits
            elapsed = proc.call_with_deadline(copy, remote, back, bs, False, deadline=deadline,
                                              what=f"largefile read of {size} bytes")
            raw["read"] = {"elapsed": elapsed, "cache": cache}
            if self.options.verify:
                got = file_digest(back, bs)
                raw["read"]["verified"] = got == digest
                if got != digest:
                    raise DfsbenchError(f"the file read back from {target.backend} differs from "
                                        f"what was written ({size} bytes)")
            yield from _pair("read", elapsed, size, {**params, "cache": cache}, target, flags)
        finally:
            (raw_dir / f"largefile-{size}.json").write_text(json.dumps(raw, indent=1))
            for path in (remote, back):
                path.unlink(missing_ok=True)


def _pair(test: str, elapsed: float, size: int, params: dict[str, Any], target: Target,
          flags: tuple[str, ...]) -> Iterator[Measurement]:
    yield Measurement("largefile", test, "elapsed", elapsed, "s", params, target.backend,
                      target.variant, flags=flags)
    yield Measurement("largefile", test, "throughput", size / elapsed, "B/s", params,
                      target.backend, target.variant, flags=flags)


def make_source(path: Path, size: int) -> str:
    """Random (incompressible) bytes; reused across cells of the same size within a run."""
    digest_file = path.with_suffix(".blake2b")
    if path.exists() and digest_file.exists() and path.stat().st_size == size:
        return digest_file.read_text()
    h = hashlib.blake2b()
    chunk = bytearray(os.urandom(CHUNK))
    block_no = 0
    with open(path, "wb") as f:
        left = size
        while left:
            # every 4 KiB block starts with its own number, so no two blocks of the file
            # are equal (nothing for block-level dedup or compression to find)
            for offset in range(0, CHUNK, DEDUP_BLOCK):
                struct.pack_into("<Q", chunk, offset, block_no)
                block_no += 1
            piece = memoryview(chunk)[:min(CHUNK, left)]
            f.write(piece)
            h.update(piece)
            left -= len(piece)
    digest_file.write_text(h.hexdigest())
    return h.hexdigest()


def warm(path: Path, bs: int) -> None:
    with open(path, "rb", buffering=0) as f:
        while f.read(bs * 8):
            pass


def copy(src: Path, dst: Path, bs: int, fsync: bool) -> float:
    buf = bytearray(bs)
    view = memoryview(buf)
    start = time.perf_counter()
    with open(src, "rb", buffering=0) as fin, open(dst, "wb", buffering=0) as fout:
        while n := fin.readinto(buf):
            done = 0
            while done < n:
                done += fout.write(view[done:n])
        if fsync:
            os.fsync(fout.fileno())
    return time.perf_counter() - start


def file_digest(path: Path, bs: int) -> str:
    h = hashlib.blake2b()
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(bs * 8):
            h.update(chunk)
    return h.hexdigest()
