"""Benchmark: `make demo` from a fresh clone, the newcomer's first minutes.

Each of N rounds (default 3) clones this repository's HEAD into a temporary directory,
runs `make deps` there (the Debian packages are already installed: this is the
virtualenv), then `make demo`, timed: lab up, the report's three workloads on GlusterFS
and CephFS, the tables, lab down. Prints each round, the median, and the tables of the
last round; checks nothing of the lab is left. Target: `make demo` <= 5 min.

    .venv/bin/python bench/demo_time.py [N]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> float:
    t0 = time.monotonic()
    with open(log, "w") as out:
        result = subprocess.run(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    elapsed = time.monotonic() - t0
    if result.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed in {cwd} (exit {result.returncode}); see {log}")
    return elapsed


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    demo_times, deps_times = [], []
    last_log = None
    for i in range(rounds):
        with tempfile.TemporaryDirectory(prefix="dfsbench-demo-", dir="/var/tmp") as tmp:
            clone = Path(tmp) / "dfsbench"
            subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
            lab = Path(tmp) / "lab"
            env = {**os.environ, "DFSBENCH_LOCAL_LAB_DIR": str(lab)}
            deps_times.append(timed(["make", "deps"], clone, env, Path(tmp) / "deps.log"))
            log = Path(tmp) / "demo.log"
            demo_times.append(timed(["make", "demo"], clone, env, log))
            if lab.exists():
                sys.exit(f"round {i + 1}: the lab directory {lab} was left behind")
            last_log = log.read_text()
            print(f"round {i + 1}: make deps {deps_times[-1]:.0f} s (virtualenv), "
                  f"make demo {demo_times[-1]:.0f} s ({demo_times[-1] / 60:.1f} min)", flush=True)
    print(f"make demo: median {statistics.median(demo_times):.0f} s "
          f"({', '.join(f'{t:.0f}' for t in demo_times)}); target <= 300 s")
    print(f"make deps in a fresh clone: median {statistics.median(deps_times):.0f} s")
    print("\n--- the last round's output ---")
    print(last_log)
    return 0 if statistics.median(demo_times) <= 300 else 1


if __name__ == "__main__":
    sys.exit(main())
