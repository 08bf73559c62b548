"""Benchmark: does running fio through dfsbench disturb what it measures?

A 10 s 4k randread job (libaio, direct=1, iodepth 16) on a file in the CephFS mount of a
running lab (`dfsbench lab up` first), run by hand (`fio --output-format=json JOB`) and
through dfsbench's fio workload with the same job file, in N alternating pairs (default
5). Prints each pair, the median IOPS ratio (dfsbench / by hand; target >= 0.97) and the
median wall-time overhead per job (target <= 1 s).

    .venv/bin/dfsbench lab up && .venv/bin/python bench/fio_overhead.py [N]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from environments.local import LocalEnvironment, LocalOptions
from harness.contracts import Target
from workloads.fio import Fio, FioOptions

JOB = """\
[global]
ioengine=libaio
direct=1
size=256m
runtime=10
time_based=1
filename={path}

[randread-4k-qd16]
rw=randread
bs=4k
iodepth=16
"""


def by_hand(job: Path) -> tuple[float, float]:
    t0 = time.monotonic()
    out = subprocess.run(["fio", "--output-format=json", str(job)], capture_output=True, text=True,
                         check=True).stdout
    wall = time.monotonic() - t0
    return json.loads(out)["jobs"][0]["read"]["iops"], wall


def through_dfsbench(job: Path, target: Target, raw: Path) -> tuple[float, float]:
    fio = Fio(FioOptions(job_file=job, size=256 << 20, runtime_s=10))
    t0 = time.monotonic()
    records = list(fio.run(target, fio.cells()[0], raw, raw))
    wall = time.monotonic() - t0
    return next(m.value for m in records if m.metric == "iops"), wall


def main() -> int:
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    env = LocalEnvironment(LocalOptions())
    mounts = [Path(e["path"]) for e in (env.existing().entries if env.existing() else [])
              if e["kind"] == "mount" and e["path"].endswith("cephfs")]
    if not mounts:
        print("no running lab with a CephFS mount: run 'dfsbench lab up' first", file=sys.stderr)
        return 1
    mnt = mounts[0]
    target = Target("path", mnt, "cephfs", "default")
    ratios, overheads = [], []
    with tempfile.TemporaryDirectory(prefix="dfsbench-bench-") as tmp:
        job = Path(tmp) / "randread.fio"
        job.write_text(JOB.format(path=mnt / "dfsbench-bench-fio.data"))
        raw = Path(tmp) / "raw"
        raw.mkdir()
        by_hand(job)  # lays the file out once, so no pair pays for that
        try:
            for i in range(pairs):
                if i % 2 == 0:
                    hand, hand_wall = by_hand(job)
                    ours, our_wall = through_dfsbench(job, target, raw)
                else:
                    ours, our_wall = through_dfsbench(job, target, raw)
                    hand, hand_wall = by_hand(job)
                ratios.append(ours / hand)
                overheads.append(our_wall - hand_wall)
                print(f"pair {i + 1}: by hand {hand:,.0f} IOPS in {hand_wall:.2f} s, dfsbench {ours:,.0f} "
                      f"IOPS in {our_wall:.2f} s; ratio {ratios[-1]:.3f}, overhead {overheads[-1]:+.2f} s")
        finally:
            (mnt / "dfsbench-bench-fio.data").unlink(missing_ok=True)
    ratio, overhead = statistics.median(ratios), statistics.median(overheads)
    print(f"median IOPS ratio {ratio:.3f} (target >= 0.97); median wall-time overhead "
          f"{overhead:+.2f} s per job (target <= 1 s)")
    return 0 if ratio >= 0.97 and overhead <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
