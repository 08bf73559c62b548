"""The clients of a cell as the ranks of one MPI job, on the container lab: four client
nodes, two ranks on each, through a fault, and fio from every rank, one job kept from cell to cell; a rank
killed in the middle of a phase; a run interrupted in one, on a job kept from the cell before. After each, no mpirun here and no orted or rank on any client node."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import dfsbench
from tests.integration.test_docker_lab import labelled, pytestmark as docker_marks  # noqa: F401

pytestmark = docker_marks
LAB = ("environment: {kind: docker, options: {gluster_nodes: 3, clients: 4, link: {rate: 10Gbit}, "
       "sample_every_s: 0, ranks_per_client: 2}}\nbackends: [glusterfs]\n")


def job_processes(lab: str) -> dict[str, list[str]]:
    """What of an MPI job runs anywhere: mpirun here, orted, ranks and their fio in each client node."""
    found = {}
    here = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()
    found["here"] = [p for p in here if p.startswith("mpirun ")]
    for name in labelled(["ps", "--format", "{{.Names}}"], lab):
        if "-client" in name:
            ps = subprocess.run(["docker", "exec", name, "ps", "-eo", "args"], capture_output=True, text=True,
                                timeout=60).stdout.splitlines()
            found[name] = [p for p in ps if p.startswith(("orted", "fio ")) or "mpi_rank.py" in p
                           or "ready XXXXXX" in p]  # (a fio job's shell at its gate)
    return {where: procs for where, procs in found.items() if procs}


def rank_pid(lab: str, client: str) -> int | None:
    ps = subprocess.run(["docker", "exec", f"dfsbench-{lab}-{client}", "ps", "-eo", "pid,ppid,args"],
                        capture_output=True, text=True, timeout=60).stdout.splitlines()[1:]
    ranks = {int(line.split()[0]): int(line.split()[1]) for line in ps if "mpi_rank.py" in line}
    top = [pid for pid, ppid in ranks.items() if ppid not in ranks]  # (a rank, not one of its workers)
    return top[0] if top else None


@pytest.fixture
def mpi_lab(tmp_path):
    lab_dir = tmp_path / "lab"
    env = {"DFSBENCH_DOCKER_LAB_DIR": str(lab_dir), "DFSBENCH_RESULTS": str(tmp_path / "results")}
    config = tmp_path / "lab.yaml"
    config.write_text(LAB)
    up = dfsbench("lab", "up", "--env", "docker", str(config), env=env, timeout=1800)
    assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
    lab = json.loads((lab_dir / "ledger.json").read_text())["data"]["docker"]["lab"]
    yield lab, env, tmp_path
    down = dfsbench("lab", "down", "--env", "docker", env=env, timeout=600)
    assert down.returncode == 0, down.stdout[-2000:] + down.stderr[-2000:]


def started(config: Path, env: dict[str, str], out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "harness.cli", "run", str(config)], stdout=open(out, "w"),
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, **env})


def in_a_phase(lab: str, child: subprocess.Popen[str], out: Path, cell: str = "") -> int:
    """Wait until client2's first rank is in the long create (of the cell whose progress line
    starts so); its pid."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        assert child.poll() is None, out.read_text()[-3000:]
        pid = rank_pid(lab, "client2")
        said = out.read_text()
        if pid is not None and "clients launched with mpi" in said and cell in said:
            time.sleep(3)  # (well into the phase)
            return pid
        time.sleep(0.2)
    raise AssertionError("no rank came up: " + out.read_text()[-3000:])


