"""Benchmark: parsing the longest outputs dfsbench's own runs produce, and logs of that size.

- ``fio``: an hour of ``--output-format=json+ --status-interval=1`` (3,600 documents, about
  47 MB), generated from the real capture tests/data/tools/fio-3.33-status-interval-jsonplus.json:
  its interval document is the template of every second (its cumulative counters, latency
  histogram and clocks scaled to that second), its final document the last. Timed: what a
  fio cell does with its output (``parse``, ``timed``, ``interval_latencies``) and
  ``dfsbench parse fio FILE``. Target: the CLI under 2 s. The same for a quarter of the hour
  beside it: a linear parser takes about a quarter of the time.
- ``iozone``: a 200 MB log of the real run tests/data/tools/iozone-cached.txt run again and
  again (75,000 runs, each with a start of its own; 1.8 million records, each cell's pooled
  as repeats). Timed: ``parse`` in this process (target: under 30 s), beside a quarter of
  the log; ``dfsbench parse iozone FILE`` once (it also prints 1.8 million JSON lines: the
  printing is most of it). And the same run appended to itself word for word until 200 MB
  (issue 31's log): ``dfsbench parse iozone`` refuses it (target: under 30 s).

Printed: the median of 3 timings of each (wall and CPU), its spread, the machine's load.

    .venv/bin/python bench/parse_speed.py [fio|iozone ...] [--keep DIR]
"""

from __future__ import annotations

import copy
import datetime
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from options import keep_dir

TOOLS = Path(__file__).resolve().parents[1] / "tests" / "data" / "tools"
RUNS = 3
FIO_SECONDS = 3600
FIO_TARGET = 2.0  # seconds, `dfsbench parse fio` of an hour
IOZONE_BYTES = 200_000_000
IOZONE_TARGET = 30.0  # seconds, `dfsbench parse iozone` of 200 MB


def fio_documents() -> list[dict[str, Any]]:
    """The captured run's documents (one a second, the final one last)."""
    text = (TOOLS / "fio-3.33-status-interval-jsonplus.json").read_text()
    decoder, docs, at = json.JSONDecoder(), [], 0
    while (start := text.find("{", at)) != -1:
        doc, at = decoder.raw_decode(text, start)
        docs.append(doc)
    return docs


def scaled(doc: dict[str, Any], runtime_ms: int, timestamp_ms: int) -> dict[str, Any]:
    """``doc`` as fio would print it after ``runtime_ms`` of the same I/O: its cumulative
    counts and histogram bins grown in proportion, its clocks moved on."""
    out = copy.deepcopy(doc)
    job = out["jobs"][0]
    factor = runtime_ms / job["job_runtime"]
    out["timestamp_ms"], out["timestamp"] = timestamp_ms, timestamp_ms // 1000
    job["job_runtime"], job["elapsed"] = runtime_ms, runtime_ms // 1000 + 1
    for direction in ("read", "write", "trim"):
        d = job[direction]
        for key in ("io_bytes", "io_kbytes", "total_ios", "runtime"):
            d[key] = round(d[key] * factor)
        for kind in ("slat_ns", "clat_ns", "lat_ns"):
            d[kind]["N"] = round(d[kind].get("N", 0) * factor)
            bins = d[kind].get("bins")
            if bins:
                d[kind]["bins"] = {k: max(1, round(v * factor)) for k, v in bins.items()}
    return out


def fio_hour(seconds: int) -> str:
    """``seconds`` of fio's json+ status-interval output, as fio prints it."""
    docs = fio_documents()
    interval, final = docs[-2], docs[-1]
    began = final["timestamp_ms"] - final["jobs"][0]["job_runtime"]
    out = [scaled(interval, 1000 * s, began + 1000 * s) for s in range(1, seconds)]
    out.append(scaled(final, 1000 * seconds, began + 1000 * seconds + 1))
    return "".join(json.dumps(d, indent=2, separators=(",", " : ")) + "\n" for d in out)


