"""Benchmark: wall time of `dfsbench lab up` (both clusters up, both mounted and verified).

Runs `lab up` / `lab down` N times (default 3) on this machine and prints each wall time,
the median, and where the time goes (the phases each bring-up recorded). Target: <= 18 s.

    .venv/bin/python bench/lab_up.py [N]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    walls, downs, phases = [], [], []
    with tempfile.TemporaryDirectory(prefix="dfsbench-bench-") as tmp:
        env = {**os.environ, "DFSBENCH_LOCAL_LAB_DIR": str(Path(tmp) / "lab")}
        cli = [sys.executable, "-m", "harness.cli", "lab"]
        for i in range(n):
            t0 = time.monotonic()
            up = subprocess.run([*cli, "up"], env=env, capture_output=True, text=True)
            walls.append(time.monotonic() - t0)
            if up.returncode != 0:
                print(up.stderr, file=sys.stderr)
                subprocess.run([*cli, "down"], env=env)
                return 1
            ledger = json.loads((Path(tmp) / "lab" / "ledger.json").read_text())
            phases.append({name: info.get("phases", {}) for name, info in ledger["data"]["services"].items()})
            t0 = time.monotonic()
            subprocess.run([*cli, "down"], env=env, check=True, capture_output=True)
            downs.append(time.monotonic() - t0)
            print(f"run {i + 1}: lab up {walls[-1]:.1f} s, lab down {downs[-1]:.1f} s")
    print(f"lab up: median {statistics.median(walls):.1f} s over {n} "
          f"(min {min(walls):.1f}, max {max(walls):.1f}); target <= 18 s")
    print(f"lab down: median {statistics.median(downs):.1f} s")
    print("where the time goes (seconds from the start of each system's bring-up, median):")
    for system in phases[0]:
        for phase in phases[0][system]:
            values = [p[system][phase] for p in phases if phase in p.get(system, {})]
            print(f"  {system:<8} {phase:<42} {statistics.median(values):5.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
