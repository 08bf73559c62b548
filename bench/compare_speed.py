"""Benchmark: `dfsbench compare` and `dfsbench report` over N stored measurements, for each N
given (default 10,000 and 100,000; target: each <= 3 s at 100,000, and growing slower than
the record count). The store is filled with the records of a real quick run
(tests/data/quick-run.jsonl), repeated over repeats and variants until there are N, each
copy with a start and end of its own as every tool run's records have in a real store (so
no two copies share their parameters).

Each command runs 3 times; printed are the median wall time, the spread (min-max), the CPU
time, the machine's load (``os.getloadavg``) before and after, and the ratio of each N's
median to the first N's beside the ratio of their record counts.

    .venv/bin/python bench/compare_speed.py [N ...] [--keep DIR]

``--keep DIR``: the stores stay in DIR (``DIR/nN``), and a store already there is used again.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from harness.api.records import Measurement
from harness.results.schema import DB_NAME
from harness.results.store import Store
from options import keep_dir

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "quick-run.jsonl"
RUNS = 3
TARGET = 3.0  # seconds, at 100,000 measurements
RUN_ID = "20260101-000000-bench0"


def fill(root: Path, n: int) -> str:
    """A store of one run of ``n`` measurements; its run id."""
    base = [Measurement.from_dict(json.loads(line)) for line in DATA.read_text().splitlines()]
    store = Store(root)
    run_id = RUN_ID
    store.begin_run(run_id, {"scale": "quick"}, "bench", {"memory": 24 << 30}, "bench")
    for b in sorted({m.backend for m in base}):
        store.add_target(run_id, b, "default", {"system": b})
    records: list[Measurement] = []
    i = 0
    while len(records) < n:
        rep, variant = i % 5, f"v{i // 5}" if i >= 5 else "default"
        # each copy a tool run of its own, as in a real store: its records carry when it ran
        # (the metrics of one run share that; no two runs do)
        began = 1.8e9 + 60.0 * i
        records += [replace(m, run_id=run_id, repeat=rep, variant=variant,
                            params={**m.params, "started": began, "ended": began + 30.0},
                            value=(m.value * (1 + 0.01 * rep)) if m.value else m.value) for m in base]
        i += 1
    store.add_many(records[:n])
    store.finish_run(run_id, "complete")
    store.close()
    return run_id


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def timed(argv: list[str], runs: int = RUNS) -> tuple[list[float], list[float]]:
    """Wall and CPU (user + system) seconds of each of ``runs`` runs: on a shared machine the
    wall time is what the command waited for the CPU too; its CPU time less so."""
    times, cpus = [], []
    for _ in range(runs):
        t0, r0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, check=True, capture_output=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(time.monotonic() - t0)
        cpus.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return times, cpus


def main() -> int:
    args = sys.argv[1:]
    keep = keep_dir(args)
    counts = [int(a) for a in args] or [10_000, 100_000]
    medians: dict[tuple[str, int], float] = {}
    with tempfile.TemporaryDirectory(prefix="dfsbench-bench-") as tmp:
        for n in counts:
            root = (keep or Path(tmp)) / f"n{n}"
            run_id = fill(root, n) if not (root / DB_NAME).exists() else RUN_ID  # (--keep: a store kept before)
            cli = [sys.executable, "-m", "harness.cli"]
            for name, argv in (("compare", [*cli, "compare", run_id, "--results", str(root)]),
                               ("report", [*cli, "report", run_id, "-o", f"{tmp}/r{n}.html", "--results", str(root)])):
                before = load()
                times, cpus = timed(argv)
                medians[(name, n)] = median = statistics.median(times)
                line = (f"{name} over {n:,} measurements: median {median:.2f} s, spread {min(times):.2f}-"
                        f"{max(times):.2f} s ({', '.join(f'{t:.2f}' for t in times)}); CPU median "
                        f"{statistics.median(cpus):.2f} s ({', '.join(f'{t:.2f}' for t in cpus)}); "
                        f"load {before} -> {load()}")
                if n >= 100_000:
                    line += f"; target <= {TARGET:.0f} s: {'met' if median <= TARGET else 'NOT met'}"
                print(line, flush=True)
    first = counts[0]
    for n in counts[1:]:
        for name in ("compare", "report"):
            print(f"{name}: {n:,} / {first:,} measurements = {n / first:.0f}x the records, "
                  f"{medians[(name, n)] / medians[(name, first)]:.2f}x the time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
