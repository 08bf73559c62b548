"""How long would the report-scale iozone O_DIRECT matrix take? Estimated from a stored
run's measured O_DIRECT rates (e.g. a quick-scale run), before committing hours to it.

    .venv/bin/python bench/iozone_estimate.py RUN [--results DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.results.catalogue import Catalogue
from harness.results.store import default_results_dir
from harness.units import duration
from workloads.iozone import Iozone, estimate_seconds


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("run")
    p.add_argument("--results", type=Path, default=None)
    a = p.parse_args()
    store = Catalogue(a.results or default_results_dir())
    run_id = store.resolve(a.run)
    plan = Iozone.defaults("report")
    per_target = estimate_seconds(store.measurements(run_id), plan["file_sizes"], plan["record_sizes"],
                                  [0, 1, 2])
    if not per_target:
        print(f"run {run_id} has no O_DIRECT iozone results to estimate from", file=sys.stderr)
        return 1
    sizes = ", ".join(f"{s >> 20} MiB" for s in plan["file_sizes"])
    records = ", ".join(f"{r >> 10} KiB" for r in plan["record_sizes"])
    print(f"report-scale iozone -I (files {sizes}; records {records}; tests 0 1 2), from run {run_id}:")
    for (backend, variant), seconds in per_target.items():
        print(f"  {backend}/{variant}: about {duration(seconds)} ({seconds / 3600:.1f} h)")
    print(f"  all together: about {sum(per_target.values()) / 3600:.1f} h")
    return 0


if __name__ == "__main__":
    sys.exit(main())
