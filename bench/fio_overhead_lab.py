"""Benchmark: does dfsbench's fio add anything measurable to what it measures, on the
container lab's shaped link?

One mount of a system in the container lab (client1, every link shaped to the lab's rate),
and on it, in N alternating pairs side by side in one run, the same fio job:

- **by hand**: the job file dfsbench writes for the profile, run with ``fio
  --output-format=json+`` on the client container, its JSON read here with ``json`` alone;
- **through dfsbench**: the fio workload's own run of that profile on that mount (its job
  file, its parser, its records).

Both start from a cold client: dfsbench drops the caches before a read (a remount of a FUSE
client), and so does the bench before each run by hand. Beside each dfsbench/by-hand
ratio, by-hand/by-hand pairs (an A/A test) give the target's own noise. Prints every pair,
and the median ratio (with its min and max) of IOPS and of p99 total latency, for both.
Target: within 2 % (0.98–1.02) in both — which only a target whose A/A pairs are all within
2 % can show (exit 2 says the target was too noisy to tell).

    .venv/bin/python bench/fio_overhead_lab.py [--system glusterfs] [--pairs 5] [--runtime 10]
        [--rate IOPS]   (offered per second, open loop; default: closed loop)
        [--rw read --bs 128k --iodepth 1 --link 100Mbit]   (a link-bound job: the steadiest target)

A lab that is up is used as it is (``dfsbench lab up`` with a docker config first); else one
is brought up for the bench and taken down after it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness.api.target import Lineup
from harness.execution.plan import build_plan
from harness.system.names import named_path
from workloads.fio import Fio


def by_hand(fio: Fio, target: Any, profile: Any, scratch: Path, raw: Path, i: int) -> tuple[float, float]:
    """The profile's job as dfsbench writes it, run by fio itself on the client: (IOPS, p99 s)."""
    rate = fio.options.load.iops[0] if fio.options.load and fio.options.load.iops else None
    text, env = fio.job_text(profile, target, "byhand", rate)
    job = raw / f"byhand-{i}.fio"
    job.write_text(text)
    out = raw / f"byhand-{i}.json"
    target.drop_caches()  # (as dfsbench does before a read: both sides start from a cold client)
    result = target.host.run_tool(["fio", "--output-format=json+", str(target.host.put(job, scratch))],
                                  deadline=fio.deadline(), output=out, env=env)
    if not result.ok:
        raise SystemExit(f"fio by hand failed: {result.output[-2000:]}")
    text = result.output
    doc = json.loads(text[text.index("{"):])
    d = next(j for j in doc["jobs"])[profile_direction(profile)]
    return float(d["iops"]), float(d["lat_ns"]["percentile"]["99.000000"]) / 1e9


def profile_direction(profile: Any) -> str:
    return "read" if "read" in profile.rw else "write"


