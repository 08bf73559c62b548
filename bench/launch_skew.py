"""Benchmark: how together do the clients of a cell start each timed phase, launched by
dfsbench for each phase (``exec``) or as the ranks of one MPI job (``mpi``)?

On one container lab of 8 client nodes (GlusterFS, 3 storage nodes), side by side in one
run, each launcher runs the report's small-file cell (a 256-file create, ``ls -l``, read)
and a large-file copy in and out on every client at once, swept over 2, 4 and 8 client
nodes (one rank per node), and the MPI launcher again with 8 ranks per node (64 ranks).
From the raw outputs each run keeps (every client's own timing of each phase, on this
machine's clock, which the containers share; and ``_launch.json``: when each phase let its
clients go, when ``mpirun`` started) it prints, per launcher and size:

- **spread**: each timed phase's start spread across the clients (last start − first start),
  the median over phases and repeats, with its max;
- **launch**: from the moment every client had come to a timed phase to the first client's
  timed I/O in it — ``exec``: the line-up lets them go and each starts a process on its host;
  ``mpi``: the command goes to the job's ranks (on the first phase, after waiting for the job
  to be up: ``mpirun`` starts with the cell, and the cell's own set-up runs meanwhile; a later
  cell of the same attachment runs on the job the first kept) — for the cell's first phase,
  and summed over its phases (what a cell pays: over all cells, and for each workload's cell
  apart — with ``mpi`` the smallfile cell, the attachment's first, starts the job and the
  largefile cell runs on it); and for ``mpi``, how long a job took from ``mpirun``'s start
  until every rank was up;
- **stonewalled/span**: for the 256-file create, the rate while all clients ran (from each
  one's progress) over the rate from the first start to the last end (1.0: no client
  waited for another).

Goals (issue 46): MPI spread ≤ 2 ms median at 8 ranks one per node; launch ≤ 1 s per
cell; stonewalled/span ≥ 0.9 at 8 clients.

    .venv/bin/python bench/launch_skew.py [--repeat 3] [--clients 2,4,8] [--ranks 8] [--keep DIR]
        [--launchers exec,mpi]

Needs Docker and the node images (built on first use). Prints the load (``uptime``) before
and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PHASES = {"smallfile": ("create", "ls-l", "read"), "largefile": ("write", "read")}


def dfsbench(*args: str, env: dict[str, str], timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **env}, cwd=ROOT)


def config(clients: list[int], launcher: str, ranks: int, repeat: int) -> str:
    env = {"gluster_nodes": 3, "clients": max(clients), "link": {"rate": "10Gbit"}, "sample_every_s": 0,
           "launcher": launcher, "ranks_per_client": ranks}
    return json.dumps({
        "environment": {"kind": "docker", "options": env}, "repeat": repeat, "order": "listed",
        "backends": ["glusterfs"], **({"sweep": {"clients": clients}} if len(clients) > 1 else {}),
        "workloads": [{"name": "smallfile", "clients": "all", "options": {"files": [256], "file_size": "40KiB",
                                                                          "threads": 1}},
                      {"name": "largefile", "clients": "all", "options": {"sizes": ["16MiB"]}}]})


def phases_of(cell_dir: Path, workload: str) -> dict[str, list[tuple[float, float, list[Any]]]]:
    """Each phase: every client's (started, ended, progress), from its own raw output."""
    found: dict[str, list[tuple[float, float, list[Any]]]] = {p: [] for p in PHASES[workload]}
    for client in sorted(d for d in cell_dir.iterdir() if d.is_dir()):
        if workload == "smallfile":
            for phase in PHASES[workload]:
                for f in client.glob(f"smallfile-*-{phase}.json"):
                    doc = json.loads(f.read_text())
                    found[phase].append((doc["started"], doc["ended"], doc.get("progress", [])))
        else:
            for f in client.glob("largefile-*[0-9].json"):
                doc = json.loads(f.read_text())
                for phase in PHASES[workload]:
                    if phase in doc:
                        found[phase].append((doc[phase]["started"], doc[phase]["ended"], []))
    return found


def moved_by(progress: list[list[float]], t: float) -> float:
    if t <= progress[0][0]:
        return 0.0
    for a, b in zip(progress, progress[1:]):
        if t <= b[0]:
            return a[1] + (b[1] - a[1]) * ((t - a[0]) / (b[0] - a[0]) if b[0] > a[0] else 1.0)
    return progress[-1][1]


def stonewalled_over_span(clients: list[tuple[float, float, list[Any]]]) -> float | None:
    first, last = min(c[0] for c in clients), max(c[1] for c in clients)
    common = (max(c[0] for c in clients), min(c[1] for c in clients))
    if common[1] <= common[0] or any(len(c[2]) < 2 for c in clients):
        return None
    total = sum(c[2][-1][1] for c in clients)
    during = sum(moved_by(c[2], common[1]) - moved_by(c[2], common[0]) for c in clients)
    return (during / (common[1] - common[0])) / (total / (last - first))


