"""Benchmark: how promptly a local-lab run stops when interrupted, at each stage.

For each point of the fault matrix (tests/integration/test_interruptions.py), N rounds
(default 2): start a run, send the signal when the progress reaches the point, and time
from the signal to the run's exit (everything it created undone by then). Prints each
round and the median per point. Target: <= 15 s at every point (no wait on a tool's or
engine's deadline, no teardown abandoned).

    .venv/bin/python bench/interrupt_latency.py [N]
"""

from __future__ import annotations

import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.integration.test_interruptions import POINTS, finish, start  # noqa: E402


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    print(f"load before: {os.getloadavg()[0]:.2f}")
    medians = {}
    for point, (text, delay, sig) in POINTS.items():
        times = []
        for i in range(n):
            with tempfile.TemporaryDirectory(prefix="dfsbench-bench-", dir="/var/tmp") as tmp:
                w = start(Path(tmp))
                w.wait_for_line(text)
                time.sleep(delay)
                sent = time.monotonic()
                w.send(sig)
                code = finish(w)
                took = time.monotonic() - sent
                if code != 128 + sig:
                    print(f"{point}: exit {code}, expected {128 + sig}", file=sys.stderr)
                    return 1
                times.append(took)
                print(f"{point:<11} round {i + 1}: {signal.Signals(sig).name} -> exit {code} in {took:5.2f} s")
        medians[point] = statistics.median(times)
    print("median seconds from the signal to exit, all undone:")
    for point, m in medians.items():
        print(f"  {point:<11} {m:5.2f}")
    print(f"load after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
