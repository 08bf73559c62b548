"""Benchmark: fio on several clients at once — how together do their I/Os start, launched
each of four ways?

- ``exec``: a thread per client waits at a barrier here (as dfsbench's line-up has them
  wait), and each then starts ``fio`` on its host (``Node.run_tool``: ``docker exec``), as a
  cell with ``all_clients`` did before the MPI launcher;
- ``mpi``: each client is a rank of one MPI job (dfsbench's ``MpiJob``, launched once),
  which starts its ``fio`` after ``MPI_Barrier``, at one moment of the clock the containers
  share (``harness.execution.mpi_rank``);
- ``mpi+gate``: the same, but each rank starts its fio before the barrier, and each fio
  job, set up, waits at a gate (its ``exec_prerun``: a shell reading a FIFO the rank holds)
  that the rank lets go of at the moment the ranks go — what ``all_clients`` does now;
- ``servers``: fio's own client/server mode: ``fio --server`` in each client node (dfsbench's
  ``FioServers``), one ``fio --client=… --client=…`` here.

Every way runs the same job (64 KiB sequential writes, buffered, 1 s) on a file of the
client node's own disk: what is measured is the launch, not a storage system. Each fio
writes a latency log with Unix-epoch times (``log_unix_epoch``); a client's start is its
first I/O's completion less its latency, on the clock the containers share (to the
millisecond: the log's resolution). It prints, per way and number of clients:

- **spread**: the last client's start − the first's (ms), the median over repeats and its max;
- **launch**: from the moment this machine let the clients go to the first client's first
  I/O (ms) — ``exec``: the barrier opened; ``mpi``: the phase's command written to
  ``mpirun`` (so it counts the word reaching the ranks, the barrier, and the 50 ms ahead
  that rank 0 sets their common start; with the gate, also the fios' set-up before it); ``servers``: ``fio --client`` started. For ``mpi``
  the launch is also split in two: from the command to the moment the ranks start their
  fio or open its gate (the moment rank 0 set), and from there to each client's first I/O.

The ways' order rotates from one repeat to the next (it comes round again every 4).

fio 3.33's client/server output says nothing of when each server started (no per-job
``job_start``, one whole-second ``timestamp``), which is why the latency logs are the one
measure taken of all four.

    .venv/bin/python bench/fio_start_spread.py [--repeat 5] [--clients 2,4,8] [--keep DIR]

Needs Docker and the node images (built on first use). Prints the load (``uptime``) before
and after.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from environments.docker import ipv4_subnet  # noqa: E402
from environments.nodes import Node  # noqa: E402
from harness.api.launch import Launch  # noqa: E402
from harness.execution import mpi_job  # noqa: E402
from harness.execution.ranks import gate_line  # noqa: E402
from harness.system.hosts import LOCAL  # noqa: E402
from workloads.fio.servers import FioServers  # noqa: E402

from launch_skew import median_max  # noqa: E402  (the bench's sibling: how both print a figure)

THERE = "/var/tmp/dfsbench-fio-spread"  # (in each client node; removed at the end)
JOB = """[global]
ioengine=psync
rw=write
bs=64k
size=64m
time_based=1
runtime=1
direct=0
log_unix_epoch=1
write_lat_log={log}
[spread]
filename={there}/data
"""


def dfsbench(*args: str, env: dict[str, str], timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **env}, cwd=ROOT)


def first_io(log_text: str) -> float | None:
    """A fio latency log's first I/O start (s since the epoch): the earliest of (completion
    time, ms, less latency, ns) over the log's first lines."""
    starts = []
    for line in log_text.splitlines()[:20]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
            starts.append(int(parts[0]) / 1e3 - int(parts[1]) / 1e9)
    return min(starts) if starts else None


def node_log(node: Node, name: str) -> str:
    got = node.run(["sh", "-c", f'cat "{THERE}"/{name}_lat.*.log'], check=False, timeout=60)
    return got.stdout


def run_exec(nodes: list[Node], out: Path) -> tuple[list[float | None], float]:
    gate = threading.Barrier(len(nodes) + 1)

    def one(i: int, node: Node) -> None:
        gate.wait()
        node.run_tool(["fio", "--output-format=json", f"{THERE}/job.fio"], deadline=60, output=out / f"exec-{i}.json")

    threads = [threading.Thread(target=one, args=(i, n)) for i, n in enumerate(nodes)]
    for t in threads:
        t.start()
    let_go = time.time()
    gate.wait()
    for t in threads:
        t.join()
    return [first_io(node_log(n, "job")) for n in nodes], let_go


def run_servers(nodes: list[Node], out: Path, servers: list[str]) -> tuple[list[float | None], float]:
    job = out / "job.fio"
    argv = ["fio", "--output-format=json"]
    for address in servers:
        argv += [f"--client={address}", str(job)]
    let_go = time.time()
    LOCAL.run_tool(argv, deadline=120, output=out / "servers.json", cwd=out)
    # (each server's logs come back to this fio client, named after the server's address)
    found: list[float | None] = []
    for node in nodes:
        here = out / f"job_lat.1.log.{node.address()}"
        found.append(first_io(here.read_text()) if here.exists() else None)
    for f in out.glob("job_*.log.*"):
        f.unlink()
    return found, let_go