def through_dfsbench(fio: Fio, target: Any, cell: dict[str, Any], scratch: Path, raw: Path) -> tuple[float, float]:
    records = [m for m in fio.run(target, cell, scratch, raw) if m.params.get("direction") ==
               profile_direction(fio.profiles()[0])]
    iops = next(m.value for m in records if m.metric == "iops")
    p99 = next(m.value for m in records if m.metric == "lat_p99")
    assert iops is not None and p99 is not None
    return iops, p99


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} (min {min(values):.3f}, max {max(values):.3f}, n={len(values)})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--system", default="glusterfs", help="a file system backend of the container lab")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--runtime", type=int, default=10, help="seconds per fio job")
    ap.add_argument("--rate", type=int, default=None, help="offered I/Os per second (open loop)")
    ap.add_argument("--link", default="1Gbit")
    ap.add_argument("--rw", default="randread", choices=["randread", "read"],
                    help="the job's direction (a read: both sides start from a cold client)")
    ap.add_argument("--bs", default="4k", help="block size (a large one over a slow link: a link-bound "
                    "target, the steadiest there is)")
    ap.add_argument("--iodepth", type=int, default=16)
    a = ap.parse_args()
    options: dict[str, Any] = {"size": "128MiB", "runtime_s": a.runtime,
                               "profiles": [{"name": f"{a.rw}-{a.bs}-qd{a.iodepth}", "rw": a.rw, "bs": a.bs,
                                             "iodepth": a.iodepth}]}
    if a.rate:
        options["load"] = {"iops": [a.rate]}
    # one client: a read profile through dfsbench on two reads the other's file, by hand its own
    plan = build_plan({"environment": {"kind": "docker", "options": {"clients": 1, "link": {"rate": a.link}}},
                       "backends": [a.system], "workloads": [{"name": "fio", "options": options}]})
    fio = plan.workloads[0]
    assert isinstance(fio, Fio)
    profile = fio.profiles()[0]
    cell = fio.cells()[0]
    print(f"fio {profile.name} on {a.system}, container lab, link {a.link}, {a.runtime} s per job, "
          + (f"{a.rate} I/Os per second offered" if a.rate else "closed loop"), flush=True)
    with plan.environment.up(plan.services(), lambda s: print(f"  {s}", flush=True)) as cluster:
        before = cluster.ledger.ids()
        workdir = named_path(cluster.workdir / "runs", "bench-fio-overhead")
        workdir.mkdir(parents=True, exist_ok=True)
        cluster.ledger.tree(workdir)
        try:
            with plan.backends[0].attach(cluster, workdir / "mnt") as target, \
                    tempfile.TemporaryDirectory(prefix="dfsbench-bench-") as tmp, contextlib.ExitStack() as stack:
                scratch = target.host.scratch(workdir / "scratch", cluster.ledger)
                raw = Path(tmp)
                stack.callback(target.host.run, ["rm", "-f", str(target.directory / "dfsbench-fio-byhand")],
                               timeout=600)
                by_hand(fio, target, profile, scratch, raw, 0)  # (lays the file out: no pair pays for that)
                ratios: dict[str, list[float]] = {"iops": [], "p99": [], "aa iops": [], "aa p99": []}
                for i in range(a.pairs):
                    view = target.for_cell(Lineup(1, None, lambda host: scratch))  # (as a cell's own)
                    sides = [("hand", lambda: by_hand(fio, target, profile, scratch, raw, 2 * i + 1)),
                             ("ours", lambda: through_dfsbench(fio, view, cell, scratch, raw))]
                    got = dict((name, run()) for name, run in (sides if i % 2 == 0 else sides[::-1]))
                    first = by_hand(fio, target, profile, scratch, raw, 100 + 2 * i)
                    second = by_hand(fio, target, profile, scratch, raw, 101 + 2 * i)
                    ratios["iops"].append(got["ours"][0] / got["hand"][0])
                    ratios["p99"].append(got["ours"][1] / got["hand"][1])
                    ratios["aa iops"].append(second[0] / first[0])
                    ratios["aa p99"].append(second[1] / first[1])
                    print(f"pair {i + 1}: by hand {got['hand'][0]:,.0f} IOPS p99 {got['hand'][1] * 1e3:.2f} ms; "
                          f"dfsbench {got['ours'][0]:,.0f} IOPS p99 {got['ours'][1] * 1e3:.2f} ms; by hand twice: "
                          f"{first[0]:,.0f} / {second[0]:,.0f} IOPS, p99 {first[1] * 1e3:.2f} / "
                          f"{second[1] * 1e3:.2f} ms", flush=True)
        finally:
            for problem in cluster.ledger.undo(only=cluster.ledger.ids() - before):  # (what the bench made)
                print(f"  could not undo: {problem}")
    print(f"dfsbench / by hand: IOPS {spread(ratios['iops'])}; p99 {spread(ratios['p99'])}")
    print(f"by hand / by hand (the target's own noise): IOPS {spread(ratios['aa iops'])}; p99 {spread(ratios['aa p99'])}")
    within = all(0.98 <= statistics.median(ratios[k]) <= 1.02 for k in ("iops", "p99"))
    # (a difference is the harness's only where the target holds still: by hand twice within 2 %)
    steady = all(0.98 <= min(ratios[k]) and max(ratios[k]) <= 1.02 for k in ("aa iops", "aa p99"))
    if not steady:
        print("the target's own noise (by hand against by hand) is wider than 2 %: this run cannot show a "
              "difference of 2 % either way; " + ("the medians are within 2 %" if within else
                                                  "the medians differ by more than 2 %, within that noise"))
        return 2
    print("within 2 % in IOPS and p99" if within else "NOT within 2 % in IOPS and p99")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
