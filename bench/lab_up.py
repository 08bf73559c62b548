"""Benchmark: wall time of `dfsbench lab up` (both clusters up, both mounted and verified).

Runs `lab up` / `lab down` N times (default 3) on this machine and prints each wall time
(the CLI's own start included), the median and spread, the load when it began, and where
the time goes (the phases each bring-up recorded, and the CLI's steps). Target: <= 8 s.

The lab goes in ``$DFSBENCH_LOCAL_LAB_DIR`` when that is set (it must not hold a lab),
else in a temporary directory.

    .venv/bin/python bench/lab_up.py [N]
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 8.0
# the CLI's own step lines on stderr: "[   3.2s] ✓ mount cephfs (1.1 s)"
STEP = re.compile(r"\[\s*([\d.]+)s\] ✓ (.+?) \(([\d.]+) s\)$")


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    load = os.getloadavg()
    walls, downs, phases, steps = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="dfsbench-bench-") as tmp:
        lab = Path(os.environ.get("DFSBENCH_LOCAL_LAB_DIR") or Path(tmp) / "lab")
        if (lab / "ledger.json").exists():
            sys.exit(f"a lab is up in {lab}: this bench brings its own up and down (bring that one down first)")
        env = {**os.environ, "DFSBENCH_LOCAL_LAB_DIR": str(lab)}
        cli = [sys.executable, "-m", "harness.cli", "lab"]
        for i in range(n):
            t0 = time.monotonic()
            up = subprocess.run([*cli, "up"], env=env, capture_output=True, text=True)
            walls.append(time.monotonic() - t0)
            if up.returncode != 0:
                print(up.stderr, file=sys.stderr)
                subprocess.run([*cli, "down"], env=env)
                return 1
            ledger = json.loads((lab / "ledger.json").read_text())
            phases.append({name: info.get("phases", {}) for name, info in ledger["data"]["services"].items()})
            steps.append({m[2]: float(m[3]) for m in map(STEP.search, up.stderr.splitlines()) if m})
            t0 = time.monotonic()
            subprocess.run([*cli, "down"], env=env, check=True, capture_output=True)
            downs.append(time.monotonic() - t0)
            print(f"run {i + 1}: lab up {walls[-1]:.1f} s, lab down {downs[-1]:.1f} s")
    print(f"load at start (1, 5, 15 min): {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    print(f"lab up: median {statistics.median(walls):.1f} s over {n} "
          f"(min {min(walls):.1f}, max {max(walls):.1f}); target <= {TARGET_S:g} s")
    print(f"lab down: median {statistics.median(downs):.1f} s (min {min(downs):.1f}, max {max(downs):.1f})")
    print("where the time goes (seconds from the start of each system's bring-up, median):")
    for system in phases[0]:
        for phase in phases[0][system]:
            values = [p[system][phase] for p in phases if phase in p.get(system, {})]
            print(f"  {system:<8} {phase:<42} {statistics.median(values):5.1f}")
    print("the CLI's steps (seconds each, median):")
    for step in steps[0]:
        values = [s[step] for s in steps if step in s]
        print(f"  {step:<51} {statistics.median(values):5.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
