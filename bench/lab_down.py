"""Benchmark: wall time of `dfsbench lab down` after the lab has been written to.

Each of N rounds (default 3): `lab up`, a run on the lab that writes (large files of
256 MiB and 1 GiB, 1,024 small files, on GlusterFS and CephFS), then `lab down`, timed.
Prints each teardown and the median. Target: <= 3 s whatever was written.

    .venv/bin/python bench/lab_down.py [N]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WRITES = """\
backends: [glusterfs, cephfs]
workloads:
  - {name: largefile, options: {sizes: [256MiB, 1GiB], verify: false}}
  - {name: smallfile, options: {files: [1024], file_size: 40KiB}}
"""


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    downs = []
    with tempfile.TemporaryDirectory(prefix="dfsbench-bench-", dir="/var/tmp") as tmp:
        env = {**os.environ, "DFSBENCH_LOCAL_LAB_DIR": str(Path(tmp) / "lab"),
               "DFSBENCH_RESULTS": str(Path(tmp) / "results")}
        config = Path(tmp) / "writes.yaml"
        config.write_text(WRITES)
        cli = [sys.executable, "-m", "harness.cli"]
        for i in range(n):
            for args in (["lab", "up"], ["run", str(config)]):
                done = subprocess.run([*cli, *args], env=env, capture_output=True, text=True)
                if done.returncode != 0:
                    print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
                    subprocess.run([*cli, "lab", "down"], env=env)
                    return 1
            t0 = time.monotonic()
            down = subprocess.run([*cli, "lab", "down"], env=env, capture_output=True, text=True)
            downs.append(time.monotonic() - t0)
            if down.returncode != 0:
                print(down.stderr, file=sys.stderr)
                return 1
            print(f"round {i + 1}: lab down {downs[-1]:.1f} s", flush=True)
    print(f"lab down after writes: median {statistics.median(downs):.1f} s "
          f"(min {min(downs):.1f}, max {max(downs):.1f}, n={n}; target <= 3 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
