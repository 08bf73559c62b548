"""Benchmark: `make demo` from a fresh clone, the newcomer's first minutes.

Each of N rounds (default 3) clones this repository's HEAD into a temporary directory and
times `make demo` there, packages included: the Debian packages (already installed here:
a check), the virtualenv, then `dfsbench run` (lab up, the default workloads on GlusterFS
and CephFS, the tables, lab down). Prints each round with its split (make deps / the run),
the median and spread, the load at the start of each round; checks nothing of the lab is
left. Target: `make demo` <= 150 s.

    .venv/bin/python bench/demo_time.py [N]
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

TARGET = 150.0


def main() -> int:
    say_what_is_measured()
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    demo_times: list[float] = []
    last_log = ""
    for i in range(rounds):
        load = os.getloadavg()[0]
        with tempfile.TemporaryDirectory(prefix="dfsbench-demo-", dir="/var/tmp") as tmp:
            repo = clone(Path(tmp))
            lab = Path(tmp) / "lab"
            env = {**os.environ, "DFSBENCH_LOCAL_LAB_DIR": str(lab), "DFSBENCH_RESULTS": str(Path(tmp) / "results")}
            log = Path(tmp) / "demo.log"
            t0 = time.monotonic()
            ran_at = None
            with open(log, "w") as out:
                child = subprocess.Popen(["make", "demo"], cwd=repo, env=env, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, text=True)
                assert child.stdout is not None
                for line in child.stdout:
                    out.write(line)
                    if ran_at is None and re.match(r"^\S*/dfsbench run", line):
                        ran_at = time.monotonic() - t0
                code = child.wait()
            demo_times.append(time.monotonic() - t0)
            last_log = log.read_text()
            if code != 0:
                print(last_log[-4000:])
                sys.exit(f"round {i + 1}: make demo failed (exit {code})")
            if lab.exists():
                sys.exit(f"round {i + 1}: the lab directory {lab} was left behind")
            deps = ran_at if ran_at is not None else float("nan")
            print(f"round {i + 1}: make demo {demo_times[-1]:.0f} s (make deps {deps:.0f} s, "
                  f"dfsbench run {demo_times[-1] - deps:.0f} s); load at start {load:.2f}", flush=True)
    median = statistics.median(demo_times)
    print(f"make demo from a fresh clone: median {median:.0f} s over {rounds} "
          f"(min {min(demo_times):.0f}, max {max(demo_times):.0f}); target <= {TARGET:.0f} s")
    print("\n--- the last round's output ---")
    print(last_log)
    return 0 if median <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
