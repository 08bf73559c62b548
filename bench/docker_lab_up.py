"""Benchmark: wall time of `dfsbench lab up --env docker` (3 GlusterFS nodes, 2 clients,
1 Gbit links; the lab mounts nothing) and of `lab down`.

Runs up/down N times (default 3) and prints each, the median, and the phases the lab
recorded. With --rebuild the node image (dfsbench's own tag only) is removed first, so the
first round includes building it.

    .venv/bin/python bench/docker_lab_up.py [N] [--rebuild]
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
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if args else 3
    if "--rebuild" in sys.argv:
        from environments import node_image
        tag = node_image._tag("node", node_image.SUITE, node_image.host_mirror(),
                              node_image.dockerfile("BASE", node_image.host_mirror()))
        subprocess.run(["docker", "image", "rm", tag], capture_output=True)
    walls, downs, phases = [], [], []
    with tempfile.TemporaryDirectory(prefix="dfsbench-bench-") as tmp:
        lab = Path(tmp) / "lab"
        env = {**os.environ, "DFSBENCH_DOCKER_LAB_DIR": str(lab)}
        cli = [sys.executable, "-m", "harness.cli", "lab"]
        for i in range(n):
            t0 = time.monotonic()
            up = subprocess.run([*cli, "up", "--env", "docker"], env=env, capture_output=True, text=True)
            walls.append(time.monotonic() - t0)
            if up.returncode != 0:
                print(up.stderr, file=sys.stderr)
                subprocess.run([*cli, "down", "--env", "docker"], env=env)
                return 1
            phases.append(json.loads((lab / "ledger.json").read_text())["data"]["timings"])
            t0 = time.monotonic()
            subprocess.run([*cli, "down", "--env", "docker"], env=env, check=True, capture_output=True)
            downs.append(time.monotonic() - t0)
            print(f"round {i + 1}: lab up {walls[-1]:.1f} s, lab down {downs[-1]:.1f} s", flush=True)
    print(f"lab up --env docker: median {statistics.median(walls):.1f} s over {n} "
          f"(min {min(walls):.1f}, max {max(walls):.1f})")
    print(f"lab down --env docker: median {statistics.median(downs):.1f} s")
    print("phases (median s):")
    for phase in phases[-1]:
        print(f"  {phase:<40} {statistics.median([p.get(phase, 0.0) for p in phases]):6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