def analyse(results: Path, run_id: str) -> dict[int, dict[str, list[float]]]:
    """Per number of clients: spreads (ms), first launches (s), launches per cell (s), ratios."""
    out: dict[int, dict[str, list[float]]] = {}
    for launch_file in sorted((results / "raw" / run_id).rglob("_launch.json")):
        cell_dir = launch_file.parent
        workload = cell_dir.name if cell_dir.name in PHASES else cell_dir.parent.name
        if workload not in PHASES:
            continue
        said = json.loads(launch_file.read_text())
        phases = phases_of(cell_dir, workload)
        clients = len(phases[PHASES[workload][0]])
        if not clients:
            continue
        into = out.setdefault(clients, {"spread": [], "first": [], "cell": [], "smallfile": [], "largefile": [],
                                        "ratio": [], "up": []})
        # when every client had come to a phase: exec's line-up let them go (and each started a
        # process), mpi's command went to the job (whose ranks were up, or were waited for)
        came = said["released"] if said["launcher"] == "exec" else said.get("sent", {})
        cell = 0.0
        for i, phase in enumerate(PHASES[workload]):
            starts = [c[0] for c in phases[phase]]
            if len(starts) < 2 or not isinstance(came.get(phase), (int, float)):
                continue
            into["spread"].append((max(starts) - min(starts)) * 1e3)
            cell += min(starts) - came[phase]
            if i == 0:
                into["first"].append(min(starts) - came[phase])
        into["cell"].append(cell)
        into[workload].append(cell)
        if said["launcher"] == "mpi" and said.get("job_cell", 1) == 1:  # (a kept job's start was counted once)
            into["up"].append(said["up_s"])
        if workload == "smallfile":
            ratio = stonewalled_over_span(phases["create"])
            if ratio is not None:
                into["ratio"].append(ratio)
    return out


def median_max(values: list[float], fmt: str) -> str:
    if not values:
        return "—"
    return f"{format(statistics.median(values), fmt)} (max {format(max(values), fmt)}, n={len(values)})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--clients", default="2,4,8")
    ap.add_argument("--ranks", type=int, default=8, help="ranks per client node of the last MPI run (1: none)")
    ap.add_argument("--launchers", default="exec,mpi", help="which launchers to run, of exec,mpi")
    ap.add_argument("--keep", type=Path, help="keep the results here")
    args = ap.parse_args()
    clients = [int(c) for c in args.clients.split(",")]
    work = Path(tempfile.mkdtemp(prefix="dfsbench-launch-skew-")) if args.keep is None else args.keep
    work.mkdir(parents=True, exist_ok=True)
    env = {"DFSBENCH_DOCKER_LAB_DIR": str(work / "lab"), "DFSBENCH_RESULTS": str(work / "results")}
    print("load before:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    launchers = args.launchers.split(",")
    runs = [(launcher, 1, clients) for launcher in ("exec", "mpi") if launcher in launchers]
    if "mpi" in launchers and args.ranks > 1:
        runs.append(("mpi", args.ranks, [max(clients)]))
    cfgs = []
    for launcher, ranks, over in runs:
        cfg = work / f"{launcher}-{ranks}.json"
        cfg.write_text(config(over, launcher, ranks, args.repeat))
        cfgs.append(cfg)
    up = dfsbench("lab", "up", "--env", "docker", str(cfgs[0]), env=env)
    ours = up.returncode == 0  # (a lab of the bench's that is up already is used as it is, and left up)
    if not ours and "already set up" not in up.stderr:
        print(up.stdout[-3000:], up.stderr[-3000:])
        return 1
    rows = []
    try:
        for (launcher, ranks, over), cfg in zip(runs, cfgs):
            done = dfsbench("run", str(cfg), env=env)
            run_id = next((line.split()[-1] for line in done.stdout.splitlines() if line.startswith("run id:")), None)
            if done.returncode != 0 or run_id is None:
                print(f"{launcher} × {ranks}: the run failed (exit {done.returncode})\n{done.stdout[-3000:]}\n"
                      f"{done.stderr[-2000:]}")
                return 1
            for n, got in sorted(analyse(work / "results", run_id).items()):
                rows.append((launcher, n // ranks, ranks, n, got))
    finally:
        if ours:
            down = dfsbench("lab", "down", "--env", "docker", env=env)
            if down.returncode != 0:
                print("lab down failed:", down.stdout[-2000:], down.stderr[-2000:])
    print("load after:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    print(f"\n{'launcher':8} {'nodes':>5} {'ranks':>5}  {'start spread, ms':28} {'launch, 1st phase, s':28} "
          f"{'launch per cell, s':28} {'… smallfile cell':28} {'… largefile cell':28} "
          f"{'job up, s':28} {'stonewalled/span (create)':28}")
    for launcher, nodes, per, n, got in rows:
        print(f"{launcher:8} {nodes:>5} {n:>5}  {median_max(got['spread'], '.2f'):28} "
              f"{median_max(got['first'], '.3f'):28} {median_max(got['cell'], '.3f'):28} "
              f"{median_max(got['smallfile'], '.3f'):28} {median_max(got['largefile'], '.3f'):28} "
              f"{median_max(got['up'], '.3f'):28} {median_max(got['ratio'], '.3f'):28}")
    print("(each: the median over phases, cells and repeats, its max, and how many; mpi: the smallfile cell, the\n"
          " attachment's first, starts its job, and the largefile cell runs on the job it kept)")
    print(f"\nresults in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
