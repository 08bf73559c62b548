"""Benchmark: `dfsbench compare` and `dfsbench report` over 10,000 stored measurements
(target: each under 3 s). The store is filled with the records of a real quick run
(tests/data/quick-run.jsonl), repeated over repeats and variants until there are N.

    .venv/bin/python bench/compare_speed.py [N]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from harness.api.records import Measurement
from harness.results.store import Store, new_run_id

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "quick-run.jsonl"


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    base = [Measurement.from_dict(json.loads(line)) for line in DATA.read_text().splitlines()]
    with tempfile.TemporaryDirectory(prefix="dfsbench-bench-") as tmp:
        store = Store(Path(tmp))
        run_id = new_run_id()
        store.begin_run(run_id, {"scale": "quick"}, "bench", {"memory": 24 << 30}, "bench")
        for b in sorted({m.backend for m in base}):
            store.add_target(run_id, b, "default", {"system": b})
        records, i = [], 0
        while len(records) < n:
            rep, variant = i % 5, f"v{i // 5}" if i >= 5 else "default"
            records += [replace(m, run_id=run_id, repeat=rep, variant=variant,
                                value=(m.value * (1 + 0.01 * rep)) if m.value else m.value) for m in base]
            i += 1
        store.add_many(records[:n])
        store.finish_run(run_id, "complete")
        cli = [sys.executable, "-m", "harness.cli"]
        for name, argv in (("compare", [*cli, "compare", run_id, "--results", tmp]),
                           ("report", [*cli, "report", run_id, "-o", f"{tmp}/r.html", "--results", tmp])):
            times = []
            for _ in range(3):
                t0 = time.monotonic()
                subprocess.run(argv, check=True, capture_output=True)
                times.append(time.monotonic() - t0)
            print(f"{name} over {n:,} measurements: median {statistics.median(times):.2f} s "
                  f"({', '.join(f'{t:.2f}' for t in times)}); target < 3 s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