def run_mpi(nodes: list[Node], job: mpi_job.MpiJob, gated: bool) -> tuple[list[float | None], float, float]:
    """Also when the ranks started their fio (``gated``: opened its gate): the one moment
    rank 0 set (the clock is shared)."""
    gate = {"gate": f"{THERE}/gate", "gate_jobs": 1, "cwd": f"{THERE}/gate"} if gated else {}
    for node in nodes if gated else ():
        node.run(["sh", "-c", f'rm -rf "{THERE}/gate" && mkdir -p "{THERE}/gate/ready"'])
    calls = [{"tool": {"argv": ["fio", "--output-format=json", f"{THERE}/{'gated' if gated else 'job'}.fio"],
                       "output": f"{THERE}/out.json", "errors": f"{THERE}/out.err", "deadline": 60, **gate}}
             for _ in nodes]
    let_go = time.time()
    results = job.phase("write", calls, 90, lambda t: None)
    return [first_io(node_log(n, "job")) for n in nodes], let_go, max(float(r["released"]) for r in results)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--clients", default="2,4,8")
    ap.add_argument("--keep", type=Path, help="keep the lab's directory and the outputs here")
    args = ap.parse_args()
    sizes = [int(c) for c in args.clients.split(",")]
    work = Path(tempfile.mkdtemp(prefix="dfsbench-fio-spread-")) if args.keep is None else args.keep
    work.mkdir(parents=True, exist_ok=True)
    env = {"DFSBENCH_DOCKER_LAB_DIR": str(work / "lab"), "DFSBENCH_RESULTS": str(work / "results")}
    cfg = work / "lab.json"
    cfg.write_text(json.dumps({"environment": {"kind": "docker", "options": {
        "gluster_nodes": 1, "gluster_replica": 1, "clients": max(sizes), "sample_every_s": 0}},
        "backends": ["glusterfs"]}))
    print("load before:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    up = dfsbench("lab", "up", "--env", "docker", str(cfg), env=env)
    if up.returncode != 0:
        print(up.stdout[-3000:], up.stderr[-3000:])
        return 1
    rows: dict[tuple[str, int], dict[str, list[float]]] = {}
    try:
        facts = json.loads((work / "lab" / "ledger.json").read_text())["data"]["docker"]
        prefix = f"dfsbench-{facts['lab']}-"
        every = [Node(name, name.removeprefix(prefix)) for name in facts["clients"]]
        subnet = ipv4_subnet(subprocess.run(["docker", "network", "inspect", "--format",
                                             "{{range .IPAM.Config}}{{.Subnet}} {{end}}", str(facts["network"])],
                                            capture_output=True, text=True, timeout=30).stdout)
        for n in sizes:
            nodes = every[:n]
            out = work / f"n{n}"
            out.mkdir(exist_ok=True)
            for i, node in enumerate(nodes):
                node.run(["mkdir", "-p", THERE])
                node.write_text(Path(f"{THERE}/job.fio"), JOB.format(log=f"{THERE}/job", there=THERE))
                prerun = gate_line(Path(f"{THERE}/gate"))
                node.write_text(Path(f"{THERE}/gated.fio"), JOB.format(log=f"{THERE}/job", there=THERE)
                                .replace("[spread]", f"exec_prerun={prerun}\n[spread]"))
            (out / "job.fio").write_text(JOB.format(log="job", there=THERE))
            decision = mpi_job.decide(Launch(asked="mpi", network=subnet), nodes)
            job = mpi_job.MpiJob(nodes, decision.hostnames, 1, subnet, out / "mpirun.log")
            job.launch()
            job.up()
            try:
                with FioServers([(node, node.address()) for node in nodes], out, Path(THERE)) as servers:
                    ways = ["exec", "servers", "mpi", "mpi+gate"]
                    for r in range(args.repeat):
                        for way in ways[r % 4:] + ways[:r % 4]:  # (each repeat in another order)
                            for node in nodes:
                                node.run(["sh", "-c", f'rm -f "{THERE}"/job_lat.*.log'])
                            if way == "exec":
                                starts, let_go = run_exec(nodes, out)
                            elif way == "servers":
                                starts, let_go = run_servers(nodes, out, servers)
                            else:
                                starts, let_go, went = run_mpi(nodes, job, gated=way == "mpi+gate")
                            got = rows.setdefault((way, n), {"spread": [], "launch": [], "mpi": [], "fio": []})
                            if None in starts:
                                print(f"{way} × {n}, repeat {r + 1}: a client wrote no latency log: {starts}")
                                continue
                            known = [s for s in starts if s is not None]
                            got["spread"].append((max(known) - min(known)) * 1e3)
                            got["launch"].append((min(known) - let_go) * 1e3)
                            if way.startswith("mpi"):  # (the launch in two: the MPI side, then fio's start)
                                got["mpi"].append((went - let_go) * 1e3)
                                got["fio"].extend((s - went) * 1e3 for s in known)
                            print(f"{way:8} {n} clients, repeat {r + 1}: spread {got['spread'][-1]:.1f} ms, "
                                  f"launch {got['launch'][-1]:.1f} ms", flush=True)
            finally:
                job.close()
                for node in nodes:
                    node.run(["rm", "-rf", THERE], check=False)
    finally:
        down = dfsbench("lab", "down", "--env", "docker", env=env)
        if down.returncode != 0:
            print("lab down failed:", down.stdout[-2000:], down.stderr[-2000:])
    print("load after:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    print(f"\n{'way':8} {'clients':>7}  {'start spread, ms':26} {'launch to first I/O, ms':26} "
          f"{'mpi: to the ranks start (gate: its opening), ms':28} {'mpi: from there to first I/O, ms':28}")
    for (way, n), got in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        print(f"{way:8} {n:>7}  {median_max(got['spread'], '.1f'):26} {median_max(got['launch'], '.1f'):26} "
              f"{median_max(got['mpi'], '.1f'):28} {median_max(got['fio'], '.1f'):28}")
    print("(each: the median over repeats — over clients and repeats for fio's start — its max, and how many)")
    print(f"\noutputs in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