def test_ranks_on_four_clients_through_a_fault_then_a_rank_killed_then_ctrl_c(mpi_lab):
    lab, env, tmp = mpi_lab
    config = tmp / "run.yaml"
    config.write_text(LAB + """workloads:
  - {name: smallfile, clients: all, options: {files: [128], file_size: 40KiB, threads: 2}}
  - {name: largefile, clients: all, options: {sizes: [8MiB]},
     fault: {action: kill, after_s: 0.1, restore_after_s: 3}}
  - {name: fio, options: {all_clients: true, size: 8MiB, runtime_s: 1, profiles: [{name: w, rw: write, bs: 1MiB}]}}
""")
    run = dfsbench("run", str(config), env=env, timeout=1200)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-3000:]
    assert "clients launched with mpi: Open MPI" in run.stderr  # (the progress, at its first cell)
    assert "clients of a cell on several hosts launched with mpi: Open MPI" in run.stdout  # (the header)
    assert "here and on all 4 client hosts" in run.stdout
    assert job_processes(lab) == {}
    records = json.loads(dfsbench("compare", "latest", "--format", "json", env=env).stdout)["records"]
    small = [r for r in records if r["workload"] == "smallfile" and r["metric"] == "files_per_sec"
             and r["test"] == "create"]
    ranks = sorted((r["params"]["host"], r["params"]["rank"]) for r in small if "rank" in r["params"])
    assert ranks == [(f"client{1 + k // 2}", k) for k in range(8)]
    hosts = {r["params"]["host"]: r for r in small if "rank" not in r["params"]}
    assert set(hosts) == {"client1", "client2", "client3", "client4", "all"}
    assert all(r["params"]["ranks"] == (8 if h == "all" else 2) and r["params"]["clients"] == 4
               and r["params"]["launcher"] == "mpi" for h, r in hosts.items())
    # the aggregate is what all eight moved over the span, not a sum of rates
    assert hosts["all"]["params"]["moved"] == 8 * 128
    span = hosts["all"]["params"]["ended"] - hosts["all"]["params"]["started"]
    assert hosts["all"]["value"] == pytest.approx(8 * 128 / span, rel=1e-3)
    # every rank read what a rank of another host wrote (the raw outputs say who read whose)
    read = sorted(Path(env["DFSBENCH_RESULTS"]).rglob("smallfile-128-read.json"))
    assert len(read) == 8
    for f in read:
        said = json.loads(f.read_text())
        assert said["cache"].startswith("sync+other-client") and said["host"].split()[0] != said["of"].split()[0]
    # fio on every client: each rank's own, held at its gate until the job's ranks went; its output came here
    fio = [r for r in records if r["workload"] == "fio" and r["metric"] == "throughput"]
    assert sorted(r["params"]["rank"] for r in fio if "rank" in r["params"]) == list(range(8))
    assert {r["params"]["host"]: r["params"]["ranks"] for r in fio if "rank" not in r["params"]} == \
        {"client1": 2, "client2": 2, "client3": 2, "client4": 2, "all": 8}
    assert all(r["params"]["launcher"] == "mpi" and r["value"] > 0 for r in fio)
    outputs = sorted(Path(env["DFSBENCH_RESULTS"]).rglob("fio-w.json"))
    assert len(outputs) == 8 and all('"fio version"' in f.read_text() for f in outputs)
    # one job for the attachment's cells (the large-file cell's three passes around its fault each
    # one): started by the first, kept by the next, ended with the attachment
    launched = {}
    for f in Path(env["DFSBENCH_RESULTS"]).rglob("_launch.json"):
        name = f.parent.name if f.parent.name in ("smallfile", "fio") else f"largefile/{f.parent.name}"
        launched[name] = json.loads(f.read_text())
    order = ["smallfile", "largefile/before", "largefile/during", "largefile/after", "fio"]
    assert sorted(launched, key=lambda n: launched[n]["job_cell"]) == order
    assert [launched[n]["job_cell"] for n in order] == [1, 2, 3, 4, 5]
    assert len({s["mpirun_started"] for s in launched.values()}) == 1
    assert all(s["closed_s"] is None for s in launched.values())  # (kept: it ended with the attachment, and left nothing: above)
    assert all(s["mpirun_log"].endswith("_mpirun.log") for s in launched.values())
    said = json.loads(next(Path(env["DFSBENCH_RESULTS"]).rglob("fio/_launch.json")).read_text())
    assert said["launcher"] == "mpi" and len(said["left_barrier"]["w"]) == 8  # (the phase was the job's)
    files = {name for f in outputs for name in re.findall(r'"filename" : "([^"]+)"', f.read_text())}
    assert len(files) == 8  # (each rank its own job file and its own file, two ranks on each host)
    # each fio was held at its gate until the ranks went, and let go: none hung there, and
    # no rank's timed I/O began before the moment the ranks were let go
    assert all('"exec_prerun"' in f.read_text() for f in outputs)
    assert not any({"hung", "failed", "incomplete"} & set(r["flags"]) for r in fio)
    assert all(r["params"]["started"] >= said["released"]["w"][r["params"]["rank"]] - 0.005
               for r in fio if "rank" in r["params"])
    # the fault ran through the ranks' large-file cell: its figures are of the eight ranks'
    # rates (never of a host's sum counted as one more client)
    fault = next(r for r in records if r["workload"] == "fault")
    assert fault["params"]["figures_of"].endswith(", 8 client(s)"), fault["params"]
    during = [r for r in records if r["workload"] == "largefile" and r["params"].get("phase") == "during"]
    assert {r["params"].get("rank") for r in during if r["params"]["host"] != "all"} >= set(range(8))

    # a rank killed in the middle of a phase: the cell fails, naming it; nothing is left
    config.write_text(LAB + "workloads:\n  - {name: smallfile, clients: all, options: {files: [20000], "
                      "file_size: 1KiB, threads: 2, operations: [create]}}\n")
    out = tmp / "killed.out"
    child = started(config, env, out)
    pid = in_a_phase(lab, child, out)
    subprocess.run(["docker", "exec", f"dfsbench-{lab}-client2", "kill", "-9", str(pid)], check=True, timeout=60)
    assert child.wait(timeout=300) == 1, out.read_text()[-3000:]
    text = out.read_text()
    assert "the MPI job ended while waiting for phase 'create': rank " in text and " on client2 exited on signal 9" \
        in text, text[-3000:]
    assert job_processes(lab) == {}

    # Ctrl-C in a phase of a cell on a job kept from the cell before: the run stops, and the job with it
    config.write_text(LAB + "order: listed\nworkloads:\n  - {name: largefile, clients: all, options: {sizes: [1MiB]}}\n"
                      "  - {name: smallfile, clients: all, options: {files: [20000], file_size: 1KiB, threads: 2, "
                      "operations: [create]}}\n")
    out = tmp / "interrupted.out"
    child = started(config, env, out)
    in_a_phase(lab, child, out, "] [2/2] smallfile")
    child.send_signal(signal.SIGINT)
    assert child.wait(timeout=120) == 130, out.read_text()[-3000:]
    assert job_processes(lab) == {}
    last = max(Path(env["DFSBENCH_RESULTS"]).rglob("smallfile/_launch.json"), key=lambda f: f.stat().st_mtime)
    assert json.loads(last.read_text())["job_cell"] == 2  # (the job the large-file cell kept)
    assert len(labelled(["ps", "-q"], lab)) == 3 + 4  # (the lab itself stays up for lab down)
