"""Benchmark: does running fio through dfsbench disturb what it measures?

The same 4k randread job file run by hand (``fio --output-format=json JOB``) and through
dfsbench's fio workload, in N alternating pairs, on a target chosen to separate harness
cost from storage noise:

- ``null``: fio's null ioengine (no storage at all: only fio and the harness around it);
- ``local``: a file on the local disk (libaio, direct=1);
- ``cephfs``: a file in the CephFS mount of a running lab (``dfsbench lab up`` first).

Beside each dfsbench/by-hand ratio it runs the same number of by-hand/by-hand pairs (an
A/A test): where that spread is as wide as the first, the difference is the target's
noise, not the harness. Prints the pairs, median ratios with their min-max, and the median
wall-time overhead per job (targets: IOPS ratio >= 0.97, overhead <= 1 s).

    .venv/bin/python bench/fio_overhead.py --target null|local|cephfs [--pairs N] [--runtime S]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from environments.local import LocalEnvironment, LocalOptions
from harness.api.target import Target
from workloads.fio import Fio
from workloads.fio.profiles import FioOptions

JOB = """\
[global]
{engine}
size=256m
runtime={runtime}
time_based=1

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


def through_dfsbench(job: Path, target: Target, raw: Path, runtime: int) -> tuple[float, float]:
    fio = Fio(FioOptions(job_file=job, size=256 << 20, runtime_s=runtime))
    t0 = time.monotonic()
    records = list(fio.run(target, fio.cells()[0], raw, raw))
    wall = time.monotonic() - t0
    iops = next(m.value for m in records if m.metric == "iops")
    assert iops is not None
    return iops, wall


def cephfs_mount() -> Path | None:
    env = LocalEnvironment(LocalOptions())
    ledger = env.existing()
    mounts = [Path(e["path"]) for e in (ledger.entries if ledger else [])
              if e["kind"] == "mount" and e["path"].endswith("cephfs")]
    return mounts[0] if mounts else None


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} (min {min(values):.3f}, max {max(values):.3f}, n={len(values)})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", choices=["null", "local", "cephfs"], default="null")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--runtime", type=int, default=5, help="seconds per fio job")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dfsbench-bench-", dir="/var/tmp") as tmp:
        if a.target == "cephfs":
            where = cephfs_mount()
            if where is None:
                print("no running lab with a CephFS mount: run 'dfsbench lab up' first", file=sys.stderr)
                return 1
            data: Path | None = where / "dfsbench-bench-fio.data"
            engine = f"ioengine=libaio\ndirect=1\nfilename={data}"
        elif a.target == "local":
            where = Path(tmp)
            data = where / "fio.data"
            engine = f"ioengine=libaio\ndirect=1\nfilename={data}"
        else:
            where, data, engine = Path(tmp), None, "ioengine=null"
        target = Target("path", where, a.target, "default")
        job = Path(tmp) / "randread.fio"
        job.write_text(JOB.format(engine=engine, runtime=a.runtime))
        raw = Path(tmp) / "raw"
        raw.mkdir()
        by_hand(job)  # lays the file out once, so no pair pays for that
        ratios, overheads, aa = [], [], []
        try:
            for i in range(a.pairs):
                if i % 2 == 0:
                    hand, hand_wall = by_hand(job)
                    ours, our_wall = through_dfsbench(job, target, raw, a.runtime)
                else:
                    ours, our_wall = through_dfsbench(job, target, raw, a.runtime)
                    hand, hand_wall = by_hand(job)
                ratios.append(ours / hand)
                overheads.append(our_wall - hand_wall)
                first, second = by_hand(job)[0], by_hand(job)[0]
                aa.append(second / first)
                print(f"pair {i + 1}: by hand {hand:,.0f} IOPS in {hand_wall:.2f} s, dfsbench {ours:,.0f} "
                      f"IOPS in {our_wall:.2f} s; ratio {ratios[-1]:.3f}, overhead {overheads[-1]:+.2f} s; "
                      f"by hand vs by hand {aa[-1]:.3f}", flush=True)
        finally:
            if data is not None:
                data.unlink(missing_ok=True)
    print(f"{a.target}: dfsbench / by hand IOPS {spread(ratios)}")
    print(f"{a.target}: by hand / by hand IOPS {spread(aa)}  (the target's own noise)")
    overhead = statistics.median(overheads)
    print(f"{a.target}: median wall-time overhead {overhead:+.2f} s per job (target <= 1 s)")
    return 0 if statistics.median(ratios) >= 0.97 and overhead <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
