"""Benchmark: wall time of `dfsbench lab up --env docker` (the default lab: 3 GlusterFS
nodes, a Ceph monitor node and 3 OSD nodes, 2 clients, 1 Gbit links; the lab mounts
nothing) and of `lab down`. Target (issue 22): lab up <= 20 s.

Runs up/down N times (default 3) in $DFSBENCH_DOCKER_LAB_DIR (else a directory of its own)
and prints each round, the median and spread (min/max), the load when it began (the
machine is shared: figures from a loaded one are slower), and the median phases the lab
recorded. With --rebuild the lab's images above the base (the tools, each system's layer,
the client nodes'; dfsbench's own tags only) are removed first, so the first round includes
building them.

    DFSBENCH_DOCKER_LAB_DIR=/tmp/me/dlab .venv/bin/python bench/docker_lab_up.py [N] [--rebuild]
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

TARGET_S = 20.0


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if args else 3
    if "--rebuild" in sys.argv:
        from environments import node_image
        images = node_image.plan(node_image.installed(), node_image.host_mirror())
        for layer in reversed(images.layers):  # (each before its parent)
            subprocess.run(["docker", "image", "rm", layer.tag], capture_output=True)
    walls, downs, phases = [], [], []
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="dfsbench-bench-") as tmp:
        lab = Path(os.environ.get("DFSBENCH_DOCKER_LAB_DIR") or Path(tmp) / "lab")
        if (lab / "ledger.json").exists():
            print(f"a lab is up in {lab}: bring it down first (dfsbench lab down --env docker)", file=sys.stderr)
            return 2
        env = {**os.environ, "DFSBENCH_DOCKER_LAB_DIR": str(lab)}
        cli = [sys.executable, "-m", "harness.cli", "lab"]
        for i in range(n):
            t0 = time.monotonic()
            up = subprocess.run([*cli, "up", "--env", "docker"], env=env, capture_output=True, text=True)
            walls.append(time.monotonic() - t0)
            if up.returncode != 0:
                print(up.stdout[-3000:], up.stderr[-3000:], file=sys.stderr)
                subprocess.run([*cli, "down", "--env", "docker"], env=env)
                return 1
            phases.append(json.loads((lab / "ledger.json").read_text())["data"]["timings"])
            t0 = time.monotonic()
            subprocess.run([*cli, "down", "--env", "docker"], env=env, check=True, capture_output=True)
            downs.append(time.monotonic() - t0)
            print(f"round {i + 1}: lab up {walls[-1]:.1f} s, lab down {downs[-1]:.1f} s "
                  f"(load {os.getloadavg()[0]:.2f})", flush=True)
    median = statistics.median(walls)
    print(f"lab up --env docker: median {median:.1f} s over {n} (min {min(walls):.1f}, max {max(walls):.1f}); "
          f"target <= {TARGET_S:.0f} s: {'met' if median <= TARGET_S else 'NOT met'}")
    print(f"lab down --env docker: median {statistics.median(downs):.1f} s "
          f"(min {min(downs):.1f}, max {max(downs):.1f})")
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} CPUs)")
    print("phases (median s from the start of the bring-up, in the order they ended):")
    names = sorted({p for r in phases for p in r}, key=lambda p: statistics.median(r.get(p, 0.0) for r in phases))
    for phase in names:
        print(f"  {phase:<58} {statistics.median([r.get(phase, 0.0) for r in phases]):6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
