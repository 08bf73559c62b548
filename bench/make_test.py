"""Benchmark: `make test` from a fresh clone, as CI runs it first (`.ci/run`; then `make test-thorough`).

Each of N rounds (default 1: a round is minutes) clones this repository's HEAD into a
temporary directory and times `make test` there, packages and node images included (both
are checks when already present; run `docker image rm` on dfsbench's node images first to
time their build). Prints each round's wall time, the load at its start and the steps
`scripts/run-tests` timed (checks, unit tests, the wait for the node images, the tests on
real labs), then the median and spread. Target: `make test` <= 10 min.

    .venv/bin/python bench/make_test.py [N]
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fresh_clone import clone, say_what_is_measured

TARGET = 600.0
STEP = re.compile(r"^make test: (.+?) took (\d+) s$|^make test: waited (\d+) s for the node images")


def main() -> int:
    say_what_is_measured()
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    walls: list[float] = []
    for i in range(rounds):
        load = os.getloadavg()[0]
        with tempfile.TemporaryDirectory(prefix="dfsbench-test-", dir="/var/tmp") as tmp:
            repo = clone(Path(tmp))
            log = Path(tmp) / "test.log"
            t0 = time.monotonic()
            with open(log, "w") as out:
                code = subprocess.run(["make", "test"], cwd=repo, stdout=out, stderr=subprocess.STDOUT).returncode
            walls.append(time.monotonic() - t0)
            text = log.read_text()
            if code != 0:
                print(text[-6000:])
                sys.exit(f"round {i + 1}: make test failed (exit {code})")
            steps = [m for m in map(STEP.match, text.splitlines()) if m]
            split = ", ".join(f"{m[1]} {m[2]} s" if m[1] else f"node images wait {m[3]} s" for m in steps)
            summary = [line for line in text.splitlines() if re.match(r"^=+ .*(passed|failed).* =+$", line)]
            # the lab step's slowest tests, as pytest timed them (what to look at when it grows)
            slowest = re.findall(r"^\s*([\d.]+)s call\s+(\S+)$", text, re.M)
            print(f"round {i + 1}: make test {walls[-1]:.0f} s ({walls[-1] / 60:.1f} min); load at start "
                  f"{load:.2f}\n  steps: {split}\n  " + "\n  ".join(summary) +
                  "".join(f"\n    {float(t):6.0f} s  {name}" for t, name in slowest), flush=True)
    median = statistics.median(walls)
    print(f"make test from a fresh clone: median {median:.0f} s ({median / 60:.1f} min) over {rounds} "
          f"(min {min(walls):.0f}, max {max(walls):.0f}); target <= {TARGET:.0f} s")
    return 0 if median <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