def iozone_log(size: int) -> str:
    """A log of the captured iozone run run again and again until it is ``size`` long, each
    run with a start of its own (a second after the one before: its 'Run began:' line); its
    numbers are the captured run's."""
    run = (TOOLS / "iozone-cached.txt").read_text()
    began = re.search(r"Run began: (.*)", run)
    assert began is not None
    first = datetime.datetime.strptime(began.group(1).strip(), "%a %b %d %H:%M:%S %Y")
    head, tail = run[:began.start(1)], run[began.end(1):]
    return "".join(f"{head}{(first + datetime.timedelta(seconds=i)).ctime()}{tail}"
                   for i in range(max(1, size // len(run))))


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def timings(fn: Callable[[], object], runs: int = RUNS) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds (this process's and its children's) of each run: on a shared
    machine the wall time is what waited for the CPU too."""
    walls, cpus = [], []
    for _ in range(runs):
        t0, c0, r0 = time.perf_counter(), time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
        fn()
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0 + r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return walls, cpus


def report(what: str, measured: tuple[list[float], list[float]], target: float | None = None) -> float:
    walls, cpus = measured
    median = statistics.median(walls)
    line = (f"{what}: median {median:.2f} s, spread {min(walls):.2f}-{max(walls):.2f} s, CPU "
            f"{statistics.median(cpus):.2f} s; load {load()}")
    if target is not None:
        line += f"; target < {target:g} s: {'met' if median < target else 'NOT met'}"
    print(line, flush=True)
    return median


def cli(tool: str, file: Path, refused: bool = False) -> Callable[[], object]:
    argv = [sys.executable, "-m", "harness.cli", "parse", tool, str(file)]

    def run() -> None:
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert done.returncode == (2 if refused else 0), done.stderr

    return run


def bench_fio(where: Path) -> bool:
    from workloads.fio.json_output import interval_latencies, parse, timed

    medians = {}
    for seconds in (FIO_SECONDS // 4, FIO_SECONDS):
        file = where / f"fio-{seconds}s.json"
        if not file.exists():
            file.write_text(fio_hour(seconds))
        text = file.read_text()
        label = f"fio json+, {seconds:,} documents ({len(text) / 1e6:.0f} MB)"
        print(f"{label}: load {load()}", flush=True)
        records = parse(text)
        assert records and len(timed(text)["write"][4]) == seconds + 1, "the generated output is not what it says"
        report("  parse, timed, interval_latencies (a fio cell's work)",
               timings(lambda: (parse(text), timed(text), interval_latencies(text))))
        medians[seconds] = report("  dfsbench parse fio", timings(cli("fio", file)),
                                  FIO_TARGET if seconds == FIO_SECONDS else None)
    print(f"fio: 4x the documents, {medians[FIO_SECONDS] / medians[FIO_SECONDS // 4]:.2f}x the time")
    return medians[FIO_SECONDS] < FIO_TARGET


def bench_iozone(where: Path) -> bool:
    from workloads.iozone import parse

    medians = {}
    for size in (IOZONE_BYTES // 4, IOZONE_BYTES):
        file = where / f"iozone-{size}.txt"
        if not file.exists():
            file.write_text(iozone_log(size))
        text = file.read_text()
        runs = text.count("Iozone: Performance Test of File I/O")
        print(f"iozone log, {runs:,} runs ({len(text) / 1e6:.0f} MB): load {load()}", flush=True)
        records = parse(text)
        assert len(records) == 24 * runs, "the log's records are not its runs' cells"
        del records
        medians[size] = report(f"  parse ({24 * runs:,} records)", timings(lambda: parse(text)),
                               IOZONE_TARGET if size == IOZONE_BYTES else None)
    print(f"iozone: 4x the log, {medians[IOZONE_BYTES] / medians[IOZONE_BYTES // 4]:.2f}x the time")
    report("  dfsbench parse iozone (printing every record)", timings(cli("iozone", file), runs=1))
    copied = where / f"iozone-copied-{IOZONE_BYTES}.txt"
    if not copied.exists():
        run = (TOOLS / "iozone-cached.txt").read_text()
        copied.write_text(run * (IOZONE_BYTES // len(run)))
    print(f"iozone log of one run appended word for word ({copied.stat().st_size / 1e6:.0f} MB): load {load()}")
    refused = report("  dfsbench parse iozone (refused)", timings(cli("iozone", copied, refused=True)),
                     IOZONE_TARGET)
    return medians[IOZONE_BYTES] < IOZONE_TARGET and refused < IOZONE_TARGET


def main() -> int:
    args = sys.argv[1:]
    keep = keep_dir(args)
    benches = {"fio": bench_fio, "iozone": bench_iozone}
    chosen = args or list(benches)
    if set(chosen) - set(benches):
        raise SystemExit(f"parse_speed: no bench {', '.join(sorted(set(chosen) - set(benches)))}; "
                         f"there are {', '.join(benches)}")
    with tempfile.TemporaryDirectory(prefix="dfsbench-bench-", dir="/var/tmp") as tmp:
        where = keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        met = [benches[name](where) for name in chosen]
    return 0 if all(met) else 1


if __name__ == "__main__":
    sys.exit(main())
