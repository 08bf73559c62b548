"""The in-process engines of the ``smallfile`` and ``largefile`` workloads, as a script
that runs on the client's host — this machine, or a client node of a lab, which has a
Python 3 but not dfsbench — so it imports nothing but the standard library.

    python3 engines.py NAME 'JSON ARGUMENTS'

prints the result as one JSON object. An error prints ``{"error": …}`` and exits 1; an
engine that passed its own deadline (its workers killed) exits 3 — the protocol of
``harness.system.hosts.Host.engine``, which runs it.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import struct
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

CHUNK = 1 << 20
DEDUP_BLOCK = 4096
HUNG = 3  # (Host.engine's ENGINE_HUNG: this script cannot import dfsbench)


class Deadline(Exception):
    """The engine passed its deadline; its workers were killed."""


# ------------------------------------------------------------------ smallfile

def smallfile(op: str, top: str, per_thread: list[int], size: int, deadline: float = 1800,
              ready: Callable[[], float | None] | None = None) -> dict[str, Any]:
    """One operation (create, ls-l, read) over every thread's files, the threads being
    worker processes (no GIL between them) started together at a barrier; returns
    timings and per-file latencies. Past ``deadline`` seconds (a hung FUSE client blocks
    every call) the workers are killed and :class:`Deadline` raised. ``ready``, where given
    (an MPI rank's wait for the other ranks), is called once every worker is set up and
    waits; they start when it returns, or at the moment (this host's clock) it returns."""
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(len(per_thread) + (ready is not None))
    at = ctx.Value("d", 0.0, lock=False)  # (when the workers start, if ready says: this host's clock)
    go = ctx.Event() if ready is not None else None  # (ready returned: the workers may start)
    pipes, workers = [], []
    for t, count in enumerate(per_thread):
        here, there = ctx.Pipe(duplex=False)
        # (with ready, the workers wait for every rank of the job: as long as the deadline)
        w = ctx.Process(target=_worker, args=(op, Path(top) / f"t{t:02d}", count, size, barrier, there,
                                              deadline if ready is not None else 60, at, go), daemon=True)
        w.start()
        there.close()
        pipes.append(here)
        workers.append(w)
    if ready is not None and go is not None:
        try:
            barrier.wait(timeout=deadline)  # (every worker set up and waiting)
        except threading.BrokenBarrierError:  # (a worker that failed: its error is in its result)
            pass
        at.value = ready() or 0.0
        go.set()
    results = []
    end = time.monotonic() + deadline
    try:
        for pipe, w in zip(pipes, workers):
            if not pipe.poll(max(0.0, end - time.monotonic())):
                raise Deadline(f"smallfile {op} in {top} passed its deadline of {deadline:.0f} s; its "
                               f"{len(workers)} workers were killed")
            try:
                results.append(pipe.recv())
            except EOFError:
                results.append({"error": f"worker exited with code {w.exitcode}"})
    finally:
        for w in workers:
            if w.is_alive():
                w.kill()
        for w in workers:
            w.join(timeout=5)
    errors = [r["error"] for r in results if "error" in r]
    if errors:
        raise RuntimeError(f"smallfile {op} failed in {top}: {errors[0]}")
    start = min(r["start"] for r in results)
    finish = max(r["end"] for r in results)
    return {"operation": op, "elapsed": finish - start, "files": sum(r["files"] for r in results),
            "bytes": sum(r["bytes"] for r in results), "latencies": [x for r in results for x in r["lat"]],
            "started": min(r["started"] for r in results), "ended": max(r["ended"] for r in results),
            "progress": merged([r["progress"] for r in results]),
            "threads": [{"files": r["files"], "elapsed": r["end"] - r["start"]} for r in results]}


def merged(series: list[list[list[float]]]) -> list[list[float]]:
    """Several workers' progress ([time, files, bytes] so far, at moments) as one: at every
    moment any of them noted, what all had done (each taken as linear between its notes)."""
    def at(points: list[list[float]], t: float) -> tuple[float, float]:
        if t < points[0][0]:
            return 0.0, 0.0
        for a, b in zip(points, points[1:]):
            if t <= b[0]:
                share = (t - a[0]) / (b[0] - a[0]) if b[0] > a[0] else 1.0
                return a[1] + (b[1] - a[1]) * share, a[2] + (b[2] - a[2]) * share
        return points[-1][1], points[-1][2]

    moments = sorted({p[0] for points in series for p in points})
    return [[t, *map(sum, zip(*(at(points, t) for points in series)))] for t in moments]


NOTE_EVERY = 0.25  # seconds between two notes of what a worker or a copy has done so far


def _worker(op: str, directory: Path, count: int, size: int, barrier: Any, out: Connection,
            wait_s: float = 60, at: Any = None, go: Any = None) -> None:
    try:
        if op == "create":
            directory.mkdir()
        data = os.urandom(size)
        names = [str(directory / f"f{i:06d}") for i in range(count)]
        lat: list[float] = []
        clock = time.perf_counter
        total = 0
        done = 0
        barrier.wait(timeout=wait_s)
        if go is not None:  # (the rank's word that every rank of its job is ready, and when to start)
            if not go.wait(timeout=wait_s):
                raise TimeoutError(f"the other ranks were not ready within {wait_s:.0f} s")
            if at.value > time.time():
                time.sleep(at.value - time.time())
        start = clock()
        started = time.time()
        progress = [[started, 0, 0]]
        stop = threading.Event()

        def watch() -> None:  # (every NOTE_EVERY s, also while one operation blocks: what it has done so far)
            while not stop.wait(NOTE_EVERY):
                progress.append([started + clock() - start, done, total])

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        if op == "create":
            flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY
            for name in names:
                t0 = clock()
                fd = os.open(name, flags, 0o644)
                written = 0
                while written < size:
                    written += os.write(fd, data[written:] if written else data)
                os.close(fd)
                lat.append(clock() - t0)
                total += written
                done += 1
            files = count
        elif op == "ls-l":
            listed = os.listdir(directory)
            for name in listed:
                t0 = clock()
                os.lstat(os.path.join(directory, name))
                lat.append(clock() - t0)
                done += 1
            files = len(listed)
            if files != count:
                raise RuntimeError(f"listed {files} files in {directory}, expected {count}")
        else:
            for name in names:
                t0 = clock()
                fd = os.open(name, os.O_RDONLY)
                got = 0
                while chunk := os.read(fd, 1 << 20):
                    got += len(chunk)
                os.close(fd)
                lat.append(clock() - t0)
                if got != size:
                    raise RuntimeError(f"{name}: read {got} bytes, expected {size}")
                total += got
                done += 1
            files = count
        end = clock()
        stop.set()
        watcher.join()
        ended = started + end - start
        progress.append([ended, files, total])
        out.send({"start": start, "end": end, "files": files, "bytes": total, "lat": lat, "started": started,
                  "ended": ended, "progress": progress})
    except BaseException as exc:  # reported to the parent, which raises it
        barrier.abort()  # release the other workers at once instead of after the timeout
        out.send({"error": f"{type(exc).__name__}: {exc}"})
    finally:
        out.close()


# ------------------------------------------------------------------ largefile

def source(path: str, size: int) -> dict[str, Any]:
    """Random (incompressible) bytes; reused when a file of that size is already there (and
    then read through, so that, as a new one, it is in the page cache for the copy that
    follows). Every 4 KiB block starts with its own number, so no two blocks of the file are
    equal (nothing for block-level dedup or compression to find). Returns its digest."""
    file = Path(path)
    digest_file = file.with_suffix(".blake2b")
    if file.exists() and digest_file.exists() and file.stat().st_size == size:
        with open(file, "rb", buffering=0) as f:
            while f.read(CHUNK * 8):
                pass
        return {"digest": digest_file.read_text()}
    h = hashlib.blake2b()
    chunk = bytearray(os.urandom(CHUNK))
    block_no = 0
    with open(file, "wb") as f:
        left = size
        while left:
            for offset in range(0, CHUNK, DEDUP_BLOCK):
                struct.pack_into("<Q", chunk, offset, block_no)
                block_no += 1
            piece = memoryview(chunk)[:min(CHUNK, left)]
            f.write(piece)
            h.update(piece)
            left -= len(piece)
    digest_file.write_text(h.hexdigest())
    return {"digest": h.hexdigest()}


def copy(src: str, dst: str, bs: int, fsync: bool, digest: bool = False) -> dict[str, Any]:
    """Copy ``src`` to ``dst`` in ``bs`` blocks, timed (with the fsync when asked);
    ``digest`` hashes the copy afterwards (untimed)."""
    buf = bytearray(bs)
    view = memoryview(buf)
    moved = 0
    start = time.perf_counter()
    started = time.time()
    progress = [[started, 0]]
    stop = threading.Event()

    def watch() -> None:
        # a note every NOTE_EVERY s, also while one write (or the fsync) blocks: a client
        # that moves nothing for seconds shows seconds of nothing, not a slow block
        while not stop.wait(NOTE_EVERY):
            progress.append([started + time.perf_counter() - start, moved])

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        with open(src, "rb", buffering=0) as fin, open(dst, "wb", buffering=0) as fout:
            while n := fin.readinto(buf):
                done = 0
                while done < n:
                    done += fout.write(view[done:n])
                moved += n
            if fsync:
                os.fsync(fout.fileno())
    finally:
        stop.set()
        watcher.join()
    elapsed = time.perf_counter() - start
    progress.append([started + elapsed, moved])
    return {"elapsed": elapsed, "started": started, "ended": started + elapsed, "bytes": moved,
            "progress": progress, **({"digest": file_digest(dst, bs)} if digest else {})}


def file_digest(path: str, bs: int) -> str:
    h = hashlib.blake2b()
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(bs * 8):
            h.update(chunk)
    return h.hexdigest()


def digest(path: str, bs: int = CHUNK) -> dict[str, Any]:
    """The blake2b digest of a file (a check of what another client wrote)."""
    return {"digest": file_digest(path, bs)}


ENGINES: dict[str, Callable[..., dict[str, Any]]] = {"smallfile": smallfile, "source": source, "copy": copy,
                                                     "digest": digest}


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in ENGINES:
        print(json.dumps({"error": f"usage: engines.py {{{','.join(ENGINES)}}} JSON"}))
        return 2
    try:
        result = ENGINES[argv[1]](**json.loads(argv[2]))
    except Deadline as exc:
        print(json.dumps({"error": str(exc)}))
        return HUNG
    except Exception as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
